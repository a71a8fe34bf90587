// @ts-check
'use strict';
// Retainers per label (`handle.retainers(key)`): what keeps each label group's live sampled objects
// alive, from one heap snapshot joined to the session's samples (docs/architecture.md, "Retainers
// per label"). The native call does the snapshot, the walk and the aggregation; this turns its
// answer into the public shape: each group's labels as the interned frozen objects `byLabel()`
// hands out.

const { native } = require('./native');
const { internPairs, labelsOfSets } = require('./labels');
const { coded } = require('./node-errors');
const { wayOut } = require('./capabilities');

const UNLABELED = internPairs([], []);

function checkKey(key) {
  if (key !== undefined && (typeof key !== 'string' || key.length === 0)) {
    throw coded(new TypeError('heap-labels: retainers: key must be a non-empty string or undefined'), 'ERR_INVALID_ARG_TYPE');
  }
}

// `{ force: true }` skips the room check (an estimate, see src/retainers.rs's check_room), for one
// who knows the heap needs less; never the check for another snapshot.
function checkForce(options) {
  if (options === undefined) return false;
  if (options === null || typeof options !== 'object' || (options.force !== undefined && typeof options.force !== 'boolean')) {
    throw coded(new TypeError('heap-labels: retainers: options must be an object whose force is a boolean'), 'ERR_INVALID_ARG_TYPE');
  }
  return options.force === true;
}

// On a runtime without the sample-labels API version 3 the answer would be a guess: refuse, with
// the reason and the way out, before anything is taken.
function checkSupported() {
  const caps = native.nativeCapabilities();
  if (!caps.retainers) {
    throw coded(new Error(`heap-labels: ${caps.retainersReason}${wayOut()}`), 'ERR_HEAP_LABELS_UNSUPPORTED');
  }
}

function groupLabels(group, key, sets) {
  if (group.labelSet !== undefined) return sets[group.labelSet] ?? UNLABELED;
  if (typeof group.value === 'string') return internPairs([key], [group.value]);
  return UNLABELED;
}

// The running session's retainers per label group (by full set, or by `key`'s value). Pauses the
// app for a heap snapshot and its walk; see the .d.ts for the shape and `options`.
function readRetainers(session, key, options) {
  checkKey(key);
  const force = checkForce(options);
  checkSupported();
  const answer = native.retainers(session, key, force);
  const result = JSON.parse(answer.json);
  result.groups = withLabels(result.groups, key, answer.labelSets);
  if (result.key === null) delete result.key;
  return result;
}

// Native groups (`labelSet`: the id of one of `labelSets`, or `value`: of `key`) with their labels
// as the frozen objects byLabel() hands out, first. Also the labeled heap snapshot's groups
// (lib/labeled-snapshot.js).
function withLabels(groups, key, labelSets) {
  const ids = labelSets.map((s) => s.id);
  const generations = labelSets.map((s) => s.generation);
  const sets = labelsOfSets(ids, generations, ids.length, (missing) => labelSets.filter((s) => missing.includes(s.id)));
  return groups.map(({ labelSet, value, ...group }) => ({
    labels: groupLabels({ labelSet, value }, key, sets),
    ...group,
  }));
}

module.exports = { readRetainers, withLabels, checkKey };
