'use strict';
// Instructions per request of the HTTP benchmark's app server, counted by callgrind: a measurement
// that does not depend on what else the machine does, so it resolves differences far below the
// ±2-3 % of the timed benchmark (bench.js). Same app server, database server and routes.
//
//   node benchmark/http/instructions.js --node <patched node> [--stock <stock node>]
//        [--requests 2000] [--warmup 1000] [--repeat 2] [--modes off,sampling,labels,allocations]
//
// For each mode (off, sampling 512 KiB, sampling + route labels from heap-labels/http, the same with
// trackAllocations; and stock off when --stock is given) the app server runs under `valgrind --tool=callgrind`; after the warm-up requests the
// counters are zeroed (callgrind_control -z), the measured requests run, and the counters are dumped
// (callgrind_control -d): instructions of exactly those requests, JIT, GC and profiler included.
// Sampling is random, so each mode runs --repeat times. Prints a markdown table with the ratios.

const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { runLoad } = require('../../demo/load');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
}

const patched = arg('node');
const stock = arg('stock');
const requests = Number(arg('requests', 2000));
const warmup = Number(arg('warmup', 1000));
const repeat = Number(arg('repeat', 2));
const modes = arg('modes', 'off,sampling,labels,allocations').split(',');
if (!patched) throw new Error('--node <path of the node to measure> is required');

const here = __dirname;
const ROUTES = ['/api/users', '/api/orders', '/api/products'];
const nextPath = (() => {
  let i = 0;
  return () => ROUTES[i++ % ROUTES.length];
})();

function start(cmd, args, label) {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const port = new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /LISTENING (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`${label} exited (${code}) before listening:\n${stderr}`)));
  });
  return { child, port, stderr: () => stderr };
}

function dumpedInstructions(file) {
  // "summary: N" (or "totals: N") holds the Ir count of the dump.
  const text = fs.readFileSync(file, 'utf8');
  const m = /^(?:summary|totals):\s+(\d+)/m.exec(text);
  if (!m) throw new Error(`no instruction total in ${file}`);
  return Number(m[1]);
}

async function measure(node, mode, dbPort, dir) {
  const out = path.join(dir, `callgrind.${mode}.%p`);
  const app = start(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${out}`,
      '--dump-instr=no',
      '--compress-strings=no',
      node,
      '--experimental-async-context-frame',
      path.join(here, 'app-server.js'),
      '--db-port',
      String(dbPort),
      '--mode',
      mode,
    ],
    `app server (${mode})`,
  );
  const port = await app.port;
  const pid = app.child.pid;
  try {
    // Under callgrind a request takes ~50x longer, more on a busy machine: latency is not measured
    // here, only instructions, so requests may take their time.
    const timeoutMs = 180_000;
    await runLoad({ port, requests: warmup, concurrency: 8, nextPath, timeoutMs });
    execFileSync('callgrind_control', ['-z', String(pid)], { stdio: 'ignore' });
    const load = await runLoad({ port, requests, concurrency: 8, nextPath, timeoutMs });
    if (load.errors) throw new Error(`${load.errors} failed requests in mode ${mode}`);
    execFileSync('callgrind_control', ['-d', String(pid)], { stdio: 'ignore' });
  } finally {
    // Also when the run failed: no valgrind'd app server may outlive it.
    if (app.child.exitCode === null && app.child.signalCode === null) {
      const exited = new Promise((resolve) => app.child.once('exit', resolve));
      app.child.kill('SIGTERM');
      await exited;
    }
  }
  // callgrind_control -d writes <file>.1; <file> itself holds what ran after it, until exit.
  return dumpedInstructions(path.join(dir, `callgrind.${mode}.${pid}.1`)) / requests;
}

const median = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-callgrind-'));
  const db = start(process.execPath, [path.join(here, 'db-server.js')], 'database server');
  const dbPort = await db.port;
  const runs = [
    ...(stock ? [['stock-off', stock, 'off']] : []),
    ['patched-off', patched, 'off'],
    ['patched-sampling', patched, 'sampling'],
    ['patched-labels', patched, 'labels'],
    ['patched-allocations', patched, 'allocations'],
  ].filter(([name, , mode]) => name === 'stock-off' || modes.includes(mode));
  const results = new Map(runs.map(([name]) => [name, []]));
  try {
    for (let r = 0; r < repeat; r++) {
      for (const [name, node, mode] of r % 2 ? [...runs].reverse() : runs) {
        const perRequest = await measure(node, mode, dbPort, dir);
        results.get(name).push(perRequest);
        console.error(`instructions: ${name} run ${r + 1}: ${Math.round(perRequest)} per request`);
      }
    }
  } finally {
    db.child.kill();
    if (!process.env.KEEP_CALLGRIND) fs.rmSync(dir, { recursive: true, force: true });
    else console.error(`kept ${dir}`);
  }
  const m = (name) => median(results.get(name));
  const pct = (a, b) =>
    results.has(a) && results.has(b) ? `${((m(a) / m(b) - 1) * 100).toFixed(2)} %` : 'not measured';
  const spread = (name) => {
    const xs = results.get(name);
    return `${Math.round(Math.min(...xs))}..${Math.round(Math.max(...xs))}`;
  };
  console.log(`### Instructions per request (callgrind, ${requests} requests after ${warmup} warm-up, ${repeat} runs per mode)\n`);
  console.log('| mode | instructions per request (median; range) |');
  console.log('| --- | --- |');
  for (const [name] of runs) console.log(`| ${name} | ${Math.round(m(name))} (${spread(name)}) |`);
  console.log('\n| comparison | instructions |');
  console.log('| --- | --- |');
  if (stock) console.log(`| patched-off vs stock-off | ${pct('patched-off', 'stock-off')} |`);
  console.log(`| patched-sampling vs patched-off | ${pct('patched-sampling', 'patched-off')} |`);
  console.log(`| patched-labels vs patched-off | ${pct('patched-labels', 'patched-off')} |`);
  console.log(`| patched-labels vs patched-sampling (labels alone) | ${pct('patched-labels', 'patched-sampling')} |`);
  console.log(`| patched-allocations vs patched-labels (allocation figures alone) | ${pct('patched-allocations', 'patched-labels')} |`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
