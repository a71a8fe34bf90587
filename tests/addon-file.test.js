'use strict';
// Loading the addon file: a damaged one (cut short, as a partial download or a full disk leaves it)
// is refused with one line before dlopen() maps it, by the library and by the preload, and the app
// runs on; HEAP_LABELS_PREBUILD is a directory of the working directory and replaces the package's
// own addons. Every case runs a copy of the package installed in a temporary node_modules/, in a
// child process, with the real addon built for this runtime (or a damaged copy of it).

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { root, installPackageCopy, addonInPrebuilds: addonFileName, childEnv } = require('./helpers');

const whole = fs.readFileSync(require(path.join(root, 'lib', 'native')).addonPath);
// prebuilds/<platform>-<arch>/node.abi<N>.<libc>.node, as node-gyp-build looks it up.
const addonInPrebuilds = addonFileName();

const APP = "console.log('app output', [1, 2, 3].map((n) => n * 2).join(','));\n";
const LIBRARY_APP =
  "let outcome;\ntry { require('heap-labels'); outcome = 'loaded'; } catch (err) { outcome = JSON.stringify(err.message); }\n" +
  "console.log('library', outcome);\n" +
  APP;

// A copy of the ELF file with no section header table (e_shoff, e_shnum, e_shstrndx zeroed), as
// `sstrip` leaves it: dlopen() does not need one, so only the program headers tell its extent.
function withoutSectionHeaders(elf) {
  const copy = Buffer.from(elf);
  assert.equal(copy[4], 2, 'a 64-bit ELF file');
  copy.writeBigUInt64LE(0n, 40);
  copy.writeUInt16LE(0, 60);
  copy.writeUInt16LE(0, 62);
  return copy;
}

// A copy of the package with `addon` as its prebuilt addon, and the apps beside it.
function installPackage(t, addon) {
  const { dir } = installPackageCopy(t, addon);
  fs.writeFileSync(path.join(dir, 'app.js'), APP);
  fs.writeFileSync(path.join(dir, 'app.mjs'), APP);
  fs.writeFileSync(path.join(dir, 'library-app.js'), LIBRARY_APP);
  return dir;
}

function writeAddon(dir, bytes) {
  const file = path.join(dir, addonInPrebuilds);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, bytes, { mode: 0o755 });
  return file;
}

function run(dir, args, env = {}) {
  return spawnSync(process.execPath, args, {
    cwd: dir,
    encoding: 'utf8',
    env: childEnv({ HEAP_LABELS_SIGNAL: 'off', HEAP_LABELS_NEAR_HEAP_LIMIT: '0', ...env }),
    timeout: 60_000,
  });
}

// The process ended on its own with status 0 (no SIGBUS), the app printed all it prints, and
// stderr holds exactly one line; that line is returned.
function assertRanWithOneLine(r, what) {
  assert.equal(r.signal, null, `${what}: killed by ${r.signal}`);
  assert.equal(r.status, 0, `${what}: ${r.stderr}`);
  assert.match(r.stdout, /^app output 2,4,6$/m, what);
  const lines = r.stderr.split('\n').filter(Boolean);
  assert.equal(lines.length, 1, `${what}: one line on stderr:\n${r.stderr}`);
  return lines[0];
}

const DAMAGED = [
  ['0 bytes', Buffer.alloc(0), /cut short: 0 bytes, but its ELF identification/],
  ['63 bytes', whole.subarray(0, 63), /cut short: 63 bytes, but its ELF header/],
  ['its ELF header only (64 bytes)', whole.subarray(0, 64), /cut short: 64 bytes/],
  ['100,000 bytes', whole.subarray(0, 100_000), /cut short: 100000 bytes/],
  ['822,480 bytes', whole.subarray(0, 822_480), /cut short: 822480 bytes/],
  ['all but its last byte', whole.subarray(0, whole.length - 1), new RegExp(`cut short: ${whole.length - 1} bytes`)],
  // Without the section header table (which linkers write last) the program headers catch it.
  ['100,000 bytes of a copy without section headers', withoutSectionHeaders(whole).subarray(0, 100_000),
    /cut short: 100000 bytes, but its segment \d+ \(program header\)/],
];

