'use strict';
// Automatic route labels (lib/instrument/): apps with no heap-labels code, started with the preload
// (`-r heap-labels/register` for CommonJS, `--import heap-labels/register` for ESM), label their
// requests by route template. Each app (tests/fixtures/zero-code/apps/) runs in a child process
// from a temporary directory whose node_modules links the packages it imports to the ones this
// repository installed (devDependencies), so that `require('express')` / `import express from
// 'express'` load express 5 or express 4 as in a real install, and heap-labels/register resolves
// like an installed dependency. A test-only preload (fixtures/zero-code/probe.cjs) puts the
// labels current when the response headers are written into a response header; labels propagate
// on every runtime (only their capture into heap samples needs the labeled runtime).
//
// Covered: express 4 and 5, koa 2 and 3 with @koa/router, fastify 4 and 5, NestJS 12 on express
// and on fastify, node:http, https and http2 (the fallback label), each as a CommonJS and an ESM
// app; the stderr lines; the off switch (same responses, no labels); an unsupported version
// (fastify 3) left alone; apps that also use the explicit integrations; startAgent() after the
// app loaded its framework; OpenTelemetry's instrumentations beside it (require-in-the-middle and
// import-in-the-middle); a framework app behind a request listener of the app's own.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const http2 = require('node:http2');
const os = require('node:os');
const path = require('node:path');
const { root, runFixture, makeCertificate } = require('./helpers');

const FIXTURES = path.join(__dirname, 'fixtures', 'zero-code');
const PROBE = path.join(FIXTURES, 'probe.cjs');
const installed = (dir) => path.join(root, 'node_modules', dir);
const versionOf = (dir) => JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
// The express and fastify NestJS's platform packages load (resolved from where they are installed).
const nestExpress = path.dirname(require.resolve('express/package.json', { paths: [installed('@nestjs/platform-express')] }));
const nestFastify = path.dirname(require.resolve('fastify/package.json', { paths: [installed('@nestjs/platform-fastify')] }));

const START_LINE = /^heap-labels: labeling requests by route template: .*HEAP_LABELS_ROUTES=off/m;

// The requests every app gets, in this order, on one keep-alive connection: the route template
// each must carry (frameworks), or the fallback label (plain servers).
const REQUESTS = [
  { method: 'GET', path: '/users/7', route: '/users/:id', fallback: 'GET /users/:int' },
  { method: 'POST', path: '/items/5', body: { list: [1, 2, 3] }, route: '/items/:id', fallback: 'POST /items/:int' },
  { method: 'GET', path: '/orgs/acme/members/3', route: '/orgs/:org/members/:member', fallback: 'GET /orgs/acme/members/:int' },
  { method: 'GET', path: '/missing/1', route: '(unmatched) GET', fallback: 'GET /missing/:int', status: 404 },
  // After a 404 on the same connection: nothing carries over.
  { method: 'GET', path: '/users/8', route: '/users/:id', fallback: 'GET /users/:int' },
];

const KOA_PACKAGES = { '@koa/router': '@koa/router', '@koa/bodyparser': '@koa/bodyparser' };
const NEST_PACKAGES = {
  '@nestjs/common': '@nestjs/common',
  '@nestjs/core': '@nestjs/core',
  '@nestjs/platform-fastify': '@nestjs/platform-fastify',
  'reflect-metadata': 'reflect-metadata',
};

// name: what the test calls it; app: the fixture (without .cjs/.mjs); packages: node_modules name ->
// installed directory; framework: [name, version] of the stderr line, or undefined for a plain
// server (fallback labels); env; client: 'https' or 'h2c' for those servers.
const CASES = [
  { name: 'express 5', app: 'express', packages: { express: 'express' }, framework: ['express', versionOf(installed('express'))] },
  { name: 'express 4', app: 'express', packages: { express: 'express4' }, framework: ['express', versionOf(installed('express4'))] },
  { name: 'koa 2 + @koa/router', app: 'koa', packages: { koa: 'koa', ...KOA_PACKAGES }, framework: ['koa', versionOf(installed('koa'))] },
  { name: 'koa 3 + @koa/router', app: 'koa', packages: { koa: 'koa3', ...KOA_PACKAGES }, framework: ['koa', versionOf(installed('koa3'))] },
  { name: 'fastify 5', app: 'fastify', packages: { fastify: 'fastify' }, framework: ['fastify', versionOf(installed('fastify'))] },
  { name: 'fastify 4', app: 'fastify', packages: { fastify: 'fastify4' }, framework: ['fastify', versionOf(installed('fastify4'))] },
  { name: 'NestJS on express', app: 'nest', packages: NEST_PACKAGES, env: { PLATFORM: 'express' }, framework: ['express', versionOf(nestExpress)] },
  { name: 'NestJS on fastify', app: 'nest', packages: NEST_PACKAGES, env: { PLATFORM: 'fastify' }, framework: ['fastify', versionOf(nestFastify)] },
  { name: 'node:http', app: 'http', env: { SERVER: 'http' } },
  { name: 'node:https', app: 'http', env: { SERVER: 'https' }, client: 'https' },
  { name: 'node:http2', app: 'http', env: { SERVER: 'h2c' }, client: 'h2c' },
];

