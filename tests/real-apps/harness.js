'use strict';
// Real apps that no one here wrote, as a team runs them: each app is a pinned npm dependency of a
// small deployment project (tests/real-apps/<app>/package.json with its `start` script, and the
// package-lock.json that pins every package below it), installed by `npm ci` into
// ${HEAP_LABELS_CACHE:-~/.cache/heap-labels}/real-apps/<app>@<version> (never committed), and
// started unmodified by `npm start` with NODE_OPTIONS="-r heap-labels/register" on the labeled
// runtime. A load driver (this process: one thread, so at most one core) sends bounded loopback
// traffic over several routes, 404s and a body-parsing route included, then the harness reads the
// agent's endpoint (/debug/pprof/allocs, /debug/pprof/heap) and works out, per app:
//   - the share of the bytes allocated during the traffic that carry a correct route template (the
//     template of the route that answered, as written in the app's own source: each app's file lists
//     its requests and their templates), the share of the unrouted bucket, the share of label values
//     that are no template of the app's, and the unlabeled rest;
//   - which process serves the endpoint, against the one that serves the app (the owner of each
//     listening socket, from /proc: the endpoint reports no pid of its own yet).
// and asserts what issue 26 asks: >= 90 % of the bytes on a correct template, the unrouted bucket
// <= 5 %, every label value the template of a route that answered and each such template present,
// and the endpoint served from the app's pid.
//
// Those final assertions are enforced (items 1-4 of issue 26 have landed: zero-code instrumentation,
// late binding, right templates, the agent in the app's process). HEAP_LABELS_REAL_APPS_ENFORCE=0
// reports them as TODO instead (they run, print their figures and fail without failing the run). An
// app may name an open gap of its own (`templatesTodo`, the reason): its template-table check is
// then reported as TODO with that reason, the other three stay enforced. What the harness itself
// needs is always asserted: the install, the app answering throughout, every request getting the
// status its route gives (an endpoint that does not answer is a figure: it fails the final
// assertions).
//
// The labels reach samples only on the labeled runtime: the apps run on the node that
// `tools/patched-node/build.sh --print-node-path --cached-only` prints, and each test says it is
// skipped, and why, when there is none. Environment:
//   HEAP_LABELS_REAL_APPS_ENFORCE  1: the final assertions fail the run (default: ENFORCE_DEFAULT)
//   HEAP_LABELS_REAL_APPS_NODE     run the apps on this node instead (e.g. a stock one, to work on
//                                  the harness: samples carry no labels there, and it says so)
//   HEAP_LABELS_REAL_APPS_SECONDS  measured traffic per app, default 60 (the figures of a shorter run
//                                  are not the issue's: the final assertions then fail)
//   HEAP_LABELS_REAL_APPS_LAUNCH   npm (default: `npm start`) or bin (the app's own CLI, the start
//                                  script's command run directly: isolates items 1-3 from item 4)
//   HEAP_LABELS_REAL_APPS_KEEP     1: keep each run's directory (config, data, the app's output)
//   HEAP_LABELS_REAL_APPS_NODE_OPTIONS  added to the apps' NODE_OPTIONS after the preload (e.g. a
//                                  preload of one's own that installs an integration, to compare)
// scripts/test.d/58-real-apps.sh runs the apps one after another within a time bound.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { root, decodePprof } = require('../helpers');

const ENFORCE_DEFAULT = '1';
const ENFORCE = (process.env.HEAP_LABELS_REAL_APPS_ENFORCE || ENFORCE_DEFAULT) === '1';
const PENDING = 'HEAP_LABELS_REAL_APPS_ENFORCE=0: reported, not enforced';
const ISSUE_SECONDS = 60;
const TRAFFIC_SECONDS = Number(process.env.HEAP_LABELS_REAL_APPS_SECONDS || ISSUE_SECONDS);
const LAUNCH = process.env.HEAP_LABELS_REAL_APPS_LAUNCH || 'npm';
const KEEP = process.env.HEAP_LABELS_REAL_APPS_KEEP === '1';
const CACHE = path.join(process.env.HEAP_LABELS_CACHE || path.join(os.homedir(), '.cache', 'heap-labels'), 'real-apps');
// Traffic before the measured window: first requests compile code and fill caches.
const WARMUP_SECONDS = 3;
// The bar of issue 26.
const MIN_TEMPLATED_SHARE = 0.9;
const MAX_UNROUTED_SHARE = 0.05;
// The route label: the key and the unrouted bucket of the framework integrations (docs/api.md,
// "Framework integrations": '(unmatched)'). A per-method bucket (issue 26, item 2) keeps the
// parenthesised "(unmatched)" in its value.
const ROUTE_KEY = 'route';
const isUnroutedBucket = (value) => /^\(unmatched\)/.test(value) || /\(unmatched\)$/.test(value);
// Sampling: 32 KiB gives every route of the traffic enough samples for its share to show.
const SAMPLE_INTERVAL = 32768;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// --- the runtime -------------------------------------------------------------------------------

