'use strict';
// Start-up cost (issue 28 item 1), each case next to its anchor on the same runtime:
//   empty        node -e 0                                      (the anchor of require and preload)
//   require      node -e "require('heap-labels')"
//   preload      node -r heap-labels/register -e 0              (the agent with its defaults: pushing
//                                                                off, no HTTP endpoint)
//   app          the express 5 app of benchmark/http/framework-server.js (heap-labels not loaded),
//                from exec until it listens                      (the anchor of the app cases)
//   app-preload  the same app with -r heap-labels/register      (its routes labeled, zero code)
//   preload-first, app-preload-first  the same two with an empty code cache directory: the first
//                start after an install or upgrade, which compiles heap-labels' modules and writes
//                the preload's code cache (lib/code-cache.js); the other preload cases run with a
//                cache that one untimed start of the app wrote, as every later start does
//   app-datadog  the same app with -r benchmark/startup/datadog-preload.js: @datadog/pprof's heap
//                profiler started the way its users start it (left out, with the reason, when
//                @datadog/pprof does not load on the runtime)
// and which of node:tls, node:https and node:zlib (the modules of pushing and of the endpoint's TLS)
// `require('heap-labels')` and the preload load (process.moduleLoadList: none is the target).
//
//   node benchmark/startup/startup.js [--runtime name=/path/to/node] [--counter callgrind|time]
//        [--repeat 3] [--framework express5] [--json FILE]
//
// --counter callgrind (default): instructions of the whole process, every thread, start to exit
// (valgrind --tool=callgrind), the measure that does not depend on what else the machine runs.
// --counter time: wall-clock milliseconds of the process (the smoke run of benchmark/run.sh
// --quick; noise here). The package is loaded by its name, as an app does (the checkout refers to
// itself through package.json's exports); the app exits when it listens (--exit-on-listen). Cases
// run --repeat times in alternating order; the median counts. HEAP_LABELS_* and NODE_OPTIONS are
// cleared: every setting is the default. Prints a markdown section.

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const c = require('../inprocess/common');

const ANCHORS = {
  require: 'empty',
  preload: 'empty',
  'preload-first': 'empty',
  'app-preload': 'app',
  'app-preload-first': 'app',
  'app-datadog': 'app',
};
// Cases run with a new, empty code cache directory each time (the case they are the first start of).
const FIRST = { 'preload-first': 'preload', 'app-preload-first': 'app-preload' };

function cleanEnv() {
  const env = { ...process.env, NODE_OPTIONS: '' };
  for (const key of Object.keys(env)) if (key.startsWith('HEAP_LABELS_')) delete env[key];
  return env;
}

function cases(framework) {
  const app = [path.join(c.root, 'benchmark/http/framework-server.js'), '--framework', framework, '--mode', 'off', '--exit-on-listen'];
  return {
    empty: ['-e', '0'],
    require: ['-e', "require('heap-labels')"],
    preload: ['-r', 'heap-labels/register', '-e', '0'],
    'preload-first': ['-r', 'heap-labels/register', '-e', '0'],
    app,
    'app-preload': ['-r', 'heap-labels/register', ...app],
    'app-preload-first': ['-r', 'heap-labels/register', ...app],
    'app-datadog': ['-r', path.join(__dirname, 'datadog-preload.js'), ...app],
  };
}

// Why @datadog/pprof cannot be measured on this runtime, or undefined when it loads.
function datadogProblem(runtime, env) {
  const r = spawnSync(runtime.node, [...runtime.flags, '-e', "require('@datadog/pprof').heap"], { cwd: c.root, env, encoding: 'utf8' });
  if (r.status === 0) return undefined;
  const line = r.stderr.split('\n').find((l) => /Error|Cannot/.test(l)) ?? `exit ${r.status}`;
  return `@datadog/pprof does not load on ${runtime.version}: ${line.trim()}`;
}

