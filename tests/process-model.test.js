'use strict';
// The process model (lib/process-model.js, docs/operations.md "Launchers, cluster and pm2"): a
// service started the way teams start one, with NODE_OPTIONS="-r heap-labels/register", is
// profiled in the process that serves it. tests/fixtures/process-model/ is a tiny package that
// knows nothing of heap-labels; each test copies it into a temporary directory where
// node_modules/heap-labels links to this repository, starts it through a real launcher (npm
// start, npx, yarn 1 with and without a yarnPath release, pnpm, corepack, node --watch,
// node:cluster, pm2-runtime) and reads from the endpoint which process serves it
// (X-Heap-Labels-Pid). Every process a test starts runs in a process group of its own, which the
// test kills at its end (pm2's fork-mode apps, in groups of their own, are stopped through pm2).

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { root, sleep } = require('./helpers');

const fixture = path.join(__dirname, 'fixtures', 'process-model');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-process-model-'));
const services = new Set();
process.on('exit', () => {
  for (const service of services) service.killGroup();
  fs.rmSync(tmp, { recursive: true, force: true });
});

// The fixture package in a directory of its own, heap-labels installed as a dependency would be
// (a symlink), and its bin linked as npm links a dependency's.
function makeApp() {
  const dir = fs.mkdtempSync(path.join(tmp, 'app-'));
  fs.cpSync(fixture, dir, { recursive: true });
  fs.mkdirSync(path.join(dir, 'node_modules', '.bin'), { recursive: true });
  fs.symlinkSync(root, path.join(dir, 'node_modules', 'heap-labels'), 'dir');
  fs.symlinkSync('../../server.js', path.join(dir, 'node_modules', '.bin', 'process-model-app'));
  return dir;
}

// A port P such that P..P+count-1 are free now on 127.0.0.1.
async function freePorts(count) {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20000 + Math.floor(Math.random() * 40000);
    const held = [];
    try {
      for (let p = base; p < base + count; p++) {
        const server = net.createServer();
        await new Promise((resolve, reject) => {
          server.once('error', reject);
          server.listen({ port: p, host: '127.0.0.1', exclusive: true }, resolve);
        });
        held.push(server);
      }
      return base;
    } catch {
      // taken: try another base
    } finally {
      await Promise.all(held.map((server) => new Promise((resolve) => server.close(resolve))));
    }
  }
  throw new Error(`no ${count} free consecutive ports found`);
}

// The environment of a service: no HEAP_LABELS_* from outside, this runtime first on PATH (the
// launchers' `#!/usr/bin/env node` and their scripts' `node` run it), the preload in
// NODE_OPTIONS as teams set it, npm kept off the network and out of the user's cache.
function serviceEnv(env) {
  const out = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('HEAP_LABELS_') && !k.startsWith('npm_') && k !== 'NODE_OPTIONS') out[k] = v;
  }
  const nodeOptions = [process.env.NODE_OPTIONS, '-r heap-labels/register'].filter(Boolean).join(' ');
  return {
    ...out,
    PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}`,
    NODE_OPTIONS: nodeOptions,
    npm_config_cache: path.join(tmp, 'npm-cache'),
    npm_config_offline: 'true',
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    ...env,
  };
}

// Starts `command args` in `cwd` in a process group of its own. The service collects its
// output; `apps` are the JSON lines the fixture's processes print once they listen.
function startService(command, args, { cwd, env }) {
  const child = spawn(command, args, { cwd, env: serviceEnv(env), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const service = {
    child,
    stdout: '',
    stderr: '',
    exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
    // Every JSON line of stdout (the fixture's), in order.
    lines() {
      return service.stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l));
    },
    killGroup() {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    },
  };
  services.add(service);
  child.stdout.setEncoding('utf8').on('data', (d) => (service.stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d) => (service.stderr += d));
  // Waits until `check()` returns a value (not undefined), polling; fails with the output.
  service.waitFor = async (what, check, ms = 30_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      const value = check();
      if (value !== undefined) return value;
      if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
        assert.fail(`${what}: not seen\n--- stdout\n${service.stdout}\n--- stderr\n${service.stderr}`);
      }
      await sleep(25);
    }
  };
  // `signal` first (pm2 runs fork-mode apps in process groups of their own and stops them on
  // SIGINT), then the group is killed.
  service.stop = async (signal) => {
    if (signal !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
      await Promise.race([service.exited, sleep(10_000)]);
    }
    service.killGroup();
    await service.exited;
    services.delete(service);
  };
  return service;
}

// The pid in a profile's response from the endpoint at `port` (a HEAD request reads a profile).
async function pidAt(port) {
  const res = await fetch(`http://127.0.0.1:${port}/debug/pprof/heap`, { method: 'HEAD' });
  assert.equal(res.status, 200);
  const pid = res.headers.get('x-heap-labels-pid');
  assert.match(pid ?? '', /^\d+$/, 'the endpoint says which process it serves');
  return Number(pid);
}

