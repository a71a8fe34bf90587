'use strict';
// Allocated vs in-use bytes per label (V8 patch 0004: dead samples reported to the addon).
//
// On the patched runtime (capabilities().allocations) a churning route shows allocated bytes with
// almost nothing in use, a retaining route shows both, a resetting read starts a new window, and
// pprof carries Go's four heap sample types, read by go tool pprof. On other runtimes the same
// file checks the documented degraded behaviour: live heap only, and capabilities() says why.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { runFixture, decodePprof, goPprof, asyncContextFrameFlags, tempDir } = require('./helpers');

const FLAGS = ['--expose-gc'];
FLAGS.push(...asyncContextFrameFlags());

const dir = tempDir('alloc');
const pprofFile = path.join(dir, 'phase1.pb.gz');
const keptPprofFile = path.join(dir, 'kept-phase1.pb.gz');
const result = runFixture('allocation-scenarios.js', { nodeArgs: FLAGS, args: [pprofFile] });
// The same with every dead sample kept: where V8 marks them (is_live, Node.js 26) the figures
// come from V8 itself, in memory that grows with the samples.
const keptResult = runFixture('allocation-scenarios.js', { nodeArgs: FLAGS, args: [keptPprofFile, 'keep'] });
const out = result.json;
const kept = keptResult.json;
const reports = out?.capabilities.allocations === true;
const isLive = kept?.hasAllocations[0] === true && !reports;
const of = (groups, route) => groups.find((g) => g.route === route) ?? { bytes: 0, allocatedBytes: 0 };

test('the scenarios ran', () => {
  for (const r of [result, keptResult]) {
    assert.equal(r.status, 0, r.stderr);
    assert.ok(r.json, r.stdout);
    assert.equal(r.json.kept, 1000);
  }
});

test('with every dead sample kept, V8 14+ (Node.js 26) marks them and they count as allocated', { skip: (reports || Number(process.versions.v8.split('.')[0]) < 14) && 'patched runtime, or a V8 without is_live' }, () => {
  assert.ok(isLive, 'Node.js 26 profiles have allocation figures with both include-collected flags');
  if (kept.capabilities.sampleLabels) {
    checkChurnAndKeep(kept);
    checkWindows(kept);
    return;
  }
  // Stock samples carry no labels: the same checks per allocating function (pprof) and, for the
  // windows, on the one unlabeled group.
  const sites = bytesBySite(decodePprof(fs.readFileSync(keptPprofFile)));
  const churn = sites.get('arrayForChurn') ?? { alloc: 0, inuse: 0 };
  const keep = sites.get('arrayForKeep') ?? { alloc: 0, inuse: 0 };
  const ratio = churn.alloc / keep.alloc;
  assert.ok(Math.abs(ratio / 8 - 1) < 0.2, `arrayForChurn/arrayForKeep allocated = ${ratio}, expected about 8`);
  assert.ok(churn.inuse < 0.05 * churn.alloc, `arrayForChurn holds ${churn.inuse} of ${churn.alloc}`);
  assert.ok(keep.inuse > 0.8 * keep.alloc, `arrayForKeep holds ${keep.inuse} of ${keep.alloc}`);
  // Window 2 allocated 4000 arrays (all dead); window 1 allocated 9000, of which 1000 stay live.
  const [first] = kept.phase1;
  const [second] = kept.phase2;
  const windows = second.allocatedBytes / first.allocatedBytes;
  assert.ok(Math.abs(windows / (4 / 9) - 1) < 0.25, `window 2 / window 1 allocated = ${windows}, expected about 4/9`);
});

// Allocated and in-use bytes per function on the stack (a sample counts once for each distinct
// function of its stack: makeArray may or may not be inlined into its caller) of a pprof with Go's
// four heap sample types.
function bytesBySite(profile) {
  const types = profile.sampleTypes.map((t) => t.type);
  const alloc = types.indexOf('alloc_space');
  const inuse = types.indexOf('inuse_space');
  assert.ok(alloc >= 0 && inuse >= 0, `sample types ${types}`);
  const fn = new Map(profile.functions.map((f) => [f.id, f.name]));
  const loc = new Map(profile.locations.map((l) => [l.id, fn.get(l.lines[0]?.functionId)]));
  const out = new Map();
  for (const sample of profile.samples) {
    for (const name of new Set(sample.locationIds.map((id) => loc.get(id)))) {
      const entry = out.get(name) ?? { alloc: 0, inuse: 0 };
      entry.alloc += sample.values[alloc];
      entry.inuse += sample.values[inuse];
      out.set(name, entry);
    }
  }
  return out;
}

