'use strict';
// The agent pushing OTLP profiles (lib/push.js): an app started with the preload and
// HEAP_LABELS_OTLP_* variables (tests/fixtures/push-app.js) pushes to a local receiver (a node:http
// server here) that gunzips each request and decodes it with the official protos
// (tests/otlp-decoder.js). Covered: what arrives (path, headers, resource, labeled in-use and,
// where the runtime reports them, allocated profiles), totals per route equal to the pprof of the
// same window, periodic pushes, and a collector that fails (503), hangs (timeouts) and goes away
// (connection refused) then comes back: the app keeps serving, the queue stays bounded and counts
// what it drops, and the queued profiles arrive after recovery.

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const http = require('node:http');
const path = require('node:path');
const zlib = require('node:zlib');
const { root, decodePprof, pprofTotals, sleep, spawnApp, asyncContextFrameFlags } = require('./helpers');
const { decodeOtlp, otlpTotals } = require('./otlp-decoder');
const lib = require('../lib');

const registerCjs = path.join(root, 'lib', 'register.js');
const childFlags = ['--expose-gc', ...asyncContextFrameFlags()];
const caps = lib.capabilities();

// A collector: `mode` decides the answer ('ok', 'fail' = 503, 'hang' = never answers);
// `received` holds every request that was answered 200, decoded.
async function startReceiver() {
  const r = { mode: 'ok', received: [], attempts: 0, hanging: [] };
  r.server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      r.attempts++;
      if (r.mode === 'hang') {
        r.hanging.push(res);
        return;
      }
      if (r.mode === 'fail') {
        res.writeHead(503, { 'retry-after': '0' }).end();
        return;
      }
      const raw = Buffer.concat(chunks);
      const body = req.headers['content-encoding'] === 'gzip' ? zlib.gunzipSync(raw) : raw;
      r.received.push({ path: req.url, method: req.method, headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise((resolve) => r.server.listen(0, '127.0.0.1', resolve));
  r.port = r.server.address().port;
  r.close = () =>
    new Promise((resolve) => {
      for (const res of r.hanging.splice(0)) res.destroy();
      r.server.closeAllConnections();
      r.server.close(() => resolve());
    });
  r.reopen = () => new Promise((resolve) => r.server.listen(r.port, '127.0.0.1', resolve));
  return r;
}

async function startApp(env) {
  const app = await spawnApp([...childFlags, '-r', registerCjs, path.join(root, 'tests', 'fixtures', 'push-app.js')], {
    env: { ...process.env, HEAP_LABELS_SIGNAL: 'off', ...env },
  });
  app.get = (p) =>
    new Promise((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port: app.port, path: p }, (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }));
        })
        .on('error', reject);
    });
  app.json = async (p) => {
    const r = await app.get(p);
    assert.equal(r.status, 200, r.body);
    return JSON.parse(r.body);
  };
  return app;
}

