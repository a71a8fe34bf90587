'use strict';
// The demo (the README's main command runs it) end to end on the runtime under test: a bounded
// load against the multi-route server, the per-route table, and both export files.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { root, libPath, asyncContextFrameFlags } = require('./helpers');

const acf = asyncContextFrameFlags();

test('demo: per-route table on the patched runtime, a plain explanation on stock, files written', () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-demo-'));
  const r = spawnSync(process.execPath, [...acf, path.join(root, 'demo', 'run.js'), '--requests', '3000', '--out', out], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
    timeout: 120_000,
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /errors 0/);
  const sampleLabels = spawnSync(process.execPath, [...acf, '-p', `require(${JSON.stringify(libPath)}).capabilities().sampleLabels`], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
  }).stdout.trim() === 'true';
  if (sampleLabels) {
    // The search route builds a cache: it must come first in the table with most of the heap.
    const rows = [...r.stdout.matchAll(/^ {2}(\/\S+)\s+[\d.]+ [KMG]?i?B\s+([\d.]+) %/gm)];
    assert.ok(rows.length >= 2, r.stdout);
    assert.equal(rows[0][1], '/api/search', r.stdout);
    assert.ok(Number(rows[0][2]) > 50, `search share ${rows[0][2]} %`);
  } else {
    assert.match(r.stdout, /Per-route heap needs the patched runtime/);
  }
  for (const file of ['heap-labels.pb.gz', 'heap-labels.heapprofile']) {
    assert.ok(fs.statSync(path.join(out, file)).size > 100, `${file} written`);
  }
  JSON.parse(fs.readFileSync(path.join(out, 'heap-labels.heapprofile'), 'utf8'));
});
