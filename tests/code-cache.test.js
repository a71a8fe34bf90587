'use strict';
// The preload's code cache (lib/code-cache.js, lib/cached-require.js): a start with the cache loads
// heap-labels' modules from V8's cached code, and nothing the cache directory holds (a damaged or
// foreign file, a stale entry, a directory others can write to) changes what runs: the sources
// are compiled as without a cache, and the cache is written again. The preload runs in a copy of
// the package (lib/, package.json, the built addon) in a temporary directory, so that a test can
// change a module's source without touching this checkout.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { root, runFixture } = require('./helpers');
const codeCache = require('../lib/code-cache');
const { native } = require('../lib/native');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-code-cache-test-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));
const crc32 = (bytes) => native.crc32(bytes);

// Every file's modification time in a copy, as Nix stores give them (its epoch + 1 s); whole
// seconds, which utimes() sets exactly.
const MTIME = 1;

// A copy of the package as installed: lib/, package.json, the built addon; its dependencies
// through a link to this checkout's node_modules.
function packageCopy() {
  const dir = fs.mkdtempSync(path.join(tmp, 'pkg-'));
  fs.cpSync(path.join(root, 'lib'), path.join(dir, 'lib'), { recursive: true });
  for (const file of fs.readdirSync(path.join(dir, 'lib'), { recursive: true })) {
    fs.utimesSync(path.join(dir, 'lib', file), MTIME, MTIME);
  }
  fs.cpSync(path.join(root, 'build'), path.join(dir, 'build'), { recursive: true });
  fs.copyFileSync(path.join(root, 'package.json'), path.join(dir, 'package.json'));
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return dir;
}

// Prints the loader's statistics and whether the app's `require('heap-labels')` is the preload's
// instance, once the process has run for `ms`.
const PROBE = `
  if (process.env.SET_FLAGS) require('node:v8').setFlagsFromString(process.env.SET_FLAGS);
  const pkg = process.env.PKG;
  const api = require(pkg);
  const same = require.cache[require('node:path').join(pkg, 'lib/labels.js')] !== undefined && typeof api.setHeapProfileLabels === 'function';
  api.setHeapProfileLabels({ route: '/probe' });
  setTimeout(() => {
    const stats = require(require('node:path').join(pkg, 'lib/cached-require.js')).stats();
    process.stdout.write(JSON.stringify({ same, stats, edited: globalThis.heapLabelsEdited === 1 }));
  }, Number(process.env.WAIT_MS ?? 0));
`;

// Starts node with the copy's preload (`-r`, or `--import` when `how` says so); returns
// { stats, same, edited, stderr }.
// `before`: a module preloaded before heap-labels.
function start(pkg, cacheDir, { env = {}, waitMs = 0, how = '-r', before } = {}) {
  const preloads = before === undefined ? [] : ['-r', before];
  const r = spawnSync(process.execPath, [...preloads, how, path.join(pkg, 'lib/entries/register.js'), '-e', PROBE], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '', PKG: pkg, WAIT_MS: String(waitMs), HEAP_LABELS_CODE_CACHE: cacheDir, ...env },
    timeout: 60_000,
  });
  assert.equal(r.status, 0, r.stderr);
  return { ...JSON.parse(r.stdout), stderr: r.stderr };
}

function cacheFiles(dir) {
  return fs.readdirSync(dir).filter((name) => name.endsWith('.bin'));
}

test('a second start loads every module from the cache; the first writes it', () => {
  const pkg = packageCopy();
  const dir = path.join(tmp, 'cache-a');
  const first = start(pkg, dir, { waitMs: 1500 });
  assert.ok(first.same, 'the app gets the preload instance');
  assert.ok(first.stats.misses > 10, JSON.stringify(first.stats));
  assert.equal(first.stats.hits, 0);
  assert.equal(first.stats.written, true, 'written once start-up is over, while the app runs');
  assert.equal(cacheFiles(dir).length, 1);
  const second = start(pkg, dir);
  assert.ok(second.same);
  assert.equal(second.stats.misses, 0, JSON.stringify(second.stats));
  assert.equal(second.stats.rejected, 0, JSON.stringify(second.stats));
  assert.ok(second.stats.hits > 10, JSON.stringify(second.stats));
  assert.equal(second.stats.written, false, 'nothing to write when every entry was used');
  const mode = fs.statSync(dir).mode & 0o777;
  assert.equal(mode & 0o077, 0, `the directory is the user's alone (mode ${mode.toString(8)})`);
});

