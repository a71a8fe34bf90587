'use strict';
// The Node.js lines the labeled-runtime recipe supports, for messages. The one list is NODE_LINES of
// tools/patched-node/versions.env (the recipe picks a line's V8 patch series from it); the package
// carries that file, so the lines named here are always the recipe's.

const fs = require('node:fs');
const path = require('node:path');

const VERSIONS_ENV = path.join(__dirname, '..', 'tools', 'patched-node', 'versions.env');

let cached;

// [{ node: '22', v8: '12.4' }, ...] in the list's order; [] when the file cannot be read (a message
// then names no line rather than failing the caller).
function supportedLines() {
  if (cached !== undefined) return cached;
  cached = [];
  let text;
  try {
    text = fs.readFileSync(VERSIONS_ENV, 'utf8');
  } catch {
    return cached;
  }
  const match = /^NODE_LINES="([^"]*)"/m.exec(text);
  if (!match) return cached;
  for (const entry of match[1].trim().split(/\s+/)) {
    const [node, v8] = entry.split(':');
    if (/^\d+$/.test(node) && /^\d+\.\d+$/.test(v8 ?? '')) cached.push({ node, v8 });
  }
  return cached;
}

// 'Node.js 22 (V8 12.4), 24 (V8 13.6) and 26 (V8 14.6)'.
function describeLines(lines = supportedLines()) {
  if (lines.length === 0) return 'the Node.js lines of tools/patched-node/versions.env';
  const parts = lines.map((l) => `${l.node} (V8 ${l.v8})`);
  const list = parts.length === 1 ? parts[0] : `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`;
  return `Node.js ${list}`;
}

module.exports = { supportedLines, describeLines };
