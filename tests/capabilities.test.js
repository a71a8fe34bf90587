'use strict';
// capabilities(): decided at run time, every false with a reason; the ESM entry and the loader.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const { spawnSync } = require('node:child_process');
const { libPath, expectedAsyncContextFrame, root, installPackageCopy, recipeLines, childEnv } = require('./helpers');
const hl = require(libPath);

test('capabilities report versions, ACF and a reason for every false', () => {
  const caps = hl.capabilities();
  assert.deepEqual(Object.keys(caps).sort(), ['allocations', 'asyncContextFrame', 'externalBytes', 'node', 'reasons', 'retainers', 'sampleLabels', 'v8']);
  assert.equal(caps.node, process.versions.node);
  assert.equal(caps.v8, process.versions.v8);
  assert.equal(caps.asyncContextFrame, expectedAsyncContextFrame());
  const falses = ['sampleLabels', 'externalBytes', 'allocations', 'retainers', 'asyncContextFrame'].filter((k) => !caps[k]);
  for (const name of falses) {
    assert.ok(caps.reasons.some((r) => r.startsWith(`${name}:`)), `no reason for ${name}: ${caps.reasons}`);
  }
  assert.equal(caps.reasons.length, falses.length);
  if (!caps.asyncContextFrame) {
    assert.equal(caps.sampleLabels, false, 'sample labels need AsyncContextFrame');
    assert.ok(caps.reasons.some((r) => r.includes('--experimental-async-context-frame')));
  }
});

test('on a stock runtime sampleLabels and externalBytes are false, with the reason and the way out', (t) => {
  const caps = hl.capabilities();
  if (caps.reasons.every((r) => !r.includes('v8_sample_labels_api_version not found'))) {
    t.skip('patched runtime: covered by patched.test.js');
    return;
  }
  assert.equal(caps.sampleLabels, false);
  assert.equal(caps.externalBytes, false);
  const sampleLabels = caps.reasons.find((r) => r.startsWith('sampleLabels:'));
  const externalBytes = caps.reasons.find((r) => r.startsWith('externalBytes:'));
  assert.ok(sampleLabels.includes(process.versions.v8), sampleLabels);
  assert.ok(externalBytes.includes('unlabeled total'), externalBytes);
  for (const reason of [sampleLabels, externalBytes]) {
    assert.ok(reason.includes('node-v<version>-labels-linux-x64.tar.xz'), reason);
    for (const { node, v8 } of recipeLines()) assert.ok(reason.includes(`${node} (V8 ${v8})`), reason);
  }
});

// The patched runtime turns AsyncContextFrame on by default (as Node.js 24 does): no flag is
// needed, and `--no-async-context-frame` turns it, and with it the per-label capabilities, off.
test('AsyncContextFrame is on by default where the runtime knows --async-context-frame', (t) => {
  if (!process.allowedNodeEnvironmentFlags.has('--async-context-frame')) {
    t.skip('this runtime has AsyncContextFrame as an opt-in (--experimental-async-context-frame)');
    return;
  }
  const probe = (...flags) => {
    const r = spawnSync(process.execPath, [...flags, '-e',
      `console.log(JSON.stringify(require(${JSON.stringify(libPath)}).capabilities()))`], {
      encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' },
    });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout);
  };
  const on = probe();
  assert.equal(on.asyncContextFrame, true);
  const off = probe('--no-async-context-frame');
  assert.equal(off.asyncContextFrame, false);
  assert.equal(off.sampleLabels, false);
  assert.equal(off.externalBytes, false);
  assert.ok(off.reasons.some((r) => r.startsWith('asyncContextFrame:') && r.includes('--no-async-context-frame')));
  if (on.sampleLabels) {
    // Patched: the only thing missing is the frame, and each capability says so.
    assert.ok(off.reasons.some((r) => r.startsWith('sampleLabels:') && r.includes('AsyncContextFrame')));
  }
});

test('capabilities are stable across calls', () => {
  assert.deepEqual(hl.capabilities(), hl.capabilities());
});

test('the ESM entry exposes the same single instance', async () => {
  const esm = await import(pathToFileURL(path.join(root, 'lib', 'index.mjs')).href);
  assert.equal(esm.withHeapProfileLabels, hl.withHeapProfileLabels);
  assert.equal(esm.default, hl);
  const labels = esm.withHeapProfileLabels({ via: 'esm' }, () => hl.getHeapProfileLabels());
  assert.equal(labels.via, 'esm');
  assert.equal(hl.withHeapProfileLabels({ via: 'esm' }, esm.getHeapProfileLabels), labels);
});

