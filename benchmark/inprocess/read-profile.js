'use strict';
// Reading a large profile: getAllocationProfile() + byLabel() + toPprof() for ~100k live samples
// against Node's own sampling heap profile read through the inspector
// (HeapProfiler.getSamplingProfile) and against @datadog/pprof's read and encoding
// (heap.profile() + encodeSync(): V8's profile to gzip'd pprof, no labels) for the same heap.
//
//   node benchmark/inprocess/read-profile.js [--runtime stock=/path/node --runtime patched=/path/node]
//        [--quick] [--pairs 5] [--reads 5] [--samples 100000] [--interval 256] [--sets 100]
//
// The two profilers are the same V8 sampling heap profiler, so they cannot run at once: each
// measurement is a child process (phase `ours` or `inspector`) that starts its profiler, builds the
// same heap (objects from 8 allocation sites, spread over `sets` label sets: labels are captured on
// a patched runtime only; many sets make the reads' label lookups show), runs a full GC and reads the profile `reads` times; the median read counts.
// Phases alternate (ours, inspector, datadog, datadog, inspector, ours, ...) over `pairs` pairs. A
// runtime without the inspector (the patched test build has none) runs `ours` only and is compared
// with the inspector phase of the first runtime that has one, pair by pair. The datadog phase runs
// on the runtimes where @datadog/pprof loads (a devDependency); --json FILE writes every phase's
// figures, and whether @datadog/pprof loaded, per runtime.

const { spawnSync } = require('node:child_process');

const inspector = (() => {
  try {
    return require('node:inspector');
  } catch {
    return null;
  }
})();
const c = require('./common');

const LABEL_SETS = 100;

// ~`bytes` of live objects from 8 sites at different stack depths, labeled round-robin with
// `sets` label sets.
function buildHeap(bytes, withLabels, sets = LABEL_SETS) {
  const kept = [];
  const perObject = 51; // measured: 4-property objects here give one 256 B sample per ~5 objects
  const n = Math.ceil(bytes / perObject);
  const sites = [
    (i) => ({ a: i, b: null, c: null, d: null }),
    (i) => ({ k: i, v: i, w: null, x: null }),
    (i) => ({ id: i, p: 1, q: 2, r: 3 }),
    (i) => ({ s: i, t: null, u: null, z: null }),
  ];
  // Objects per labeled scope: at most 1000, fewer when there are more sets than scopes otherwise.
  const chunk = Math.max(1, Math.min(1000, Math.floor(n / sets)));
  const run = (i0, depth) => {
    if (depth > 0) return run(i0, depth - 1);
    const site = sites[(i0 / chunk) % sites.length];
    for (let i = i0; i < Math.min(n, i0 + chunk); i++) kept.push(site(i));
    return undefined;
  };
  const hl = withLabels ? require('../../lib') : null;
  for (let i0 = 0, k = 0; i0 < n; i0 += chunk, k++) {
    const depth = k % 2; // two depths per site: 8 distinct stacks
    if (hl) hl.withHeapProfileLabels({ route: `/route/${k % sets}` }, () => run(i0, depth));
    else run(i0, depth);
  }
  return kept;
}

// A turn of the event loop first: Node runs some finalizers of native objects (those of the
// previous read) from an immediate, and only then are they garbage.
async function forceGc() {
  await new Promise((resolve) => setImmediate(resolve));
  globalThis.gc();
  globalThis.gc();
}

async function childOurs(args) {
  const hl = require('../../lib');
  const interval = Number(args.interval);
  const reads = Number(args.reads);
  const sets = Number(args.sets);
  const handle = hl.startHeapProfile({ sampleInterval: interval, maxLabelSets: Math.max(10_000, sets + 100) });
  const kept = buildHeap(Number(args.samples) * interval, true, sets);
  const t = { get: [], byLabel: [], toPprof: [], toHeapProfile: [] };
  let samples = 0;
  let labeled = 0;
  let pprofBytes = 0;
  for (let r = 0; r < reads; r++) {
    await forceGc(); // the previous read's objects are garbage: collect them (and drop their samples)
    let profile;
    t.get.push(c.timeMs(() => (profile = handle.getAllocationProfile())));
    t.byLabel.push(c.timeMs(() => profile.byLabel('route')));
    let pprof;
    t.toPprof.push(c.timeMs(() => (pprof = profile.toPprof())));
    t.toHeapProfile.push(c.timeMs(() => profile.toHeapProfile()));
    samples = profile.samples.length;
    labeled = profile.samples.filter((s) => s.labels !== undefined).length;
    pprofBytes = pprof.length;
  }
  handle.stop();
  return {
    phase: 'ours',
    samples,
    labeled,
    pprofBytes,
    kept: kept.length,
    ms: Object.fromEntries(Object.entries(t).map(([k, v]) => [k, c.median(v)])),
  };
}

