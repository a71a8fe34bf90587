'use strict';
// The supported Node.js lines have one list, NODE_LINES of tools/patched-node/versions.env: the
// recipe, lib/supported-lines.js (the package's messages) and scripts/runtimes.sh (the stock releases
// the tests run, one per line) read it; package.json's engines and the docs cannot, so this file
// checks that they say the same.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { root, recipeLines, tempDir } = require('./helpers');
const { supportedLines, describeLines } = require('../lib/supported-lines');

const lines = recipeLines();
const majors = lines.map((l) => l.node);
const read = (file) => fs.readFileSync(path.join(root, file), 'utf8');
const docs = ['README.md', ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

// scripts/runtimes.sh <args> of the checkout at `repo`: { status, stdout, stderr }.
function runtimes(args, repo = root) {
  return spawnSync('bash', [path.join(repo, 'scripts', 'runtimes.sh'), ...args], { encoding: 'utf8', timeout: 30_000 });
}
const releases = runtimes(['list']).stdout.trim().split('\n');
const releaseOf = (major) => releases.find((v) => v.split('.')[0] === major);

test("messages name the recipe's supported lines, read from its one list", () => {
  assert.ok(lines.length >= 1);
  assert.deepEqual(supportedLines(), lines);
  const described = describeLines();
  for (const { node, v8 } of lines) assert.ok(described.includes(`${node} (V8 ${v8})`), described);
});

test('scripts/runtimes.sh tests one stock release of every supported line, the primary first', () => {
  assert.deepEqual(releases.map((v) => v.split('.')[0]).sort(), [...majors].sort());
  assert.equal(releases[0], runtimes(['primary']).stdout.trim());
});

test('scripts/runtimes.sh refuses a line it pins no release of, and a release of no supported line', () => {
  const env = read('tools/patched-node/versions.env');
  const entries = env.match(/^NODE_LINES="([^"]*)"$/m)[1].split(' ');
  // A copy of the script beside a versions.env of other lines.
  const withLines = (nodeLines) => {
    const repo = tempDir('runtimes');
    fs.mkdirSync(path.join(repo, 'scripts'));
    fs.mkdirSync(path.join(repo, 'tools', 'patched-node'), { recursive: true });
    fs.copyFileSync(path.join(root, 'scripts', 'runtimes.sh'), path.join(repo, 'scripts', 'runtimes.sh'));
    fs.writeFileSync(path.join(repo, 'tools', 'patched-node', 'versions.env'), env.replace(/^NODE_LINES=.*$/m, `NODE_LINES="${nodeLines}"`));
    return runtimes(['list'], repo);
  };
  assert.deepEqual(withLines(entries.join(' ')).stdout.trim().split('\n'), releases, 'the copy reads the same list');
  const added = withLines([...entries, '99:99.1'].join(' '));
  assert.equal(added.status, 1);
  assert.match(added.stderr, /Node\.js 99 is a supported line .* but scripts\/runtimes\.sh pins no release of it/);
  const last = entries.at(-1).split(':')[0];
  const dropped = withLines(entries.slice(0, -1).join(' '));
  assert.equal(dropped.status, 1);
  assert.match(dropped.stderr, new RegExp(`Node\\.js ${releaseOf(last).replaceAll('.', '\\.')} is of no supported line`));
});

test("package.json's engines admit exactly the supported lines (and package-lock.json says the same)", () => {
  const engines = majors.map((m) => `${m}.x`).join(' || ');
  assert.equal(JSON.parse(read('package.json')).engines.node, engines);
  assert.equal(JSON.parse(read('package-lock.json')).packages[''].engines.node, engines);
});

test('the docs name the supported lines: every list of Node.js lines, the tables of lines and releases', () => {
  const problems = [];
  for (const file of docs) {
    const text = read(file);
    // "Node.js 22, 24 and 26", "stock 24 or 26": only supported lines; a list of three or more is
    // the whole list.
    for (const m of text.matchAll(/(?:Node\.js|stock) (\d+(?:, \d+)*,? (?:and|or) \d+)\b/g)) {
      const named = m[1].split(/,? (?:and|or) |, /);
      const unknown = named.filter((n) => !majors.includes(n));
      if (unknown.length) problems.push(`${file}: "${m[0]}" names ${unknown.join(', ')}, not a supported line`);
      else if (named.length >= 3 && named.join() !== majors.join()) problems.push(`${file}: "${m[0]}" is not the list ${majors.join(', ')}`);
    }
    // Tables with a row per line, its V8 or its release ("| 22 | 12.4 | ...", "| 22 | 22.22.2 ...").
    for (const table of text.split(/\n(?!\|)/)) {
      const rows = [...table.matchAll(/^\| (\d+) \| (\d+\.\d+(?:\.\d+)?)\b/gm)];
      if (rows.length === 0) continue;
      const named = rows.map((r) => r[1]);
      if (named.join() !== majors.join()) problems.push(`${file}: a table has rows for ${named.join(', ')}, not ${majors.join(', ')}`);
      for (const [row, node, version] of rows) {
        const want = version.split('.').length === 2 ? lines.find((l) => l.node === node)?.v8 : releaseOf(node);
        if (want !== undefined && version !== want) problems.push(`${file}: "${row}" (want ${want})`);
      }
    }
    // The recipe's refusal message as the docs quote it.
    for (const m of text.matchAll(/supported: Node\.js\s+(.*?) \(NODE_LINES/gs)) {
      const quoted = m[1].replace(/\s+/g, ' ');
      const recipe = lines.map((l) => `${l.node} (V8 ${l.v8})`).join(', ');
      if (quoted !== recipe) problems.push(`${file}: quotes "supported: Node.js ${quoted}", the recipe says ${recipe}`);
    }
  }
  // The tables of runtimes (rows "| Node.js ...") name the release tested of every line, and no other.
  for (const file of ['README.md', 'docs/building-the-runtime.md']) {
    const named = new Set(read(file).split('\n').filter((l) => l.startsWith('| Node.js ')).flatMap((l) => l.match(/\b\d+\.\d+\.\d+\b/g) ?? []));
    if ([...named].sort().join() !== [...releases].sort().join()) problems.push(`${file}: the runtimes table names ${[...named].join(', ')}, not ${releases.join(', ')}`);
  }
  assert.deepEqual(problems, []);
});

test('scripts/build.js refuses the headers of a line not in the list, naming the supported lines', () => {
  const supported = new Set(majors.map(Number));
  const oldest = Math.min(...supported);
  const newest = Math.max(...supported);
  // An older line, every line between the supported ones (the odd ones), and the next one.
  const refused = [];
  for (let major = oldest - 2; major <= newest + 1; major++) if (!supported.has(major)) refused.push(major);
  assert.ok(refused.length >= 3, refused.join());
  for (const major of refused) {
    const include = tempDir(`node${major}-include`);
    fs.writeFileSync(path.join(include, 'v8.h'), '');
    fs.writeFileSync(path.join(include, 'node_version.h'), `#define NODE_MAJOR_VERSION ${major}\n#define NODE_MODULE_VERSION ${major + 100}\n`);
    const out = spawnSync(process.execPath, [path.join(root, 'scripts', 'build.js')], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, HEAP_LABELS_NODE_INCLUDE: include, CARGO_TARGET_DIR: tempDir('no-build') },
    });
    assert.equal(out.status, 1, `Node.js ${major}: ${out.stderr}`);
    assert.match(out.stderr, new RegExp(`are of Node\\.js ${major}, not a supported line: heap-labels supports ${describeLines().replace(/[()]/g, '\\$&')}`));
  }
});
