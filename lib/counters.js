'use strict';
// Per-label counters without reading a profile: what a metrics scrape calls. The native side
// keeps them current (live samples counted as V8 takes and drops samples on the patched runtime,
// external bytes as buffers come and go); a read walks the label sets, never a call tree.

const { native } = require('./native');
const { internPairs } = require('./labels');

const UNLABELED = internPairs([], []);

// Label-set id -> WeakRef(interned frozen labels). The registry gives the ids of pruned sets to new
// sets, so the cache is right only while the registry's count of reused ids stays the same: a
// read that sees it change starts over. Weak: a strong cache would keep every set it ever saw in
// the table.
const labelsById = new Map();
let idReusesSeen = -1;

// The labels of each id (undefined for sets pruned meanwhile), fetching the pairs of ids not cached.
function labelsOf(ids) {
  const out = new Array(ids.length);
  let missing;
  for (let i = 0; i < ids.length; i++) {
    out[i] = labelsById.get(ids[i])?.deref();
    if (out[i] === undefined) (missing ??= []).push(i);
  }
  if (missing !== undefined) {
    const fetched = new Map();
    for (const set of native.labelSetPairs(Uint32Array.from(missing, (i) => ids[i]))) {
      const labels = internPairs(set.keys, set.values);
      fetched.set(set.id, labels);
      labelsById.set(set.id, new WeakRef(labels));
    }
    for (const i of missing) out[i] = fetched.get(ids[i]);
  }
  // Keep the cache to the sets of this read once it has grown well past them.
  if (labelsById.size > 2 * ids.length + 64) {
    const seen = new Set(ids);
    for (const id of labelsById.keys()) if (!seen.has(id)) labelsById.delete(id);
  }
  return out;
}

// { sampleInterval, perSetSamples, groups: [{ labels, heapBytes, samples, externalBytes,
// externalPeakBytes }] }: one group per label set with live samples or external bytes, the
// overflow set's group when it has any, and always the unlabeled group (labels {}). On stock
// runtimes (perSetSamples false) samples are not counted: the unlabeled group's heapBytes is V8's
// used heap size and its samples 0.
function counters() {
  const c = native.labelCounters();
  const { ids, samples, externalBytes, externalPeakBytes } = c;
  if (c.idReuses !== idReusesSeen) {
    labelsById.clear();
    idReusesSeen = c.idReuses;
  }
  const labelsList = labelsOf(ids);
  const interval = c.sampleInterval;
  const groups = [];
  for (let i = 0; i < ids.length; i++) {
    const labels = labelsList[i];
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
