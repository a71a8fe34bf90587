'use strict';
// Retainers per label for operators (issue 30 item 4): the agent's option `retainers`
// (HEAP_LABELS_RETAINERS), its route GET /debug/heap-labels/retainers and the retainers file of a
// signal dump. An app run with the preload (tests/fixtures/retainers-agent-app.js) whose /leak
// keeps its records in a module-level Map.
//
// On every runtime: off by default (404, no file with a dump), the token, and on runtimes without
// the sample-labels API version 3 the refusal (501, one stderr line with the dump). On a labeled
// runtime with it (this one: scripts/test.d/50-patched-runtime.sh runs the suite there): the
// answer names the Map, one read at a time (429 right after one, 409 while another snapshot is
// held), 507 without room, and the dump's retainers file that `heap-labels report` shows.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { root, tempDir, acfExecArgv, childEnv, spawnApp, cli } = require('./helpers');
const hl = require('../lib');

const retainers = hl.capabilities().retainers;
const registerCjs = path.join(root, 'lib', 'entries', 'register.js');
const appFile = path.join(__dirname, 'fixtures', 'retainers-agent-app.js');
const tmp = tempDir('retainers-agent');
const TOKEN = 'retainers-token-0123456789';
const skipUnlabeled = !retainers && 'this runtime has no sample-labels API version 3';

// The app with the preload; resolves once it listens. Dumps go to the test's directory.
function launch(env, nodeArgs = []) {
  return spawnApp([...acfExecArgv, ...nodeArgs, '-r', registerCjs, appFile], {
    env: childEnv({ HEAP_LABELS_SAMPLE_INTERVAL: '4096', HEAP_LABELS_DIR: path.join(tmp, 'dumps'), ...env }),
  });
}

// The app with the agent's server on a free port; resolves once that listens (app.url: the route).
async function startApp(env, nodeArgs = []) {
  const app = await launch({ HEAP_LABELS_HTTP: '127.0.0.1:0', ...env }, nodeArgs);
  const [, origin] = await app.waitFor(/serving heap profiles at (http:\/\/127\.0\.0\.1:\d+)\/debug\/pprof\/heap/, 'the address');
  app.url = `${origin}/debug/heap-labels/retainers`;
  return app;
}

async function request(app, route, n) {
  for (let i = 0; i < n; i++) {
    const res = await fetch(`http://127.0.0.1:${app.port}${route}`);
    assert.equal(res.status, 200, route);
    await res.text();
  }
}

const bearer = (token = TOKEN) => ({ headers: { authorization: `Bearer ${token}` } });

