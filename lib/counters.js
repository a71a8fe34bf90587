'use strict';
// Per-label counters without reading a profile: what a metrics scrape calls. The native side
// keeps them current (live samples counted as V8 takes and drops samples on the patched runtime,
// external bytes as buffers come and go); a read walks the label sets, never a call tree.

const { native } = require('./native');
const { internPairs } = require('./labels');

const UNLABELED = internPairs([], []);

// Label-set id -> interned frozen labels. Ids are never reused, so an entry is right for as long
// as the set lives; entries of sets that no longer show up are dropped on the next read.
const labelsById = new Map();

function labelsOf(ids) {
  let missing;
  for (let i = 0; i < ids.length; i++) {
    if (!labelsById.has(ids[i])) (missing ??= []).push(ids[i]);
  }
  if (missing !== undefined) {
    for (const set of native.labelSetPairs(Uint32Array.from(missing))) {
      labelsById.set(set.id, internPairs(set.keys, set.values));
    }
  }
  // Keep the cache to the sets of this read once it has grown well past them.
  if (labelsById.size > 2 * ids.length + 64) {
    const seen = new Set(ids);
    for (const id of labelsById.keys()) if (!seen.has(id)) labelsById.delete(id);
  }
}

// { sampleInterval, perSetSamples, groups: [{ labels, heapBytes, samples, externalBytes,
// externalPeakBytes }] }: one group per label set with live samples or external bytes, the
// overflow set's group when it has any, and always the unlabeled group (labels {}). On stock
// runtimes (perSetSamples false) samples are not counted: the unlabeled group's heapBytes is V8's
// used heap size and its samples 0.
function counters() {
  const c = native.labelCounters();
  const { ids, samples, externalBytes, externalPeakBytes } = c;
  labelsOf(ids);
  const interval = c.sampleInterval;
  const groups = [];
  for (let i = 0; i < ids.length; i++) {
    const labels = labelsById.get(ids[i]);
    if (labels === undefined) continue; // pruned between the two native calls
    groups.push({
      labels,
      heapBytes: samples[i] * interval,
      samples: samples[i],
      externalBytes: externalBytes[i],
      externalPeakBytes: externalPeakBytes[i],
    });
  }
  groups.push({
    labels: UNLABELED,
    heapBytes: c.unlabeledHeapBytes,
    samples: c.unlabeledSamples,
    externalBytes: c.unlabeledExternalBytes,
    externalPeakBytes: c.unlabeledExternalPeakBytes,
  });
  return { sampleInterval: interval, perSetSamples: c.perSetSamples, groups };
}

module.exports = { counters };
