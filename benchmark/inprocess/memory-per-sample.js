'use strict';
// Memory per retained sample, and the part of it labels add.
//
//   node benchmark/inprocess/memory-per-sample.js [--runtime stock=/path/node --runtime patched=...]
//        [--quick] [--pairs 5] [--objects 1000000] [--interval 64]
//
// Each measurement is a fresh child process in one of three modes:
//   none       no profiler
//   unlabeled  profiler on (small sampleInterval, so nearly every object is sampled)
//   labeled    profiler on, the objects allocated under 100 label sets (captured on a patched
//              runtime only; on stock the labels are set and nothing is captured)
// The child runs a full GC, notes process.memoryUsage(), allocates and keeps `objects` small objects
// (the same sequence in every mode, inside withHeapProfileLabels or an equivalent bare
// AsyncLocalStorage.run), runs a full GC again, notes memoryUsage(), then counts the live samples.
// Per sample: (growth in mode A - growth in mode B) / samples, with A, B from the same pair of
// processes (modes alternate none, unlabeled, labeled, labeled, unlabeled, none, ...). Children run
// with MALLOC_ARENA_MAX=1. The resolution is a few bytes per sample (see the spread).

const { AsyncLocalStorage } = require('node:async_hooks');
const v8 = require('node:v8');
const c = require('./common');

const LABEL_SETS = 100;

function child(args) {
  const mode = args.child;
  const objects = Number(args.objects);
  const interval = Number(args.interval);
  const hl = require('../../lib');
  const als = new AsyncLocalStorage();
  const stores = Array.from({ length: LABEL_SETS }, (_, k) => ({ route: `/route/${k}` }));
  const labelSets = stores.map((s) => hl.withHeapProfileLabels(s, hl.getHeapProfileLabels));
  const gc = () => {
    globalThis.gc();
    globalThis.gc();
  };

  const kept = new Array(objects);
  const chunk = 1000;
  const fill = (i0) => {
    for (let i = i0; i < Math.min(objects, i0 + chunk); i++) kept[i] = { a: i, b: null, c: null, d: null };
  };
  gc();
  const before = { ...process.memoryUsage(), jsPhysical: v8.getHeapStatistics().total_physical_size };
  const handle = mode === 'none' ? null : hl.startHeapProfile({ sampleInterval: interval });
  for (let i0 = 0, k = 0; i0 < objects; i0 += chunk, k++) {
    if (mode === 'labeled') hl.withHeapProfileLabels(labelSets[k % LABEL_SETS], () => fill(i0));
    else als.run(stores[k % LABEL_SETS], () => fill(i0));
  }
  gc();
  const after = { ...process.memoryUsage(), jsPhysical: v8.getHeapStatistics().total_physical_size };
  let samples = 0;
  let labeled = 0;
  if (handle) {
    const profile = handle.stop();
    samples = profile.samples.length;
    labeled = profile.samples.filter((s) => s.labels !== undefined).length;
  }
  return {
    mode,
    samples,
    labeled,
    kept: kept.length,
    rss: after.rss - before.rss,
    // Outside the JS heap: RSS growth minus the growth of the JS heap's resident pages.
    native: after.rss - before.rss - (after.jsPhysical - before.jsPhysical),
    heapUsed: after.heapUsed - before.heapUsed,
    external: after.external - before.external,
    sampleLabels: hl.capabilities().sampleLabels,
  };
}

function parent(args) {
  const quick = Boolean(args.quick);
  const pairs = Number(args.pairs || (quick ? 1 : 5));
  const objects = Number(args.objects || (quick ? 50_000 : 1_000_000));
  const interval = Number(args.interval || 64);
  const runtimes = c.runtimesFrom(args.runtime);
  const modes = ['none', 'unlabeled', 'labeled'];

  const res = {};
  for (const rt of runtimes) res[rt.name] = Object.fromEntries(modes.map((m) => [m, []]));
  for (let p = 0; p < pairs; p++) {
    for (const rt of runtimes) {
      const order = p % 2 === 0 ? modes : [...modes].reverse();
      for (const mode of order) {
        process.stderr.write(`memory-per-sample: pair ${p + 1}/${pairs} ${rt.name} ${mode}\n`);
        res[rt.name][mode].push(
          c.runChild(rt, __filename, ['--child', mode, '--objects', objects, '--interval', interval].map(String), {
            extraFlags: ['--expose-gc'],
            // One malloc arena: RSS then follows V8's native allocations more closely (less spread).
            env: { MALLOC_ARENA_MAX: '1' },
          }),
        );
      }
    }
  }

  const out = [];
  out.push('### Memory per retained sample');
  out.push('');
  out.push(
    `${objects} retained 4-property objects, sampleInterval ${interval} B, ${LABEL_SETS} label sets; ` +
      `${pairs} process triples per runtime; bytes per live sample = growth difference / samples, ` +
      'per pair (median, IQR). V8 keeps its sample records outside the JS heap: "native" is RSS growth ' +
        'minus the growth of the JS heap\'s resident pages; "JS heap" is heapUsed.',
  );
  out.push('');
  const rows = [];
  for (const rt of runtimes) {
    const r = res[rt.name];
    const perSample = (a, b, field) => r[a].map((x, i) => (x[field] - r[b][i][field]) / x.samples);
    const captured = r.labeled.every((x) => x.labeled > 0);
    rows.push([
      `${rt.name} (${rt.version})`,
      String(Math.round(c.median(r.labeled.map((x) => x.samples)))),
      c.fmtValue(perSample('unlabeled', 'none', 'rss'), 1, 'B'),
      c.fmtValue(perSample('unlabeled', 'none', 'native'), 1, 'B'),
      c.fmtValue(perSample('labeled', 'unlabeled', 'rss'), 1, 'B'),
      c.fmtValue(perSample('labeled', 'unlabeled', 'native'), 1, 'B'),
      c.fmtValue(perSample('labeled', 'unlabeled', 'heapUsed'), 2, 'B'),
      captured ? 'yes' : 'no (sampleLabels false)',
    ]);
  }
  out.push(
    c.table(
      [
        'runtime',
        'live samples',
        'profiler: RSS/sample',
        'profiler: native/sample',
        'labels: RSS/sample',
        'labels: native/sample',
        'labels: JS heap/sample',
        'labels captured',
      ],
      rows,
    ),
  );
  out.push('');
  return { markdown: out.join('\n'), results: res };
}

if (require.main === module) {
  const args = c.parseArgs(process.argv.slice(2), { flags: ['quick'], repeatable: ['runtime'] });
  if (args.child) {
    console.log(JSON.stringify(child(args)));
  } else {
    const { markdown, results } = parent(args);
    if (args.json) require('node:fs').writeFileSync(args.json, JSON.stringify(results, null, 2));
    console.log(markdown);
  }
}
