'use strict';
// Allocations always on in the agent and Go's /debug/pprof/allocs: `go tool pprof
// http://HOST/debug/pprof/allocs` reads the same data as /heap with alloc_space the default sample
// index, each allocs read ends the allocation window (a delta since the previous one) while heap
// reads and dumps do not, and HEAP_LABELS_ALLOCATIONS=off turns the figures off. The app is
// tests/fixtures/push-app.js under the preload; figures per route need the patched runtime (on
// stock runtimes the profile has no allocated figures and /allocs is the heap profile).

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { root, decodePprof, goEnv: makeGoEnv } = require('./helpers');
const lib = require('../lib');

const caps = lib.capabilities();
const registerCjs = path.join(root, 'lib', 'register.js');
const childFlags = [];
if (Number(process.versions.node.split('.')[0]) === 22 && !process.execArgv.includes('--no-async-context-frame')) {
  childFlags.push('--experimental-async-context-frame');
}
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-allocs-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
const goEnv = makeGoEnv(tmp);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function goPprof(...args) {
  return new Promise((resolve, reject) => {
    const child = spawn('go', ['tool', 'pprof', ...args], { env: goEnv });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('error', (err) => reject(err.code === 'ENOENT' ? new Error('`go` is not on PATH (apt-get install golang-go; scripts/test.sh does)') : err));
    child.on('exit', (code) => (code === 0 ? resolve({ stdout, stderr }) : reject(new Error(`go tool pprof ${args.join(' ')}: ${code}\n${stderr}`))));
  });
}

async function startApp(env) {
  const child = spawn(process.execPath, [...childFlags, '-r', registerCjs, path.join(root, 'tests', 'fixtures', 'push-app.js')], {
    env: { ...process.env, HEAP_LABELS_SIGNAL: 'off', HEAP_LABELS_HTTP: '127.0.0.1:0', HEAP_LABELS_SAMPLE_INTERVAL: '16384', HEAP_LABELS_DIR: tmp, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const app = { child, stdout: '', stderr: '' };
  child.stdout.setEncoding('utf8').on('data', (d) => (app.stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d) => (app.stderr += d));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  app.kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  after(() => app.kill());
  const deadline = Date.now() + 30_000;
  let m;
  while (!(m = /serving heap profiles at (http:\/\/127\.0\.0\.1:\d+)\/debug\/pprof\/heap\n/.exec(app.stderr)) || !app.stdout.includes('\n')) {
    if (child.exitCode !== null || Date.now() > deadline) assert.fail(`the app did not start:\n${app.stderr}`);
    await sleep(20);
  }
  app.base = m[1];
  app.port = JSON.parse(app.stdout.split('\n')[0]).port;
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
function allocatedBy(p, key = 'route') {
  const i = p.sampleTypes.findIndex((t) => t.type === 'alloc_space');
  const out = {};
  for (const s of p.samples) {
    const label = s.labels.find((l) => l.key === key);
    const k = label ? label.str : '';
    out[k] = (out[k] ?? 0) + s.values[i];
  }
  return out;
}

test('go tool pprof reads /debug/pprof/allocs: the heap data with alloc_space the default', async () => {
  const app = await startApp({});
  await app.load('/churn', 20);
  await app.load('/a', 5);
  const url = `${app.base}/debug/pprof/allocs`;
  const raw = await goPprof('-raw', url);
  if (caps.allocations) {
    assert.match(raw.stdout, /alloc_objects\/count\s+alloc_space\/bytes\[dflt\]\s+inuse_objects\/count\s+inuse_space\/bytes\n/);
  } else {
    // No allocated figures on this runtime: Go's rule, the same data as /heap.
    assert.match(raw.stdout, /inuse_objects\/count\s+inuse_space\/bytes\[dflt\]/);
  }
  const heap = await goPprof('-raw', `${app.base}/debug/pprof/heap`);
  assert.match(heap.stdout, /inuse_space\/bytes\[dflt\]/, 'the heap profile keeps inuse_space the default');
  const res = await fetch(url);
  assert.equal(res.headers.get('content-disposition'), 'attachment; filename="allocs"');
  if (caps.allocations && caps.sampleLabels) {
    await app.load('/churn', 20);
    const top = await goPprof('-top', '-tagfocus=route=/churn', url);
    assert.match(top.stdout, /Type: alloc_space/);
    assert.match(top.stdout, /churn/);
  }
});

test('each allocs read ends the window; heap reads do not; a window nobody ends lasts HEAP_LABELS_ALLOCATION_WINDOW; HEAP_LABELS_ALLOCATIONS=off', { skip: !(caps.allocations && caps.sampleLabels) && 'no labeled allocation figures on this runtime' }, async () => {
  const app = await startApp({});
  await app.pprof('/debug/pprof/allocs'); // ends the start-up window
  await app.load('/churn', 40);
  const heap1 = allocatedBy(await app.pprof('/debug/pprof/heap'));
  const heap2 = allocatedBy(await app.pprof('/debug/pprof/heap'));
  assert.ok(heap1['/churn'] > 0);
  assert.ok(heap2['/churn'] >= heap1['/churn'], 'a heap read leaves the window open');
  const allocs1 = allocatedBy(await app.pprof('/debug/pprof/allocs'));
  assert.ok(allocs1['/churn'] >= heap2['/churn'], `${allocs1['/churn']} vs ${heap2['/churn']}`);
  // Reads in quick succession share one copy (lib/profile-reads.js), and so one window: wait.
  await sleep(1500);
  const allocs2 = allocatedBy(await app.pprof('/debug/pprof/allocs'));
  assert.ok((allocs2['/churn'] ?? 0) < allocs1['/churn'] / 10, `the next window starts after the allocs read: ${allocs2['/churn']} vs ${allocs1['/churn']}`);
  await app.kill();

  // Nobody ends a window for HEAP_LABELS_ALLOCATION_WINDOW seconds: the agent does (its totals
  // hold the label sets allocated in it).
  const windowed = await startApp({ HEAP_LABELS_ALLOCATION_WINDOW: '1' });
  await windowed.load('/churn', 40);
  const before = allocatedBy(await windowed.pprof('/debug/pprof/heap'))['/churn'];
  assert.ok(before > 0);
  await sleep(2500);
  const later = allocatedBy(await windowed.pprof('/debug/pprof/heap'))['/churn'] ?? 0;
  assert.ok(later < before / 10, `the agent ended the window: ${later} vs ${before}`);
  await windowed.kill();

  const off = await startApp({ HEAP_LABELS_ALLOCATIONS: 'off' });
  await off.load('/churn', 10);
  const p = await off.pprof('/debug/pprof/allocs');
  assert.deepEqual(p.sampleTypes.map((t) => t.type), ['inuse_objects', 'inuse_space']);
});
