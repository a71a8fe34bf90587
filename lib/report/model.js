'use strict';
// Reading profiles into the label/site model the report, diff and HTML views share: a flat list of
// samples, each with its label set, its stack (leaf first) and its four figures. pprof files (what
// toPprof() and the agent write) are decoded with pprof-format; in-process AllocationProfile reads
// are converted from what they expose (samples, head, sampleInterval), so both paths meet here.

const fs = require('node:fs');
const zlib = require('node:zlib');

// The overflow set's key (core/src/labels/limits.rs): a group of its own, whatever key is grouped by.
const OVERFLOW_KEY = 'heap_labels.overflow';
// Samples without a location: allocated figures whose site did not fit (core "other sites").
const OTHER_SITES = Object.freeze({ name: '(other sites)', file: '', line: 0 });

// A user-facing error (bad input): the CLI prints its message on one line and exits with 2.
class ReportError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ReportError';
  }
}

const num = (v) => (typeof v === 'bigint' ? Number(v) : Number(v ?? 0));

// Frozen label objects with sorted keys, so that equal sets print and compare alike.
function canonicalLabels(pairs) {
  const labels = {};
  for (const [k, v] of [...pairs].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) labels[k] = v;
  return Object.freeze(labels);
}

// gzip'd (or raw) profile.proto bytes -> model. `source` names the input in errors and views.
function readPprof(bytes, source = 'profile') {
  let raw;
  const gzipped = bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
  try {
    raw = gzipped ? zlib.gunzipSync(bytes) : bytes;
  } catch (e) {
    throw new ReportError(`${source}: not a gzip'd pprof profile (${e.message})`);
  }
  // Loaded here, not with the module: the package entry point (diffProfiles) reaches this file,
  // and loading lib/ must not need the decoder (nor its resolution from every realm lib/ runs in).
  const { Profile } = require('pprof-format');
  let p;
  try {
    p = Profile.decode(raw);
  } catch (e) {
    throw new ReportError(`${source}: not a pprof profile (${e.message})`);
  }
  const strings = p.stringTable.strings;
  const str = (i) => strings[num(i)] ?? '';
  const types = p.sampleType.map((t) => ({ type: str(t.type), unit: str(t.unit) }));
  const index = (type) => types.findIndex((t) => t.type === type);
  const at = {
    inuseObjects: index('inuse_objects'),
    inuseBytes: index('inuse_space'),
    allocObjects: index('alloc_objects'),
    allocBytes: index('alloc_space'),
  };
  // Protobuf decoding accepts most bytes (empty input is an empty message): what makes a heap
  // profile is its sample types.
  if (at.inuseBytes < 0 || at.inuseObjects < 0) {
    const found = types.map((t) => t.type).join(', ') || 'none';
    throw new ReportError(`${source}: not a heap profile (sample types: ${found}; expected inuse_space, inuse_objects)`);
  }
  const hasAllocations = at.allocBytes >= 0 && at.allocObjects >= 0;

  const functions = new Map(p.function.map((f) => [num(f.id), f]));
  const frames = new Map();
  for (const loc of p.location) {
    // One line per location in this project's files; inlined frames of other writers: the
    // innermost (first) line is the allocating one.
    const line = loc.line[0];
    const fn = line && functions.get(num(line.functionId));
    frames.set(
      num(loc.id),
      Object.freeze({ name: fn ? str(fn.name) || '(anonymous)' : '(unknown)', file: fn ? str(fn.filename) : '', line: line ? num(line.line) : 0 }),
    );
  }
  const labelCache = new Map();
  const samples = p.sample.map((s) => {
    // String labels only (what this project writes); numeric ones (str unset) are not label sets.
    const pairs = s.label.filter((l) => num(l.str) !== 0 || num(l.num) === 0).map((l) => [str(l.key), str(l.str)]);
    const cacheKey = JSON.stringify(pairs);
    let labels = labelCache.get(cacheKey);
    if (labels === undefined) labelCache.set(cacheKey, (labels = canonicalLabels(pairs)));
    const stack = s.locationId.map((id) => frames.get(num(id)) ?? OTHER_SITES);
    const v = (i) => (i < 0 ? 0 : num(s.value[i]));
    return {
      labels,
      stack: stack.length ? stack : [OTHER_SITES],
      inuseBytes: v(at.inuseBytes),
      inuseObjects: v(at.inuseObjects),
      allocBytes: v(at.allocBytes),
      allocObjects: v(at.allocObjects),
    };
  });
  const timeNanos = num(p.timeNanos);
  const durationNanos = num(p.durationNanos);
  return {
    source,
    timeNanos,
    durationNanos,
    // time_nanos is when the session started, the same for every read of it: the read itself
    // happened duration_nanos later, which is what orders snapshots of one session.
    readNanos: timeNanos > 0 ? timeNanos + durationNanos : 0,
    period: num(p.period),
    hasAllocations,
    sampleTypes: types,
    samples,
  };
}

