'use strict';
// The demo's HTTP server: three routes with clearly different retention, labeled by route.
//
//   /api/search?q=..   builds result lists and keeps them in an LRU cache (the heap grows here)
//   /api/report?days=  computes a small report and keeps the most recent ones (moderate)
//   /health            answers and keeps nothing
//   /debug/pprof/heap  the live heap profile as pprof (`go tool pprof http://host:port/debug/pprof/heap`)
//
// Every response body is a Buffer, so external (ArrayBuffer) bytes show too: search bodies are larger
// than half of Buffer.poolSize and get their own ArrayBuffer; the cache keeps them.
//
// Labeling is one tiny middleware, the pattern to copy into an application:
//
//   function labelByRoute(req, res, next) {
//     setHeapProfileLabels({ route: routeOf(req.url) });   // a bounded set of values, never raw URLs
//     next();
//   }
//
// Everything the handler does afterwards, including work after `await`, timers and I/O callbacks,
// allocates under that label. `withHeapProfileLabels({ route }, () => handle(req, res))` is the
// scoped alternative (option labels: 'with').
//
// As a program: `node demo/server.js [--port 3000] [--interval 32768] [--labels middleware|with|off]`
// serves until interrupted, with the profiler running. Started by demo/run.js with an IPC channel it
// reports its profile on request (see `childMain`).

const http = require('node:http');
// An application writes require('heap-labels').
const heapLabels = require('../lib');

const { setHeapProfileLabels, withHeapProfileLabels } = heapLabels;

const ROUTES = ['/api/search', '/api/report', '/health', '/debug/pprof/heap'];

// The label value of a request: its route, from a fixed list (label values must have a small,
// bounded number of distinct values: never put ids or query strings in a label).
function routeOf(url) {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  return ROUTES.includes(path) ? path : 'other';
}

// --- the heap-holding parts of the application ----------------------------------------------------

// Least-recently-used cache on a Map (insertion order = recency).
class LruCache {
  constructor(maxEntries) {
    this.maxEntries = maxEntries;
    this.map = new Map();
  }

  get(key) {
    const value = this.map.get(key);
    if (value !== undefined) {
      this.map.delete(key);
      this.map.set(key, value);
    }
    return value;
  }

  set(key, value) {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.maxEntries) this.map.delete(this.map.keys().next().value);
  }

  get size() {
    return this.map.size;
  }
}

const WORDS = (
  'heap label route tenant buffer sample profile memory cache search report health async await ' +
  'context frame isolate pointer estimate interval pprof node server request response latency'
).split(' ');

function makeState({ cacheEntries = 2000, keptReports = 2500 } = {}) {
  return { searchCache: new LruCache(cacheEntries), recentReports: [], keptReports, served: 0 };
}

// Simulated index I/O: the handler resumes in a later turn of the event loop.
function lookupIndex() {
  return new Promise((resolve) => setImmediate(resolve));
}

function buildSearchResults(q) {
  let h = 0;
  for (let i = 0; i < q.length; i++) h = (h * 31 + q.charCodeAt(i)) >>> 0;
  const results = [];
  for (let i = 0; i < 40; i++) {
    h = (h * 1103515245 + 12345) >>> 0;
    results.push({
      id: `doc-${h % 1000003}`,
      title: `${WORDS[h % WORDS.length]} ${WORDS[(h >>> 8) % WORDS.length]} ${q}`,
      score: (h % 1000) / 1000,
      snippet: `... ${WORDS[(h >>> 4) % WORDS.length]} ${q} ${WORDS[(h >>> 12) % WORDS.length]} ...`,
      tags: [WORDS[(h >>> 16) % WORDS.length], WORDS[(h >>> 20) % WORDS.length]],
    });
  }
  results.sort((a, b) => b.score - a.score);
  return results;
}

async function searchRoute(state, res, params) {
  const q = params.get('q') || '';
  let entry = state.searchCache.get(q);
  if (entry === undefined) {
    await lookupIndex();
    const results = buildSearchResults(q);
    // > 4 KiB: an ArrayBuffer of its own (not a slice of the shared Buffer pool).
    const body = Buffer.from(JSON.stringify({ q, count: results.length, results: results.slice(0, 25) }));
    entry = { results, body };
    state.searchCache.set(q, entry);
  }
  send(res, 200, entry.body);
}

async function reportRoute(state, res, params) {
  const days = Math.max(1, Math.min(90, Number(params.get('days')) || 7));
  await new Promise((resolve) => setTimeout(resolve, 1));
  const series = [];
  for (let d = 0; d < days; d++) series.push({ day: d, requests: (d * 7919) % 1000, errors: d % 3 });
  const report = {
    days,
    total: series.reduce((n, s) => n + s.requests, 0),
    series,
    generatedAt: new Date().toISOString(),
  };
  const body = Buffer.from(JSON.stringify(report));
  state.recentReports.push({ report, body });
  if (state.recentReports.length > state.keptReports) state.recentReports.shift();
  send(res, 200, body);
}

