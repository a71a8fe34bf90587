'use strict';
// Route templates (issue 26, item 3): the label a handler sees is the full template of the route
// that handled the request, across nested and mounted routers, prefixes, sub-apps, URL rewrites
// inside a mount, and routes with several paths or a RegExp path (named by the path that matched,
// never a list). One app per framework version from npm (devDependencies: express 4 and 5,
// fastify 4.9, 4 and 5, koa 2 and 3 with @koa/router and koa-mount; express 5 also under
// @opentelemetry/instrumentation-express, which wraps every layer), each in a child process
// (tests/fixtures/route-templates.js); the label is read with getHeapProfileLabels(), which works
// on stock runtimes. Each app runs twice: installed by its own integration call, and under the
// preload (heap-labels/register) with no call, labeled by the automatic instrumentation, which
// shares the template logic. The template rules are documented in docs/api.md, "Route templates".

const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { runFixture } = require('./helpers');

// The preload (heap-labels/register) from this checkout.
const REGISTER = path.join(__dirname, '..', 'lib', 'entries', 'register.js');

// The bucket of a request no route takes is its method's (docs/api.md); every such case is a GET.
const UNMATCHED = '(unmatched) GET';

// Case name -> [HTTP status, expected label].
const EXPRESS = {
  'root route': [200, '/users/:id'],
  'nested routers': [200, '/orgs/:org/teams/:team/members/:member'],
  'router mounted at the root': [200, '/plain/:p'],
  'mount path with a trailing slash': [200, '/v1/things/:t'],
  'root route of a mounted router': [200, '/v1'],
  'root route of a mounted router, trailing slash': [200, '/v1'],
  'sub-app': [200, '/admin/stats'],
  'router in a sub-app': [200, '/admin/reports/:id'],
  'sub-app in a sub-app': [200, '/admin/deep/x/:y'],
  'several paths, first': [200, '/multi/a/:x'],
  'several paths, second': [200, '/multi/b/:y'],
  'several paths in a mounted router': [200, '/api/q/:y'],
  'several mount paths, first': [200, '/m1/x/:id'],
  'several mount paths, second': [200, '/m2/x/:id'],
  'regex route': [200, String.raw`/^\/files\/(.*)$/`],
  'regex route in a mounted router': [200, String.raw`/api/^\/raw\/(\d+)$/`],
  'regex mount path': [200, String.raw`/^\/ver\d+//ping`],
  'URL set back to the full URL inside a mount': [200, '/-/verdaccio/data/packages'],
  'relative rewrite inside a mount': [200, '/legacy/new/:id'],
  're-dispatch from inside a mount': [200, '/users/:id'],
  'one router mounted twice': [200, '/two/s/:id'],
  'same prefix nested twice': [200, '/p/p/x'],
  'route chain': [200, '/chain/:id'],
  "next('route')": [200, '/n/special'],
  'falls out of a mount to an app route': [200, '/api/late'],
  'router called by middleware after a mount handed the request back': [200, '/api/direct/:id'],
  'mounted router called by middleware after it handed the request back': [200, '/one/back/:id'],
  'a mount in a router mounted at the root, then another router': [200, '/acct/:id'],
  'dispatched again from the root, then out of a mount to an app route': [200, '/again/q'],
  'a labeled app mounted at the root of another app': [200, '/sub-a/x'],
  "out of a labeled app mounted at the root of another app, to that app's route": [200, '/sub-a/late'],
  'unmatched inside a mount': [404, UNMATCHED],
  'several paths, registered before installation': [200, '/early/b/:y'],
  'several paths in a sub-app built before installation': [200, '/pre/q/:y'],
};

const FASTIFY = {
  'root route': [200, '/users/:id'],
  'prefixed plugin': [200, '/api/items/:id'],
  'nested prefixed plugins': [200, '/a/b/:bid/c'],
  'root route of a prefixed plugin': [200, '/api'],
  'unencapsulated plugin in a prefixed plugin': [200, '/fp/inner/:id'],
  'wildcard route': [200, '/files/*'],
  'parameter with a regular expression': [200, String.raw`/num/:id(^\d+$)`],
  'several methods': [200, '/both/:id'],
  rewriteUrl: [200, '/users/:id'],
  'unmatched inside a prefix': [404, UNMATCHED],
};

// Fastify 4 registers the root route of a prefixed plugin twice, '/api' and '/api/' (its route
// table lists both); fastify 5 names both '/api'.
const FASTIFY4 = { 'root route of a prefixed plugin, trailing slash': [200, '/api/'] };