const SERVING = /^heap-labels: (?:(cluster worker \d+|pm2 process \d+) \(pid (\d+)\): )?serving heap profiles at http:\/\/127\.0\.0\.1:(\d+)\/debug\/pprof\/heap$/gm;

// The "serving" lines: [{ worker, pid, port }] (worker and pid only for workers).
function servingLines(stderr) {
  return [...stderr.matchAll(SERVING)].map((m) => ({ worker: m[1], pid: m[2] && Number(m[2]), port: Number(m[3]) }));
}

// The launcher lines: [{ name, pid }].
function launcherLines(stderr) {
  return [...stderr.matchAll(/^heap-labels: (\S+) \(pid (\d+)\) is a launcher: not profiled, the process it starts is$/gm)].map(
    (m) => ({ name: m[1], pid: Number(m[2]) }),
  );
}

function assertNoConflict(service) {
  assert.doesNotMatch(service.stderr, /EADDRINUSE|not profiling|cannot serve/, service.stderr);
}

// Sends SIGUSR2 to `pid` and returns the dump it wrote (the stderr line names it).
async function dumpOf(service, pid) {
  const before = service.stderr.length;
  process.kill(pid, 'SIGUSR2');
  const file = await service.waitFor(`the dump of pid ${pid}`, () => /wrote (\S+\.pb\.gz) and (\S+\.txt)/.exec(service.stderr.slice(before))?.[2]);
  assert.match(path.basename(file), new RegExp(`-${pid}-\\d+\\.txt$`), 'the dump is named by the pid that got the signal');
  assert.match(fs.readFileSync(file, 'utf8'), new RegExp(`^# pid: ${pid}$`, 'm'));
  return file;
}

// The CLI of the npm that runs this test (npm test), or the one on PATH.
function npmOnPath() {
  const r = spawnSync('npm', ['--version'], { env: serviceEnv({}), encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}
const npmVersion = npmOnPath();
const noNpm = npmVersion === undefined ? 'npm is not on PATH' : false;

// A devDependency's bin (node_modules/.bin of this repository), or undefined.
function devBin(name) {
  const bin = path.join(root, 'node_modules', '.bin', name);
  return fs.existsSync(bin) ? bin : undefined;
}

// Runs a single-process service through a launcher and checks the whole contract: the app's
// pid serves the configured port, the launcher said it is one and started nothing, SIGUSR2 to the
// app dumps the app's heap.
// `packageManager`: the package.json field corepack reads; `env`: more of the environment;
// `setup(dir)`: more of the app; `launchers`: the launchers expected, outermost first (default:
// `launcher`, the process started).
async function checkLaunched(launcher, command, args, { packageManager, env = {}, setup, launchers = [launcher] } = {}) {
  const dir = makeApp();
  setup?.(dir);
  if (packageManager !== undefined) {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ ...manifest, packageManager }));
  }
  const port = await freePorts(1);
  const dumps = path.join(dir, 'dumps');
  const service = startService(command, args, { cwd: dir, env: { HEAP_LABELS_HTTP: `127.0.0.1:${port}`, HEAP_LABELS_DIR: dumps, ...env } });
  try {
    const app = await service.waitFor('the app', () => service.lines().find((l) => l.app));
    await service.waitFor('the endpoint', () => (servingLines(service.stderr).length > 0 ? true : undefined));
    assert.notEqual(app.pid, service.child.pid, `${launcher} runs the app in a process of its own`);
    assert.equal(await pidAt(port), app.pid, "the endpoint serves the app's heap");
    assert.deepEqual(servingLines(service.stderr), [{ worker: undefined, pid: undefined, port }], 'one agent serves');
    const said = launcherLines(service.stderr);
    assert.deepEqual(said.map((l) => l.name), launchers);
    assert.equal(said[0].pid, service.child.pid);
    assert.ok(!said.some((l) => l.pid === app.pid));
    assertNoConflict(service);
    await dumpOf(service, app.pid);
  } finally {
    await service.stop();
  }
}

