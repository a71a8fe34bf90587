'use strict';
// The export formats read by real external readers:
// - pprof files (toPprof) read by `go tool pprof` (Debian's golang-go, installed by the test setup):
//   sample and period types, values against the JS estimates, function names with file:line, labels
//   (-tags, -tagfocus) on a runtime whose samples carry labels and none on a stock runtime;
// - .heapprofile files (toHeapProfile) compared with a file Node's own `--heap-prof` writes on the
//   same runtime: the same keys, the same value types, the same call frame for the same function.
//
// The profiles come from child processes (tests/fixtures/go-pprof-*.js) run with this runtime and
// its flags (so a run without --experimental-async-context-frame checks the unlabeled case).

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { runFixture, fixtureOnce, treeNodes, tempDir, runGo, goPprof } = require('./helpers');

const tmp = tempDir('go-pprof');

// `go tool pprof <args>` (Debian's golang-go): resolves to { stdout, stderr }; fails the test when go
// is missing or pprof exits non-zero.
const pprof = (...args) => goPprof(tmp, ...args);

// The flags of this test process (e.g. --experimental-async-context-frame) plus --expose-gc.
const childFlags = [...new Set([...process.execArgv.filter((a) => !a.startsWith('--test')), '--expose-gc'])];

// The heap-labels profile of the workload, made once: the fixture's JSON report.
const heapLabelsProfile = fixtureOnce('go-pprof-profile.js', tmp, childFlags);

// The `-raw` dump: header lines and samples { values: [objects, bytes], labels: {key: [values]} }.
function parseRaw(text) {
  const lines = text.split('\n');
  const samplesAt = lines.indexOf('Samples:');
  assert.ok(samplesAt >= 0, `no "Samples:" section in -raw output:\n${text.slice(0, 2000)}`);
  const header = lines[samplesAt + 1];
  const samples = [];
  for (let i = samplesAt + 2; i < lines.length; i++) {
    const line = lines[i];
    if (/^\S/.test(line)) break; // the next section ("Locations")
    const m = /^\s*(-?\d+)\s+(-?\d+):[\d ]*$/.exec(line);
    if (m) {
      samples.push({ values: [Number(m[1]), Number(m[2])], labels: {} });
      continue;
    }
    // String labels of the sample above, e.g. "                route:[/go/alpha]".
    const labelText = line.trim();
    if (labelText && samples.length) {
      for (const lm of labelText.matchAll(/([^\s{}:]+):\[([^\]]*)\]/g)) {
        samples[samples.length - 1].labels[lm[1]] = lm[2].split(' ');
      }
    }
  }
  const period = /^Period: (\d+)$/m.exec(text);
  const periodType = /^PeriodType: (.*)$/m.exec(text);
  return { header, samples, period: period && Number(period[1]), periodType: periodType && periodType[1] };
}

const sum = (xs) => xs.reduce((a, b) => a + b, 0);

test('go tool pprof is installed (the setup installs golang-go)', async () => {
  const r = await runGo(tmp, 'version');
  assert.match(r.stdout, /^go version go\d/);
});

test('pprof: sample types inuse_objects/count and inuse_space/bytes, period space/bytes = interval', async () => {
  const run = heapLabelsProfile();
  const raw = parseRaw((await pprof('-raw', run.pprofPath)).stdout);
  assert.match(raw.header.trim(), /^inuse_objects\/count\s+inuse_space\/bytes\[dflt\]$/);
  assert.equal(raw.periodType, 'space bytes');
  assert.equal(raw.period, run.sampleInterval);
  assert.equal(run.sampleInterval, 4096);
});

test('pprof: values are the JS estimates, summed within rounding', async () => {
  const run = heapLabelsProfile();
  const raw = parseRaw((await pprof('-raw', run.pprofPath)).stdout);
  assert.ok(raw.samples.length > 0);
  assert.ok(run.totalBytes > 5_000_000, `the workload retains ~10 MB, profile says ${run.totalBytes}`);
  // Each pprof sample is rounded once: at most 0.5 off each.
  const slack = raw.samples.length * 0.5 + 1;
  const objects = sum(raw.samples.map((s) => s.values[0]));
  const bytes = sum(raw.samples.map((s) => s.values[1]));
  assert.ok(Math.abs(bytes - run.totalBytes) <= slack, `pprof bytes ${bytes} vs JS estimate ${run.totalBytes}`);
  assert.ok(
    Math.abs(objects - run.totalObjects) <= slack,
    `pprof objects ${objects} vs JS estimate ${run.totalObjects}`,
  );
});

