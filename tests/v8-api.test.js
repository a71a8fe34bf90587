'use strict';
// The heap-profile-labels API of node:v8 (the Node.js proposal's shapes): heap-labels/v8 on every
// runtime, and the patched runtime's own node:v8. Each scenario runs in a fresh process
// (tests/fixtures/v8-api.js); where the runtime cannot label (stock runtimes, no
// AsyncContextFrame), samples and groups are unlabeled and capabilities() says why.

const { test, describe } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { runFixture, expectedAsyncContextFrame } = require('./helpers');
const hl = require('..');

const caps = hl.capabilities();
const labeled = caps.sampleLabels;
const external = caps.externalBytes;
const nodeV8 = require('node:v8');
const runtimeHasApi = typeof nodeV8.withHeapProfileLabels === 'function';
// The patched runtime's V8 has the sample-labels API, whatever the process flags. Its node:v8 has
// the API where the recipe patches this line's Node.js for it (tools/patched-node/node-patches/).
const patchedRuntime = !caps.reasons.some((r) => r.startsWith('sampleLabels: this runtime'));
const major = process.versions.node.split('.')[0];
const lineHasNodePatch = (() => {
  const dir = path.join(__dirname, '..', 'tools', 'patched-node', 'node-patches', major);
  return fs.existsSync(dir) && fs.readdirSync(dir).some((f) => f.includes('heap-profile-labels'));
})();
const patchedWithApi =
  !patchedRuntime ? `stock Node.js ${process.version}` :
    !lineHasNodePatch && `the recipe has no node:v8 patch for Node.js ${major} (tools/patched-node/node-patches/${major}/)`;