const KOA = {
  'root route': [200, '/users/:id'],
  'prefixed router': [200, '/api/items/:id'],
  'root route of a prefixed router': [200, '/api'],
  'nested routers': [200, '/orgs/:org/members/:member'],
  'nested routers under a prefix': [200, '/v1/orgs/:org/members/:member'],
  'three nested routers': [200, '/l1/:a/l2/:b/l3/:c'],
  'several paths, first': [200, '/multi/a/:x'],
  'several paths, second': [200, '/multi/b/:y'],
  'regex route': [200, String.raw`/^\/files\/(.*)$/`],
  'several matching routes, the first passes': [200, '/u/me'],
  'several matching routes, the first answers': [200, '/u/:id'],
  'route behind a layer for every method (router.all)': [200, '/pass/:a/:b'],
  'layer for every method (router.all) that is the only route': [200, '/pass{/*rest}'],
  'layer for every method (router.all) chosen by an exclusive router': [200, '/ex{/*rest}'],
  'koa-mount sub-app': [200, '/sub/x/:id'],
  'root route of a koa-mount sub-app': [200, '/sub'],
  'koa-mount sub-app in a koa-mount sub-app': [200, '/outer/inner/c/:id'],
  'koa-mount of a router': [200, '/mounted/r/:id'],
  'falls out of a koa-mount to an app route': [200, '/sub/late'],
  'unmatched': [404, UNMATCHED],
};

const EXPRESS5 = {
  ...EXPRESS,
  'wildcard route': [200, '/star/*rest'],
  'optional parameter route': [200, '/opt{/:a}/:b'],
  'router mounted in a sub-app before installation': [200, '/pre/inner/r/:id'],
};

const APPS = [
  [
    'express 4',
    'express4',
    {
      ...EXPRESS,
      'wildcard route': [200, '/star/*'],
      'optional parameter route': [200, '/opt/:a?/:b'],
      // express 4 keeps no mount path: no template rather than a wrong one (with a warning).
      'router mounted in a sub-app before installation': [200, UNMATCHED],
    },
  ],
  ['express 5', 'express5', EXPRESS5],
  ["express 5 under OpenTelemetry's express instrumentation", 'express5-otel', EXPRESS5],
  ['fastify 4.9 (no request.routeOptions yet)', 'fastify4.9', { ...FASTIFY, ...FASTIFY4 }],
  ['fastify 4', 'fastify4', { ...FASTIFY, ...FASTIFY4 }],
  ['fastify 5', 'fastify5', { ...FASTIFY, 'root route of a prefixed plugin, trailing slash': [200, '/api'] }],
  ['koa 2', 'koa2', KOA],
  ['koa 3', 'koa3', KOA],
];

// The automatic instrumentation (the preload, no call in the app) patches express when it loads,
// before any app or router exists: nothing is built before installation, so express 4's routers
// mounted in a sub-app built early get their template too.
const AUTOMATIC = { express4: { 'router mounted in a sub-app before installation': [200, '/pre/inner/r/:id'] } };

for (const [title, app, explicit] of APPS) {
  for (const automatic of [false, true]) {
    const how = automatic ? 'under the preload, with no call in the app' : 'installed by the app';
    const expected = automatic ? { ...explicit, ...AUTOMATIC[app] } : explicit;
    test(`26.3: ${title}, ${how}: every route is labeled by its full template, in its handler`, () => {
      const result = runFixture(
        'route-templates.js',
        automatic
          ? { args: [app], nodeArgs: ['-r', REGISTER], env: { ROUTE_TEMPLATES_AUTOMATIC: '1', HEAP_LABELS_SIGNAL: 'off' } }
          : { args: [app] },
      );
      assert.equal(result.status, 0, `${app} failed:\n${result.stderr}`);
      assert.ok(result.json?.cases, `${app} printed no cases:\n${result.stdout}\n${result.stderr}`);
      const seen = Object.fromEntries(
        Object.entries(result.json.cases).map(([name, { url, status, seen: label }]) => [`${name} (${url})`, [status, label]]),
      );
      const want = Object.fromEntries(
        Object.entries(result.json.cases).map(([name, { url }]) => [`${name} (${url})`, expected[name] ?? 'no expectation']),
      );
      assert.deepEqual(seen, want);
      assert.deepEqual(Object.keys(result.json.cases).sort(), Object.keys(expected).sort(), 'every case ran');
      if (app === 'express4' && !automatic) {
        assert.match(result.stderr, /was mounted before expressRouteLabels\(app\).*labeled as unmatched/);
      }
      if (automatic) assert.match(result.stderr, /labeling (express|fastify|koa) \S+ requests by route template/);
      if (app.startsWith('express')) {
        // Several mount paths with a waiting parameter callback, 60 requests at once.
        const concurrent = result.json.concurrent;
        assert.equal(concurrent.length, 60);
        const wrong = concurrent.filter((r) => r.status !== 200 || r.seen !== r.expected);
        assert.deepEqual(wrong, [], 'concurrent requests through several mount paths');
      }
    });
  }
}
