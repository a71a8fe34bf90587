'use strict';
// Which process of a service the agent belongs in, and which endpoint port it takes there
// (docs/operations.md, "Launchers, cluster and pm2").
//
// Launchers. Teams start services through a launcher: `npm start`, `npx app`, `yarn start`,
// `pnpm start`, a corepack shim, pm2. NODE_OPTIONS reaches the launcher as well as the app it
// runs, so the preload runs in both; only the app serves requests. A launcher is recognised by
// what its main module is, never by a name alone: the real path of process.argv[1] (resolved
// before preloads run) must be an entry point its own package declares, in a package.json whose
// name is that of a known launcher (npm's bin/npm-cli.js and bin/npx-cli.js, yarn's bin/yarn.js,
// pnpm's bin/pnpm.cjs, corepack's shims, pm2's CLIs and its daemon). Two more facts count: the
// release a yarn 2+ project runs (`yarnPath` of its .yarnrc.yml), and the CLI a package manager
// names in npm_execpath for the scripts it runs (npm, yarn and pnpm set it), which is this
// process's own main module when a package manager runs another one (`npm start` whose script
// is `pnpm serve`). npm_lifecycle_event and npm_config_user_agent are not evidence: the app
// inherits them from its launcher, and a launcher started from a shell has neither.
//
// `node --watch`'s supervisor needs no rule: it runs internal/main/watch_mode, which prepares
// the process with prepareMainThreadExecution(false, false), so neither `-r` nor `--import`
// preloads (command line or NODE_OPTIONS) run in it; the child it restarts is a plain process
// (its execArgv without the --watch flags, WATCH_REPORT_DEPENDENCIES=1 in its environment).
// tests/process-model.test.js checks it on each runtime.
//
// Workers. A node:cluster worker (pm2's cluster mode is node:cluster) or a process pm2 runs in
// fork mode is one of several instances of a service, each with a heap of its own, started with
// the same HEAP_LABELS_HTTP. The process that was started (a cluster primary, a single process)
// serves its port P; a worker serves the first free port of P+1..P+WORKER_PORTS (port 0: a port
// of its own, any). A worker binds its port itself: a listen() in a cluster worker is otherwise
// shared through the primary, which would hand each request to any worker (lib/agent.js binds
// with `exclusive`).

const fs = require('node:fs');
const path = require('node:path');

// Package name -> files of the package that are the launcher's own processes besides its `bin`
// entries (named by the package).
const LAUNCHERS = new Map([
  ['npm', []], // bins npm, npx
  ['yarn', []], // yarn 1
  ['@yarnpkg/cli-dist', []], // yarn 2+ installed as a package
  ['pnpm', []], // bins pnpm, pnpx
  ['corepack', []], // shims yarn, pnpm, ...: it runs the package manager it fetched in its own process
  // pm2's daemon is the cluster primary of the apps it runs; the apps run in its process
  // containers (lib/ProcessContainer.js, lib/ProcessContainerFork.js), which are not listed.
  ['pm2', ['lib/Daemon.js']], // bins pm2, pm2-runtime, ...
]);

// Ports a worker may take above P: one per worker, with room for workers replaced while their
// predecessors still hold theirs.
const WORKER_PORTS = 128;

// Directories walked up from the main module to its package.json, or to a .yarnrc.yml.
const MAX_DEPTH = 8;

function realpath(file) {
  try {
    return fs.realpathSync(file);
  } catch {
    return undefined;
  }
}

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

// The nearest package.json at or above `dir`: { dir, json }, or undefined.
function packageOf(dir) {
  for (let i = 0; i < MAX_DEPTH; i++) {
    const json = readJson(path.join(dir, 'package.json'));
    if (json !== undefined) return { dir, json };
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return undefined;
}

// The real paths of a package's launcher processes -> their names: its `bin` entries (a string:
// named by the package; an object: by each key) and `extra` (named by the package).
function entryPoints({ dir, json }, extra) {
  const bin = json.bin;
  const named = typeof bin === 'string' ? [[json.name, bin]] : bin !== null && typeof bin === 'object' ? Object.entries(bin) : [];
  const out = new Map();
  for (const [name, file] of [...named, ...extra.map((file) => [json.name, file])]) {
    if (typeof file !== 'string') continue;
    const real = realpath(path.resolve(dir, file));
    if (real !== undefined && !out.has(real)) out.set(real, name);
  }
  return out;
}

// Whether `main` is the release that the nearest .yarnrc.yml above it names as its `yarnPath`
// (yarn 2+ runs the project's own copy of itself, e.g. .yarn/releases/yarn-4.5.0.cjs).
function isYarnRelease(main) {
  let dir = path.dirname(main);
  for (let i = 0; i < MAX_DEPTH; i++) {
    let text;
    try {
      text = fs.readFileSync(path.join(dir, '.yarnrc.yml'), 'utf8');
    } catch {
      text = undefined;
    }
    if (text !== undefined) {
      const m = /^yarnPath:[ \t]*(["']?)(.+?)\1[ \t]*$/m.exec(text);
      return m !== null && realpath(path.resolve(dir, m[2])) === main;
    }
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return false;
}

// The launcher this process is (its name: 'npm', 'npx', 'yarn', 'pm2-runtime', ...), or undefined when it is not one (or the
// files that would tell cannot be read: then it is profiled, as any process).
function launcherOf(argv = process.argv, env = process.env) {
  if (typeof argv[1] !== 'string' || argv[1] === '') return undefined; // node -e, the REPL, stdin
  const main = realpath(argv[1]);
  if (main === undefined) return undefined;
  const pkg = packageOf(path.dirname(main));
  const extra = pkg !== undefined && typeof pkg.json.name === 'string' ? LAUNCHERS.get(pkg.json.name) : undefined;
  const name = extra === undefined ? undefined : entryPoints(pkg, extra).get(main);
  if (name !== undefined) return name;
  if (isYarnRelease(main)) return 'yarn';
  if (typeof env.npm_execpath === 'string' && env.npm_execpath !== '' && realpath(env.npm_execpath) === main) {
    return path.basename(main).replace(/(-cli)?\.[cm]?js$/, '');
  }
  return undefined;
}

// What this process is among the instances of a service: 'cluster worker <id>' (node:cluster,
// pm2's cluster mode), 'pm2 process <id>' (pm2's fork mode), or undefined for the process that
// was started. Node.js removes NODE_UNIQUE_ID from a worker's environment before preloads run:
// node:cluster (loaded in workers by then) is what knows.
function workerOf(env = process.env) {
  const cluster = require('node:cluster');
  if (cluster.isWorker) return `cluster worker ${cluster.worker.id}`;
  if (typeof env.pm_id === 'string' && /^\d+$/.test(env.pm_id)) return `pm2 process ${env.pm_id}`;
  return undefined;
}

// The ports to try, in order, for an endpoint configured on `port`.
function endpointPorts(port, worker = workerOf()) {
  if (worker === undefined || port === 0) return [port];
  const ports = [];
  for (let p = port + 1; p <= Math.min(port + WORKER_PORTS, 65535); p++) ports.push(p);
  return ports;
}

const { isMainThread } = require('./main-thread');

module.exports = { isMainThread, launcherOf, workerOf, endpointPorts, WORKER_PORTS };
