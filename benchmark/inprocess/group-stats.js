'use strict';
// Cost of getHeapStats() (the group counters a metrics scrape reads) at 10k label sets in 256
// groups, beside labelCounters() of the same process.
//
//   node benchmark/inprocess/group-stats.js [--runtime stock=/path/node --runtime patched=/path/node]
//        [--quick] [--sets 10000] [--groups 256] [--calls 300] [--interval 512]
//
// One child process per runtime: a session with groupBy ['tenant'] and maxGroups `groups` samples
// at `interval` (default 512 KiB) while `sets` label sets ({ route, tenant }, tenant one of
// `groups` values) each retain small objects and an 8 KiB Buffer; then getHeapStats() and
// labelCounters() alternate `calls` times. The group counters are kept at capture, so a read copies
// groups + 2 rows whatever the number of sets. Reported: median and p90 of one call; the groups
// read and how many had samples (a group exists once something is charged to it: on stock runtimes
// samples carry no labels and no bytes are counted per set, so only the unknown and overflow groups
// are read).

const c = require('./common');

async function child(args) {
  const hl = require('../../lib');
  const sets = Number(args.sets);
  const groups = Number(args.groups);
  const handle = hl.startHeapProfile({
    sampleInterval: Number(args.interval),
    maxLabelSets: sets + 100,
    groupBy: ['tenant'],
    maxGroups: groups,
  });
  const kept = [];
  for (let i = 0; i < sets; i++) {
    hl.withHeapProfileLabels({ route: `/route/${i}`, tenant: `t${i % groups}` }, () => {
      for (let j = 0; j < 40; j++) kept.push({ i, j, s: null, t: null });
      kept.push(Buffer.alloc(8192));
    });
  }
  globalThis.gc();
  for (let i = 0; i < 20; i++) {
    handle.getHeapStats({ advancePeakWindow: true });
    hl.labelCounters();
  }
  const stats = [];
  const counters = [];
  let read;
  for (let i = 0; i < Number(args.calls); i++) {
    stats.push(c.timeMs(() => (read = handle.getHeapStats({ advancePeakWindow: true }))));
    counters.push(c.timeMs(() => hl.labelCounters()));
  }
  const withSamples = read.groups.filter((g) => g.currentHeapSampleCount > 0n).length;
  const withExternal = read.groups.filter((g) => g.currentExternalBytes > 0n).length;
  handle.stop();
  return {
    labelSets: hl.stats().labelSets,
    groups: read.groups.length,
    withSamples,
    withExternal,
    stats: { median: c.median(stats), p90: c.quantile(stats, 0.9) },
    counters: { median: c.median(counters), p90: c.quantile(counters, 0.9) },
    kept: kept.length,
  };
}

function parent(args) {
  const quick = Boolean(args.quick);
  const sets = Number(args.sets || (quick ? 1000 : 10_000));
  const groups = Number(args.groups || 256);
  const calls = Number(args.calls || (quick ? 20 : 300));
  const interval = Number(args.interval || 512 * 1024);
  const rows = [];
  for (const rt of c.runtimesFrom(args.runtime)) {
    process.stderr.write(`group-stats: ${rt.name}\n`);
    const r = c.runChild(
      rt,
      __filename,
      ['--child', '1', '--sets', sets, '--groups', groups, '--calls', calls, '--interval', interval].map(String),
      { extraFlags: ['--expose-gc'] },
    );
    const us = (t) => `${(t.median * 1000).toFixed(0)} us (p90 ${(t.p90 * 1000).toFixed(0)} us)`;
    rows.push([
      `${rt.name} (${rt.version})`,
      `${r.labelSets}`,
      `${r.groups} (${r.withSamples} with samples, ${r.withExternal} with external bytes)`,
      us(r.stats),
      us(r.counters),
    ]);
  }
  const out = [];
  out.push(`### getHeapStats() at ${sets} label sets in ${groups} groups`);
  out.push('');
  out.push(
    `${sets} label sets { route, tenant } grouped by tenant (${groups} values, maxGroups ${groups}), each retaining 40 small ` +
      `objects and an 8 KiB Buffer, sampleInterval ${interval} B; ${calls} calls of each after 20 warm-up calls; ` +
      'one call (median, p90), getHeapStats({ advancePeakWindow: true }) and labelCounters() alternating.',
  );
  out.push('');
  out.push(c.table(['runtime', 'label sets', 'groups read', 'getHeapStats()', 'labelCounters() (same process)'], rows));
  out.push('');
  return { markdown: out.join('\n') };
}

if (require.main === module) {
  const args = c.parseArgs(process.argv.slice(2), { flags: ['quick'], repeatable: ['runtime'] });
  if (args.child) child(args).then((r) => console.log(JSON.stringify(r)));
  else console.log(parent(args).markdown);
}
