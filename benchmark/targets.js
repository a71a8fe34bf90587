'use strict';
// The cost figures of issue 28, each next to its anchor and target, from one run: one table
// (figure | heap-labels | anchor | ratio | target | met?). benchmark/run.sh (`npm run bench`) runs
// it first and prints the table.
//
//   node benchmark/targets.js --stock /path/to/node [--labeled /path/to/node] [--quick]
//        [--sections DIR] [--json FILE]
//
// The figures are measured on the labeled runtime when it is given (what a service profiled with
// labels runs), else on stock Node.js, which the table says; the memory row compares the two and
// needs both. Each measurement is an existing benchmark run as a child process with --json (its
// markdown section goes to DIR/<name>.md for run.sh's results file):
//   start-up         benchmark/startup/startup.js (callgrind; the app: framework-server.js, express 5)
//   label calls      benchmark/inprocess/call-instructions.js (callgrind), new-sets.js (timed)
//   memory           benchmark/inprocess/memory-per-sample.js (stock and labeled runtimes)
//   reads            benchmark/inprocess/read-profile.js (inspector and @datadog/pprof phases),
//                    dump-pause.js, benchmark/endpoint/scrape-latency.js
// Without valgrind the callgrind figures are timed instead (the table says so). --quick is the
// smoke run of CI: tiny sizes and wall-clock times everywhere; its numbers mean nothing. A failed
// measurement leaves its rows with the reason and makes the exit status 1; nothing here asserts a
// target (the met? column reports).

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const c = require('./inprocess/common');

const here = __dirname;