async function childInspector(args) {
  const interval = Number(args.interval);
  const reads = Number(args.reads);
  const session = new inspector.Session();
  session.connect();
  const post = (method, params) =>
    new Promise((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res))));
  await post('HeapProfiler.enable');
  await post('HeapProfiler.startSampling', { samplingInterval: interval });
  const kept = buildHeap(Number(args.samples) * interval, false, Number(args.sets));
  const t = { get: [], stringify: [] };
  let samples = 0;
  let jsonBytes = 0;
  for (let r = 0; r < reads; r++) {
    await forceGc();
    const t0 = process.hrtime.bigint();
    const { profile } = await post('HeapProfiler.getSamplingProfile');
    t.get.push(Number(process.hrtime.bigint() - t0) / 1e6);
    let json;
    t.stringify.push(c.timeMs(() => (json = JSON.stringify(profile))));
    samples = profile.samples.length;
    jsonBytes = json.length;
  }
  await post('HeapProfiler.stopSampling');
  session.disconnect();
  return {
    phase: 'inspector',
    samples,
    jsonBytes,
    kept: kept.length,
    ms: Object.fromEntries(Object.entries(t).map(([k, v]) => [k, c.median(v)])),
  };
}

async function childDatadog(args) {
  const { heap, encodeSync } = require('@datadog/pprof');
  const interval = Number(args.interval);
  const reads = Number(args.reads);
  heap.start(interval, 64);
  const kept = buildHeap(Number(args.samples) * interval, false, Number(args.sets));
  const t = { profile: [], encode: [] };
  let samples = 0;
  let pprofBytes = 0;
  for (let r = 0; r < reads; r++) {
    await forceGc();
    let profile;
    t.profile.push(c.timeMs(() => (profile = heap.profile())));
    let pprof;
    t.encode.push(c.timeMs(() => (pprof = encodeSync(profile))));
    samples = profile.sample.length;
    pprofBytes = pprof.length;
  }
  heap.stop();
  return {
    phase: 'datadog',
    samples,
    pprofBytes,
    kept: kept.length,
    ms: Object.fromEntries(Object.entries(t).map(([k, v]) => [k, c.median(v)])),
  };
}

// Whether @datadog/pprof loads on `rt` (true), or why not.
function datadogLoads(rt) {
  const r = spawnSync(rt.node, [...rt.flags, '-e', "require('@datadog/pprof').heap"], { encoding: 'utf8', cwd: c.root });
  if (r.status === 0) return true;
  return (r.stderr.split('\n').find((l) => /Error|Cannot/.test(l)) ?? `exit ${r.status}`).trim();
}