// A directory with the app's file and a node_modules of links: heap-labels (this repository) and
// `packages`.
function appDirectory(file, packages) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-zero-code-'));
  fs.copyFileSync(path.join(FIXTURES, 'apps', file), path.join(dir, file));
  const modules = path.join(dir, 'node_modules');
  fs.mkdirSync(modules);
  fs.symlinkSync(root, path.join(modules, 'heap-labels'), 'dir');
  for (const [name, target] of Object.entries(packages)) {
    fs.mkdirSync(path.dirname(path.join(modules, name)), { recursive: true });
    fs.symlinkSync(installed(target), path.join(modules, name), 'dir');
  }
  return dir;
}

// Starts `file` (an app of fixtures/zero-code/apps) in a child process of this runtime (flags such
// as AsyncContextFrame come through NODE_OPTIONS) and resolves once it prints its port.
// preload: heap-labels/register (-r for .cjs, --import for .mjs); before: preloads ahead of it.
async function startApp({ file, packages = {}, env = {}, preload = true, before = [], client }) {
  const dir = appDirectory(file, packages);
  if (client === 'https') makeCertificate(dir);
  const esm = file.endsWith('.mjs');
  const register = preload ? [esm ? '--import' : '-r', 'heap-labels/register'] : [];
  const child = spawn(process.execPath, [...before, ...register, '-r', PROBE, file], {
    cwd: dir,
    env: { ...process.env, HEAP_LABELS_SIGNAL: 'off', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text) => (stderr += text));
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const listening = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${file} did not listen within 60 s:\n${stderr}`)), 60_000);
    const check = () => {
      const match = /listening (\d+)/.exec(stdout);
      if (match) {
        clearTimeout(timer);
        child.stdout.off('data', check);
        resolve(Number(match[1]));
      }
    };
    child.stdout.on('data', check);
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`${file} exited (${code ?? signal}) before listening:\n${stderr}`));
    });
  });
  let port;
  try {
    port = await listening;
  } catch (error) {
    child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    port,
    dir,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      fs.rmSync(dir, { recursive: true, force: true });
      return stderr;
    },
  };
}

// A client of one app: requests in sequence on one kept-alive connection (one HTTP/2 session).
function clientFor(app, kind) {
  if (kind === 'h2c') {
    const session = http2.connect(`http://127.0.0.1:${app.port}`);
    return {
      request({ method, path: target, body, headers = {} }) {
        return new Promise((resolve, reject) => {
          const stream = session.request({ ':method': method, ':path': target, 'content-type': 'application/json', ...headers });
          let status;
          let labels;
          let text = '';
          stream.on('response', (h) => {
            status = h[':status'];
            labels = h['x-heap-labels'];
          });
          stream.setEncoding('utf8').on('data', (chunk) => (text += chunk));
          stream.on('end', () => resolve({ status, labels: labels === undefined ? undefined : JSON.parse(labels), body: text }));
          stream.on('error', reject);
          stream.end(body === undefined ? undefined : JSON.stringify(body));
        });
      },
      close: () => session.close(),
    };
  }
  const tls = kind === 'https';
  const agent = new (tls ? https : http).Agent({ keepAlive: true, maxSockets: 1 });
  const ca = tls ? fs.readFileSync(path.join(app.dir, 'cert.pem')) : undefined;
  return {
    request({ method, path: target, body, headers = {} }) {
      return new Promise((resolve, reject) => {
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const options = {
          host: '127.0.0.1',
          port: app.port,
          method,
          path: target,
          agent,
          ca,
          servername: tls ? 'localhost' : undefined,
          headers: { 'content-type': 'application/json', ...(payload ? { 'content-length': Buffer.byteLength(payload) } : {}), ...headers },
        };
        const req = (tls ? https : http).request(options, (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (chunk) => (text += chunk));
          res.on('end', () => {
            const labels = res.headers['x-heap-labels'];
            resolve({ status: res.statusCode, labels: labels === undefined ? undefined : JSON.parse(labels), body: text });
          });
        });
        req.on('error', reject);
        req.end(payload);
      });
    },
    close: () => agent.destroy(),
  };
}

