'use strict';
// Shared helpers of the JS tests (not a test file itself).

const assert = require('node:assert/strict');
const { execFileSync, spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');

const root = path.resolve(__dirname, '..');
const libPath = path.join(root, 'lib', 'index.js');
const fixtures = path.join(__dirname, 'fixtures');

// The last line of a child's stdout parsed as JSON (what the fixtures print last), or undefined.
function lastJson(stdout) {
  const lines = (stdout || '').trim().split('\n');
  try {
    return JSON.parse(lines[lines.length - 1]);
  } catch {
    return undefined;
  }
}

// A child's stdout kept by the synchronous runners: spawnSync's default (1 MiB) fails with ENOBUFS
// on a profile printed as JSON.
const OUTPUT_LIMIT = 256 * 1024 * 1024;

// Runs `node [...nodeArgs] <fixture> [...args]` with the runtime running the tests and returns
// { status, signal, stdout, stderr, json } (json: the last stdout line parsed, when it is JSON).
function runFixture(fixture, { nodeArgs = [], args = [], env = {} } = {}) {
  const result = spawnSync(process.execPath, [...nodeArgs, path.join(fixtures, fixture), ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 120_000,
    maxBuffer: OUTPUT_LIMIT,
  });
  return { status: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr, json: lastJson(result.stdout) };
}

// runFixture for a fixture that prints one JSON result: fails the test unless it exited 0 and printed
// JSON; returns that JSON.
function fixtureJson(fixture, options = {}) {
  const r = runFixture(fixture, options);
  const what = [fixture, ...(options.args ?? [])].join(' ');
  assert.equal(r.status, 0, `${what} failed (signal ${r.signal}):\n${r.stderr}`);
  assert.ok(r.json, `${what} printed no JSON:\n${r.stdout}\n${r.stderr}`);
  return r.json;
}

// A temporary directory heap-labels-<name>-XXXXXX, removed when this process exits.
function tempDir(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `heap-labels-${name}-`));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// The AsyncContextFrame flags on this test process's command line, for the children it starts (flags
// in NODE_OPTIONS reach them through the environment).
const acfExecArgv = process.execArgv.filter((a) => /^--(no-)?(experimental-)?async-context-frame$/.test(a));

// The environment of a child that the agent's configuration must not reach from outside: this
// process's without HEAP_LABELS_* variables, then `env`.
function childEnv(env = {}) {
  const out = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('HEAP_LABELS_')) out[k] = v;
  return { ...out, ...env };
}

// Starts `node <args>` (an app fixture) with this runtime, keeping its output. Resolves once the app
// has printed its first stdout line (a JSON object with its `port`) and, when given, `ready` matches
// its stderr, to { child, stdout, stderr, port, ready (that match), exited (resolves to { code,
// signal }), waitFor(re, what, ms) (resolves to re's match on stderr), kill() }. The app is killed at
// the latest when the tests end.
async function spawnApp(args, { env = process.env, ready } = {}) {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const app = { child, stdout: '', stderr: '' };
  app.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  child.stdout.setEncoding('utf8').on('data', (d) => (app.stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d) => (app.stderr += d));
  app.kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await app.exited;
  };
  require('node:test').after(() => app.kill());
  app.waitFor = async (re, what, ms = 30_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      const m = re.exec(app.stderr);
      if (m) return m;
      if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
        assert.fail(`${what}: not seen on the app's stderr:\n${app.stderr}`);
      }
      await sleep(20);
    }
  };
  const deadline = Date.now() + 30_000;
  while (!app.stdout.includes('\n') || (ready && !(app.ready = ready.exec(app.stderr)))) {
    if (child.exitCode !== null || Date.now() > deadline) assert.fail(`the app did not start:\n${app.stderr}`);
    await sleep(20);
  }
  app.port = JSON.parse(app.stdout.split('\n')[0]).port;
  return app;
}

// Runs bin/heap-labels.js <args> with this runtime: spawnSync's result (utf8).
function cli(...args) {
  const r = spawnSync(process.execPath, [path.join(root, 'bin', 'heap-labels.js'), ...args], { encoding: 'utf8', timeout: 60_000, maxBuffer: OUTPUT_LIMIT });
  if (r.error) throw r.error;
  return r;
}

// assert.throws for an error of class ErrorClass whose message names every fragment.
function throwsNaming(fn, ErrorClass, ...fragments) {
  assert.throws(fn, (err) => {
    assert.ok(err instanceof ErrorClass, `expected ${ErrorClass.name}, got ${err?.constructor.name}: ${err?.message}`);
    for (const fragment of fragments) assert.ok(err.message.includes(fragment), `"${err.message}" lacks ${fragment}`);
    return true;
  });
}

