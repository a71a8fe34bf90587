'use strict';
// Turns an AllocationProfile into the demo's per-route summary (plain JSON, so a child process can
// send it over IPC), renders it as a table, and writes the two export files.

const fs = require('node:fs');
const path = require('node:path');
const url = require('node:url');
const v8 = require('node:v8');
const vm = require('node:vm');
const heapLabels = require('../lib');

const LIB_DIR = path.resolve(__dirname, '..', 'lib');

// A full GC, so the profile shows live objects only (V8 drops the samples of collected objects).
function forceGc() {
  if (typeof globalThis.gc !== 'function') {
    v8.setFlagsFromString('--expose-gc');
    globalThis.gc = vm.runInNewContext('gc');
  }
  globalThis.gc();
  globalThis.gc();
}

// V8's scaling of one sample (the same estimate byLabel() uses).
function sampleBytes(size, interval) {
  return size / (1 - Math.exp(-size / interval));
}

function fileOf(callFrame) {
  const u = callFrame.url;
  if (!u) return '';
  if (u.startsWith('file://')) return url.fileURLToPath(u);
  return u;
}

// Application code: a file on disk outside node_modules and outside heap-labels' own lib/.
function isAppFrame(callFrame) {
  const file = fileOf(callFrame);
  return (
    path.isAbsolute(file) && !file.includes(`${path.sep}node_modules${path.sep}`) && !file.startsWith(LIB_DIR)
  );
}

function frameName(callFrame) {
  return callFrame.functionName || '(anonymous)';
}

// "fn (file:line)"; DevTools call frames count lines from 0.
function describeFrame(callFrame, root) {
  const file = fileOf(callFrame);
  if (!file) return frameName(callFrame);
  const shown = path.isAbsolute(file) && root ? path.relative(root, file) : file;
  return `${frameName(callFrame)} (${shown}:${callFrame.lineNumber + 1})`;
}

// nodeId -> { site, file }: the allocation site is the innermost application frame of the stack,
// followed by the allocating builtin when that is not application code ("searchRoute (...) > stringify").
function sitesByNode(head, root) {
  const out = new Map();
  const stack = [[head, null]];
  while (stack.length) {
    const [node, app] = stack.pop();
    const cf = node.callFrame;
    const nearestApp = isAppFrame(cf) ? node : app;
    let site;
    let file;
    if (nearestApp === node) {
      site = describeFrame(cf, root);
      file = fileOf(cf);
    } else if (nearestApp) {
      site = `${describeFrame(nearestApp.callFrame, root)} > ${frameName(cf)}`;
      file = fileOf(nearestApp.callFrame);
    } else {
      site = cf.url ? describeFrame(cf, root) : `${frameName(cf)} (V8/runtime)`;
      file = fileOf(cf) || '(V8/runtime)';
    }
    out.set(node.id, { site, file });
    for (const child of node.children) stack.push([child, nearestApp]);
  }
  return out;
}

function topEntries(map, total, n) {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, bytes]) => ({ name, bytes, share: total > 0 ? bytes / total : 0 }));
}

// The summary of one profile read, grouped by the label `key` (default 'route').
function summarize(profile, { key = 'route', top = 3, root = process.cwd() } = {}) {
  const caps = heapLabels.capabilities();
  const interval = profile.sampleInterval;
  const sites = sitesByNode(profile.head, root);
  const groups = profile.byLabel(key);
  const totalBytes = groups.reduce((n, g) => n + g.bytes, 0);
  const totalObjects = groups.reduce((n, g) => n + g.objects, 0);
  const externalTotal = profile.externalBytes.reduce((n, e) => n + e.bytes, 0);

  const perGroup = new Map(); // label value (or null) -> Map(site -> bytes)
  const allSites = new Map();
  const files = new Map();
  for (const s of profile.samples) {
    const value = s.labels && Object.hasOwn(s.labels, key) ? s.labels[key] : null;
    const bytes = sampleBytes(s.size, interval);
    const where = sites.get(s.nodeId) || { site: `(node ${s.nodeId})`, file: '' };
    let m = perGroup.get(value);
    if (!m) perGroup.set(value, (m = new Map()));
    m.set(where.site, (m.get(where.site) || 0) + bytes);
    allSites.set(where.site, (allSites.get(where.site) || 0) + bytes);
    const file = where.file && path.isAbsolute(where.file) ? path.relative(root, where.file) : where.file;
    files.set(file, (files.get(file) || 0) + bytes);
  }

  return {
    key,
    capabilities: caps,
    sampleInterval: interval,
    samples: profile.samples.length,
    labeledSamples: profile.samples.filter((s) => s.labels !== undefined).length,
    totalBytes,
    totalObjects,
    externalTotal,
    groups: groups.map((g) => {
      const value = Object.hasOwn(g.labels, key) ? g.labels[key] : null;
      return {
        value,
        bytes: g.bytes,
        share: totalBytes > 0 ? g.bytes / totalBytes : 0,
        objects: g.objects,
        externalBytes: g.externalBytes,
        sites: topEntries(perGroup.get(value) || new Map(), g.bytes, top),
      };
    }),
    topSites: topEntries(allSites, totalBytes, 5),
    topFiles: topEntries(files, totalBytes, 5),
  };
}