function healthRoute(state, res) {
  send(res, 200, Buffer.from(JSON.stringify({ ok: true, served: state.served })));
}

function pprofRoute(profile, res) {
  if (!profile) {
    send(res, 404, Buffer.from('{"error":"no heap profile is running"}'));
    return;
  }
  const body = profile.getAllocationProfile().toPprof();
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
  res.end(body);
}

function send(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
}

// --- the middleware chain --------------------------------------------------------------------------

function labelByRoute(req, res, next) {
  setHeapProfileLabels({ route: routeOf(req.url) });
  next();
}

function dispatch(state, profile, req, res) {
  state.served++;
  const url = new URL(req.url, 'http://demo');
  const fail = (err) => {
    if (!res.headersSent) send(res, 500, Buffer.from(JSON.stringify({ error: String(err) })));
  };
  switch (url.pathname) {
    case '/api/search':
      searchRoute(state, res, url.searchParams).catch(fail);
      break;
    case '/api/report':
      reportRoute(state, res, url.searchParams).catch(fail);
      break;
    case '/health':
      healthRoute(state, res);
      break;
    case '/debug/pprof/heap':
      pprofRoute(profile, res);
      break;
    default:
      send(res, 404, Buffer.from('{"error":"not found"}'));
  }
}

// The request listener. labels: 'middleware' (setHeapProfileLabels), 'with' (withHeapProfileLabels)
// or 'off'. `profile` (a handle of startHeapProfile, optional) serves /debug/pprof/heap.
function createApp({ labels = 'middleware', profile = null, cacheEntries, keptReports } = {}) {
  const state = makeState({ cacheEntries, keptReports });
  const handle = (req, res) => dispatch(state, profile, req, res);
  let listener;
  if (labels === 'middleware') {
    const chain = [labelByRoute];
    listener = (req, res) => {
      let i = 0;
      const next = () => (i < chain.length ? chain[i++](req, res, next) : handle(req, res));
      next();
    };
  } else if (labels === 'with') {
    listener = (req, res) => withHeapProfileLabels({ route: routeOf(req.url) }, () => handle(req, res));
  } else if (labels === 'off') {
    listener = handle;
  } else {
    throw new TypeError(`demo server: labels must be 'middleware', 'with' or 'off', got ${labels}`);
  }
  return { listener, state };
}

// Starts the HTTP server on host:port (0 = any free port); resolves to { server, port, state }.
function startServer(options = {}) {
  const { port = 0, host = '127.0.0.1' } = options;
  const { listener, state } = createApp(options);
  const server = http.createServer({ keepAliveTimeout: 30_000 }, listener);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve({ server, port: server.address().port, state }));
  });
}

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`demo server: unexpected argument ${argv[i]}`);
    out[m[1]] = m[2] !== undefined ? m[2] : argv[++i];
  }
  return out;
}

// Run as a child of demo/run.js (IPC): start the profiler and the server, report the port, then
// answer {type:'report', outDir} with the summary (and the written files), {type:'close'} by exiting.
async function childMain(args) {
  const { summarize, writeOutputs, forceGc } = require('./report');
  const interval = Number(args.interval || 32768);
  const profile = heapLabels.startHeapProfile({ sampleInterval: interval });
  const { server, port, state } = await startServer({ labels: args.labels || 'middleware', profile });
  process.on('message', (msg) => {
    if (msg.type === 'report') {
      forceGc();
      const p = profile.getAllocationProfile();
      const summary = summarize(p, { root: msg.root });
      summary.app = { searchCacheEntries: state.searchCache.size, keptReports: state.recentReports.length };
      summary.files = writeOutputs(p, msg.outDir);
      process.send({ type: 'report', summary });
    } else if (msg.type === 'close') {
      profile.stop();
      server.close();
      server.closeAllConnections();
      process.disconnect();
    }
  });
  process.send({ type: 'listening', port });
}

async function standaloneMain(args) {
  const interval = Number(args.interval || 32768);
  const profile = heapLabels.startHeapProfile({ sampleInterval: interval });
  const { port } = await startServer({
    port: Number(args.port || 3000),
    host: args.host || '127.0.0.1',
    labels: args.labels || 'middleware',
    profile,
  });
  const caps = heapLabels.capabilities();
  console.log(`demo server on http://127.0.0.1:${port} (sampleLabels: ${caps.sampleLabels})`);
  console.log(`  go tool pprof -tagfocus route=/api/search -top http://127.0.0.1:${port}/debug/pprof/heap`);
}

if (require.main === module) {
  const args = parseArgs(process.argv.slice(2));
  (process.send ? childMain(args) : standaloneMain(args)).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}

module.exports = { createApp, startServer, routeOf, labelByRoute, ROUTES };
