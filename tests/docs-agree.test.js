'use strict';
// What is written in more than one place must agree: each entry's exports against its .d.ts (and
// the main entry's ESM twin), and the agent's option table (lib/config.js) against AgentOptions in
// lib/index.d.ts and the table of docs/operations.md. A name added to one place and not the others
// fails here.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const read = (file) => fs.readFileSync(path.join(root, file), 'utf8');
const sorted = (names) => [...new Set(names)].sort();

// The value names a declaration file exports (functions, consts, classes, re-exported values),
// without types and without `default`.
function declaredValues(file) {
  const text = read(file);
  const names = [...text.matchAll(/^export (?:declare )?(?:function|const|let|class) (\w+)/gm)].map((m) => m[1]);
  for (const m of text.matchAll(/^export (?!type )\{([^}]*)\}/gm)) {
    for (const part of m[1].split(',')) {
      const name = part.trim();
      if (name && !name.startsWith('type ')) names.push(name.split(/\s+as\s+/).pop());
    }
  }
  return sorted(names);
}

const pkg = JSON.parse(read('package.json'));
const entries = Object.entries(pkg.exports).filter(([, target]) => typeof target === 'object' && target.types);

for (const [subpath, target] of entries) {
  if (subpath === './register') continue; // a preload: exports nothing (lib/register.d.ts says so)
  test(`heap-labels${subpath.slice(1)}: the module exports what ${target.types} declares`, () => {
    const file = target.require ?? target.default;
    const exported = sorted(Object.keys(require(path.join(root, file))));
    assert.deepEqual(exported, declaredValues(target.types.slice(2)));
  });
}

test('heap-labels: the ESM entry exports what the CommonJS entry does', async () => {
  const esm = await import(path.join(root, pkg.exports['.'].import));
  const named = Object.keys(esm).filter((name) => name !== 'default');
  assert.deepEqual(sorted(named), sorted(Object.keys(require(root))));
});

test('the agent\'s options: lib/config.js, AgentOptions in lib/index.d.ts and docs/operations.md agree', () => {
  const { describeOptions } = require('../lib/config');
  const table = describeOptions();
  const options = sorted(table.map((o) => o.option));

  const dts = read('lib/index.d.ts');
  const body = dts.slice(dts.indexOf('export interface AgentOptions {'), dts.indexOf('export interface ResolvedAgentOptions'));
  assert.deepEqual(sorted([...body.matchAll(/^ {2}(\w+)\?:/gm)].map((m) => m[1])), options, 'AgentOptions members');
  for (const { option, env } of table) {
    const member = body.slice(0, body.indexOf(`  ${option}?:`));
    const doc = member.slice(member.lastIndexOf('/**'));
    assert.ok(doc.includes(env), `AgentOptions.${option}'s comment names ${env}`);
  }

  const rows = [...read('docs/operations.md').matchAll(/^\| `(HEAP_LABELS_\w+)` \| `(\w+)` \|/gm)];
  assert.deepEqual(
    sorted(rows.map((m) => `${m[2]} ${m[1]}`)),
    sorted(table.map((o) => `${o.option} ${o.env}`)),
    'the table of docs/operations.md',
  );
});
