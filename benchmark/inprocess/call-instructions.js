'use strict';
// Instructions per label call (callgrind), next to the AsyncLocalStorage call each stands for
// (issue 28 item 2): counts are deterministic where times here are noise.
//
//   node benchmark/inprocess/call-instructions.js [--node /path/to/node] [--flags '--expose-gc ...']
//        [--calls 100000] [--repeat 3] [--cases enterWith,set,run,with,new-set]
//        [--counter callgrind|time] [--json FILE]
//
// Each case runs in a fresh process under `valgrind --tool=callgrind`, twice: with `calls` calls and
// with a fifth of them, after the same warm-up (30,000 calls: optimized code in both). The difference
// of the two totals over the difference of the call counts is the cost of one call, start-up and
// warm-up cancelled out (V8 optimizes on the main thread: see instructions()). A GC falling in one
// run and not the other moves a figure by up to ~1,500 instructions, so each case is measured
// --repeat times and the median is reported. Cases:
//   enterWith   als.enterWith(store), a prepared store (the anchor of `set`)
//   set         setHeapProfileLabels(labels), an interned frozen object (target: <= 1.2x enterWith)
//   run         als.run(store, fn) (the anchor of `with`)
//   with        withHeapProfileLabels(labels, fn), an interned frozen object (target: <= 1.1x run)
//   new-set     withHeapProfileLabels({ id: '<n>' }, fn) with a label set never seen before (the
//               first use of a new set: validation, interning, a holder; target: 3 us)
// A profile session runs (sampleInterval 512 KiB) in the heap-labels cases, as in production.
// Prints a markdown table; --json FILE also writes { counter, node, perCall: { case: figure } }.
// --counter time (no valgrind: the smoke run of benchmark/run.sh --quick) times the measured calls
// inside one process per case instead, with process.hrtime: nanoseconds per call, noise here.

const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { callgrindInstructions } = require('./common');

const LIB = path.join(__dirname, '..', '..', 'lib');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
}

// The body of one case's process: `calls` calls after `warmup` calls. `timed`: the process prints
// the nanoseconds the `calls` calls took.
function program(kind, calls, warmup, timed = false) {
  return `
const { AsyncLocalStorage } = require('node:async_hooks');
const heap = require(${JSON.stringify(LIB)});
const als = new AsyncLocalStorage();
const store = { route: '/x' };
const labels = heap.withHeapProfileLabels(Object.freeze({ route: '/x' }), heap.getHeapProfileLabels);
const fn = () => 0;
const handle = ${JSON.stringify(kind)} === 'enterWith' || ${JSON.stringify(kind)} === 'run' ? undefined : heap.startHeapProfile({ sampleInterval: 512 * 1024 });
let n = 0;
const cases = {
  enterWith: () => als.enterWith(store),
  set: () => heap.setHeapProfileLabels(labels),
  run: () => als.run(store, fn),
  with: () => heap.withHeapProfileLabels(labels, fn),
  'new-set': () => heap.withHeapProfileLabels({ id: String(n++) }, fn),
};
const call = cases[${JSON.stringify(kind)}];
for (let i = 0; i < ${warmup}; i++) call();
const t0 = process.hrtime.bigint();
for (let i = 0; i < ${calls}; i++) call();
const ns = process.hrtime.bigint() - t0;
if (handle) handle.stop();
if (${timed}) process.stdout.write(String(ns));
`;
}

// Under callgrind, whose threads take turns, whether a concurrent TurboFan job installs its code
// before the measured calls or after them is a matter of scheduling: the same case counted 1,394 and
// 4,906 instructions per call in two runs (optimized code in one, baseline code in the other). With
// --no-concurrent-recompilation V8 optimizes on the main thread when a function gets hot, at the same
// call in every run, so every case is measured in the code it runs in production.
function instructions(node, flags, source) {
  return callgrindInstructions(node, ['--no-concurrent-recompilation', ...flags, '-e', source]);
}

// Nanoseconds of `calls` calls, timed inside one process (--counter time).
function nanoseconds(node, flags, source) {
  const r = spawnSync(node, [...flags, '-e', source], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
  if (r.status !== 0) throw new Error(`run failed (${r.status}):\n${r.stderr.slice(-2000)}`);
  return Number(r.stdout);
}

function main() {
  const node = arg('node', process.execPath);
  const flags = arg('flags', '').split(' ').filter(Boolean);
  const calls = Number(arg('calls', 100000));
  const cases = arg('cases', 'enterWith,set,run,with,new-set').split(',');
  const repeat = Number(arg('repeat', 3));
  const counter = arg('counter', 'callgrind');
  if (!['callgrind', 'time'].includes(counter)) throw new Error('--counter must be callgrind or time');
  const unit = counter === 'callgrind' ? 'instructions' : 'ns';
  if (counter === 'callgrind') execFileSync('valgrind', ['--version']);
  const small = Math.floor(calls / 5);
  const perCall = {};
  for (const kind of cases) {
    // The new-set case makes a set per call: its count is the cardinality it reaches (the default
    // maxLabelSets bounds it; past that a call takes the overflow path, which is not this case).
    const n = kind === 'new-set' ? Math.min(calls, 5000) : calls;
    const few = kind === 'new-set' ? Math.floor(n / 5) : small;
    const warmup = kind === 'new-set' ? 0 : Math.min(30000, calls); // past the JIT tiers: optimized code in both runs
    const figures = [];
    for (let r = 0; r < repeat; r++) {
      if (counter === 'time') {
        figures.push(nanoseconds(node, flags, program(kind, n, warmup, true)) / n);
        continue;
      }
      const big = instructions(node, flags, program(kind, n, warmup));
      const little = instructions(node, flags, program(kind, few, warmup));
      figures.push((big - little) / (n - few));
    }
    figures.sort((a, b) => a - b);
    perCall[kind] = figures[Math.floor(figures.length / 2)];
    console.error(`call-instructions: ${kind}: ${Math.round(perCall[kind])} ${unit} per call`);
  }
  if (arg('json')) fs.writeFileSync(arg('json'), JSON.stringify({ counter, unit, node, flags, calls, repeat, perCall }, null, 2));
  const ratio = (a, b) => (perCall[a] !== undefined && perCall[b] !== undefined ? `${(perCall[a] / perCall[b]).toFixed(2)}x ${b}` : '');
  const title = counter === 'callgrind' ? 'Instructions per label call (callgrind' : 'Nanoseconds per label call (timed in-process';
  console.log(`### ${title}, ${node} ${flags.join(' ')})\n`);
  console.log(`| call | ${unit} per call | against its anchor | target |`);
  console.log('| --- | --- | --- | --- |');
  const rows = [
    ['enterWith', 'als.enterWith(store)', '', ''],
    ['set', 'setHeapProfileLabels(interned)', ratio('set', 'enterWith'), '<= 1.2x enterWith'],
    ['run', 'als.run(store, fn)', '', ''],
    ['with', 'withHeapProfileLabels(interned, fn)', ratio('with', 'run'), '<= 1.1x run'],
    ['new-set', 'withHeapProfileLabels(new set, fn)', ratio('new-set', 'run'), 'first use of a new set within 3 us'],
  ];
  for (const [kind, name, against, target] of rows) {
    if (perCall[kind] === undefined) continue;
    console.log(`| ${name} | ${Math.round(perCall[kind]).toLocaleString('en-US')} | ${against} | ${target} |`);
  }
}

main();