test('npm start: the app serves the endpoint and takes the dumps; npm runs no agent', { skip: noNpm }, async () => {
  await checkLaunched('npm', 'npm', ['start']);
});

test('npx <bin>: the bin serves the endpoint; npx runs no agent', { skip: noNpm }, async () => {
  await checkLaunched('npx', 'npx', ['--no-install', 'process-model-app']);
});

test('yarn 1 start: the app serves the endpoint; yarn runs no agent', { skip: devBin('yarn') ? false : 'yarn is not installed (npm ci)' }, async () => {
  await checkLaunched('yarn', devBin('yarn'), ['start']);
});

test(
  "yarn start in a project pinning its yarn (yarnPath): the app serves the endpoint; neither yarn nor the project's release runs an agent",
  { skip: devBin('yarn') ? false : 'yarn is not installed (npm ci)' },
  async () => {
    // The global yarn runs the release the project's .yarnrc.yml names (as yarn 2+ projects pin
    // theirs) in a process of its own; here that release is yarn 1 itself.
    const setup = (dir) => {
      fs.mkdirSync(path.join(dir, '.yarn', 'releases'), { recursive: true });
      const release = path.join(dir, '.yarn', 'releases', 'yarn-1.22.22.cjs');
      fs.writeFileSync(release, `#!/usr/bin/env node\nrequire(${JSON.stringify(path.join(root, 'node_modules', 'yarn', 'bin', 'yarn.js'))});\n`);
      fs.writeFileSync(path.join(dir, '.yarnrc.yml'), 'yarnPath: .yarn/releases/yarn-1.22.22.cjs\n');
    };
    await checkLaunched('yarn', devBin('yarn'), ['start'], { setup, launchers: ['yarn', 'yarn'] });
  },
);

test('pnpm start: the app serves the endpoint; pnpm runs no agent', { skip: devBin('pnpm') ? false : 'pnpm is not installed (npm ci)' }, async () => {
  await checkLaunched('pnpm', devBin('pnpm'), ['start']);
});

