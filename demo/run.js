#!/usr/bin/env node
'use strict';
// The heap-labels demo: a multi-route HTTP server under a bounded load, then the live heap per route.
//
//   node [--experimental-async-context-frame] demo/run.js [options]     (demo/run.sh does the setup)
//
// Options:
//   --in-process       run the server in this process (default: a child process, so the load
//                      generator's own allocations stay out of the profile)
//   --requests N       requests to send (default 8000)
//   --concurrency N    connections (default 16)
//   --interval BYTES   sampleInterval of the heap profiler (default 32768)
//   --labels MODE      middleware (setHeapProfileLabels, default) | with (withHeapProfileLabels)
//   --out DIR          where the pprof and .heapprofile files go (default demo-output)
//
// Prints the per-route table and writes DIR/heap-labels.pb.gz and DIR/heap-labels.heapprofile.

const { fork } = require('node:child_process');
const path = require('node:path');
const { runLoad, demoPaths } = require('./load');
const { summarize, render, writeOutputs, forceGc } = require('./report');

const root = path.resolve(__dirname, '..');
const WATCHDOG_MS = 120_000;

function parseArgs(argv) {
  const out = { 'in-process': false };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`demo: unexpected argument ${argv[i]} (see the header of demo/run.js)`);
    if (m[1] === 'in-process' || m[1] === 'child') {
      out['in-process'] = m[1] === 'in-process';
    } else {
      out[m[1]] = m[2] !== undefined ? m[2] : argv[++i];
    }
  }
  return out;
}

async function inProcess(options) {
  const heapLabels = require('../lib');
  const { startServer } = require('./server');
  const profile = heapLabels.startHeapProfile({ sampleInterval: options.interval });
  const { server, port, state } = await startServer({ labels: options.labels, profile });
  try {
    const load = await runLoad({ port, concurrency: options.concurrency, requests: options.requests, nextPath: demoPaths(1) });
    forceGc();
    const p = profile.getAllocationProfile();
    const summary = summarize(p, { root });
    summary.app = { searchCacheEntries: state.searchCache.size, keptReports: state.recentReports.length };
    summary.files = writeOutputs(p, options.out);
    return { load, summary };
  } finally {
    profile.stop();
    server.close();
    server.closeAllConnections();
  }
}

function inChild(options) {
  return new Promise((resolve, reject) => {
    const child = fork(
      path.join(__dirname, 'server.js'),
      ['--interval', String(options.interval), '--labels', options.labels],
      {
        // --expose-gc: the server runs a full GC before reading, so the table shows live objects.
        execArgv: [...new Set([...process.execArgv, '--expose-gc'])],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      },
    );
    let load;
    let summary;
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (summary) resolve({ load, summary });
      else reject(new Error(`demo server exited early (code ${code}, signal ${signal})`));
    });
    child.on('message', async (msg) => {
      try {
        if (msg.type === 'listening') {
          load = await runLoad({
            port: msg.port,
            concurrency: options.concurrency,
            requests: options.requests,
            nextPath: demoPaths(1),
          });
          child.send({ type: 'report', outDir: options.out, root });
        } else if (msg.type === 'report') {
          summary = msg.summary;
          child.send({ type: 'close' });
        }
      } catch (err) {
        child.kill();
        reject(err);
      }
    });
  });
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const options = {
    inProcess: args['in-process'],
    requests: Number(args.requests || 8000),
    concurrency: Number(args.concurrency || 16),
    interval: Number(args.interval || 32768),
    labels: args.labels || 'middleware',
    out: path.resolve(args.out || 'demo-output'),
  };
  const watchdog = setTimeout(() => {
    console.error(`demo: did not finish within ${WATCHDOG_MS / 1000} s`);
    process.exit(1);
  }, WATCHDOG_MS);
  watchdog.unref();

  const where = options.inProcess ? 'in this process' : 'in a child process';
  console.log(
    `heap-labels demo: server ${where}, ${options.requests} requests over ${options.concurrency} ` +
      `keep-alive connections (50 % /api/search, 30 % /api/report, 20 % /health), labels via ${options.labels}`,
  );
  const t0 = performance.now();
  const { load, summary } = options.inProcess ? await inProcess(options) : await inChild(options);
  const seconds = (performance.now() - t0) / 1000;

  console.log(
    `load: ${load.requests} requests in ${(load.elapsedMs / 1000).toFixed(1)} s ` +
      `(${Math.round(load.rps)}/s, p99 ${load.latencyMs.p99.toFixed(1)} ms), errors ${load.errors}, ` +
      `by route ${JSON.stringify(load.byPath)}`,
  );
  console.log(
    `app state: ${summary.app.searchCacheEntries} cached searches, ${summary.app.keptReports} kept reports`,
  );
  console.log('');
  for (const line of render(summary)) console.log(line);
  console.log('');
  const rel = (p) => path.relative(process.cwd(), p) || p;
  console.log('Files:');
  console.log(`  ${rel(summary.files.pprof)}   pprof (gzip profile.proto)`);
  console.log(`  ${rel(summary.files.heapprofile)}   DevTools .heapprofile JSON`);
  console.log('');
  console.log('Read them:');
  console.log(`  go tool pprof -tags ${rel(summary.files.pprof)}                           # label values`);
  console.log(`  go tool pprof -tagfocus route=/api/search -top ${rel(summary.files.pprof)}   # one route's sites`);
  console.log(`  go tool pprof -sample_index=inuse_objects -top ${rel(summary.files.pprof)}`);
  console.log(`  Chrome DevTools > Memory > Load profile: ${rel(summary.files.heapprofile)}`);
  console.log(`  (or \`node demo/server.js\`, then go tool pprof http://127.0.0.1:3000/debug/pprof/heap)`);
  console.log('');
  console.log(`demo finished in ${seconds.toFixed(1)} s`);
  if (load.errors > 0) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