// Runs `script` on runtime `rt` with `--json FILE` (the harnesses run on stock and start their own
// children on the runtimes they are given); returns { name, json, markdown } or { name, error }.
function run(rt, name, script, args, tmp) {
  const json = path.join(tmp, `${name}.json`);
  process.stderr.write(`targets: ${name}\n`);
  const r = spawnSync(rt.node, [...rt.flags, path.join(here, script), ...args, '--json', json], {
    cwd: c.root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0 || !fs.existsSync(json)) return { name, error: `${script} failed (exit ${r.status ?? r.signal}; its output is in the log)` };
  return { name, json: JSON.parse(fs.readFileSync(json, 'utf8')), markdown: r.stdout };
}

// Ratios under 1 with three decimals: 0.102x must not read as a met 0.10x.
const x = (v, digits = v < 1 ? 3 : 2) => `${v.toFixed(digits)}x`;
const millions = (v) => `${(v / 1e6).toFixed(1)}M`;
const ms = (v, digits = 1) => `${v.toFixed(digits)} ms`;
const met = (ok) => (ok ? 'yes' : '**no**');
// Paths as results files show them: the home directory as ~, so no machine's path is kept.
const shown = (text) => text.split(os.homedir()).join('~');

function measureAll({ stock, labeled, quick, valgrind, tmp }) {
  const subject = labeled ?? stock;
  const spec = (rt) => `${rt.name}=${rt.node}`;
  const both = ['--runtime', spec(stock), ...(labeled ? ['--runtime', spec(labeled)] : [])];
  const q = quick ? ['--quick'] : [];
  const counter = quick || !valgrind ? 'time' : 'callgrind';
  const out = {};
  out.startup = run(stock, 'startup', 'startup/startup.js', ['--runtime', spec(subject), '--counter', counter, '--repeat', quick ? '1' : '3'], tmp);
  out.calls = run(
    stock,
    'call-instructions',
    'inprocess/call-instructions.js',
    ['--node', subject.node, '--flags', subject.flags.join(' '), '--counter', counter, ...(quick ? ['--calls', '2000', '--repeat', '1'] : [])],
    tmp,
  );
  out.newSets = run(subject, 'new-sets', 'inprocess/new-sets.js', quick ? ['--sets', '5000', '--batch', '100'] : [], tmp);
  out.memory = run(stock, 'memory-per-sample', 'inprocess/memory-per-sample.js', [...both, ...q], tmp);
  out.reads = run(stock, 'read-profile', 'inprocess/read-profile.js', [...both, ...q], tmp);
  out.dump = run(stock, 'dump-pause', 'inprocess/dump-pause.js', [...both, ...q], tmp);
  out.latency = run(stock, 'scrape-latency', 'endpoint/scrape-latency.js', ['--runtime', spec(subject), ...q], tmp);
  return { subject, counter, out };
}

// The table's rows: [figure, heap-labels, anchor, ratio, target, met?].
function rows({ subject, labeled, counter, out }) {
  const list = [];
  const failed = (m, figures) => {
    for (const f of figures) list.push([f, m.error, '', '', '', '']);
  };
  const on = ` (${subject.name})`;

  // (1) start-up
  const s = out.startup;
  if (s.error) failed(s, ['start-up']);
  else {
    const f = s.json.figures;
    const fmt = s.json.unit === 'instructions' ? millions : (v) => ms(v);
    const how = s.json.unit === 'instructions' ? 'callgrind' : 'wall time';
    list.push([`start-up, ${how}: \`node -e "require('heap-labels')"\`${on}`, fmt(f.require), `\`node -e 0\` ${fmt(f.empty)}`, x(f.require / f.empty), '', '']);
    list.push([
      `start-up, ${how}: preload \`node -r heap-labels/register -e 0\`, pushing off${on}`,
      fmt(f.preload),
      `\`node -e 0\` ${fmt(f.empty)}`,
      x(f.preload / f.empty),
      '<= 2x',
      met(f.preload / f.empty <= 2),
    ]);
    list.push([
      `app start-up until it listens (express 5), with the preload, ${how}${on} (its code cache written by an earlier start)`,
      fmt(f['app-preload']),
      `without ${fmt(f.app)}`,
      x(f['app-preload'] / f.app),
      '<= 1.15x (+15 %)',
      met(f['app-preload'] / f.app <= 1.15),
    ]);
    list.push([
      `the same, first start: no code cache yet, the preload compiles heap-labels' modules and writes it${on}`,
      fmt(f['app-preload-first']),
      `without ${fmt(f.app)}`,
      x(f['app-preload-first'] / f.app),
      '',
      '',
    ]);
    if (s.json.datadog.ok) {
      list.push([
        `app start-up with the preload vs with @datadog/pprof's heap profiler started in a preload${on}`,
        fmt(f['app-preload']),
        `@datadog/pprof ${fmt(f['app-datadog'])} (${x(f['app-datadog'] / f.app)} of without)`,
        x(f['app-preload'] / f['app-datadog']),
        '',
        '',
      ]);
    } else {
      list.push(['app start-up vs @datadog/pprof', 'n/a', s.json.datadog.reason, '', '', '']);
    }
    const loaded = [...new Set([...s.json.modules.require, ...s.json.modules.preload])];
    list.push([
      "node:tls, node:https, node:zlib loaded by `require('heap-labels')` and the preload (process.moduleLoadList)",
      loaded.length ? loaded.join(', ') : 'none',
      '',
      '',
      'none',
      met(loaded.length === 0),
    ]);
  }

  // (2) label calls
  const k = out.calls;
  if (k.error) failed(k, ['label calls']);
  else {
    const p = k.json.perCall;
    const unit = k.json.unit === 'instructions' ? 'instructions' : 'ns';
    const n = (v) => `${Math.round(v).toLocaleString('en-US')} ${unit}`;
    const how = k.json.unit === 'instructions' ? 'callgrind' : 'timed';
    list.push([`\`setHeapProfileLabels(interned)\` per call, ${how}${on}`, n(p.set), `\`als.enterWith(store)\` ${n(p.enterWith)}`, x(p.set / p.enterWith), '<= 1.2x', met(p.set / p.enterWith <= 1.2)]);
    list.push([`\`withHeapProfileLabels(interned, fn)\` per call, ${how}${on}`, n(p.with), `\`als.run(store, fn)\` ${n(p.run)}`, x(p.with / p.run), '<= 1.1x', met(p.with / p.run <= 1.1)]);
  }
  const ns = out.newSets;
  if (ns.error) failed(ns, ['first use of a new label set']);
  else {
    const r = ns.json;
    list.push([
      `first use of a new set: \`withHeapProfileLabels({ id: '<new>' }, fn)\`, timed${on}`,
      `${r.newSetUs.toFixed(2)} us`,
      `\`als.run({ id: '<new>' }, fn)\` ${r.anchorUs.toFixed(3)} us`,
      x(r.newSetUs / r.anchorUs, 1),
      '<= 3 us',
      met(r.newSetUs <= 3),
    ]);
    const million = r.sets === 1_000_000;
    list.push([
      `${r.sets.toLocaleString('en-US')} distinct sets in a row, timed${on}`,
      `${(r.wholeMs / 1000).toFixed(2)} s`,
      '',
      '',
      '< 5 s for 1,000,000',
      million ? met(r.wholeMs < 5000) : 'n/a (not a million: --quick)',
    ]);
  }

  // (3) memory per retained sample
  const m = out.memory;
  const memoryFigure = 'memory per retained sample (RSS): labeled runtime with labels vs stock';
  if (m.error) failed(m, [memoryFigure]);
  else if (!labeled) list.push([memoryFigure, 'needs the labeled runtime', '', '', '<= +8 B', '']);
  else {
    const perSample = (r, a) => c.median(r[a].map((v, i) => (v.rss - r.none[i].rss) / v.samples));
    const ours = perSample(m.json[labeled.name], 'labeled');
    const anchor = perSample(m.json.stock, 'unlabeled');
    const d = ours - anchor;
    list.push([memoryFigure, `${ours.toFixed(1)} B`, `stock, profiler on: ${anchor.toFixed(1)} B`, `${d >= 0 ? '+' : '−'}${Math.abs(d).toFixed(1)} B`, '<= +8 B', met(d <= 8)]);
  }

  // (4) reads
  const rd = out.reads;
  if (rd.error) failed(rd, ['read of ~100k samples']);
  else {
    const r = rd.json[subject.name];
    const total = r.ours.map((o) => o.ms.get + o.ms.byLabel + o.ms.toPprof);
    const samples = Math.round(c.median(r.ours.map((o) => o.samples)));
    const insp = r.inspector.length ? r.inspector : (Object.values(rd.json).find((v) => v.inspector.length)?.inspector ?? []);
    const figure = `read + group + encode, ${samples.toLocaleString('en-US')} samples: \`getAllocationProfile()\` + \`byLabel()\` + \`toPprof()\`${on}`;
    if (insp.length) {
      const ratio = c.median(total.map((t, i) => t / insp[i].ms.get));
      list.push([figure, ms(c.median(total)), `inspector \`HeapProfiler.getSamplingProfile\` ${ms(c.median(insp.map((o) => o.ms.get)))}`, x(ratio), '<= 0.10x (10x faster)', met(ratio <= 0.1)]);
    } else list.push([figure, ms(c.median(total)), 'n/a (no runtime with the inspector)', '', '<= 0.10x', '']);
    if (r.datadog.length) {
      const dd = r.datadog.map((o) => o.ms.profile + o.ms.encode);
      list.push([
        `the same read vs @datadog/pprof's \`heap.profile()\` + \`encodeSync()\` (no labels)${on}`,
        ms(c.median(total)),
        `@datadog/pprof ${ms(c.median(dd))}`,
        x(c.median(total.map((t, i) => t / dd[i]))),
        '',
        '',
      ]);
    } else list.push(["the same read vs @datadog/pprof's", 'n/a', r.datadogProblem ?? '@datadog/pprof did not run', '', '', '']);
  }
  const dp = out.dump;
  if (dp.error) failed(dp, ['dump pause']);
  else {
    const r = dp.json[subject.name];
    const gaps = (list2, key) => list2.flatMap((o) => o[key].map((d) => d.gap));
    const holds = r.agent.flatMap((o) => o.dump.map((d) => d.hold));
    const gap = c.median(gaps(r.agent, 'dump'));
    const sync = c.median(gaps(r.sync, 'dump'));
    const samples = Math.round(c.median(r.agent.map((o) => o.samples)));
    list.push([
      `dump pause at ${samples.toLocaleString('en-US')} samples: longest event-loop gap during \`agent.dump()\`${on}`,
      `${ms(gap)} (main-thread hold ${ms(c.median(holds))})`,
      `all on the main thread (\`getAllocationProfile()\` + \`toPprof()\` + write) ${ms(sync)}`,
      x(gap / sync),
      '<= 10 ms',
      met(gap <= 10),
    ]);
  }
  const lt = out.latency;
  if (lt.error) failed(lt, ['request latency under scrapes']);
  else {
    const r = lt.json;
    const s2 = r.summary;
    for (const key of ['p50', 'p99']) {
      list.push([
        `${key} request latency, express 5 app under load (preload), a scrape of /debug/pprof/heap every ${r.every} s${on}`,
        ms(s2[key].scrape, 2),
        `no scrape ${ms(s2[key].none, 2)}`,
        x(s2[key].ratio, 3),
        '',
        '',
      ]);
    }
  }
  return list;
}

function main() {
  const args = c.parseArgs(process.argv.slice(2), { flags: ['quick'] });
  if (!args.stock) throw new Error('--stock /path/to/node is required');
  const [stock] = c.runtimesFrom([`stock=${args.stock}`]);
  const labeled = args.labeled ? c.runtimesFrom([`labeled=${args.labeled}`])[0] : undefined;
  const quick = Boolean(args.quick);
  const valgrind = c.haveValgrind();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-targets-'));
  try {
    const measured = measureAll({ stock, labeled, quick, valgrind, tmp });
    const table = rows({ ...measured, labeled });
    const failures = Object.values(measured.out).filter((m) => m.error).length;
    const out = ['## Targets of issue 28', ''];
    if (quick) out.push('Quick mode (smoke run): tiny sizes and wall-clock times; the numbers and the met? column mean nothing.', '');
    out.push(
      `Measured on ${measured.subject.name === 'labeled' ? 'the labeled runtime' : 'stock Node.js (no labeled runtime given: samples carry no labels)'}: ` +
        `${measured.subject.node} (${measured.subject.version}); stock: ${stock.node}. ` +
        (measured.counter === 'callgrind' ? 'Instruction counts: callgrind.' : `Instruction counts replaced by times (${quick ? '--quick' : 'no valgrind'}).`) +
        ' Methods: the sections below and benchmark/README.md.',
      '',
    );
    out.push(c.table(['figure', 'heap-labels', 'anchor', 'ratio', 'target', 'met?'], table), '');
    console.log(shown(out.join('\n')));
    if (args.sections) {
      fs.mkdirSync(args.sections, { recursive: true });
      for (const m of Object.values(measured.out)) {
        if (m.markdown) fs.writeFileSync(path.join(args.sections, `${m.name}.md`), shown(m.markdown));
      }
    }
    if (args.json) fs.writeFileSync(args.json, JSON.stringify({ rows: table, results: Object.fromEntries(Object.entries(measured.out).map(([k, m]) => [k, m.json ?? m.error])) }, null, 2));
    process.exitCode = failures ? 1 : 0;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main();