// { node } of the labeled runtime, or { skip: reason }.
function labeledRuntime() {
  const forced = process.env.HEAP_LABELS_REAL_APPS_NODE;
  if (forced) {
    if (!fs.existsSync(forced)) return { skip: `HEAP_LABELS_REAL_APPS_NODE=${forced} does not exist` };
    return { node: forced };
  }
  const r = spawnSync(path.join(root, 'tools', 'patched-node', 'build.sh'), ['--print-node-path', '--cached-only'], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  const node = (r.stdout || '').trim().split('\n').pop();
  if (r.status === 0 && node && fs.existsSync(node)) return { node };
  const why = (r.stderr || '').trim().split('\n').pop() || `exit ${r.status}`;
  return { skip: `no labeled runtime: tools/patched-node/build.sh --print-node-path --cached-only found none (${why}); labels reach samples only there` };
}

// --- install -------------------------------------------------------------------------------------

// The app's deployment project installed into the cache (npm ci of its lockfile); returns the
// directory and how it got there. A stamp holds the lockfile's digest: a changed lockfile reinstalls. Installs go to a
// temporary directory renamed into place, so that two checkouts sharing the cache never see half
// an install.
function ensureInstalled(app, nodeBin) {
  const lock = fs.readFileSync(path.join(app.project, 'package-lock.json'));
  const digest = crypto.createHash('sha256').update(lock).update(fs.readFileSync(path.join(app.project, 'package.json'))).digest('hex');
  const dir = path.join(CACHE, `${app.name}@${app.version}`);
  const stamp = path.join(dir, '.heap-labels-installed');
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === digest) return { dir, installed: 'cached' };
  fs.mkdirSync(CACHE, { recursive: true });
  const tmp = `${dir}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp);
  for (const file of ['package.json', 'package-lock.json']) fs.copyFileSync(path.join(app.project, file), path.join(tmp, file));
  const started = Date.now();
  const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error', '--engine-strict=false'], {
    cwd: tmp,
    encoding: 'utf8',
    timeout: 600_000,
    env: { ...process.env, NODE_OPTIONS: '', PATH: `${nodeBin}:${process.env.PATH}`, npm_config_update_notifier: 'false' },
  });
  if (r.status !== 0) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw new Error(`npm ci of ${app.name}@${app.version} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  }
  fs.writeFileSync(path.join(tmp, '.heap-labels-installed'), digest);
  fs.rmSync(dir, { recursive: true, force: true });
  try {
    fs.renameSync(tmp, dir);
  } catch (err) {
    // Another checkout installed it meanwhile: use theirs.
    fs.rmSync(tmp, { recursive: true, force: true });
    if (!fs.existsSync(stamp)) throw err;
  }
  return { dir, installed: `npm ci in ${((Date.now() - started) / 1000).toFixed(0)} s` };
}

// The version of `name` that the app's own package resolves.
function resolvedVersion(installDir, app, name) {
  const from = fs.realpathSync(path.join(installDir, 'node_modules', app.name));
  try {
    const file = require.resolve(`${name}/package.json`, { paths: [from] });
    return JSON.parse(fs.readFileSync(file, 'utf8')).version;
  } catch {
    return undefined;
  }
}

// The directory the app runs in: its package.json, a node_modules of links to the cached install,
// and heap-labels linked to this checkout, as `npm install <path of the checkout>` links a local
// package (the preload `-r heap-labels/register` resolves from the working directory, as it would
// in a project that depends on heap-labels).
function makeRunDir(app, installDir) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `heap-labels-real-${app.name}-`));
  fs.copyFileSync(path.join(app.project, 'package.json'), path.join(dir, 'package.json'));
  const modules = path.join(dir, 'node_modules');
  fs.mkdirSync(modules);
  for (const entry of fs.readdirSync(path.join(installDir, 'node_modules'))) {
    if (entry === 'heap-labels' || entry === '.package-lock.json') continue;
    fs.symlinkSync(path.join(installDir, 'node_modules', entry), path.join(modules, entry));
  }
  fs.symlinkSync(root, path.join(modules, 'heap-labels'));
  return dir;
}

