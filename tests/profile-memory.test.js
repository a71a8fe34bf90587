'use strict';
// Profile reads are visible to the GC: each read tells V8 what its native copy costs (so a quiet
// process collects old reads instead of growing), and a read can be disposed eagerly.
// RSS bounds, not timings: a read of this profile holds ~1-2 MiB natively, 400 reads ~0.5 GiB.

const test = require('node:test');
const assert = require('node:assert/strict');
const { runFixture } = require('./helpers');

const READS = 400;

test('a quiet process reading its profile every 2 ms keeps its RSS bounded', () => {
  const run = runFixture('profile-reads.js', { args: [String(READS)] });
  assert.equal(run.status, 0, run.stderr);
  const out = run.json;
  assert.ok(out.samples >= 15000, `a big enough profile: ${out.samples} samples`);
  assert.ok(out.growth < 160, `RSS grew by ${out.growth.toFixed(1)} MiB over ${READS} reads`);
});

test('disposed reads free their native copy at once', () => {
  const run = runFixture('profile-reads.js', { args: [String(READS), 'dispose'] });
  assert.equal(run.status, 0, run.stderr);
  const out = run.json;
  assert.ok(out.samples >= 15000, `a big enough profile: ${out.samples} samples`);
  assert.ok(out.growth < 32, `RSS grew by ${out.growth.toFixed(1)} MiB over ${READS} disposed reads`);
});

test('a disposed read says so when used; what it converted before stays; a new read works', () => {
  const { libPath } = require('./helpers');
  const hl = require(libPath);
  const handle = hl.startHeapProfile({ sampleInterval: 1024 });
  const kept = Array.from({ length: 5000 }, (_, i) => ({ i, text: `kept-${i}` }));
  const profile = handle.getAllocationProfile();
  const samples = profile.samples;
  assert.ok(samples.length > 0);
  profile[Symbol.dispose]();
  profile[Symbol.dispose](); // idempotent
  assert.equal(profile.samples, samples, 'converted samples stay');
  for (const call of [() => profile.byLabel(), () => profile.byLabel('route'), () => profile.toPprof(), () => profile.toHeapProfile(), () => profile.head]) {
    assert.throws(call, (err) => err instanceof Error && /AllocationProfile was disposed/.test(err.message));
  }
  assert.ok(handle.getAllocationProfile().byLabel().length >= 1);
  handle.stop();
  assert.equal(kept.length, 5000);
});
