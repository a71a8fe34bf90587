'use strict';
// Instructions per request of an app server, counted by callgrind: a measurement that does not depend
// on what else the machine does, so it resolves differences far below the ±2-3 % of the timed
// benchmark (bench.js).
//
//   node benchmark/http/instructions.js --node <patched node> [--stock <stock node>]
//        [--requests 2000] [--warmup 1000] [--repeat 2] [--modes off,sampling,labels,allocations]
//        [--apps http,express4,express5,fastify,koa] [--intervals 524288,65536]
//        [--framework-modes sampling,integration,automatic] [--framework-runtimes patched,stock]
//        [--threads all|main] [--node-flags '--single-threaded --random-seed=42'] [--concurrency 8]
//        [--gc-window]
//
// Apps (--apps, default http):
// - http: the HTTP benchmark's app server (app-server.js, database server, three routes). For each
//   mode (off, sampling 512 KiB, sampling + route labels from heap-labels/http, the same with
//   trackAllocations; and stock off when --stock is given).
// - express4, express5, fastify, koa: the framework app servers (framework-server.js: one small JSON
//   route, GET /api/users/:id, the same traffic for each). For each sampling interval (--intervals)
//   modes sampling (the profiler alone), integration (sampling + the framework's explicit
//   integration) and, with --framework-modes ...,automatic, automatic (sampling + the automatic
//   route labels, no call in the app), on the patched runtime (and on stock with
//   --framework-runtimes patched,stock).
// Each run starts a fresh app server under `valgrind --tool=callgrind` with instrumentation off
// (--instr-atstart=no: the start-up and the warm-up requests run several times faster, so that a
// warm-up long enough for V8 to finish tiering up fits in a run); after the warm-up requests
// instrumentation is switched on and the counters zeroed (callgrind_control -i on, -z), the measured
// requests run, and the counters are dumped (callgrind_control -d): instructions of exactly those
// requests, JIT, GC and profiler included. Sampling is random, so each mode runs --repeat times, in
// alternating order. Prints markdown tables with the ratios.

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
const apps = arg('apps', 'http').split(',');
const intervals = arg('intervals', `${512 * 1024},${64 * 1024}`).split(',').map(Number);
const frameworkModes = arg('framework-modes', 'sampling,integration').split(',');
const frameworkRuntimes = arg('framework-runtimes', 'patched').split(',');
// Extra flags for every app server's node: `--single-threaded --random-seed=N` takes V8's
// background compilation and GC threads out (their timing decides when optimized code and
// collections land in the measured window) and fixes the sampling intervals, so that runs of one
// mode agree closely and differences of 1-2 % between modes can be read.
const nodeFlags = (arg('node-flags', '') || '').split(/\s+/).filter(Boolean);
// Each run counts every thread apart (--separate-threads): `all` is the sum (JIT compilers,
// concurrent GC and the profiler included), `main` the main thread's (steadier from run to run:
// without the background work, whose share varies with timing). --threads picks the count the
// HTTP app's table shows; the framework tables show both.
const threads = arg('threads', 'all');
// Requests in flight at once. 1 makes the work per request independent of how the load generator's
// requests happen to batch into socket reads; 8 is closer to a server under load.
const concurrency = Number(arg('concurrency', 8));
// --gc-window (framework apps): a full GC right before each measured window (node --expose-gc,
// GET /__bench/gc, not counted), so that every run's window starts at the same point of V8's
// full-GC cycle. Without it a window shorter than the time between two full GCs holds zero or one
// of them by chance (express: 70M instructions, 35k per request over 2,000 requests); with it, a
// window long enough for several (--requests) counts each mode's own share.
const gcWindow = process.argv.includes('--gc-window');
const flagsNote =
  (nodeFlags.length === 0 ? '' : `, node ${nodeFlags.join(' ')}`) + (gcWindow ? ', a full GC before each window' : '');
if (!['all', 'main'].includes(threads)) throw new Error('--threads must be all or main');
if (!patched) throw new Error('--node <path of the node to measure> is required');
const FRAMEWORKS = ['express4', 'express5', 'fastify', 'koa'];
for (const app of apps) {
  if (app !== 'http' && !FRAMEWORKS.includes(app)) throw new Error(`unknown app ${app}`);
}
if (frameworkRuntimes.includes('stock') && !stock) throw new Error('--framework-runtimes stock needs --stock');

const here = __dirname;
const HTTP_ROUTES = ['/api/users', '/api/orders', '/api/products'];
function cycle(paths) {
  let i = 0;
  return () => paths[i++ % paths.length];
}
const USER_PATHS = Array.from({ length: 100 }, (_, i) => `/api/users/${i + 1}`);

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

