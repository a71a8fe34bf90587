'use strict';
// The text of a label set and of a byte size, wherever heap-labels writes one for people: the
// agent's growth watch (lib/growth.js) and the report (lib/report/).

// What JSON.stringify leaves as it is of the characters unsafe on a terminal (lib/report/format.js's
// UNSAFE; JSON.stringify escapes C0, '"' and '\\').
const UNSAFE_IN_JSON = /[\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
// A key written as it is: none of the unsafe characters, and nothing that would make the text
// ambiguous (quote, backslash, '=', ',', space).
// eslint-disable-next-line no-control-regex -- matching control characters is the point
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

module.exports = { labelsText, formatBytes };