async function get(url, init) {
  const res = await fetch(url, init);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

// Bytes of a group's tree under the first step (from the objects up) that `matches`.
function bytesUnder(paths, matches) {
  let bytes = 0;
  const stack = [...paths];
  while (stack.length > 0) {
    const node = stack.pop();
    if (matches(node)) bytes += node.bytes;
    else stack.push(...node.children);
  }
  return bytes;
}
const leakedMap = (p) => p.name === 'Map' && p.children.some((c) => c.edge === 'leaked');
// /leak's share under the Map: the code and feedback vectors the JIT makes while /leak's first
// requests run are /leak's samples too (7-9 % of them here, 500 requests); retainers.test.js holds
// the >= 90 % rule on its larger leak. Here it shows the route and the dump give that answer.
const UNDER_MAP = 0.85;

test('off by default: the route answers 404 saying how to turn it on, and a signal dump writes no retainers', async () => {
  const dir = path.join(tmp, 'off');
  const app = await startApp({ HEAP_LABELS_DIR: dir });
  try {
    assert.doesNotMatch(app.stderr, /retainers per label at/);
    const off = await get(app.url);
    assert.equal(off.status, 404);
    assert.match(off.text, /\/debug\/heap-labels\/retainers is off \(HEAP_LABELS_RETAINERS=on turns it on/);
    app.child.kill('SIGUSR2');
    await app.waitFor(/wrote \S+\.pb\.gz and \S+\.txt/, 'the dump');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(fs.readdirSync(dir).filter((f) => f.endsWith('.retainers.json')), []);
    assert.doesNotMatch(app.stderr, /no retainers|\.retainers\.json/);
  } finally {
    await app.kill();
  }
});

test('with HEAP_LABELS_RETAINERS=on the route takes the server\'s token; on runtimes without API version 3 it answers 501', async () => {
  const app = await startApp({ HEAP_LABELS_RETAINERS: 'on', HEAP_LABELS_TOKEN: TOKEN });
  try {
    assert.match(app.stderr, /; retainers per label at http:\/\/127\.0\.0\.1:\d+\/debug\/heap-labels\/retainers\n/);
    const none = await get(app.url);
    assert.equal(none.status, 401);
    assert.equal(none.headers.get('www-authenticate'), 'Bearer');
    assert.equal((await get(app.url, bearer(`${TOKEN}x`))).status, 401);
    assert.equal((await get(app.url, { method: 'POST', ...bearer() })).status, 405);
    const head = await get(app.url, { method: 'HEAD', ...bearer() });
    assert.deepEqual([head.status, head.headers.get('allow')], [405, 'GET'], 'no snapshot for a HEAD');
    assert.equal((await get(`${app.url}?key=`, bearer())).status, 400);
    assert.equal((await get(`${app.url}?debug=maybe`, bearer())).status, 400);
    const right = await get(`${app.url}?key=route`, bearer());
    if (retainers) {
      assert.equal(right.status, 200, right.text);
      assert.equal(JSON.parse(right.text).key, 'route');
    } else {
      assert.equal(right.status, 501);
      assert.match(right.text, /needs the labeled runtime \(sample-labels API version 3/);
    }
  } finally {
    await app.kill();
  }
});

test('the route answers what retains each route\'s objects: /leak\'s under the module\'s Map; one read at a time', { skip: skipUnlabeled }, async () => {
  const app = await startApp({ HEAP_LABELS_RETAINERS: 'on' });
  try {
    await request(app, '/leak', 500);
    await request(app, '/churn', 200);
    // Another heap snapshot held (a v8.getHeapSnapshot() stream not yet read): 409, nothing taken.
    await request(app, '/hold', 1);
    const busy = await get(`${app.url}?key=route`);
    assert.equal(busy.status, 409, busy.text);
    assert.match(busy.text, /another heap snapshot is in progress/);
    await request(app, '/release', 1);

    const ok = await get(`${app.url}?key=route`);
    assert.equal(ok.status, 200, ok.text);
    assert.match(ok.headers.get('content-type'), /^application\/json/);
    assert.equal(ok.headers.get('x-heap-labels-pid'), String(app.child.pid));
    const result = JSON.parse(ok.text);
    assert.equal(result.key, 'route');
    const leak = result.groups.find((g) => g.labels.route === '/leak');
    assert.ok(leak && leak.samples >= 50, `enough /leak samples: ${JSON.stringify(leak && leak.samples)}`);
    const share = bytesUnder(leak.paths, leakedMap) / leak.bytes;
    assert.ok(share >= UNDER_MAP, `under the Map: ${(share * 100).toFixed(1)} %`);
    const churn = result.groups.find((g) => g.labels.route === '/churn');
    if (churn) assert.ok(bytesUnder(churn.paths, leakedMap) <= churn.bytes * 0.1, 'nothing of /churn under the Map');

    // Right after a read: 429 with Retry-After (at least 10 s: a snapshot runs full GCs).
    const spaced = await get(`${app.url}?debug=1`);
    assert.equal(spaced.status, 429, spaced.text);
    assert.ok(Number(spaced.headers.get('retry-after')) >= 9, spaced.headers.get('retry-after'));
    assert.match(spaced.text, /a heap snapshot for retainers was taken moments ago/);
    // The app kept serving.
    await request(app, '/churn', 1);
  } finally {
    await app.kill();
  }
});

test('with less than the used heap free below the heap limit, the route answers 507 and takes nothing', { skip: skipUnlabeled }, async () => {
  // (No profile near the heap limit: the filled heap comes close to it.)
  const app = await startApp({ HEAP_LABELS_RETAINERS: 'on', HEAP_LABELS_NEAR_HEAP_LIMIT: '0' }, ['--max-old-space-size=64', '--expose-gc']);
  try {
    await request(app, '/fill', 1);
    const full = await get(app.url);
    assert.equal(full.status, 507, full.text);
    assert.match(full.text, /a heap snapshot needs about the used heap again \(\d+\.\d MiB\), and only \d+\.\d MiB are left below the heap limit/);
    // A refusal takes no snapshot, so it does not hold the next read back.
    await request(app, '/empty', 1);
    const after = await get(`${app.url}?debug=1`);
    assert.equal(after.status, 200, after.text);
    assert.match(after.text, /^Retainers per label set: heap snapshot of [\d,]+ nodes/);
  } finally {
    await app.kill();
  }
});

test('a signal dump with HEAP_LABELS_RETAINERS=on writes the retainers beside it, kept and removed with it; report --html shows them', async () => {
  const dir = path.join(tmp, 'signal');
  const started = await launch({ HEAP_LABELS_RETAINERS: 'on', HEAP_LABELS_DIR: dir, HEAP_LABELS_KEEP: '1' });
  try {
    await request(started, '/leak', 500);
    started.child.kill('SIGUSR2');
    const [, pprofPath] = await started.waitFor(/wrote (\S+\.pb\.gz) and \S+\.txt/, 'the dump');
    const file = pprofPath.replace(/\.pb\.gz$/, '.retainers.json');
    if (!retainers) {
      await started.waitFor(/SIGUSR2: no retainers: .*needs the labeled runtime/, 'the refusal');
      assert.ok(fs.existsSync(pprofPath), 'the dump stays');
      assert.ok(!fs.existsSync(file));
      return;
    }
    const [, written] = await started.waitFor(/wrote (\S+\.retainers\.json) \(\d+ label groups; app paused \d+ ms for the heap snapshot\)/, 'the retainers', 120_000);
    assert.equal(written, file);
    const result = JSON.parse(fs.readFileSync(file, 'utf8'));
    assert.equal(result.key, undefined, 'by full label set');
    const leak = result.groups.find((g) => g.labels.route === '/leak');
    const share = bytesUnder(leak.paths, leakedMap) / leak.bytes;
    assert.ok(share >= UNDER_MAP, `under the Map: ${(share * 100).toFixed(1)} %`);

    // heap-labels report finds the dump's retainers and shows them, in the text and the page.
    const html = path.join(tmp, 'signal.html');
    const r = cli('report', pprofPath, '--key', 'route', '--html', html);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /with the dump's retainers \S+\.retainers\.json/);
    assert.match(r.stdout, /Retainers per label set: heap snapshot/);
    const page = fs.readFileSync(html, 'utf8');
    assert.match(page, /<section id="retainers-section">/);
    assert.match(page, /data-label="route=&quot;\/leak&quot;"/);

    // The next dump replaces it (HEAP_LABELS_KEEP=1): its retainers go with it, no temporary file stays.
    const before = started.stderr.length;
    started.child.kill('SIGUSR2');
    await started.waitFor(new RegExp(`[\\s\\S]{${before}}[\\s\\S]*wrote \\S+\\.retainers\\.json`), 'the second retainers', 120_000);
    const files = fs.readdirSync(dir).sort();
    assert.equal(files.length, 3, files.join('\n'));
    assert.ok(!fs.existsSync(file), 'the first dump\'s retainers were removed with it');
    assert.deepEqual(files.map((f) => f.replace(/^heap-labels-.*?(\.pb\.gz|\.txt|\.retainers\.json)$/, '$1')).sort(), ['.pb.gz', '.retainers.json', '.txt']);
  } finally {
    await started.kill();
  }
});
