'use strict';
// Allocation loop: what sampling and label capture cost per sample.
//
//   node benchmark/inprocess/alloc-loop.js [--runtime stock=/path/node --runtime patched=/path/node]
//        [--quick] [--pairs 5] [--reps 7] [--iterations 5000000] [--interval 4096]
//
// A tight loop allocates small objects (a ring keeps the last 8192 alive, the rest is garbage) with
// a small sampleInterval, so sampling dominates. Modes, run in rotating order inside one process:
//   off          profiler off
//   labels-only  profiler off, labels set (the AsyncLocalStorage cost alone)
//   on           profiler on (sampleInterval 4 KiB), no labels
//   labels       profiler on, labels set: on a patched runtime every sample captures the label set;
//                on a stock runtime nothing is captured (reported as such)
// Labels are set with setHeapProfileLabels (the middleware pattern), so every mode runs the loop
// from the same stack (withHeapProfileLabels would add frames, and stack depth is part of the cost
// of each sample).
// Each child process runs `reps` rotations and reports its median per mode; the parent runs `pairs`
// children per runtime, alternating runtimes (A B B A ...), and reports the in-process ratios with
// their spread over children and, with two runtimes, the second against the first per mode.
// Per-sample costs divide the time difference by the samples one loop takes (counted once with the
// include-collected flags, which keep every sample).

const path = require('node:path');
const c = require('./common');

const RING = 8192;
const ring = new Array(RING);

function allocLoop(n) {
  for (let i = 0; i < n; i++) ring[i & (RING - 1)] = { a: i, b: i + 1, c: null };
}

function child(args) {
  const hl = require('../../lib');
  const iterations = Number(args.iterations);
  const reps = Number(args.reps);
  const interval = Number(args.interval);
  const labels = { bench: 'alloc-loop' };
  let labeledSamples = 0;
  const modes = {
    off: () => c.timeMs(() => allocLoop(iterations)),
    'labels-only': () => {
      hl.setHeapProfileLabels(labels);
      try {
        return c.timeMs(() => allocLoop(iterations));
      } finally {
        hl.setHeapProfileLabels(null);
      }
    },
    on: () => {
      const h = hl.startHeapProfile({ sampleInterval: interval });
      try {
        return c.timeMs(() => allocLoop(iterations));
      } finally {
        h.stop();
      }
    },
    labels: () => {
      const h = hl.startHeapProfile({ sampleInterval: interval });
      hl.setHeapProfileLabels(labels);
      try {
        return c.timeMs(() => allocLoop(iterations));
      } finally {
        hl.setHeapProfileLabels(null);
        labeledSamples = h.stop().samples.filter((s) => s.labels !== undefined).length;
      }
    },
  };
  const names = Object.keys(modes);
  for (const name of names) modes[name](); // warm-up (and JIT)

  // Samples one loop takes: keep collected objects' samples too, so none is dropped before counting.
  const h = hl.startHeapProfile({
    sampleInterval: interval,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  allocLoop(iterations);
  const samplesPerLoop = h.stop().samples.length;

  const times = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < reps; r++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(r + k) % names.length];
      times[name].push(modes[name]());
    }
  }
  const caps = hl.capabilities();
  return {
    node: process.version,
    sampleLabels: caps.sampleLabels,
    reasons: caps.reasons,
    samplesPerLoop,
    labeledSamples,
    medians: Object.fromEntries(names.map((n) => [n, c.median(times[n])])),
  };
}

function parent(args) {
  const quick = Boolean(args.quick);
  const pairs = Number(args.pairs || (quick ? 1 : 5));
  const reps = Number(args.reps || (quick ? 3 : 7));
  const iterations = Number(args.iterations || (quick ? 500_000 : 5_000_000));
  const interval = Number(args.interval || 4096);
  const runtimes = c.runtimesFrom(args.runtime);

  const results = Object.fromEntries(runtimes.map((r) => [r.name, []]));
  for (let p = 0; p < pairs; p++) {
    const order = p % 2 === 0 ? runtimes : [...runtimes].reverse();
    for (const rt of order) {
      process.stderr.write(`alloc-loop: pair ${p + 1}/${pairs} ${rt.name}\n`);
      results[rt.name].push(
        c.runChild(rt, __filename, ['--child', '--reps', reps, '--iterations', iterations, '--interval', interval].map(String)),
      );
    }
  }

  const out = [];
  out.push('### Allocation loop (sampling and label-capture cost per sample)');
  out.push('');
  out.push(
    `${iterations} small objects per loop, sampleInterval ${interval} B; ${pairs} processes per runtime ` +
      `(alternating), ${reps} rotations of the modes each. Time ratios as overhead: median over the ` +
      `processes, IQR and range.`,
  );
  out.push('');
  const rows = [];
  for (const rt of runtimes) {
    const rs = results[rt.name];
    const ratio = (a, b) => rs.map((r) => r.medians[a] / r.medians[b]);
    const perSample = (a, b) => rs.map((r) => ((r.medians[a] - r.medians[b]) * 1e6) / r.samplesPerLoop);
    const captured = rs.every((r) => r.sampleLabels && r.labeledSamples > 0);
    rows.push([
      `${rt.name} (${rt.version})`,
      c.fmtValue(rs.map((r) => r.medians.off), 1, 'ms'),
      String(Math.round(c.median(rs.map((r) => r.samplesPerLoop)))),
      c.fmtRatio(ratio('labels-only', 'off')),
      c.fmtRatio(ratio('on', 'off')),
      c.fmtRatio(ratio('labels', 'off')),
      c.fmtRatio(ratio('labels', 'on')),
      c.fmtValue(perSample('on', 'off'), 0, 'ns'),
      c.fmtValue(perSample('labels', 'on'), 0, 'ns'),
      captured ? 'yes' : 'no: labels set, nothing captured (sampleLabels false)',
    ]);
  }
  out.push(
    c.table(
      [
        'runtime',
        'loop, off',
        'samples/loop',
        'labels-only vs off',
        'on vs off',
        'labels vs off',
        'labels vs on',
        'sampling ns/sample',
        'label capture ns/sample',
        'labels captured',
      ],
      rows,
    ),
  );
  for (const rt of runtimes) {
    const r = results[rt.name][0];
    if (!r.sampleLabels) out.push('', `${rt.name}: sampleLabels is false: ${r.reasons.join('; ')}`);
  }
  if (runtimes.length > 1) {
    const base = runtimes[0];
    out.push('');
    out.push(`Same mode, ${runtimes.slice(1).map((r) => r.name).join(', ')} against ${base.name} (paired processes):`);
    out.push('');
    const crossRows = [];
    for (const rt of runtimes.slice(1)) {
      for (const mode of ['off', 'on', 'labels']) {
        const ratios = results[rt.name].map((r, i) => r.medians[mode] / results[base.name][i].medians[mode]);
        crossRows.push([`${rt.name} / ${base.name}`, mode, c.fmtRatio(ratios)]);
      }
    }
    out.push(c.table(['runtimes', 'mode', 'time difference'], crossRows));
  }
  out.push('');
  return { markdown: out.join('\n'), results };
}

if (require.main === module) {
  const args = c.parseArgs(process.argv.slice(2), { flags: ['child', 'quick'], repeatable: ['runtime'] });
  if (args.child) {
    console.log(JSON.stringify(child(args)));
  } else {
    const { markdown, results } = parent(args);
    if (args.json) require('node:fs').writeFileSync(path.resolve(args.json), JSON.stringify(results, null, 2));
    console.log(markdown);
  }
}
