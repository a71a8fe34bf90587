'use strict';
// Number formatting and plain-text tables shared by the text report and the diff.

function formatBytes(n) {
  const sign = n < 0 ? '-' : '';
  let v = Math.abs(n);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${sign}${u === 0 ? Math.round(v) : v.toFixed(v >= 100 ? 0 : 1)} ${units[u]}`;
}

const formatCount = (n) => Math.round(n).toLocaleString('en-US');
const formatPercent = (fraction) => `${(fraction * 100).toFixed(1)}%`;
const signed = (text, n) => (n > 0 ? `+${text}` : text);
const formatDeltaBytes = (n) => signed(formatBytes(n), n);
const formatDeltaCount = (n) => signed(formatCount(n), n);
// Percent growth (already in percent); null = nothing before.
const formatGrowth = (p) => (p === null ? 'new' : signed(`${p.toFixed(1)}%`, p));

// rows: arrays of cells; the first column left-aligned, the others right-aligned.
function table(header, rows, indent = '') {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => String(r[i]).length)));
  const line = (r) =>
    indent +
    r
      .map((cell, i) => (i === 0 ? String(cell).padEnd(widths[i]) : String(cell).padStart(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

module.exports = { formatBytes, formatCount, formatPercent, formatDeltaBytes, formatDeltaCount, formatGrowth, table };
