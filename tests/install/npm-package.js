'use strict';
// From the packed npm tarball to a labeled per-route profile, on a machine without Rust: what a
// user does. In a scratch directory, with cargo and rustc off PATH, `npm install <tarball>` (with the
// labeled runtime release's own npm when there is one), then require and import the package on
// every stock runtime and on the unpacked labeled runtime, where a node:http app gets its per-route
// heap table. Also: the tarball's file list and size, and the message and the install when no
// prebuilt addon matches.
//
// Run by scripts/test.d/46-npm-package.sh (not a *.test.js: it runs once, not per runtime), which
// hands it:
//   HEAP_LABELS_PACKAGE_TGZ      the `npm pack` tarball
//   HEAP_LABELS_STOCK_NODES      the stock runtimes' node binaries, space-separated, primary first
//   HEAP_LABELS_RELEASE_TARBALL  the labeled runtime release (build.sh --package), when built

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const tgz = process.env.HEAP_LABELS_PACKAGE_TGZ;
const stockNodes = (process.env.HEAP_LABELS_STOCK_NODES || '').split(/\s+/).filter(Boolean);
const releaseTarball = process.env.HEAP_LABELS_RELEASE_TARBALL;
const noPackage = !tgz && 'set HEAP_LABELS_PACKAGE_TGZ (scripts/test.d/46-npm-package.sh does)';
const noRelease = !releaseTarball && 'no labeled runtime release: the patched runtime is not built here';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-npm-package-'));
test.after(() => fs.rmSync(scratch, { recursive: true, force: true }));

// PATH without any directory that holds cargo or rustc (rustup's ~/.cargo/bin, /usr/bin on a
// machine with Debian's rustc...): such a directory is replaced by a folder of links to its other
// programs, so git, tar, sh and the rest stay reachable.
function pathWithoutRust() {
  const dirs = [];
  for (const dir of (process.env.PATH || '').split(':').filter(Boolean)) {
    const rusty = ['cargo', 'rustc', 'rustup'].some((p) => fs.existsSync(path.join(dir, p)));
    if (!rusty) {
      dirs.push(dir);
      continue;
    }
    const shadow = fs.mkdtempSync(path.join(scratch, 'path-'));
    for (const name of fs.readdirSync(dir)) {
      if (['cargo', 'rustc', 'rustup', 'rustdoc', 'cargo-clippy', 'cargo-fmt', 'rustfmt'].includes(name)) continue;
      fs.symlinkSync(path.join(dir, name), path.join(shadow, name));
    }
    dirs.push(shadow);
  }
  return dirs.join(':');
}

function run(cmd, args, { cwd, pathPrefix = [], env = {} } = {}) {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    timeout: 300_000,
    env: { ...process.env, NODE_OPTIONS: '', PATH: [...pathPrefix, noRust].join(':'), ...env },
  });
  return r;
}

function lastJson(stdout) {
  return JSON.parse(stdout.trim().split('\n').pop());
}

const noRust = pathWithoutRust();
const abiOf = (node) => spawnSync(node, ['-p', 'process.versions.modules'], { encoding: 'utf8' }).stdout.trim();

