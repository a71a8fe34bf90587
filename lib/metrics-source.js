'use strict';
// One counters read per scrape, shared by the gauges of a metrics adapter: a scrape asks each
// gauge in turn within one tick, and the external-bytes peak period is the reader's, from one of
// its reads to the next, so reading once per gauge would hand each gauge a different period. Each
// adapter is a reader of its own (lib/counters.js): other readers do not cut its periods short.

const { createCountersReader } = require('./counters');

function sharedCounters() {
  const counters = createCountersReader();
  let cached;
  return function read() {
    if (cached === undefined) {
      cached = counters();
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

module.exports = { sharedCounters, GAUGES };