test('without an addon for this runtime, loading fails with platform, ABI and the way out', (t) => {
  // A copy of the package with no build/ and no prebuilds/.
  const { pkg } = installPackageCopy(t);
  const result = spawnSync(process.execPath, ['-e', `
    try { require(${JSON.stringify(path.join(pkg, 'lib', 'index.js'))}); console.log('loaded'); }
    catch (err) { console.log(err.message); }
  `], { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
  const platform = `${process.platform}-${process.arch}`;
  assert.match(result.stdout, new RegExp(`no native addon for ${platform} \\w+, Node\\.js ABI ${process.versions.modules} `));
  assert.match(result.stdout, new RegExp(`carries no prebuilt addon for ${platform}`));
  assert.match(result.stdout, /npm rebuild heap-labels/);
  assert.match(result.stdout, /npm run build/);
  assert.match(result.stdout, /https:\/\/rustup\.rs/);
});

// The npm package carries no recipe (tools/patched-node/build.sh): its users are pointed to the
// labeled runtime's release and the README that the package carries; a checkout also to the recipe.
test('27.10: without the patched API, the way out names what an npm install can use: the release, not the recipe it lacks', (t) => {
  const caps = hl.capabilities();
  if (caps.reasons.every((r) => !r.includes('v8_sample_labels_api_version not found'))) {
    t.skip('patched runtime: sampleLabels and externalBytes have no way out to name');
    return;
  }
  const { dir } = installPackageCopy(t, fs.readFileSync(hl.stats().addon));
  const env = childEnv();
  const installed = spawnSync(process.execPath, ['-e', "console.log(JSON.stringify(require('heap-labels').capabilities().reasons))"], {
    cwd: dir, encoding: 'utf8', env,
  });
  assert.equal(installed.status, 0, installed.stderr);
  const reasons = JSON.parse(installed.stdout);
  // The preload's start line quotes the first reason.
  const preload = spawnSync(process.execPath, ['-r', 'heap-labels/register', '-e', ''], {
    cwd: dir, encoding: 'utf8', env: { ...env, HEAP_LABELS_SIGNAL: 'off', HEAP_LABELS_NEAR_HEAP_LIMIT: '0' },
  });
  assert.equal(preload.status, 0, preload.stderr);
  const startLine = preload.stderr.split('\n').find((l) => l.includes('profiles carry no labels'));
  assert.ok(startLine, preload.stderr);
  const checkout = caps.reasons;
  for (const name of ['sampleLabels', 'externalBytes']) {
    const fromPackage = reasons.find((r) => r.startsWith(`${name}:`));
    const fromCheckout = checkout.find((r) => r.startsWith(`${name}:`));
    for (const text of [fromPackage, fromCheckout]) {
      assert.match(text, /labeled Node\.js release, node-v<version>-labels-linux-x64\.tar\.xz/);
      assert.match(text, /README of heap-labels, "Install"/);
    }
    assert.doesNotMatch(fromPackage, /build\.sh/, 'the package has no recipe');
    assert.match(fromCheckout, /this checkout builds one: tools\/patched-node\/build\.sh/);
  }
  assert.ok(startLine.includes(reasons[0]), startLine);
  assert.doesNotMatch(startLine, /build\.sh/);
});

test('28.1: require(\'heap-labels\') and the preload load no node:tls, node:https or node:zlib (pushing off)', () => {
  const probe = (entry) => `
    const before = new Set(process.moduleLoadList);
    require(${JSON.stringify(path.join(root, entry))});
    const loaded = process.moduleLoadList.filter((m) => !before.has(m) && /^NativeModule (tls|_tls_wrap|https|zlib)$/.test(m));
    process.stdout.write(JSON.stringify(loaded));`;
  for (const entry of ['lib/index.js', 'lib/entries/register.js']) {
    const r = spawnSync(process.execPath, ['-e', probe(entry)], { encoding: 'utf8', env: childEnv() });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), [], `${entry} loaded them`);
  }
});

test('28.1: require(\'heap-labels\') loads no node:http, node:net, node:perf_hooks nor a framework integration: the agent\'s modules load when an agent starts', () => {
  const { spawnSync } = require('node:child_process');
  const path = require('node:path');
  const root = path.join(__dirname, '..');
  const r = spawnSync(
    process.execPath,
    [
      '-e',
      `const before = new Set(process.moduleLoadList);
      const heap = require(${JSON.stringify(path.join(root, 'lib/index.js'))});
      const loaded = process.moduleLoadList.filter((m) => !before.has(m) && /^NativeModule (http|net|perf_hooks)$/.test(m));
      const ours = Object.keys(require.cache).filter((f) => /[\\/]lib[\\/](agent|integrations[\\/]|endpoint)/.test(f));
      process.stdout.write(JSON.stringify({ loaded, ours, startAgent: typeof heap.startAgent }));`,
    ],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { loaded: [], ours: [], startAgent: 'function' });
});
