'use strict';
// What handle.retainers(key) costs (issue 30): the pause (the whole call holds the isolate: the
// heap snapshot, the profile with object ids, the walk and the aggregation) and the memory it
// needs, by heap size. Labeled runtime only (sample-labels API version 3).
//
//   node benchmark/inprocess/retainers-cost.js [--heap-mib 64,256,1024] [--interval 524288]
//        [--runtime patched=/path/node] [--reference]
//
// One child process per heap size: a session at `interval` (the production default), then
// `heap-mib` MiB of live objects in four routes' Maps (records of a few small objects and a string
// each, labeled by route), then one retainers('route') call. Per call: the pause (the result's
// pauseMs, and its parts; the CPU time the process spent in it, which a busy machine does not
// inflate), the snapshot's nodes, the peak RSS growth over the call (maxRSS after
// minus before: the snapshot, its walk and the answer) and the RSS left after it. --reference also
// measures, in a process of its own on the same heap, v8.writeHeapSnapshot(os.devNull): what a
// plain heap snapshot costs.

const c = require('./common');

function child(args) {
  const hl = require('../../lib');
  const v8 = require('node:v8');
  const handle = hl.startHeapProfile({ sampleInterval: Number(args.interval) });
  const bytes = Number(args['heap-mib']) * 1024 * 1024;
  const routes = ['/search', '/report', '/upload', '/health'].map((route) => ({ route, kept: new Map() }));
  let id = 0;
  while (v8.getHeapStatistics().used_heap_size < bytes) {
    for (const r of routes) {
      hl.withHeapProfileLabels({ route: r.route }, () => {
        for (let i = 0; i < 1000; i++, id++) {
          r.kept.set(id, { id, name: `item-${id}`, tags: [id & 7, id & 15], at: { x: id, y: -id } });
        }
      });
    }
  }
  const used = v8.getHeapStatistics().used_heap_size;
  const before = process.resourceUsage().maxRSS * 1024;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const cpuMs = () => {
    const { user, system } = process.cpuUsage(cpu0);
    return (user + system) / 1000;
  };
  if (args.reference) {
    v8.writeHeapSnapshot(require('node:os').devNull);
    const wallMs = performance.now() - t0;
    const peakGrowth = process.resourceUsage().maxRSS * 1024 - before;
    process.stdout.write(`${JSON.stringify({ used, wallMs, cpuMs: cpuMs(), rssBefore: before, peakGrowth, rssAfter: process.memoryUsage().rss })}\n`);
    return;
  }
  const result = handle.retainers('route');
  const wallMs = performance.now() - t0;
  const cpu = cpuMs();
  const after = process.resourceUsage().maxRSS * 1024;
  handle.stop();
  process.stdout.write(
    `${JSON.stringify({
      used,
      nodes: result.snapshot.nodes,
      pauseMs: result.snapshot.pauseMs,
      snapshotMs: result.snapshot.snapshotMs,
      walkMs: result.snapshot.walkMs,
      walkBytes: result.snapshot.walkBytes,
      wallMs,
      cpuMs: cpu,
      rssBefore: before,
      peakGrowth: after - before,
      rssAfter: process.memoryUsage().rss,
      groups: result.groups.length,
      samples: result.groups.reduce((n, g) => n + g.samples, 0),
    })}\n`,
  );
}

function main() {
  const args = c.parseArgs(process.argv.slice(2), { repeatable: ['runtime'], flags: ['reference'] });
  if (args.child) return child(args);
  const sizes = (args['heap-mib'] ?? '64,256,1024').split(',').map(Number);
  const interval = args.interval ?? String(512 * 1024);
  const rows = [];
  for (const runtime of c.runtimesFrom(args.runtime)) {
    for (const mib of sizes) {
      const r = c.runChild(runtime, __filename, ['--child', '1', '--heap-mib', String(mib), '--interval', interval], {
        extraFlags: [`--max-old-space-size=${Math.max(256, mib * 3)}`],
        env: { NODE_OPTIONS: '' },
        timeoutMs: 1_800_000,
      });
      const mb = (n) => `${(n / 1048576).toFixed(0)} MiB`;
      rows.push([
        runtime.name,
        mb(r.used),
        r.nodes.toLocaleString('en-US'),
        `${(r.pauseMs / 1000).toFixed(2)} s`,
        `${(r.cpuMs / 1000).toFixed(2)} s`,
        `${(r.snapshotMs / 1000).toFixed(2)} s`,
        `${(r.walkMs / 1000).toFixed(2)} s`,
        mb(r.walkBytes),
        mb(r.peakGrowth),
        mb(r.rssAfter),
        String(r.samples),
      ]);
      process.stderr.write(`${runtime.name} ${mib} MiB: ${JSON.stringify(r)}\n`);
      if (args.reference) {
        const ref = c.runChild(runtime, __filename, ['--child', '1', '--reference', '--heap-mib', String(mib), '--interval', interval], {
          extraFlags: [`--max-old-space-size=${Math.max(256, mib * 3)}`],
          env: { NODE_OPTIONS: '' },
          timeoutMs: 1_800_000,
        });
        rows.push([`${runtime.name}: v8.writeHeapSnapshot`, mb(ref.used), '', `${(ref.wallMs / 1000).toFixed(2)} s`, `${(ref.cpuMs / 1000).toFixed(2)} s`, '', '', '', mb(ref.peakGrowth), mb(ref.rssAfter), '']);
        process.stderr.write(`${runtime.name} ${mib} MiB reference: ${JSON.stringify(ref)}\n`);
      }
    }
  }
  const header = ['runtime', 'used heap', 'snapshot nodes', 'pause', 'CPU time', 'snapshot + profile', 'walk', 'walk tables', 'peak RSS growth', 'RSS after', 'samples'];
  console.log(`| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
}

main();
