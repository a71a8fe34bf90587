'use strict';
// The framework app servers of the integration benchmarks (instructions.js --apps, and
// integration-allocations.js): one small JSON route, GET /api/users/:id, in a router mounted at /api,
// served by express 4, express 5, fastify 5 or koa 2 with @koa/router. The same route and the same
// traffic for every framework, so that what the integration adds per request stands out.
//
//   node [--experimental-async-context-frame] benchmark/http/framework-server.js
//        --framework express4|express5|fastify|koa --mode off|sampling|integration|automatic
//        [--interval 524288] [--keep-collected] [--port 0] [--retain N] [--exit-on-listen]
//
// Modes:
//   off          heap-labels is not loaded
//   sampling     startHeapProfile({ sampleInterval }) at start, no labels
//   integration  sampling, plus the framework's explicit integration (heap-labels/express,
//                /fastify, /koa) installed as its documentation says
//   automatic    sampling, plus the automatic route labels (lib/instrument/, what the preload and
//                startAgent() start) started before the framework loads, with no call in the app
// --keep-collected keeps the samples of collected objects (the include-collected flags): the profile
// then holds what was allocated, not only what is alive, which is what the allocation benchmark
// counts. --retain N keeps N small objects alive from the start (a heap for a profile read to copy:
// benchmark/endpoint/scrape-latency.js). --exit-on-listen exits as soon as the server listens: the
// start-up benchmark (benchmark/startup/startup.js) measures the app's start until then.
//
// Bench control, served ahead of the framework (the same string test on every request, in every
// mode): GET /__bench/restart stops the profile and starts a new one with the same options (the
// allocation benchmark's start of measurement, after the warm-up), GET /__bench/allocations reads
// the profile and answers the bytes it holds grouped by who allocated them (allocationsByOwner),
// GET /__bench/retained how many objects --retain keeps, GET /__bench/gc runs a full GC (with
// node --expose-gc).
// Prints "LISTENING <port>" when ready.

const http = require('node:http');
const path = require('node:path');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
}

const FRAMEWORKS = ['express4', 'express5', 'fastify', 'koa'];
const framework = arg('framework');
const mode = arg('mode', 'off');
const interval = Number(arg('interval', 512 * 1024));
const keepCollected = process.argv.includes('--keep-collected');
const exitOnListen = process.argv.includes('--exit-on-listen');
const retained = Array.from({ length: Number(arg('retain', 0)) }, (_, i) => ({ i, name: `object-${i}`, tags: [i] }));
if (!FRAMEWORKS.includes(framework)) throw new Error(`--framework must be one of ${FRAMEWORKS.join(', ')}`);
if (!['off', 'sampling', 'integration', 'automatic'].includes(mode)) throw new Error(`unknown --mode ${mode}`);

const root = path.join(__dirname, '..', '..');
const heapLabels = mode === 'off' ? null : require(root);
const profileOptions = {
  sampleInterval: interval,
  includeObjectsCollectedByMajorGC: keepCollected,
  includeObjectsCollectedByMinorGC: keepCollected,
};
let profile = heapLabels ? heapLabels.startHeapProfile(profileOptions) : null;
const integrate = mode === 'integration';
if (mode === 'automatic') require(path.join(root, 'lib/instrument')).startInstrumentation(() => {});

// The route's answer: a small JSON object, the same for every framework.
function user(id) {
  return { id, name: `user ${id}`, roles: ['reader'], active: true };
}

// Each builder returns the framework's request listener.
const builders = {
  express4: () => expressApp(require('express4')),
  express5: () => expressApp(require('express')),
  fastify: fastifyApp,
  koa: koaApp,
};

function expressApp(express) {
  const app = express();
  app.set('etag', false);
  app.set('x-powered-by', false);
  if (integrate) require(path.join(root, 'lib/integrations/express')).expressRouteLabels(app);
  const api = express.Router();
  api.get('/users/:id', (req, res) => res.json(user(req.params.id)));
  app.use('/api', api);
  return Promise.resolve(app);
}

async function fastifyApp() {
  const fastify = require('fastify')({ logger: false, serverFactory: serve });
  if (integrate) await fastify.register(require(path.join(root, 'lib/integrations/fastify')).fastifyRouteLabels);
  await fastify.register(
    async (api) => {
      api.get('/users/:id', async (request) => user(request.params.id));
    },
    { prefix: '/api' },
  );
  await fastify.ready();
  return fastifyListener;
}