test('the tarball carries one prebuilt addon per supported ABI, the sources of a source build, and no build leftovers', { skip: noPackage }, (t) => {
  const list = spawnSync('tar', ['-tzf', tgz], { encoding: 'utf8' }).stdout.trim().split('\n');
  const prebuilds = list.filter((f) => f.startsWith('package/prebuilds/')).sort();
  const abis = stockNodes.map(abiOf);
  assert.ok(abis.length >= 1, 'HEAP_LABELS_STOCK_NODES names the stock runtimes');
  assert.deepEqual(prebuilds, abis.map((abi) => `package/prebuilds/linux-x64/node.abi${abi}.glibc.node`).sort());
  for (const f of ['package/package.json', 'package/lib/index.js', 'package/lib/index.mjs', 'package/lib/native.js',
    'package/tools/patched-node/versions.env', 'package/scripts/install.js', 'package/scripts/build.js',
    'package/scripts/native-types.js',
    'package/Cargo.toml', 'package/Cargo.lock', 'package/build.rs', 'package/src/lib.rs', 'package/core/src/lib.rs',
    'package/cpp/patched_api.cc']) {
    assert.ok(list.includes(f), `${f} is in the tarball`);
  }
  const leftovers = list.filter((f) =>
    /^package\/(target|build|tests|benchmark|demo|docs|docker|v8-patches|node_modules|\.ci|dist)\//.test(f) ||
    (f.startsWith('package/tools/') && f !== 'package/tools/patched-node/versions.env') ||
    /\.(o|a|rlib|rmeta|d)$/.test(f));
  assert.deepEqual(leftovers, []);
  // The addons name no directory of the building machine (the checkout, cargo's registry).
  const unpackedDir = fs.mkdtempSync(path.join(scratch, 'unpacked-'));
  assert.equal(spawnSync('tar', ['-xzf', tgz, '-C', unpackedDir]).status, 0);
  const machinePaths = [path.resolve(__dirname, '..', '..'), path.join(os.homedir(), '.cargo')];
  for (const file of prebuilds) {
    const bytes = fs.readFileSync(path.join(unpackedDir, file)).toString('latin1');
    for (const p of machinePaths) assert.ok(!bytes.includes(p), `${file} names ${p}`);
  }
  const packed = fs.statSync(tgz).size;
  const unpacked = list.length;
  t.diagnostic(`${path.basename(tgz)}: ${(packed / 1024).toFixed(0)} KiB packed, ${unpacked} files`);
  // Three stripped addons of about 1 MiB each, compressed, and the sources: a few MiB at most.
  assert.ok(packed < 4 * 1024 * 1024, `${packed} bytes`);
});

