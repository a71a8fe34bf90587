'use strict';
// Per-label counters as prom-client gauges, labels as metric labels:
//
//   const client = require('prom-client');
//   require('heap-labels/prometheus').registerPrometheus(client.register);
//
// prom-client stays the app's dependency: this module only calls the registry it is given
// (registerMetric / removeSingleMetric) with metric objects of prom-client's collection protocol
// (name, help, type, get(), reset()). Label sets have different keys, which Prometheus allows
// within one metric.
//
// Label keys become Prometheus label names one to one: two different label sets never become one
// series, and no value is dropped. A key that is already a valid name ([A-Za-z_][A-Za-z0-9_]*),
// not reserved (names starting with "__", like __name__, are Prometheus' own) and not starting
// with "U__" stays as it is. Any other key is escaped the way Prometheus 3 escapes UTF-8 names
// ("values" escaping): "U__", then each character: '_' as "__", letters and digits as they are,
// anything else as "_<hex code point>_". So 'user.id' -> U__user_2e_id, 'é' -> U___e9_,
// '__name__' -> U______name____, and an escaped name decodes back to its key. Escaped names
// start with "U__", names kept as they are never do: no two keys share a name. The key
// "heap_labels_group" is escaped too (U__heap__labels__group): that name is this module's marker of
// the unknown and overflow groups (`groups: true`), so no projection's series can be one of theirs.

const { sharedCounters, sharedGroupStats, GAUGES, GROUP_METRICS, groupMetricLabels } = require('./metrics-source');

const VALID_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const GROUP_MARKER = 'heap_labels_group';
// The series labels of the unknown and overflow groups (already Prometheus label objects).
const KIND_SERIES = Object.freeze({
  unknown: Object.freeze({ [GROUP_MARKER]: 'unknown' }),
  overflow: Object.freeze({ [GROUP_MARKER]: 'overflow' }),
});

function escapedName(key) {
  let out = 'U__';
  for (const char of key) {
    if (char === '_') out += '__';
    else if (/^[A-Za-z0-9]$/.test(char)) out += char;
    else out += `_${char.codePointAt(0).toString(16)}_`;
  }
  return out;
}

// The Prometheus label name of a label key (injective and deterministic, see above).
function labelName(key) {
  let name = escapedNames.get(key);
  if (name === undefined) {
    const kept = VALID_NAME.test(key) && !key.startsWith('__') && !key.startsWith('U__') && key !== GROUP_MARKER;
    name = kept ? key : escapedName(key);
    if (escapedNames.size < 10000) escapedNames.set(key, name);
  }
  return name;
}
const escapedNames = new Map();

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
// `<prefix>external_peak_bytes` (prefix default 'heap_labels_'), one series per label set, on
// `registry`; with `groups: true` also the group counters of a session started with groupBy
// (`<prefix>group_*`, one series per group: bounded by maxGroups, whatever the number of label
// sets; counters end in `_total`); `sets: false` leaves the per-set gauges out. Returns a function
// that removes them again.
function registerPrometheus(registry, { prefix = 'heap_labels_', sets = true, groups = false } = {}) {
  if (registry === null || typeof registry !== 'object' || typeof registry.registerMetric !== 'function') {
    throw new TypeError('heap-labels: registerPrometheus: registry must be a prom-client Registry (e.g. client.register)');
  }
  if (typeof prefix !== 'string' || !/^[A-Za-z_:][A-Za-z0-9_:]*$/.test(prefix)) {
    throw new TypeError('heap-labels: registerPrometheus: prefix must match [A-Za-z_:][A-Za-z0-9_:]*');
  }
  if (typeof sets !== 'boolean' || typeof groups !== 'boolean') {
    throw new TypeError('heap-labels: registerPrometheus: sets and groups must be booleans');
  }
  const names = [];
  const register = (name, help, type, values) => {
    registry.registerMetric({
      name,
      help,
      type,
      aggregator: 'sum',
      get() {
        return { name, help, type, values: values(), aggregator: 'sum' };
      },
      reset() {},
    });
    names.push(name);
  };
  if (sets) {
    const read = sharedCounters();
    for (const [suffix, help, , value] of GAUGES) {
      register(`${prefix}${suffix}`, help, 'gauge', () =>
        read().groups.map((g) => ({ labels: labelsFor(g.labels), value: value(g) })),
      );
    }
  }
  if (groups) {
    const read = sharedGroupStats();
    for (const [suffix, help, , kind, value] of GROUP_METRICS) {
      const name = kind === 'counter' ? `${prefix}${suffix}_total` : `${prefix}${suffix}`;
      register(name, help, kind, () =>
        read().map((g) => ({
          labels: g.kind === 'labels' ? labelsFor(groupMetricLabels(g)) : KIND_SERIES[g.kind],
          value: Number(value(g)),
        })),
      );
    }
  }
  return function unregister() {
    for (const name of names) registry.removeSingleMetric(name);
  };
}

module.exports = { registerPrometheus, labelName };
