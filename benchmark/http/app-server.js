'use strict';
// The app server of the HTTP benchmark (the process being measured): each route fetches a page of
// rows from the "database" server (db-server.js) over a keep-alive connection, parses the JSON,
// transforms it and answers with a JSON body in a Buffer.
//
//   node [--experimental-async-context-frame] benchmark/http/app-server.js --db-port N
//        --mode off|sampling|labels|allocations [--interval 524288] [--port 0] [--keep-collected]
//
// Modes:
//   off        heap-labels is not even loaded
//   sampling   startHeapProfile({ sampleInterval }) at start, no labels
//   labels     sampling, plus the route label of each request from the shipped node:http helper
//              (heap-labels/http: one interned label object per route template, enterWith)
//   allocations  labels, with trackAllocations (the patched runtime hands every dead sample to the
//              addon, which adds it to its (site, label set) total)
// --keep-collected keeps the samples of collected objects (the include-collected flags), so that the
// smoke check of a short run sees labeled samples although most request objects are garbage by then.
// Prints "LISTENING <port>" when ready. GET /__bench/stats answers what the profiler holds (samples,
// labeled samples, bytes per route) so the harness can check that labels were captured.

const http = require('node:http');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
}

const mode = arg('mode', 'off');
const dbPort = Number(arg('db-port'));
const interval = Number(arg('interval', 512 * 1024));
if (!['off', 'sampling', 'labels', 'allocations'].includes(mode)) throw new Error(`unknown --mode ${mode}`);
if (!dbPort) throw new Error('--db-port is required');

const heapLabels = mode === 'off' ? null : require('../../lib');
const keepCollected = process.argv.includes('--keep-collected');
const profile = heapLabels
  ? heapLabels.startHeapProfile({
      sampleInterval: interval,
      includeObjectsCollectedByMajorGC: keepCollected,
      includeObjectsCollectedByMinorGC: keepCollected,
      trackAllocations: mode === 'allocations',
    })
  : null;

const dbAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function fetchRows(table, page) {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port: dbPort, path: `/rows?table=${table}&page=${page}`, agent: dbAgent },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode !== 200) reject(new Error(`db answered ${res.statusCode}`));
          else resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
  });
}

const routes = {
  async '/api/users'(page) {
    const rows = await fetchRows('users', page);
    const users = rows
      .filter((u) => u.active)
      .map((u) => ({
        id: u.id,
        name: u.name.toUpperCase(),
        initials: u.name.split(' ').map((w) => w[0]).join(''),
        domain: u.email.split('@')[1],
        since: new Date(u.createdAt).toISOString().slice(0, 10),
        tags: u.tags.map((t) => `#${t}`),
      }));
    const byDomain = {};
    for (const u of users) byDomain[u.domain] = (byDomain[u.domain] || 0) + 1;
    return { page, count: users.length, byDomain, users };
  },
  async '/api/orders'(page) {
    const rows = await fetchRows('orders', page);
    const byStatus = {};
    for (const o of rows) {
      const s = (byStatus[o.status] ??= { count: 0, total: 0, items: 0 });
      s.count++;
      s.total += o.total;
      s.items += o.items.reduce((n, it) => n + it.qty, 0);
    }
    const top = [...rows].sort((a, b) => b.total - a.total).slice(0, 20);
    const skus = new Map();
    for (const o of rows) for (const it of o.items) skus.set(it.sku, (skus.get(it.sku) || 0) + it.qty);
    const bestSellers = [...skus].sort((a, b) => b[1] - a[1]).slice(0, 10).map(([sku, qty]) => ({ sku, qty }));
    return { page, byStatus, top, bestSellers };
  },
  async '/api/products'(page) {
    const rows = await fetchRows('products', page);
    const sorted = [...rows].sort((a, b) => a.price - b.price);
    const prices = sorted.map((p) => p.price);
    return {
      page,
      min: prices[0],
      max: prices[prices.length - 1],
      mean: prices.reduce((a, b) => a + b, 0) / prices.length,
      inStock: sorted
        .filter((p) => p.stock > 0)
        .map((p) => ({ sku: p.sku, title: p.title, price: p.price, words: p.description.split(' ').length })),
    };
  },
};

function routeOf(url) {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  return Object.hasOwn(routes, path) ? path : 'other';
}

function send(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
}

function stats(res) {
  const out = { mode, node: process.version, rss: process.memoryUsage().rss };
  if (profile) {
    const p = profile.getAllocationProfile();
    out.capabilities = heapLabels.capabilities();
    out.samples = p.samples.length;
    out.labeledSamples = p.samples.filter((s) => s.labels !== undefined).length;
    out.byRoute = p.byLabel('route').map((g) => ({ route: g.labels.route ?? null, bytes: Math.round(g.bytes) }));
  }
  send(res, 200, Buffer.from(JSON.stringify(out)));
}

function handle(req, res) {
  const route = routeOf(req.url);
  if (route === 'other') {
    if (req.url === '/__bench/stats') stats(res);
    else send(res, 404, Buffer.from('{"error":"not found"}'));
    return;
  }
  const page = Number(new URL(req.url, 'http://app').searchParams.get('page')) || 0;
  routes[route](page).then(
    (result) => send(res, 200, Buffer.from(JSON.stringify(result))),
    (err) => send(res, 502, Buffer.from(JSON.stringify({ error: String(err) }))),
  );
}

// Mode labels: the route template of each request, as an application with its own dispatch labels
// it with heap-labels/http (unknown paths get the helper's bucket value).
const labelRequest = mode === 'labels' || mode === 'allocations' ? require('../../lib/integrations/http').httpRouteLabels() : null;
function labelByRoute(req, res, next) {
  const route = routeOf(req.url);
  labelRequest(req, route === 'other' ? undefined : route);
  next();
}

const listener = labelRequest ? (req, res) => labelByRoute(req, res, () => handle(req, res)) : handle;

const server = http.createServer({ keepAliveTimeout: 60_000 }, listener);
server.listen(Number(arg('port', 0)), '127.0.0.1', () => {
  console.log(`LISTENING ${server.address().port}`);
});
process.on('SIGTERM', () => {
  if (profile) profile.stop();
  process.exit(0);
});