test('the cache holds heap-labels modules only, by their path under lib/', () => {
  const pkg = packageCopy();
  const dir = path.join(tmp, 'cache-b');
  assert.equal(start(pkg, dir).stats.written, false, 'not yet when the probe reads it');
  assert.equal(cacheFiles(dir).length, 1, 'a process that ends sooner writes it as it exits');
  const [name] = cacheFiles(dir);
  const bytes = fs.readFileSync(path.join(dir, name));
  const index = JSON.parse(bytes.toString('utf8', 16, 16 + bytes.readUInt32LE(12)));
  assert.ok(index.entries.length > 10);
  for (const [file] of index.entries) {
    assert.match(file, /^[a-z/-]+\.js$/, file);
    assert.ok(fs.existsSync(path.join(pkg, 'lib', file)), file);
  }
});

test('a damaged, truncated or foreign cache file is never used, and is written anew', () => {
  const pkg = packageCopy();
  const dir = path.join(tmp, 'cache-c');
  start(pkg, dir);
  const file = path.join(dir, cacheFiles(dir)[0]);
  const good = fs.readFileSync(file);
  const damaged = Buffer.from(good);
  damaged[Math.floor(damaged.length * 0.7)] ^= 0x5a; // inside a module's compiled code
  const cases = {
    damaged,
    truncated: good.subarray(0, good.length - 100),
    garbage: Buffer.alloc(good.length, 0x41),
    empty: Buffer.alloc(0),
  };
  for (const [what, bytes] of Object.entries(cases)) {
    fs.writeFileSync(file, bytes);
    const r = start(pkg, dir);
    assert.equal(r.stats.hits, 0, `${what}: ${JSON.stringify(r.stats)}`);
    assert.ok(r.same, what);
    const again = start(pkg, dir);
    assert.equal(again.stats.misses, 0, `${what}, rewritten: ${JSON.stringify(again.stats)}`);
  }
});

// Replaces the first long comment line of `file` with code of the same length that marks the
// process, keeping the file's modification time: only the source's content tells the change.
function editSameSize(file) {
  const text = fs.readFileSync(file, 'utf8');
  const line = text.split('\n').find((l) => l.startsWith('// ') && l.length >= 40);
  const code = 'globalThis.heapLabelsEdited = 1;';
  const edited = text.replace(line, code + ' '.repeat(line.length - code.length));
  assert.equal(Buffer.byteLength(edited), Buffer.byteLength(text));
  fs.writeFileSync(file, edited);
  fs.utimesSync(file, MTIME, MTIME);
  assert.equal(fs.statSync(file).mtimeMs, MTIME * 1000);
  return text;
}

test('a module whose source changed runs from its source, even at the same size and modification time', () => {
  const pkg = packageCopy();
  const dir = path.join(tmp, 'cache-d');
  assert.equal(start(pkg, dir).edited, false);
  const labels = path.join(pkg, 'lib/labels.js');
  const text = editSameSize(labels);
  const r = start(pkg, dir);
  assert.equal(r.edited, true, 'the changed source is what ran');
  assert.equal(r.stats.misses, 1, JSON.stringify(r.stats));
  assert.ok(r.stats.hits > 10);
  assert.equal(start(pkg, dir).edited, true, 'and the cache written after it holds the new code');
  // A module that fails to compile fails as without a cache.
  fs.writeFileSync(labels, `${text}\n}`);
  const broken = spawnSync(process.execPath, ['-r', path.join(pkg, 'lib/entries/register.js'), '-e', '0'], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '', HEAP_LABELS_CODE_CACHE: dir },
  });
  assert.equal(broken.status, 0, 'the preload never takes the app down');
  assert.match(broken.stderr, /not profiling.*Unexpected token/);
});

test('two copies of the package sharing a cache directory each keep their own cache', () => {
  const a = packageCopy();
  const b = packageCopy();
  const dir = path.join(tmp, 'cache-shared');
  start(a, dir);
  editSameSize(path.join(b, 'lib/labels.js'));
  const r = start(b, dir);
  assert.equal(r.edited, true, "the copy runs its own code, not the other copy's");
  assert.equal(r.stats.hits, 0, JSON.stringify(r.stats));
  assert.equal(cacheFiles(dir).length, 2, 'one file per copy');
  assert.equal(start(a, dir).edited, false);
  // So do runtime flags: V8 would not reject every flag's cache itself.
  start(a, dir, { env: { NODE_OPTIONS: '--max-old-space-size=900' } });
  assert.equal(cacheFiles(dir).length, 3);
  const key = codeCache.runtimeKey({ version: '1.2.3', lib: '/x/lib' });
  for (const part of ['1.2.3', '/x/lib', process.execPath, process.version, process.versions.v8]) {
    assert.ok(key.split('\n').includes(part), `${part} in the key`);
  }
});

