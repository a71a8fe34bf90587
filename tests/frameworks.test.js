'use strict';
// The framework integrations (heap-labels/express, /fastify, /koa, /http) against the real
// frameworks from npm (devDependencies: express 4 and 5, fastify 5, koa 2 with @koa/router), each
// app in a child process on loopback (tests/fixtures/framework-scenarios.js).
//
// On every runtime: the labels seen in handlers, after awaits, in timers after the response, in
// serialization, 404 and error handlers are the route template's one interned object; a failing or
// unmatched request does not leak into the next request of the keep-alive connection; bad extra
// labels fail the request with the library's error naming the key; the integrations add no
// property to the request objects. On the patched runtime: routes retaining 10:3:1 under
// concurrent load are attributed in that ratio by byLabel('route').

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { runFixture, fixtureJson, libPath, asyncContextFrameFlags, throwsNaming } = require('./helpers');

const FRAMEWORKS = ['express4', 'express5', 'fastify', 'koa', 'http'];
const HANDLER_POINTS = ['sync', 'await', 'timer-await', 'serialize', 'timeout-after-response', 'immediate-after-response'];
const TEMPLATES = ['/users/:id', '/items/:id', '/boom', '/async-boom', '/orgs/:org/members/:member', '/admin/stats'];

const scenario = (framework, name, nodeArgs = []) => fixtureJson('framework-scenarios.js', { nodeArgs, args: [framework, name] });

for (const framework of FRAMEWORKS) {
  test(`${framework}: requests carry their route template's label object`, () => {
    const out = scenario(framework, 'behaviour');
    const idAt = (rid, point) => {
      const found = (out.observations[rid] || []).find(([p]) => p === point);
      assert.ok(found, `${rid}: no observation at ${point}: ${JSON.stringify(out.observations[rid])}`);
      return found[1];
    };
    const labelsAt = (rid, point) => {
      const id = idAt(rid, point);
      return id === null ? null : out.labels[id];
    };
    // One object per label set, wherever it was seen.
    const idOf = (labels) => out.labels.findIndex((l) => JSON.stringify(l) === JSON.stringify(labels));
    assert.equal(out.frozen, true, 'label objects are frozen');
    assert.equal(new Set(out.labels.map((l) => JSON.stringify(l))).size, out.labels.length, 'one object per label set');

    // Everything ran on one keep-alive connection.
    const responses = Object.entries(out.responses);
    assert.ok(responses.slice(1).every(([, r]) => r.reused), `a fresh connection was used: ${JSON.stringify(out.responses)}`);
    assert.equal(out.responses.u1.status, 200);
    assert.equal(out.responses.missing.status, 404);
    assert.equal(out.responses.boom.status, 500);

    // Handler, awaits, timers after the response, serialization: the route's object, shared by
    // every URL of the template.
    const users = idOf({ route: '/users/:id', tenant: 'none' });
    assert.ok(users >= 0, `no /users/:id label in ${JSON.stringify(out.labels)}`);
    for (const rid of ['u1', 'u2', 'after-boom', 'after-missing', 'after-async-boom', 'after-bad']) {
      for (const point of HANDLER_POINTS) assert.equal(idAt(rid, point), users, `${rid} at ${point}`);
    }
    for (const [route, rids] of [['/orgs/:org/members/:member', ['org1', 'org2']], ['/admin/stats', ['admin']]]) {
      const id = idOf({ route, tenant: 'none' });
      assert.ok(id >= 0, `no ${route} label in ${JSON.stringify(out.labels)}`);
      for (const rid of rids) for (const point of HANDLER_POINTS) assert.equal(idAt(rid, point), id, `${rid} at ${point}`);
    }
    assert.deepEqual(labelsAt('post', 'after-body'), { route: '/items/:id', tenant: 'none' }, 'after body parsing');

    // Errors are handled with the failing route's labels.
    assert.deepEqual(labelsAt('boom', 'error'), { route: '/boom', tenant: 'none' });
    assert.deepEqual(labelsAt('async-boom', 'error'), { route: '/async-boom', tenant: 'none' });

    // Unmatched requests: the bucket of their method, one object for any URL.
    const bucket = idOf({ route: '(unmatched) GET', tenant: 'none' });
    assert.ok(bucket >= 0, `no bucket label in ${JSON.stringify(out.labels)}`);
    assert.equal(idAt('missing', 'notFound'), bucket);
    assert.equal(idAt('missing2', 'notFound'), bucket);

    // No leak into the next request of the connection: the first middleware after the integration
    // sees the new request's labels (express/koa: the bucket until routing; fastify: its route).
    if (framework !== 'http') {
      const expected = framework === 'fastify' ? users : bucket;
      for (const rid of ['after-boom', 'after-missing', 'after-async-boom', 'after-bad']) {
        assert.equal(idAt(rid, 'pre'), expected, `${rid}: first middleware`);
      }
    }

    // Extra labels from labels(request), validated like any label set.
    const tenant = idOf({ route: '/users/:id', tenant: 'acme' });
    assert.ok(tenant >= 0, `no tenant label in ${JSON.stringify(out.labels)}`);
    for (const rid of ['tenant', 'tenant2']) for (const point of HANDLER_POINTS) assert.equal(idAt(rid, point), tenant);
    for (const [rid, key] of [['bad-type', '"tenant"'], ['clash', '"route"']]) {
      assert.equal(out.responses[rid].status, 500, `${rid} fails the request`);
      const error = out.errors[rid];
      assert.ok(error, `${rid}: the app's error handling got no error`);
      assert.equal(error.name, 'TypeError');
      assert.ok(error.message.includes(key) && error.message.includes('labels()'), error.message);
      assert.deepEqual(labelsAt(rid, 'error'), { route: '(unmatched) GET' }, `${rid}: handled with the bare bucket`);
    }

    // Bounded: every route value seen is a template or the bucket, never a raw URL.
    for (const labels of out.labels) {
      assert.ok(TEMPLATES.includes(labels.route) || isBucket(labels.route), `label value ${labels.route}`);
    }
  });
}