async function waitFor(what, cond, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function load(app, n) {
  for (let i = 0; i < n; i++) {
    for (const route of ['/a', '/b', '/churn']) assert.equal((await app.get(route)).status, 200);
  }
}

test('a pushed window: path, headers, resource, labeled profiles, totals equal to the pprof of the same window', async (t) => {
  const receiver = await startReceiver();
  after(() => receiver.close());
  const app = await startApp({
    HEAP_LABELS_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.port}`,
    HEAP_LABELS_OTLP_HEADERS: 'authorization=Bearer%20s3cret,x-scope-orgid=team-a',
    HEAP_LABELS_PUSH_INTERVAL: '3600', // pushes here are the test's own
    HEAP_LABELS_SAMPLE_INTERVAL: '8192',
    OTEL_SERVICE_NAME: 'push-test',
  });
  for (let window = 0; window < 2; window++) {
    await load(app, 30);
    const { sent, pprof } = await app.json('/__push');
    assert.equal(sent, true, app.stderr);
    assert.equal(receiver.received.length, window + 1);
    const got = receiver.received[window];
    assert.equal(got.method, 'POST');
    assert.equal(got.path, '/v1development/profiles');
    assert.equal(got.headers['content-type'], 'application/x-protobuf');
    assert.equal(got.headers.authorization, 'Bearer s3cret');
    assert.equal(got.headers['x-scope-orgid'], 'team-a');
    const decoded = decodeOtlp(got.body, 'request');
    const window_ = decodePprof(Buffer.from(pprof, 'base64'));
    assert.deepEqual(otlpTotals(decoded, 'route'), pprofTotals(window_, 'route'), `window ${window}`);
    const [rp] = decoded.resourceProfiles;
    assert.equal(rp.resource['service.name'], 'push-test');
    assert.equal(rp.resource['process.pid'], app.child.pid);
    const types = rp.scopes[0].profiles.map((p) => p.type);
    assert.equal(types[0], 'inuse_space');
    if (caps.allocations) {
      assert.ok(types.includes('alloc_space'), `allocated figures pushed: ${types}`);
      if (caps.sampleLabels) {
        const alloc = otlpTotals(decoded, 'route').alloc_space;
        assert.ok(alloc['/churn'] > 0, `/churn allocated in the window: ${JSON.stringify(alloc)}`);
      }
    }
    if (caps.sampleLabels) {
      const inuse = otlpTotals(decoded, 'route').inuse_space;
      assert.ok(inuse['/a'] > inuse['/b'], JSON.stringify(inuse));
    }
  }
  // Windows are deltas: the second window's allocations are not the first's plus more.
  t.test('windows do not overlap', { skip: !(caps.allocations && caps.sampleLabels) && 'no labeled allocation figures on this runtime' }, () => {
    const [w1, w2] = receiver.received.map((r) => otlpTotals(decodeOtlp(r.body, 'request'), 'route').alloc_space['/churn']);
    // Each window had 30 /churn requests: similar allocated totals (sampling noise), not a sum.
    assert.ok(w2 < w1 * 1.8 && w1 < w2 * 1.8, `${w1} vs ${w2}`);
  });
});

test('periodic pushes survive a failing, hanging and vanished collector, and recover', async () => {
  const receiver = await startReceiver();
  after(() => receiver.close());
  const app = await startApp({
    HEAP_LABELS_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.port}/v1development/profiles`,
    HEAP_LABELS_PUSH_INTERVAL: '0.2',
    HEAP_LABELS_PUSH_TIMEOUT: '1',
    HEAP_LABELS_PUSH_QUEUE: '3',
  });
  await waitFor('periodic pushes', () => receiver.received.length >= 3);
  // (Decoding blocks this process, the receiver's, for a while: it waits until the end.)

  // 503: retried with backoff, the app keeps serving, the queue stays at 3 and counts drops.
  receiver.mode = 'fail';
  const attemptsBefore = receiver.attempts;
  await load(app, 10);
  await waitFor('drops while failing', async () => (await app.json('/__stats')).dropped > 0);
  let stats = await app.json('/__stats');
  assert.ok(stats.failedAttempts > 0 && stats.queued <= 3, JSON.stringify(stats));
  assert.equal(stats.lastError, 'HTTP 503');
  assert.ok(receiver.attempts > attemptsBefore);
  // A push asked for now while the collector fails: it gives up after the push timeout without
  // hammering the collector (the backoff is cut short once, not on every wait).
  const beforeManual = receiver.attempts;
  const manual = await app.json('/__push');
  assert.equal(manual.sent, false);
  assert.ok(receiver.attempts - beforeManual <= 5, `${receiver.attempts - beforeManual} attempts during one manual push`);
  // One line when pushing starts failing (whatever the first reason), not one per attempt.
  assert.equal(app.stderr.match(/push: cannot send profiles to http:\/\/127\.0\.0\.1:\d+: .*; retrying with backoff/g).length, 1, app.stderr);

  // Hanging: every attempt times out; still serving.
  receiver.mode = 'hang';
  await load(app, 5);
  await waitFor('timeouts', async () => /no answer within 1 s/.test((await app.json('/__stats')).lastError));

  // Gone: connection refused.
  await receiver.close();
  await load(app, 5);
  await waitFor('refused', async () => /ECONNREFUSED/.test((await app.json('/__stats')).lastError));
  assert.equal(app.child.exitCode, null, 'the app is alive');

  // Back: the queue drains and pushes go on.
  receiver.mode = 'ok';
  const receivedBefore = receiver.received.length;
  await receiver.reopen();
  await waitFor('recovery', () => receiver.received.length >= receivedBefore + 4, 90_000);
  stats = await app.json('/__stats');
  assert.equal(stats.consecutiveFailures, 0);
  assert.ok(stats.sent >= 4 && stats.dropped > 0, JSON.stringify(stats));
  assert.match(app.stderr, /push: the collector takes profiles again \(\d+ failed attempts; \d+ profiles dropped so far\)/);
  await app.kill();
  for (const r of receiver.received) assert.ok(decodeOtlp(r.body, 'request').resourceProfiles[0].scopes[0].profiles.length >= 2);
});

test('push configuration: bad values are reported without taking the app down, secrets not echoed', async () => {
  const app = await startApp({
    HEAP_LABELS_OTLP_ENDPOINT: 'ftp://collector',
    HEAP_LABELS_OTLP_HEADERS: 'authorization=Bearer%20s3cret,bad header=x',
  });
  assert.equal((await app.get('/a')).status, 200, 'the app runs unprofiled');
  await waitFor('the report', () => /not profiling/.test(app.stderr));
  assert.match(app.stderr, /HEAP_LABELS_OTLP_ENDPOINT="ftp:\/\/collector": must be an http:\/\/ or https:\/\/ URL/);
  assert.match(app.stderr, /HEAP_LABELS_OTLP_HEADERS \(value not shown\): must be at most 32 headers/);
  assert.doesNotMatch(app.stderr, /s3cret/);
});

