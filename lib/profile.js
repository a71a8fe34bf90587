// @ts-check
'use strict';
// Heap profile sessions and the AllocationProfile view of one read.

const { native } = require('./native');
const { internPairs, labelsOfSets, isReservedKey, reservedReason } = require('./labels');
const { RULES, DEFAULTS } = require('./session-options');
const { coded } = require('./node-errors');
const { readHeapStats } = require('./group-stats');
const { readRetainers } = require('./retainers');
const { writeSnapshot } = require('./labeled-snapshot');
// ./otlp (stateless: the options of an OTLP encoding) is loaded by toOtlp(), its one user here: a
// process that only starts a session (the preload) does not parse it at start-up. Modules that reach
// the addon or hold state load with this one: a lazy require() after a module registry reset (Jest,
// hot reload) would load fresh copies of them, with a fresh addon state, under the realm's first
// instance (lib/instance.js).

const dispose = Symbol.dispose ?? Symbol.for('nodejs.dispose');

// Option errors carry Node.js' codes (ERR_INVALID_ARG_TYPE, ERR_OUT_OF_RANGE, ERR_INVALID_ARG_VALUE),
// which the node:v8 API (lib/v8.js) promises too.
function checkInteger(name, value, min, max) {
  if (typeof value !== 'number') {
    throw coded(
      new TypeError(`heap-labels: startHeapProfile: option ${name} must be a number, got ${typeof value}`),
      'ERR_INVALID_ARG_TYPE',
    );
  }
  if (!Number.isInteger(value) || value < min || value > max) {
    throw coded(
      new RangeError(`heap-labels: startHeapProfile: option ${name} must be an integer in ${min}..${max}, got ${value}`),
      'ERR_OUT_OF_RANGE',
    );
  }
  return value;
}

function checkBoolean(name, value) {
  if (typeof value !== 'boolean') {
    throw coded(
      new TypeError(`heap-labels: startHeapProfile: option ${name} must be a boolean, got ${typeof value}`),
      'ERR_INVALID_ARG_TYPE',
    );
  }
  return value;
}

// groupBy: `rule.maxKeys` at most, distinct, non-empty, of at most `rule.maxKeyBytes` bytes of UTF-8.
function checkGroupBy(name, groupBy, rule) {
  const invalid = (reason) =>
    coded(new TypeError(`heap-labels: startHeapProfile: option ${name} ${reason}`), 'ERR_INVALID_ARG_VALUE');
  if (!Array.isArray(groupBy)) {
    throw coded(
      new TypeError(`heap-labels: startHeapProfile: option ${name} must be an array of label keys`),
      'ERR_INVALID_ARG_TYPE',
    );
  }
  if (groupBy.length < 1 || groupBy.length > rule.maxKeys) {
    throw invalid(`must have 1 to ${rule.maxKeys} keys, got ${groupBy.length}`);
  }
  const seen = new Set();
  for (const key of groupBy) {
    if (typeof key !== 'string' || key.length === 0) throw invalid(`keys must be non-empty strings, got ${JSON.stringify(key) ?? typeof key}`);
    if (Buffer.byteLength(key, 'utf8') > rule.maxKeyBytes) {
      throw invalid(`keys must be at most ${rule.maxKeyBytes} bytes of UTF-8 (${JSON.stringify(key.slice(0, 40))}... is longer)`);
    }
    // A key no label can have would make a group that nothing is ever charged to.
    if (!key.isWellFormed()) throw invalid(`keys must be well-formed Unicode (${JSON.stringify(key.slice(0, 40))} is not)`);
    if (isReservedKey(key)) throw invalid(`has the key ${JSON.stringify(key)}, which no label can have: ${reservedReason(key)}`);
    if (seen.has(key)) throw invalid(`has the key ${JSON.stringify(key)} twice`);
    seen.add(key);
  }
  return [...groupBy];
}

// A rule's type (lib/session-options.js) -> its check: (name, value, rule) -> the value.
const CHECKS = {
  integer: (name, value, rule) => checkInteger(name, value, rule.min, rule.max),
  boolean: (name, value) => checkBoolean(name, value),
  keys: (name, value, rule) => (value === undefined ? undefined : checkGroupBy(name, value, rule)),
};