// Runs REQUESTS against a started app; returns the responses.
async function drive(app, kind, headers) {
  const client = clientFor(app, kind);
  try {
    const out = [];
    for (const r of REQUESTS) out.push(await client.request({ ...r, headers }));
    return out;
  } finally {
    client.close();
  }
}

function assertStatuses(responses) {
  REQUESTS.forEach((r, i) => {
    if (r.status) assert.equal(responses[i].status, r.status, `${r.method} ${r.path}: ${responses[i].body}`);
    else assert.ok([200, 201].includes(responses[i].status), `${r.method} ${r.path}: ${responses[i].status} ${responses[i].body}`);
  });
}

const lines = (stderr, re) => stderr.split('\n').filter((line) => re.test(line));

for (const c of CASES) {
  for (const ext of ['cjs', 'mjs']) {
    test(`${c.name} (${ext === 'cjs' ? 'CommonJS, -r' : 'ESM, --import'}): requests carry their route without app changes`, async () => {
      const app = await startApp({ file: `${c.app}.${ext}`, packages: c.packages, env: c.env, client: c.client });
      let responses;
      let stderr;
      try {
        responses = await drive(app, c.client);
      } finally {
        stderr = await app.stop();
      }
      assertStatuses(responses);
      const expected = REQUESTS.map((r) => ({ route: c.framework ? r.route : r.fallback }));
      assert.deepEqual(responses.map((r) => r.labels), expected, stderr);
      assert.equal(lines(stderr, START_LINE).length, 1, `one start line:\n${stderr}`);
      assert.deepEqual(lines(stderr, /hook failed/), [], stderr);
      if (c.framework) {
        const [name, version] = c.framework;
        const said = lines(stderr, /^heap-labels: labeling \S+ \S+ requests by route template$/);
        assert.deepEqual(said, [`heap-labels: labeling ${name} ${version} requests by route template`], stderr);
      }
    });
  }
}

test('HEAP_LABELS_ROUTES=off: no labels, no line, the same responses', async () => {
  const runs = {};
  for (const routes of ['on', 'off']) {
    const app = await startApp({ file: 'express.cjs', packages: { express: 'express4' }, env: { HEAP_LABELS_ROUTES: routes } });
    try {
      runs[routes] = { responses: await drive(app) };
    } finally {
      runs[routes].stderr = await app.stop();
    }
  }
  const { on, off } = runs;
  assert.deepEqual(off.responses.map((r) => r.labels), REQUESTS.map(() => null), off.stderr);
  assert.deepEqual(lines(off.stderr, /labeling/), [], off.stderr);
  assert.deepEqual(on.responses.map((r) => r.labels), REQUESTS.map((r) => ({ route: r.route })), on.stderr);
  const answer = (r) => ({ status: r.status, body: r.body });
  assert.deepEqual(on.responses.map(answer), off.responses.map(answer), 'the instrumentation changes no response');
});

test('a framework version outside the supported ranges (fastify 3) is left alone with one line', async () => {
  const app = await startApp({ file: 'fastify.cjs', packages: { fastify: 'fastify3' } });
  let responses;
  let stderr;
  try {
    responses = await drive(app);
  } finally {
    stderr = await app.stop();
  }
  assertStatuses(responses);
  const version = versionOf(installed('fastify3'));
  const said = lines(stderr, /fastify/).filter((line) => !START_LINE.test(line));
  assert.equal(said.length, 1, stderr);
  assert.match(said[0], new RegExp(`^heap-labels: fastify ${version.replace(/\./g, '\\.')} at .* is not a supported version \\(4\\.x, 5\\.x\\): left alone`));
  // Not instrumented: its server is a plain one, labeled by the fallback.
  assert.deepEqual(responses.map((r) => r.labels), REQUESTS.map((r) => ({ route: r.fallback })), stderr);
});

for (const [framework, packages] of [
  ['express', { express: 'express4' }],
  ['koa', { koa: 'koa3', ...KOA_PACKAGES }],
  ['fastify', { fastify: 'fastify' }],
]) {
  test(`${framework}: an app that also uses heap-labels/${framework} gets its options, installed once, no error`, async () => {
    const app = await startApp({ file: `explicit-${framework}.cjs`, packages });
    let responses;
    let stderr;
    try {
      responses = await drive(app, undefined, { 'x-tenant': 'acme' });
    } finally {
      stderr = await app.stop();
    }
    assertStatuses(responses);
    assert.deepEqual(responses.map((r) => r.labels), REQUESTS.map((r) => ({ route: r.route, tenant: 'acme' })), stderr);
    assert.doesNotMatch(stderr, /already installed|hook failed|Error/, stderr);
  });
}