// corepack on PATH (it runs the package manager it fetched in its own process), or undefined.
function corepackOnPath() {
  const r = spawnSync('corepack', ['--version'], { env: serviceEnv({}), encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

test(
  'corepack yarn start: the app serves the endpoint; corepack, running yarn in its process, runs no agent',
  { skip: !devBin('yarn') ? 'yarn is not installed (npm ci)' : corepackOnPath() === undefined ? 'corepack is not on PATH' : noNpm },
  async () => {
    // Corepack fetches the yarn the project pins from a registry: a registry on loopback serving
    // the yarn devDependency, packed (COREPACK_INTEGRITY_KEYS=0: it has no registry signature).
    const packed = fs.mkdtempSync(path.join(tmp, 'yarn-tgz-'));
    const pack = spawnSync('npm', ['pack', path.join(root, 'node_modules', 'yarn'), '--pack-destination', packed], { env: serviceEnv({}), encoding: 'utf8' });
    assert.equal(pack.status, 0, pack.stderr);
    const tgz = fs.readFileSync(path.join(packed, 'yarn-1.22.22.tgz'));
    const registry = http.createServer((req, res) => {
      const base = `http://127.0.0.1:${registry.address().port}`;
      if (req.url === '/yarn/1.22.22') {
        const integrity = `sha512-${crypto.createHash('sha512').update(tgz).digest('base64')}`;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ name: 'yarn', version: '1.22.22', dist: { tarball: `${base}/yarn/-/yarn-1.22.22.tgz`, integrity } }));
      } else if (req.url === '/yarn/-/yarn-1.22.22.tgz') {
        res.end(tgz);
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise((resolve) => registry.listen(0, '127.0.0.1', resolve));
    try {
      await checkLaunched('corepack', 'corepack', ['yarn', 'start'], {
        packageManager: 'yarn@1.22.22',
        env: {
          COREPACK_HOME: path.join(tmp, 'corepack'),
          COREPACK_NPM_REGISTRY: `http://127.0.0.1:${registry.address().port}`,
          COREPACK_INTEGRITY_KEYS: '0',
          COREPACK_ENABLE_DOWNLOAD_PROMPT: '0',
        },
      });
    } finally {
      registry.close();
    }
  },
);

test('node --watch: the watched process serves the endpoint, and its restart serves it again', async () => {
  const dir = makeApp();
  const port = await freePorts(1);
  const service = startService(process.execPath, ['--watch', 'server.js'], { cwd: dir, env: { HEAP_LABELS_HTTP: `127.0.0.1:${port}` } });
  try {
    const first = await service.waitFor('the app', () => service.lines().find((l) => l.app));
    await service.waitFor('the endpoint', () => (servingLines(service.stderr).length === 1 ? true : undefined));
    assert.notEqual(first.pid, service.child.pid, 'the supervisor runs the app in a child');
    assert.equal(await pidAt(port), first.pid);
    // A change restarts the app: the new process binds the port its predecessor released.
    fs.appendFileSync(path.join(dir, 'server.js'), '// changed\n');
    const second = await service.waitFor('the restarted app', () => service.lines().filter((l) => l.app)[1], 60_000);
    assert.notEqual(second.pid, first.pid);
    await service.waitFor('the restarted endpoint', () => (servingLines(service.stderr).length === 2 ? true : undefined));
    assert.equal(await pidAt(port), second.pid);
    assert.deepEqual(servingLines(service.stderr).map((l) => l.port), [port, port]);
    assert.deepEqual(launcherLines(service.stderr), [], 'the supervisor loads no preload: it says nothing');
    assertNoConflict(service);
  } finally {
    await service.stop();
  }
});

// The workers' endpoints: [{ worker, pid, port }] once `count` workers serve, each checked to
// serve its own pid, on distinct ports in P+1..P+count.
async function checkWorkers(service, port, count, workerPids) {
  const lines = await service.waitFor(`${count} workers' endpoints`, () => {
    const workers = servingLines(service.stderr).filter((l) => l.worker !== undefined);
    return workers.length === count ? workers : undefined;
  });
  assert.deepEqual(lines.map((l) => l.port).sort((a, b) => a - b), Array.from({ length: count }, (_, i) => port + 1 + i));
  for (const line of lines) assert.equal(await pidAt(line.port), line.pid, `${line.worker} serves its own heap`);
  assert.deepEqual(lines.map((l) => l.pid).sort(), [...workerPids].sort(), "the endpoints are the app workers'");
  return lines;
}

test('node:cluster: the primary serves P, each worker its own port above it; SIGUSR2 dumps the worker that gets it', async () => {
  const dir = makeApp();
  const port = await freePorts(3);
  const dumps = path.join(dir, 'dumps');
  const service = startService(process.execPath, ['cluster.js'], { cwd: dir, env: { HEAP_LABELS_HTTP: `127.0.0.1:${port}`, HEAP_LABELS_DIR: dumps } });
  try {
    const primary = await service.waitFor('the primary', () => service.lines().find((l) => l.primary));
    const apps = await service.waitFor('two workers', () => {
      const workers = service.lines().filter((l) => l.app);
      return workers.length === 2 ? workers : undefined;
    });
    assert.deepEqual(apps.map((a) => a.worker).sort(), [1, 2]);
    const workers = await checkWorkers(service, port, 2, apps.map((a) => a.pid));
    assert.equal(await pidAt(port), primary.pid, 'the process that was started serves P');
    assert.equal(servingLines(service.stderr).length, 3);
    assertNoConflict(service);

    const file = await dumpOf(service, workers[0].pid);
    await sleep(500);
    const pids = fs.readdirSync(dumps).map((f) => /-(\d+)-\d+\.(?:pb\.gz|txt)$/.exec(f)[1]);
    assert.deepEqual([...new Set(pids)], [String(workers[0].pid)], 'only the signalled worker dumped');
    assert.ok(fs.existsSync(file));
  } finally {
    await service.stop();
  }
});

test('node:cluster with port 0: every process serves a port of its own', async () => {
  const dir = makeApp();
  const service = startService(process.execPath, ['cluster.js'], { cwd: dir, env: { HEAP_LABELS_HTTP: '127.0.0.1:0', APP_WORKERS: '2' } });
  try {
    const lines = await service.waitFor('three endpoints', () => {
      const all = servingLines(service.stderr);
      return all.length === 3 ? all : undefined;
    });
    assert.equal(new Set(lines.map((l) => l.port)).size, 3);
    const primary = service.lines().find((l) => l.primary);
    for (const line of lines) assert.equal(await pidAt(line.port), line.pid ?? primary.pid);
    assertNoConflict(service);
  } finally {
    await service.stop();
  }
});

test('pm2-runtime in cluster mode: each worker serves its own port; pm2 runs no agent', { skip: devBin('pm2-runtime') ? false : 'pm2 is not installed (npm ci)' }, async () => {
  const dir = makeApp();
  const port = await freePorts(3);
  const dumps = path.join(dir, 'dumps');
  const service = startService(devBin('pm2-runtime'), ['start', 'server.js', '-i', '2'], {
    cwd: dir,
    env: { HEAP_LABELS_HTTP: `127.0.0.1:${port}`, HEAP_LABELS_DIR: dumps, PM2_HOME: path.join(dir, '.pm2') },
  });
  try {
    const apps = await service.waitFor('two workers', () => {
      const workers = service.lines().filter((l) => l.app);
      return workers.length === 2 ? workers : undefined;
    });
    const workers = await checkWorkers(service, port, 2, apps.map((a) => a.pid));
    assert.deepEqual(launcherLines(service.stderr), [{ name: 'pm2-runtime', pid: service.child.pid }]);
    assert.equal(servingLines(service.stderr).length, 2, 'pm2 itself serves nothing');
    assertNoConflict(service);
    await dumpOf(service, workers[1].pid);
  } finally {
    await service.stop('SIGINT');
  }
});

test('a main module is a launcher by what its package declares, not by its name or environment', async () => {
  // An app whose entry is bin/npm-cli.js, started as npm starts scripts (npm_* variables set).
  const dir = makeApp();
  fs.mkdirSync(path.join(dir, 'bin'));
  fs.copyFileSync(path.join(dir, 'server.js'), path.join(dir, 'bin', 'npm-cli.js'));
  const port = await freePorts(1);
  const service = startService(process.execPath, ['bin/npm-cli.js'], {
    cwd: dir,
    env: { HEAP_LABELS_HTTP: `127.0.0.1:${port}`, npm_lifecycle_event: 'start', npm_config_user_agent: `npm/${npmVersion ?? '11.0.0'} node/${process.version}` },
  });
  try {
    const app = await service.waitFor('the app', () => service.lines().find((l) => l.app));
    await service.waitFor('the endpoint', () => (servingLines(service.stderr).length > 0 ? true : undefined));
    assert.equal(await pidAt(port), app.pid);
    assert.deepEqual(launcherLines(service.stderr), []);
  } finally {
    await service.stop();
  }
});

test('pm2-runtime in fork mode: the app serves the port above P as a pm2 process; pm2 runs no agent', { skip: devBin('pm2-runtime') ? false : 'pm2 is not installed (npm ci)' }, async () => {
  const dir = makeApp();
  const port = await freePorts(2);
  const service = startService(devBin('pm2-runtime'), ['start', 'server.js'], {
    cwd: dir,
    env: { HEAP_LABELS_HTTP: `127.0.0.1:${port}`, PM2_HOME: path.join(dir, '.pm2') },
  });
  try {
    const app = await service.waitFor('the app', () => service.lines().find((l) => l.app));
    assert.equal(app.worker, null, 'fork mode: not a cluster worker');
    const [line] = await service.waitFor('the endpoint', () => {
      const lines = servingLines(service.stderr);
      return lines.length === 1 ? lines : undefined;
    });
    assert.match(line.worker, /^pm2 process \d+$/);
    assert.deepEqual([line.pid, line.port], [app.pid, port + 1]);
    assert.equal(await pidAt(port + 1), app.pid);
    assert.deepEqual(launcherLines(service.stderr), [{ name: 'pm2-runtime', pid: service.child.pid }]);
    assertNoConflict(service);
  } finally {
    await service.stop('SIGINT');
  }
});

test('launcherOf: the entry points the launchers\' packages declare, the CLI npm_execpath names, nothing else', () => {
  const { launcherOf } = require('../lib/process-model');
  const installed = (file) => path.join(root, 'node_modules', file);
  const expected = [
    ['pm2/bin/pm2', 'pm2'],
    ['pm2/bin/pm2-runtime', 'pm2-runtime'],
    ['pm2/lib/Daemon.js', 'pm2'],
    ['pm2/lib/ProcessContainer.js', undefined], // runs the app (cluster mode)
    ['pm2/lib/ProcessContainerFork.js', undefined], // runs the app (fork mode)
    ['pm2/index.js', undefined],
    ['.bin/yarn', 'yarn'], // a symlink, as npm links bins
    ['yarn/bin/yarn.js', 'yarn'],
    ['yarn/lib/cli.js', undefined],
    ['.bin/pnpm', 'pnpm'],
    ['pnpm/bin/pnpx.cjs', 'pnpx'],
  ];
  for (const [file, name] of expected) {
    if (!fs.existsSync(installed(file))) continue; // a devDependency not installed: its tests say so
    assert.equal(launcherOf(['node', installed(file)], {}), name, file);
  }
  const app = path.join(fixture, 'server.js');
  assert.equal(launcherOf(['node', app], {}), undefined);
  assert.equal(launcherOf(['node'], {}), undefined, 'node -e, the REPL');
  assert.equal(launcherOf(['node', path.join(tmp, 'missing.js')], {}), undefined);
  // A package manager's script that runs that package manager again: its CLI is npm_execpath.
  assert.equal(launcherOf(['node', app], { npm_execpath: app }), 'server');
  assert.equal(launcherOf(['node', app], { npm_execpath: installed('yarn/bin/yarn.js') }), undefined, 'the app a package manager started');
});

test('worker threads start nothing: the preload runs in them (execArgv is inherited) and returns', () => {
  // The main thread never loads node:worker_threads before the preload asks (lib/register.js reads
  // whether it is loaded); the worker's bootstrap always has: both answers are checked here.
  const script = `
    const { Worker } = require('node:worker_threads');
    const w = new Worker("require('node:worker_threads').parentPort.postMessage(globalThis[Symbol.for('heap-labels.register')] === true)", { eval: true });
    w.once('message', (started) => { console.log(JSON.stringify({ main: globalThis[Symbol.for('heap-labels.register')] === true, worker: started })); });`;
  const r = spawnSync(process.execPath, ['-r', path.join(root, 'lib', 'register.js'), '-e', script], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { main: true, worker: false });
  assert.equal(r.stderr.match(/labeling requests by route template/g)?.length, 1, r.stderr);
});
