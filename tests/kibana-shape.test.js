'use strict';
// Code written for the Node.js heap-profile-labels proposal runs unchanged: a TypeScript module of
// the shape of Kibana's task manager (tests/fixtures/kibana/), compiled with the TypeScript the
// suite installs (scripts/typescript.sh), labels its task runs by task type through node's own
// `v8`. On the patched runtime it sees its `task.type` groups; on stock runtimes it runs without
// error and does nothing (their node:v8 has no withHeapProfileLabels).

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { runFixture } = require('./helpers');

const root = path.resolve(__dirname, '..');
const runtimeHasApi = typeof require('node:v8').withHeapProfileLabels === 'function';
const TASKS = ['alerting:siem.rule', 'actions:.email', 'reporting:csv'];

test('a Kibana-shaped TypeScript module sees its task.type groups (patched) or runs unchanged (stock)', (t) => {
  const tsc = spawnSync('bash', [path.join(root, 'scripts', 'typescript.sh')], { encoding: 'utf8' });
  assert.equal(tsc.status, 0, tsc.stderr);
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'hl-kibana-'));
  t.after(() => fs.rmSync(out, { recursive: true, force: true }));
  // @types/node from the TypeScript install, as for the .d.ts checks.
  const typeRoots = path.join(path.dirname(path.dirname(tsc.stdout.trim())), '@types');
  const project = path.join(__dirname, 'fixtures', 'kibana', 'tsconfig.json');
  const compiled = spawnSync(tsc.stdout.trim(), ['-p', project, '--outDir', out, '--typeRoots', typeRoots], {
    encoding: 'utf8',
  });
  assert.equal(compiled.status, 0, compiled.stdout + compiled.stderr);
  const module = path.join(out, 'experimental_heap_profile_labels.js');
  assert.match(fs.readFileSync(module, 'utf8'), /require\("v8"\)/, 'the compiled module imports node:v8 itself');

  const r = runFixture('kibana-driver.js', { args: [module], env: { KBN_HEAP_PROFILE_LABELS: '1' } });
  assert.equal(r.status, 0, r.stderr);
  const report = r.json;
  assert.equal(report.total, 3 * TASKS.length * 20_000);
  assert.equal(report.supported, runtimeHasApi);
  assert.equal(report.started, runtimeHasApi);
  if (!runtimeHasApi) return;
  assert.deepEqual(report.groups.map((g) => g.type).sort(), [...TASKS].sort());
  for (const g of report.groups) assert.deepEqual(g.keys, ['task.type']);
  if (report.capabilities.sampleLabels) {
    for (const g of report.groups) assert.ok(g.samples > 0, `${g.type}: ${JSON.stringify(report.groups)}`);
  }
});