test('startAgent() after the app loaded express instruments it, and says so in its start line', async () => {
  const app = await startApp({ file: 'start-agent.cjs', packages: { express: 'express' }, preload: false });
  let responses;
  let stderr;
  try {
    responses = await drive(app);
  } finally {
    stderr = await app.stop();
  }
  assertStatuses(responses);
  assert.deepEqual(responses.map((r) => r.labels), REQUESTS.map((r) => ({ route: r.route })), stderr);
  const start = lines(stderr, START_LINE);
  assert.equal(start.length, 1, stderr);
  assert.match(start[0], new RegExp(`loaded already: express ${versionOf(installed('express')).replace(/\./g, '\\.')}`));
});

// OpenTelemetry's express and http instrumentations on the same app: both keep working, whichever
// preload comes first (CommonJS: require-in-the-middle; ESM: import-in-the-middle's loader).
for (const [ext, order] of [
  ['cjs', 'heap-labels first'],
  ['cjs', 'OpenTelemetry first'],
  ['mjs', 'OpenTelemetry first'],
]) {
  test(`express with OpenTelemetry (${ext}, ${order}): route labels and OpenTelemetry's spans`, async () => {
    const otel = ext === 'cjs' ? ['-r', path.join(FIXTURES, 'otel.cjs')] : ['--import', path.join(FIXTURES, 'otel.mjs')];
    const preload = order === 'heap-labels first' ? ['-r', 'heap-labels/register', ...otel] : [...otel, ext === 'cjs' ? '-r' : '--import', 'heap-labels/register'];
    const app = await startApp({ file: `express.${ext}`, packages: { express: 'express' }, preload: false, before: preload });
    let responses;
    let stderr;
    try {
      responses = await drive(app);
    } finally {
      stderr = await app.stop();
    }
    assertStatuses(responses);
    assert.deepEqual(responses.map((r) => r.labels), REQUESTS.map((r) => ({ route: r.route })), stderr);
    const spans = lines(stderr, /^otel-span /).map((line) => JSON.parse(line.slice('otel-span '.length)));
    // The server span of each routed request names its route (OpenTelemetry's express
    // instrumentation sets http.route), and express's own spans are there.
    const routes = spans.filter((s) => s.kind === 1).map((s) => s.attributes['http.route']);
    for (const r of REQUESTS.filter((q) => q.route !== '(unmatched) GET')) {
      assert.ok(routes.includes(r.route), `no server span with http.route ${r.route}: ${JSON.stringify(spans)}`);
    }
    const handler = (s) => s.attributes['express.type'] === 'request_handler' && s.attributes['http.route'] === '/users/:id';
    assert.ok(spans.some(handler), `no express request handler span: ${JSON.stringify(spans)}`);
  });
}

// A framework app behind a listener of the app's own: taken for a plain server at its first
// request, a framework's once the framework started one of its requests, so that its later
// requests start with the bucket (what the app does before handing over counts to the route).
for (const framework of ['express', 'koa']) {
  test(`${framework} behind a wrapping listener: the server is a framework's after its first request`, () => {
    const run = runFixture('wrapped-listener.js', { args: [framework] });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(run.json, [
      { listener: { route: 'GET /users/:int' }, handler: { route: '/users/:id' } },
      { listener: { route: '(unmatched) GET' }, handler: { route: '/users/:id' } },
      { listener: { route: '(unmatched) GET' }, handler: { route: '/users/:id' } },
    ]);
  });
}