// A self-signed certificate for localhost and 127.0.0.1 (openssl), written to dir/key.pem and
// dir/cert.pem; returns { key, cert } (the PEM bytes).
function makeCertificate(dir) {
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ], { stdio: 'ignore' });
  return { key: fs.readFileSync(key), cert: fs.readFileSync(cert) };
}

// A value of tools/patched-node/versions.env as the recipe reads it (bash sources the file).
function recipeValue(name) {
  const file = path.join(root, 'tools', 'patched-node', 'versions.env');
  const r = spawnSync('bash', ['-c', `source "$1" && echo "$${name}"`, 'bash', file], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

// The Node.js lines the recipe supports (NODE_LINES, the one list): [{ node: '22', v8: '12.4' }, ...].
function recipeLines() {
  return recipeValue('NODE_LINES').split(/\s+/).map((entry) => {
    const [node, v8] = entry.split(':');
    return { node, v8 };
  });
}

// Test oracle (not used by lib/): whether this process was started with AsyncContextFrame on. It is
// on by default wherever the runtime knows `--async-context-frame` (the lines where it is the default,
// and labeled runtimes, whose recipe backports that default); elsewhere it is opt-in through
// `--experimental-async-context-frame`.
function expectedAsyncContextFrame() {
  const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS || '').split(/\s+/)];
  if (flags.includes('--no-async-context-frame') || flags.includes('--no-experimental-async-context-frame')) {
    return false;
  }
  if (process.allowedNodeEnvironmentFlags.has('--async-context-frame')) return true;
  return flags.includes('--experimental-async-context-frame');
}

// The flags a child process needs for AsyncContextFrame: none where it is the default (the runtime
// knows `--async-context-frame`), the opt-in flag elsewhere. Decided by the runtime, not its version.
function asyncContextFrameFlags() {
  return process.allowedNodeEnvironmentFlags.has('--async-context-frame') ? [] : ['--experimental-async-context-frame'];
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// fixtureJson(fixture, { nodeArgs, args: [a new directory under `dir`] }) run at the first call of
// the function returned, which returns that result from then on (a workload several tests read).
function fixtureOnce(fixture, dir, nodeArgs) {
  let result;
  return () => (result ??= fixtureJson(fixture, { nodeArgs, args: [fs.mkdtempSync(path.join(dir, `${path.basename(fixture, '.js')}-`))] }));
}

// The function retainArrays() allocates in, by which profiles find its site.
const RETAIN_SITE = 'allocateRetainedArrays';

// Allocates `count` arrays of 1000 Smis (about 8 KB each) in the function RETAIN_SITE names and
// returns them: they live while the caller keeps them.
function retainArrays(count) {
  const kept = [];
  function allocateRetainedArrays() {
    for (let i = 0; i < count; i++) kept.push(new Array(1000).fill(i));
  }
  allocateRetainedArrays();
  return kept;
}

// GETs each of `paths` in turn from 127.0.0.1:`port` on one keep-alive connection, reading each
// answer whole.
async function getInTurn(port, paths) {
  const http = require('node:http');
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (const p of paths) {
      await new Promise((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port, path: p, agent }, (res) => {
            res.resume();
            res.on('end', resolve);
          })
          .on('error', reject);
      });
    }
  } finally {
    agent.destroy();
  }
}

// Every node of a DevTools-shaped call tree (iterative: trees can be deep).
function treeNodes(head) {
  const out = [];
  const stack = [head];
  while (stack.length) {
    const node = stack.pop();
    out.push(node);
    stack.push(...node.children);
  }
  return out;
}

// V8's scaling of one sample: the objects it stands for.
function scale(size, interval) {
  return 1 / (1 - Math.exp(-size / interval));
}

// --- a minimal protobuf reader for pprof's profile.proto -------------------------------------

function readVarint(buf, pos) {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new Error('truncated varint');
    const byte = buf[pos++];
    result |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [result, pos];
    shift += 7n;
    if (shift > 70n) throw new Error('varint too long');
  }
}

// Decodes one message into { fieldNumber: [values] } where values are BigInt (varint) or Buffer
// (length-delimited).
function decodeMessage(buf) {
  const fields = {};
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    let value;
    if (wire === 0) {
      [value, pos] = readVarint(buf, pos);
    } else if (wire === 2) {
      let len;
      [len, pos] = readVarint(buf, pos);
      value = buf.subarray(pos, pos + Number(len));
      if (value.length !== Number(len)) throw new Error('truncated field');
      pos += Number(len);
    } else if (wire === 1) {
      value = buf.readBigUInt64LE(pos);
      pos += 8;
    } else if (wire === 5) {
      value = BigInt(buf.readUInt32LE(pos));
      pos += 4;
    } else {
      throw new Error(`unsupported wire type ${wire}`);
    }
    (fields[field] ??= []).push(value);
  }
  return fields;
}

