'use strict';
// Running in production: the preload (heap-labels/register) and its HEAP_LABELS_* configuration,
// dumps on a signal, the HTTP endpoint read by `go tool pprof`, the token, the handler mounted in
// node:http / express / fastify / koa, and the profile written near the heap limit before an
// out-of-memory crash. Apps run as child processes of this runtime (tests/fixtures/ops-*.js).
//
// On the patched runtime the profiles carry route labels and the tests check them; on stock
// runtimes the same files and endpoints exist, unlabeled.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { root, decodePprof, pprofTotals, sleep, goPprof, tempDir, acfExecArgv, childEnv, lastJson, spawnApp } = require('./helpers');
const hl = require('../lib');

const labeled = hl.capabilities().sampleLabels;
const registerCjs = path.join(root, 'lib', 'entries', 'register.js');
const fixtures = path.join(__dirname, 'fixtures');
const tmp = tempDir('ops');

// Runs a fixture to completion: { status, stdout, stderr, json }.
function runApp(args, env, cwd = root) {
  const r = spawnSync(process.execPath, [...acfExecArgv, ...args], {
    cwd,
    env: childEnv(env),
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr, json: lastJson(r.stdout) };
}

// Starts tests/fixtures/ops-app.js with the preload; resolves once it listens.
function startApp(env, nodeArgs = []) {
  return spawnApp([...acfExecArgv, ...nodeArgs, '-r', registerCjs, path.join(fixtures, 'ops-app.js')], { env: childEnv(env) });
}

async function request(port, route, n) {
  for (let i = 0; i < n; i++) {
    const res = await fetch(`http://127.0.0.1:${port}${route}`);
    assert.equal(res.status, 200);
    await res.text();
  }
}

// inuse_space per value of `key` (and '' for samples without it) of a decoded pprof.
const bytesBy = (profile, key) => pprofTotals(profile, key).inuse_space ?? {};

function dumpFiles(dir) {
  return fs.readdirSync(dir).sort();
}

// --- preload and configuration -------------------------------------------------------------------

test('a bad HEAP_LABELS_* value is reported once, naming the variable and the range; the app runs unprofiled', () => {
  const env = { HEAP_LABELS_SAMPLE_INTERVAL: '64k', HEAP_LABELS_KEEP: '0', HEAP_LABELS_SIGNAL: 'SIGUSR1' };
  for (const preload of [['-r', registerCjs], ['--import', 'heap-labels/register']]) {
    const r = runApp([...preload, path.join(fixtures, 'ops-status.js')], env);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(r.json, { agent: false, labeled }, r.stdout);
    assert.equal(r.stderr.match(/heap-labels:/g)?.length, 1, `one report:\n${r.stderr}`);
    assert.match(r.stderr, /runs without heap profiling/);
    assert.match(r.stderr, /HEAP_LABELS_SAMPLE_INTERVAL="64k": must be an integer in 1\.\.4294967295/);
    assert.match(r.stderr, /HEAP_LABELS_KEEP="0": must be an integer in 1\.\.100000/);
    assert.match(r.stderr, /HEAP_LABELS_SIGNAL="SIGUSR1": must be one of SIGUSR2, SIGHUP/);
  }
});

test('HEAP_LABELS_HTTP off loopback without HEAP_LABELS_TOKEN is refused; malformed addresses too', () => {
  let r = runApp(['-r', registerCjs, path.join(fixtures, 'ops-status.js')], { HEAP_LABELS_HTTP: '0.0.0.0:0' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.json.agent, false);
  assert.match(r.stderr, /HEAP_LABELS_HTTP listens on 0\.0\.0\.0, which is not a loopback address: .*requires HEAP_LABELS_TOKEN/);
  r = runApp(['-r', registerCjs, path.join(fixtures, 'ops-status.js')], { HEAP_LABELS_HTTP: 'example.com:80', HEAP_LABELS_TOKEN: 'short' });
  assert.equal(r.json.agent, false);
  assert.match(r.stderr, /HEAP_LABELS_HTTP="example\.com:80": must be host:port with an IP address or localhost/);
  assert.match(r.stderr, /HEAP_LABELS_TOKEN \(value not shown\): must be 16\.\.1024 characters/);
});

test('27.8: no stderr line shows the token or URL credentials it was given; refused values are truncated', () => {
  const token = 'Zq9-secret-token-value!'; // invalid (the "!"), so it is echoed if anything is
  const user = 'alice-user';
  const password = 'pw-Hunter2-secret';
  const long = 'x'.repeat(120_000);
  const cases = [
    { HEAP_LABELS_TOKEN: token, HEAP_LABELS_OTLP_ENDPOINT: `http://${user}:${password}@127.0.0.1:4318` },
    { HEAP_LABELS_TOKEN: token.slice(0, -1), HEAP_LABELS_HTTP: '127.0.0.1:0', HEAP_LABELS_OTLP_ENDPOINT: `https://${user}:${password}@collector.invalid/` },
    { HEAP_LABELS_SERVICE_NAME: long, HEAP_LABELS_DIR: `\u0001${long}`, HEAP_LABELS_OTLP_ENDPOINT: `ftp://${user}:${password}@host/${long}` },
    { HEAP_LABELS_OTLP_HEADERS: `authorization=Bearer ${password}\u0001` },
  ];
  for (const env of cases) {
    const r = runApp(['-r', registerCjs, path.join(fixtures, 'ops-status.js')], env);
    assert.equal(r.status, 0, r.stderr);
    for (const secret of [token, token.slice(0, -1), password, `${user}:`]) {
      assert.ok(!r.stderr.includes(secret), `stderr shows ${JSON.stringify(secret)}: ${r.stderr.slice(0, 2000)}`);
    }
    for (const line of r.stderr.split('\n')) assert.ok(line.length < 2000, `a ${line.length}-character line`);
  }
  // startAgent() errors follow the same rules.
  const r = runApp(['-e', `
    const { startAgent } = require(${JSON.stringify(path.join(root, 'lib'))});
    startAgent({ token: ${JSON.stringify(token)}, otlpEndpoint: 'http://${user}:${password}@h/', serviceName: 'y'.repeat(100000) })
      .catch((e) => process.stderr.write(e.message + '\\n'));
  `], {});
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /option token must be 16/);
  for (const secret of [token, password, `${user}:`]) assert.ok(!r.stderr.includes(secret), r.stderr.slice(0, 2000));
  assert.ok(r.stderr.length < 2000, `${r.stderr.length} characters`);
});

test('the preload by package name (-r and --import) starts the agent with the environment\'s options', () => {
  // An app outside the repository that depends on heap-labels through node_modules.
  const app = fs.mkdtempSync(path.join(tmp, 'app-'));
  fs.mkdirSync(path.join(app, 'node_modules'));
  fs.symlinkSync(root, path.join(app, 'node_modules', 'heap-labels'), 'dir');
  fs.copyFileSync(path.join(fixtures, 'ops-status.mjs'), path.join(app, 'app.mjs'));
  fs.writeFileSync(
    path.join(app, 'app.js'),
    fs.readFileSync(path.join(fixtures, 'ops-status.js'), 'utf8').replace("require('../../lib')", "require('heap-labels')"),
  );
  const dir = path.join(app, 'dumps', 'nested');
  const env = {
    HEAP_LABELS_SAMPLE_INTERVAL: '65536',
    HEAP_LABELS_DIR: dir,
    HEAP_LABELS_SIGNAL: 'SIGHUP',
    HEAP_LABELS_KEEP: '3',
    HEAP_LABELS_NEAR_HEAP_LIMIT: '2',
    HEAP_LABELS_MAX_LABEL_SETS: '500',
  };
  for (const args of [['--import', 'heap-labels/register', 'app.mjs'], ['-r', 'heap-labels/register', 'app.js']]) {
    const r = runApp(args, env, app);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.json.agent, true, r.stderr);
    assert.deepEqual(r.json.options, {
      sampleInterval: 65536,
      stackDepth: 64,
      maxLabelSets: 500,
      dir,
      keep: 3,
      signal: 'SIGHUP',
      http: null,
      token: null,
      nearHeapLimit: 2,
      watchInterval: 0,
      watchPeriods: 4,
      watchMinGrowth: 4 * 1024 * 1024,
      watchMinGrowthPercent: 10,
      allocations: true,
      allocationWindow: 60,
      otlpEndpoint: null,
      otlpHeaders: {},
      pushInterval: 60,
      pushTimeout: 10,
      pushQueue: 8,
      serviceName: null,
      routes: true,
      retainers: false,
    });
    assert.ok(fs.statSync(dir).isDirectory(), 'HEAP_LABELS_DIR is created');
    // Besides the automatic route labels' start line (tests/zero-code.test.js checks it), the
    // preload says nothing unless profiles carry no labels.
    const said = r.stderr.split('\n').filter((line) => /heap-labels:/.test(line) && !/labeling requests by route template/.test(line));
    if (labeled) assert.deepEqual(said, [], r.stderr);
    else assert.match(r.stderr, /profiles carry no labels on this runtime/);
  }
});

