'use strict';
// What a production service needs from the runtime under test: crypto, TLS (HTTPS and HTTP/2),
// the inspector (in process and `--inspect`), full Intl, and npm. Run on every runtime of the
// suite; on the patched one they prove it is a runtime real services can run on (its reduced
// `test` build profile lacks OpenSSL and ICU and fails here on purpose).

const test = require('node:test');
const assert = require('node:assert');
const { execFileSync, spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { once } = require('node:events');
const { makeCertificate, tempDir } = require('./helpers');

test('node:crypto computes a sha256 digest', () => {
  const crypto = require('node:crypto');
  assert.equal(
    crypto.createHash('sha256').update('heap-labels').digest('hex'),
    // sha256("heap-labels"), as `printf heap-labels | sha256sum` prints it.
    execFileSync('sha256sum', { input: 'heap-labels', encoding: 'utf8' }).split(' ')[0],
  );
  assert.equal(crypto.randomBytes(16).length, 16);
  assert.match(crypto.randomUUID(), /^[0-9a-f-]{36}$/);
});

test('an https server answers over loopback with a certificate made at test time', async () => {
  const https = require('node:https');
  const { key, cert } = makeCertificate(tempDir('tls'));
  const server = https.createServer({ key, cert }, (req, res) => {
    res.end(`hello over ${req.socket.getProtocol()}`);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const body = await new Promise((resolve, reject) => {
      https
        .get({ host: '127.0.0.1', port: server.address().port, path: '/', ca: cert, servername: 'localhost' }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => resolve(text));
        })
        .on('error', reject);
    });
    assert.equal(body, 'hello over TLSv1.3');
  } finally {
    server.close();
  }
});

test('an HTTP/2 TLS server answers an HTTP/2 client', async () => {
  const http2 = require('node:http2');
  const { key, cert } = makeCertificate(tempDir('tls'));
  const server = http2.createSecureServer({ key, cert });
  server.on('stream', (stream, headers) => {
    stream.respond({ ':status': 200 });
    stream.end(`h2 ${headers[':path']}`);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const client = http2.connect(`https://localhost:${server.address().port}`, { ca: cert });
  try {
    const body = await new Promise((resolve, reject) => {
      const req = client.request({ ':path': '/route' });
      let text = '';
      req.setEncoding('utf8');
      req.on('data', (chunk) => (text += chunk));
      req.on('end', () => resolve(text));
      req.on('error', reject);
      req.end();
    });
    assert.equal(body, 'h2 /route');
  } finally {
    client.close();
    server.close();
  }
});

test('an in-process inspector session connects and runs a command', async () => {
  const inspector = require('node:inspector/promises');
  const session = new inspector.Session();
  session.connect();
  try {
    const { result } = await session.post('Runtime.evaluate', { expression: '6 * 7' });
    assert.equal(result.value, 42);
  } finally {
    session.disconnect();
  }
});

test('--inspect opens a DevTools endpoint that runs a command', async () => {
  const child = spawn(process.execPath, ['--inspect=127.0.0.1:0', '-e', 'setInterval(() => {}, 1000)'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  try {
    let stderr = '';
    const url = await new Promise((resolve, reject) => {
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (chunk) => {
        stderr += chunk;
        const match = /Debugger listening on (ws:\/\/\S+)/.exec(stderr);
        if (match) resolve(match[1]);
      });
      child.on('exit', (code) => reject(new Error(`node --inspect exited (${code}): ${stderr}`)));
    });
    const ws = new WebSocket(url);
    await once(ws, 'open');
    const reply = new Promise((resolve) => {
      ws.addEventListener('message', (event) => {
        const message = JSON.parse(event.data);
        if (message.id === 1) resolve(message);
      });
    });
    ws.send(JSON.stringify({ id: 1, method: 'Runtime.evaluate', params: { expression: '"inspect:" + (6 * 7)' } }));
    assert.equal((await reply).result.result.value, 'inspect:42');
    ws.close();
  } finally {
    child.kill();
  }
});

test('Intl has full ICU data: locales, time zones, segmentation', () => {
  assert.equal(typeof Intl, 'object');
  assert.equal(new Intl.NumberFormat('de-DE').format(1234567.891), '1.234.567,891');
  assert.equal(
    new Date(Date.UTC(2026, 0, 15, 12, 0, 0)).toLocaleString('en-US', { timeZone: 'Asia/Tokyo' }),
    '1/15/2026, 9:00:00 PM',
  );
  assert.equal(
    new Date(Date.UTC(2026, 6, 1, 12)).toLocaleString('de-DE', { timeZone: 'Europe/Berlin', timeZoneName: 'short' }),
    '1.7.2026, 14:00:00 MESZ',
  );
  const graphemes = [...new Intl.Segmenter('en', { granularity: 'grapheme' }).segment('e\u0301👨‍👩‍👧!')];
  assert.deepEqual(graphemes.map((s) => s.segment), ['e\u0301', '👨‍👩‍👧', '!']);
  const words = [...new Intl.Segmenter('ja', { granularity: 'word' }).segment('東京都に住む')]
    .filter((s) => s.isWordLike)
    .map((s) => s.segment);
  assert.ok(words.length >= 2, `Japanese word segmentation needs ICU's dictionaries: ${words}`);
  assert.equal('İ'.toLocaleLowerCase('tr'), 'i');
});

// npm is plain JavaScript: it runs on whichever node executes its CLI.
function npmCli() {
  const npm = spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim();
  if (!npm) return undefined;
  const cli = path.join(path.dirname(fs.realpathSync(npm)), 'npm-cli.js');
  return fs.existsSync(cli) ? cli : undefined;
}

test('npm runs on this runtime (init, pack with integrity hashes)', (t) => {
  const cli = npmCli();
  if (!cli) return t.skip('no npm on PATH');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-npm-'));
  try {
    const npm = (...args) =>
      execFileSync(process.execPath, [cli, ...args], {
        cwd: dir,
        encoding: 'utf8',
        env: { ...process.env, npm_config_update_notifier: 'false', npm_config_audit: 'false', npm_config_fund: 'false' },
      });
    assert.match(npm('--version').trim(), /^\d+\.\d+\.\d+$/);
    npm('init', '-y');
    fs.writeFileSync(path.join(dir, 'index.js'), 'module.exports = 42;\n');
    const packed = JSON.parse(npm('pack', '--json'));
    assert.equal(packed[0].name, path.basename(dir).toLowerCase());
    assert.match(packed[0].integrity, /^sha512-/);
    assert.ok(fs.existsSync(path.join(dir, packed[0].filename)));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
