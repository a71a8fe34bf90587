'use strict';
// Shared helpers of the JS tests (not a test file itself).

const { spawnSync } = require('node:child_process');
const path = require('node:path');
const zlib = require('node:zlib');

const root = path.resolve(__dirname, '..');
const libPath = path.join(root, 'lib', 'index.js');
const fixtures = path.join(__dirname, 'fixtures');

// Runs `node [...nodeArgs] <fixture> [...args]` with the runtime running the tests and returns
// { status, signal, stdout, stderr, json } (json: the last stdout line parsed, when it is JSON).
function runFixture(fixture, { nodeArgs = [], args = [], env = {} } = {}) {
  const result = spawnSync(process.execPath, [...nodeArgs, path.join(fixtures, fixture), ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 120_000,
  });
  let json;
  const lines = (result.stdout || '').trim().split('\n');
  try {
    json = JSON.parse(lines[lines.length - 1]);
  } catch {
    json = undefined;
  }
  return { status: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr, json };
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
  require('node:fs').mkdirSync(env.HOME, { recursive: true });
  return env;
}

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
  const fs = require('node:fs');
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'heap-labels-copy-'));
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
  addonInPrebuilds,
  installPackageCopy,
  goEnv,
  libPath,
  runFixture,
  expectedAsyncContextFrame,
  asyncContextFrameFlags,
  sleep,
  scale,
  treeNodes,
  decodePprof,
};