test('startAgent takes the same options from code and names a bad one', async () => {
  await assert.rejects(hl.startAgent({ sampleInterval: 0 }), /option sampleInterval must be an integer in 1\.\.4294967295, got 0/);
  await assert.rejects(hl.startAgent({ http: '10.1.2.3:6060' }), /option http listens on 10\.1\.2\.3.*requires option token/);
  await assert.rejects(hl.startAgent({ colour: 'red' }), /unknown option "colour"/);
  const agent = await hl.startAgent({ dir: path.join(tmp, 'code'), signal: 'off', nearHeapLimit: 0 });
  try {
    assert.equal(hl.currentAgent(), agent);
    await assert.rejects(hl.startAgent(), /already running/);
  } finally {
    await agent.stop();
  }
  assert.equal(hl.currentAgent(), undefined);
  assert.equal(hl.stats().profiling, false);
});

// --- dumps on a signal ---------------------------------------------------------------------------

test('SIGUSR2 writes a labeled pprof and a summary atomically, keeping the newest HEAP_LABELS_KEEP', async () => {
  const dir = path.join(tmp, 'signal');
  const app = await startApp({ HEAP_LABELS_DIR: dir, HEAP_LABELS_KEEP: '2', HEAP_LABELS_SAMPLE_INTERVAL: '16384' });
  try {
    await request(app.port, '/leak', 20);
    await request(app.port, '/ok', 20);
    app.child.kill('SIGUSR2');
    const m = await app.waitFor(/wrote (\S+\.pb\.gz) and (\S+\.txt) \((\d+) samples; main thread held [\d.]+ ms\)/, 'the dump');
    const [, pprofPath, summaryPath] = m;
    assert.equal(path.dirname(pprofPath), dir);
    assert.match(path.basename(pprofPath), new RegExp(`^heap-labels-\\d{8}T\\d{6}\\.\\d{3}Z-${app.child.pid}-\\d+\\.pb\\.gz$`));
    const profile = decodePprof(fs.readFileSync(pprofPath));
    // The agent tracks allocations: Go's four heap types where the runtime reports them.
    const allocated = hl.capabilities().allocations ? ['alloc_objects', 'alloc_space'] : [];
    assert.deepEqual(profile.sampleTypes.map((t) => t.type), [...allocated, 'inuse_objects', 'inuse_space']);
    assert.equal(profile.period, 16384);
    const summary = fs.readFileSync(summaryPath, 'utf8');
    assert.match(summary, /^# heap-labels per-label summary\n# reason: signal SIGUSR2\n# pid: \d+\n/);
    const byRoute = bytesBy(profile, 'route');
    if (labeled) {
      assert.ok(byRoute['/leak'] > 5 * (byRoute['/ok'] ?? 0), JSON.stringify(byRoute));
      assert.match(summary.split('\n').find((l) => !l.startsWith('#')), /route="\/leak"$/);
    } else {
      assert.deepEqual(Object.keys(byRoute), ['']);
      assert.match(summary, /carry no labels on this runtime/);
    }
    // Three more: only the newest two dumps stay, no temporary file is left.
    for (let i = 0; i < 3; i++) {
      const before = app.stderr.length;
      app.child.kill('SIGUSR2');
      await app.waitFor(new RegExp(`[\\s\\S]{${before}}[\\s\\S]*wrote`), `dump ${i + 2}`);
    }
    const files = dumpFiles(dir);
    assert.equal(files.length, 4, files.join('\n'));
    assert.equal(files.filter((f) => f.endsWith('.pb.gz')).length, 2);
    assert.ok(!fs.existsSync(pprofPath), 'the oldest dump was removed');
    for (const f of files) {
      assert.ok(!f.startsWith('.'), `temporary file left: ${f}`);
      if (f.endsWith('.pb.gz')) assert.ok(fs.existsSync(path.join(dir, f.replace(/\.pb\.gz$/, '.txt'))));
    }
    // The app kept serving.
    await request(app.port, '/ok', 1);
  } finally {
    await app.kill();
  }
});

// --- the HTTP endpoint ---------------------------------------------------------------------------

test('GET /debug/pprof/heap: go tool pprof reads it; ?debug=1 is the per-label table; ?gc=1; bad requests', async () => {
  const app = await startApp({ HEAP_LABELS_HTTP: '127.0.0.1:0', HEAP_LABELS_SAMPLE_INTERVAL: '16384' });
  try {
    const [, url] = await app.waitFor(/serving heap profiles at (http:\/\/127\.0\.0\.1:\d+\/debug\/pprof\/heap)\n/, 'the address');
    assert.equal(app.stderr.match(/serving heap profiles/g).length, 1);
    await request(app.port, '/leak', 20);
    await request(app.port, '/ok', 5);

    const raw = await goPprof(tmp, '-raw', url);
    assert.match(raw.stdout, /inuse_objects\/count\s+inuse_space\/bytes\[dflt\]/);
    assert.match(raw.stdout, /PeriodType: space bytes\nPeriod: 16384/);
    const tags = await goPprof(tmp, '-tags', url);
    if (labeled) assert.match(tags.stdout, /route: Total[\s\S]*\/leak/);
    else assert.doesNotMatch(tags.stdout, /route:/);

    const table = await fetch(`${url}?debug=1`);
    assert.equal(table.status, 200);
    assert.match(table.headers.get('content-type'), /^text\/plain/);
    const text = await table.text();
    assert.match(text, /^# heap-labels per-label summary\n# reason: http\n/);
    if (labeled) assert.match(text, /route="\/leak"/);
    else assert.match(text, /carry no labels on this runtime/);

    const gc = await fetch(`${url}?gc=1`);
    assert.equal(gc.status, 200);
    assert.equal(gc.headers.get('content-type'), 'application/octet-stream');
    assert.ok(decodePprof(Buffer.from(await gc.arrayBuffer())).samples.length > 0);

    assert.equal((await fetch(url, { method: 'POST' })).status, 405);
    assert.equal((await fetch(`${url}?gc=maybe`)).status, 400);
    assert.equal((await fetch(`${url}?seconds=0`)).status, 400);
    assert.equal((await fetch(url.replace('/heap', '/profile'))).status, 404);
  } finally {
    await app.kill();
  }
});

test('off loopback the endpoint needs the bearer token', async () => {
  const token = 'tok-' + 'x'.repeat(28);
  const app = await startApp({ HEAP_LABELS_HTTP: '0.0.0.0:0', HEAP_LABELS_TOKEN: token });
  try {
    const [, port] = await app.waitFor(/serving heap profiles at http:\/\/0\.0\.0\.0:(\d+)\//, 'the address');
    const url = `http://127.0.0.1:${port}/debug/pprof/heap`;
    const none = await fetch(url);
    assert.equal(none.status, 401);
    assert.equal(none.headers.get('www-authenticate'), 'Bearer');
    assert.equal((await fetch(url, { headers: { authorization: `Bearer ${token}x` } })).status, 401);
    assert.equal((await fetch(url, { headers: { authorization: `Basic ${token}` } })).status, 401);
    const ok = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(ok.status, 200);
    assert.equal(decodePprof(Buffer.from(await ok.arrayBuffer())).sampleTypes.length, hl.capabilities().allocations ? 4 : 2, 'allocated types where the runtime reports them (the agent tracks allocations)');
  } finally {
    await app.kill();
  }
});

test('the handler mounts in node:http, express, fastify and koa', async () => {
  const { createHeapProfileHandler, fastifyHeapProfile, koaHeapProfile } = require('heap-labels/endpoint');
  const agent = await hl.startAgent({ signal: 'off', nearHeapLimit: 0, dir: path.join(tmp, 'mounted') });
  const token = 'mounted-token-0123456789';
  const servers = [];
  try {
    const plain = http.createServer((req, res) => {
      if (req.url.startsWith('/debug/pprof/heap')) createHeapProfileHandler()(req, res);
      else res.writeHead(404).end();
    });
    servers.push(['node:http', plain, false]);

    const express = require('express')();
    express.get('/debug/pprof/heap', createHeapProfileHandler({ token }));
    servers.push(['express', http.createServer(express), true]);

    const koa = new (require('koa'))();
    koa.use(koaHeapProfile({ agent }));
    koa.use((ctx) => {
      ctx.body = 'app';
    });
    servers.push(['koa', http.createServer(koa.callback()), false]);

    const fastify = require('fastify')();
    fastify.get('/debug/pprof/heap', fastifyHeapProfile());
    await fastify.ready();
    servers.push(['fastify', fastify.server, false]);

    for (const [name, server, needsToken] of servers) {
      await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
      const base = `http://127.0.0.1:${server.address().port}/debug/pprof/heap`;
      const headers = needsToken ? { authorization: `Bearer ${token}` } : {};
      if (needsToken) assert.equal((await fetch(base)).status, 401, name);
      const res = await fetch(base, { headers });
      assert.equal(res.status, 200, name);
      assert.equal(res.headers.get('content-type'), 'application/octet-stream', name);
      const profile = decodePprof(Buffer.from(await res.arrayBuffer()));
      assert.equal(profile.period, 512 * 1024, name);
      const text = await (await fetch(`${base}?debug=1`, { headers })).text();
      assert.match(text, /^# heap-labels per-label summary/, name);
    }
  } finally {
    for (const [, server] of servers) await new Promise((resolve) => server.close(resolve));
    await agent.stop();
  }
  // Without a running agent the handler says so.
  const server = http.createServer(createHeapProfileHandler());
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const res = await fetch(`http://127.0.0.1:${server.address().port}/`);
    assert.equal(res.status, 503);
    assert.match(await res.text(), /no profiling session runs/);
  } finally {
    server.close();
  }
});

// --- near the heap limit -------------------------------------------------------------------------

test('near the heap limit a labeled profile is written before the out-of-memory crash', async () => {
  const dir = path.join(tmp, 'oom');
  const app = await startApp(
    { HEAP_LABELS_DIR: dir, HEAP_LABELS_NEAR_HEAP_LIMIT: '1', HEAP_LABELS_SAMPLE_INTERVAL: '32768' },
    ['--max-old-space-size=48'],
  );
  try {
    // /leak retains ~256 KiB per request: a few hundred requests fill 48 MB. Bounded in count and
    // time; the loop ends when the app dies.
    const deadline = Date.now() + 90_000;
    for (let i = 0; i < 2000 && Date.now() < deadline; i++) {
      try {
        await request(app.port, '/ok', 1);
        await request(app.port, '/leak', 1);
      } catch {
        break;
      }
    }
    const exit = await Promise.race([app.exited, sleep(30_000).then(() => undefined)]);
    assert.ok(exit, `the app did not die:\n${app.stderr.slice(-2000)}`);
    assert.ok(exit.signal !== null || exit.code !== 0, JSON.stringify(exit));
    assert.match(app.stderr, /JavaScript heap out of memory/);
    const m = /near the heap limit: wrote (\S+-oom\.pb\.gz) and (\S+-oom\.txt)/.exec(app.stderr);
    assert.ok(m, app.stderr.slice(-3000));
    assert.equal(app.stderr.match(/near the heap limit: wrote/g).length, 1, 'at most HEAP_LABELS_NEAR_HEAP_LIMIT dumps');
    const [, pprofPath, summaryPath] = m;
    assert.ok(fs.existsSync(pprofPath) && fs.existsSync(summaryPath));
    assert.match(fs.readFileSync(summaryPath, 'utf8'), /# reason: near-heap-limit/);
    const top = await goPprof(tmp, '-top', '-sample_index=inuse_space', pprofPath);
    assert.match(top.stdout, /Type: inuse_space/);
    const profile = decodePprof(fs.readFileSync(pprofPath));
    const byRoute = bytesBy(profile, 'route');
    const total = Object.values(byRoute).reduce((a, b) => a + b, 0);
    assert.ok(total > 20e6, `the profile holds the full heap (${total} bytes)`);
    if (labeled) {
      const labeledBytes = total - (byRoute[''] ?? 0);
      assert.ok(byRoute['/leak'] >= 0.8 * labeledBytes, `/leak holds ${byRoute['/leak']} of ${labeledBytes} labeled bytes`);
    } else {
      assert.deepEqual(Object.keys(byRoute), [''], 'unlabeled on a stock runtime');
    }
  } finally {
    await app.kill();
  }
});

// --- the profiler's own memory ---------------------------------------------------------------------

test('soak smoke: always-on with rotating label sets, the label table returns to its baseline', () => {
  const r = spawnSync(
    process.execPath,
    [...acfExecArgv, '--expose-gc', path.join(root, 'benchmark', 'soak.js'), '--quick', '--minutes', '0.15', '--sets', '2000'],
    { cwd: root, env: childEnv({}), encoding: 'utf8', timeout: 120_000 },
  );
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /label table: baseline (\d+), under load [1-9]\d*, .*: back to baseline/);
  assert.match(r.stdout, /\d+ dumps \(keep 3: [0-6] files left/);
});