for (const [name, bytes, problem] of DAMAGED) {
  test(`27.2: an addon file cut to ${name}: the library throws one line, the preload reports one and the app runs`, (t) => {
    const dir = installPackage(t, bytes);
    const file = fs.realpathSync(path.join(dir, 'node_modules', 'heap-labels', addonInPrebuilds));

    const library = run(dir, ['library-app.js']);
    assert.equal(library.signal, null, `library: killed by ${library.signal}`);
    assert.equal(library.status, 0, library.stderr);
    assert.match(library.stdout, /^app output 2,4,6$/m);
    const message = JSON.parse(/^library (.*)$/m.exec(library.stdout)[1]);
    assert.ok(message.startsWith(`heap-labels: the native addon ${file} cannot be loaded: `), message);
    assert.match(message, problem);
    assert.match(message, /Way out: install the package again/);
    assert.doesNotMatch(message, /\n/);

    const preload = assertRanWithOneLine(run(dir, ['-r', 'heap-labels/register', 'app.js']), 'preload');
    assert.ok(preload.startsWith('heap-labels: not profiling, the app runs without heap profiling: the native addon '), preload);
    assert.match(preload, problem);
  });
}

test('27.2: the ESM preload and the override directory report a damaged addon in one line too', (t) => {
  const dir = installPackage(t, whole.subarray(0, 822_480));
  const esm = assertRanWithOneLine(run(dir, ['--import', 'heap-labels/register', 'app.mjs']), 'ESM preload');
  assert.match(esm, /not profiling.*cut short: 822480 bytes/);

  // The package's own addon is whole; the one HEAP_LABELS_PREBUILD names is not.
  writeAddon(path.join(dir, 'node_modules', 'heap-labels'), whole);
  writeAddon(path.join(dir, 'override'), whole.subarray(0, 100_000));
  const override = assertRanWithOneLine(
    run(dir, ['-r', 'heap-labels/register', 'app.js'], { HEAP_LABELS_PREBUILD: path.join(dir, 'override') }),
    'override',
  );
  assert.match(override, /cut short: 100000 bytes.*Way out: replace it in HEAP_LABELS_PREBUILD=/);
});

test('27.2: whole addon files load, with or without section headers', (t) => {
  for (const [name, bytes] of [['the built file', whole], ['the file without section headers', withoutSectionHeaders(whole)]]) {
    const dir = installPackage(t, bytes);
    const r = run(dir, ['library-app.js']);
    assert.equal(r.status, 0, `${name}: ${r.stderr}`);
    assert.match(r.stdout, /^library loaded$/m, name);
    const preload = run(dir, ['-r', 'heap-labels/register', 'app.js']);
    assert.equal(preload.status, 0, `${name}: ${preload.stderr}`);
    assert.doesNotMatch(preload.stderr, /not profiling/, name);
  }
});

test('27.9: a relative HEAP_LABELS_PREBUILD is a directory of the working directory, and replaces the package\'s addons', (t) => {
  const dir = installPackage(t, whole);
  const chosen = fs.realpathSync(writeAddon(path.join(dir, 'mine'), whole));
  const r = run(dir, ['-p', "require('heap-labels').stats().addon"], { HEAP_LABELS_PREBUILD: 'mine' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(fs.realpathSync(r.stdout.trim()), chosen);
});

test('27.9: an HEAP_LABELS_PREBUILD with no addon is reported in one line, naming the directory searched', (t) => {
  const dir = installPackage(t, whole);
  const preload = assertRanWithOneLine(
    run(dir, ['-r', 'heap-labels/register', 'app.js'], { HEAP_LABELS_PREBUILD: 'nowhere' }),
    'preload',
  );
  assert.doesNotMatch(preload, /Require stack|Cannot find module/);
  assert.ok(preload.includes(`HEAP_LABELS_PREBUILD=${path.join(fs.realpathSync(dir), 'nowhere')}`), preload);
  assert.match(preload, /no native addon for/);
});

test('27.2: the install hook takes a damaged prebuilt addon for none, so that a source build replaces it', (t) => {
  const dir = installPackage(t, whole.subarray(0, 822_480));
  const pkg = path.join(dir, 'node_modules', 'heap-labels');
  fs.mkdirSync(path.join(pkg, 'scripts'));
  fs.copyFileSync(path.join(root, 'scripts', 'install.js'), path.join(pkg, 'scripts', 'install.js'));
  // No cargo on PATH: the hook says what it found and that nothing replaces it.
  const r = run(pkg, ['scripts/install.js'], { PATH: path.dirname(process.execPath) });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /heap-labels install: the addon \S+ is damaged: it is cut short: 822480 bytes/);
  assert.match(r.stderr, /no prebuilt addon for .* and no cargo on PATH/);
});
