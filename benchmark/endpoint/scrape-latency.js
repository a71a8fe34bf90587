'use strict';
// Request latency of an app under load with its heap profile scraped every 10 s, against the same
// app with no scrape (issue 28 item 4): what a Prometheus-like scraper of /debug/pprof/heap costs
// the app's requests.
//
//   node benchmark/endpoint/scrape-latency.js [--runtime name=/path/to/node] [--quick]
//        [--seconds 30] [--rounds 2] [--every 10] [--concurrency 8] [--retain 400000]
//        [--framework express5] [--json FILE]
//
// The app: benchmark/http/framework-server.js (express 5, GET /api/users/:id; heap-labels not loaded
// by the app itself) started with the preload, as in production: `-r heap-labels/register` with
// HEAP_LABELS_HTTP=127.0.0.1:0 and every other setting at its default (sampling every 512 KiB, its
// routes labeled with no code), keeping --retain small objects alive (a heap for the read to copy).
// After 3 s of warm-up, phases of --seconds each alternate in the same process (none, scrape,
// scrape, none, ...: --rounds pairs): the load generator (demo/load.js: closed loop, --concurrency
// keep-alive connections, in this process) runs throughout; in a scrape phase a client also GETs
// /debug/pprof/heap every --every s (the first after half an interval), reading the whole answer.
// Per phase: p50 and p99 of the load's request latency. Reported: the median over rounds of each,
// and the ratio scrape / none per round (median). Closed-loop load understates a pause's effect on
// the tail (a stalled connection sends nothing meanwhile); the pauses themselves are measured by
// benchmark/inprocess/dump-pause.js. Prints a markdown section.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const c = require('../inprocess/common');
const { runLoad } = require('../../demo/load');
const { appServing } = require('./common');