// Repeated scalar fields may be packed (a Buffer of varints) or not (BigInts).
function repeatedInts(values = []) {
  const out = [];
  for (const v of values) {
    if (typeof v === 'bigint') {
      out.push(v);
    } else {
      let pos = 0;
      while (pos < v.length) {
        let n;
        [n, pos] = readVarint(v, pos);
        out.push(n);
      }
    }
  }
  return out.map(Number);
}

const int = (fields, n) => Number((fields[n] || [0n])[0]);

// gzip'd profile.proto -> a plain object with the fields the tests check.
function decodePprof(gz) {
  const top = decodeMessage(zlib.gunzipSync(gz));
  const strings = (top[6] || []).map((b) => b.toString('utf8'));
  const str = (i) => strings[i];
  const valueType = (b) => {
    const f = decodeMessage(b);
    return { type: str(int(f, 1)), unit: str(int(f, 2)) };
  };
  return {
    strings,
    sampleTypes: (top[1] || []).map(valueType),
    samples: (top[2] || []).map((b) => {
      const f = decodeMessage(b);
      return {
        locationIds: repeatedInts(f[1]),
        values: repeatedInts(f[2]),
        labels: (f[3] || []).map((lb) => {
          const l = decodeMessage(lb);
          return { key: str(int(l, 1)), str: str(int(l, 2)), num: int(l, 3) };
        }),
      };
    }),
    locations: (top[4] || []).map((b) => {
      const f = decodeMessage(b);
      return {
        id: int(f, 1),
        lines: (f[4] || []).map((lb) => {
          const l = decodeMessage(lb);
          return { functionId: int(l, 1), line: int(l, 2) };
        }),
      };
    }),
    functions: (top[5] || []).map((b) => {
      const f = decodeMessage(b);
      return { id: int(f, 1), name: str(int(f, 2)), filename: str(int(f, 4)), startLine: int(f, 5) };
    }),
    timeNanos: int(top, 9),
    durationNanos: int(top, 10),
    periodType: top[11] ? valueType(top[11][0]) : undefined,
    period: int(top, 12),
    defaultSampleType: str(int(top, 14)),
  };
}

// { [sample type]: { [value of label `key`, '' when absent]: total } } of a decoded pprof, zeros
// left out (as in an OTLP profile, which has no sample for a zero value).
function pprofTotals(p, key) {
  const out = {};
  for (const s of p.samples) {
    const label = s.labels.find((l) => l.key === key);
    const v = label ? label.str : '';
    p.sampleTypes.forEach((t, i) => {
      if (s.values[i] === 0) return;
      const byValue = (out[t.type] ??= {});
      byValue[v] = (byValue[v] ?? 0) + s.values[i];
    });
  }
  return out;
}

// A heap profile encoded with pprof-format (a devDependency, not a reader of the package's): the bytes
// of a profile.proto message (gzip them for a .pb.gz). From
//   samples: [{ stack: [function names, leaf first], values, labels: { key: string or [number, unit] } }]
//   types: [[type, unit], ...] (default inuse_objects/count, inuse_space/bytes)
//   file, lines ({ name: line }, default 1), locationIds ({ name: id }, default the function's id,
//     which is the order of first use): where the functions are
//   timeNanos, durationNanos, period, periodType ([type, unit]), defaultSampleType: profile.proto's
//     fields, left out when not given.
function encodePprof({ samples, types = [['inuse_objects', 'count'], ['inuse_space', 'bytes']], file = '/app.js', lines = {}, locationIds = {}, ...fields }) {
  const { Profile, StringTable, ValueType, Sample, Label, Location, Line, Function: PFunction } = require('pprof-format');
  const st = new StringTable();
  const s = (x) => st.dedup(x);
  const valueType = ([type, unit]) => new ValueType({ type: s(type), unit: s(unit) });
  const functions = new Map();
  const locations = new Map();
  const locationOf = (name) => {
    let location = locations.get(name);
    if (location === undefined) {
      const line = lines[name] ?? 1;
      const fn = new PFunction({ id: functions.size + 1, name: s(name), systemName: s(name), filename: s(file), startLine: line });
      functions.set(name, fn);
      location = new Location({ id: locationIds[name] ?? fn.id, line: [new Line({ functionId: fn.id, line })] });
      locations.set(name, location);
    }
    return location.id;
  };
  const label = ([key, value]) => (Array.isArray(value)
    ? new Label({ key: s(key), num: value[0], numUnit: s(value[1]) })
    : new Label({ key: s(key), str: s(value) }));
  const profile = new Profile({
    sampleType: types.map(valueType),
    sample: samples.map((x) => new Sample({ locationId: x.stack.map(locationOf), value: x.values, label: Object.entries(x.labels ?? {}).map(label) })),
    stringTable: st,
  });
  profile.location = [...locations.values()];
  profile.function = [...functions.values()];
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    if (name === 'periodType') profile.periodType = valueType(value);
    else if (name === 'defaultSampleType') profile.defaultSampleType = s(value);
    else profile[name] = value;
  }
  return profile.encode();
}

