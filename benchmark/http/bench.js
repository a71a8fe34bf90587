'use strict';
// HTTP overhead: the app server (app-server.js) behind a fixed-concurrency keep-alive load, with a
// second local server (db-server.js) as its database, in these modes:
//
//   stock-off          stock Node.js 22.22.2, heap-labels not loaded          (baseline)
//   stock-sampling     stock, sampling heap profiler at 512 KiB               vs stock-off
//   stock-labels       stock, sampling + route labels (nothing captured)    vs stock-off
//   patched-off        patched runtime, heap-labels not loaded                vs stock-off
//   patched-sampling   patched, sampling at 512 KiB                          vs patched-off
//   patched-labels     patched, sampling + route labels (captured)           vs patched-off
//
//   node benchmark/http/bench.js --stock /path/node [--patched /path/node] [--quick]
//        [--rounds 6] [--duration 10000] [--warmup 3000] [--concurrency 32] [--interval 524288]
//        [--json results.json]
//
// Every run starts a fresh app server. A round runs every mode once; rounds alternate the order
// (A B C ... then ... C B A), and each mode is compared with its baseline of the same round: the
// table shows the median ratio over rounds with IQR and range. The app server is pinned to CPU 0,
// this process (the load generator) and the database to CPU 1 (taskset; skipped with fewer CPUs).
// --quick (a few seconds) is a smoke test: it checks that every mode serves without errors and that
// labels are captured where the runtime can (keeping the samples of collected objects, so the check
// does not depend on which few objects are still alive), never how fast.

const { spawn, spawnSync } = require('node:child_process');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { runLoad, rng } = require('../../demo/load');
const c = require('../inprocess/common');

const here = __dirname;

function pinning() {
  const ok = os.availableParallelism() >= 2 && spawnSync('taskset', ['-V']).status === 0;
  return {
    enabled: ok,
    wrap: (cpu, cmd, args) => (ok ? ['taskset', ['-c', String(cpu), cmd, ...args]] : [cmd, args]),
    self: (cpu) => ok && spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(process.pid)]).status === 0,
  };
}

// Spawns a server and resolves to { child, port } once it prints "LISTENING <port>".
function startServer(cmd, args, what) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: c.root });
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${what} did not start within 30 s:\n${err}`));
    }, 30_000);
    child.stderr.on('data', (d) => (err += d));
    child.stdout.on('data', (d) => {
      out += d;
      const m = /LISTENING (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, port: Number(m[1]), stderr: () => err });
      }
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code ?? signal}) before listening:\n${err}`));
    });
  });
}

function stop(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.removeAllListeners('exit');
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5000).unref();
  });
}

function getJson(port, p) {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: p }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve(JSON.parse(body)));
      })
      .on('error', reject);
  });
}

function appPaths(seed) {
  const next = rng(seed);
  const routes = ['/api/users', '/api/orders', '/api/products'];
  return () => `${routes[Math.floor(next() * 3)]}?page=${Math.floor(next() * 100)}`;
}

async function runMode(mode, { dbPort, pin, options, seed }) {
  const rt = mode.runtime;
  const args = [
    ...rt.flags,
    path.join(here, 'app-server.js'),
    '--db-port',
    String(dbPort),
    '--mode',
    mode.mode,
    '--interval',
    String(options.interval),
    // A short smoke run checks labels on all samples taken, not only on the few still alive.
    ...(options.quick ? ['--keep-collected'] : []),
  ];
  const [cmd, cmdArgs] = pin.wrap(0, rt.node, args);
  const app = await startServer(cmd, cmdArgs, `app server (${mode.name})`);
  try {
    const load = { port: app.port, concurrency: options.concurrency, nextPath: appPaths(seed) };
    await runLoad({ ...load, durationMs: options.warmup });
    const result = await runLoad({ ...load, durationMs: options.duration });
    const stats = await getJson(app.port, '/__bench/stats');
    return { rps: result.rps, p99: result.latencyMs.p99, p50: result.latencyMs.p50, errors: result.errors, statuses: result.statuses, requests: result.measured, stats };
  } finally {
    await stop(app.child);
  }
}