function startApp(runtime, { retain, framework }) {
  const env = { ...process.env, NODE_OPTIONS: '' };
  for (const key of Object.keys(env)) if (key.startsWith('HEAP_LABELS_')) delete env[key];
  env.HEAP_LABELS_HTTP = '127.0.0.1:0';
  const server = path.join(c.root, 'benchmark/http/framework-server.js');
  const args = [...runtime.flags, '-r', 'heap-labels/register', server, '--framework', framework, '--mode', 'off', '--retain', String(retain)];
  const child = spawn(runtime.node, args, { cwd: c.root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  return appServing(child, (stdout) => {
    const m = /LISTENING (\d+)/.exec(stdout);
    return m ? Number(m[1]) : undefined;
  });
}

// One GET of the whole answer: { status, bytes, ms }.
function get(port, urlPath) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    http
      .get({ host: '127.0.0.1', port, path: urlPath, agent: false }, (res) => {
        let bytes = 0;
        res.on('data', (d) => (bytes += d.length));
        res.on('end', () => resolve({ status: res.statusCode, bytes, ms: performance.now() - t0 }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

function userPaths() {
  let i = 0;
  return () => `/api/users/${(i++ % 100) + 1}`;
}

async function phase(app, { scrape, seconds, every, concurrency }) {
  const scrapes = [];
  const timers = [];
  if (scrape) {
    const startScrape = () => scrapes.push(get(app.agentPort, '/debug/pprof/heap'));
    timers.push(
      setTimeout(() => {
        startScrape();
        timers.push(setInterval(startScrape, every * 1000));
      }, (every * 1000) / 2),
    );
  }
  const load = await runLoad({ port: app.port, concurrency, durationMs: seconds * 1000, nextPath: userPaths() });
  for (const t of timers) clearInterval(t);
  const done = await Promise.all(scrapes);
  if (load.errors || Object.keys(load.statuses).some((s) => s !== '200')) {
    throw new Error(`load: ${load.errors} errors, statuses ${JSON.stringify(load.statuses)}`);
  }
  for (const s of done) if (s.status !== 200) throw new Error(`a scrape answered ${s.status}`);
  return {
    mode: scrape ? 'scrape' : 'none',
    requests: load.measured,
    rps: load.rps,
    p50: load.latencyMs.p50,
    p99: load.latencyMs.p99,
    max: load.latencyMs.max,
    scrapes: done.map((s) => ({ ms: s.ms, bytes: s.bytes })),
  };
}

async function measure({ runtime, seconds, rounds, every, concurrency, retain, framework, warmupSeconds }) {
  const app = await startApp(runtime, { retain, framework });
  try {
    await runLoad({ port: app.port, concurrency, durationMs: warmupSeconds * 1000, nextPath: userPaths() });
    const phases = { none: [], scrape: [] };
    for (let r = 0; r < rounds; r++) {
      for (const mode of r % 2 === 0 ? ['none', 'scrape'] : ['scrape', 'none']) {
        process.stderr.write(`scrape-latency: round ${r + 1}/${rounds} ${mode}\n`);
        phases[mode].push(await phase(app, { scrape: mode === 'scrape', seconds, every, concurrency }));
      }
    }
    return { runtime: { name: runtime.name, node: runtime.node, version: runtime.version }, seconds, rounds, every, concurrency, retain, framework, phases };
  } finally {
    app.child.kill('SIGTERM');
  }
}

function summary(r) {
  const { none, scrape } = r.phases;
  const ratios = (key) => scrape.map((s, i) => s[key] / none[i][key]);
  return {
    p50: { none: c.median(none.map((p) => p.p50)), scrape: c.median(scrape.map((p) => p.p50)), ratio: c.median(ratios('p50')) },
    p99: { none: c.median(none.map((p) => p.p99)), scrape: c.median(scrape.map((p) => p.p99)), ratio: c.median(ratios('p99')) },
    scrapeMs: c.median(scrape.flatMap((p) => p.scrapes.map((s) => s.ms))),
    scrapeBytes: c.median(scrape.flatMap((p) => p.scrapes.map((s) => s.bytes))),
    scrapes: scrape.reduce((n, p) => n + p.scrapes.length, 0),
  };
}

function markdown(r) {
  const s = summary(r);
  const row = (mode) => {
    const list = r.phases[mode];
    return [
      mode === 'none' ? 'no scrape' : `a scrape every ${r.every} s`,
      c.fmtValue(list.map((p) => p.p50), 2, 'ms'),
      c.fmtValue(list.map((p) => p.p99), 2, 'ms'),
      c.fmtValue(list.map((p) => p.rps), 0, '/s'),
    ];
  };
  return [
    `### Request latency under load, scraped every ${r.every} s vs not scraped`,
    '',
    `${r.runtime.name} (${r.runtime.version}); ${r.framework} app (framework-server.js) with \`-r heap-labels/register\`, ` +
      `${r.retain} objects retained; ${r.concurrency} keep-alive connections, closed loop; ${r.rounds} round(s) of ` +
      `${r.seconds} s per mode, alternating in one process; median over rounds (IQR). ${s.scrapes} scrapes of ` +
      `/debug/pprof/heap, ${(s.scrapeBytes / 1024).toFixed(1)} KiB each, ${s.scrapeMs.toFixed(1)} ms median.`,
    '',
    c.table(['mode', 'p50', 'p99', 'requests'], [row('none'), row('scrape')]),
    '',
    `Scrape vs none, per round (median): p50 ${s.p50.ratio.toFixed(3)}x, p99 ${s.p99.ratio.toFixed(3)}x.`,
    '',
  ].join('\n');
}

if (require.main === module) {
  const args = c.parseArgs(process.argv.slice(2), { flags: ['quick'], repeatable: ['runtime'] });
  const quick = Boolean(args.quick);
  const [runtime] = c.runtimesFrom(args.runtime);
  measure({
    runtime,
    seconds: Number(args.seconds ?? (quick ? 1 : 30)),
    rounds: Number(args.rounds ?? (quick ? 1 : 2)),
    every: Number(args.every ?? (quick ? 0.5 : 10)),
    concurrency: Number(args.concurrency ?? 8),
    retain: Number(args.retain ?? (quick ? 20_000 : 400_000)),
    framework: args.framework ?? 'express5',
    warmupSeconds: quick ? 0.5 : 3,
  }).then(
    (r) => {
      if (args.json) fs.writeFileSync(args.json, JSON.stringify({ ...r, summary: summary(r) }, null, 2));
      console.log(markdown(r));
    },
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}

module.exports = { measure, summary, markdown };
