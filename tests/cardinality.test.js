'use strict';
// Label-set cardinality: the maxLabelSets cap, the overflow set and how label objects recover
// from it, and byLabel() groups that are one per distinct set. The per-sample checks need the
// patched runtime; the bookkeeping (stats()) is checked on every runtime.

const test = require('node:test');
const assert = require('node:assert/strict');
const { runFixture, asyncContextFrameFlags } = require('./helpers');

const FLAGS = ['--expose-gc'];
FLAGS.push(...asyncContextFrameFlags());

function scenario(name) {
  const result = runFixture('cardinality.js', { nodeArgs: FLAGS, args: [name] });
  assert.equal(result.status, 0, `scenario ${name} failed:\n${result.stderr}`);
  assert.ok(result.json, `scenario ${name} printed no JSON:\n${result.stdout}`);
  return result.json;
}

const patched = runFixture('labeled-scenarios.js', { nodeArgs: FLAGS, args: ['capabilities'] }).json.sampleLabels;

const share = (routes, pick) => {
  const total = routes.reduce((sum, g) => sum + g.bytes, 0);
  return routes.filter(pick).reduce((sum, g) => sum + g.bytes, 0) / total;
};

test('a label object interned while the registry was full recovers its own set once there is room', async (t) => {
  const out = scenario('recovery');
  // The API always hands out the real labels.
  for (const phase of ['full', 'raised']) assert.deepEqual(out[phase].inside, { route: '/busy' });
  for (const phase of ['fullAgain', 'released']) assert.deepEqual(out[phase].inside, { route: '/late' });

  // Bookkeeping: bound to the overflow set while full, rebound by a session with room, and by the
  // first read after other sets were released.
  assert.ok(out.full.overflowLabelHolders >= 1, JSON.stringify(out.full));
  assert.equal(out.afterStart, 0, 'a new session with a higher maxLabelSets rebinds at once');
  assert.equal(out.raised.overflowLabelHolders, 0);
  assert.ok(out.fullAgain.overflowLabelHolders >= 1, JSON.stringify(out.fullAgain));
  assert.ok(out.beforeRelease >= 1, 'a session with the same cap finds no room yet');
  assert.equal(out.afterRead, 0, 'a read after sets were released rebinds');
  assert.equal(out.released.overflowLabelHolders, 0);
  const skip = patched ? false : 'needs the patched runtime: samples carry no labels on stock runtimes';
  await t.test('the samples: the overflow set\'s while full, the real labels after recovery', { skip }, () => {
    const overflow = (g) => g.overflow;
    const route = (name) => (g) => g.route === name;
    // While full, the samples are the overflow set's, which byLabel('route') keeps in a group of its
    // own (not the unlabeled `{}`).
    assert.ok(share(out.full.routes, overflow) >= 0.8, JSON.stringify(out.full.routes));
    assert.deepEqual(out.full.routes.find(overflow).keys, ['heap_labels.overflow']);
    assert.ok(share(out.fullAgain.routes, overflow) >= 0.8, JSON.stringify(out.fullAgain.routes));
    // After recovery the same objects, and the contexts entered while full, carry the real labels.
    assert.ok(share(out.raised.routes, route('/busy')) >= 0.8, JSON.stringify(out.raised.routes));
    assert.ok(share(out.raised.routes, overflow) <= 0.05, JSON.stringify(out.raised.routes));
    assert.ok(share(out.released.routes, route('/late')) >= 0.8, JSON.stringify(out.released.routes));
    assert.ok(share(out.released.routes, overflow) <= 0.05, JSON.stringify(out.released.routes));
  });
});

test('byLabel() has one group per distinct label set: {} is the unlabeled group', () => {
  const out = scenario('groups');
  assert.equal(out.kept, 300);
  assert.equal(out.emptyGroups, 1, JSON.stringify(out.groups));
  assert.equal(out.sampleEmpty, 0, 'samples taken under {} are unlabeled');
  if (patched) assert.ok(out.groups.some((g) => g.labels.route === '/r'), JSON.stringify(out.groups));
});

test('a profile read pins its samples\' label sets until it is disposed', { skip: !patched && 'needs sample labels (patched runtime)' }, () => {
  const out = scenario('pinned');
  assert.ok(out.labeled >= 45, JSON.stringify(out));
  assert.ok(out.whileRead >= out.baseline + 45, `the read holds the sets of its samples: ${JSON.stringify(out)}`);
  assert.ok(out.afterDispose <= out.baseline + 2, `disposing the read releases them: ${JSON.stringify(out)}`);
});

test('reads name label sets by id and generation: known sets cross no strings, reused ids keep the right labels', { skip: !patched && 'needs sample labels (patched runtime)' }, () => {
  const out = scenario('identity');
  for (const phase of [out.first, out.second]) {
    assert.ok(phase.labeled > 100 && phase.groups >= 15, JSON.stringify(phase));
    assert.ok(phase.counted >= 15, `labelCounters() has the sets: ${JSON.stringify(phase)}`);
    assert.equal(phase.wrong, 0, 'every sample has its own set\'s labels');
    assert.deepEqual(phase.fetched, [], 'sets lib/ made holders for cross no label strings');
  }
  assert.ok(out.reused >= 1, `the second sets took ids of pruned first ones: ${JSON.stringify(out)}`);
  // The addon rebound the overflowed holder at session start, unseen by lib/: its pairs cross once.
  assert.ok(out.overflowed >= 1, JSON.stringify(out));
  assert.ok(out.third.late > 0, JSON.stringify(out.third));
  assert.equal(out.third.wrong, 0);
  assert.deepEqual(out.third.fetched, ['/late'], JSON.stringify(out.third));
});