// --- processes and ports -------------------------------------------------------------------------

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// The pids owning a listening TCP socket on `port` (any address), from /proc: the socket's inode
// in /proc/net/tcp{,6}, then the process whose fd links to it.
function listeningPids(port) {
  const inodes = new Set();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text;
    try {
      text = fs.readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== '0A') continue; // 0A: LISTEN
      if (parseInt(f[1].split(':').pop(), 16) === port) inodes.add(f[9]);
    }
  }
  const pids = new Set();
  if (inodes.size === 0) return [];
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let fds;
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let link;
      try {
        link = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (m && inodes.has(m[1])) pids.add(Number(pid));
    }
  }
  return [...pids];
}

function commandLine(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return '(gone)';
  }
}

// CPU seconds a process has used (user + system), from /proc/<pid>/stat (clock ticks of 1/100 s,
// Linux's USER_HZ on x86-64).
function cpuSeconds(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}

function connects(port) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

// Process groups of the apps still running: ended when this process ends, however it ends (a
// time bound's SIGTERM included), so that no app outlives its test.
const liveGroups = new Set();
function endGroups() {
  for (const pgid of liveGroups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {}
  }
  liveGroups.clear();
}
process.on('exit', endGroups);
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
  process.on(signal, () => {
    endGroups();
    process.exit(128 + os.constants.signals[signal]);
  });
}

// `npm start` (or the start script's command itself) in its own process group, its output in
// files of the run directory. Resolves once the app's port accepts connections.
async function startApp(app, { runDir, nodeBin, appPort, endpointPort }) {
  const env = {
    ...process.env,
    PATH: `${nodeBin}:${path.join(runDir, 'node_modules', '.bin')}:${process.env.PATH}`,
    NODE_OPTIONS: ['-r heap-labels/register', process.env.HEAP_LABELS_REAL_APPS_NODE_OPTIONS].filter(Boolean).join(' '),
    PORT: String(appPort),
    HEAP_LABELS_HTTP: `127.0.0.1:${endpointPort}`,
    HEAP_LABELS_DIR: path.join(runDir, 'heap-labels-dumps'),
    HEAP_LABELS_SAMPLE_INTERVAL: String(SAMPLE_INTERVAL),
    // One allocation window from the baseline read to the final one, however long the traffic.
    HEAP_LABELS_ALLOCATION_WINDOW: '3600',
    npm_config_update_notifier: 'false',
    ...app.env,
  };
  for (const key of Object.keys(env)) if (key.startsWith('NODE_TEST') || key === 'NODE_CHANNEL_FD') delete env[key];
  const out = fs.openSync(path.join(runDir, 'app.log'), 'a');
  let command;
  let args;
  if (LAUNCH === 'bin') {
    const script = JSON.parse(fs.readFileSync(path.join(app.project, 'package.json'), 'utf8')).scripts.start;
    [command, args] = ['sh', ['-c', `exec ${script}`]];
  } else {
    [command, args] = ['npm', ['start']];
  }
  const child = spawn(command, args, { cwd: runDir, env, stdio: ['ignore', out, out], detached: true });
  fs.closeSync(out);
  liveGroups.add(child.pid);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const handle = {
    launcherPid: child.pid,
    log: () => fs.readFileSync(path.join(runDir, 'app.log'), 'utf8'),
    alive: () => child.exitCode === null && child.signalCode === null,
    // SIGTERM to the group (npm forwards it too), SIGKILL after 10 s; then SIGKILL to whatever of
    // the group is left (an app that outlived its launcher).
    async stop() {
      if (handle.alive()) {
        try {
          process.kill(-child.pid, 'SIGTERM');
        } catch {}
        const timer = setTimeout(() => {
          try {
            process.kill(-child.pid, 'SIGKILL');
          } catch {}
        }, 10_000);
        await exited;
        clearTimeout(timer);
      }
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
      liveGroups.delete(child.pid);
      return exited;
    },
  };
  const deadline = Date.now() + 90_000;
  while (!(await connects(appPort))) {
    if (!handle.alive()) throw new Error(`${app.name} exited before listening on ${appPort}:\n${handle.log().slice(-4000)}`);
    if (Date.now() > deadline) {
      await handle.stop();
      throw new Error(`${app.name} did not listen on ${appPort} within 90 s:\n${handle.log().slice(-4000)}`);
    }
    await sleep(200);
  }
  return handle;
}

