'use strict';
// The terminal view of retainers per label (`handle.retainers(key)`, written as JSON and read back
// by `heap-labels retainers`): per group, its tree of retainers as indented lines under the share
// and bytes of each step. Pure JS, no addon. Every name from the snapshot (classes, property and
// variable names) goes through printable(): a property name can come from request data.

const fs = require('node:fs');
const { ReportError } = require('./model');
const f = require('./format');

// Largest retainers file read: the native side caps the groups (50) and each tree, so a real one
// is far smaller.
const MAX_FILE_BYTES = 64 * 1024 * 1024;

// The JSON of `handle.retainers()` from `file`, its shape checked (files are untrusted).
function readRetainersFile(file) {
  let text;
  try {
    const size = fs.statSync(file).size;
    if (size > MAX_FILE_BYTES) throw new ReportError(`${file}: ${f.formatBytes(size)} is more than a retainers file holds (${f.formatBytes(MAX_FILE_BYTES)})`);
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if (e instanceof ReportError) throw e;
    throw new ReportError(`${file}: cannot read: ${e.code ?? e.message}`);
  }
  let result;
  try {
    result = JSON.parse(text);
  } catch {
    throw new ReportError(`${file}: not JSON (expected what handle.retainers() returns)`);
  }
  checkShape(result, file);
  return result;
}

const isNumber = (v) => typeof v === 'number' && Number.isFinite(v);

function checkShape(result, file) {
  const bad = (what) => new ReportError(`${file}: not a retainers result (${what}; expected what handle.retainers() returns)`);
  if (result === null || typeof result !== 'object' || !Array.isArray(result.groups)) throw bad('no groups');
  if (result.snapshot === null || typeof result.snapshot !== 'object') throw bad('no snapshot');
  // Iteratively: a hostile file can nest deeper than the stack.
  const stack = [];
  for (const g of result.groups) {
    if (g === null || typeof g !== 'object' || !isNumber(g.bytes) || !Array.isArray(g.paths)) throw bad('a group without bytes or paths');
    if (g.labels === null || typeof g.labels !== 'object' || Object.values(g.labels).some((v) => typeof v !== 'string')) throw bad('a group without labels');
    for (const p of g.paths) stack.push([p, 1]);
  }
  while (stack.length > 0) {
    const [p, depth] = stack.pop();
    if (depth > 64) throw bad('paths nested deeper than 64');
    if (p === null || typeof p !== 'object' || typeof p.text !== 'string' || !isNumber(p.bytes) || !isNumber(p.share)) throw bad('a path step without text, bytes or share');
    if (p.children !== undefined && !Array.isArray(p.children)) throw bad('a path step whose children are not a list');
    for (const c of p.children ?? []) stack.push([c, depth + 1]);
  }
}

const ms = (n) => (n >= 1000 ? `${(n / 1000).toFixed(1)} s` : `${Math.round(n)} ms`);

// The first lines of a result's view (text and HTML): what was grouped, what the snapshot cost,
// how to read the trees.
function header(result) {
  const s = result.snapshot;
  const by = result.key === undefined ? 'label set' : printable(result.key);
  return [
    `Retainers per ${by}: heap snapshot of ${f.formatCount(s.nodes ?? 0)} nodes, app paused ${ms(s.pauseMs ?? 0)} ` +
      `(snapshot ${ms(s.snapshotMs ?? 0)}, walk ${ms(s.walkMs ?? 0)}), sampling period ${f.formatCount(result.sampleInterval ?? 0)} bytes`,
    'Each tree: the sampled objects by class, then what retains them, nearest first; share of the group\'s bytes.',
  ];
}

const printable = (text) => f.printable(text);

// The tree lines of one group, `maxDepth` retainer steps deep at most.
function treeLines(paths, maxDepth) {
  const lines = [];
  const stack = paths.map((p) => [p, 0]).reverse();
  while (stack.length > 0) {
    const [p, depth] = stack.pop();
    const more = p.deeper || (depth >= maxDepth && (p.children ?? []).length > 0) ? ' \u2026' : '';
    lines.push([f.formatPercent(p.share), f.formatBytes(p.bytes), `${'  '.repeat(depth)}${printable(p.text)}${more}`]);
    if (depth < maxDepth) {
      for (const c of [...(p.children ?? [])].reverse()) stack.push([c, depth + 1]);
    }
  }
  return lines;
}

// The figures right-aligned, the tree (last) as it is indented.
function treeTable(rows) {
  const head = ['share', 'bytes', 'retained by'];
  const widths = [0, 1].map((i) => rows.reduce((w, r) => Math.max(w, r[i].length), head[i].length));
  const line = (r) => `  ${r[0].padStart(widths[0])}  ${r[1].padStart(widths[1])}  ${r[2]}`.trimEnd();
  return [line(head), ...rows.map(line)].join('\n');
}

// Text of one result: a header, then per group its labels, figures, tree and allocation sites.
// `depth`: retainer steps shown below each object class (default: all the result has).
function retainersText(result, { depth = Infinity } = {}) {
  const out = header(result);
  for (const g of result.groups) {
    out.push('', `${printable(f.labelsText(g.labels))}: ${f.formatBytes(g.bytes)} in ${f.formatCount(g.samples)} sample${g.samples === 1 ? '' : 's'}`);
    const rows = treeLines(g.paths, depth);
    if (g.unmatchedBytes > 0) {
      rows.push([f.formatPercent(g.bytes > 0 ? g.unmatchedBytes / g.bytes : 0), f.formatBytes(g.unmatchedBytes), '(not in the snapshot: dead, or allocated after it)']);
    }
    out.push(treeTable(rows));
    if ((g.sites ?? []).length > 0) {
      const sites = g.sites.map((s) => [`${printable(s.functionName || '(anonymous)')} ${printable(s.url)}:${s.lineNumber}`, f.formatBytes(s.bytes), f.formatPercent(s.share)]);
      out.push(f.table(['allocated at', 'bytes', 'share'], sites, '  '));
    }
  }
  const more = result.moreGroups;
  if (more && more.groups > 0) {
    out.push('', `${f.formatCount(more.groups)} more group${more.groups === 1 ? '' : 's'} not shown (${f.formatBytes(more.bytes)} in ${f.formatCount(more.samples)} samples)`);
  }
  return `${out.join('\n')}\n`;
}

module.exports = { retainersText, readRetainersFile, retainersHeader: header };
