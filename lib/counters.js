'use strict';
// Per-label counters without reading a profile: what a metrics scrape calls. The native side
// keeps them current (live samples counted as V8 takes and drops samples on the patched runtime,
// external bytes as buffers come and go); a read walks the label sets, never a call tree.

const { native } = require('./native');
const { internPairs, labelsOfSets } = require('./labels');

const UNLABELED = internPairs([], []);

// The buffers the native read writes its rows into (lib/ owns them; the addon fills them and
// allocates nothing per row), kept from read to read and grown when a read says they are short.
// At most a row per label set: bounded by maxLabelSets. A row names its set by key (id and
// generation), which lib/labels.js turns into labels.
const INITIAL_ROWS = 64;
let columns = makeColumns(INITIAL_ROWS);

function makeColumns(rows) {
  return {
    ids: new Uint32Array(rows),
    generations: new Float64Array(rows),
    samples: new Float64Array(rows),
    externalBytes: new Float64Array(rows),
    externalPeakBytes: new Float64Array(rows),
  };
}

// One native read: { rows, sampleInterval, perSetSamples, unlabeled* } plus the five columns
// (only their first `rows` entries are this read's).
function readColumns() {
  let c = columns;
  let read = native.labelCounters(c.ids, c.generations, c.samples, c.externalBytes, c.externalPeakBytes);
  if (read.rowsNeeded > 0) {
    // Too short: nothing was read. Room for the sets there are, and for some more.
    columns = c = makeColumns(Math.ceil(read.rowsNeeded * 1.5));
    read = native.labelCounters(c.ids, c.generations, c.samples, c.externalBytes, c.externalPeakBytes);
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
  const { ids, generations, samples, externalBytes, externalPeakBytes } = c;
  const interval = c.sampleInterval;
  const rows = c.rows;
  // Sets pruned between the native read and the fetch of their pairs have no labels: left out.
  const labelsById = labelsOfSets(ids, generations, rows, (missing) => native.labelSetPairs(missing));
  const groups = [];
  for (let i = 0; i < rows; i++) {
    const labels = labelsById[ids[i]];
    if (labels === undefined) continue;
    const n = samples[i];
    groups.push({
      labels,
      heapBytes: n * interval,
      samples: n,
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

module.exports = { counters, readColumns, fromColumns };
