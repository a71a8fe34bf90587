'use strict';
// Allocations always on in the agent and Go's /debug/pprof/allocs: `go tool pprof
// http://HOST/debug/pprof/allocs` reads the same data as /heap with alloc_space the default sample
// index, the allocated figures count from the agent's start (no read restarts them; pushes keep
// their own windows), ?seconds=N is a delta, `go tool pprof -base` subtracts two reads, and
// HEAP_LABELS_ALLOCATIONS=off turns the figures off. The app is
// tests/fixtures/push-app.js under the preload; figures per route need the patched runtime (on
// stock runtimes the profile has no allocated figures and /allocs is the heap profile).

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { root, decodePprof, pprofTotals, tempDir, spawnApp, sleep, goPprof, asyncContextFrameFlags } = require('./helpers');
const lib = require('../lib');

const caps = lib.capabilities();
const registerCjs = path.join(root, 'lib', 'register.js');
const childFlags = asyncContextFrameFlags();
const tmp = tempDir('allocs');

async function startApp(env) {
  const app = await spawnApp([...childFlags, '-r', registerCjs, path.join(root, 'tests', 'fixtures', 'push-app.js')], {
    env: { ...process.env, HEAP_LABELS_SIGNAL: 'off', HEAP_LABELS_HTTP: '127.0.0.1:0', HEAP_LABELS_SAMPLE_INTERVAL: '16384', HEAP_LABELS_DIR: tmp, ...env },
    ready: /serving heap profiles at (http:\/\/127\.0\.0\.1:\d+)\/debug\/pprof\/heap\n/,
  });
  app.base = app.ready[1];
  app.load = async (route, n) => {
    for (let i = 0; i < n; i++) {
      await new Promise((resolve, reject) => http.get({ host: '127.0.0.1', port: app.port, path: route }, (res) => res.resume().on('end', resolve)).on('error', reject));
    }
  };
  app.pprof = async (p) => {
    const res = await fetch(`${app.base}${p}`);
    assert.equal(res.status, 200);
    return decodePprof(Buffer.from(await res.arrayBuffer()));
  };
  return app;
}

// alloc_space per route of a decoded pprof.
const allocatedBy = (p) => pprofTotals(p, 'route').alloc_space ?? {};

test('go tool pprof reads /debug/pprof/allocs: the heap data with alloc_space the default', async () => {
  const app = await startApp({});
  await app.load('/churn', 20);
  await app.load('/a', 5);
  const url = `${app.base}/debug/pprof/allocs`;
  const raw = await goPprof(tmp, '-raw', url);
  if (caps.allocations) {
    assert.match(raw.stdout, /alloc_objects\/count\s+alloc_space\/bytes\[dflt\]\s+inuse_objects\/count\s+inuse_space\/bytes\n/);
  } else {
    // No allocated figures on this runtime: Go's rule, the same data as /heap.
    assert.match(raw.stdout, /inuse_objects\/count\s+inuse_space\/bytes\[dflt\]/);
  }
  const heap = await goPprof(tmp, '-raw', `${app.base}/debug/pprof/heap`);
  assert.match(heap.stdout, /inuse_space\/bytes\[dflt\]/, 'the heap profile keeps inuse_space the default');
  const res = await fetch(url);
  assert.equal(res.headers.get('content-disposition'), 'attachment; filename="allocs"');
  if (caps.allocations && caps.sampleLabels) {
    await app.load('/churn', 20);
    const top = await goPprof(tmp, '-top', '-tagfocus=route=/churn', url);
    assert.match(top.stdout, /Type: alloc_space/);
    assert.match(top.stdout, /churn/);
  }
});

test('HEAP_LABELS_ALLOCATIONS=off: the allocs profile has the in-use types only', async () => {
  const off = await startApp({ HEAP_LABELS_ALLOCATIONS: 'off' });
  await off.load('/churn', 10);
  const p = await off.pprof('/debug/pprof/allocs');
  assert.deepEqual(p.sampleTypes.map((t) => t.type), ['inuse_objects', 'inuse_space']);
});