// Node's own modules from `pattern` that loading `entry` adds (process.moduleLoadList).
function modulesLoaded(runtime, env, entry, pattern) {
  const probe = `
    const before = new Set(process.moduleLoadList);
    require(${JSON.stringify(entry)});
    const loaded = process.moduleLoadList.filter((m) => !before.has(m) && ${pattern}.test(m));
    process.stdout.write(JSON.stringify(loaded.map((m) => m.replace(/^NativeModule /, 'node:'))));`;
  const r = spawnSync(runtime.node, [...runtime.flags, '-e', probe], { cwd: c.root, env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`module probe of ${entry} failed:\n${r.stderr}`);
  return JSON.parse(r.stdout);
}

function once(runtime, args, counter, env) {
  const argv = [...runtime.flags, ...args];
  if (counter === 'callgrind') return c.callgrindInstructions(runtime.node, argv, { env });
  const t0 = process.hrtime.bigint();
  const r = spawnSync(runtime.node, argv, { cwd: c.root, env, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${args.join(' ')} failed (${r.status ?? r.signal}):\n${r.stderr.slice(-2000)}`);
  return ms;
}

function measure({ runtime, counter = 'callgrind', repeat = 3, framework = 'express5' }) {
  const cacheRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-startup-'));
  try {
    return measureWith({ runtime, counter, repeat, framework, cacheRoot });
  } finally {
    fs.rmSync(cacheRoot, { recursive: true, force: true });
  }
}

function measureWith({ runtime, counter, repeat, framework, cacheRoot }) {
  const env = { ...cleanEnv(), HEAP_LABELS_CODE_CACHE: path.join(cacheRoot, 'warm') };
  const datadog = datadogProblem(runtime, env);
  const all = cases(framework);
  if (datadog) delete all['app-datadog'];
  const names = Object.keys(all);
  const runs = Object.fromEntries(names.map((n) => [n, []]));
  // The start that writes the cache the other preload cases use.
  once(runtime, all['app-preload'], 'time', env);
  let firsts = 0;
  for (let r = 0; r < repeat; r++) {
    for (const name of r % 2 === 0 ? names : [...names].reverse()) {
      process.stderr.write(`startup: ${r + 1}/${repeat} ${name}\n`);
      const caseEnv = name in FIRST ? { ...env, HEAP_LABELS_CODE_CACHE: path.join(cacheRoot, `first-${firsts++}`) } : env;
      runs[name].push(once(runtime, all[name], counter, caseEnv));
    }
  }
  const pattern = '/^NativeModule (tls|_tls_wrap|_tls_common|https|zlib)$/';
  return {
    runtime: { name: runtime.name, node: runtime.node, version: runtime.version, flags: runtime.flags },
    counter,
    unit: counter === 'callgrind' ? 'instructions' : 'ms',
    repeat,
    framework,
    figures: Object.fromEntries(names.map((n) => [n, c.median(runs[n])])),
    runs,
    datadog: datadog ? { ok: false, reason: datadog } : { ok: true },
    modules: {
      require: modulesLoaded(runtime, env, 'heap-labels', pattern),
      preload: modulesLoaded(runtime, env, 'heap-labels/register', pattern),
    },
  };
}

function markdown(r) {
  const fmt = (x) => (r.unit === 'instructions' ? `${(x / 1e6).toFixed(1)}M` : `${x.toFixed(1)} ms`);
  const rows = Object.entries(all(r)).map(([name, command]) => {
    const anchor = ANCHORS[name];
    const x = r.figures[name];
    return [
      `\`${command}\``,
      x === undefined ? 'n/a' : fmt(x),
      anchor && x !== undefined ? `${(x / r.figures[anchor]).toFixed(2)}x ${anchor === 'empty' ? '`node -e 0`' : 'the app alone'}` : '',
    ];
  });
  const out = [
    `### Start-up (${r.counter === 'callgrind' ? 'callgrind: instructions, every thread' : 'wall-clock time of the process'})`,
    '',
    `${r.runtime.name}: ${r.runtime.node} (${r.runtime.version}${r.runtime.flags.length ? `, ${r.runtime.flags.join(' ')}` : ''}); ` +
      `median of ${r.repeat} run(s) per case, alternating; the app: benchmark/http/framework-server.js ` +
      `--framework ${r.framework}, until it listens.`,
    '',
    c.table(['process', r.unit, 'vs its anchor'], rows),
    '',
    `Loaded by \`require('heap-labels')\`: ${r.modules.require.join(', ') || 'none'} of node:tls/https/zlib; ` +
      `by the preload: ${r.modules.preload.join(', ') || 'none'}.` +
      (r.datadog.ok ? '' : ` @datadog/pprof row left out: ${r.datadog.reason}.`),
    '',
  ];
  return out.join('\n');
}

// The command line each case stands for, as the table shows it.
function all(r) {
  const app = `node benchmark/http/framework-server.js --framework ${r.framework}`;
  const shown = {
    empty: 'node -e 0',
    require: `node -e "require('heap-labels')"`,
    preload: 'node -r heap-labels/register -e 0',
    'preload-first': 'node -r heap-labels/register -e 0 (first start: no code cache yet)',
    app,
    'app-preload': `node -r heap-labels/register ${app.slice(5)}`,
    'app-preload-first': `node -r heap-labels/register ${app.slice(5)} (first start: no code cache yet)`,
    'app-datadog': `node -r @datadog/pprof (heap.start) ${app.slice(5)}`,
  };
  return Object.fromEntries(Object.keys(shown).filter((n) => n in r.figures).map((n) => [n, shown[n]]));
}

if (require.main === module) {
  const args = c.parseArgs(process.argv.slice(2), { repeatable: ['runtime'] });
  const [runtime] = c.runtimesFrom(args.runtime);
  const counter = args.counter ?? 'callgrind';
  if (!['callgrind', 'time'].includes(counter)) throw new Error('--counter must be callgrind or time');
  if (counter === 'callgrind' && !c.haveValgrind()) throw new Error('--counter callgrind needs valgrind (or --counter time)');
  const r = measure({ runtime, counter, repeat: Number(args.repeat ?? 3), framework: args.framework ?? 'express5' });
  if (args.json) fs.writeFileSync(args.json, JSON.stringify(r, null, 2));
  console.log(markdown(r));
}

module.exports = { measure, markdown };
