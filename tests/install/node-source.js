'use strict';
// tools/patched-node/build.sh --node-source: which patch series a Node.js source selects, and which
// sources it refuses. Sources of lines other than the pinned one cannot be downloaded here, so the
// sources are synthetic: a tree (or a tarball of one) holding only the two headers the selection
// reads, src/node_version.h and deps/v8/include/v8-version.h. --print-selection stops before any
// build. The real pinned tarball is checked too when the shared toolchain holds it.
// Run by scripts/test.d/44-recipe-source.sh (not a *.test.js: it runs once, not per runtime).

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { root, recipeValue, recipeLines } = require('../helpers');

const recipe = path.join(root, 'tools', 'patched-node', 'build.sh');
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-node-source-'));
test.after(() => fs.rmSync(scratch, { recursive: true, force: true }));

const lines = recipeLines();

// A synthetic source: node-v<node>/ with the two headers, as a tree or a .tar.xz of it.
function source(node, v8, { tarball = false, name = `node-v${node}` } = {}) {
  const dir = fs.mkdtempSync(path.join(scratch, 'src-'));
  const top = path.join(dir, name);
  const [major, minor, patch] = node.split('.');
  const [v8Major, v8Minor, build, level] = v8.split('.');
  fs.mkdirSync(path.join(top, 'src'), { recursive: true });
  fs.mkdirSync(path.join(top, 'deps', 'v8', 'include'), { recursive: true });
  fs.writeFileSync(path.join(top, 'src', 'node_version.h'),
    `#ifndef SRC_NODE_VERSION_H_\n#define NODE_MAJOR_VERSION ${major}\n#define NODE_MINOR_VERSION ${minor}\n` +
    `#define NODE_PATCH_VERSION ${patch}\n#define NODE_VERSION_IS_RELEASE 1\n#endif\n`);
  fs.writeFileSync(path.join(top, 'deps', 'v8', 'include', 'v8-version.h'),
    `#define V8_MAJOR_VERSION ${v8Major}\n#define V8_MINOR_VERSION ${v8Minor}\n` +
    `#define V8_BUILD_NUMBER ${build}\n#define V8_PATCH_LEVEL ${level}\n`);
  if (!tarball) return top;
  const file = path.join(dir, `${name}.tar.xz`);
  const r = spawnSync('tar', ['-C', dir, '-cJf', file, name]);
  assert.equal(r.status, 0, String(r.stderr));
  fs.rmSync(top, { recursive: true });
  return file;
}

function select(...args) {
  const r = spawnSync('bash', [recipe, ...args, '--print-selection'], {
    encoding: 'utf8',
    env: { ...process.env, HEAP_LABELS_CACHE: path.join(scratch, 'cache') },
    timeout: 120_000,
  });
  const fields = Object.fromEntries(r.stdout.trim().split(/\s+/).filter(Boolean).map((kv) => kv.split('=')));
  return { status: r.status, stderr: r.stderr, fields };
}

// What a supported line's source must select: its series, or a refusal naming the missing series
// when this checkout does not hold it (the series of later lines land separately).
function assertSelectsLine(result, node, line) {
  const series = `v8-patches/${line.v8}`;
  if (fs.existsSync(path.join(root, series))) {
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.fields.node, node);
    assert.equal(result.fields.v8_series, series);
    const nodeSeries = `node-patches/${line.node}`;
    const hasNodeSeries = fs.existsSync(path.join(root, 'tools', 'patched-node', nodeSeries));
    assert.equal(result.fields.node_series, hasNodeSeries ? nodeSeries : 'none');
  } else {
    assert.notEqual(result.status, 0);
    assert.match(result.stderr, new RegExp(`supported line, but this checkout has no series ${series}/`));
  }
}

for (const line of lines) {
  for (const tarball of [false, true]) {
    test(`a Node.js ${line.node} ${tarball ? 'tarball' : 'tree'} with V8 ${line.v8} selects that line's series`, () => {
      const node = `${line.node}.3.1`;
      const src = source(node, `${line.v8}.100.7`, { tarball });
      assertSelectsLine(select('--node-source', src), node, line);
    });
  }
}

test('the source identity is a content hash: two trees of the same content select the same key input', () => {
  const line = lines[0];
  const a = select('--node-source', source(`${line.node}.1.0`, `${line.v8}.1.1`));
  const b = select('--node-source', source(`${line.node}.1.0`, `${line.v8}.1.1`));
  const c = select('--node-source', source(`${line.node}.1.1`, `${line.v8}.1.1`));
  assert.equal(a.status, 0, a.stderr);
  assert.match(a.fields.source_sha256, /^[0-9a-f]{64}$/);
  assert.equal(a.fields.source_sha256, b.fields.source_sha256);
  assert.notEqual(a.fields.source_sha256, c.fields.source_sha256);
});

test('a line the recipe does not list is refused, naming the supported lines', () => {
  const known = new Set(lines.map((l) => Number(l.node)));
  let major = Math.max(...known) + 1;
  while (known.has(major)) major += 1;
  const r = select('--node-source', source(`${major}.0.0`, '99.1.2.3', { tarball: true }));
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, new RegExp(`Node\\.js ${major}\\.0\\.0 \\(V8 99\\.1\\.2\\.3\\) is not a line this recipe supports`));
  for (const l of lines) assert.ok(r.stderr.includes(`${l.node} (V8 ${l.v8})`), r.stderr);
  assert.deepEqual(r.fields, {});
});

test("a supported line with another V8 than the line's series is refused", () => {
  const line = lines[0];
  const [maj, min] = line.v8.split('.').map(Number);
  const other = `${maj}.${min + 1}`;
  const r = select('--node-source', source(`${line.node}.9.9`, `${other}.5.6`));
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, new RegExp(`carries V8 ${other.replace('.', '\\.')}\\.5\\.6, but the recipe's series for the Node\\.js ${line.node} line is for V8 ${line.v8.replace('.', '\\.')}`));
  assert.deepEqual(r.fields, {});
});

test('a directory or file that is not a Node.js source is refused', () => {
  const empty = fs.mkdtempSync(path.join(scratch, 'empty-'));
  let r = select('--node-source', empty);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /is not a Node\.js source tree/);
  const junk = path.join(scratch, 'junk.tar.xz');
  fs.writeFileSync(junk, 'not a tarball');
  r = select('--node-source', junk);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /neither a directory nor a tarball/);
  r = select('--node-source', path.join(scratch, 'missing.tar.xz'));
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /no such file or directory/);
  const other = path.join(scratch, 'other.tar.xz');
  spawnSync('tar', ['-C', scratch, '-cJf', other, path.basename(empty)]);
  r = select('--node-source', other);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /is not a Node\.js source tarball/);
});

// The pinned tarball given as --node-source selects exactly what the default build does (same
// series, same source hash, so the same cached runtime).
const pinnedName = recipeValue('NODE_TARBALL');
const pinned = [process.env.HEAP_LABELS_TOOLCHAIN, path.join(root, '..', 'shared', 'toolchain')]
  .filter(Boolean).map((d) => path.join(d, pinnedName)).find((f) => fs.existsSync(f));
test('the pinned Node.js source as --node-source selects what the default build does', {
  skip: !pinned && `${pinnedName} is not in the shared toolchain folder`,
}, () => {
  const byDefault = select();
  const given = select('--node-source', pinned);
  assert.equal(byDefault.status, 0, byDefault.stderr);
  assert.equal(given.status, 0, given.stderr);
  assert.deepEqual(given.fields, byDefault.fields);
  assert.equal(given.fields.source_sha256, recipeValue('NODE_TARBALL_SHA256'));
});