const labeledAllocations = caps.allocations && caps.sampleLabels;
const noLabeledAllocations = !labeledAllocations && 'no labeled allocation figures on this runtime (the patched runtime has them)';

async function save(app, p, name) {
  const res = await fetch(`${app.base}${p}`);
  const body = Buffer.from(await res.arrayBuffer());
  assert.equal(res.status, 200, body.toString());
  const file = path.join(tmp, name);
  fs.writeFileSync(file, body);
  return { file, profile: decodePprof(body) };
}

// The total of `go tool pprof -top` ("... of <total> total"), in bytes.
function topTotal(stdout) {
  const m = /of ([0-9.]+)([kMG]?B) total/.exec(stdout);
  if (m === null) return /Total: 0|of 0 total/.test(stdout) ? 0 : assert.fail(`no total in:\n${stdout}`);
  return Number(m[1]) * { B: 1, kB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 }[m[2]];
}

test('27.7 /debug/pprof/allocs counts since the agent started: no read restarts it', { skip: noLabeledAllocations }, async () => {
  const app = await startApp({});
  await app.load('/churn', 40);
  const first = await save(app, '/debug/pprof/allocs', 'since-1.pb.gz');
  const top = await goPprof(tmp, '-top', '-tagfocus=route=/churn', first.file);
  assert.match(top.stdout, /Type: alloc_space/);
  const churned = allocatedBy(first.profile)['/churn'];
  assert.ok(churned > 0 && topTotal(top.stdout) > 0, top.stdout);
  // Reads in quick succession share one copy (lib/profile-reads.js): wait for a new one.
  await sleep(1500);
  await app.load('/churn', 5);
  const second = await save(app, '/debug/pprof/allocs', 'since-2.pb.gz');
  const heap = allocatedBy(await app.pprof('/debug/pprof/heap'));
  const again = allocatedBy(second.profile);
  assert.ok(again['/churn'] >= churned, `the second read keeps the first one's allocations: ${again['/churn']} vs ${churned}`);
  assert.ok(heap['/churn'] >= churned, 'a heap read has the same figures');
  // `go tool pprof -base`: the difference lines up by stack and labels (what five requests
  // allocated, a fraction of the forty before).
  const diff = await goPprof(tmp, '-top', '-tagfocus=route=/churn', '-base', first.file, second.file);
  const delta = topTotal(diff.stdout);
  assert.ok(delta > 0 && delta < churned / 2, `-base: ${delta} of ${churned}\n${diff.stdout}`);
  assert.doesNotMatch(diff.stdout, /^\s*-/m, 'no site of /churn went down');
});

test('27.7 ?seconds=N is a delta over the next N seconds; concurrent deltas each get their own', { skip: noLabeledAllocations }, async () => {
  const app = await startApp({});
  await app.load('/churn', 40); // before every delta: in none of them
  const long = fetch(`${app.base}/debug/pprof/allocs?seconds=6`);
  await sleep(800);
  await app.load('/a', 20); // while the app serves (the wait holds nothing)
  const short = fetch(`${app.base}/debug/pprof/allocs?seconds=3`);
  await sleep(800);
  await app.load('/b', 40);
  const [longRes, shortRes] = await Promise.all([long, short]);
  assert.equal(longRes.status, 200);
  assert.equal(shortRes.status, 200);
  const longBody = Buffer.from(await longRes.arrayBuffer());
  const shortBody = Buffer.from(await shortRes.arrayBuffer());
  const longAllocs = allocatedBy(decodePprof(longBody));
  const shortAllocs = allocatedBy(decodePprof(shortBody));
  const total = allocatedBy(await app.pprof('/debug/pprof/allocs'));
  assert.ok(longAllocs['/a'] > 0 && longAllocs['/b'] > 0, JSON.stringify(longAllocs));
  assert.ok((longAllocs['/churn'] ?? 0) < total['/churn'] / 20, `the delta leaves out what came before it: ${JSON.stringify(longAllocs)} vs ${JSON.stringify(total)}`);
  assert.ok(shortAllocs['/b'] > 0, JSON.stringify(shortAllocs));
  assert.ok((shortAllocs['/a'] ?? 0) < longAllocs['/a'] / 10, `the later delta starts later: ${JSON.stringify(shortAllocs)}`);
  const file = path.join(tmp, 'delta.pb.gz');
  fs.writeFileSync(file, longBody);
  const top = await goPprof(tmp, '-top', '-tagfocus=route=/a', file);
  assert.match(top.stdout, /Type: alloc_space/);
  assert.ok(topTotal(top.stdout) > 0, top.stdout);
});