test('pprof: -top names the allocating functions with file:line; -sample_index picks objects or bytes', async () => {
  const run = heapLabelsProfile();
  const { file, alphaLine, betaLine } = run.workload;
  const bytesTop = (await pprof('-top', '-lines', '-nodecount=1000', '-sample_index=inuse_space', run.pprofPath)).stdout;
  assert.match(bytesTop, /^Type: inuse_space$/m);
  assert.ok(bytesTop.includes(`allocateAlpha ${file}:${alphaLine}`), `allocateAlpha ${file}:${alphaLine} in:\n${bytesTop}`);
  assert.ok(bytesTop.includes(`allocateBeta ${file}:${betaLine}`), `allocateBeta ${file}:${betaLine} in:\n${bytesTop}`);
  const objectsTop = (await pprof('-top', '-sample_index=inuse_objects', run.pprofPath)).stdout;
  assert.match(objectsTop, /^Type: inuse_objects$/m);
  assert.match(objectsTop, /allocateAlpha/);
  // The function that retains four times as much is listed first.
  const firstRow = bytesTop.split('\n').find((l) => /allocate(Alpha|Beta)/.test(l));
  assert.match(firstRow, /allocateAlpha/);
});

test('pprof labels: -tags lists the routes and -tagfocus keeps one route (or no labels on stock)', async () => {
  const run = heapLabelsProfile();
  const tags = (await pprof('-tags', run.pprofPath)).stdout;
  if (!run.capabilities.sampleLabels) {
    // Stock runtime (or no AsyncContextFrame): samples carry no labels.
    assert.equal(run.labeledSamples, 0);
    assert.doesNotMatch(tags, /route/, `no labels expected on this runtime, -tags printed:\n${tags}`);
    const focused = await pprof('-tagfocus', 'route=/go/alpha', '-top', run.pprofPath);
    assert.match(focused.stderr, /TagFocus expression matched no samples/);
    return;
  }
  assert.match(tags, /^\s*route: Total/m);
  assert.match(tags, /\/go\/alpha/);
  assert.match(tags, /\/go\/beta/);

  const alpha = (await pprof('-tagfocus', 'route=/go/alpha', '-top', '-nodecount=1000', run.pprofPath)).stdout;
  assert.match(alpha, /allocateAlpha/);
  assert.doesNotMatch(alpha, /allocateBeta/);
  const beta = (await pprof('-tagfocus', 'route=/go/beta', '-top', '-nodecount=1000', run.pprofPath)).stdout;
  assert.match(beta, /allocateBeta/);
  assert.doesNotMatch(beta, /allocateAlpha/);

  // Per-route sums of the pprof samples are byLabel('route') of the JS profile.
  const raw = parseRaw((await pprof('-raw', run.pprofPath)).stdout);
  for (const group of run.byRoute) {
    const mine = raw.samples.filter((s) =>
      group.route === null ? !s.labels.route : (s.labels.route || []).includes(group.route),
    );
    const bytes = sum(mine.map((s) => s.values[1]));
    assert.ok(
      Math.abs(bytes - group.bytes) <= mine.length * 0.5 + 1,
      `route ${group.route}: pprof ${bytes} bytes vs byLabel ${group.bytes}`,
    );
  }
  const alphaBytes = run.byRoute.find((g) => g.route === '/go/alpha').bytes;
  const betaBytes = run.byRoute.find((g) => g.route === '/go/beta').bytes;
  assert.ok(alphaBytes / betaBytes > 3 && alphaBytes / betaBytes < 5.3, `alpha:beta = ${alphaBytes / betaBytes}, expected ~4`);
});

// --- .heapprofile ----------------------------------------------------------------------------------

// The key set and value types of an object, e.g. "callFrame:object,children:array,id:number".
function shape(obj) {
  return Object.keys(obj)
    .sort()
    .map((k) => `${k}:${Array.isArray(obj[k]) ? 'array' : typeof obj[k]}`)
    .join(',');
}