// The installing npm: the labeled runtime release's own (npm runs on it), else the system's npm on
// the primary stock runtime.
let release;
function unpackRelease() {
  if (release || !releaseTarball) return release;
  // "Anywhere": a directory whose path the building machine never saw.
  const where = fs.mkdtempSync(path.join(scratch, 'opt-'));
  const r = spawnSync('tar', ['-xJf', releaseTarball, '-C', where], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const [top] = fs.readdirSync(where);
  release = path.join(where, top);
  return release;
}

let app;
function installedApp() {
  if (app) return app;
  app = fs.mkdtempSync(path.join(scratch, 'app-'));
  fs.writeFileSync(path.join(app, 'package.json'), '{ "name": "user-app", "private": true }\n');
  const rel = unpackRelease();
  const prefix = rel ? [path.join(rel, 'bin')] : [path.dirname(stockNodes[0])];
  const rust = run('sh', ['-c', 'command -v cargo || command -v rustc'], { pathPrefix: prefix });
  assert.notEqual(rust.status, 0, `cargo/rustc still on PATH: ${rust.stdout}`);
  const r = run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=warn', tgz], { cwd: app, pathPrefix: prefix });
  assert.equal(r.status, 0, `npm install failed:\n${r.stdout}\n${r.stderr}`);
  assert.doesNotMatch(r.stderr, /building it from source|no prebuilt addon/, 'a prebuilt addon matched');
  // The user's code lives in the user's directory and resolves the installed package from there
  // (from this checkout, 'heap-labels' would name the checkout itself).
  for (const file of ['load.mjs', 'route-app.js']) {
    fs.copyFileSync(path.join(__dirname, 'fixtures', file), path.join(app, file));
  }
  return app;
}

test('npm install of the tarball, without Rust, then require and import on every stock runtime', { skip: noPackage }, () => {
  const dir = installedApp();
  for (const node of stockNodes) {
    const r = run(node, [path.join(dir, 'load.mjs')], { cwd: dir });
    assert.equal(r.status, 0, `${node}:\n${r.stderr}`);
    const out = lastJson(r.stdout);
    assert.equal(out.same, true, 'require and import give one instance');
    const want = path.join(dir, 'node_modules', 'heap-labels', 'prebuilds', 'linux-x64', `node.abi${abiOf(node)}.glibc.node`);
    assert.equal(fs.realpathSync(out.addon), fs.realpathSync(want));
    assert.equal(out.capabilities.sampleLabels, false, 'a stock runtime has no per-sample labels');
    assert.ok(out.capabilities.reasons.some((r) => r.startsWith('sampleLabels:')));
  }
});

test('the unpacked labeled runtime release: npm runs on it, the installed package labels a per-route profile', { skip: noPackage || noRelease }, (t) => {
  const dir = installedApp();
  const node = path.join(unpackRelease(), 'bin', 'node');
  const npm = run('npm', ['--version'], { pathPrefix: [path.dirname(node)] });
  assert.equal(npm.status, 0, npm.stderr);
  const load = run(node, [path.join(dir, 'load.mjs')], { cwd: dir });
  assert.equal(load.status, 0, load.stderr);
  const loaded = lastJson(load.stdout);
  assert.equal(loaded.same, true);
  const want = path.join(dir, 'node_modules', 'heap-labels', 'prebuilds', 'linux-x64', `node.abi${abiOf(node)}.glibc.node`);
  assert.equal(fs.realpathSync(loaded.addon), fs.realpathSync(want), 'the stock line\'s prebuilt addon');
  const r = run(node, [path.join(dir, 'route-app.js')], { cwd: dir });
  assert.equal(r.status, 0, r.stderr);
  const out = lastJson(r.stdout);
  assert.equal(fs.realpathSync(out.addon), fs.realpathSync(want));
  assert.equal(out.capabilities.sampleLabels, true, out.capabilities.reasons.join('\n'));
  assert.equal(out.capabilities.asyncContextFrame, true);
  t.diagnostic(`bytes by route on ${path.basename(path.dirname(path.dirname(node)))}: ${JSON.stringify(out.routes)}`);
  const { '/big': big, '/small': small } = out.routes;
  assert.ok(big > 0 && small > 0, JSON.stringify(out.routes));
  // /big keeps 40x the objects of /small: its share must dominate the labeled heap.
  assert.ok(big > 5 * small, JSON.stringify(out.routes));
});

test('no prebuilt addon for the runtime and no cargo: install succeeds, require() names platform, ABI and the way out', { skip: noPackage }, () => {
  const dir = installedApp();
  // A copy of the installed tree whose package lacks the primary runtime's prebuild.
  const copy = fs.mkdtempSync(path.join(scratch, 'app-noprebuild-'));
  fs.cpSync(dir, copy, { recursive: true, verbatimSymlinks: true });
  const node = stockNodes[0];
  const abi = abiOf(node);
  fs.rmSync(path.join(copy, 'node_modules', 'heap-labels', 'prebuilds', 'linux-x64', `node.abi${abi}.glibc.node`));
  // npm's install hook (npm rebuild runs it) must not fail without a prebuild and without cargo.
  const rebuild = run('npm', ['rebuild', 'heap-labels', '--foreground-scripts'], { cwd: copy, pathPrefix: [path.dirname(node)] });
  assert.equal(rebuild.status, 0, `${rebuild.stdout}\n${rebuild.stderr}`);
  assert.match(`${rebuild.stdout}${rebuild.stderr}`, /no prebuilt addon for linux-x64.*no cargo on PATH/);
  const r = run(node, ['-e', "require('heap-labels')"], { cwd: copy });
  assert.notEqual(r.status, 0);
  const message = r.stderr.split('\n').find((l) => l.includes('heap-labels: no native addon'));
  assert.ok(message, r.stderr);
  assert.match(message, new RegExp(`no native addon for linux-x64 glibc, Node\\.js ABI ${abi} `));
  const others = stockNodes.slice(1).map(abiOf);
  for (const other of others) assert.ok(message.includes(other), `the carried ABI ${other} is named: ${message}`);
  assert.match(message, /rustup\.rs/);
  assert.match(message, /npm rebuild heap-labels/);
});
