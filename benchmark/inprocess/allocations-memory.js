'use strict';
// The memory bound of allocation figures: RSS over an allocation-heavy run, once the sites and label
// sets are known, with trackAllocations on the patched runtime (V8 hands dead samples to the addon,
// which keeps one total per (site, label set)) beside the include-collected flags (V8 keeps every
// dead sample: what a runtime without the death callback must do to know allocated bytes).
//
//   node --expose-gc benchmark/inprocess/allocations-memory.js [--seconds 120] [--sets 200]
//        [--sites 50] [--interval 16384] [--mode reports|keep|agent] [--every 10] [--rotate S] [--window S]
//
// A request picks one of --sets label sets and one of --sites allocation sites (distinct functions,
// so distinct stacks) and allocates ~64 KiB of short-lived objects there. Every --every seconds the
// script prints the RSS, V8's used heap, the label sets interned and the allocated bytes the profile
// reports so far; at the end a markdown row: RSS growth over the second half of the run against the
// bytes allocated in it. Run both modes in one sitting and compare the rows.

const { performance } = require('node:perf_hooks');
const v8 = require('node:v8');
const hl = require('../../lib');
const { parseArgs } = require('./common');

const args = parseArgs(process.argv.slice(2));
const seconds = Number(args.seconds ?? 120);
const setCount = Number(args.sets ?? 200);
const siteCount = Number(args.sites ?? 50);
const interval = Number(args.interval ?? 16384);
const mode = args.mode ?? 'reports';
const every = Number(args.every ?? 10);
if (!['reports', 'keep', 'agent'].includes(mode)) throw new Error(`--mode reports|keep|agent, got ${mode}`);
// --mode agent: the production agent's session (allocations on by default) with its window policy
// (no pushes, no scrapes: the agent ends a window after --window seconds), while the label sets
// rotate: every --rotate seconds the workload moves to --sets new ones. Rows: RSS and label sets
// held (the window's totals hold the sets allocated in it until it ends).
const rotate = Number(args.rotate ?? 0);
const windowSeconds = Number(args.window ?? 60);
if (typeof globalThis.gc !== 'function') throw new Error('run with --expose-gc');

// Distinct allocation sites: one compiled function per site.
const sites = Array.from({ length: siteCount }, (_, i) => new Function('n', `
  const out = [];
  for (let j = 0; j < n; j++) out.push({ site: ${i}, j, text: 'x' + j });
  return out.length;`));
let generation = 0;
const makeSets = () =>
  Array.from({ length: setCount }, (_, i) => Object.freeze({ route: `/route/${i}`, tenant: `t${i % 7}`, generation: String(generation) }));
let labelSets = makeSets();

let agent;
const handle =
  mode === 'agent'
    ? undefined
    : hl.startHeapProfile({
        sampleInterval: interval,
        trackAllocations: mode === 'reports',
        includeObjectsCollectedByMajorGC: mode === 'keep',
        includeObjectsCollectedByMinorGC: mode === 'keep',
      });
const caps = hl.capabilities();
if (mode !== 'keep' && !caps.allocations) {
  console.error(`this runtime cannot report dead samples: ${caps.reasons.join('; ')}`);
  process.exit(2);
}

const mib = (bytes) => (bytes / 2 ** 20).toFixed(1);
function allocatedSoFar() {
  if (handle === undefined) return NaN; // the agent's profile is read through its endpoint only
  const profile = handle.getAllocationProfile();
  try {
    if (profile.hasAllocations) return profile.byLabel().reduce((sum, g) => sum + g.allocatedBytes, 0);
    // Kept dead samples are still samples: everything the profile holds was allocated.
    return profile.byLabel().reduce((sum, g) => sum + g.bytes, 0);
  } finally {
    profile[Symbol.dispose]();
  }
}

const points = [];
function note(t) {
  globalThis.gc();
  const point = {
    t,
    rss: process.memoryUsage().rss,
    heap: v8.getHeapStatistics().used_heap_size,
    sets: hl.stats().labelSets,
    allocated: allocatedSoFar(),
  };
  points.push(point);
  console.error(
    `${mode}: ${t.toFixed(0)} s rss ${mib(point.rss)} MiB, heap ${mib(point.heap)} MiB, ` +
      `${point.sets} label sets, allocated so far ${mib(point.allocated)} MiB`,
  );
}

async function main() {
  if (mode === 'agent') {
    agent = await hl.startAgent({ sampleInterval: interval, signal: 'off', nearHeapLimit: 0, allocationWindow: windowSeconds });
  }
  const start = performance.now();
  let next = 0;
  let nextRotation = rotate;
  let request = 0;
  for (;;) {
    const t = (performance.now() - start) / 1000;
    if (t >= next) {
      note(t);
      next += every;
      if (t >= seconds) break;
    }
    if (rotate > 0 && t >= nextRotation) {
      generation++;
      labelSets = makeSets();
      nextRotation += rotate;
    }
    const labels = labelSets[request % setCount];
    const site = sites[(request * 7) % siteCount];
    hl.withHeapProfileLabels(labels, () => site(1000));
    request++;
    if (request % 64 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  if (agent) await agent.stop();
  else handle.stop();
  const half = points.find((p) => p.t >= seconds / 2) ?? points[0];
  const last = points[points.length - 1];
  console.log(`| mode | seconds | requests | allocated in the 2nd half | RSS growth in the 2nd half | RSS at end | label sets held (max) |`);
  console.log(`| --- | --- | --- | --- | --- | --- | --- |`);
  console.log(
    `| ${mode}${rotate > 0 ? ` (sets rotate every ${rotate} s${mode === 'agent' ? `, window ${windowSeconds} s` : ''})` : ''} | ${seconds} | ${request} | ` +
      `${Number.isNaN(last.allocated) ? '-' : `${mib(last.allocated - half.allocated)} MiB`} | ` +
      `${mib(last.rss - half.rss)} MiB | ${mib(last.rss)} MiB | ${Math.max(...points.map((p) => p.sets))} |`,
  );
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