test('an app that changes V8 flags during start-up gets no cache it would reject at every start', () => {
  const pkg = packageCopy();
  const dir = path.join(tmp, 'cache-flags');
  const r = start(pkg, dir, { waitMs: 1500, env: { SET_FLAGS: '--max-lazy' } });
  assert.equal(r.stats.flagsChanged, true, JSON.stringify(r.stats));
  assert.equal(r.stats.written, false);
  assert.deepEqual(cacheFiles(dir), []);
  const plain = start(pkg, dir, { waitMs: 1500 });
  assert.equal(plain.stats.flagsChanged, false);
  assert.equal(plain.stats.written, true);
});

test('a preload that sets V8 flags before heap-labels on some starts gets a cache per setting, none rejected', () => {
  const pkg = packageCopy();
  const dir = path.join(tmp, 'cache-earlier-flags');
  const before = path.join(tmp, 'earlier-preload.js');
  fs.writeFileSync(before, "if (process.env.EARLIER_FLAGS) require('node:v8').setFlagsFromString(process.env.EARLIER_FLAGS);\n");
  const flags = { EARLIER_FLAGS: '--stack-size=500' };
  for (const env of [flags, {}]) {
    const r = start(pkg, dir, { before, env, waitMs: 1500 });
    assert.equal(r.stats.hits, 0, JSON.stringify(r.stats));
    assert.equal(r.stats.flagsChanged, false, 'set before the loader started: the flags hold during start-up');
    assert.equal(r.stats.written, true, JSON.stringify(r.stats));
  }
  assert.equal(cacheFiles(dir).length, 2, 'one file per setting of the flags');
  for (const env of [flags, {}]) {
    const r = start(pkg, dir, { before, env, waitMs: 1500 });
    assert.equal(r.stats.rejected, 0, `no switch rejects the other setting's data: ${JSON.stringify(r.stats)}`);
    assert.equal(r.stats.misses, 0, JSON.stringify(r.stats));
    assert.ok(r.stats.hits > 10, JSON.stringify(r.stats));
    assert.equal(r.stats.written, false);
  }
});

test('no cache under coverage: V8 counts blocks only of code it compiles', () => {
  const pkg = packageCopy();
  const dir = path.join(tmp, 'cache-coverage');
  const coverage = path.join(tmp, 'coverage');
  const r = start(pkg, dir, { env: { NODE_V8_COVERAGE: coverage } });
  assert.equal(r.stats, undefined);
  assert.ok(r.same);
  assert.equal(fs.existsSync(dir), false);
});

test('loaded with --import, the preload uses the cache too', () => {
  const pkg = packageCopy();
  const dir = path.join(tmp, 'cache-import');
  start(pkg, dir, { how: '--import' });
  const r = start(pkg, dir, { how: '--import' });
  assert.ok(r.same, 'the app gets the preload instance');
  assert.equal(r.stats.misses, 0, JSON.stringify(r.stats));
  assert.ok(r.stats.hits > 10, JSON.stringify(r.stats));
});

test('an ES module app importing the preload and the library gets one profiling instance', () => {
  const pkg = packageCopy();
  const dir = path.join(tmp, 'cache-esm');
  // Node.js's ESM loader registers every CommonJS file of the import graph (lib/index.js among them)
  // in require.cache before it runs any: the preload must not take such a module as loaded.
  const app = path.join(pkg, 'app.mjs');
  fs.writeFileSync(
    app,
    `import ${JSON.stringify(path.join(pkg, 'lib/register.mjs'))};\n` +
      `import { setHeapProfileLabels, getHeapProfileLabels } from ${JSON.stringify(path.join(pkg, 'lib/index.mjs'))};\n` +
      "setHeapProfileLabels({ route: '/esm' });\n" +
      'process.stdout.write(JSON.stringify(getHeapProfileLabels()));\n',
  );
  for (let i = 0; i < 2; i++) {
    const r = spawnSync(process.execPath, [app], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '', HEAP_LABELS_CODE_CACHE: dir },
      timeout: 60_000,
    });
    assert.equal(r.status, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /not profiling/, `start ${i + 1}`);
    assert.deepEqual(JSON.parse(r.stdout), { route: '/esm' });
  }
  assert.equal(cacheFiles(dir).length, 1, 'the cache is used');
});

test("under a Jest-style module registry the preload loads through that registry, not Node.js's", () => {
  const dir = path.join(tmp, 'cache-sandbox');
  const r = runFixture('instances.js', { args: ['sandbox-preload'], env: { NODE_OPTIONS: '', HEAP_LABELS_CODE_CACHE: dir } });
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /not profiling/);
  assert.deepEqual(r.json.inNode, [], "no module of the package in Node.js's registry");
  assert.ok(r.json.inSandbox.includes(path.join('lib', 'labels.js')), "the sandbox's registry holds them");
  assert.equal(fs.existsSync(dir), false, 'the cache is not touched');
});

