'use strict';
// Per-label counters as prom-client gauges, labels as metric labels:
//
//   const client = require('prom-client');
//   require('heap-labels/prometheus').registerPrometheus(client.register);
//
// prom-client stays the app's dependency: this module only calls the registry it is given
// (registerMetric / removeSingleMetric) with metric objects of prom-client's collection protocol
// (name, help, type, get(), reset()). Label sets have different keys, which Prometheus allows
// within one metric; keys are made valid label names (invalid characters become '_').

const { sharedCounters, GAUGES } = require('./metrics-source');

const sanitizedKeys = new Map();
function labelName(key) {
  let name = sanitizedKeys.get(key);
  if (name === undefined) {
    name = key.replace(/[^A-Za-z0-9_]/g, '_');
    if (/^[0-9]/.test(name)) name = `_${name}`;
    if (sanitizedKeys.size < 10000) sanitizedKeys.set(key, name);
  }
  return name;
}

const promLabels = new WeakMap(); // interned labels -> prometheus label object
function labelsFor(labels) {
  let out = promLabels.get(labels);
  if (out === undefined) {
    out = {};
    for (const key of Object.keys(labels)) out[labelName(key)] = labels[key];
    promLabels.set(labels, out);
  }
  return out;
}

// Registers the gauges `<prefix>heap_bytes`, `<prefix>live_samples`, `<prefix>external_bytes` and
// `<prefix>external_peak_bytes` (prefix default 'heap_labels_') on `registry`; returns a function
// that removes them again.
function registerPrometheus(registry, { prefix = 'heap_labels_' } = {}) {
  if (registry === null || typeof registry !== 'object' || typeof registry.registerMetric !== 'function') {
    throw new TypeError('heap-labels: registerPrometheus: registry must be a prom-client Registry (e.g. client.register)');
  }
  if (typeof prefix !== 'string' || !/^[A-Za-z_:][A-Za-z0-9_:]*$/.test(prefix)) {
    throw new TypeError('heap-labels: registerPrometheus: prefix must match [A-Za-z_:][A-Za-z0-9_:]*');
  }
  const read = sharedCounters();
  const names = [];
  for (const [suffix, help, , value] of GAUGES) {
    const name = `${prefix}${suffix}`;
    registry.registerMetric({
      name,
      help,
      type: 'gauge',
      aggregator: 'sum',
      get() {
        const values = read().groups.map((g) => ({ labels: labelsFor(g.labels), value: value(g) }));
        return { name, help, type: 'gauge', values, aggregator: 'sum' };
      },
      reset() {},
    });
    names.push(name);
  }
  return function unregister() {
    for (const name of names) registry.removeSingleMetric(name);
  };
}

module.exports = { registerPrometheus };