// A bucket value: '(unmatched)' and the request's method (docs/api.md).
function isBucket(value) {
  return /^\(unmatched\) [A-Z-]+$/.test(value);
}

const PROFILE_FLAGS = ['--expose-gc', ...asyncContextFrameFlags()];
const caps = fixtureJson('labeled-scenarios.js', { nodeArgs: PROFILE_FLAGS, args: ['capabilities'] });
const noSampleLabels = !caps?.sampleLabels && 'capabilities().sampleLabels is false: per-sample labels need the patched runtime';

for (const framework of FRAMEWORKS) {
  test(`${framework}: routes retaining 10:3:1 under concurrent load are attributed 10:3:1`, { skip: noSampleLabels }, () => {
    const out = scenario(framework, 'attribution', PROFILE_FLAGS);
    assert.equal(out.load.errors, 0);
    assert.deepEqual(out.load.statuses, { 200: 1800 });
    assert.equal(out.kept, 600 * 14);
    const bytes = (route) => out.groups.find((g) => g.route === route)?.bytes ?? 0;
    const total = out.groups.reduce((sum, g) => sum + g.bytes, 0);
    const [search, report, health] = ['/search/:q', '/report/:id', '/health/:n'].map(bytes);
    const within = (actual, expected) => Math.abs(actual / expected - 1) <= 0.15;
    const detail = JSON.stringify(out.groups);
    assert.ok(within(search / health, 10), `search/health = ${search / health}: ${detail}`);
    assert.ok(within(report / health, 3), `report/health = ${report / health}: ${detail}`);
    assert.ok(within(search / report, 10 / 3), `search/report = ${search / report}: ${detail}`);
    assert.ok((search + report + health) / total >= 0.9, `route share ${((search + report + health) / total).toFixed(3)}: ${detail}`);
    for (const g of out.groups) {
      assert.ok([null, '/search/:q', '/report/:id', '/health/:n'].includes(g.route) || isBucket(g.route), `label value ${g.route}`);
    }
  });
}

