// @ts-check
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

// Readers of the counters. The addon keeps one external-peak period per set and ends it at every
// native read; with several readers (labelCounters(), each metrics adapter, the agent's growth
// watch) each would see only the peaks since anybody's last read, and a scrape after a watch
// snapshot would miss a spike between the two. So each reader has a period of its own: every
// native read hands the peaks it ended to the other live readers, which keep, per label set, the
// highest one not yet reported to them (only peaks above the current bytes: the new period starts
// at the current bytes, so the next native read sees those). Bounded: an entry per label set with
// such a peak, and it goes at the reader's next read.
class PeakPeriod {
  pending = new Map(); // labels -> highest peak ended by other readers' reads since this one's last
  unlabeled = 0;

  note(labels, peak) {
    if (peak > (this.pending.get(labels) ?? 0)) this.pending.set(labels, peak);
  }
}

const readers = new Set(); // WeakRef(PeakPeriod) of the live readers
const forgetReader = new FinalizationRegistry((ref) => readers.delete(ref));

// A reader: a function returning counters() results whose externalPeakBytes cover the time since
// this reader's previous call (its first: since the read before it).
function createCountersReader() {
  const own = new PeakPeriod();
  const ref = new WeakRef(own);
  readers.add(ref);
  forgetReader.register(own, ref);
  return () => readFor(own);
}

function readFor(own) {
  const result = fromColumns(readColumns());
  const groups = result.groups;
  const unlabeled = groups.pop(); // always last; put back below
  // The peaks this read ended above the current bytes, once, for every other reader.
  const ended = groups.filter((g) => g.externalPeakBytes > g.externalBytes);
  const unlabeledEnded = unlabeled.externalPeakBytes > unlabeled.externalBytes ? unlabeled.externalPeakBytes : 0;
  for (const ref of readers) {
    const other = ref.deref();
    if (other === undefined || other === own) continue;
    for (const g of ended) other.note(g.labels, g.externalPeakBytes);
    other.unlabeled = Math.max(other.unlabeled, unlabeledEnded);
  }
  if (own.pending.size > 0) {
    for (const g of groups) {
      const peak = own.pending.get(g.labels);
      if (peak === undefined) continue;
      if (peak > g.externalPeakBytes) g.externalPeakBytes = peak;
      own.pending.delete(g.labels);
    }
    // Sets whose bytes are all gone by now still had their peak in this reader's period.
    for (const [labels, peak] of own.pending) {
      groups.push({ labels, heapBytes: 0, samples: 0, externalBytes: 0, externalPeakBytes: peak });
    }
    own.pending.clear();
  }
  if (own.unlabeled > unlabeled.externalPeakBytes) unlabeled.externalPeakBytes = own.unlabeled;
  own.unlabeled = 0;
  groups.push(unlabeled);
  return result;
}

// { sampleInterval, perSetSamples, groups: [{ labels, heapBytes, samples, externalBytes,
// externalPeakBytes }] }: one group per label set with live samples, external bytes or an
// external peak since the caller's previous read, the overflow set's group when it has any, and
// always the unlabeled group (labels {}), last. On stock runtimes (perSetSamples false) samples
// are not counted: the unlabeled group's heapBytes is V8's used heap size and its samples 0. The
// reader of labelCounters() (and of agent.counters()).
const counters = createCountersReader();

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

module.exports = { counters, createCountersReader, readColumns, fromColumns };
