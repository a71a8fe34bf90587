'use strict';
// Worker threads have their own labels, interning and profile.

const test = require('node:test');
const assert = require('node:assert/strict');
const { Worker } = require('node:worker_threads');
const { once } = require('node:events');
const { libPath } = require('./helpers');
const { startHeapProfile, withHeapProfileLabels, getHeapProfileLabels } = require(libPath);

const workerCode = `
  const { parentPort, workerData } = require('node:worker_threads');
  const hl = require(workerData.libPath);
  const seenAtStart = hl.getHeapProfileLabels();
  const handle = hl.startHeapProfile({ sampleInterval: 4096 });
  let secondStart;
  try { hl.startHeapProfile(); secondStart = 'started'; } catch (err) { secondStart = err.message; }
  const kept = [];
  function workerOnlyAllocator() { for (let i = 0; i < 200; i++) kept.push(new Array(1000).fill(i)); }
  hl.withHeapProfileLabels({ thread: 'worker' }, async () => {
    await new Promise((r) => setTimeout(r, 5));
    workerOnlyAllocator();
    const labels = hl.getHeapProfileLabels();
    parentPort.once('message', () => {
      const profile = handle.stop();
      const names = new Set();
      const stack = [profile.head];
      while (stack.length) { const n = stack.pop(); names.add(n.callFrame.functionName); stack.push(...n.children); }
      parentPort.postMessage({
        seenAtStart: seenAtStart === undefined ? null : seenAtStart,
        secondStart,
        labels: { ...labels },
        frozen: Object.isFrozen(labels),
        samples: profile.samples.length,
        hasWorkerSite: names.has('workerOnlyAllocator'),
        hasMainSite: names.has('mainOnlyAllocator'),
        kept: kept.length,
      });
    });
    parentPort.postMessage('ready');
  });
`;

test('each worker has its own labels and its own profile, concurrently with the main thread', async () => {
  const mainHandle = startHeapProfile({ sampleInterval: 4096 });
  const kept = [];
  function mainOnlyAllocator() { for (let i = 0; i < 200; i++) kept.push(new Array(1000).fill(i)); }
  try {
    await withHeapProfileLabels({ thread: 'main' }, async () => {
      const worker = new Worker(workerCode, { eval: true, workerData: { libPath } });
      // Listen for 'exit' now: when the worker exits first, Node emits its last 'message' and then
      // 'exit' in the same tick, before an await after the message could register a listener.
      const exited = once(worker, 'exit');
      const [ready] = await once(worker, 'message');
      assert.equal(ready, 'ready');
      mainOnlyAllocator();
      worker.postMessage('report');
      const [report] = await once(worker, 'message');
      const [exitCode] = await exited;
      assert.equal(exitCode, 0);

      assert.equal(report.seenAtStart, null, 'main thread labels leaked into the worker');
      assert.match(report.secondStart, /already running/);
      assert.deepEqual(report.labels, { thread: 'worker' });
      assert.equal(report.frozen, true);
      assert.ok(report.samples > 0);
      assert.equal(report.hasWorkerSite, true);
      assert.equal(report.hasMainSite, false, 'the worker profile shows main-thread allocations');
      assert.equal(getHeapProfileLabels().thread, 'main');
    });
    const mainProfile = mainHandle.getAllocationProfile();
    const names = new Set();
    const stack = [mainProfile.head];
    while (stack.length) { const n = stack.pop(); names.add(n.callFrame.functionName); stack.push(...n.children); }
    assert.equal(names.has('mainOnlyAllocator'), true);
    assert.equal(names.has('workerOnlyAllocator'), false, 'the main profile shows worker allocations');
  } finally {
    mainHandle.stop();
  }
  assert.equal(kept.length, 200);
});