// The integrations keep their per-request state in a table, never on the request objects: express
// moves every request to a new prototype, after which each property added to req or res builds a
// new V8 map (about 1.3 KB per property and request, and megamorphic access everywhere). So the
// objects a route handler sees have no own property the integration added, and the framework's
// own route value (req.route, ctx._matchedRoute) still reads as the framework set it.
for (const framework of ['express4', 'express5', 'fastify', 'koa']) {
  test(`${framework}: the integration adds no property to the request objects`, () => {
    const shape = (mode) => {
      const run = runFixture('request-shape.js', { args: [framework, mode] });
      assert.equal(run.status, 0, run.stderr);
      return run.json;
    };
    const without = shape('off');
    const withIntegration = shape('on');
    assert.equal(withIntegration.route, without.route, 'the matched route as the framework reports it');
    for (const [name, keys] of Object.entries(withIntegration.objects)) {
      const added = keys.filter((key) => !without.objects[name].includes(key));
      assert.deepEqual(added, [], `${name}: properties the integration added`);
    }
  });
}

// Setup errors and limits, in this process.
const heap = require(libPath);
const { httpRouteLabels } = require('../lib/integrations/http.js');
const { expressRouteLabels } = require('../lib/integrations/express.js');
const { koaRouteLabels } = require('../lib/integrations/koa.js');

test('bad options fail at setup with an error naming the option or label key', () => {
  throwsNaming(() => httpRouteLabels({ key: 7 }), TypeError, '"key"');
  throwsNaming(() => httpRouteLabels({ key: '' }), RangeError, 'label keys must not be empty');
  throwsNaming(() => httpRouteLabels({ unmatched: 'x'.repeat(2000) }), RangeError, '"route"', 'unmatched');
  throwsNaming(() => httpRouteLabels({ key: 'tenant', unmatched: '\ud800' }), TypeError, '"tenant"', 'well-formed');
  throwsNaming(() => httpRouteLabels({ labels: 'tenant' }), TypeError, '"labels"');
  throwsNaming(() => httpRouteLabels({ maxRoutes: 0 }), RangeError, '"maxRoutes"');
  throwsNaming(() => httpRouteLabels('route'), TypeError, 'options');
  throwsNaming(() => expressRouteLabels({}), TypeError, 'express application');
  throwsNaming(() => koaRouteLabels(() => {}), TypeError, 'koa application');
});

test('http: templates are strings; the labels are entered and returned; extras are validated', () => {
  const label = httpRouteLabels({ key: 'handler', unmatched: 'none', labels: (req) => req.extra });
  throwsNaming(() => label({}, 42), TypeError, 'template must be a string');
  const a = label({}, '/a/:id');
  assert.deepEqual(a, { handler: '/a/:id' });
  assert.equal(heap.getHeapProfileLabels(), a);
  assert.equal(label({}, '/a/:id'), a, 'one object per template');
  assert.deepEqual(label({}, undefined), { handler: 'none' });
  assert.equal(label({}, null), label({}, undefined));
  const extra = Object.freeze({ tenant: 'acme' });
  assert.deepEqual(label({ extra }, '/a/:id'), { handler: '/a/:id', tenant: 'acme' });
  assert.equal(label({ extra }, '/a/:id'), label({ extra: { tenant: 'acme' } }, '/a/:id'));
  throwsNaming(() => label({ extra: { tenant: 1 } }, '/a/:id'), TypeError, '"tenant"', 'labels()');
  assert.deepEqual(heap.getHeapProfileLabels(), { handler: 'none' }, 'a failed call leaves the bare bucket');
  throwsNaming(() => label({ extra: { handler: 'x' } }, '/a/:id'), TypeError, '"handler"');
  const many = Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`k${i}`, 'v']));
  throwsNaming(() => label({ extra: many }, '/a/:id'), RangeError, '"handler"', '32');
  throwsNaming(() => label({}, '/x'.repeat(600)), RangeError, '"handler"', '1024');
  heap.setHeapProfileLabels(null);
});

test('http: past maxRoutes distinct templates, new ones share the bucket (with one warning)', async () => {
  const warnings = [];
  const onWarning = (w) => warnings.push(w);
  process.on('warning', onWarning);
  try {
    const label = httpRouteLabels({ maxRoutes: 3 });
    const kept = ['/a', '/b', '/c'].map((t) => label({}, t));
    assert.deepEqual(kept.map((l) => l.route), ['/a', '/b', '/c']);
    const bucket = label({}, undefined);
    for (let i = 0; i < 50; i++) assert.equal(label({}, `/raw/url/${i}`), bucket);
    assert.equal(label({}, '/b'), kept[1], 'admitted templates keep their object');
    await new Promise((resolve) => setImmediate(resolve));
    const ours = warnings.filter((w) => w.code === 'HEAP_LABELS_ROUTE');
    assert.equal(ours.length, 1, ours.map((w) => w.message).join('\n'));
    assert.match(ours[0].message, /maxRoutes/);
  } finally {
    process.off('warning', onWarning);
    heap.setHeapProfileLabels(null);
  }
});

