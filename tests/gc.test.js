'use strict';
// What garbage collection releases (child processes with --expose-gc).

const test = require('node:test');
const assert = require('node:assert/strict');
const { runFixture } = require('./helpers');

test('dead objects leave the profile unless the keep flags are set; label holders and sets are released', () => {
  const run = runFixture('gc-release.js', { nodeArgs: ['--expose-gc'] });
  assert.equal(run.status, 0, run.stderr);
  const { dropped, keptByFlag, holders } = run.json;

  assert.ok(dropped.before > 50, JSON.stringify(dropped));
  assert.ok(dropped.after < dropped.before / 10, `samples of dead objects stayed: ${JSON.stringify(dropped)}`);

  assert.ok(keptByFlag.before > 50, JSON.stringify(keptByFlag));
  assert.ok(keptByFlag.after >= keptByFlag.before * 0.9, `keep flags lost samples: ${JSON.stringify(keptByFlag)}`);

  assert.ok(holders.during.liveHolders >= holders.baseline.liveHolders + 40, JSON.stringify(holders));
  assert.ok(holders.during.labelSets >= holders.baseline.labelSets + 40, JSON.stringify(holders));
  assert.ok(holders.after.liveHolders <= holders.baseline.liveHolders + 2, `holders not collected: ${JSON.stringify(holders)}`);
  assert.ok(holders.after.labelSets <= holders.baseline.labelSets + 2, `label sets not released: ${JSON.stringify(holders)}`);
});

test('a worker exiting with a running session and live holders tears down cleanly', () => {
  const run = runFixture('worker-teardown.js');
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.signal, null);
  const { first, second, mainStarted } = run.json;
  assert.equal(first.exitCode, 0);
  assert.equal(second.exitCode, 0);
  assert.ok(first.samples > 0 && second.samples > 0, JSON.stringify(run.json));
  assert.equal(mainStarted, true);
});
