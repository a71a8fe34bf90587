'use strict';
// Number and label formatting and plain-text tables: the text report, the diff and the agent's
// growth watch write with these.

// The one text of a label set, as the dump's summary writes it: `key="value", other="x"`, keys in
// JavaScript's string order (a set's order), values as JSON strings; `(unlabeled)` for no labels.
// core/src/summary.rs's labels_text owns the format; tests/fixtures/label-text.json holds both to
// the same cases.
function labelsText(labels) {
  const keys = Object.keys(labels).sort();
  if (keys.length === 0) return '(unlabeled)';
  return keys.map((k) => `${k}=${JSON.stringify(labels[k])}`).join(', ');
}

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

module.exports = { labelsText, formatBytes, formatCount, formatPercent, formatDeltaBytes, formatDeltaCount, formatGrowth, table };
