'use strict';
// Per-label counters without reading a profile: what a metrics scrape calls. The native side
// keeps them current (live samples counted as V8 takes and drops samples on the patched runtime,
// external bytes as buffers come and go); a read walks the label sets, never a call tree.

const { native } = require('./native');
const { internPairs } = require('./labels');

const UNLABELED = internPairs([], []);

// Label-set id -> { labels, read }: the interned frozen labels of the sets of recent reads. The
// registry gives the ids of pruned sets to new sets, so an entry is right only while the registry's
// count of reused ids stays the same: a read that sees it change starts over. The cache holds only
// the sets of the latest read (an entry not seen in a read is dropped by that read) and is emptied
// when no read came for a minute.
const labelsById = new Map();
let reads = 0;
let idReusesSeen = -1;
const idle = setTimeout(() => labelsById.clear(), 60_000);
idle.unref();

// The labels of each id (undefined for sets pruned meanwhile), fetching the pairs of ids not cached.
function labelsOf(ids) {
  const read = ++reads;
  idle.refresh();
  const out = new Array(ids.length);
  let missing;
  for (let i = 0; i < ids.length; i++) {
    const entry = labelsById.get(ids[i]);
    if (entry === undefined) {
      (missing ??= []).push(i);
    } else {
      entry.read = read;
      out[i] = entry.labels;
    }
  }
  if (missing !== undefined) {
    const fetched = new Map();
    for (const set of native.labelSetPairs(Uint32Array.from(missing, (i) => ids[i]))) {
      const labels = internPairs(set.keys, set.values);
      fetched.set(set.id, labels);
      labelsById.set(set.id, { labels, read });
    }
    for (const i of missing) out[i] = fetched.get(ids[i]);
  }
  // Entries of sets that left (the cache is larger than this read): drop them.
  if (labelsById.size > ids.length) {
    for (const [id, entry] of labelsById) if (entry.read !== read) labelsById.delete(id);
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
  if (c.idReuses !== idReusesSeen) {
    labelsById.clear();
    idReusesSeen = c.idReuses;
  }
  const { ids, samples, externalBytes, externalPeakBytes } = c;
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
