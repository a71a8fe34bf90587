'use strict';
// One counters read per scrape, shared by the gauges of a metrics adapter: a scrape asks each
// gauge in turn within one tick, and the external-bytes peak period is the reader's, from one of
// its reads to the next, so reading once per gauge would hand each gauge a different period. Each
// adapter is a reader of its own (lib/counters.js): other readers do not cut its periods short.

const { createCountersReader } = require('./counters');
const { runningHeapStats } = require('./group-stats');

function sharedCounters() {
  return onePerScrape(createCountersReader());
}

// The group counters of the running session (a session started with groupBy; none otherwise), one
// read per scrape. They are the session's (kept natively at capture, lib/group-stats.js): a scrape
// reads them and never closes the session owner's peak window.
function sharedGroupStats() {
  return onePerScrape(() => runningHeapStats()?.groups ?? []);
}

function onePerScrape(readNow) {
  let cached;
  return function read() {
    if (cached === undefined) {
      cached = readNow();
      setImmediate(() => {
        cached = undefined;
      }).unref();
    }
    return cached;
  };
}

// The values each adapter publishes: [suffix, help, unit, (group) => value].
const GAUGES = Object.freeze([
  ['heap_bytes', 'Estimated live heap bytes of the label set (live samples x sampling interval)', 'By', (g) => g.heapBytes],
  ['live_samples', 'Live heap samples of the label set', '{sample}', (g) => g.samples],
  ['external_bytes', 'ArrayBuffer/Buffer bytes currently charged to the label set', 'By', (g) => g.externalBytes],
  ['external_peak_bytes', 'Highest external bytes of the label set since the previous scrape', 'By', (g) => g.externalPeakBytes],
]);

// The group counters each adapter publishes with { groups: true }: [suffix, help, unit, kind
// ('gauge' or 'counter', counted since the session started), (group) => value].
const GROUP_METRICS = Object.freeze([
  ['group_heap_bytes', 'Estimated live heap bytes of the group (live samples x sampling interval)', 'By', 'gauge', (g) => g.currentHeapBytes],
  ['group_live_samples', 'Live heap samples of the group', '{sample}', 'gauge', (g) => g.currentHeapSampleCount],
  ['group_samples', 'Heap samples taken in the group since the session started', '{sample}', 'counter', (g) => g.allocatedHeapSampleCount],
  ['group_external_bytes', 'ArrayBuffer/Buffer bytes currently charged to the group', 'By', 'gauge', (g) => g.currentExternalBytes],
  ['group_allocated_external_bytes', 'ArrayBuffer/Buffer bytes allocated in the group since the session started', 'By', 'counter', (g) => g.allocatedExternalBytes],
  ['group_freed_external_bytes', 'ArrayBuffer/Buffer bytes of the group freed since the session started', 'By', 'counter', (g) => g.freedExternalBytes],
  ['group_published_peak_external_bytes', 'Highest external bytes of the group in the last closed peak window', 'By', 'gauge', (g) => g.publishedPeakExternalBytes],
]);

// A group's metric labels: its projection, or for the unknown and overflow groups (no labels) the
// adapter's own marker, `kindLabels[group.kind]`. Each adapter picks a marker no projection can be:
// Prometheus escapes a user key equal to its marker name (lib/prometheus.js), OpenTelemetry uses a
// key under the reserved `heap_labels.` prefix, which no label key may have.
function groupMetricLabels(group, kindLabels) {
  return group.kind === 'labels' ? group.labels : kindLabels[group.kind];
}

module.exports = { sharedCounters, sharedGroupStats, GAUGES, GROUP_METRICS, groupMetricLabels };
