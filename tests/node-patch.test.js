'use strict';
// The recipe's node:v8 patch for this runtime's line (tools/patched-node/node-patches/<major>/),
// applied to the lib/v8.js that this very release ships and loaded the way Node.js loads a built-in,
// on the stock runtime of that line: the patch's code runs against the release's real internals
// (primordials, validators, its own exports), from an install prefix with and without the bundled
// heap-labels package. This runs every line's variant, including 24's and 26's, whose labeled
// runtimes are not built here; tools/patched-node/check-node-patches.sh checks that each series
// applies, and tests/v8-api.test.js tests the built patched runtime itself.

const { test, describe } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const hl = require('..');

const root = path.join(__dirname, '..');
const major = process.versions.node.split('.')[0];
const seriesDir = path.join(root, 'tools', 'patched-node', 'node-patches', major);
const patch = fs.existsSync(seriesDir)
  ? fs.readdirSync(seriesDir).filter((f) => f.endsWith('.patch')).map((f) => path.join(seriesDir, f))
    .find((f) => /^--- a\/lib\/v8\.js$/m.test(fs.readFileSync(f, 'utf8')))
  : undefined;
const patchedRuntime = !hl.capabilities().reasons.some((r) => r.startsWith('sampleLabels: this runtime'));
const skip =
  patchedRuntime ? 'this is the labeled runtime: its lib/v8.js carries the patch already (tests/v8-api.test.js)' :
    !patch && `the recipe has no node:v8 patch for Node.js ${major} (tools/patched-node/node-patches/${major}/)`;

// A scratch install prefix beside this runtime's (a hard link of its binary needs the same file
// system): bin/node, and the patched lib/v8.js.
function makePrefix(t) {
  const real = fs.realpathSync(process.execPath);
  const base = fs.mkdtempSync(path.join(path.dirname(path.dirname(real)), '..', '.node-patch-'));
  t.after(() => fs.rmSync(base, { recursive: true, force: true }));
  fs.mkdirSync(path.join(base, 'bin'));
  const node = path.join(base, 'bin', 'node');
  try {
    fs.linkSync(real, node);
  } catch {
    fs.copyFileSync(real, node);
    fs.chmodSync(node, 0o755);
  }
  const src = path.join(base, 'src');
  const extract = spawnSync(process.execPath,
    ['--expose-internals', '--no-warnings', path.join(root, 'tools', 'patched-node', 'builtin-sources.js'), src, 'lib/v8.js'],
    { encoding: 'utf8' });
  assert.equal(extract.status, 0, extract.stderr);
  const apply = spawnSync('git', ['apply', '--include=lib/v8.js', patch], { cwd: src, encoding: 'utf8' });
  assert.equal(apply.status, 0, `${path.basename(patch)} does not apply to Node.js ${process.version}'s lib/v8.js:\n${apply.stderr}`);
  return { base, node, v8js: path.join(src, 'lib', 'v8.js') };
}

function load(prefix) {
  const r = spawnSync(prefix.node,
    ['--expose-internals', '--no-warnings', path.join(__dirname, 'fixtures', 'node-patch-v8.js'), prefix.v8js],
    { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

describe(`the recipe's node:v8 patch on Node.js ${process.version}'s own lib/v8.js`, { skip }, () => {
  test('with the bundled package: the three functions forward to it; every other export stays', (t) => {
    const prefix = makePrefix(t);
    const modules = path.join(prefix.base, 'lib', 'node_modules');
    fs.mkdirSync(modules, { recursive: true });
    fs.symlinkSync(root, path.join(modules, 'heap-labels'), 'dir');
    const r = load(prefix);
    assert.deepEqual(r.types, { withHeapProfileLabels: 'function', setHeapProfileLabels: 'function', startHeapProfile: 'function' });
    assert.deepEqual(r.otherKeys, r.stockOtherKeys);
    assert.equal(r.withValue, 42);
    assert.equal(r.kept, 2000);
    assert.ok(r.profileSamples > 0, 'the labeled session sampled');
    assert.ok(r.sampleHasLabels);
    assert.equal(r.stopType, 'string', "stop() returns the profile's JSON text, as Node.js' own handle does");
    assert.equal(r.secondStop, 'undefined');
    assert.equal(r.assignmentReplaces, true);
  });

  test("without the package: no label functions, and startHeapProfile is exactly this release's own", (t) => {
    const r = load(makePrefix(t));
    assert.equal(r.types.withHeapProfileLabels, 'undefined');
    assert.equal(r.types.setHeapProfileLabels, 'undefined');
    // Node.js 26 has a startHeapProfile of its own (kept); 22 and 24 have none (still none).
    assert.equal(r.types.startHeapProfile, r.stockStartHeapProfile);
    if (r.stockStartHeapProfile === 'function') {
      assert.notEqual(r.handleClass, 'HeapProfileHandle');
      assert.equal(r.stopType, 'string');
      assert.equal(r.secondStop, 'undefined');
    }
    assert.deepEqual(r.otherKeys, r.stockOtherKeys);
    assert.equal(r.assignmentReplaces, true);
  });
});
