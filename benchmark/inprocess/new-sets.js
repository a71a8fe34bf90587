'use strict';
// The first use of a new label set, timed (issue 28 item 2: within 3 us; a million distinct sets in
// under 5 s). call-instructions.js counts the instructions of the same call; this is its time.
//
//   node [--experimental-async-context-frame] benchmark/inprocess/new-sets.js [--sets 1000000]
//        [--batch 1000] [--json FILE]
//
// One process, a profile session running (sampleInterval 512 KiB, the default maxLabelSets), as in
// production. Each call is `withHeapProfileLabels({ id: '<n>' }, fn)` with an id never used before:
// validation, interning, a label holder, the context switch. The sets are used once and dropped, as
// a million distinct request ids over a process's life would be: their holders are collected and
// their sets pruned as the run goes (the registry stays under maxLabelSets).
// Measured, in alternating batches of `batch` calls after a warm-up of 20 batches each:
//   new set   withHeapProfileLabels({ id: '<n>' }, fn)
//   anchor    als.run({ id: '<n>' }, fn): a bare AsyncLocalStorage with a new store object per call
// Per-call time = the median batch's time / batch. Then the whole run: `sets` calls in a row, timed
// end to end (GC and pruning included). Prints a markdown section.

const { AsyncLocalStorage } = require('node:async_hooks');
const fs = require('node:fs');
const path = require('node:path');
const c = require('./common');

function measure({ sets, batch }) {
  const hl = require(path.join(c.root, 'lib'));
  const handle = hl.startHeapProfile({ sampleInterval: 512 * 1024 });
  const als = new AsyncLocalStorage();
  const fn = () => 0;
  let n = 0;
  const newSet = () => {
    for (let i = 0; i < batch; i++) hl.withHeapProfileLabels({ id: String(n++) }, fn);
  };
  const anchor = () => {
    for (let i = 0; i < batch; i++) als.run({ id: String(n++) }, fn);
  };
  for (let i = 0; i < 20; i++) {
    newSet();
    anchor();
  }
  const batches = Math.max(5, Math.min(50, Math.floor(sets / batch / 4)));
  const t = { newSet: [], anchor: [] };
  for (let i = 0; i < batches; i++) {
    const order = i % 2 === 0 ? ['newSet', 'anchor'] : ['anchor', 'newSet'];
    for (const which of order) t[which].push(c.timeMs(which === 'newSet' ? newSet : anchor));
  }
  const wholeMs = c.timeMs(() => {
    for (let i = 0; i < sets; i++) hl.withHeapProfileLabels({ id: String(n++) }, fn);
  });
  // Where the sets went: held sets and holders at the end (the ones not collected yet), and those
  // bound to the overflow set (over maxLabelSets with nothing to prune: the overflow path, not a
  // first use). stats() prunes first.
  const { labelSets, liveLabelHolders, overflowLabelHolders } = hl.stats();
  handle.stop();
  return {
    node: process.version,
    sampleLabels: hl.capabilities().sampleLabels,
    batch,
    batches,
    newSetUs: (c.median(t.newSet) * 1000) / batch,
    anchorUs: (c.median(t.anchor) * 1000) / batch,
    newSetSpreadUs: c.spread(t.newSet.map((ms) => (ms * 1000) / batch)),
    sets,
    wholeMs,
    end: { labelSets, liveLabelHolders, overflowLabelHolders },
  };
}

if (require.main === module) {
  const args = c.parseArgs(process.argv.slice(2));
  const r = measure({ sets: Number(args.sets ?? 1_000_000), batch: Number(args.batch ?? 1000) });
  if (args.json) fs.writeFileSync(args.json, JSON.stringify(r, null, 2));
  console.log('### First use of a new label set (timed)\n');
  console.log(
    `${process.version}, a session at 512 KiB; ${r.batches} alternating batches of ${r.batch} calls after 20 warm-up ` +
      'batches each; median batch per call (IQR).\n',
  );
  console.log(
    c.table(
      ['call', 'us per call', 'anchor: als.run(new store, fn)', 'ratio', `${r.sets.toLocaleString('en-US')} distinct sets in a row`],
      [
        [
          'withHeapProfileLabels(new set, fn)',
          `${r.newSetUs.toFixed(2)} (IQR ${r.newSetSpreadUs.p25.toFixed(2)}..${r.newSetSpreadUs.p75.toFixed(2)})`,
          r.anchorUs.toFixed(3),
          `${(r.newSetUs / r.anchorUs).toFixed(1)}x`,
          `${(r.wholeMs / 1000).toFixed(2)} s (at the end: ${r.end.labelSets} sets, ${r.end.liveLabelHolders} holders, ` +
            `${r.end.overflowLabelHolders} on the overflow set)`,
        ],
      ],
    ),
  );
  console.log('');
}

module.exports = { measure };