function readPprofFile(file) {
  let bytes;
  try {
    bytes = fs.readFileSync(file);
  } catch (e) {
    const why = e.code === 'ENOENT' ? 'no such file' : e.code === 'EISDIR' ? 'is a directory' : e.message;
    throw new ReportError(`${file}: cannot read: ${why}`);
  }
  return readPprof(bytes, file);
}

// V8's scaling of one sample (as core/src/profile.rs: count / (1 - exp(-size / interval))).
function estimateObjects(size, count, interval) {
  if (interval === 0 || size === 0) return count;
  return count / -Math.expm1(-size / interval);
}

// An AllocationProfile read -> model, from its public views: the call tree (head) gives each
// sample's stack, `samples` their sizes and labels. Live heap only: dead samples' allocated figures
// are in byLabel() and toPprof(), not in `samples`, so per-site allocated figures are 0 here.
function fromAllocationProfile(profile, source = 'profile') {
  if (!profile || typeof profile.byLabel !== 'function' || !Array.isArray(profile.samples)) {
    throw new TypeError('heap-labels: expected an AllocationProfile (handle.getAllocationProfile())');
  }
  const stackOf = new Map(); // node id -> frames leaf first, without (root)
  const walk = [[profile.head, []]];
  while (walk.length) {
    const [node, above] = walk.pop();
    const cf = node.callFrame;
    const isRoot = node === profile.head;
    const here = isRoot
      ? above
      : [Object.freeze({ name: cf.functionName || '(anonymous)', file: cf.url, line: cf.lineNumber + 1 }), ...above];
    stackOf.set(node.id, here.length ? here : [OTHER_SITES]);
    for (const child of node.children) walk.push([child, here]);
  }
  const unlabeled = Object.freeze({});
  const labelCache = new Map();
  const interval = profile.sampleInterval;
  const samples = profile.samples.map((s) => {
    let labels = unlabeled;
    if (s.labels) {
      labels = labelCache.get(s.labels);
      if (labels === undefined) labelCache.set(s.labels, (labels = canonicalLabels(Object.entries(s.labels))));
    }
    // One entry of `samples` is one sampled object (its `count` is V8's already scaled count).
    const objects = estimateObjects(s.size, 1, interval);
    return {
      labels,
      stack: stackOf.get(s.nodeId) ?? [OTHER_SITES],
      inuseBytes: objects * s.size,
      inuseObjects: objects,
      allocBytes: 0,
      allocObjects: 0,
    };
  });
  return {
    source,
    timeNanos: 0,
    durationNanos: 0,
    readNanos: 0,
    period: interval,
    hasAllocations: false,
    sampleTypes: [
      { type: 'inuse_objects', unit: 'count' },
      { type: 'inuse_space', unit: 'bytes' },
    ],
    samples,
  };
}

module.exports = { readPprof, readPprofFile, fromAllocationProfile, ReportError, OVERFLOW_KEY, canonicalLabels };
