'use strict';
// The terminal views: the per-label report of one profile and the growth table of a diff.

const { summarizeModel, DEFAULT_TOP } = require('./summary');
const f = require('./format');

function when(readNanos) {
  return readNanos > 0 ? new Date(readNanos / 1e6).toISOString() : 'time unknown';
}

// One profile (a model, summarized here, or a summary from summary.js): the per-label table of the
// `groups` largest groups (default 50; Infinity: all) and a line for the rest, then the top `top`
// sites (leaf function file:line) of each shown group.
function reportText(profile, { key, top = DEFAULT_TOP, groups } = {}) {
  const summary = Array.isArray(profile.samples) ? summarizeModel(profile, { key, top, groups }) : profile;
  const { total } = summary;
  const alloc = summary.hasAllocations;
  const out = [];
  out.push(`${summary.source}: heap profile taken ${when(summary.readNanos)}, sampling period ${f.formatCount(summary.period)} bytes`);
  out.push(key === undefined ? 'Grouped by label set' : `Grouped by ${key}`);
  if (summary.groupCount === 1 && summary.groups.length === 1 && Object.keys(summary.groups[0].labels).length === 0) {
    out.push('No sample carries labels (a stock runtime, or no labels were set): one unlabeled group.');
  }
  out.push('');
  const header = ['label', 'in-use bytes', 'share', 'in-use objects'];
  if (alloc) header.push('alloc bytes', 'alloc share', 'alloc objects');
  const row = (g, share, allocShare) => {
    const r = [g.name, f.formatBytes(g.inuseBytes), f.formatPercent(share), f.formatCount(g.inuseObjects)];
    if (alloc) r.push(f.formatBytes(g.allocBytes), f.formatPercent(allocShare), f.formatCount(g.allocObjects));
    return r;
  };
  const rows = summary.groups.map((g) => row(g, g.share, g.allocShare));
  rows.push(row({ name: 'total', ...total }, total.inuseBytes > 0 ? 1 : 0, total.allocBytes > 0 ? 1 : 0));
  out.push(f.table(header, rows));
  const { rest } = summary;
  if (rest) {
    const allocPart = alloc ? `, ${f.formatPercent(rest.allocShare)} of allocated bytes` : '';
    out.push(
      `${f.formatCount(rest.count)} more group${rest.count === 1 ? '' : 's'} not shown (${f.formatBytes(rest.inuseBytes)}, ${f.formatPercent(rest.share)} of in-use bytes${allocPart}): --all shows every group`,
    );
  }
  if (top > 0) {
    const which = rest ? `per label of the ${f.formatCount(summary.groups.length)} shown` : 'per label';
    out.push('', `Top ${top} sites ${which} (in-use bytes; share of the label's)`);
    for (const g of summary.groups) {
      out.push('', g.name);
      const siteHeader = ['site', 'in-use bytes', 'share', 'in-use objects'];
      if (alloc) siteHeader.push('alloc bytes', 'alloc objects');
      const siteRows = g.sites.slice(0, top).map((s) => {
        const r = [s.name, f.formatBytes(s.inuseBytes), f.formatPercent(g.inuseBytes > 0 ? s.inuseBytes / g.inuseBytes : 0), f.formatCount(s.inuseObjects)];
        if (alloc) r.push(f.formatBytes(s.allocBytes), f.formatCount(s.allocObjects));
        return r;
      });
      out.push(f.table(siteHeader, siteRows, '  '));
    }
  }
  return `${out.join('\n')}\n`;
}

// A diff (diffModels/diffProfiles result): growth per label, then the top growing sites of each.
function diffText(diff, { key, top = DEFAULT_TOP } = {}) {
  const alloc = diff.hasAllocations;
  const out = [];
  out.push(`base:    ${diff.base.source} (${when(diff.base.readNanos)})`);
  out.push(`current: ${diff.current.source} (${when(diff.current.readNanos)})`);
  out.push(key === undefined ? 'Grouped by label set' : `Grouped by ${key}`, '');
  const header = ['label', 'in-use bytes', 'delta', 'growth', 'objects delta'];
  if (alloc) header.push('alloc bytes delta', 'alloc objects delta');
  const row = (g) => {
    const r = [g.name, f.formatBytes(g.current.inuseBytes), f.formatDeltaBytes(g.delta.inuseBytes), f.formatGrowth(g.percent), f.formatDeltaCount(g.delta.inuseObjects)];
    if (alloc) r.push(f.formatDeltaBytes(g.delta.allocBytes), f.formatDeltaCount(g.delta.allocObjects));
    return r;
  };
  out.push(f.table(header, [...diff.groups.map(row), row(diff.total)]));
  if (top > 0) {
    out.push('', `Top ${top} growing sites per label (in-use bytes)`);
    for (const g of diff.groups) {
      out.push('', g.name);
      const rows = g.sites.slice(0, top).map((s) => [s.name, f.formatBytes(s.current.inuseBytes), f.formatDeltaBytes(s.delta.inuseBytes), f.formatGrowth(s.percent), f.formatDeltaCount(s.delta.inuseObjects)]);
      out.push(f.table(['site', 'in-use bytes', 'delta', 'growth', 'objects delta'], rows, '  '));
    }
  }
  return `${out.join('\n')}\n`;
}

module.exports = { reportText, diffText };