// typeof node:v8's startHeapProfile on the stock runtime of this very version (Node.js 26 has one of
// its own, 22 and 24 none), when the runtime cache holds that runtime (scripts/runtimes.sh installs
// it); undefined when it does not.
function stockStartHeapProfileType() {
  const cache = process.env.HEAP_LABELS_CACHE || path.join(os.homedir(), '.cache', 'heap-labels');
  const stock = path.join(cache, 'runtimes', `node-${process.versions.node}`, 'bin', 'node');
  if (!fs.existsSync(stock)) return undefined;
  const r = spawnSync(stock, ['-p', 'typeof require("node:v8").startHeapProfile'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

const MODULES = [
  ['heap-labels/v8', false],
  ['node:v8', !runtimeHasApi && `node:v8 of Node.js ${process.version} has no withHeapProfileLabels (stock runtime)`],
];

function scenario(name, moduleName, nodeArgs = [], args = []) {
  const r = runFixture('v8-api.js', { nodeArgs: ['--expose-gc', ...nodeArgs], args: [name, moduleName, ...args] });
  assert.equal(r.status, 0, `${name} (${moduleName}) failed:\n${r.stderr}`);
  return { ...r.json, stderr: r.stderr };
}

const notLabeledReason = () => caps.reasons.find((r) => r.startsWith('sampleLabels')) ?? caps.reasons.join('; ');

for (const [moduleName, skip] of MODULES) {
  describe(`${moduleName}: the proposal's API`, { skip }, () => {
    test('errors carry Node.js codes and classes', () => {
      const r = scenario('errors', moduleName).result;
      const is = (e, code, name) => {
        assert.ok(e, `expected ${code}`);
        assert.equal(e.code, code, e.message);
        assert.equal(e.name, name, e.message);
      };
      for (const key of ['labelsString', 'labelsNull', 'labelsArray', 'valueNumber', 'noFn', 'setString', 'setValueNumber']) {
        is(r[key], 'ERR_INVALID_ARG_TYPE', 'TypeError');
      }
      assert.match(r.valueNumber.message, /"labels\.a" property must be of type string/);
      assert.match(r.noFn.message, /"fn" argument must be of type function/);
      // heap-labels' own checks keep their message, with a code.
      is(r.reservedKey, 'ERR_INVALID_ARG_VALUE', 'TypeError');
      is(r.longValue, 'ERR_OUT_OF_RANGE', 'RangeError');
      is(r.groupByNotArray, 'ERR_INVALID_ARG_TYPE', 'TypeError');
      for (const key of ['groupByEmpty', 'groupByNine', 'groupByEmptyKey', 'groupByDuplicate', 'groupByLongKey', 'groupByNonString', 'groupByWithoutLabels']) {
        is(r[key], 'ERR_INVALID_ARG_VALUE', 'TypeError');
      }
      for (const key of ['maxGroupsZero', 'maxGroupsTooMany', 'maxGroupsFraction']) is(r[key], 'ERR_OUT_OF_RANGE', 'RangeError');
      is(r.maxGroupsString, 'ERR_INVALID_ARG_TYPE', 'TypeError');
      is(r.optionsString, 'ERR_INVALID_ARG_TYPE', 'TypeError');
      is(r.labelsOptionString, 'ERR_INVALID_ARG_TYPE', 'TypeError');
      assert.equal(r.maxGroupsLimit, null, 'maxGroups 65536 is accepted');
      // A second start, from either API, while one runs.
      is(r.secondStart, 'ERR_HEAP_PROFILE_HAVE_BEEN_STARTED', 'Error');
      is(r.secondStartHeapLabels, 'ERR_HEAP_PROFILE_HAVE_BEEN_STARTED', 'Error');
      is(r.secondStartAfterHeapLabels, 'ERR_HEAP_PROFILE_HAVE_BEEN_STARTED', 'Error');
      // What fn throws is fn's.
      assert.deepEqual(r.fnThrows, { name: 'TypeError', message: 'from fn' });
    });

    test('withHeapProfileLabels returns fn\'s value; a session without labels; stop() returns JSON once', () => {
      const r = scenario('basics', moduleName).result;
      assert.equal(r.syncValue, 42);
      assert.equal(r.asyncValue, 'done');
      assert.ok(r.samples > 0);
      assert.equal(r.distinctLabelObjects, 1, 'every sample carries the same object');
      assert.ok(r.labelsFrozenEmpty, 'a frozen {}');
      assert.ok(r.externalBytesUndefined);
      assert.equal(r.headRoot, '(root)');
      assert.deepEqual(r.sampleKeys, ['count', 'labels', 'nodeId', 'sampleId', 'size']);
      assert.ok(r.heapStatsWithoutGroupByUndefined);
      assert.equal(r.stopType, 'string');
      assert.ok(r.stopHasHeadAndSamples);
      assert.ok(r.stopAgainUndefined);
      assert.ok(r.readAfterStopUndefined);
      assert.ok(r.statsAfterStopUndefined);
      assert.ok(r.disposedReadUndefined);
      assert.ok(r.restartable);
    });

    test('with labels: one frozen object per set, labels from before the start, nesting replaces, reads go on', () => {
      const r = scenario('labels', moduleName).result;
      assert.ok(r.readsDoNotStop);
      assert.ok(r.allFrozen);
      assert.ok(r.sameObjectPerSet);
      if (!labeled) {
        assert.deepEqual(r.labelSets, ['{}'], 'unlabeled where the runtime cannot label');
        assert.ok(notLabeledReason(), 'capabilities() says why');
        return;
      }
      const sets = r.labelSets.map((s) => JSON.parse(s));
      const has = (labels) => sets.some((s) => JSON.stringify(s) === JSON.stringify(labels));
      assert.ok(has({ phase: 'before-start' }), `labels entered before the session: ${r.labelSets}`);
      assert.ok(has({ outer: 'o', shared: 'outer' }));
      assert.ok(has({ inner: 'i' }), 'the nested set replaces the outer one');
      assert.ok(!sets.some((s) => s.inner && s.outer), 'never merged');
      assert.ok(has({ api: 'heap-labels' }), "labels set through heap-labels' own API");
      assert.equal(r.innerIsHeapLabelsObject, true, "the same frozen object as heap-labels' getHeapProfileLabels()");
    });

    test('externalBytes: per label set, no unlabeled entry, gone once the buffers are freed', () => {
      const r = scenario('external', moduleName).result;
      assert.ok(r.noUnlabeledEntry);
      assert.ok(r.after.every((e) => Object.keys(e.labels).length > 0));
      if (!external) {
        assert.deepEqual(r.before, [], caps.reasons.find((x) => x.startsWith('externalBytes')));
        return;
      }
      const owned = r.before.find((e) => e.labels.owner === 'buffers');
      assert.ok(owned && owned.bytes >= 16 * 64 * 1024, JSON.stringify(r.before));
      assert.ok(!r.after.some((e) => e.labels.owner === 'buffers'), JSON.stringify(r.after));
    });

    test('groupBy: unknown, overflow, then one group per projection with BigInt counters', () => {
      const r = scenario('groups', moduleName).result;
      const { first, advanced, afterFree } = r;
      assert.equal(first.sampleInterval, 512);
      // 27.4: the proposal's shapes: BigInt window id and overflow count, boolean isUnknown/isOverflow.
      assert.deepEqual(first.types, ['bigint', 'bigint']);
      assert.deepEqual([first.peakWindowId, advanced.peakWindowId, afterFree.peakWindowId], ['0', '1', '2']);
      // The value over 255 bytes overflows when its set is made; t2/a and t3/c when first charged
      // with maxGroups groups made, which never happens where samples carry no labels.
      assert.equal(first.overflowCount, labeled ? '3' : '1', 't2/a past maxGroups, a value over 255 bytes, t3/c');
      const projections = [
        ['labels', { 'task.type': 'before' }],
        ['labels', { 'task.type': 'a' }],
        ['labels', { tenant: 't1', 'task.type': 'a' }],
        ['labels', { tenant: 't1', 'task.type': 'b' }],
      ];
      // A projection's group is listed once something was charged to it in this session: on a
      // runtime whose samples carry no labels (and no external bytes per set) nothing ever is.
      assert.deepEqual(
        first.groups.map((g) => [g.kind, g.labels]),
        [['unknown', {}], ['overflow', {}], ...(labeled ? projections : [])],
      );
      assert.deepEqual(
        first.groups.map((g) => [g.isUnknown, g.isOverflow]),
        first.groups.map((g, i) => [i === 0, i === 1]),
      );
      if (labeled) assert.deepEqual(first.groups[4].keys, ['tenant', 'task.type'], "groupBy's key order");
      assert.ok(first.groups.every((g) => g.frozen && g.bigints === 9));
      const byLabels = (stats, labels) => stats.groups.find((g) => JSON.stringify(g.labels) === JSON.stringify(labels));
      const t1a = byLabels(first, { tenant: 't1', 'task.type': 'a' });
      if (!labeled) {
        for (const g of first.groups) assert.equal(g.allocatedHeapSampleCount, '0', 'samples carry no labels here');
      } else {
        for (const g of [first.groups[0], first.groups[1], byLabels(first, { 'task.type': 'before' }), t1a]) {
          assert.ok(BigInt(g.allocatedHeapSampleCount) > 0n, JSON.stringify(g));
          assert.ok(BigInt(g.currentHeapSampleCount) > 0n, JSON.stringify(g));
          assert.equal(BigInt(g.currentHeapBytes), BigInt(g.currentHeapSampleCount) * 512n);
        }
      }
      if (!external) {
        for (const g of first.groups) assert.equal(g.allocatedExternalBytes, '0');
      } else if (labeled) {
        assert.ok(BigInt(t1a.allocatedExternalBytes) >= 32n * 1024n, JSON.stringify(t1a));
        assert.equal(t1a.allocatedExternalCount, '1');
        assert.equal(t1a.publishedPeakExternalBytes, '0', 'no window closed yet');
        assert.ok(BigInt(first.groups[1].allocatedExternalBytes) >= 32n * 1024n, 'the overflowed set\'s buffer');
        const closed = byLabels(advanced, { tenant: 't1', 'task.type': 'a' });
        assert.ok(BigInt(closed.publishedPeakExternalBytes) >= 32n * 1024n);
        const freed = byLabels(afterFree, { tenant: 't1', 'task.type': 'a' });
        assert.equal(freed.freedExternalBytes, t1a.allocatedExternalBytes, 'the free is credited to its group');
        assert.equal(freed.freedExternalCount, '1');
        assert.equal(freed.currentExternalBytes, '0');
      }
      assert.equal(r.optionsError.code, 'ERR_INVALID_ARG_TYPE');
      assert.equal(r.json, 'string');
      assert.ok(r.afterStopUndefined);
    });

    test("Node.js 26's positional form (sampleInterval, stackDepth, flags)", () => {
      const r = scenario('positional', moduleName).result;
      assert.ok(r.samples > 0);
      assert.equal(r.stop, 'string');
      assert.equal(r.noArgs, 'string');
      assert.equal(r.badFlags.code, 'ERR_OUT_OF_RANGE');
      assert.equal(r.badInterval.code, 'ERR_OUT_OF_RANGE');
      assert.equal(r.badDepth.code, 'ERR_INVALID_ARG_TYPE');
    });

    test("the inspector's HeapProfiler.stopSampling ends the session; a new start supersedes it", () => {
      const r = scenario('inspector', moduleName).result;
      assert.ok(r.runningRead);
      assert.ok(r.inspectorGotProfile);
      assert.ok(r.readAfterInspectorStopUndefined);
      assert.ok(r.statsAfterInspectorStopUndefined);
      assert.ok(r.stopAfterInspectorStopUndefined);
      assert.ok(r.newStartWorks);
      assert.ok(r.supersedingRead, 'a start after the inspector stopped an unread session');
      assert.ok(r.staleReadUndefined, 'the superseded handle reads as stopped');
      assert.equal(r.supersedingStop, 'string');
      assert.equal(r.startWhileInspectorSamples.code, 'ERR_HEAP_PROFILE_HAVE_BEEN_STARTED');
    });

    for (const [how, ended] of [['stop', 'stop()'], ['inspector', "the inspector's HeapProfiler.stopSampling"]]) {
      test(`groupBy: a set alive from a session ended by ${ended}, nothing charged in the next, takes no group there`, () => {
        // 27.4: a group exists once something has been charged to it in the session. The old set
        // is projected when the next session starts, but maxGroups 1 still goes to the new set.
        const r = scenario('groupsAcrossSessions', moduleName, [], [how]).result;
        const labelsOf = (stats) => stats.groups.map((g) => g.labels);
        if (labeled) assert.deepEqual(labelsOf(r.first), [{}, {}, { k: 'old' }]);
        assert.deepEqual(labelsOf(r.next), [{}, {}, ...(labeled ? [{ k: 'new' }] : [])], JSON.stringify(r.next));
        assert.equal(r.next.overflowCount, '0', 'the old set spent no group, the new one was not refused');
        assert.equal(r.next.groups[1].samples, '0', 'nothing in the overflow group');
        if (labeled) assert.ok(BigInt(r.next.groups[2].samples) > 0n, JSON.stringify(r.next));
        assert.equal(r.pending, 'released', 'the old set was held through the next session');
      });
    }

    test('without AsyncContextFrame: one warning, empty labels', () => {
      // Stock Node.js 22 has AsyncContextFrame off by default; the others turn it off with a flag.
      const off = process.allowedNodeEnvironmentFlags.has('--async-context-frame') ? ['--no-async-context-frame'] : [];
      const r = runFixture('v8-api.js', {
        nodeArgs: off,
        args: ['noAcf', moduleName],
        env: { NODE_OPTIONS: '' },
      });
      assert.equal(r.status, 0, r.stderr);
      const { result, caps: childCaps } = r.json;
      assert.equal(childCaps.asyncContextFrame, false);
      assert.deepEqual(result.warnings, [{ code: 'NODE_HEAP_PROFILE_LABELS_NO_ASYNC_CONTEXT_FRAME', name: 'Warning' }]);
      assert.ok(result.samples > 0);
      assert.equal(result.labeledSamples, 0);
    });

    test('a worker profiles its own isolate with labels while the main thread profiles without', () => {
      const r = scenario('worker', moduleName).result;
      assert.equal(r.mainLabeled, 0);
      assert.ok(r.mainSamples > 0);
      assert.ok(r.worker.samples > 0);
      const group = r.worker.groups.find((g) => g.labels.thread === 'worker');
      if (labeled) {
        assert.ok(group, 'the worker groups its own labels');
        assert.ok(r.worker.labeled > 0);
        assert.ok(BigInt(group.samples) > 0n);
      } else {
        // Nothing is charged to a projection where samples carry no labels: no group is listed.
        assert.equal(group, undefined);
        assert.equal(r.worker.labeled, 0, notLabeledReason());
      }
    });
  });
}

describe('node:v8 of the runtime', () => {
  test('the patched runtime has the three functions with no install and no flag; the stock exports stay', {
    skip: patchedWithApi,
  }, () => {
    for (const name of ['withHeapProfileLabels', 'setHeapProfileLabels', 'startHeapProfile']) {
      assert.equal(typeof nodeV8[name], 'function', name);
    }
    assert.equal(typeof nodeV8.getHeapStatistics().used_heap_size, 'number');
    const stock = process.env.HEAP_LABELS_STOCK_NODE22;
    if (stock) {
      const keys = spawnSync(stock, ['-p', 'Object.keys(require("v8")).join()'], { encoding: 'utf8' }).stdout.trim();
      assert.deepEqual(
        Object.keys(nodeV8).filter((k) => !['withHeapProfileLabels', 'setHeapProfileLabels', 'startHeapProfile'].includes(k)),
        keys.split(','),
      );
    }
    // ESM sees them too, and a test double can replace one.
    const esm = spawnSync(process.execPath, ['--input-type=module', '-e',
      "import v8 from 'node:v8'; import { withHeapProfileLabels } from 'node:v8'; " +
      "const f = () => 1; v8.startHeapProfile = f; console.log(typeof withHeapProfileLabels, v8.startHeapProfile === f)"],
    { encoding: 'utf8' });
    assert.equal(esm.stdout.trim(), 'function true', esm.stderr);
  });

  test('a patched runtime without its bundled package: require("node:v8") works, the functions are absent', {
    skip: patchedWithApi,
  }, (t) => {
    // The same binary under another prefix (a hard link where possible), with no lib/node_modules.
    const base = fs.mkdtempSync(path.join(path.dirname(path.dirname(fs.realpathSync(process.execPath))), '..', '.no-bundle-'));
    t.after(() => fs.rmSync(base, { recursive: true, force: true }));
    fs.mkdirSync(path.join(base, 'bin'));
    const node = path.join(base, 'bin', 'node');
    try {
      fs.linkSync(fs.realpathSync(process.execPath), node);
    } catch {
      fs.copyFileSync(fs.realpathSync(process.execPath), node);
      fs.chmodSync(node, 0o755);
    }
    const r = spawnSync(node, ['-e',
      "const v8 = require('node:v8'); console.log(typeof v8.withHeapProfileLabels, typeof v8.setHeapProfileLabels, " +
      "'withHeapProfileLabels' in v8, typeof v8.getHeapStatistics, typeof v8.startHeapProfile)"],
    { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const [withType, setType, has, statsType, startType] = r.stdout.trim().split(' ');
    assert.deepEqual([withType, setType, has, statsType], ['undefined', 'undefined', 'true', 'function']);
    // startHeapProfile is then what the release's own node:v8 has: none on 22 and 24, Node.js' own on 26.
    const stockStart = stockStartHeapProfileType();
    if (stockStart !== undefined) assert.equal(startType, stockStart);
    else assert.ok(['undefined', 'function'].includes(startType), startType);
  });

  test('a startup snapshot build rejects labels: true; labels work after deserialization', {
    skip:
      !runtimeHasApi &&
      `node:v8 of Node.js ${process.version} has no heap-profile-labels functions, and a snapshot ` +
        'builder script can require only built-in modules (so not heap-labels/v8)',
  }, (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hl-snapshot-'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const entry = path.join(dir, 'entry.js');
    fs.writeFileSync(entry, `
      const v8 = require('node:v8');
      let rejected;
      try { v8.startHeapProfile({ labels: true }); } catch (e) { rejected = e.code; }
      const inBuild = v8.withHeapProfileLabels({ phase: 'build' }, () => 'ran');
      v8.startupSnapshot.setDeserializeMainFunction(() => {
        const handle = v8.startHeapProfile({ labels: true, groupBy: ['phase'], sampleInterval: 256 });
        const kept = v8.withHeapProfileLabels({ phase: 'deserialized' }, () =>
          Array.from({ length: 3000 }, (_, i) => ({ i, a: new Array(32).fill(i) })));
        const profile = handle.getAllocationProfile();
        const stats = handle.getHeapStats();
        handle.stop();
        console.log(JSON.stringify({
          rejected, inBuild, kept: kept.length,
          labeled: profile.samples.filter((s) => s.labels.phase === 'deserialized').length,
          groups: stats.groups.map((g) => g.labels.phase).filter(Boolean),
        }));
      });
    `);
    const blob = path.join(dir, 'snap.blob');
    const build = spawnSync(process.execPath, ['--snapshot-blob', blob, '--build-snapshot', entry], { encoding: 'utf8', cwd: dir });
    assert.equal(build.status, 0, build.stderr);
    const run = spawnSync(process.execPath, ['--snapshot-blob', blob], { encoding: 'utf8', cwd: dir });
    assert.equal(run.status, 0, run.stderr);
    const r = JSON.parse(run.stdout.trim().split('\n').pop());
    assert.equal(r.rejected, 'ERR_NOT_SUPPORTED_IN_SNAPSHOT');
    assert.equal(r.inBuild, 'ran');
    assert.equal(r.kept, 3000);
    assert.deepEqual(r.groups, ['deserialized']);
    if (expectedAsyncContextFrame() && labeled) assert.ok(r.labeled > 0, 'labels after deserialization');
  });

  test('stock node:v8 stays as it is (Node.js 26: its own startHeapProfile)', {
    skip: runtimeHasApi && 'node:v8 has the API here (see above)',
  }, () => {
    assert.equal(typeof nodeV8.withHeapProfileLabels, 'undefined');
    if (typeof nodeV8.startHeapProfile === 'function') {
      assert.notEqual(nodeV8.startHeapProfile, require('heap-labels/v8').startHeapProfile);
      const handle = nodeV8.startHeapProfile();
      assert.equal(typeof handle.stop(), 'string');
      assert.equal(handle.stop(), undefined);
    }
  });
});
