'use strict';
// Per-label counters as OpenTelemetry observable gauges, labels as attributes:
//
//   const { metrics } = require('@opentelemetry/api');
//   require('heap-labels/opentelemetry').registerOpenTelemetry(metrics.getMeter('app'));
//
// @opentelemetry/api stays the app's dependency: this module only calls the Meter it is given.
// One batch callback reads the counters once per collection for all four gauges.

const { sharedCounters, GAUGES } = require('./metrics-source');

// Creates `<prefix>heap_bytes`, `<prefix>live_samples`, `<prefix>external_bytes` and
// `<prefix>external_peak_bytes` (prefix default 'heap_labels.') on `meter`; returns a function that
// removes the callback again.
function registerOpenTelemetry(meter, { prefix = 'heap_labels.' } = {}) {
  if (meter === null || typeof meter !== 'object' || typeof meter.createObservableGauge !== 'function' ||
      typeof meter.addBatchObservableCallback !== 'function') {
    throw new TypeError('heap-labels: registerOpenTelemetry: meter must be an OpenTelemetry Meter (metrics.getMeter(name))');
  }
  if (typeof prefix !== 'string') throw new TypeError('heap-labels: registerOpenTelemetry: prefix must be a string');
  const read = sharedCounters();
  const gauges = GAUGES.map(([suffix, description, unit, value]) => ({
    instrument: meter.createObservableGauge(`${prefix}${suffix}`, { description, unit }),
    value,
  }));
  const callback = (result) => {
    for (const group of read().groups) {
      for (const { instrument, value } of gauges) result.observe(instrument, value(group), group.labels);
    }
  };
  const instruments = gauges.map((g) => g.instrument);
  meter.addBatchObservableCallback(callback, instruments);
  return function unregister() {
    meter.removeBatchObservableCallback(callback, instruments);
  };
}

module.exports = { registerOpenTelemetry };