// 27.6: the end of a process. A child started with the ESM preload and the fixture push-exit.mjs;
// resolves to { code, signal, stdout, stderr } once it has ended.
function runExit(mode, env, { onReady } = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...childFlags, '--import', 'heap-labels/register', path.join(root, 'tests', 'fixtures', 'push-exit.mjs'), mode], {
      env: { ...process.env, HEAP_LABELS_SIGNAL: 'off', HEAP_LABELS_PUSH_INTERVAL: '3600', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: root,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => {
      stdout += d;
      if (onReady && stdout.includes('ready')) {
        onReady(child);
        onReady = undefined;
      }
    });
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

test('27.6: `await push()` as the last thing settles; a normal exit and SIGTERM push the open window', async () => {
  const receiver = await startReceiver();
  after(() => receiver.close());
  const env = { HEAP_LABELS_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.port}` };

  const pushed = await runExit('await-push', env);
  assert.equal(pushed.code, 0, pushed.stderr);
  const out = JSON.parse(pushed.stdout.trim().split('\n').pop());
  assert.equal(out.sent, true, pushed.stderr);
  assert.equal(out.stats.sent, 1);
  // The window read at the exit went out too.
  assert.equal(receiver.received.length, 2, pushed.stderr);

  const before = receiver.received.length;
  const normal = await runExit('normal-exit', env);
  assert.equal(normal.code, 0, normal.stderr);
  assert.equal(receiver.received.length, before + 1, `a normal exit pushes the open window: ${normal.stderr}`);

  const termed = await runExit('sigterm', env, { onReady: (child) => child.kill('SIGTERM') });
  assert.equal(termed.signal, 'SIGTERM', `still ends as SIGTERM ends it: ${JSON.stringify(termed)}`);
  assert.equal(receiver.received.length, before + 2, `SIGTERM pushes the open window: ${termed.stderr}`);
});

test('27.6: a collector that is down at exit: the flush is bounded and what was not sent is reported', async () => {
  const receiver = await startReceiver();
  receiver.mode = 'hang';
  after(() => receiver.close());
  const started = Date.now();
  const r = await runExit('normal-exit', { HEAP_LABELS_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.port}`, HEAP_LABELS_PUSH_TIMEOUT: '2' });
  assert.equal(r.code, 0, r.stderr);
  assert.ok(Date.now() - started < 20_000, `the exit waited ${Date.now() - started} ms`);
  assert.match(r.stderr, /push: 1 profile\(s\) were not sent before the process exited \(counted dropped\)/);
});

test('27.6: every profile ends as sent or dropped with a reason; a redirect is refused with one line', async () => {
  const receiver = await startReceiver();
  after(() => receiver.close());
  const app = await startApp({
    HEAP_LABELS_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.port}`,
    HEAP_LABELS_PUSH_INTERVAL: '3600',
    HEAP_LABELS_PUSH_QUEUE: '2',
    HEAP_LABELS_PUSH_TIMEOUT: '1',
  });
  // A hanging collector with a full queue: the profile in flight is never also counted dropped.
  receiver.mode = 'hang';
  for (let i = 0; i < 6; i++) await app.get('/__push');
  receiver.mode = 'ok';
  for (const res of receiver.hanging.splice(0)) res.destroy();
  await app.get('/__push');
  await waitFor('the queue empties', async () => (await app.json('/__stats')).queued === 0);
  const stats = await app.json('/__stats');
  const reasons = Object.values(stats.dropReasons).reduce((a, b) => a + b, 0);
  assert.equal(stats.dropped, reasons, JSON.stringify(stats));
  assert.equal(stats.collected, stats.sent + stats.dropped + stats.queued, JSON.stringify(stats));
  assert.ok(stats.dropReasons.queueFull > 0, JSON.stringify(stats));

  // Redirects: refused (the headers would go elsewhere), one stderr line however many.
  const redirecting = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(307, { location: `http://user:pw@127.0.0.1:${receiver.port}/v1development/profiles?x=1` }).end());
  });
  await new Promise((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
  after(() => new Promise((resolve) => redirecting.close(resolve)));
  const app2 = await startApp({ HEAP_LABELS_OTLP_ENDPOINT: `http://127.0.0.1:${redirecting.address().port}`, HEAP_LABELS_PUSH_INTERVAL: '3600' });
  for (let i = 0; i < 3; i++) assert.equal((await app2.json('/__push')).sent, false);
  const s2 = await app2.json('/__stats');
  assert.equal(s2.dropReasons.rejected, 3, JSON.stringify(s2));
  assert.equal(s2.collected, s2.sent + s2.dropped + s2.queued, JSON.stringify(s2));
  const lines = app2.stderr.split('\n').filter((l) => l.includes('refuses profiles'));
  assert.equal(lines.length, 1, app2.stderr);
  assert.match(lines[0], /HTTP 307.*redirect is not followed/);
  assert.ok(!app2.stderr.includes('user:pw'), app2.stderr);
});
