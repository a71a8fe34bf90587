// @ts-check
'use strict';
// getHeapStats(): the group counters of a session started with groupBy. The addon keeps them at
// capture (core/src/group_counters.rs: every label set is projected onto the groupBy keys once,
// and each sample and ArrayBuffer block is charged to its set's group when taken and credited
// when dropped; a group is made at its first charge), so a read copies at most maxGroups + 2 rows
// of counters, whatever the number of label sets.

const { native } = require('./native');

// The counters of a group, in the order of the addon's rows.
const COUNTERS = Object.freeze([
  'allocatedHeapSampleCount',
  'currentHeapSampleCount',
  'currentHeapBytes',
  'allocatedExternalBytes',
  'allocatedExternalCount',
  'freedExternalBytes',
  'freedExternalCount',
  'currentExternalBytes',
  'publishedPeakExternalBytes',
]);
const WIDTH = COUNTERS.length;

// Group 0 gathers the label sets without any groupBy key (or only empty values), group 1 the
// overflow (a value over the byte limit, or maxGroups reached at a projection's first charge);
// both have no labels. A group's labels are its projection, keys in groupBy's order (so not an
// interned label set, whose keys are sorted): one frozen object per group for the session.
const UNKNOWN_GROUP = 0;
const OVERFLOW_GROUP = 1;
const NO_LABELS = Object.freeze({});

// The buffer the rows are read into (kept from read to read; grown when a read says so) and, per
// session, the labels of its groups: a group's position and labels are fixed for the session, so
// only groups new since the last read cross as strings.
let rows = new BigInt64Array(WIDTH * 260);
let labelsSession = 0;
let groupLabels = [];

function labelsOf(session, count) {
  if (labelsSession !== session) {
    labelsSession = session;
    groupLabels = [NO_LABELS, NO_LABELS];
  }
  if (groupLabels.length < count) {
    for (const g of native.groupLabels(session, groupLabels.length)) {
      const labels = {};
      for (let i = 0; i < g.keys.length; i++) labels[g.keys[i]] = g.values[i];
      groupLabels.push(Object.freeze(labels));
    }
  }
  return groupLabels;
}

function kindOf(index) {
  if (index === UNKNOWN_GROUP) return 'unknown';
  return index === OVERFLOW_GROUP ? 'overflow' : 'labels';
}

// { sampleInterval, peakWindowId (BigInt), overflowCount (BigInt), groups: [{ kind, isUnknown,
// isOverflow, labels, ...counters (BigInt) }] } of session `session` (0: whichever runs, for the
// metrics adapters, which never advance the peak window: that is the session owner's), or undefined
// when it has no groupBy. The proposal's shapes: boolean isUnknown/isOverflow, BigInt window id and
// overflow count. The addon lists the unknown and overflow groups, then each projection's group
// once something has been charged to it in this session, in that order: label sets merely alive
// from before neither show up nor spend maxGroups.
function readHeapStats(session, advancePeakWindow) {
  let read = native.groupStats(session, advancePeakWindow, rows);
  if (read === null || read === undefined) return undefined;
  if (read.rowsNeeded > 0) {
    rows = new BigInt64Array(WIDTH * Math.ceil(read.rowsNeeded * 1.25));
    read = native.groupStats(session, advancePeakWindow, rows);
    if (read.rowsNeeded > 0) throw new Error('heap-labels: getHeapStats: the groups kept growing during the read');
  }
  const labels = labelsOf(read.session, read.groups);
  const groups = [];
  for (let g = 0; g < read.groups; g++) {
    const base = g * WIDTH;
    const kind = kindOf(g);
    const group = { kind, isUnknown: g === UNKNOWN_GROUP, isOverflow: g === OVERFLOW_GROUP, labels: labels[g] };
    for (let c = 0; c < WIDTH; c++) group[COUNTERS[c]] = rows[base + c];
    groups.push(group);
  }
  return {
    sampleInterval: read.sampleInterval,
    peakWindowId: BigInt(read.peakWindowId),
    overflowCount: BigInt(read.overflowCount),
    groups,
  };
}

// The group counters of the running session, if it groups (what the metrics adapters publish).
const runningHeapStats = () => readHeapStats(0, false);

module.exports = { readHeapStats, runningHeapStats };