const shapesOf = (items) => [...new Set(items.map(shape))].sort();

// Checks the invariants DevTools relies on and returns the shapes found. `strict`: every sample's
// nodeId is a node of the tree, and a node's selfSize is its samples' sizes. Node's own --heap-prof
// files do not always hold to either: V8 lists samples of nodes its tree export has already left
// out, and on Node 24 a run printed "(IDLE) selfSize 4104 vs samples 216224" (a large sample in the
// list that its node's counts did not hold), so the reference file is only read for its shapes.
function checkHeapProfile(profile, what, { strict }) {
  const nodes = treeNodes(profile.head);
  const ids = new Set(nodes.map((n) => n.id));
  assert.equal(ids.size, nodes.length, `${what}: node ids are unique`);
  assert.equal(profile.head.callFrame.functionName, '(root)', `${what}: the root is (root)`);
  if (strict) {
    for (const s of profile.samples) assert.ok(ids.has(s.nodeId), `${what}: sample of unknown node ${s.nodeId}`);
    // selfSize of a node is its samples' sizes (V8 rounds counts per node in one and per sample in
    // the other; both are estimates of the same bytes).
    const bySamples = new Map();
    for (const s of profile.samples) bySamples.set(s.nodeId, (bySamples.get(s.nodeId) || 0) + s.size);
    for (const n of nodes) {
      const fromSamples = bySamples.get(n.id) || 0;
      if (Math.max(n.selfSize, fromSamples) > 100_000) {
        const ratio = n.selfSize / fromSamples;
        assert.ok(ratio > 0.9 && ratio < 1.1, `${what}: node ${n.callFrame.functionName} selfSize ${n.selfSize} vs samples ${fromSamples}`);
      }
    }
  }
  return {
    top: shape(profile),
    nodes: shapesOf(nodes),
    callFrames: shapesOf(nodes.map((n) => n.callFrame)),
    samples: shapesOf(profile.samples),
  };
}

test('.heapprofile has the keys, types and call frames of a `node --heap-prof` file', (t) => {
  if (!process.features.inspector) {
    t.skip(`this runtime is built without the inspector, so it cannot write --heap-prof files to compare with`);
    return;
  }
  const run = heapLabelsProfile();
  const ours = JSON.parse(fs.readFileSync(run.heapprofilePath, 'utf8'));

  const refDir = fs.mkdtempSync(path.join(tmp, 'heap-prof-'));
  const r = runFixture('go-pprof-heap-prof.js', {
    nodeArgs: ['--heap-prof', '--heap-prof-dir', refDir, '--heap-prof-interval', '4096'],
  });
  assert.equal(r.status, 0, `node --heap-prof failed:\n${r.stderr}`);
  const files = fs.readdirSync(refDir).filter((f) => f.endsWith('.heapprofile'));
  assert.equal(files.length, 1, `node --heap-prof wrote ${files.join(', ') || 'nothing'}`);
  const reference = JSON.parse(fs.readFileSync(path.join(refDir, files[0]), 'utf8'));

  const refShapes = checkHeapProfile(reference, 'node --heap-prof', { strict: false });
  const ourShapes = checkHeapProfile(ours, 'toHeapProfile()', { strict: true });
  assert.deepEqual(ourShapes, refShapes);
  assert.equal(ourShapes.top, 'head:object,samples:array');
  assert.deepEqual(ourShapes.callFrames, [
    'columnNumber:number,functionName:string,lineNumber:number,scriptId:string,url:string',
  ]);

  // The same function has the same call frame (0-based lines and columns) in both.
  const frameOf = (profile, name) => {
    const node = treeNodes(profile.head).find((n) => n.callFrame.functionName === name);
    assert.ok(node, `no ${name} node`);
    const { functionName, url, lineNumber, columnNumber } = node.callFrame;
    return { functionName, url, lineNumber, columnNumber };
  };
  for (const name of ['allocateAlpha', 'allocateBeta']) {
    assert.deepEqual(frameOf(ours, name), frameOf(reference, name));
  }
  assert.equal(frameOf(ours, 'allocateAlpha').lineNumber, run.workload.alphaLine - 1);
});