function validateOptions(options) {
  if (options === undefined) return { ...DEFAULTS, groupBy: undefined };
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw coded(new TypeError('heap-labels: startHeapProfile: options must be an object'), 'ERR_INVALID_ARG_TYPE');
  }
  for (const key of Object.keys(options)) {
    if (!Object.hasOwn(RULES, key)) {
      throw coded(
        new TypeError(`heap-labels: startHeapProfile: unknown option ${JSON.stringify(key)}`),
        'ERR_INVALID_ARG_VALUE',
      );
    }
  }
  if (options.maxGroups !== undefined && options.groupBy === undefined) {
    throw coded(
      new TypeError('heap-labels: startHeapProfile: option maxGroups requires groupBy (it caps the groups of a groupBy session)'),
      'ERR_INVALID_ARG_VALUE',
    );
  }
  const checked = {};
  for (const [name, rule] of Object.entries(RULES)) {
    const value = options[name] === undefined ? DEFAULTS[name] : options[name];
    checked[name] = CHECKS[rule.type](name, value, rule);
  }
  return checked;
}

const UNLABELED = internPairs([], []);

// getAllocationProfile({ resetAllocations }): whether this read starts a new allocation window.
function readOptions(options) {
  if (options === undefined) return false;
  if (options === null || typeof options !== 'object') {
    throw new TypeError('heap-labels: getAllocationProfile: options must be an object or undefined');
  }
  const { resetAllocations = false } = options;
  if (typeof resetAllocations !== 'boolean') {
    throw new TypeError('heap-labels: getAllocationProfile: resetAllocations must be a boolean');
  }
  return resetAllocations;
}

// Label-set id of an unlabeled sample in the native sample columns (u32::MAX).
const NO_LABEL_SET = 0xffffffff;

// The public view of one read of the profile. Labels are the interned frozen objects: the read
// names its label sets by id, and lib/labels.js knows the labels of most by their keys (strings
// cross only for the others). The native copy behind it is reported to V8 as external memory (so
// unread profiles are collected even in a process that allocates little) and freed at once by
// [Symbol.dispose]().

class AllocationProfile {
  /** @type {import('./native-addon').NativeProfile} */
  #native;
  #sets; // label-set id -> labels, for the sets of this read
  #samples;
  #head;

  /** @param {import('./native-addon').NativeProfile} nativeProfile */
  constructor(nativeProfile) {
    this.#native = nativeProfile;
    this.sampleInterval = nativeProfile.sampleInterval;
    this.hasAllocations = nativeProfile.hasAllocations;
    const { ids, generations } = nativeProfile.labelSetKeys();
    this.#sets = labelsOfSets(ids, generations, ids.length, (missing) => nativeProfile.labelSetPairs(missing));
    this.externalBytes = nativeProfile.externalBytes().map((e) => ({
      labels: e.labelSet === undefined || e.labelSet === null ? UNLABELED : this.#sets[e.labelSet],
      bytes: e.bytes,
    }));
  }

  // One object per sample, built on first use from typed-array columns: reads that only
  // aggregate or export (byLabel, toPprof) never pay for 100k JS objects.
  get samples() {
    if (this.#samples === undefined) {
      const { nodeIds, sizes, counts, sampleIds, labelSets } = this.#native.sampleColumns();
      const samples = new Array(nodeIds.length);
      for (let i = 0; i < nodeIds.length; i++) {
        const sample = { nodeId: nodeIds[i], size: sizes[i], count: counts[i], sampleId: sampleIds[i] };
        if (labelSets[i] !== NO_LABEL_SET) sample.labels = this.#sets[labelSets[i]];
        samples[i] = sample;
      }
      this.#samples = samples;
    }
    return this.#samples;
  }

