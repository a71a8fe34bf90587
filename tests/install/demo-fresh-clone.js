'use strict';
// The README's first command on a fresh clone: `git clone` of this repository's HEAD into a scratch
// directory (no node_modules/, no build/, no target/), then demo/run.sh there, with the PATH the test
// run was started with (not the stock runtime's bin first, as the other steps have it) and no npm or
// heap-labels variables of this run. Nothing here builds V8 or Node.js:
//   - `demo/run.sh --no-runtime-build` is the README's `demo/run.sh` that never builds the patched
//     runtime: with the runtime built (the patched-runtime step reuses or builds it), the whole demo
//     on it; without it, status 3 and the way out, before any build;
//   - `demo/run.sh --stock` from a clean clone again: the whole demo on stock Node.js 22.22.2.
// The clone's addon builds with CARGO_TARGET_DIR in the cache ($HEAP_LABELS_CACHE/fresh-clone-target),
// so a run compiles the workspace's own crates only, not its dependencies.
//
// Run by scripts/test.d/52-demo-fresh-clone.sh (not a *.test.js: it runs once, not per runtime),
// which hands it HEAP_LABELS_FRESH_PATH, the PATH the test run was started with.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const repo = path.resolve(__dirname, '..', '..');
const cache = process.env.HEAP_LABELS_CACHE || path.join(os.homedir(), '.cache', 'heap-labels');
const freshPath = process.env.HEAP_LABELS_FRESH_PATH;
const noFreshPath = !freshPath && 'set HEAP_LABELS_FRESH_PATH (scripts/test.d/52-demo-fresh-clone.sh does)';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-fresh-clone-'));
test.after(() => fs.rmSync(scratch, { recursive: true, force: true }));

// The environment of a developer's shell: none of this run's npm_*, NODE_* or HEAP_LABELS_*
// variables but the cache of runtimes (and of the build below).
function freshEnv() {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(npm_|NODE_|HEAP_LABELS_)/i.test(k)),
  );
  return { ...env, PATH: freshPath, HEAP_LABELS_CACHE: cache, CARGO_TARGET_DIR: path.join(cache, 'fresh-clone-target') };
}

function sh(cwd, command, args, timeout = 120_000) {
  const r = spawnSync(command, args, { cwd, encoding: 'utf8', env: freshEnv(), timeout });
  assert.equal(r.error, undefined, `${command} ${args.join(' ')}: ${r.error}`);
  return r;
}

// A demo run: the setup and the demo itself, 3000 requests.
function demo(clone, flag, out) {
  return sh(clone, 'demo/run.sh', [flag, '--requests', '3000', '--out', out], 1_500_000);
}

function assertDemoFiles(out) {
  for (const file of ['heap-labels.pb.gz', 'heap-labels.heapprofile']) {
    assert.ok(fs.statSync(path.join(out, file)).size > 100, `${file} written`);
  }
  JSON.parse(fs.readFileSync(path.join(out, 'heap-labels.heapprofile'), 'utf8'));
}

function patchedRuntimeBuilt() {
  return spawnSync(path.join(repo, 'tools', 'patched-node', 'build.sh'), ['--print-node-path', '--cached-only'], {
    stdio: 'ignore',
  }).status === 0;
}

test('27.5: the README\'s demo/run.sh from a fresh clone: dependencies installed, the demo on the patched runtime or the way to it, then on stock', { skip: noFreshPath }, (t) => {
  const clone = path.join(scratch, 'heap-labels');
  const cloned = sh(scratch, 'git', ['clone', '--quiet', repo, clone]);
  assert.equal(cloned.status, 0, cloned.stderr);
  for (const absent of ['node_modules', 'build', 'target', 'prebuilds']) {
    assert.equal(fs.existsSync(path.join(clone, absent)), false, `a fresh clone has no ${absent}/`);
  }

  const out = path.join(scratch, 'patched-out');
  const r = demo(clone, '--no-runtime-build', out);
  const output = `${r.stdout}\n${r.stderr}`;
  assert.doesNotMatch(output, /Cannot find module/);
  assert.ok(fs.existsSync(path.join(clone, 'node_modules', 'node-gyp-build', 'package.json')), 'the dependencies are installed');
  if (patchedRuntimeBuilt()) {
    assert.equal(r.status, 0, output);
    assert.match(r.stdout, /errors 0/);
    const rows = [...r.stdout.matchAll(/^ {2}(\/\S+)\s+[\d.]+ [KMG]?i?B\s+([\d.]+) %/gm)];
    assert.ok(rows.length >= 2, r.stdout);
    assert.equal(rows[0][1], '/api/search', r.stdout);
    assertDemoFiles(out);
  } else {
    t.diagnostic('the patched runtime is not built here: its demo is checked up to the point where it would build it');
    assert.equal(r.status, 3, output);
    assert.match(r.stderr, /the patched runtime is not built, and --no-runtime-build does not build it/);
    assert.match(r.stderr, /tools\/patched-node\/build\.sh/);
    assert.match(r.stderr, /demo\/run\.sh --stock/);
    assert.doesNotMatch(r.stderr, /building it now/);
  }

  // Back to a fresh clone: the stock demo installs and builds everything it needs again.
  const cleaned = sh(clone, 'git', ['clean', '-xdfq']);
  assert.equal(cleaned.status, 0, cleaned.stderr);
  assert.equal(fs.existsSync(path.join(clone, 'node_modules')), false);
  const stockOut = path.join(scratch, 'stock-out');
  const stock = demo(clone, '--stock', stockOut);
  assert.equal(stock.status, 0, `${stock.stdout}\n${stock.stderr}`);
  assert.match(stock.stdout, /errors 0/);
  assert.match(stock.stdout, /Per-route heap needs the patched runtime/);
  assertDemoFiles(stockOut);
});
