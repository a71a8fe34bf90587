'use strict';
// The HTTP endpoint under a hostile client on loopback: malformed request lines, many concurrent
// reads, ?gc=1 floods, huge headers, slow clients, more connections than the server takes. The app
// (tests/fixtures/abuse-app.js, a child process with the preload) must stay alive, concurrent reads
// must share one copy of V8's profile, refused reads must say when to retry, and the app's event
// loop must never be held longer than one forced read (a full GC plus one copy).
//
// Requests go over raw sockets (net.connect) so that request lines no HTTP client would send can be
// sent, and so that many requests can be written at the same moment.

const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const path = require('node:path');
const { root, decodePprof, sleep, tempDir, acfExecArgv, childEnv, spawnApp } = require('./helpers');

const registerCjs = path.join(root, 'lib', 'register.js');
const fixture = path.join(__dirname, 'fixtures', 'abuse-app.js');
const tmp = tempDir('abuse');
const TOKEN = 'abuse-token-0123456789abcdef';

// Starts the app with the agent's server on 127.0.0.1 (and `env`); resolves to
// { port (the app's own), agentPort, get(route), assertAlive(), kill(), ... } (spawnApp's).
async function startApp(env = {}) {
  const app = await spawnApp([...acfExecArgv, '-r', registerCjs, fixture], {
    env: childEnv({ HEAP_LABELS_HTTP: '127.0.0.1:0', HEAP_LABELS_DIR: tmp, HEAP_LABELS_SIGNAL: 'off', ...env }),
    ready: /serving heap profiles at http:\/\/127\.0\.0\.1:(\d+)\//,
  });
  app.agentPort = Number(app.ready[1]);
  app.get = async (route) => JSON.parse((await exchange(app.port, `GET ${route} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)).body);
  app.assertAlive = async () => {
    assert.equal(app.child.exitCode, null, `the app exited:\n${app.stderr}`);
    assert.equal((await app.get('/stats')).pid, app.child.pid);
  };
  return app;
}

// A parsed HTTP/1.1 response: { status, headers, body (Buffer) }, or { status: 0 } when the server
// closed the connection without answering.
function parseResponse(buf) {
  const end = buf.indexOf('\r\n\r\n');
  if (end === -1) return { status: 0, headers: {}, body: Buffer.alloc(0) };
  const [line, ...fields] = buf.subarray(0, end).toString('latin1').split('\r\n');
  const headers = {};
  for (const f of fields) {
    const i = f.indexOf(':');
    headers[f.slice(0, i).trim().toLowerCase()] = f.slice(i + 1).trim();
  }
  let body = buf.subarray(end + 4);
  if (headers['transfer-encoding'] === 'chunked') {
    const parts = [];
    for (let at = 0; ;) {
      const eol = body.indexOf('\r\n', at);
      const size = parseInt(body.subarray(at, eol).toString('latin1'), 16);
      if (!(size > 0)) break;
      parts.push(body.subarray(eol + 2, eol + 2 + size));
      at = eol + 2 + size + 2;
    }
    body = Buffer.concat(parts);
  }
  return { status: Number(line.split(' ')[1]), headers, body };
}

function connect(port) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

// Reads a socket until the server closes it; resolves to the parsed response.
function responseOf(socket, timeoutMs = 60_000) {
  return new Promise((resolve) => {
    const chunks = [];
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(parseResponse(Buffer.concat(chunks)));
    });
  });
}

async function exchange(port, text) {
  const socket = await connect(port);
  const response = responseOf(socket);
  socket.write(text);
  return response;
}

// Opens `n` connections first, then writes `text` (or text(i)) on all of them at once, so that the
// requests arrive together; resolves to the n responses.
async function burst(port, n, text) {
  const sockets = await Promise.all(Array.from({ length: n }, () => connect(port)));
  const responses = sockets.map((s) => responseOf(s));
  sockets.forEach((s, i) => s.write(typeof text === 'function' ? text(i) : text));
  return Promise.all(responses);
}

const get = (target, headers = '') => `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${headers}\r\n`;
const auth = `Authorization: Bearer ${TOKEN}\r\n`;

for (const withToken of [false, true]) {
  test(`GET // and other malformed request targets are answered 400; the app lives (token ${withToken ? 'set' : 'not set'})`, async () => {
    const app = await startApp(withToken ? { HEAP_LABELS_TOKEN: TOKEN } : {});
    try {
      const h = withToken ? auth : '';
      for (const target of ['//', '//?gc=1', '//x/debug/pprof/heap', 'http://x/debug/pprof/heap', '*']) {
        const r = await exchange(app.agentPort, get(target, h));
        assert.equal(r.status, 400, `GET ${target}`);
        await app.assertAlive();
      }
      // Request lines and headers the HTTP parser refuses: Node's own 400, the app lives.
      for (const text of ['GARBAGE\r\n\r\n', 'GET /\x00 HTTP/1.1\r\n\r\n', 'GET / HTTP/9.9\r\nHost: x\r\n\r\n', `GET /debug/pprof/heap HTTP/1.1\r\nBad Header\r\n\r\n`]) {
        const r = await exchange(app.agentPort, text);
        assert.ok(r.status === 400 || r.status === 505 || r.status === 0, `${JSON.stringify(text)}: ${r.status}`);
        await app.assertAlive();
      }
      // Odd but harmless queries are read, not thrown on.
      const odd = await exchange(app.agentPort, get('/debug/pprof/heap?%zz=%&debug=1#frag', h));
      assert.equal(odd.status, 200);
      assert.match(odd.body.toString(), /^# heap-labels per-label summary/);
      assert.equal((await exchange(app.agentPort, get('/debug/pprof/heap', h))).status, 200);
      if (withToken) assert.equal((await exchange(app.agentPort, get('/debug/pprof/heap'))).status, 401);
      await app.assertAlive();
    } finally {
      await app.kill();
    }
  });
}

test('concurrent reads share one copy of V8\'s profile; beyond the waiting bound they get 503 with Retry-After', async () => {
  const app = await startApp({ HEAP_LABELS_SAMPLE_INTERVAL: '512', ABUSE_OBJECTS: '300000' });
  try {
    // Reads that must wait: a pprof read keeps any new copy from starting for 9 times its hold,
    // and summaries asked for right after it wait for that copy. 100 at once (the agent's server
    // takes at most 128 connections): beyond 64 waiting they are refused with a time to retry.
    const sockets = await Promise.all(Array.from({ length: 100 }, () => connect(app.agentPort)));
    const answers = sockets.map((s) => responseOf(s));
    assert.equal((await exchange(app.agentPort, get('/debug/pprof/heap'))).status, 200);
    for (const s of sockets) s.write(get('/debug/pprof/heap?debug=1'));
    const many = await Promise.all(answers);
    const refused = many.filter((r) => r.status === 503);
    assert.ok(refused.length >= 20, `refused ${refused.length} of 100`);
    assert.deepEqual([...new Set(many.map((r) => r.status))].sort(), [200, 503]);
    for (const r of refused) {
      assert.match(r.headers['retry-after'], /^[1-9]\d*$/);
      assert.match(r.body.toString(), /profile reads are already waiting/);
    }
    // 40 reads at once: one copy (profiles of different copies differ in duration_nanos, the time
    // from the session's start to the copy).
    await sleep(500);
    const responses = await burst(app.agentPort, 40, get('/debug/pprof/heap'));
    assert.deepEqual([...new Set(responses.map((r) => r.status))], [200]);
    const durations = responses.map((r) => decodePprof(r.body).durationNanos);
    assert.equal(new Set(durations).size, 1, `copies: ${JSON.stringify(durations)}`);
    // Both formats asked at once: each format as asked.
    const mixed = await burst(app.agentPort, 20, (i) => get(i % 2 ? '/debug/pprof/heap?debug=1' : '/debug/pprof/heap'));
    assert.deepEqual([...new Set(mixed.map((r) => r.status))], [200]);
    for (const [i, r] of mixed.entries()) {
      if (i % 2) assert.match(r.body.toString(), /^# heap-labels per-label summary/);
      else assert.ok(decodePprof(r.body).samples.length > 0);
    }
    await app.assertAlive();
  } finally {
    await app.kill();
  }
});

test('?gc=1: concurrent requests share one GC; no other GC runs within 10 s (shared result or 429 with Retry-After); reads without gc go on', async () => {
  const app = await startApp({ HEAP_LABELS_SAMPLE_INTERVAL: '512' });
  try {
    const gcAt = Date.now();
    const first = await burst(app.agentPort, 10, get('/debug/pprof/heap?gc=1'));
    assert.deepEqual([...new Set(first.map((r) => r.status))], [200]);
    const copies = new Set(first.map((r) => decodePprof(r.body).durationNanos));
    assert.equal(copies.size, 1);
    // Then one ?gc=1 every 200 ms until one is refused, for at most 9 s (inside the GC's 10 s): each
    // shares that GC's profile (while no new copy may start, 9x the copy's own hold, which grows
    // with the machine's load) or is refused.
    let refused;
    while (refused === undefined && Date.now() - gcAt < 9000) {
      const r = await exchange(app.agentPort, get('/debug/pprof/heap?gc=1'));
      if (r.status === 200) {
        assert.ok(copies.has(decodePprof(r.body).durationNanos), 'a second forced GC ran within 10 s');
      } else {
        assert.equal(r.status, 429);
        refused = r;
      }
      await sleep(200);
    }
    assert.ok(refused, 'no ?gc=1 was refused');
    const retry = Number(refused.headers['retry-after']);
    assert.ok(retry >= 1 && retry <= 10, `Retry-After ${refused.headers['retry-after']}`);
    assert.match(refused.body.toString(), /a full GC runs at most once per 10 s/);
    assert.equal((await exchange(app.agentPort, get('/debug/pprof/heap'))).status, 200);
    await app.assertAlive();
  } finally {
    await app.kill();
  }
});

test('27.9: beyond 128 open connections a request is answered 503 with Retry-After, not reset; service resumes', async () => {
  const app = await startApp({});
  const idle = [];
  try {
    for (let i = 0; i < 140; i++) idle.push(await connect(app.agentPort));
    const busy = await exchange(app.agentPort, get('/debug/pprof/heap?debug=1'));
    assert.equal(busy.status, 503, JSON.stringify(busy).slice(0, 300));
    await app.assertAlive();
    for (const s of idle) s.destroy();
    idle.length = 0;
    let served;
    for (let i = 0; i < 50 && served?.status !== 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      served = await exchange(app.agentPort, get('/debug/pprof/heap?debug=1'));
    }
    assert.equal(served.status, 200);
  } finally {
    for (const s of idle) s.destroy();
    await app.kill();
  }
});

test('a hostile client (malformed lines, huge headers, slowloris, floods of reads and ?gc=1, many connections) neither crashes the app nor holds its loop longer than one forced read', async (t) => {
  const app = await startApp({ HEAP_LABELS_SAMPLE_INTERVAL: '512' });
  const open = [];
  let drip;
  try {
    // The bound: one full GC plus one copy of the profile, measured in the app before the attack.
    const hold = await app.get('/hold');
    await sleep(200);
    await app.get('/reset');
    const port = app.agentPort;

    // Slow clients: headers sent a byte every 100 ms; the server cuts them off (headersTimeout).
    const slow = await Promise.all(Array.from({ length: 20 }, () => connect(port)));
    const slowClosed = slow.map((s) => responseOf(s, 30_000).then(() => Date.now()));
    const slowStart = Date.now();
    const slowText = get('/debug/pprof/heap', 'X-Slow: ' + 'a'.repeat(1000) + '\r\n');
    let slowPos = 0;
    drip = setInterval(() => {
      for (const s of slow) if (!s.destroyed) s.write(slowText[slowPos % (slowText.length - 4)]);
      slowPos++;
    }, 100);

    const attacks = [
      burst(port, 150, get('/debug/pprof/heap')),
      burst(port, 20, get('/debug/pprof/heap?gc=1')),
      burst(port, 50, (i) => ['GET // HTTP/1.1\r\n\r\n', 'GET\r\n\r\n', '\x16\x03\x01\x02\x00\r\n\r\n', 'GET /debug/pprof/heap?gc=2 HTTP/1.1\r\n\r\n', 'GET /a%00b HTTP/1.1\r\n\r\n'][i % 5]),
      burst(port, 10, get('/debug/pprof/heap', `X-Big: ${'b'.repeat(200_000)}\r\n`)),
    ];
    const [reads, gcs, malformed, big] = await Promise.all(attacks);
    assert.ok(reads.every((r) => [0, 200, 503].includes(r.status)), `reads: ${[...new Set(reads.map((r) => r.status))]}`);
    assert.ok(reads.some((r) => r.status === 200));
    assert.ok(gcs.every((r) => [0, 200, 429, 503].includes(r.status)), `gc: ${[...new Set(gcs.map((r) => r.status))]}`);
    assert.ok(malformed.every((r) => r.status === 0 || (r.status >= 400 && r.status < 500)), `malformed: ${[...new Set(malformed.map((r) => r.status))]}`);
    assert.ok(big.every((r) => r.status === 431 || r.status === 0), `big headers: ${[...new Set(big.map((r) => r.status))]}`);

    // Many idle connections, more than the server takes: they are refused or time out; the app
    // does not notice.
    const idle = await Promise.all(Array.from({ length: 300 }, () => connect(port).catch(() => undefined)));
    open.push(...idle.filter(Boolean));
    await app.assertAlive();

    const cut = await Promise.all(slowClosed);
    clearInterval(drip);
    for (const t of cut) assert.ok(t - slowStart < 25_000, `a slow client was held ${t - slowStart} ms`);
    await app.assertAlive();
    const { maxStallMs } = await app.get('/stats');
    const bound = hold.gcMs + hold.copyMs;
    // Slack for a loaded test machine: timers, parsing and sending of the responses run too.
    assert.ok(maxStallMs < 2 * bound + 250, `longest stall ${maxStallMs.toFixed(0)} ms; one forced read: GC ${hold.gcMs.toFixed(0)} ms + copy ${hold.copyMs.toFixed(0)} ms`);
    t.diagnostic(`longest stall ${maxStallMs.toFixed(0)} ms; one forced read: GC ${hold.gcMs.toFixed(0)} ms + copy ${hold.copyMs.toFixed(0)} ms`);
  } finally {
    // Also when an assertion failed above: a live interval would keep this file's process alive.
    clearInterval(drip);
    for (const s of open) s.destroy();
    await app.kill();
  }
});