// encodePprof in the shape the patched runtime writes: Go's four sample types (values [alloc_objects,
// alloc_space, inuse_objects, inuse_space]), functions keep at /app.js:5 and handle at /app.js:9, a
// 5 s session read at 1,700,000,005 s, a period of 4096 bytes; `spec` gives the samples and overrides.
function labeledPprof(spec) {
  return encodePprof({
    types: [['alloc_objects', 'count'], ['alloc_space', 'bytes'], ['inuse_objects', 'count'], ['inuse_space', 'bytes']],
    lines: { keep: 5, handle: 9 },
    timeNanos: 1_700_000_000_000_000_000n,
    durationNanos: 5_000_000_000,
    periodType: ['space', 'bytes'],
    period: 4096,
    defaultSampleType: 'inuse_space',
    ...spec,
  });
}

// The environment for running `go` (go tool pprof) in a test: its caches and settings go under
// `dir` (a test's temporary directory), not the user's home; no module downloads or toolchain
// switches.
function goEnv(dir) {
  const env = {
    ...process.env,
    HOME: path.join(dir, 'home'),
    GOCACHE: path.join(dir, 'gocache'),
    GOPATH: path.join(dir, 'gopath'),
    PPROF_TMPDIR: path.join(dir, 'pprof'),
    GOFLAGS: '',
    GOTOOLCHAIN: 'local',
  };
  fs.mkdirSync(env.HOME, { recursive: true });
  return env;
}

// Runs `go <args>` with go's caches under `dir` (goEnv); resolves to { stdout, stderr }, rejects
// when go is missing (naming the package) or exits non-zero. Asynchronous: what `go tool pprof`
// reads may be served by this very process.
function runGo(dir, ...args) {
  return new Promise((resolve, reject) => {
    const child = spawn('go', args, { env: goEnv(dir), timeout: 120_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('error', (err) => reject(err.code === 'ENOENT'
      ? new Error('`go` is not on PATH: the tests read pprof output with `go tool pprof` from the Debian package golang-go, which the test setup installs (scripts/test.sh; by hand: apt-get install golang-go)')
      : err));
    child.on('close', (code, signal) => {
      if (code === 0) resolve({ stdout, stderr });
      else reject(new Error(`go ${args.join(' ')} exited with ${code ?? signal}:\n${stderr}`));
    });
  });
}

const goPprof = (dir, ...args) => runGo(dir, 'tool', 'pprof', ...args);

// Installs a copy of the package as npm would lay it out, at <new temporary dir>/node_modules/
// heap-labels: lib/, package.json and the recipe's list of lines (what the package carries, no
// build/, no recipe), its dependencies linked in, and `addon` (bytes, when given) as its prebuilt
// addon for this runtime (at `addonInPrebuilds`). The directory goes when test `t` ends. Returns
// { dir, pkg }: apps go in dir, which resolves `heap-labels` to the copy.
const addonInPrebuilds = () => {
  const { addonPath } = require(path.join(root, 'lib', 'native'));
  return path.join('prebuilds', path.basename(path.dirname(addonPath)), path.basename(addonPath));
};

function installPackageCopy(t, addon) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-copy-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const pkg = path.join(dir, 'node_modules', 'heap-labels');
  fs.cpSync(path.join(root, 'lib'), path.join(pkg, 'lib'), { recursive: true });
  fs.copyFileSync(path.join(root, 'package.json'), path.join(pkg, 'package.json'));
  const lines = path.join('tools', 'patched-node', 'versions.env');
  fs.mkdirSync(path.dirname(path.join(pkg, lines)), { recursive: true });
  fs.copyFileSync(path.join(root, lines), path.join(pkg, lines));
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(pkg, 'node_modules'));
  if (addon !== undefined) {
    const file = path.join(pkg, addonInPrebuilds());
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, addon, { mode: 0o755 });
  }
  return { dir, pkg };
}

module.exports = {
  root,
  libPath,
  addonInPrebuilds,
  installPackageCopy,
  runFixture,
  fixtureJson,
  fixtureOnce,
  RETAIN_SITE,
  retainArrays,
  getInTurn,
  lastJson,
  tempDir,
  acfExecArgv,
  childEnv,
  spawnApp,
  cli,
  throwsNaming,
  makeCertificate,
  recipeValue,
  recipeLines,
  expectedAsyncContextFrame,
  asyncContextFrameFlags,
  sleep,
  scale,
  treeNodes,
  decodePprof,
  pprofTotals,
  encodePprof,
  labeledPprof,
  goEnv,
  runGo,
  goPprof,
};