test('the fallback label: method and normalised path, no raw identifiers', () => {
  const { fallbackRoute } = require('../lib/instrument/fallback-route');
  const cases = [
    ['GET', '/', 'GET /'],
    ['GET', '/users/1234?page=2#top', 'GET /users/:int'],
    ['DELETE', '/users/0b7e1c2a-4f3d-4a5b-9c8d-123456789abc/sessions', 'DELETE /users/:uuid/sessions'],
    ['GET', '/blobs/507f1f77bcf86cd799439011', 'GET /blobs/:hex'],
    ['GET', '/files/3f2a9b1c0d/raw', 'GET /files/:hex/raw'],
    ['GET', '/api/v2/orders/u_8f3k2', 'GET /api/v2/orders/:id'],
    ['GET', '/reports/2024-01-02', 'GET /reports/:id'],
    ['GET', '/static/app.3f2ab.js', 'GET /static/:id'],
    ['GET', '/users/alice%40example.com', 'GET /users/:str'],
    ['GET', '/tokens/abcdefghijklmnopqrstuvwxyz', 'GET /tokens/:str'],
    ['GET', '/posts/hello-world/', 'GET /posts/hello-world/'],
    ['GET', '//double', 'GET //double'],
    ['GET', '/a/b/c/d/e/f/g/h/i/j', 'GET /a/b/c/d/e/f/g/h/*'],
    ['GET', 'http://example.com/users/7?x', 'GET /users/:int'],
    ['GET', 'http://example.com', 'GET /'],
    ['OPTIONS', '*', 'OPTIONS *'],
    ['CONNECT', 'example.com:443', 'CONNECT :authority'],
    ['BREW', '/pot/1', '_OTHER /pot/:int'],
    [undefined, undefined, '_OTHER /'],
  ];
  for (const [method, target, expected] of cases) assert.equal(fallbackRoute(method, target), expected, `${method} ${target}`);
  // A long target stays bounded: at most 8 segments of at most 20 characters.
  assert.ok(fallbackRoute('GET', `/${'x'.repeat(9000)}/${'y/'.repeat(4000)}`).length < 8 * 24);
});

test('node:http fallback: at most maxRoutes distinct values, odd targets answered and labeled within bounds', async () => {
  const app = await startApp({ file: 'http.cjs', env: { SERVER: 'http' } });
  const client = clientFor(app);
  const seen = new Set();
  let stderr;
  try {
    // Distinct words (letters only: kept by the normaliser), more than maxRoutes (1000).
    const word = (i) => [...i.toString(26)].map((d) => String.fromCharCode(97 + parseInt(d, 26))).join('');
    for (let i = 0; i < 1100; i++) {
      const r = await client.request({ method: 'GET', path: `/users/${word(i)}x` });
      assert.equal(r.status, 200);
      seen.add(r.labels.route);
    }
    for (const target of ['http://example.com/users/7', '*', `/users/${'z'.repeat(8000)}`, '/users/%2e%2e%2f%00']) {
      const r = await client.request({ method: target === '*' ? 'OPTIONS' : 'GET', path: target });
      assert.ok([200, 404].includes(r.status), `${target}: ${r.status}`);
      seen.add(r.labels.route);
    }
  } finally {
    client.close();
    stderr = await app.stop();
  }
  assert.ok(seen.has('(unmatched) GET'), 'past maxRoutes, new values share the bucket of their method');
  // 1000 templates and the buckets of the two methods used (GET, OPTIONS).
  assert.ok(seen.size <= 1000 + 2, `${seen.size} distinct values`);
  for (const value of seen) assert.ok(value.length <= 200, value);
  assert.equal((stderr.match(/maxRoutes limit/g) ?? []).length, 1, stderr);
});

test('in process: startAgent() labels frameworks loaded after it, one line per framework version; stop() stops labeling', async () => {
  const heap = require('heap-labels');
  const written = [];
  const write = process.stderr.write;
  process.stderr.write = function (chunk, ...rest) {
    written.push(String(chunk));
    return write.call(this, chunk, ...rest);
  };
  let agent;
  try {
    agent = await heap.startAgent({ signal: 'off', nearHeapLimit: 0, allocations: false });
    const express4 = require('express4');
    require('express4'); // again: nothing new
    const app = express4();
    const seen = [];
    app.get('/users/:id', (req, res) => {
      seen.push(heap.getHeapProfileLabels() ?? null);
      res.end();
    });
    const server = await new Promise((resolve) => {
      const s = http.createServer(app).listen(0, '127.0.0.1', () => resolve(s));
    });
    const get = () =>
      new Promise((resolve, reject) => {
        http.get({ host: '127.0.0.1', port: server.address().port, path: '/users/1', agent: false }, (res) => {
          res.resume();
          res.on('end', resolve);
        }).on('error', reject);
      });
    try {
      await get();
      await agent.stop();
      agent = undefined;
      heap.setHeapProfileLabels(null);
      await get();
    } finally {
      server.close();
    }
    assert.deepEqual(seen, [{ route: '/users/:id' }, null], 'labeled while the agent runs, not after it stopped');
  } finally {
    process.stderr.write = write;
    if (agent) await agent.stop();
  }
  const said = written.join('').split('\n').filter((line) => line.startsWith('heap-labels: labeling'));
  assert.equal(said.filter((line) => START_LINE.test(line)).length, 1, said.join('\n'));
  assert.deepEqual(
    said.filter((line) => !START_LINE.test(line)),
    [`heap-labels: labeling express ${versionOf(installed('express4'))} requests by route template`],
  );
});