  // DevTools-shaped call tree (the `head` of the .heapprofile; the samples are not serialized for it).
  get head() {
    if (this.#head === undefined) this.#head = JSON.parse(this.#native.headJson());
    return this.#head;
  }

  byLabel(key) {
    if (key !== undefined && (typeof key !== 'string' || key.length === 0)) {
      throw new TypeError('heap-labels: byLabel: key must be a non-empty string or undefined');
    }
    const c = this.#native.byLabel(key);
    const groups = new Array(c.bytes.length);
    for (let i = 0; i < groups.length; i++) {
      let labels = UNLABELED;
      if (c.labelSets[i] !== NO_LABEL_SET) labels = this.#sets[c.labelSets[i]];
      else if (typeof c.values[i] === 'string') labels = internPairs([key], [c.values[i]]);
      const group = { labels, bytes: c.bytes[i], objects: c.objects[i], externalBytes: c.externalBytes[i] };
      if (this.hasAllocations) {
        group.allocatedBytes = c.allocatedBytes[i];
        group.allocatedObjects = c.allocatedObjects[i];
      }
      groups[i] = group;
    }
    return groups;
  }

  toPprof() {
    return this.#native.toPprof();
  }

  // OTLP profiles (v1development) ProfilesData, protobuf-encoded, uncompressed: the same samples
  // as toPprof(), one OTLP profile per sample type (lib/otlp.js: the resource).
  toOtlp(options) {
    return this.#native.toOtlp(require('./otlp').otlpOptions(options, 'toOtlp'));
  }

  toHeapProfile() {
    return JSON.parse(this.#native.toHeapProfileJson());
  }

  // Frees the native copy now (what was already converted, e.g. `samples` once read, stays).
  [dispose]() {
    this.#native.dispose();
  }
}

// Handle -> native session id, for the modules that read a running session natively (dumps).
const sessions = new WeakMap();

class HeapProfileHandle {
  #session;
  #last;
  #stopped = false;

  constructor(session) {
    this.#session = session;
    sessions.set(this, session);
  }

  getAllocationProfile(options) {
    const resetAllocations = readOptions(options);
    if (this.#stopped) return this.#last;
    return new AllocationProfile(native.readProfile(this.#session, resetAllocations));
  }

  stop() {
    if (!this.#stopped) {
      try {
        this.#last = new AllocationProfile(native.stopProfile(this.#session));
      } finally {
        this.#stopped = true;
      }
    }
    return this.#last;
  }

  // The session's group counters (sessions started with groupBy): { sampleInterval, peakWindowId,
  // overflowCount, groups }; undefined without groupBy and once the session is over. With
  // advancePeakWindow the read closes the current external-peak window and publishes its peak.
  getHeapStats(options) {
    const advancePeakWindow = statsOptions(options);
    if (this.#stopped) return undefined;
    return readHeapStats(this.#session, advancePeakWindow);
  }

  // What retains the session's live sampled objects, per label group (by full set, or by `key`'s
  // value): one heap snapshot joined to the samples, on the labeled runtime (sample-labels API
  // version 3). Pauses the app for the snapshot and its walk; `{ force: true }` skips the room check.
  retainers(key, options) {
    return readRetainers(this.#session, key, options);
  }

  // A heap snapshot file (v8.writeHeapSnapshot's); with `labels: true` (labeled runtime, session
  // running) a node per label group with weak edges to its sampled objects. Pauses the app.
  writeHeapSnapshot(options) {
    return writeSnapshot(this.#session, options);
  }

  [dispose]() {
    this.stop();
  }
}

function statsOptions(options) {
  if (options === undefined) return false;
  if (options === null || typeof options !== 'object') {
    throw coded(new TypeError('heap-labels: getHeapStats: options must be an object or undefined'), 'ERR_INVALID_ARG_TYPE');
  }
  const { advancePeakWindow = false } = options;
  if (typeof advancePeakWindow !== 'boolean') {
    throw coded(new TypeError('heap-labels: getHeapStats: advancePeakWindow must be a boolean'), 'ERR_INVALID_ARG_TYPE');
  }
  return advancePeakWindow;
}

function startHeapProfile(options) {
  const o = validateOptions(options);
  const session = native.startProfile({
    sampleInterval: o.sampleInterval,
    stackDepth: o.stackDepth,
    includeObjectsCollectedByMajorGC: o.includeObjectsCollectedByMajorGC,
    includeObjectsCollectedByMinorGC: o.includeObjectsCollectedByMinorGC,
    forceGc: o.forceGC,
    trackAllocations: o.trackAllocations,
    maxLabelSets: o.maxLabelSets,
    groupBy: o.groupBy,
    maxGroups: o.maxGroups,
  });
  return new HeapProfileHandle(session);
}

// The native session id of a handle (undefined for anything else).
function sessionOf(handle) {
  return sessions.get(handle);
}

module.exports = { startHeapProfile, sessionOf };
