'use strict';
// Behaviour that needs the patched runtime (per-sample labels, per-label external bytes). On a
// stock runtime every test here skips with the reason; the patched-runtime work fills them in.

const test = require('node:test');
const assert = require('node:assert/strict');
const { libPath } = require('./helpers');
const hl = require(libPath);

const caps = hl.capabilities();
const reasonsFor = (...names) => caps.reasons.filter((r) => names.some((n) => r.startsWith(`${n}:`))).join('; ');
const skipSamples = caps.sampleLabels ? false : reasonsFor('sampleLabels', 'asyncContextFrame');
const skipExternal = caps.externalBytes ? false : reasonsFor('externalBytes');

test('samples carry the labels of the context that allocated them', { skip: skipSamples }, () => {
  const handle = hl.startHeapProfile({ sampleInterval: 4096 });
  try {
    const kept = hl.withHeapProfileLabels({ route: '/labeled' }, () => {
      const out = [];
      for (let i = 0; i < 200; i++) out.push(new Array(1000).fill(i));
      return out;
    });
    const profile = handle.getAllocationProfile();
    const labels = hl.withHeapProfileLabels({ route: '/labeled' }, hl.getHeapProfileLabels);
    assert.ok(profile.samples.some((s) => s.labels === labels));
    const group = profile.byLabel('route').find((g) => g.labels.route === '/labeled');
    assert.ok(group && group.bytes > 1_000_000);
    assert.equal(kept.length, 200);
  } finally {
    handle.stop();
  }
});

test('ArrayBuffer bytes are counted per label set', { skip: skipExternal }, () => {
  const handle = hl.startHeapProfile();
  try {
    const buf = hl.withHeapProfileLabels({ route: '/buffer' }, () => Buffer.alloc(10 * 1024 * 1024));
    const profile = handle.getAllocationProfile();
    const entry = profile.externalBytes.find((e) => e.labels.route === '/buffer');
    assert.ok(entry && entry.bytes >= 9.5 * 1024 * 1024);
    assert.equal(buf.length, 10 * 1024 * 1024);
  } finally {
    handle.stop();
  }
});