// fastify asks for its server through serverFactory, which hands over fastify's request handler:
// it gets the one server every framework is served by.
let fastifyListener;
function serve(handler) {
  fastifyListener = handler;
  return server;
}

function koaApp() {
  const Koa = require('koa');
  const Router = require('@koa/router');
  const app = new Koa();
  if (integrate) require(path.join(root, 'lib/integrations/koa')).koaRouteLabels(app);
  const api = new Router({ prefix: '/api' });
  api.get('/users/:id', (ctx) => {
    ctx.body = user(ctx.params.id);
  });
  app.use(api.routes());
  return Promise.resolve(app.callback());
}

// Who allocated a sampled byte: the innermost frame of its stack that is not Node.js's or V8's own
// code (node:* modules, builtins without a script) decides. Our files (lib/integrations/*,
// lib/context.js, lib/labels.js, ...) are one owner each; a package under node_modules is one owner;
// this server is 'app'; a stack of only internal frames is 'node'. So an allocation of the
// integration's own code, or of a Node.js API it calls (enterWith's context frame), counts to the
// integration, but what the framework allocates in a middleware the integration calls does not.
// V8's sampling heap profiler names the outermost function of an optimized frame only: a function
// inlined into another counts to that one (run with --no-turbo-inlining to see each function).
function allocationsByOwner(head) {
  const libDir = path.join(root, 'lib') + path.sep;
  const owners = new Map();
  const ownerOfUrl = (url) => {
    const file = url.startsWith('file://') ? decodeURIComponent(url.slice(7)) : url;
    if (file.startsWith(libDir)) return `heap-labels/${file.slice(libDir.length)}`;
    const nm = file.lastIndexOf(`${path.sep}node_modules${path.sep}`);
    if (nm !== -1) {
      const rest = file.slice(nm + 14).split(path.sep);
      return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
    }
    return file === __filename ? 'app' : file;
  };
  const internal = (url) => url === '' || url.startsWith('node:');
  const sites = new Map(); // heap-labels site -> bytes
  const walk = (node, owner, site) => {
    const { url, functionName, lineNumber } = node.callFrame;
    if (!internal(url)) {
      owner = ownerOfUrl(url);
      site = `${functionName || '(anonymous)'} ${owner}:${lineNumber + 1}`;
    } else if (url === 'node:events' && functionName === 'emit') {
      // An emit runs listeners: what Node.js's own listeners allocate is Node.js's, whoever emitted
      // (the integration's emit wrapper of request-context.js calls the emit it shadows).
      owner = undefined;
      site = undefined;
    }
    if (node.selfSize > 0) {
      const key = owner ?? 'node';
      owners.set(key, (owners.get(key) ?? 0) + node.selfSize);
      if (key.startsWith('heap-labels/')) {
        const leaf = `${node.callFrame.functionName || '(anonymous)'}${internal(url) ? ` (${url || 'native'})` : ''}`;
        const at = `${site} <- ${leaf}`;
        sites.set(at, (sites.get(at) ?? 0) + node.selfSize);
      }
    }
    for (const child of node.children) walk(child, owner, site);
  };
  walk(head, undefined, undefined);
  return { owners: Object.fromEntries(owners), sites: Object.fromEntries(sites) };
}

function bench(req, res) {
  let body;
  if (req.url === '/__bench/restart' && profile) {
    profile.stop();
    profile = heapLabels.startHeapProfile(profileOptions);
    body = { restarted: true };
  } else if (req.url === '/__bench/gc' && typeof globalThis.gc === 'function') {
    globalThis.gc(); // a full GC (node --expose-gc): instructions.js starts a window right after one
    body = { gc: true };
  } else if (req.url === '/__bench/retained') {
    body = { retained: retained.length }; // (also what keeps them alive: this listener lives)
  } else if (req.url === '/__bench/allocations' && profile) {
    const read = profile.getAllocationProfile();
    body = { framework, mode, node: process.version, capabilities: heapLabels.capabilities(), ...allocationsByOwner(read.head) };
  } else {
    res.writeHead(404).end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

const server = http.createServer({ keepAliveTimeout: 60_000 });
builders[framework]().then((listener) => {
  server.on('request', (req, res) => (req.url.startsWith('/__bench/') ? bench(req, res) : listener(req, res)));
  server.listen(Number(arg('port', 0)), '127.0.0.1', () => {
    console.log(`LISTENING ${server.address().port}`);
    if (exitOnListen) process.exit(0);
  });
});

process.on('SIGTERM', () => {
  if (profile) profile.stop();
  process.exit(0);
});