async function main(args) {
  const quick = Boolean(args.quick);
  const options = {
    rounds: Number(args.rounds || (quick ? 1 : 6)),
    duration: Number(args.duration || (quick ? 500 : 10_000)),
    warmup: Number(args.warmup || (quick ? 200 : 3000)),
    concurrency: Number(args.concurrency || 32),
    interval: Number(args.interval || 512 * 1024),
    quick,
  };
  if (!args.stock) throw new Error('--stock /path/to/node (stock Node.js 22.22.2) is required');
  const specs = [`stock=${args.stock}`];
  if (args.patched) specs.push(`patched=${args.patched}`);
  const runtimes = Object.fromEntries(c.runtimesFrom(specs).map((r) => [r.name, r]));

  const modes = [
    { name: 'stock-off', runtime: runtimes.stock, mode: 'off' },
    { name: 'stock-sampling', runtime: runtimes.stock, mode: 'sampling' },
    { name: 'stock-labels', runtime: runtimes.stock, mode: 'labels' },
  ];
  if (runtimes.patched) {
    modes.push(
      { name: 'patched-off', runtime: runtimes.patched, mode: 'off' },
      { name: 'patched-sampling', runtime: runtimes.patched, mode: 'sampling' },
      { name: 'patched-labels', runtime: runtimes.patched, mode: 'labels' },
    );
  }
  const comparisons = [
    ['stock-sampling', 'stock-off', 'sampling 512 KiB (stock)'],
    ['stock-labels', 'stock-off', 'sampling + route labels, nothing captured (stock)'],
    ['patched-off', 'stock-off', 'patched runtime, profiler off vs stock (target: no difference)'],
    ['patched-sampling', 'patched-off', 'sampling 512 KiB (patched)'],
    ['patched-labels', 'patched-off', 'sampling + labels captured (patched; target <= 1 %)'],
    ['patched-labels', 'patched-sampling', 'label capture alone (patched)'],
  ].filter(([a, b]) => modes.some((m) => m.name === a) && modes.some((m) => m.name === b));

  const pin = pinning();
  pin.self(1);
  const [dbCmd, dbArgs] = pin.wrap(1, runtimes.stock.node, [path.join(here, 'db-server.js')]);
  const db = await startServer(dbCmd, dbArgs, 'db server');
  const runs = Object.fromEntries(modes.map((m) => [m.name, []]));
  try {
    for (let r = 0; r < options.rounds; r++) {
      const order = r % 2 === 0 ? modes : [...modes].reverse();
      for (const mode of order) {
        process.stderr.write(`http: round ${r + 1}/${options.rounds} ${mode.name} ... `);
        const res = await runMode(mode, { dbPort: db.port, pin, options, seed: r + 1 });
        process.stderr.write(`${Math.round(res.rps)} req/s, p99 ${res.p99.toFixed(2)} ms, errors ${res.errors}\n`);
        runs[mode.name].push(res);
      }
    }
  } finally {
    await stop(db.child);
  }

  // Smoke checks (the only assertions): every mode served, without errors; labels captured where
  // the runtime says it can.
  const problems = [];
  for (const m of modes) {
    for (const res of runs[m.name]) {
      if (res.errors > 0 || res.requests === 0 || Object.keys(res.statuses).some((s) => s !== '200')) {
        problems.push(`${m.name}: ${res.requests} requests, ${res.errors} errors, statuses ${JSON.stringify(res.statuses)}`);
      }
      const st = res.stats;
      if (m.mode === 'labels' && st.capabilities.sampleLabels && !(st.labeledSamples > 0)) {
        problems.push(`${m.name}: sampleLabels is true but no sample carries a label`);
      }
    }
  }

  const out = [];
  out.push('### HTTP overhead (app server + local database server, fixed concurrency)');
  out.push('');
  out.push(
    `${options.rounds} rounds, each mode once per round in alternating order; per run a fresh app ` +
      `server, ${options.warmup / 1000} s warm-up, ${options.duration / 1000} s measured, ` +
      `${options.concurrency} keep-alive connections; sampleInterval ${options.interval} B. ` +
      `CPU pinning: ${pin.enabled ? 'app server on CPU 0; load generator and database on CPU 1' : 'off'}. ` +
      'Ratios per round against the baseline of the same round: median (IQR, range). Throughput: ' +
      'negative is slower; p99 latency: positive is slower.',
  );
  out.push('');
  const rows = comparisons.map(([a, b, what]) => {
    const ra = runs[a];
    const rb = runs[b];
    return [
      what,
      `${a} vs ${b}`,
      c.fmtRatio(ra.map((x, i) => x.rps / rb[i].rps)),
      c.fmtRatio(ra.map((x, i) => x.p99 / rb[i].p99)),
    ];
  });
  out.push(c.table(['comparison', 'modes', 'throughput', 'p99 latency'], rows));
  out.push('');
  out.push(
    c.table(
      [
        'mode',
        'runtime',
        'req/s (orientation only)',
        'p99 ms (orientation only)',
        options.quick ? 'samples (incl. collected)' : 'live samples',
        'labeled',
      ],
      modes.map((m) => {
        const rs = runs[m.name];
        const st = rs[rs.length - 1].stats;
        return [
          m.name,
          `${m.runtime.name} ${m.runtime.version}`,
          c.fmtValue(rs.map((x) => x.rps), 0),
          c.fmtValue(rs.map((x) => x.p99), 2),
          st.samples === undefined ? '-' : String(st.samples),
          st.samples === undefined ? '-' : `${st.labeledSamples}${st.capabilities.sampleLabels ? '' : ' (sampleLabels false)'}`,
        ];
      }),
    ),
  );
  out.push('');
  if (problems.length) {
    out.push('**Smoke check failed:**');
    for (const p of problems) out.push(`- ${p}`);
    out.push('');
  }
  return { markdown: out.join('\n'), runs, problems };
}

if (require.main === module) {
  const args = c.parseArgs(process.argv.slice(2), { flags: ['quick'] });
  main(args).then(
    ({ markdown, runs, problems }) => {
      if (args.json) require('node:fs').writeFileSync(args.json, JSON.stringify(runs, null, 2));
      console.log(markdown);
      if (problems.length) process.exitCode = 1;
    },
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
