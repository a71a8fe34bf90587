'use strict';
// Number and label formatting, text escaping and plain-text tables: the text report, the diff and
// the agent's growth watch write with these.

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

// What JSON.stringify leaves as it is of the unsafe characters (it escapes C0, '"' and '\\').
const UNSAFE_IN_JSON = /[\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
// A key written as it is: none of the unsafe characters, and nothing that would make the text
// ambiguous (quote, backslash, '=', ',', space).
// eslint-disable-next-line no-control-regex -- as UNSAFE
const PLAIN_KEY = /^[^"\\=, \u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]+$/;

// `text` as a JSON string with every unsafe character escaped (\uXXXX): still a JSON string of the
// same text.
function jsonText(text) {
  return JSON.stringify(text).replace(UNSAFE_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

// The one text of a label set, as the dump's summary writes it: `key="value", other="x"`, keys in
// JavaScript's string order (a set's order), values as JSON strings with every unsafe character
// escaped, keys as they are unless they hold an unsafe or ambiguous character (then as values
// are); `(unlabeled)` for no labels. No control character reaches a terminal, and two different
// sets never share a text. core/src/summary.rs's labels_text owns the format;
// tests/fixtures/label-text.json holds both to the same cases.
function labelsText(labels) {
  const keys = Object.keys(labels).sort();
  if (keys.length === 0) return '(unlabeled)';
  return keys.map((k) => `${PLAIN_KEY.test(k) ? k : jsonText(k)}=${jsonText(labels[k])}`).join(', ');
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
