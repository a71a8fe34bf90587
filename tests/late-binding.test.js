'use strict';
// Late binding (docs/architecture.md, "Late binding: request cells"; issue 26 item 2): what a
// request allocates before its route is known (app-level middleware) is read under its route, heap
// samples and ArrayBuffer bytes alike; requests no route takes stay in their method's bucket.

const test = require('node:test');
const assert = require('node:assert/strict');
const { runFixture, asyncContextFrameFlags } = require('./helpers');

const FLAGS = ['--expose-gc', ...asyncContextFrameFlags()];
const KIB64 = 64 * 1024;

for (const framework of ['express', 'koa']) {
  test(`${framework}: pre-routing allocations are charged to the route that handled the request`, (t) => {
    const run = runFixture('late-binding.js', { nodeArgs: FLAGS, args: [framework] });
    assert.equal(run.status, 0, run.stderr);
    const out = run.json;
    assert.deepEqual(out.statuses, { 200: 160, 404: 20 });
    // Before routing, the request is in its method's bucket: that is what it is at that moment.
    assert.deepEqual(out.seenBeforeRouting, ['(unmatched) GET']);
    if (!out.sampleLabels || !out.externalBytes) {
      t.skip('capabilities() reports no per-sample labels or external bytes: late binding needs the patched runtime');
      return;
    }
    const group = (route) => out.groups.find((g) => g.route === route) ?? { bytes: 0, externalBytes: 0 };
    const [a, b, bucket] = ['/api/a/:id', '/b/:id', '(unmatched) GET'].map(group);
    const detail = JSON.stringify(out.groups);
    // Each request kept one 64 KiB Buffer before routing: exact, per route.
    assert.equal(a.externalBytes, 120 * KIB64, detail);
    assert.equal(b.externalBytes, 40 * KIB64, detail);
    assert.equal(bucket.externalBytes, 20 * KIB64, detail);
    // And about 16 KiB of heap objects (sampled, so within tolerance): 6 : 2 : 1.
    assert.ok(a.bytes / b.bytes > 2.2 && a.bytes / b.bytes < 3.8, `a/b = ${a.bytes / b.bytes}: ${detail}`);
    assert.ok((a.bytes + b.bytes) / bucket.bytes > 5, `routed/bucket = ${(a.bytes + b.bytes) / bucket.bytes}: ${detail}`);
    // Allocated bytes, garbage that died before routing included: the same proportions (without
    // the pending dead samples of step 6 the garbage would all stay in the bucket).
    const allocated = (g) => g.allocatedBytes ?? 0;
    assert.ok(allocated(a) / allocated(b) > 2.2 && allocated(a) / allocated(b) < 3.8, `allocated a/b: ${detail}`);
    assert.ok((allocated(a) + allocated(b)) / allocated(bucket) > 5, `allocated routed/bucket: ${detail}`);
    for (const g of out.groups) {
      assert.ok([null, '/api/a/:id', '/b/:id', '(unmatched) GET'].includes(g.route), `label value ${g.route}`);
    }
  });
}

for (const [mode, nodeArgs] of [
  ['AsyncContextFrame', FLAGS],
  ['async_hooks', ['--no-async-context-frame'].filter((f) => process.allowedNodeEnvironmentFlags.has(f))],
]) {
  test(`${mode}: a request holder rebound where it is current takes the request's listeners back from an earlier route's holder`, () => {
    const run = runFixture('listeners-rebind.js', { nodeArgs });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(run.json, { afterFirst: '/first', afterSecond: '/second', end: '/second', finish: '/second' });
  });
}

for (const [mode, flags] of [
  ['AsyncContextFrame', FLAGS],
  ['async_hooks', ['--expose-gc', ...asyncContextFrameOff()]],
]) {
  test(`${mode}: under a request holder getHeapProfileLabels() says its own labels, not Object.prototype's, not a binding the cell refused`, () => {
    const run = runFixture('request-holder-labels.js', { nodeArgs: flags });
    assert.equal(run.status, 0, run.stderr);
    const { steps, threw, after } = run.json;
    assert.equal(threw, undefined, 'no throw with a string in Object.prototype.labels');
    assert.deepEqual(steps, [
      ['started', '(unmatched) GET'],
      ['polluted', '(unmatched) GET'],
      ['polluted with a string', '(unmatched) GET'],
      ['routed 1', '/r1'],
      ['routed 2', '/r2'],
      ['routed 3', '/r3'],
      ['routed 4', '/r4'],
      ['routed 5', '/r5'],
      ['routed 6', '/r6'],
      ['routed 7', '/r7'],
      // The cell has used its 8 sets (the bucket and 7 routes): its samples stay /r7's.
      ['routed 8', '/r7'],
      ['routed 9', '/r7'],
    ]);
    assert.equal(after, null, 'nothing leaks out of the labeled scope');
  });
}

// The flag that turns AsyncContextFrame off whatever the runtime's default (none where it does not exist).
function asyncContextFrameOff() {
  const flag = ['--async-context-frame', '--experimental-async-context-frame'].find((f) =>
    process.allowedNodeEnvironmentFlags.has(f),
  );
  return flag === undefined ? [] : [flag.replace('--', '--no-')];
}