test('express 4: a router mounted before installation is an error naming the fix', () => {
  const express = require('express4');
  const app = express();
  app.use('/api', express.Router());
  throwsNaming(() => expressRouteLabels(app), Error, 'before mounting routers');
  const again = express();
  expressRouteLabels(again);
  throwsNaming(() => expressRouteLabels(again), Error, 'already installed');
});

test('express 5: a router mounted before installation is adopted from its layer (router >= 2.3)', async () => {
  const http = require('node:http');
  const express = require('express');
  const app = express();
  const api = express.Router();
  let seen;
  api.get('/items/:id', (req, res) => {
    seen = heap.getHeapProfileLabels();
    res.end();
  });
  app.use('/api', api);
  expressRouteLabels(app);
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    await new Promise((resolve, reject) => {
      http.get({ host: '127.0.0.1', port: server.address().port, path: '/api/items/3' }, (res) => {
        res.resume();
        res.on('end', resolve);
      }).on('error', reject);
    });
  } finally {
    server.close();
  }
  assert.deepEqual(seen, { route: '/api/items/:id' });
});

// GET `path` on `server` (listening), resolving when the response ended.
async function getPath(server, path) {
  const http = require('node:http');
  await new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port: server.address().port, path }, (res) => {
      res.resume();
      res.on('end', resolve);
    }).on('error', reject);
  });
}

async function listening(server) {
  if (!server.listening) await new Promise((resolve) => server.once('listening', resolve));
  return server;
}

for (const version of ['express4', 'express']) {
  test(`${version}: an unlabeled app that routes before handing the request to a labeled sub-app leaves it labeled`, async () => {
    const express = require(version);
    const app = express();
    const sub = express();
    expressRouteLabels(sub);
    let seen;
    let own;
    // The parent's route (auth, say) sets req.route before the sub-app starts the request.
    app.all(version === 'express4' ? '/api/*' : '/api/*rest', (req, res, next) => next());
    sub.get('/users/:id', (req, res) => {
      seen = heap.getHeapProfileLabels();
      own = Object.hasOwn(req, 'route');
      res.end(req.route.path);
    });
    app.use('/api', sub);
    const server = await listening(app.listen(0, '127.0.0.1'));
    try {
      await getPath(server, '/api/users/7');
    } finally {
      server.close();
    }
    // The sub-app's own template: only the labeled app's routes are known (its mount path could
    // be a pattern, and req.baseUrl is the literal text it matched).
    assert.deepEqual(seen, { route: '/users/:id' });
    assert.equal(own, false, 'req.route stays the accessor');
  });
}

test("a koa app mounted in a labeled express app sees koa's own ctx._matchedRoute, express's req.route its own", async () => {
  const express = require('express4');
  const Koa = require('koa');
  const Router = require('@koa/router');
  const koaApp = new Koa();
  koaRouteLabels(koaApp);
  const router = new Router();
  let matched;
  let seen;
  let beforeRouting = 'not run';
  koaApp.use((ctx, next) => {
    beforeRouting = ctx._matchedRoute;
    return next();
  });
  router.get('/k/:id', (ctx) => {
    matched = ctx._matchedRoute;
    seen = heap.getHeapProfileLabels();
    ctx.body = 'ok';
  });
  koaApp.use(router.routes());
  const handler = koaApp.callback();
  const app = express();
  expressRouteLabels(app);
  let expressRoute;
  app.all('/k/*', (req, res) => {
    res.on('finish', () => {
      expressRoute = req.route;
    });
    handler(req, res);
  });
  const server = await listening(app.listen(0, '127.0.0.1'));
  try {
    await getPath(server, '/k/1');
  } finally {
    server.close();
  }
  assert.equal(beforeRouting, undefined, "koa's router has not matched yet");
  assert.equal(matched, '/k/:id');
  assert.equal(expressRoute.path, '/k/*', "after koa's routing too");
  assert.deepEqual(seen, { route: '/k/:id' });
});