function parent(args) {
  const quick = Boolean(args.quick);
  const pairs = Number(args.pairs || (quick ? 1 : 5));
  const reads = Number(args.reads || (quick ? 2 : 5));
  const samples = Number(args.samples || (quick ? 10_000 : 100_000));
  const interval = Number(args.interval || 256);
  const sets = Number(args.sets || LABEL_SETS);
  const runtimes = c.runtimesFrom(args.runtime);
  const childArgs = (phase) =>
    ['--child', phase, '--reads', reads, '--samples', samples, '--interval', interval, '--sets', sets].map(String);
  const features = Object.fromEntries(
    runtimes.map((rt) => {
      const r = spawnSync(rt.node, ['-p', 'process.features.inspector'], {
        encoding: 'utf8',
      });
      return [rt.name, r.stdout.trim() === 'true'];
    }),
  );
  const datadog = Object.fromEntries(runtimes.map((rt) => [rt.name, datadogLoads(rt)]));
  const ref = runtimes.find((rt) => features[rt.name]);
  const res = Object.fromEntries(
    runtimes.map((rt) => [rt.name, { ours: [], inspector: [], datadog: [], datadogProblem: datadog[rt.name] === true ? null : datadog[rt.name] }]),
  );
  for (let p = 0; p < pairs; p++) {
    const jobs = [];
    for (const rt of runtimes) {
      jobs.push([rt, 'ours']);
      if (features[rt.name]) jobs.push([rt, 'inspector']);
      if (datadog[rt.name] === true) jobs.push([rt, 'datadog']);
    }
    if (p % 2 === 1) jobs.reverse();
    for (const [rt, phase] of jobs) {
      process.stderr.write(`read-profile: pair ${p + 1}/${pairs} ${rt.name} ${phase}\n`);
      res[rt.name][phase].push(c.runChild(rt, __filename, childArgs(phase), { extraFlags: ['--expose-gc'] }));
    }
  }

  const out = [];
  out.push('### Reading a profile of ~100k live samples: heap-labels vs the inspector and @datadog/pprof');
  out.push('');
  out.push(
    `sampleInterval ${interval} B, ~${samples} live samples from 8 stacks and ${sets} label sets; ` +
      `${pairs} alternating process pairs, median of ${reads} reads per process; ` +
      'ratios per pair (median, IQR, range).',
  );
  out.push('');
  const rows = [];
  for (const rt of runtimes) {
    const ours = res[rt.name].ours;
    const insp = (features[rt.name] ? res[rt.name] : ref ? res[ref.name] : { inspector: [] }).inspector;
    const total = ours.map((o) => o.ms.get + o.ms.byLabel + o.ms.toPprof);
    const ratioTo = insp.length ? c.fmtRatio(total.map((x, i) => x / insp[i].ms.get)) : 'n/a (no inspector)';
    const dd = res[rt.name].datadog;
    const ddTotal = dd.map((o) => o.ms.profile + o.ms.encode);
    rows.push([
      `${rt.name} (${rt.version})`,
      `${Math.round(c.median(ours.map((o) => o.samples)))} (${Math.round(c.median(ours.map((o) => o.labeled)))} labeled)`,
      c.fmtValue(ours.map((o) => o.ms.get), 1, 'ms'),
      c.fmtValue(ours.map((o) => o.ms.byLabel), 1, 'ms'),
      c.fmtValue(ours.map((o) => o.ms.toPprof), 1, 'ms'),
      c.fmtValue(total, 1, 'ms'),
      c.fmtValue(ours.map((o) => o.ms.toHeapProfile), 1, 'ms'),
      insp.length
        ? `${c.fmtValue(insp.map((o) => o.ms.get), 1, 'ms')}${features[rt.name] ? '' : ` (${ref.name})`}`
        : 'n/a',
      ratioTo,
      dd.length ? c.fmtValue(ddTotal, 1, 'ms') : `n/a (${res[rt.name].datadogProblem})`,
      dd.length ? c.fmtRatio(total.map((x, i) => x / ddTotal[i])) : 'n/a',
    ]);
  }
  out.push(
    c.table(
      [
        'runtime',
        'samples',
        'getAllocationProfile',
        'byLabel',
        'toPprof',
        'get+byLabel+toPprof',
        'toHeapProfile',
        'inspector getSamplingProfile',
        'ours vs inspector',
        '@datadog/pprof profile()+encodeSync()',
        'ours vs @datadog/pprof',
      ],
      rows,
    ),
  );
  if (ref) {
    const insp = res[ref.name].inspector;
    out.push('');
    out.push(
      `Inspector on ${ref.name}: ${Math.round(c.median(insp.map((o) => o.samples)))} samples, JSON ` +
        `${(c.median(insp.map((o) => o.jsonBytes)) / 1e6).toFixed(1)} MB, JSON.stringify ` +
        `${c.fmtValue(insp.map((o) => o.ms.stringify), 1, 'ms')}; our pprof ` +
        `${(c.median(res[ref.name].ours.map((o) => o.pprofBytes)) / 1024).toFixed(1)} KiB (gzip).`,
    );
  }
  out.push('');
  return { markdown: out.join('\n'), results: res };
}

module.exports = { buildHeap, forceGc };

if (require.main === module) {
  const args = c.parseArgs(process.argv.slice(2), { flags: ['quick'], repeatable: ['runtime'] });
  const children = { ours: childOurs, inspector: childInspector, datadog: childDatadog };
  if (args.child !== undefined) {
    children[args.child](args).then((r) => console.log(JSON.stringify(r)));
  } else {
    const { markdown, results } = parent(args);
    if (args.json) require('node:fs').writeFileSync(args.json, JSON.stringify(results, null, 2));
    console.log(markdown);
  }
}