test('without dead-sample reports: live heap only, and capabilities() says why', { skip: reports && 'this runtime reports allocations' }, () => {
  assert.deepEqual(out.hasAllocations, [false, false]);
  assert.ok(out.phase1.every((g) => !g.hasAllocatedKey), 'no allocated figures are made up');
  assert.ok(
    out.capabilities.reasons.some((r) => r.startsWith('allocations:')),
    out.capabilities.reasons.join('\n'),
  );
  const types = decodePprof(fs.readFileSync(pprofFile)).sampleTypes.map((t) => t.type);
  assert.deepEqual(types, ['inuse_objects', 'inuse_space']);
});

test('a churning route allocates without holding; a retaining route holds what it allocated', { skip: !reports && 'needs the patched runtime (API version 2)' }, () => {
  checkChurnAndKeep(out);
});

test('a resetting read starts a new window: the next read counts only what came after', { skip: !reports && 'needs the patched runtime (API version 2)' }, () => {
  checkWindows(out);
});

function checkChurnAndKeep(out) {
  assert.deepEqual(out.hasAllocations, [true, true]);
  const churn = of(out.phase1, '/churn');
  const keep = of(out.phase1, '/keep');
  // Same array size on both routes: allocated bytes compare as counts (8000 : 1000).
  const ratio = churn.allocatedBytes / keep.allocatedBytes;
  assert.ok(Math.abs(ratio / 8 - 1) < 0.2, `churn/keep allocated = ${ratio}, expected about 8`);
  assert.ok(churn.bytes < 0.05 * churn.allocatedBytes, `churn holds ${churn.bytes} of ${churn.allocatedBytes}`);
  assert.ok(keep.bytes > 0.8 * keep.allocatedBytes, `keep holds ${keep.bytes} of ${keep.allocatedBytes}`);
  assert.ok(keep.allocatedBytes <= keep.bytes * 1.25, 'allocated includes what is still live, once');
}

function checkWindows(out) {
  const before = of(out.phase1, '/churn');
  const churn = of(out.phase2, '/churn');
  const keep = of(out.phase2, '/keep');
  const later = of(out.phase2, '/later');
  assert.ok(churn.allocatedBytes < 0.02 * before.allocatedBytes, `churn in window 2: ${churn.allocatedBytes}`);
  assert.ok(keep.allocatedBytes < 0.05 * keep.bytes, `keep in window 2: ${keep.allocatedBytes}`);
  assert.ok(keep.bytes > 0.8 * of(out.phase1, '/keep').bytes, 'what /keep holds is still in use');
  // /later allocated half of what /churn did in window 1.
  const ratio = later.allocatedBytes / before.allocatedBytes;
  assert.ok(Math.abs(ratio / 0.5 - 1) < 0.2, `later/churn = ${ratio}, expected about 0.5`);
}

test('pprof has Go\'s four heap sample types and go tool pprof reads the allocated ones per label', { skip: !reports && 'needs the patched runtime (API version 2)' }, async () => {
  const profile = decodePprof(fs.readFileSync(pprofFile));
  assert.deepEqual(
    profile.sampleTypes.map((t) => `${t.type}/${t.unit}`),
    ['alloc_objects/count', 'alloc_space/bytes', 'inuse_objects/count', 'inuse_space/bytes'],
  );
  assert.equal(profile.defaultSampleType, 'inuse_space');
  // Every node, however small: where the JIT inlines makeArray into arrayForChurn the latter holds
  // the flat bytes, elsewhere only cumulative ones, behind the timer and promise frames of the
  // route's ticks that a -nodecount=5 listing (sorted by flat) can keep and this one would drop.
  const everyNode = ['-nodecount=100000', '-nodefraction=0'];
  const go = await goPprof(dir, '-sample_index=alloc_space', '-tagfocus=route=/churn', '-top', ...everyNode, pprofFile);
  assert.match(go.stdout, /arrayForChurn/);
  assert.doesNotMatch(go.stdout, /arrayForKeep/);
  const inuse = await goPprof(dir, '-sample_index=inuse_space', '-tagfocus=route=/keep', '-top', ...everyNode, pprofFile);
  assert.match(inuse.stdout, /arrayForKeep/);
});