function mb(bytes) {
  if (Math.abs(bytes) >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
  return `${(bytes / 1024).toFixed(1)} KiB`;
}

function pct(x) {
  return `${(x * 100).toFixed(1)} %`;
}

function pad(s, n) {
  return String(s).padEnd(n);
}

function lpad(s, n) {
  return String(s).padStart(n);
}

// The human-readable report (an array of lines).
function render(summary) {
  const lines = [];
  const caps = summary.capabilities;
  lines.push(
    `Node.js ${caps.node}, V8 ${caps.v8}; sampleInterval ${summary.sampleInterval} bytes; ` +
      `${summary.samples} live samples after a full GC (${summary.labeledSamples} labeled)`,
  );
  lines.push('');
  if (caps.sampleLabels) {
    lines.push(`Live heap by ${summary.key} (estimates from the sampling heap profiler), each with its top`);
    lines.push('allocation sites (innermost application frame > allocating builtin; share of the route):');
    lines.push('');
    lines.push(`  ${pad(summary.key, 16)}${lpad('live heap', 12)}${lpad('share', 9)}${lpad('objects', 10)}${lpad('external', 12)}`);
    for (const g of summary.groups) {
      const name = g.value === null ? '(unlabeled)' : g.value;
      lines.push(
        `  ${pad(name, 16)}${lpad(mb(g.bytes), 12)}${lpad(pct(g.share), 9)}` +
          `${lpad(Math.round(g.objects), 10)}${lpad(caps.externalBytes ? mb(g.externalBytes) : 'n/a', 12)}`,
      );
      for (const s of g.sites) {
        lines.push(`      ${lpad(mb(s.bytes), 10)}  ${lpad(pct(s.share), 7)}  ${s.name}`);
      }
    }
    lines.push(`  ${pad('total', 16)}${lpad(mb(summary.totalBytes), 12)}${lpad('100.0 %', 9)}${lpad(Math.round(summary.totalObjects), 10)}${lpad(mb(summary.externalTotal), 12)}`);
    if (!caps.externalBytes) {
      lines.push('');
      lines.push('External (Buffer) bytes per route are not available here:');
      for (const r of caps.reasons.filter((x) => x.startsWith('externalBytes'))) lines.push(`  - ${r}`);
    }
  } else {
    lines.push('Per-route heap needs the patched runtime (tools/patched-node/build.sh): on this runtime');
    lines.push('samples carry no labels, so the heap cannot be split by route. capabilities().reasons:');
    for (const r of caps.reasons) lines.push(`  - ${r}`);
    lines.push('');
    lines.push('What this runtime does show:');
    lines.push(`  live heap (estimated): ${mb(summary.totalBytes)} in ${Math.round(summary.totalObjects)} objects`);
    lines.push(`  external (ArrayBuffer/Buffer) bytes, one total: ${mb(summary.externalTotal)}`);
    lines.push('');
    lines.push('  top allocation sites:');
    for (const s of summary.topSites) lines.push(`    ${lpad(mb(s.bytes), 10)}  ${lpad(pct(s.share), 7)}  ${s.name}`);
    lines.push('');
    lines.push('  top files:');
    for (const f of summary.topFiles) lines.push(`    ${lpad(mb(f.bytes), 10)}  ${lpad(pct(f.share), 7)}  ${f.name}`);
  }
  return lines;
}

// Writes <outDir>/heap-labels.pb.gz (pprof) and <outDir>/heap-labels.heapprofile (DevTools JSON).
function writeOutputs(profile, outDir) {
  fs.mkdirSync(outDir, { recursive: true });
  const pprof = path.join(outDir, 'heap-labels.pb.gz');
  const heapprofile = path.join(outDir, 'heap-labels.heapprofile');
  fs.writeFileSync(pprof, profile.toPprof());
  fs.writeFileSync(heapprofile, JSON.stringify(profile.toHeapProfile()));
  return { pprof, heapprofile };
}

module.exports = { summarize, render, writeOutputs, forceGc, sampleBytes, sitesByNode };