test('a cache directory others can write to, or not a directory, is not used, and the operator is told', () => {
  const pkg = packageCopy();
  const open = path.join(tmp, 'cache-open');
  fs.mkdirSync(open, { mode: 0o700 });
  fs.chmodSync(open, 0o777);
  const r = start(pkg, open);
  assert.equal(r.stats, undefined);
  assert.match(r.stderr, /HEAP_LABELS_CODE_CACHE: .*cache-open writable by others \(mode 777\): the code cache is not used/);
  assert.deepEqual(cacheFiles(open), []);
  const notDir = path.join(tmp, 'cache-file');
  fs.writeFileSync(notDir, '');
  assert.match(start(pkg, notDir).stderr, /is not a directory: the code cache is not used/);
  const link = path.join(tmp, 'cache-link');
  fs.mkdirSync(path.join(tmp, 'cache-target'), { mode: 0o700 });
  fs.symlinkSync(path.join(tmp, 'cache-target'), link);
  assert.match(start(pkg, link).stderr, /cache-link is not a directory/);
  assert.match(start(pkg, 'relative/dir').stderr, /HEAP_LABELS_CODE_CACHE="relative\/dir" is neither an absolute directory nor off/);
  const off = start(pkg, 'off');
  assert.equal(off.stats, undefined);
  assert.doesNotMatch(off.stderr, /code cache/);
  assert.ok(off.same);
});

test('a cache file of another runtime or package version is not offered to V8', () => {
  const entries = new Map([['labels.js', { size: 10, crc: 0xfedcba98, data: Buffer.from('compiled') }]]);
  const bytes = codeCache.serialize(entries, 'key A', crc32);
  assert.deepEqual([...codeCache.parse(bytes, 'key A', crc32).keys()], ['labels.js']);
  assert.equal(codeCache.parse(bytes, 'key B', crc32), undefined);
  // Every single-byte change of the header, index or data is caught.
  for (let i = 0; i < bytes.length; i++) {
    const changed = Buffer.from(bytes);
    changed[i] ^= 0x01;
    assert.equal(codeCache.parse(changed, 'key A', crc32), undefined, `byte ${i}`);
  }
});

test('a directory keeps at most MAX_FILES cache files, the most recently written', () => {
  const dir = path.join(tmp, 'cache-prune');
  fs.mkdirSync(dir, { mode: 0o700 });
  const old = new Date(Date.now() - 3600_000);
  for (let i = 0; i < codeCache.MAX_FILES + 4; i++) {
    const file = path.join(dir, `code-cache-${i.toString(16).padStart(8, '0')}.bin`);
    fs.writeFileSync(file, 'x');
    fs.utimesSync(file, old, old);
  }
  fs.writeFileSync(path.join(dir, 'unrelated.bin'), 'kept');
  const cache = codeCache.open(dir, { version: '0.0.0-test', lib: dir }, crc32);
  assert.ok(codeCache.write(cache, new Map(), crc32));
  const left = cacheFiles(dir);
  assert.equal(left.filter((n) => n.startsWith('code-cache-')).length, codeCache.MAX_FILES);
  assert.ok(left.includes(path.basename(cache.file)), 'the new file stays');
  assert.ok(left.includes('unrelated.bin'), 'files of other names are left alone');
});

test("a temporary file of another process with this pid (another container's) is neither taken nor removed", () => {
  const dir = path.join(tmp, 'cache-temp-names');
  fs.mkdirSync(dir, { mode: 0o700 });
  const cache = codeCache.open(dir, { version: '0.0.0-test', lib: dir }, crc32);
  const theirs = `${cache.file}.${process.pid}.0000abcd.tmp`;
  fs.writeFileSync(theirs, 'being written by the other process');
  // Drawn the same random part, this write cannot make its temporary file and gives up.
  const random = Math.random;
  Math.random = () => 0xabcd / 0x100000000;
  try {
    assert.equal(codeCache.write(cache, new Map(), crc32), false);
  } finally {
    Math.random = random;
  }
  assert.equal(fs.readFileSync(theirs, 'utf8'), 'being written by the other process');
  assert.equal(fs.existsSync(cache.file), false);
  // Any other draw writes beside it.
  assert.ok(codeCache.write(cache, new Map(), crc32));
  assert.ok(fs.existsSync(cache.file));
  assert.equal(fs.readFileSync(theirs, 'utf8'), 'being written by the other process');
});