// One run: `run.args` (the app server and its arguments) under callgrind on `run.node`.
async function measure(run, dir) {
  const tag = run.name.replace(/[^\w.-]/g, '_');
  const out = path.join(dir, `callgrind.${tag}.%p`);
  const app = start(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${out}`,
      '--dump-instr=no',
      '--instr-atstart=no',
      '--compress-strings=no',
      '--separate-threads=yes',
      run.node,
      '--experimental-async-context-frame',
      ...(gcWindow ? ['--expose-gc'] : []),
      ...nodeFlags,
      ...run.args,
    ],
    `app server (${run.name})`,
  );
  const port = await app.port;
  const pid = app.child.pid;
  try {
    // Under callgrind a request takes ~50x longer, more on a busy machine: latency is not measured
    // here, only instructions, so requests may take their time.
    const timeoutMs = 180_000;
    const nextPath = cycle(run.paths);
    await runLoad({ port, requests: warmup, concurrency, nextPath, timeoutMs });
    if (gcWindow && run.app !== 'http') {
      const gc = await runLoad({ port, requests: 1, concurrency: 1, nextPath: () => '/__bench/gc', timeoutMs });
      if (gc.statuses[200] !== 1) throw new Error(`${run.name}: /__bench/gc answered ${JSON.stringify(gc.statuses)}`);
    }
    execFileSync('callgrind_control', ['-i', 'on', String(pid)], { stdio: 'ignore' });
    execFileSync('callgrind_control', ['-z', String(pid)], { stdio: 'ignore' });
    const load = await runLoad({ port, requests, concurrency, nextPath, timeoutMs });
    if (load.errors) throw new Error(`${load.errors} failed requests in ${run.name}`);
    if (load.statuses[200] !== requests) throw new Error(`${run.name}: statuses ${JSON.stringify(load.statuses)}`);
    execFileSync('callgrind_control', ['-d', String(pid)], { stdio: 'ignore' });
  } finally {
    // Also when the run failed: no valgrind'd app server may outlive it.
    if (app.child.exitCode === null && app.child.signalCode === null) {
      const exited = new Promise((resolve) => app.child.once('exit', resolve));
      app.child.kill('SIGTERM');
      await exited;
    }
  }
  // callgrind_control -d writes <file>.1-NN, one per thread (01: the main thread); <file>-NN
  // hold what ran after it, until exit.
  const prefix = `callgrind.${tag}.${pid}.1-`;
  const dumps = fs.readdirSync(dir).filter((file) => file.startsWith(prefix));
  if (!dumps.includes(`${prefix}01`)) throw new Error(`no main-thread dump ${prefix}01 in ${dir}`);
  const count = (file) => dumpedInstructions(path.join(dir, file));
  return {
    main: count(`${prefix}01`) / requests,
    all: dumps.reduce((sum, file) => sum + count(file), 0) / requests,
  };
}

const median = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

const kib = (bytes) => `${bytes / 1024} KiB`;

// The runs of the http app (mode names as before) and of the framework apps.
function plan(dbPort) {
  const runs = [];
  if (apps.includes('http')) {
    const httpRun = (name, node, mode) => ({
      name,
      node,
      app: 'http',
      args: [path.join(here, 'app-server.js'), '--db-port', String(dbPort), '--mode', mode],
      paths: HTTP_ROUTES,
    });
    if (stock) runs.push(httpRun('stock-off', stock, 'off'));
    for (const mode of ['off', 'sampling', 'labels', 'allocations']) {
      if (modes.includes(mode)) runs.push(httpRun(`patched-${mode}`, patched, mode));
    }
  }
  for (const framework of apps.filter((app) => app !== 'http')) {
    for (const runtime of frameworkRuntimes) {
      const node = runtime === 'stock' ? stock : patched;
      const frameworkRun = (mode, interval) => ({
        name: `${framework} ${runtime} ${mode}${interval === undefined ? '' : ` ${kib(interval)}`}`,
        node,
        app: framework,
        runtime,
        mode,
        interval,
        args: [
          path.join(here, 'framework-server.js'),
          '--framework',
          framework,
          '--mode',
          mode,
          ...(interval === undefined ? [] : ['--interval', String(interval)]),
        ],
        paths: USER_PATHS,
      });
      if (frameworkModes.includes('off')) runs.push(frameworkRun('off'));
      for (const interval of intervals) {
        for (const mode of frameworkModes) if (mode !== 'off') runs.push(frameworkRun(mode, interval));
      }
    }
  }
  return runs;
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-callgrind-'));
  const db = apps.includes('http') ? start(process.execPath, [path.join(here, 'db-server.js')], 'database server') : null;
  const dbPort = db ? await db.port : 0;
  const runs = plan(dbPort);
  const results = new Map(runs.map((run) => [run.name, []]));
  try {
    for (let r = 0; r < repeat; r++) {
      for (const run of r % 2 ? [...runs].reverse() : runs) {
        const perRequest = await measure(run, dir);
        results.get(run.name).push(perRequest);
        console.error(
          `instructions: ${run.name} run ${r + 1}: ${Math.round(perRequest.all)} per request ` +
            `(main thread ${Math.round(perRequest.main)})`,
        );
      }
    }
  } finally {
    if (db) db.child.kill();
    if (!process.env.KEEP_CALLGRIND) fs.rmSync(dir, { recursive: true, force: true });
    else console.error(`kept ${dir}`);
  }
  // Medians and ranges of one count (`all` or `main`) over the runs of a mode.
  const counts = (name, which) => results.get(name).map((r) => r[which]);
  const m = (name, which = threads) => median(counts(name, which));
  const pct = (a, b, which = threads) =>
    results.has(a) && results.has(b) ? `${((m(a, which) / m(b, which) - 1) * 100).toFixed(2)} %` : 'not measured';
  const spread = (name, which = threads) => {
    const xs = counts(name, which);
    return `${Math.round(Math.min(...xs))}..${Math.round(Math.max(...xs))}`;
  };
  const title =
    `(callgrind, ${threads === 'main' ? 'main thread' : 'all threads'}, ${requests} requests after ${warmup} warm-up, ` +
    `concurrency ${concurrency}, ` +
    `${repeat} runs per mode${flagsNote})`;
  if (apps.includes('http')) {
    const httpRuns = runs.filter((run) => run.app === 'http');
    console.log(`### Instructions per request, HTTP app ${title}\n`);
    console.log('| mode | instructions per request (median; range) |');
    console.log('| --- | --- |');
    for (const { name } of httpRuns) console.log(`| ${name} | ${Math.round(m(name))} (${spread(name)}) |`);
    console.log('\n| comparison | instructions |');
    console.log('| --- | --- |');
    if (stock) console.log(`| patched-off vs stock-off | ${pct('patched-off', 'stock-off')} |`);
    console.log(`| patched-sampling vs patched-off | ${pct('patched-sampling', 'patched-off')} |`);
    console.log(`| patched-labels vs patched-off | ${pct('patched-labels', 'patched-off')} |`);
    console.log(`| patched-labels vs patched-sampling (labels alone) | ${pct('patched-labels', 'patched-sampling')} |`);
    console.log(
      `| patched-allocations vs patched-labels (allocation figures alone) | ${pct('patched-allocations', 'patched-labels')} |`,
    );
  }
  const frameworkRuns = runs.filter((run) => run.app !== 'http');
  if (frameworkRuns.length > 0) {
    const auto = frameworkModes.includes('automatic');
    const name = (run, mode) => `${run.app} ${run.runtime} ${mode} ${kib(run.interval)}`;
    for (const which of ['main', 'all']) {
      if (apps.includes('http') || which === 'all') console.log('');
      const what = which === 'main' ? 'main thread' : 'all threads';
      console.log(
        `### Instructions per request, framework apps (GET /api/users/:id), ${what} ` +
          `(callgrind, ${requests} requests after ${warmup} warm-up, concurrency ${concurrency}, ` +
          `${repeat} runs per mode${flagsNote})\n`,
      );
      console.log(
        '| app | runtime | interval | sampling alone (median; range) | sampling + integration (median; range) | integration vs sampling alone |' +
          (auto ? ' sampling + automatic (median; range) | automatic vs sampling alone |' : ''),
      );
      console.log(`| --- | --- | --- | --- | --- | --- |${auto ? ' --- | --- |' : ''}`);
      for (const run of frameworkRuns.filter((r) => r.mode === 'sampling')) {
        const sampling = name(run, 'sampling');
        const integration = name(run, 'integration');
        const automatic = name(run, 'automatic');
        const cell = (n) => (results.has(n) ? `${Math.round(m(n, which))} (${spread(n, which)})` : 'not measured');
        console.log(
          `| ${run.app} | ${run.runtime} | ${kib(run.interval)} | ${cell(sampling)} | ${cell(integration)} | ` +
            `**${pct(integration, sampling, which)}** |` +
            (auto ? ` ${cell(automatic)} | **${pct(automatic, sampling, which)}** |` : ''),
        );
      }
      const offRuns = frameworkRuns.filter((r) => r.mode === 'off');
      if (offRuns.length > 0) {
        console.log('\n| app | runtime | profiler off | sampling vs off (first interval) |');
        console.log('| --- | --- | --- | --- |');
        for (const run of offRuns) {
          const first = `${run.app} ${run.runtime} sampling ${kib(intervals[0])}`;
          console.log(
            `| ${run.app} | ${run.runtime} | ${Math.round(m(run.name, which))} (${spread(run.name, which)}) | ` +
              `${pct(first, run.name, which)} |`,
          );
        }
      }
    }
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
