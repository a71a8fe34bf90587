'use strict';
// Cost of labelCounters() (what every metrics scrape calls) at 10k label sets.
//
//   node benchmark/inprocess/counters.js [--runtime stock=/path/node --runtime patched=/path/node]
//        [--quick] [--sets 10000] [--calls 300] [--interval 512]
//
// One child process per runtime: a session samples at `interval` (default 512 KiB, as in
// production: a tiny interval would make every allocation of the read itself a sample) while `sets`
// label sets each retain small objects and an 8 KiB Buffer (on the patched runtime the Buffer's
// external bytes give every set a row), then labelCounters() runs `calls` times. Reported: the
// median and p90 of one call, split into the native read (readColumns(): a scan of the registry's
// counter table into the typed-array columns lib/ keeps) and the JS rows; the rows per call. On stock runtimes samples carry
// no labels: one row (the unlabeled group, V8's used heap size), but the same scan of the table.

const c = require('./common');

async function child(args) {
  const hl = require('../../lib');
  const { native } = require('../../lib/native');
  const { readColumns, fromColumns } = require('../../lib/counters');
  const sets = Number(args.sets);
  const handle = hl.startHeapProfile({ sampleInterval: Number(args.interval), maxLabelSets: sets + 100 });
  const kept = [];
  for (let i = 0; i < sets; i++) {
    hl.withHeapProfileLabels({ route: `/route/${i}`, tenant: `t${i % 97}` }, () => {
      for (let j = 0; j < 40; j++) kept.push({ i, j, s: null, t: null });
      kept.push(Buffer.alloc(8192)); // external bytes: a row per set on the patched runtime
    });
  }
  globalThis.gc();
  for (let i = 0; i < 20; i++) hl.labelCounters(); // warm up (and fill the id -> labels cache)
  const total = [];
  const nativeOnly = [];
  let rows = 0;
  for (let i = 0; i < Number(args.calls); i++) {
    total.push(c.timeMs(() => (rows = hl.labelCounters().groups.length)));
    nativeOnly.push(c.timeMs(() => readColumns()));
  }
  const perSet = hl.labelCounters().perSetSamples;
  // The JS side at one row per set, on every runtime: columns of the real sets' ids (ids are
  // compact, 1..sets here; labelSetPairs confirms they are interned) and their real labels, as a
  // native read returns them when every set has live samples and external bytes (the patched
  // runtime's case). On stock runtimes a native read gives one row, so this is the only measure
  // of the per-row cost there.
  const base = readColumns();
  const ids = Uint32Array.from({ length: sets }, (_, i) => i + 1);
  const pairs = native.labelSetPairs(ids);
  const interned = pairs.length;
  const cols = {
    ...base,
    rows: sets,
    ids,
    generations: Float64Array.from(pairs, (set) => set.generation),
    samples: Float64Array.from(ids, (id) => 1 + (id % 7)),
    externalBytes: Float64Array.from(ids, () => 8192),
    externalPeakBytes: Float64Array.from(ids, () => 8192),
  };
  for (let i = 0; i < 20; i++) fromColumns(cols);
  const jsRows = [];
  let jsGroups = 0;
  for (let i = 0; i < Number(args.calls); i++) jsRows.push(c.timeMs(() => (jsGroups = fromColumns(cols).groups.length)));
  handle.stop();
  return {
    rows,
    perSet,
    labelSets: hl.stats().labelSets,
    total: { median: c.median(total), p90: c.quantile(total, 0.9) },
    native: { median: c.median(nativeOnly), p90: c.quantile(nativeOnly, 0.9) },
    js: { median: c.median(jsRows), p90: c.quantile(jsRows, 0.9), groups: jsGroups, interned },
    kept: kept.length,
  };
}

function parent(args) {
  const quick = Boolean(args.quick);
  const sets = Number(args.sets || (quick ? 1000 : 10_000));
  const calls = Number(args.calls || (quick ? 20 : 300));
  const interval = Number(args.interval || 512 * 1024);
  const runtimes = c.runtimesFrom(args.runtime);
  const rows = [];
  for (const rt of runtimes) {
    process.stderr.write(`counters: ${rt.name}\n`);
    const r = c.runChild(rt, __filename, ['--child', '1', '--sets', sets, '--calls', calls, '--interval', interval].map(String), {
      extraFlags: ['--expose-gc'],
    });
    rows.push([
      `${rt.name} (${rt.version})`,
      `${r.labelSets}`,
      `${r.rows}${r.perSet ? '' : ' (stock: unlabeled group only)'}`,
      `${(r.total.median * 1000).toFixed(0)} us (p90 ${(r.total.p90 * 1000).toFixed(0)} us)`,
      `${(r.native.median * 1000).toFixed(0)} us (p90 ${(r.native.p90 * 1000).toFixed(0)} us)`,
      `${(r.js.median * 1000).toFixed(0)} us (p90 ${(r.js.p90 * 1000).toFixed(0)} us), ${r.js.groups} groups`,
    ]);
  }
  const out = [];
  out.push('### labelCounters() at 10k label sets');
  out.push('');
  out.push(
    `${sets} label sets, each retaining 40 small objects and an 8 KiB Buffer, sampleInterval ${interval} B; ${calls} calls after 20 warm-up ` +
      "calls; one call (median, p90). On stock runtimes there is one row (the unlabeled group: V8's used heap size).",
  );
  out.push('');
  out.push(
    `"JS side at ${sets} rows": the part after the native read (labels from the id cache, one group object per row) ` +
      'for columns of one row per interned set (their real ids and labels), as the patched runtime returns them ' +
      'when every set has a row; on stock runtimes, where a read has one row, it is measured only this way.',
  );
  out.push('');
  out.push(c.table(['runtime', 'label sets', 'rows per call', 'labelCounters()', 'of which native read', `JS side at ${sets} rows`], rows));
  out.push('');
  return { markdown: out.join('\n') };
}

if (require.main === module) {
  const args = c.parseArgs(process.argv.slice(2), { flags: ['quick'], repeatable: ['runtime'] });
  if (args.child) child(args).then((r) => console.log(JSON.stringify(r)));
  else console.log(parent(args).markdown);
}
