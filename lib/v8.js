'use strict';
// The heap-profile-labels API of node:v8, as the Node.js proposal (nodejs/node PR 62649) shapes it:
//
//   v8.withHeapProfileLabels(labels, fn)      fn's value; labels replace the outer ones
//   v8.setHeapProfileLabels(labels)           the current async context's labels ({} clears)
//   v8.startHeapProfile({ labels, groupBy, maxGroups, sampleInterval, stackDepth, ... })
//   v8.startHeapProfile(sampleInterval, stackDepth, flags)     Node.js 26's positional form
//     -> handle { getAllocationProfile(), getHeapStats({ advancePeakWindow }), stop(), [Symbol.dispose]() }
//
// `require('heap-labels/v8')` on any runtime (lib/entries/v8.js: the realm's instance's copy of this
// module); on the patched runtime `require('node:v8')` forwards to it (tools/patched-node/
// node-patches/<line>/). It is a view over the modules behind heap-labels' public API (this module is
// reached only through the realm's instance, so these are the instance's own): the same labels, label
// sets and session, so code mixing it with `require('heap-labels')` sees one profiler. It adds only what the proposal's
// shapes need: Node.js error codes (lib/node-errors.js), the profile as plain objects, `stop()`'s
// JSON text, the missing-AsyncContextFrame warning.

const { startupSnapshot } = require('node:v8');
const { types } = require('node:util');
const context = require('./context');
const { capabilities } = require('./capabilities');
const { startHeapProfile: startSession } = require('./profile');
const errors = require('./node-errors');

const dispose = Symbol.dispose ?? Symbol.for('nodejs.dispose');

// What a sample of a session without `labels: true` carries, and an unlabeled sample's labels.
const NO_LABELS = Object.freeze({});

// ---- labels ---------------------------------------------------------------------------------------

// Label objects that passed the checks below once and cannot change since (frozen): skipped next
// time, so a caller that keeps one frozen object per task type pays a WeakSet lookup.
const checked = new WeakSet();

// Node.js' own checks first (the proposal's error codes), then heap-labels' (limits, reserved
// keys, accessors), whose errors keep their message and get a code: ERR_INVALID_ARG_VALUE for a
// TypeError, ERR_OUT_OF_RANGE for a RangeError.
function checkLabels(labels) {
  if (checked.has(labels)) return;
  // A Proxy is refused before any of its traps runs (heap-labels refuses it too).
  if (labels === null || typeof labels !== 'object' || Array.isArray(labels) || types.isProxy(labels)) {
    throw errors.invalidArgType('labels', 'of type object (a plain object, not a Proxy)', labels);
  }
  for (const key of Object.keys(labels)) {
    const descriptor = Object.getOwnPropertyDescriptor(labels, key);
    if ('value' in descriptor && typeof descriptor.value !== 'string') {
      throw errors.invalidArgType(`labels.${key}`, 'of type string', descriptor.value);
    }
  }
  if (Object.isFrozen(labels)) checked.add(labels);
}

// Only heap-labels' own label errors get Node.js' codes; anything else that escapes the label code
// (a stack overflow in deeply nested calls is a RangeError too) passes unchanged, on every runtime.
function codedLabelError(error) {
  if (!isOwnLabelError(error)) return error;
  if (error instanceof RangeError) return errors.coded(error, 'ERR_OUT_OF_RANGE');
  if (error instanceof TypeError) return errors.coded(error, 'ERR_INVALID_ARG_VALUE');
  return error;
}

function isOwnLabelError(error) {
  return (
    (error instanceof RangeError || error instanceof TypeError) &&
    typeof error.message === 'string' &&
    error.message.startsWith('heap-labels: ')
  );
}

function withHeapProfileLabels(labels, fn) {
  checkLabels(labels);
  if (typeof fn !== 'function') throw errors.invalidArgType('fn', 'of type function', fn);
  let entered = false;
  try {
    return context.withHeapProfileLabels(labels, () => {
      entered = true;
      return fn();
    });
  } catch (error) {
    // Only heap-labels' own checks of the labels are re-coded, never what fn threw.
    throw entered ? error : codedLabelError(error);
  }
}