test('27.7 ?seconds=N works with go tool pprof, bad values get 400 with the rule', async () => {
  const app = await startApp({});
  await app.load('/a', 5);
  for (const profile of ['allocs', 'heap']) {
    const got = await goPprof(tmp, '-raw', '-seconds=1', `${app.base}/debug/pprof/${profile}`);
    assert.match(got.stdout, /inuse_space\/bytes/);
  }
  for (const bad of ['0', '-1', 'abc', '1.5', '3601', '', '1e3', 'x'.repeat(500)]) {
    const res = await fetch(`${app.base}/debug/pprof/allocs?seconds=${bad}`);
    const text = await res.text();
    assert.equal(res.status, 400, bad);
    assert.match(text, /^heap-labels: query parameter seconds must be a whole number of seconds in 1\.\.3600, got "/, bad);
    assert.ok(text.length < 200, 'the value is truncated');
  }
  const both = await fetch(`${app.base}/debug/pprof/allocs?seconds=1&debug=1`);
  assert.equal(both.status, 400);
  assert.match(await both.text(), /seconds and debug exclude each other/);
  // A client that leaves during the wait costs nothing more; the app keeps serving.
  const controller = new AbortController();
  const gone = fetch(`${app.base}/debug/pprof/allocs?seconds=30`, { signal: controller.signal }).catch(() => 'aborted');
  await sleep(300);
  controller.abort();
  assert.equal(await gone, 'aborted');
  await app.load('/a', 2);
  assert.equal((await fetch(`${app.base}/debug/pprof/allocs`)).status, 200);
});

test('27.7 pushes keep their windows; the endpoint reads since the start: neither resets the other', { skip: noLabeledAllocations }, async () => {
  const collector = http.createServer((req, res) => req.resume().on('end', () => res.end()));
  await new Promise((resolve) => collector.listen(0, '127.0.0.1', resolve));
  after(() => collector.close());
  const app = await startApp({ HEAP_LABELS_OTLP_ENDPOINT: `http://127.0.0.1:${collector.address().port}`, HEAP_LABELS_PUSH_INTERVAL: '3600' });
  const push = async () => {
    const res = await fetch(`http://127.0.0.1:${app.port}/__push`);
    const { sent, pprof } = await res.json();
    assert.equal(sent, true);
    return allocatedBy(decodePprof(Buffer.from(pprof, 'base64')));
  };
  await app.load('/churn', 40);
  const window1 = await push();
  const since1 = allocatedBy(await app.pprof('/debug/pprof/allocs'));
  assert.ok(since1['/churn'] >= window1['/churn'] * 0.99, 'the push did not restart the endpoint');
  await sleep(1500);
  await app.load('/churn', 4);
  const since2 = allocatedBy(await app.pprof('/debug/pprof/allocs'));
  const window2 = await push();
  assert.ok(since2['/churn'] > since1['/churn'], `since the start: ${since2['/churn']} vs ${since1['/churn']}`);
  assert.ok(window2['/churn'] > 0 && window2['/churn'] < window1['/churn'] / 3, `the push window is what came after the last push: ${window2['/churn']} vs ${window1['/churn']}`);
});
