'use strict';
// How long a dump holds the event loop, for a profile of ~100k live samples.
//
//   node benchmark/inprocess/dump-pause.js [--runtime stock=/path/node --runtime patched=/path/node]
//        [--quick] [--procs 2] [--reps 5] [--samples 100000] [--interval 256]
//
// Child processes build the read-profile.js heap (~`samples` live samples at `interval`, 8 stacks,
// 100 label sets; labels are captured on the patched runtime) under a session, then dump it `reps`
// times. Two kinds of process, alternating `procs` times per runtime:
//   agent   the production agent: agent.dump() (the profile is copied on the main thread, then built,
//           encoded and written on a libuv worker thread: what SIGUSR2 and the HTTP endpoint do),
//           and the same through process.kill(pid, 'SIGUSR2') until the file is there;
//   sync    the all-main-thread way with the public API: getAllocationProfile() + toPprof() +
//           fs.writeFileSync.
// Measured per dump: the main-thread hold (agent: around the native call; sync: the whole dump),
// the longest gap between two turns of a 1 ms timer loop while the dump runs (what requests feel)
// and the total time.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const c = require('./common');
const { buildHeap, forceGc } = require('./read-profile');

// Runs `work()` while a timer loop records the longest gap between its turns.
async function withTicker(work) {
  let last = performance.now();
  let maxGap = 0;
  let stop = false;
  const tick = () => {
    const now = performance.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
    if (!stop) setTimeout(tick, 1);
  };
  setTimeout(tick, 1);
  await new Promise((resolve) => setTimeout(resolve, 20)); // a few turns first
  maxGap = 0;
  const t0 = performance.now();
  const result = await work();
  const total = performance.now() - t0;
  await new Promise((resolve) => setTimeout(resolve, 5));
  stop = true;
  return { result, total, maxGap };
}

async function childAgent(args, dir) {
  const hl = require('../../lib');
  const interval = Number(args.interval);
  const agent = await hl.startAgent({ sampleInterval: interval, dir, keep: 2, nearHeapLimit: 0 });
  const kept = buildHeap(Number(args.samples) * interval, true);
  const out = { phase: 'agent', dump: [], signal: [], samples: 0 };
  for (let r = 0; r < Number(args.reps); r++) {
    await forceGc();
    const a = await withTicker(() => agent.dump({ reason: 'bench' }));
    out.dump.push({ hold: a.result.pauseMs, gap: a.maxGap, total: a.total });
    out.samples = a.result.samples;
    await forceGc();
    const before = new Set(fs.readdirSync(dir));
    const s = await withTicker(async () => {
      process.kill(process.pid, 'SIGUSR2');
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, 1));
        if (fs.readdirSync(dir).some((f) => f.endsWith('.pb.gz') && !before.has(f))) return;
      }
    });
    out.signal.push({ gap: s.maxGap, total: s.total });
  }
  await agent.stop();
  out.kept = kept.length;
  return out;
}

async function childSync(args, dir) {
  const hl = require('../../lib');
  const interval = Number(args.interval);
  const handle = hl.startHeapProfile({ sampleInterval: interval });
  const kept = buildHeap(Number(args.samples) * interval, true);
  const out = { phase: 'sync', dump: [], samples: 0 };
  for (let r = 0; r < Number(args.reps); r++) {
    await forceGc();
    const y = await withTicker(async () => {
      const t0 = performance.now();
      const profile = handle.getAllocationProfile();
      fs.writeFileSync(path.join(dir, 'sync.pb.gz'), profile.toPprof());
      out.samples = profile.samples.length;
      return performance.now() - t0;
    });
    out.dump.push({ hold: y.result, gap: y.maxGap, total: y.total });
  }
  handle.stop();
  out.kept = kept.length;
  return out;
}

function parent(args) {
  const quick = Boolean(args.quick);
  const procs = Number(args.procs || (quick ? 1 : 2));
  const reps = Number(args.reps || (quick ? 2 : 5));
  const samples = Number(args.samples || (quick ? 10_000 : 100_000));
  const interval = Number(args.interval || 256);
  const runtimes = c.runtimesFrom(args.runtime);
  const childArgs = (phase) => ['--child', phase, '--reps', reps, '--samples', samples, '--interval', interval].map(String);
  const res = Object.fromEntries(runtimes.map((rt) => [rt.name, { agent: [], sync: [] }]));
  for (let p = 0; p < procs; p++) {
    const phases = p % 2 === 0 ? ['agent', 'sync'] : ['sync', 'agent'];
    for (const rt of runtimes) {
      for (const phase of phases) {
        process.stderr.write(`dump-pause: ${p + 1}/${procs} ${rt.name} ${phase}\n`);
        res[rt.name][phase].push(c.runChild(rt, __filename, childArgs(phase), { extraFlags: ['--expose-gc'] }));
      }
    }
  }
  const all = (list, key, field) => list.flatMap((o) => o[key].map((d) => d[field]));
  const rows = [];
  for (const rt of runtimes) {
    const { agent, sync } = res[rt.name];
    rows.push([
      `${rt.name} (${rt.version})`,
      String(Math.round(c.median(agent.map((o) => o.samples)))),
      c.fmtValue(all(agent, 'dump', 'hold'), 1, 'ms'),
      c.fmtValue(all(agent, 'dump', 'gap'), 1, 'ms'),
      c.fmtValue(all(agent, 'signal', 'gap'), 1, 'ms'),
      c.fmtValue(all(agent, 'dump', 'total'), 1, 'ms'),
      c.fmtValue(all(sync, 'dump', 'hold'), 1, 'ms'),
      c.fmtValue(all(sync, 'dump', 'gap'), 1, 'ms'),
    ]);
  }
  const out = [];
  out.push('### Dump pause: event-loop hold of a dump of ~100k live samples');
  out.push('');
  out.push(
    `sampleInterval ${interval} B, ~${samples} live samples (read-profile.js heap); ${procs} process(es) per kind ` +
      `and runtime, ${reps} dumps each; median (IQR) over all dumps. "gap": the longest pause a 1 ms timer loop saw ` +
      'while the dump ran (includes the ~1 ms timer resolution).',
  );
  out.push('');
  out.push(
    c.table(
      ['runtime', 'samples', 'agent: main-thread hold', 'agent: longest loop gap', 'SIGUSR2: longest loop gap', 'agent: total (to file)', 'sync (main thread only): hold', 'sync: longest loop gap'],
      rows,
    ),
  );
  out.push('');
  return { markdown: out.join('\n'), results: res };
}

if (require.main === module) {
  const args = c.parseArgs(process.argv.slice(2), { flags: ['quick'], repeatable: ['runtime'] });
  if (args.child === 'agent' || args.child === 'sync') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-dump-pause-'));
    (args.child === 'agent' ? childAgent : childSync)(args, dir)
      .then((r) => console.log(JSON.stringify(r)))
      .finally(() => fs.rmSync(dir, { recursive: true, force: true }));
  } else {
    const { markdown, results } = parent(args);
    if (args.json) fs.writeFileSync(args.json, JSON.stringify(results, null, 2));
    console.log(markdown);
  }
}