function setHeapProfileLabels(labels) {
  checkLabels(labels);
  try {
    context.setHeapProfileLabels(labels);
  } catch (error) {
    throw codedLabelError(error);
  }
}

// ---- options ---------------------------------------------------------------------------------------

// Node.js' defaults for startHeapProfile, and the proposal's `labels` (NODE_V8_DEFAULTS); the rest
// are heap-labels' (lib/session-options.js, the owner of both), which also checks every option's
// type and range and throws with Node.js' codes (ERR_INVALID_ARG_TYPE, ERR_OUT_OF_RANGE,
// ERR_INVALID_ARG_VALUE).
const { NODE_V8_DEFAULTS } = require('./session-options');
const NODE_DEFAULTS = Object.freeze({
  sampleInterval: NODE_V8_DEFAULTS.sampleInterval,
  stackDepth: NODE_V8_DEFAULTS.stackDepth,
});

// The options this API passes on: Node.js 26's, the proposal's groupBy and maxGroups, and
// heap-labels' own maxLabelSets and trackAllocations. Others are ignored, as Node.js does.
const PASSED_ON = [
  'sampleInterval',
  'stackDepth',
  'forceGC',
  'includeObjectsCollectedByMajorGC',
  'includeObjectsCollectedByMinorGC',
  'groupBy',
  'maxGroups',
  'maxLabelSets',
  'trackAllocations',
];

// V8's HeapProfiler::SamplingFlags, the `flags` of the positional form.
const heapProfilerConstants = Object.freeze({
  kSamplingNoFlags: 0,
  kSamplingForceGC: 1,
  kSamplingIncludeObjectsCollectedByMajorGC: 2,
  kSamplingIncludeObjectsCollectedByMinorGC: 4,
});
const ALL_FLAGS = 7;

// { labels, options }: whether samples show labels, and heap-labels' session options.
function objectOptions(options = {}) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw errors.invalidArgType('options', 'of type object', options);
  }
  const labels = options.labels ?? NODE_V8_DEFAULTS.labels;
  if (typeof labels !== 'boolean') throw errors.invalidArgType('options.labels', 'of type boolean', labels);
  if (options.groupBy !== undefined && !labels) {
    throw errors.invalidArgValue('options.groupBy', options.groupBy, 'requires options.labels to be true');
  }
  const passed = { ...NODE_DEFAULTS };
  for (const name of PASSED_ON) if (options[name] !== undefined) passed[name] = options[name];
  return { labels, options: passed };
}

// Node.js 26's positional form: (sampleInterval, stackDepth, flags), flags from
// heapProfilerConstants.
function positionalOptions(sampleInterval = NODE_DEFAULTS.sampleInterval, stackDepth = NODE_DEFAULTS.stackDepth, flags = 0) {
  if (typeof flags !== 'number') throw errors.invalidArgType('flags', 'of type number', flags);
  if (!Number.isInteger(flags) || flags < 0 || flags > ALL_FLAGS) throw errors.outOfRange('flags', `>= 0 && <= ${ALL_FLAGS}`, flags);
  return {
    labels: false,
    options: {
      sampleInterval,
      stackDepth,
      forceGC: (flags & heapProfilerConstants.kSamplingForceGC) !== 0,
      includeObjectsCollectedByMajorGC: (flags & heapProfilerConstants.kSamplingIncludeObjectsCollectedByMajorGC) !== 0,
      includeObjectsCollectedByMinorGC: (flags & heapProfilerConstants.kSamplingIncludeObjectsCollectedByMinorGC) !== 0,
    },
  };
}

// ---- the session ------------------------------------------------------------------------------------

const NO_ACF_WARNING = 'NODE_HEAP_PROFILE_LABELS_NO_ASYNC_CONTEXT_FRAME';
let warnedNoAsyncContextFrame = false;

