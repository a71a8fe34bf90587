'use strict';
// Shared helpers of the in-process benchmarks: arguments, runtimes, child processes, statistics and
// markdown output. Results are ratios measured side by side (same process, or alternating child
// processes of one run) with their spread over repetitions; absolute times are noise on these
// machines and are printed for orientation only.

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');

// --name value | --name=value | --flag. `repeatable` names collect arrays.
function parseArgs(argv, { flags = [], repeatable = [] } = {}) {
  const out = {};
  for (const name of repeatable) out[name] = [];
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z][a-z0-9-]*)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unexpected argument ${argv[i]}`);
    const [, name, inline] = m;
    let value;
    if (flags.includes(name)) value = inline === undefined ? true : inline !== 'false';
    else value = inline !== undefined ? inline : argv[++i];
    if (value === undefined) throw new Error(`--${name} needs a value`);
    if (repeatable.includes(name)) out[name].push(value);
    else out[name] = value;
  }
  return out;
}

// Runtimes to compare: `--runtime name=/path/to/node` (repeatable), default: this process's node.
// Node 22 runtimes get --experimental-async-context-frame (labels are read from the frame).
function runtimesFrom(specs) {
  const list = specs.length ? specs : [`current=${process.execPath}`];
  return list.map((spec) => {
    const eq = spec.indexOf('=');
    if (eq < 1) throw new Error(`--runtime wants name=/path/to/node, got ${spec}`);
    const node = spec.slice(eq + 1);
    const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
    if (!version) throw new Error(`cannot run ${node}`);
    const flags = version.startsWith('v22.') ? ['--experimental-async-context-frame'] : [];
    return { name: spec.slice(0, eq), node, version, flags };
  });
}

// Runs `node [flags] script args` and returns the JSON of its last stdout line.
function runChild(runtime, script, args = [], { extraFlags = [], env = {}, timeoutMs = 600_000 } = {}) {
  const r = spawnSync(runtime.node, [...runtime.flags, ...extraFlags, script, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: timeoutMs,
    maxBuffer: 64 * 1024 * 1024,
    cwd: root,
  });
  if (r.status !== 0) {
    throw new Error(`${runtime.name}: ${path.basename(script)} ${args.join(' ')} failed (${r.status ?? r.signal}):\n${r.stderr}`);
  }
  const lines = r.stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]);
}

// Instructions of one run of `node ...args` under callgrind (every thread of the process, start to
// exit): deterministic where times on these machines are noise. NODE_OPTIONS is cleared unless
// `env` sets it. Less the instructions of V8's hash seed set-up (HashSeed::InitializeRoots, with
// what it calls): it searches for primes from a random seed, 5-12M instructions that vary from one
// start to the next whatever the process does (about ±2 % of an app's start-up), so that a start-up
// differing by that much could not be told apart. A fixed --hash-seed would make it constant, but
// also makes Node.js reject its built-in modules' code cache (the flags differ from the
// snapshot's), which changes what is measured.
const RANDOM_WORK = 'v8::internal::HashSeed::InitializeRoots';

function callgrindInstructions(node, args, { env = {}, cwd = root } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-callgrind-'));
  try {
    const out = path.join(dir, 'callgrind.out');
    const r = spawnSync('valgrind', ['--tool=callgrind', `--callgrind-out-file=${out}`, node, ...args], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '', ...env },
      cwd,
      maxBuffer: 64 * 1024 * 1024,
    });
    const m = /Collected : (\d+)/.exec(r.stderr);
    if (r.status !== 0 || !m) throw new Error(`callgrind run failed (${r.status ?? r.signal}):\n${r.stderr.slice(-2000)}`);
    return Number(m[1]) - inclusiveInstructions(out, RANDOM_WORK);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// The instructions of `fn` and what it called (0 if it did not run), from a callgrind output file.
function inclusiveInstructions(file, fn) {
  const r = spawnSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', file], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`callgrind_annotate failed (${r.status ?? r.signal}):\n${r.stderr.slice(-2000)}`);
  const line = r.stdout.split('\n').find((l) => l.includes(`:${fn}(`));
  return line === undefined ? 0 : Number(/^\s*([\d,]+)/.exec(line)[1].replace(/,/g, ''));
}

// Whether valgrind runs here (callgrind measurements need it: Debian's valgrind package).
function haveValgrind() {
  return spawnSync('valgrind', ['--version'], { encoding: 'utf8' }).status === 0;
}

function quantile(values, q) {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

const median = (values) => quantile(values, 0.5);

// { median, min, max, p25, p75, n }
function spread(values) {
  return {
    median: median(values),
    p25: quantile(values, 0.25),
    p75: quantile(values, 0.75),
    min: Math.min(...values),
    max: Math.max(...values),
    n: values.length,
  };
}

const signed = (x, digits = 1) => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(digits)}`;

// A ratio as overhead in percent with its spread: "+1.2 % (IQR +0.4..+2.0, range −0.3..+3.1)".
function fmtRatio(values) {
  const s = spread(values);
  const pct = (r) => signed((r - 1) * 100);
  if (s.n === 1) return `${pct(s.median)} %`;
  return `${pct(s.median)} % (IQR ${pct(s.p25)}..${pct(s.p75)}, range ${pct(s.min)}..${pct(s.max)})`;
}

// A plain quantity with its spread: "123.4 ms (IQR 120.1..130.2)".
function fmtValue(values, digits = 1, unit = '') {
  const s = spread(values);
  const u = unit ? ` ${unit}` : '';
  if (s.n === 1) return `${s.median.toFixed(digits)}${u}`;
  return `${s.median.toFixed(digits)}${u} (IQR ${s.p25.toFixed(digits)}..${s.p75.toFixed(digits)})`;
}

function table(headers, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}

// Wall time of fn() in milliseconds.
function timeMs(fn) {
  const t0 = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

function runtimeLine(runtimes) {
  return runtimes.map((r) => `${r.name}: ${r.node} (${r.version}${r.flags.length ? `, ${r.flags.join(' ')}` : ''})`).join('; ');
}

module.exports = {
  root,
  parseArgs,
  runtimesFrom,
  runChild,
  callgrindInstructions,
  haveValgrind,
  quantile,
  median,
  spread,
  fmtRatio,
  fmtValue,
  table,
  timeMs,
  runtimeLine,
};
