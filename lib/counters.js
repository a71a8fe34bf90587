'use strict';
// Per-label counters without reading a profile: what a metrics scrape calls. The native side
// keeps them current (live samples counted as V8 takes and drops samples on the patched runtime,
// external bytes as buffers come and go); a read walks the label sets, never a call tree.

const { native } = require('./native');
const { internPairs } = require('./labels');

const UNLABELED = internPairs([], []);

// Label-set id -> the interned frozen labels of the sets of the latest read: an array indexed by
// id (ids are compact: the registry hands out the lowest free ones, so the array stays dense and
// a lookup is an element load, where a Map took a hash lookup and an entry object per set). The
// registry gives the ids of pruned sets to new sets, so an entry is right only while the
// registry's count of reused ids stays the same: a read that sees it change starts over. Every
// read builds a new array of just the ids it saw, so the cache holds only the sets of the latest
// read (an entry not seen in a read is dropped by that read: a cache that kept every label object
// it had seen kept their label holders, and with them the sets, alive), and it is emptied when no
// read came for a minute.
let labelsById = [];
let idReusesSeen = -1;
const idle = setTimeout(() => {
  labelsById = [];
  columns = makeColumns(INITIAL_ROWS);
}, 60_000);
idle.unref();

// The buffers the native read writes its rows into (lib/ owns them; the addon fills them and
// allocates nothing per row), kept from read to read and grown when a read says they are short.
// At most a row per label set: bounded by maxLabelSets.
const INITIAL_ROWS = 64;
let columns = makeColumns(INITIAL_ROWS);

function makeColumns(rows) {
  return {
    ids: new Uint32Array(rows),
    samples: new Float64Array(rows),
    externalBytes: new Float64Array(rows),
    externalPeakBytes: new Float64Array(rows),
  };
}

// One native read: { rows, sampleInterval, perSetSamples, unlabeled*, idReuses } plus the four
// columns (only their first `rows` entries are this read's).
function readColumns() {
  let c = columns;
  let read = native.labelCounters(c.ids, c.samples, c.externalBytes, c.externalPeakBytes);
  if (read.rowsNeeded > 0) {
    // Too short: nothing was read. Room for the sets there are, and for some more.
    columns = c = makeColumns(Math.ceil(read.rowsNeeded * 1.5));
    read = native.labelCounters(c.ids, c.samples, c.externalBytes, c.externalPeakBytes);
    if (read.rowsNeeded > 0) throw new Error('heap-labels: labelCounters: the label sets kept growing during the read');
  }
  return { ...read, ...c };
}

// { sampleInterval, perSetSamples, groups: [{ labels, heapBytes, samples, externalBytes,
// externalPeakBytes }] }: one group per label set with live samples or external bytes, the
// overflow set's group when it has any, and always the unlabeled group (labels {}). On stock
// runtimes (perSetSamples false) samples are not counted: the unlabeled group's heapBytes is V8's
// used heap size and its samples 0.
function counters() {
  return fromColumns(readColumns());
}

// The result of counters() from the columns of one native read (typed arrays, `rows` rows, one
// per set: no JS object per row crosses from the addon). Split out for the benchmark, which
// measures it at 10k rows also where the runtime gives no per-set rows.
function fromColumns(c) {
  idle.refresh();
  if (c.idReuses !== idReusesSeen) {
    labelsById = [];
    idReusesSeen = c.idReuses;
  }
  const { ids, samples, externalBytes, externalPeakBytes } = c;
  const interval = c.sampleInterval;
  const rows = c.rows;
  let maxId = 0;
  for (let i = 0; i < rows; i++) if (ids[i] > maxId) maxId = ids[i];
  const cached = labelsById;
  // Pre-sized so that stores in the sets' (unordered) id order stay in fast elements.
  const seen = new Array(maxId + 1);
  let groups = [];
  let missing; // row indexes (equal to group indexes until the end) whose labels are not cached
  for (let i = 0; i < rows; i++) {
    const id = ids[i];
    const labels = cached[id];
    if (labels === undefined) (missing ??= []).push(i);
    else seen[id] = labels;
    const n = samples[i];
    groups.push({
      labels,
      heapBytes: n * interval,
      samples: n,
      externalBytes: externalBytes[i],
      externalPeakBytes: externalPeakBytes[i],
    });
  }
  if (missing !== undefined) {
    for (const set of native.labelSetPairs(Uint32Array.from(missing, (i) => ids[i]))) {
      seen[set.id] = internPairs(set.keys, set.values);
    }
    let pruned = false;
    for (const i of missing) {
      const labels = seen[ids[i]];
      if (labels === undefined) pruned = true; // pruned between the two native calls
      else groups[i].labels = labels;
    }
    if (pruned) groups = groups.filter((g) => g.labels !== undefined);
  }
  labelsById = seen;
  groups.push({
    labels: UNLABELED,
    heapBytes: c.unlabeledHeapBytes,
    samples: c.unlabeledSamples,
    externalBytes: c.unlabeledExternalBytes,
    externalPeakBytes: c.unlabeledExternalPeakBytes,
  });
  return { sampleInterval: interval, perSetSamples: c.perSetSamples, groups };
}

module.exports = { counters, readColumns, fromColumns };