function warnWithoutAsyncContextFrame() {
  if (warnedNoAsyncContextFrame || capabilities().asyncContextFrame) return;
  warnedNoAsyncContextFrame = true;
  process.emitWarning(
    'Heap profile labels need AsyncContextFrame (on by default in Node.js 24 and later and in ' +
      'the heap-labels runtime, --experimental-async-context-frame on Node.js 22); without it ' +
      'samples carry no labels',
    { code: NO_ACF_WARNING },
  );
}

// The heap-labels error a read of a session raises when the session ended underneath its handle
// (the inspector's HeapProfiler.stopSampling, or a later start that superseded it).
const isSessionGone = (error) => error?.code === 'ERR_HEAP_LABELS_SESSION_NOT_RUNNING';

function samplesOf(profile, labeled) {
  const samples = profile.samples;
  const out = new Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const s = samples[i];
    out[i] = {
      nodeId: s.nodeId,
      size: s.size,
      count: s.count,
      sampleId: s.sampleId,
      labels: labeled ? (s.labels ?? NO_LABELS) : NO_LABELS,
    };
  }
  return out;
}

function externalBytesOf(profile) {
  return profile.externalBytes.filter((e) => e.bytes > 0 && Object.keys(e.labels).length > 0);
}

class HeapProfileHandle {
  #handle;
  #labeled;
  #stopped = false;

  constructor(handle, labeled) {
    this.#handle = handle;
    this.#labeled = labeled;
  }

  // Runs a read of the session; undefined once the session is over (stopped here, by the
  // inspector, or superseded by a newer start).
  #read(read) {
    if (this.#stopped) return undefined;
    try {
      return read(this.#handle);
    } catch (error) {
      if (!isSessionGone(error)) throw error;
      this.#stopped = true;
      return undefined;
    }
  }

  // { head, samples: [{ nodeId, size, count, sampleId, labels }], externalBytes } for a session
  // with labels; without them every sample's labels are one frozen {} and externalBytes is
  // undefined. Does not stop the session.
  getAllocationProfile() {
    const profile = this.#read((h) => h.getAllocationProfile());
    if (profile === undefined) return undefined;
    try {
      return {
        head: profile.head,
        samples: samplesOf(profile, this.#labeled),
        externalBytes: this.#labeled ? externalBytesOf(profile) : undefined,
      };
    } finally {
      profile[dispose]();
    }
  }

  // The group counters of a session with groupBy (see heap-labels' HeapProfileHandle.getHeapStats).
  getHeapStats(options) {
    if (options !== undefined && (options === null || typeof options !== 'object')) {
      throw errors.invalidArgType('options', 'of type object', options);
    }
    const advancePeakWindow = options?.advancePeakWindow ?? false;
    if (typeof advancePeakWindow !== 'boolean') {
      throw errors.invalidArgType('options.advancePeakWindow', 'of type boolean', advancePeakWindow);
    }
    return this.#read((h) => h.getHeapStats({ advancePeakWindow }));
  }

  // The profile as JSON text (a DevTools .heapprofile), then undefined.
  stop() {
    if (this.#stopped) return undefined;
    let profile;
    try {
      profile = this.#handle.stop();
    } catch (error) {
      if (!isSessionGone(error)) throw error;
      return undefined;
    } finally {
      this.#stopped = true;
    }
    try {
      return JSON.stringify(profile.toHeapProfile());
    } finally {
      profile[dispose]();
    }
  }

  [dispose]() {
    this.stop();
  }
}

function startHeapProfile(...args) {
  const positional = typeof args[0] === 'number' || args.length > 1;
  const { labels, options } = positional ? positionalOptions(...args) : objectOptions(args[0]);
  if (labels && startupSnapshot.isBuildingSnapshot()) {
    throw errors.notSupportedInSnapshot('Heap profile labels');
  }
  if (labels) warnWithoutAsyncContextFrame();
  return new HeapProfileHandle(startSession(options), labels);
}

module.exports = {
  withHeapProfileLabels,
  setHeapProfileLabels,
  startHeapProfile,
  heapProfilerConstants,
  HeapProfileHandle,
};
