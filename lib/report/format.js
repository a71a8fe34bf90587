'use strict';
// Number formatting, text escaping and plain-text tables of the text report and the diff (the label
// text and byte sizes come from lib/format.js, which the agent's growth watch writes with too).

const { labelsText, formatBytes } = require('../format');

// Characters that must not reach a terminal or a table as they are: C0 and C1 controls and DEL
// (newlines forge rows; ESC and CSI start ANSI/OSC sequences), line and paragraph separators, and
// the bidirectional marks, overrides and isolates (text that reads differently from what it is).
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\\\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const NAMED = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

// Text from a profile (function and file names) as printable text: the unsafe characters as \n,
// \t, \r, \xNN or \u{NNNN}, and a backslash as \\, so the escaped text still tells every input apart.
function printable(text) {
  return String(text).replace(UNSAFE, (c) => {
    if (NAMED[c] !== undefined) return NAMED[c];
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
  });
}

const formatCount = (n) => Math.round(n).toLocaleString('en-US');
const formatPercent = (fraction) => `${(fraction * 100).toFixed(1)}%`;
const signed = (text, n) => (n > 0 ? `+${text}` : text);
const formatDeltaBytes = (n) => signed(formatBytes(n), n);
const formatDeltaCount = (n) => signed(formatCount(n), n);
// Percent growth (already in percent); null = nothing before.
const formatGrowth = (p) => (p === null ? 'new' : signed(`${p.toFixed(1)}%`, p));

// rows: arrays of cells; the first column left-aligned, the others right-aligned. Any number of
// rows (no argument spreading).
function table(header, rows, indent = '') {
  const widths = header.map((h) => String(h).length);
  for (const r of rows) {
    for (let i = 0; i < widths.length; i++) widths[i] = Math.max(widths[i], String(r[i]).length);
  }
  const line = (r) =>
    indent +
    r
      .map((cell, i) => (i === 0 ? String(cell).padEnd(widths[i]) : String(cell).padStart(widths[i])))
      .join('  ')
      .trimEnd();
  const out = [line(header)];
  for (const r of rows) out.push(line(r));
  return out.join('\n');
}

module.exports = { labelsText, printable, formatBytes, formatCount, formatPercent, formatDeltaBytes, formatDeltaCount, formatGrowth, table };
