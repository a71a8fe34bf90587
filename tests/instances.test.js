'use strict';
// One set of labels per isolate, whatever loads the library: a module registry reset (Jest, hot
// reload), a second installed copy, lib/ loaded into vm contexts. Labels set through one instance
// are seen, and captured, through every other; an incompatible copy says so instead of failing
// silently.

const test = require('node:test');
const assert = require('node:assert/strict');
const { fixtureJson, asyncContextFrameFlags, tempDir } = require('./helpers');

const FLAGS = ['--expose-gc'];
FLAGS.push(...asyncContextFrameFlags());

// The preloads' code cache in a directory of this run's own: which files a copy loads must not
// depend on whether the default one (under the temporary directory) is usable here.
const CACHE = { HEAP_LABELS_CODE_CACHE: tempDir('instances-cache') };
const scenario = (name) => fixtureJson('instances.js', { nodeArgs: FLAGS, args: [name], env: CACHE });

const patched = fixtureJson('labeled-scenarios.js', { nodeArgs: FLAGS, args: ['capabilities'] }).sampleLabels;

function assertShared(out) {
  assert.deepEqual(out.seen, { route: '/seen' }, 'labels set through the first instance are the second one\'s');
  assert.deepEqual(out.seenBack, { route: '/back' }, 'and the other way round');
  assert.equal(out.kept, 300);
  // The session's other reads, through the first instance, reach the session (a read that loaded
  // fresh module copies would find no session: sampleInterval 0, no groups).
  assert.equal(out.counters.sampleInterval, 4096, 'labelCounters() reads the running session');
  if (!patched) {
    assert.deepEqual(out.groups.map((g) => g.route), [null], 'stock runtimes carry no sample labels');
    return;
  }
  assert.ok(out.counters.routes.includes('/other'), `labelCounters() counts the labeled samples: ${JSON.stringify(out.counters)}`);
  assert.deepEqual(out.stats, ['/other'], 'getHeapStats() groups them by route');
  const total = out.groups.reduce((sum, g) => sum + g.bytes, 0);
  const other = out.groups.find((g) => g.route === '/other')?.bytes ?? 0;
  assert.ok(other / total >= 0.8, `a session of one instance captures labels set through the other: ${JSON.stringify(out.groups)}`);
}

test('re-required after clearing require.cache (a module registry reset): one set of labels', () => {
  const out = scenario('reload');
  assertShared(out);
  assert.equal(out.addons[0], out.addons[1], 'the first instance serves both');
  assert.equal(out.agentInterval, 8192, 'an agent started after the reset runs on the first instance\'s addon state');
});

test('a second copy of the package at another path: one set of labels', () => {
  const out = scenario('copy');
  assertShared(out);
  assert.equal(out.addons[0], out.addons[1], 'the first copy serves both');
  assert.equal(out.caps.sampleLabels, patched);
});

test('every subpath entry of a second copy goes through the realm\'s instance', () => {
  const out = scenario('entries');
  for (const [name, same] of Object.entries(out.sameModule)) {
    assert.equal(same, true, `heap-labels/${name} of the copy is the first copy's module`);
  }
  assert.deepEqual(out.seen, { route: '/copy' }, 'route labels set through the copy are the first copy\'s labels');
  assert.equal(out.agentStarted, true, 'the copy\'s preload started the agent the first copy sees');
  // The preload entry asks lib/main-thread.js whether this is the main thread before it looks for
  // the realm's instance (workers start nothing), and loads through lib/cached-require.js, which
  // finds the instance published and leaves the cache (lib/code-cache.js, the addon) alone.
  const strays = out.copyFilesLoaded.filter((file) => !/^(lib\/entries\/[a-z0-9-]+\.js|lib\/index\.js|lib\/instance\.js|lib\/instance-key\.js|lib\/main-thread\.js|lib\/cached-require\.js|lib\/code-cache\.js|package\.json)$/.test(file));
  assert.deepEqual(strays, [], 'the copy loads its entries, the instance check and the preload\'s loader only (no addon, no module with state)');
  assert.ok(out.copyFilesLoaded.includes('lib/entries/register.js'), out.copyFilesLoaded.join('\n'));
});

test('lib/ evaluated in two vm contexts (Jest\'s module registry) shares the isolate\'s labels', () => {
  const out = scenario('realms');
  assertShared(out);
  assert.equal(out.ownRealm, true, 'each realm gets label objects of its own realm');
  assert.deepEqual(out.requestHolder, {
    started: { route: '(unmatched) GET' },
    routed: { route: '/realm/:id' },
    ownRealm: true,
  }, 'a request holder of one realm reads in the other, before and after routing');
});

test('an incompatible copy does not fail silently: capabilities() and a warning say why', () => {
  const out = scenario('incompatible');
  assert.equal(out.caps.sampleLabels, false);
  assert.equal(out.caps.externalBytes, false);
  const reason = out.caps.reasons.find((r) => r.startsWith('sampleLabels:'));
  assert.ok(reason && /incompatible/.test(reason) && reason.includes('protocol'), out.caps.reasons.join('\n'));
  assert.ok(out.caps.reasons.some((r) => r.startsWith('externalBytes:') && /incompatible/.test(r)), out.caps.reasons.join('\n'));
  assert.equal(out.firstCaps.sampleLabels, patched, 'the first copy keeps working');
  assert.equal(out.seen, null, 'the copies do not share labels');
  assert.ok(
    out.warnings.some((w) => w.code === 'HEAP_LABELS_INCOMPATIBLE_COPY' && w.message.includes('protocol')),
    JSON.stringify(out.warnings),
  );
});