// --- traffic --------------------------------------------------------------------------------------

const agentFor = (concurrency) => new http.Agent({ keepAlive: true, maxSockets: concurrency });

// One request; resolves { status, body } (body: Buffer), rejects on a network error or timeout.
function request(port, agent, { method = 'GET', path: urlPath, headers = {}, body }) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(body);
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: urlPath,
        agent,
        headers: payload ? { 'content-length': payload.length, ...headers } : headers,
        timeout: 15_000,
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${urlPath}: no answer within 15 s`)));
    req.on('error', reject);
    req.end(payload);
  });
}

// The request of `kind` for its n-th use.
function materialise(kind, n) {
  const pick = (v) => (typeof v === 'function' ? v(n) : v);
  return { method: kind.method ?? 'GET', path: pick(kind.path), headers: pick(kind.headers) ?? {}, body: pick(kind.body) };
}

// Paced closed-loop traffic: `concurrency` workers share one schedule of `rate` requests a
// second (request i is due at start + i / rate), each kind taking its weight's share in a fixed
// interleaved order. Bounded by time and by count; one thread, so at most one core.
async function drive(port, kinds, { seconds, rate, concurrency }) {
  const order = [];
  const total = kinds.reduce((s, k) => s + k.weight, 0);
  const credit = kinds.map(() => 0);
  for (let i = 0; i < total; i++) {
    // Smooth weighted round robin: each kind in proportion, spread out.
    kinds.forEach((k, j) => (credit[j] += k.weight));
    let best = 0;
    for (let j = 1; j < kinds.length; j++) if (credit[j] > credit[best]) best = j;
    credit[best] -= total;
    order.push(best);
  }
  const stats = kinds.map((k) => ({ kind: k.name, sent: 0, statuses: {}, errors: [], latencyMs: 0 }));
  const used = kinds.map(() => 0);
  const agent = agentFor(concurrency);
  const cpu = process.cpuUsage();
  const start = Date.now();
  const end = start + seconds * 1000;
  const maxRequests = Math.ceil(seconds * rate);
  let next = 0;
  async function worker() {
    for (;;) {
      const i = next++;
      if (i >= maxRequests) return;
      const due = start + (i * 1000) / rate;
      const now = Date.now();
      if (now >= end) return;
      if (due > now) await sleep(due - now);
      const k = order[i % order.length];
      const s = stats[k];
      s.sent++;
      const t0 = performance.now();
      try {
        const res = await request(port, agent, materialise(kinds[k], used[k]++));
        s.statuses[res.status] = (s.statuses[res.status] ?? 0) + 1;
        s.latencyMs += performance.now() - t0;
      } catch (err) {
        if (s.errors.length < 5) s.errors.push(err.message);
        s.errors.count = (s.errors.count ?? 0) + 1;
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker));
  agent.destroy();
  for (const s of stats) s.latencyMs = s.sent ? Math.round((10 * s.latencyMs) / s.sent) / 10 : 0;
  const elapsed = (Date.now() - start) / 1000;
  const spent = process.cpuUsage(cpu);
  const sent = stats.reduce((n, s) => n + s.sent, 0);
  return { elapsed, sent, perSecond: sent / elapsed, driverCpu: (spent.user + spent.system) / 1e6 / elapsed, stats };
}

// --- profiles and figures ---------------------------------------------------------------------------

async function readProfile(endpointPort, which) {
  const url = `http://127.0.0.1:${endpointPort}/debug/pprof/${which}`;
  const res = await fetch(url, { signal: AbortSignal.timeout(60_000) });
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status} ${(await res.text()).slice(0, 300)}`);
  return decodePprof(Buffer.from(await res.arrayBuffer()));
}

// Bytes of the sample type `type` per route label value ('' for samples without one).
function bytesByRoute(profile, type) {
  const i = profile.sampleTypes.findIndex((t) => t.type === type);
  if (i < 0) return null;
  const out = new Map();
  for (const s of profile.samples) {
    const label = s.labels.find((l) => l.key === ROUTE_KEY);
    const value = label ? label.str : '';
    out.set(value, (out.get(value) ?? 0) + s.values[i]);
  }
  return out;
}

// `after - before` per route (null when either has no such type).
function subtractBytes(after, before) {
  if (after === null || before === null) return null;
  const out = new Map(after);
  for (const [value, bytes] of before) out.set(value, (out.get(value) ?? 0) - bytes);
  return out;
}

// Shares of one byte table: correct templates (of the routes that answered the traffic), the
// unrouted bucket, other label values (a wrong template: a mount path doubled, a list of paths, a
// router middleware's path), unlabeled.
function classify(byRoute, expected) {
  const total = [...byRoute.values()].reduce((a, b) => a + b, 0);
  const sums = { templated: 0, unrouted: 0, other: 0, unlabeled: 0 };
  const others = [];
  for (const [value, bytes] of byRoute) {
    if (value === '') sums.unlabeled += bytes;
    else if (expected.has(value)) sums.templated += bytes;
    else if (isUnroutedBucket(value)) sums.unrouted += bytes;
    else {
      sums.other += bytes;
      others.push(value);
    }
  }
  const share = (x) => (total > 0 ? x / total : 0);
  return {
    totalBytes: total,
    templatedShare: share(sums.templated),
    unroutedShare: share(sums.unrouted),
    otherShare: share(sums.other),
    unlabeledShare: share(sums.unlabeled),
    otherValues: others,
    byRoute: [...byRoute].sort((a, b) => b[1] - a[1]).map(([route, bytes]) => ({ route, bytes, share: share(bytes) })),
  };
}

const pct = (x) => `${(100 * x).toFixed(1)} %`;
const mib = (x) => `${(x / 1048576).toFixed(1)} MiB`;

function describe(figures) {
  const lines = [];
  const f = figures;
  lines.push(`${f.app}@${f.version} (${f.frameworks}) on ${f.runtime}, launched by ${f.launch}`);
  lines.push(
    `traffic: ${f.traffic.sent} requests in ${f.traffic.elapsed.toFixed(1)} s (${f.traffic.perSecond.toFixed(0)}/s); ` +
      `CPU: the app ${pct(f.traffic.appCpu)} of a core, the driver ${pct(f.traffic.driverCpu)}`,
  );
  for (const s of f.traffic.stats) {
    lines.push(`  ${s.kind}: ${s.sent} sent, ${s.latencyMs} ms on average, statuses ${JSON.stringify(s.statuses)}${s.errors.count ? `, ${s.errors.count} errors (${s.errors[0]})` : ''}`);
  }
  lines.push(`pids: launcher ${f.pids.launcher} (${f.pids.launcherCmd}), app ${f.pids.app.join(',') || 'none'} (${f.pids.appCmd}), endpoint ${f.pids.endpoint.join(',') || 'none'} (${f.pids.endpointCmd})`);
  lines.push(`endpoint served from the app's pid: ${f.endpointIsApp}`);
  if (f.allocated) {
    const a = f.allocated;
    lines.push(
      `allocated during the traffic: ${mib(a.totalBytes)}; correct templates ${pct(a.templatedShare)}, unrouted bucket ${pct(a.unroutedShare)}, ` +
        `other label values ${pct(a.otherShare)}, no route label ${pct(a.unlabeledShare)}`,
    );
    for (const r of a.byRoute.slice(0, 12)) lines.push(`  ${JSON.stringify(r.route || '(no route label)')}: ${mib(r.bytes)} (${pct(r.share)})`);
  } else {
    lines.push(`allocated during the traffic: not available (${f.allocatedMissing})`);
  }
  if (f.inUse) {
    const h = f.inUse;
    lines.push(`in use after the traffic (gc=1): ${mib(h.totalBytes)}; correct templates ${pct(h.templatedShare)}, unrouted ${pct(h.unroutedShare)}, no route label ${pct(h.unlabeledShare)}`);
  }
  if (f.missingTemplates.length) lines.push(`templates of the traffic with no bytes: ${f.missingTemplates.join(', ')}`);
  if (f.wrongValues.length) lines.push(`label values that are not the template of a route that answered: ${f.wrongValues.map((v) => JSON.stringify(v)).join(', ')}`);
  for (const l of f.agentLines) lines.push(`stderr: ${l}`);
  return lines;
}

