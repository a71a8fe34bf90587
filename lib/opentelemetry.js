'use strict';
// Per-label counters as OpenTelemetry observable gauges, labels as attributes:
//
//   const { metrics } = require('@opentelemetry/api');
//   require('heap-labels/opentelemetry').registerOpenTelemetry(metrics.getMeter('app'));
//
// @opentelemetry/api stays the app's dependency: this module only calls the Meter it is given.
// One batch callback reads the counters once per collection for all four gauges.

const { sharedCounters, sharedGroupStats, GAUGES, GROUP_METRICS, groupMetricLabels } = require('./metrics-source');

// Creates `<prefix>heap_bytes`, `<prefix>live_samples`, `<prefix>external_bytes` and
// `<prefix>external_peak_bytes` (prefix default 'heap_labels.') on `meter`, one point per label set;
// with `groups: true` also the group counters of a session started with groupBy (`<prefix>group_*`:
// observable gauges, and observable counters for what is counted since the session started; one
// point per group); `sets: false` leaves the per-set gauges out. Returns a function that removes
// the callback again.
// The attributes of the unknown and overflow groups: under the reserved `heap_labels.` prefix, which
// no label key (hence no group's projection) may have.
const KIND_ATTRIBUTES = Object.freeze({
  unknown: Object.freeze({ 'heap_labels.group': 'unknown' }),
  overflow: Object.freeze({ 'heap_labels.group': 'overflow' }),
});

function registerOpenTelemetry(meter, { prefix = 'heap_labels.', sets = true, groups = false } = {}) {
  if (meter === null || typeof meter !== 'object' || typeof meter.createObservableGauge !== 'function' ||
      typeof meter.addBatchObservableCallback !== 'function') {
    throw new TypeError('heap-labels: registerOpenTelemetry: meter must be an OpenTelemetry Meter (metrics.getMeter(name))');
  }
  if (typeof prefix !== 'string') throw new TypeError('heap-labels: registerOpenTelemetry: prefix must be a string');
  if (typeof sets !== 'boolean' || typeof groups !== 'boolean') {
    throw new TypeError('heap-labels: registerOpenTelemetry: sets and groups must be booleans');
  }
  if (groups && typeof meter.createObservableCounter !== 'function') {
    throw new TypeError('heap-labels: registerOpenTelemetry: groups needs a Meter with createObservableCounter');
  }
  const readSets = sharedCounters();
  const readGroups = sharedGroupStats();
  const gauges = sets
    ? GAUGES.map(([suffix, description, unit, value]) => ({
      instrument: meter.createObservableGauge(`${prefix}${suffix}`, { description, unit }),
      value,
    }))
    : [];
  const groupInstruments = groups
    ? GROUP_METRICS.map(([suffix, description, unit, kind, value]) => ({
      instrument:
          kind === 'counter'
            ? meter.createObservableCounter(`${prefix}${suffix}`, { description, unit })
            : meter.createObservableGauge(`${prefix}${suffix}`, { description, unit }),
      value,
    }))
    : [];
  const callback = (result) => {
    if (gauges.length > 0) {
      for (const group of readSets().groups) {
        for (const { instrument, value } of gauges) result.observe(instrument, value(group), group.labels);
      }
    }
    if (groupInstruments.length > 0) {
      for (const group of readGroups()) {
        const attributes = groupMetricLabels(group, KIND_ATTRIBUTES);
        for (const { instrument, value } of groupInstruments) result.observe(instrument, Number(value(group)), attributes);
      }
    }
  };
  const instruments = [...gauges, ...groupInstruments].map((g) => g.instrument);
  meter.addBatchObservableCallback(callback, instruments);
  return function unregister() {
    meter.removeBatchObservableCallback(callback, instruments);
  };
}

module.exports = { registerOpenTelemetry };
