// @ts-check
'use strict';
// Heap snapshot files (`handle.writeHeapSnapshot({ labels, key, path })`): V8's snapshot, and with
// labels one node per label group with weak edges to its sampled objects, so that DevTools finds
// a label's objects by name (docs/architecture.md, "The labeled .heapsnapshot"). The native call
// takes, writes and rewrites the file; this checks the options, refuses labels on a runtime that
// cannot join samples to a snapshot, and gives the groups their frozen label objects.

const path = require('node:path');
const { native } = require('./native');
const { coded } = require('./node-errors');
const { wayOut } = require('./capabilities');
const { withLabels, checkKey } = require('./retainers');

const PREFIX = 'heap-labels: writeHeapSnapshot';

function invalid(message) {
  return coded(new TypeError(`${PREFIX}: ${message}`), 'ERR_INVALID_ARG_TYPE');
}

function checkOptions(options) {
  if (options === undefined) return { labels: false, key: undefined, file: undefined };
  if (options === null || typeof options !== 'object') throw invalid('options must be an object or undefined');
  const { labels = false, key, path: file } = options;
  if (typeof labels !== 'boolean') throw invalid('labels must be a boolean');
  if (file !== undefined && (typeof file !== 'string' || file.length === 0 || file.includes('\0'))) {
    throw invalid('path must be a non-empty string (without NUL) or undefined');
  }
  if (key !== undefined && !labels) throw invalid('key groups the label nodes: it needs labels: true');
  try {
    checkKey(key);
  } catch {
    throw invalid('key must be a non-empty string or undefined');
  }
  return { labels, key, file };
}

// Labels join the samples to the snapshot by the objects' ids, as retainers do: without the
// sample-labels API version 3 the file would be a guess, so nothing is taken.
function checkLabelsSupported() {
  const caps = native.nativeCapabilities();
  if (caps.retainers) return;
  const reason = caps.retainersReason;
  const cut = reason.indexOf('); ');
  const why = cut < 0 ? reason : reason.slice(cut + 3);
  throw coded(
    new Error(
      `${PREFIX}: labels: a labeled heap snapshot needs the labeled runtime (sample-labels API version 3: ` +
        `the samples' heap snapshot object ids); ${why}${wayOut()}`,
    ),
    'ERR_HEAP_LABELS_UNSUPPORTED',
  );
}

// Writes the file; see the .d.ts for the options and the answer.
function writeSnapshot(session, options) {
  const { labels, key, file } = checkOptions(options);
  if (labels) checkLabelsSupported();
  const answer = native.writeHeapSnapshot(session, file === undefined ? undefined : path.resolve(file), labels, key);
  const result = JSON.parse(answer.json);
  result.path = path.resolve(result.path);
  if (result.groups !== undefined) result.groups = withLabels(result.groups, key, answer.labelSets);
  return result;
}

module.exports = { writeSnapshot };