// --- the test -------------------------------------------------------------------------------------

// Registers the test of one app. `app`:
//   name, version          the npm package and its pinned version
//   project                the deployment project's directory (package.json, package-lock.json)
//   frameworks             [package names] whose resolved versions the report names
//   env                    extra environment of the app (its own settings)
//   prepare(runDir, port)  writes what the app reads (config files) into its run directory
//   setup(call)            requests before the traffic (data the routes serve); call(req) -> { status, body }
//   kinds                  the traffic: [{ name, weight, method, path, headers, body, status: [codes],
//                          template }] where path/headers/body may be functions of n (the kind's
//                          n-th request) and template is the route template from the app's source
//                          (a string), or null for a request no route answers (the unrouted bucket)
//   rate, concurrency      requests a second, connections
//   templatesTodo          a known gap of this app's templates (the reason): that check is TODO
function realAppTest(app) {
  const runtime = labeledRuntime();
  const title = `${app.name}@${app.version}: ${LAUNCH === 'bin' ? 'its own CLI' : 'npm start'} with NODE_OPTIONS="-r heap-labels/register", ${TRAFFIC_SECONDS} s of loopback traffic`;
  test(title, { skip: runtime.skip, timeout: (TRAFFIC_SECONDS + 240) * 1000 }, async (t) => {
    const nodeBin = path.dirname(runtime.node);
    const { dir: installDir, installed } = ensureInstalled(app, nodeBin);
    t.diagnostic(`${app.name}@${app.version} in ${installDir} (${installed})`);
    const runDir = makeRunDir(app, installDir);
    let handle;
    t.after(async () => {
      await handle?.stop();
      if (!KEEP) fs.rmSync(runDir, { recursive: true, force: true });
    });
    if (KEEP) t.diagnostic(`run directory: ${runDir}`);
    const appPort = await freePort();
    const endpointPort = await freePort();
    app.prepare?.(runDir, appPort);
    const version = spawnSync(runtime.node, ['--version'], { encoding: 'utf8' }).stdout.trim();
    const frameworks = app.frameworks.map((name) => `${name} ${resolvedVersion(installDir, app, name) ?? '?'}`).join(', ');

    handle = await startApp(app, { runDir, nodeBin, appPort, endpointPort });
    const setupAgent = agentFor(1);
    await app.setup?.((req) => request(appPort, setupAgent, req));
    setupAgent.destroy();

    const concurrency = app.concurrency ?? 8;
    await drive(appPort, app.kinds, { seconds: WARMUP_SECONDS, rate: app.rate, concurrency });
    // The baseline read: the endpoint counts allocations since the agent's start (as Go does), so
    // the traffic's are the later read's minus this one's (start-up and warm-up left out).
    let baselineError;
    let baseline;
    try {
      baseline = await readProfile(endpointPort, 'allocs');
    } catch (err) {
      baselineError = err;
    }
    const servers = listeningPids(appPort);
    const cpuBefore = servers.map(cpuSeconds);
    const traffic = await drive(appPort, app.kinds, { seconds: TRAFFIC_SECONDS, rate: app.rate, concurrency });
    traffic.appCpu = servers.reduce((sum, pid, i) => sum + cpuSeconds(pid) - cpuBefore[i], 0) / traffic.elapsed;
    let allocs;
    let heap;
    let readError = baselineError;
    try {
      allocs = await readProfile(endpointPort, 'allocs');
      heap = await readProfile(endpointPort, 'heap?gc=1');
    } catch (err) {
      readError ??= err;
    }
    const pids = {
      launcher: handle.launcherPid,
      launcherCmd: commandLine(handle.launcherPid),
      app: listeningPids(appPort),
      endpoint: listeningPids(endpointPort),
    };
    pids.appCmd = pids.app.map(commandLine).join('; ');
    pids.endpointCmd = pids.endpoint.map(commandLine).join('; ');
    const alive = handle.alive();

    const expected = new Set(app.kinds.map((k) => k.template).filter((x) => typeof x === 'string'));
    const allocated = allocs && baseline && subtractBytes(bytesByRoute(allocs, 'alloc_space'), bytesByRoute(baseline, 'alloc_space'));
    const inUse = heap && bytesByRoute(heap, 'inuse_space');
    const figures = {
      app: app.name,
      version: app.version,
      frameworks,
      runtime: `${runtime.node} ${version}`,
      launch: LAUNCH === 'bin' ? 'its own CLI' : 'npm start',
      traffic,
      pids,
      endpointIsApp: pids.endpoint.length > 0 && pids.endpoint.every((p) => pids.app.includes(p)),
      allocated: allocated && classify(allocated, expected),
      allocatedMissing: readError ? readError.message : allocs && !allocated ? 'the profile has no alloc_space: no allocation figures on this runtime' : undefined,
      inUse: inUse && classify(inUse, expected),
      missingTemplates: [],
      wrongValues: [],
      agentLines: handle
        .log()
        .split('\n')
        .filter((l) => l.startsWith('heap-labels:'))
        .slice(0, 20),
    };
    if (figures.allocated) {
      const seen = new Set(figures.allocated.byRoute.filter((r) => r.bytes > 0).map((r) => r.route));
      figures.missingTemplates = [...expected].filter((tpl) => !seen.has(tpl));
      figures.wrongValues = figures.allocated.otherValues;
    }
    for (const line of describe(figures)) t.diagnostic(line);
    process.stdout.write(`real-apps figures: ${JSON.stringify({ ...figures, allocated: figures.allocated && { ...figures.allocated, byRoute: figures.allocated.byRoute.slice(0, 20) } })}\n`);
    await handle.stop();

    // What the harness needs: the app answered throughout, as its routes do.
    assert.ok(alive, `${app.name} exited during the traffic:\n${handle.log().slice(-4000)}`);
    assert.ok(traffic.elapsed >= TRAFFIC_SECONDS * 0.95, `the traffic lasted ${traffic.elapsed} s`);
    for (const s of traffic.stats) {
      const kind = app.kinds.find((k) => k.name === s.kind);
      assert.ok(s.sent > 0, `no ${s.kind} request was sent`);
      assert.equal(s.errors.count ?? 0, 0, `${s.kind}: ${s.errors.count} requests failed: ${s.errors.join('; ')}`);
      const unexpected = Object.keys(s.statuses).filter((code) => !kind.status.includes(Number(code)));
      assert.deepEqual(unexpected, [], `${s.kind}: statuses ${JSON.stringify(s.statuses)}, the route gives ${kind.status.join('/')}`);
    }

    // What issue 26 asks (TODO until items 1-4 land: see the header).
    const pending = ENFORCE ? false : PENDING;
    const fullRun = TRAFFIC_SECONDS >= ISSUE_SECONDS ? '' : ` (a ${TRAFFIC_SECONDS} s run: the issue's figures need ${ISSUE_SECONDS} s)`;
    const needAllocated = () => {
      assert.ok(figures.allocated, `no allocation figures: ${figures.allocatedMissing}`);
      assert.ok(TRAFFIC_SECONDS >= ISSUE_SECONDS, `the traffic lasted ${TRAFFIC_SECONDS} s, the issue asks for at least ${ISSUE_SECONDS}`);
      return figures.allocated;
    };
    await t.test(`>= ${pct(MIN_TEMPLATED_SHARE)} of the bytes allocated during the traffic carry a correct route template${fullRun}`, { todo: pending }, () => {
      const a = needAllocated();
      assert.ok(a.templatedShare >= MIN_TEMPLATED_SHARE, `${pct(a.templatedShare)} on correct templates (unrouted ${pct(a.unroutedShare)}, other ${pct(a.otherShare)}, no route label ${pct(a.unlabeledShare)})`);
    });
    await t.test(`the unrouted bucket holds <= ${pct(MAX_UNROUTED_SHARE)} of them${fullRun}`, { todo: pending }, () => {
      const a = needAllocated();
      assert.ok(a.unroutedShare <= MAX_UNROUTED_SHARE, `unrouted bucket ${pct(a.unroutedShare)}`);
    });
    const templatesPending = pending || (app.templatesTodo ?? false);
    await t.test("the templates are the app's own: every label value is the template of a route that answered, every such route has bytes", { todo: templatesPending }, () => {
      needAllocated();
      assert.deepEqual(figures.wrongValues, [], 'label values that are not the template of a route that answered the traffic');
      assert.deepEqual(figures.missingTemplates, [], 'templates of the traffic without any allocated bytes');
    });
    await t.test("the endpoint is served from the app's pid", { todo: pending }, () => {
      assert.ok(pids.app.length === 1, `the app's port ${appPort} is owned by ${pids.app.join(',') || 'no process'}`);
      assert.deepEqual(pids.endpoint, pids.app, `the endpoint's port is owned by ${pids.endpoint.join(',') || 'no process'} (${pids.endpointCmd}), the app is ${pids.app[0]} (${pids.appCmd})`);
    });
  });
}

module.exports = { realAppTest };
