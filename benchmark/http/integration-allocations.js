'use strict';
// JS-heap bytes the framework integrations allocate per request, read from the allocation profile
// itself: the framework app servers (framework-server.js) run with a small sampleInterval and keep
// the samples of collected objects, so the profile holds (an estimate of) every byte allocated; each
// sampled byte goes to the owner of the innermost frame of its stack that is not Node.js's own code
// (framework-server.js, allocationsByOwner). The integration's bytes are those owned by heap-labels'
// files; the total per request in integration mode against sampling mode is the cross-check (it also
// catches bytes the framework allocates because of the integration).
//
//   node benchmark/http/integration-allocations.js --runtime 'patched=/path/to/node'
//        [--runtime 'stock=/path/to/node --experimental-async-context-frame' ...]
//        [--frameworks express4,express5,fastify,koa] [--modes integration,automatic]
//        [--requests 4000] [--warmup 2000] [--interval 256] [--sites 8]
//
// A runtime is `name=<node> [flags...]`. Per runtime and framework, mode sampling and each labeling
// mode (--modes: integration, the explicit integration; automatic, the automatic route labels of
// lib/instrument/) run in a fresh app server each: warm-up requests, then /__bench/restart (a new profile), the measured
// requests (8 keep-alive connections, /api/users/1..100 in turn), then /__bench/allocations. Prints
// markdown: bytes per request by owner, and the integration's largest sites.

const { spawn } = require('node:child_process');
const http = require('node:http');
const path = require('node:path');
const { runLoad } = require('../../demo/load');

function args(name) {
  const out = [];
  for (let i = 2; i < process.argv.length; i++) if (process.argv[i] === `--${name}`) out.push(process.argv[i + 1]);
  return out;
}
const arg = (name, fallback) => args(name).at(-1) ?? fallback;

const runtimes = args('runtime').map((spec) => {
  const eq = spec.indexOf('=');
  const [node, ...flags] = spec.slice(eq + 1).trim().split(/\s+/);
  return { name: spec.slice(0, eq), node, flags };
});
if (runtimes.length === 0) throw new Error("--runtime 'name=/path/to/node [flags]' is required");
const frameworks = arg('frameworks', 'express4,express5,fastify,koa').split(',');
const modes = arg('modes', 'integration').split(',');
const requests = Number(arg('requests', 4000));
const warmup = Number(arg('warmup', 2000));
const interval = Number(arg('interval', 256));
const topSites = Number(arg('sites', 8));

const nextPath = (() => {
  let i = 0;
  return () => `/api/users/${(i++ % 100) + 1}`;
})();

function startServer(runtime, framework, mode) {
  const child = spawn(
    runtime.node,
    [
      ...runtime.flags,
      path.join(__dirname, 'framework-server.js'),
      '--framework',
      framework,
      '--mode',
      mode,
      '--interval',
      String(interval),
      '--keep-collected',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const port = new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /LISTENING (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`app server exited (${code}) before listening:\n${stderr}`)));
  });
  return { child, port };
}

function getJson(port, urlPath) {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: urlPath }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(text)) : reject(new Error(`${urlPath}: ${res.statusCode}`))));
      })
      .on('error', reject);
  });
}

async function measure(runtime, framework, mode) {
  const server = startServer(runtime, framework, mode);
  try {
    const port = await server.port;
    await runLoad({ port, requests: warmup, concurrency: 8, nextPath, timeoutMs: 60_000 });
    await getJson(port, '/__bench/restart');
    const load = await runLoad({ port, requests, concurrency: 8, nextPath, timeoutMs: 60_000 });
    if (load.errors || load.statuses[200] !== requests) {
      throw new Error(`${framework} ${mode}: ${load.errors} errors, statuses ${JSON.stringify(load.statuses)}`);
    }
    return await getJson(port, '/__bench/allocations');
  } finally {
    if (server.child.exitCode === null && server.child.signalCode === null) {
      const exited = new Promise((resolve) => server.child.once('exit', resolve));
      server.child.kill('SIGTERM');
      await exited;
    }
  }
}

const perRequest = (bytes) => Math.round((bytes ?? 0) / requests);
const sum = (object, test) => Object.entries(object).reduce((n, [k, v]) => (test(k) ? n + v : n), 0);
const ours = (owner) => owner.startsWith('heap-labels/');

async function main() {
  const rows = [];
  const sites = [];
  for (const runtime of runtimes) {
    for (const framework of frameworks) {
      const sampling = await measure(runtime, framework, 'sampling');
      for (const mode of modes) {
        const integration = await measure(runtime, framework, mode);
        const total = (r) => sum(r.owners, () => true);
        const own = sum(integration.owners, ours);
        const byFile = Object.entries(integration.owners)
          .filter(([k]) => ours(k))
          .sort((a, b) => b[1] - a[1])
          .map(([k, v]) => `${k.slice('heap-labels/'.length)} ${perRequest(v)}`)
          .join(', ');
        rows.push(
          `| ${framework} | ${runtime.name} | ${mode} | ${perRequest(total(sampling))} | ${perRequest(total(integration))} | ` +
            `${perRequest(total(integration) - total(sampling))} | **${perRequest(own)}** | ${byFile || '-'} |`,
        );
        console.error(`integration-allocations: ${framework} ${mode} on ${runtime.name}: ${perRequest(own)} B per request`);
        const top = Object.entries(integration.sites)
          .sort((a, b) => b[1] - a[1])
          .slice(0, topSites)
          .map(([site, bytes]) => `  - ${perRequest(bytes)} B: \`${site}\``);
        sites.push(`- ${framework} ${mode} on ${runtime.name}:`, ...(top.length ? top : ['  - none']));
        // Other owners that allocate more (or less) with the labels: the framework running the
        // integration's hook, or saving what the integration does instead of it.
        const owners = new Set([...Object.keys(sampling.owners), ...Object.keys(integration.owners)]);
        const moved = [...owners]
          .filter((owner) => !ours(owner))
          .map((owner) => [owner, perRequest((integration.owners[owner] ?? 0) - (sampling.owners[owner] ?? 0))])
          .filter(([, bytes]) => Math.abs(bytes) >= 24)
          .sort((a, b) => b[1] - a[1]);
        if (moved.length) {
          sites.push(`  - elsewhere, ${mode} minus sampling: ${moved.map(([o, b]) => `${o} ${b > 0 ? '+' : ''}${b} B`).join(', ')}`);
        }
      }
    }
  }
  console.log(
    `### JS heap per request (allocation profile at sampleInterval ${interval} B with the samples of ` +
      `collected objects, ${requests} requests after ${warmup} warm-up)\n`,
  );
  console.log('| framework | runtime | mode | all bytes, sampling | all bytes, with labels | difference | heap-labels\' own | by file |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const row of rows) console.log(row);
  console.log(`\nLargest sites of the integration's own bytes (bytes per request: heap-labels frame <- allocating frame):\n`);
  for (const line of sites) console.log(line);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
