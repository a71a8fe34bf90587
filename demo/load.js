'use strict';
// A bounded, closed-loop HTTP load generator on node:http (no dependencies): `concurrency` workers,
// each with its own keep-alive connection, send one request at a time until `requests` were sent or
// `durationMs` passed. Paths come from a seeded generator, so runs are reproducible.
//
//   node demo/load.js --port 3000 [--requests 6000 | --duration 10000] [--concurrency 16]
//
// Used by demo/run.js and by the HTTP benchmark (benchmark/http/).

const http = require('node:http');

// Deterministic 32-bit generator (mulberry32).
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The demo's request mix: mostly distinct searches (cache misses that grow the cache), reports,
// health checks.
function demoPaths(seed = 1) {
  const next = rng(seed);
  return () => {
    const r = next();
    if (r < 0.5) return `/api/search?q=term-${Math.floor(next() * 50000)}`;
    if (r < 0.8) return `/api/report?days=${1 + Math.floor(next() * 60)}`;
    return '/health';
  };
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

// Runs the load; resolves to { requests, errors, statuses, byPath, elapsedMs, rps, latencyMs }.
// Options: port, host, concurrency, requests and/or durationMs (at least one), nextPath (a function
// returning the next path), warmupMs (requests sent in the first warmupMs are not measured).
async function runLoad(options) {
  const {
    port,
    host = '127.0.0.1',
    concurrency = 16,
    requests = Infinity,
    durationMs = Infinity,
    nextPath = demoPaths(1),
    warmupMs = 0,
    timeoutMs = 10_000,
  } = options;
  if (!Number.isFinite(requests) && !Number.isFinite(durationMs)) {
    throw new TypeError('load: give requests or durationMs (the load must be bounded)');
  }
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency });
  const latencies = [];
  const statuses = {};
  const byPath = {};
  let sent = 0;
  let errors = 0;
  let measured = 0;
  const start = performance.now();
  const measureFrom = start + warmupMs;
  const end = start + warmupMs + durationMs;

  const one = (path) =>
    new Promise((resolve) => {
      const t0 = performance.now();
      const req = http.request({ host, port, path, agent, method: 'GET' }, (res) => {
        res.on('data', () => {});
        res.on('end', () => {
          const t1 = performance.now();
          statuses[res.statusCode] = (statuses[res.statusCode] || 0) + 1;
          if (t0 >= measureFrom) {
            latencies.push(t1 - t0);
            measured++;
          }
          resolve();
        });
      });
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
      req.on('error', () => {
        errors++;
        resolve();
      });
      req.end();
    });

  const worker = async () => {
    while (sent < requests && performance.now() < end) {
      sent++;
      const path = nextPath();
      const key = path.split('?')[0];
      byPath[key] = (byPath[key] || 0) + 1;
      await one(path);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const stop = performance.now();
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const elapsedMs = stop - Math.min(stop, measureFrom);
  return {
    requests: sent,
    measured,
    errors,
    statuses,
    byPath,
    elapsedMs,
    rps: elapsedMs > 0 ? (measured / elapsedMs) * 1000 : NaN,
    latencyMs: {
      p50: percentile(latencies, 50),
      p90: percentile(latencies, 90),
      p99: percentile(latencies, 99),
      max: latencies.length ? latencies[latencies.length - 1] : NaN,
    },
  };
}

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`load: unexpected argument ${argv[i]}`);
    out[m[1]] = m[2] !== undefined ? m[2] : argv[++i];
  }
  return out;
}

if (require.main === module) {
  const args = parseArgs(process.argv.slice(2));
  const requests = args.requests !== undefined ? Number(args.requests) : undefined;
  const durationMs = args.duration !== undefined ? Number(args.duration) : undefined;
  runLoad({
    port: Number(args.port || 3000),
    host: args.host || '127.0.0.1',
    concurrency: Number(args.concurrency || 16),
    requests: requests ?? (durationMs === undefined ? 6000 : Infinity),
    durationMs: durationMs ?? Infinity,
    nextPath: demoPaths(Number(args.seed || 1)),
  }).then(
    (r) => console.log(JSON.stringify(r, null, 2)),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}

module.exports = { runLoad, demoPaths, rng, percentile };
