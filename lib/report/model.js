'use strict';
// Reading profiles into the label/site model the report, diff and HTML views share: a flat list of
// samples, each with its label set, its stack (leaf first) and its four figures. pprof files (what
// toPprof() and the agent write, or anyone else: untrusted input) are decoded by ./pprof-decode.js
// within bounds; in-process AllocationProfile reads are converted from what they expose (samples,
// head, sampleInterval), so both paths meet here.

const fs = require('node:fs');
const zlib = require('node:zlib');
const { decodeProfile, DecodeError } = require('./pprof-decode');
const { printable } = require('./format');

// The largest profile read, decompressed (the CLI's --max-inflated-mib raises it): a gzip bomb
// stops here. Repeated elements are bounded by the size too (one per ELEMENT_BYTES bytes), which
// keeps the memory of the decoded profile within a small multiple of it.
const DEFAULT_MAX_INFLATED_BYTES = 64 * 1024 * 1024;
const ELEMENT_BYTES = 16;

// The overflow set's key (core/src/labels/limits.rs): a group of its own, whatever key is grouped by.
const OVERFLOW_KEY = 'heap_labels.overflow';
// Samples without a location: allocated figures whose site did not fit (core "other sites").
const OTHER_SITES = Object.freeze({ name: '(other sites)', file: '', line: 0 });

// A user-facing error (bad input): the CLI prints its message on one line and exits with 2. The
// message can carry text from the file (sample type names, say) or the command line, so it is made
// printable here, once for every message: no file can forge lines or send control sequences.
class ReportError extends Error {
  constructor(message) {
    super(printable(message));
    this.name = 'ReportError';
  }
}

const num = (v) => (typeof v === 'bigint' ? Number(v) : Number(v ?? 0));

// Frozen label objects with sorted keys, so that equal sets print and compare alike. Keys are
// defined, not assigned: a key "__proto__" from a file is a label like any other.
function canonicalLabels(pairs) {
  const labels = {};
  for (const [k, v] of [...pairs].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
    Object.defineProperty(labels, k, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return Object.freeze(labels);
}

// The one limit on how large a profile may be once decompressed, for every reader of profile
// files (report, diff and export --otlp): gzip'd (or raw) profile.proto bytes -> the raw bytes, at
// most `maxInflatedBytes`; a ReportError naming `source` and the limit otherwise.
function inflateProfile(bytes, source = 'profile', { maxInflatedBytes = DEFAULT_MAX_INFLATED_BYTES } = {}) {
  let raw;
  const gzipped = bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
  try {
    raw = gzipped ? zlib.gunzipSync(bytes, { maxOutputLength: maxInflatedBytes }) : bytes;
  } catch (e) {
    if (e.code === 'ERR_BUFFER_TOO_LARGE') throw new ReportError(`${source}: decompresses to more than ${limitText(maxInflatedBytes)}`);
    throw new ReportError(`${source}: not a gzip'd pprof profile (${e.message})`);
  }
  if (raw.length > maxInflatedBytes) throw new ReportError(`${source}: larger than ${limitText(maxInflatedBytes)}`);
  return Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
}

const limitText = (maxInflatedBytes) => `${formatMiB(maxInflatedBytes)} (raise it with --max-inflated-mib)`;

// Decoder errors as ReportErrors naming the input (and the limit, when it is what refused).
function asReportError(e, source, maxInflatedBytes) {
  if (!(e instanceof DecodeError)) return e;
  return new ReportError(`${source}: not a pprof profile (${e.message}${/repeated elements/.test(e.message) ? `; the limit follows ${limitText(maxInflatedBytes)}` : ''})`);
}

// Raw profile.proto bytes -> what every reader of a heap profile needs before its samples: the
// decoded tables (`p`, without samples when `samples` is false), a string lookup, the sample types
// and where each figure is among a sample's values, and the frames by location id. Throws a
// ReportError for what is not a heap profile.
function profileHeader(raw, source, { maxInflatedBytes = DEFAULT_MAX_INFLATED_BYTES, samples = true } = {}) {
  let p;
  try {
    p = decodeProfile(raw, { maxElements: Math.max(1024, Math.floor(maxInflatedBytes / ELEMENT_BYTES)), samples });
  } catch (e) {
    throw asReportError(e, source, maxInflatedBytes);
  }
  const strings = p.stringTable;
  const str = (i) => strings[i] ?? '';
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
  const timeNanos = num(p.timeNanos);
  const durationNanos = num(p.durationNanos);
  return {
    p,
    str,
    types,
    at,
    frames,
    meta: {
      source,
      timeNanos,
      durationNanos,
      // time_nanos is when the session started, the same for every read of it: the read itself
      // happened duration_nanos later, which is what orders snapshots of one session.
      readNanos: timeNanos > 0 ? timeNanos + durationNanos : 0,
      period: num(p.period),
      hasAllocations,
      sampleTypes: types,
    },
  };
}

// String labels only (what this project writes); numeric ones (str unset) are not label sets.
const isStringLabel = (l) => num(l.str) !== 0 || num(l.num) === 0;

// The sample values a sum cannot take as they are, noticed while reading: negative values (pprof
// allows them; diffs of profiles have them) are summed as they are, so a group's figure is a net
// amount; values beyond Number.MAX_SAFE_INTEGER, or sums that can get there, are rounded to the
// nearest double (approximate, never wrapped). warnings() says so, once per kind, naming the
// sample types and how many values.
class ValueCheck {
  constructor(types) {
    this.types = types;
    this.negative = new Array(types.length).fill(0);
    this.huge = new Array(types.length).fill(0);
    this.absSum = new Array(types.length).fill(0);
  }

  note(values) {
    const n = Math.min(values.length, this.types.length);
    for (let i = 0; i < n; i++) {
      const v = values[i];
      if (v < 0) this.negative[i]++;
      const a = Math.abs(v);
      if (a > Number.MAX_SAFE_INTEGER) this.huge[i]++;
      this.absSum[i] += a;
    }
  }

  warnings(source) {
    const out = [];
    const list = (counts) =>
      this.types
        .map((t, i) => [t.type || `type ${i}`, counts[i]])
        .filter(([, c]) => c > 0)
        .map(([t, c]) => `${c} ${t}`)
        .join(', ');
    const negatives = this.negative.reduce((a, b) => a + b, 0);
    if (negatives > 0) {
      out.push(`${source}: ${negatives} negative sample value${negatives === 1 ? '' : 's'} (${list(this.negative)}): summed as they are, so figures are net amounts`);
    }
    const huge = this.huge.reduce((a, b) => a + b, 0);
    const overflowing = this.types.map((t, i) => (this.absSum[i] > Number.MAX_SAFE_INTEGER ? t.type || `type ${i}` : null)).filter((t) => t !== null);
    if (huge > 0 || overflowing.length > 0) {
      const values = huge > 0 ? `${huge} sample value${huge === 1 ? '' : 's'} beyond 2^53 - 1 (${list(this.huge)})` : 'no single value beyond 2^53 - 1';
      const sums = overflowing.length > 0 ? `; sums of ${overflowing.join(', ')} can pass it` : '';
      out.push(`${source}: ${values}${sums}: such figures are rounded to the nearest representable number (approximate, not exact)`);
    }
    return out;
  }
}

// gzip'd (or raw) profile.proto bytes -> model. `source` names the input in errors and views;
// `maxInflatedBytes` bounds the decompressed size (default 64 MiB). `warnings`: what the reader
// noticed about the values (ValueCheck), for the caller to show.
function readPprof(bytes, source = 'profile', { maxInflatedBytes = DEFAULT_MAX_INFLATED_BYTES } = {}) {
  const raw = inflateProfile(bytes, source, { maxInflatedBytes });
  const { p, str, types, at, frames, meta } = profileHeader(raw, source, { maxInflatedBytes });
  const check = new ValueCheck(types);
  const labelCache = new Map();
  const samples = p.sample.map((s) => {
    const pairs = s.label.filter(isStringLabel).map((l) => [str(l.key), str(l.str)]);
    const cacheKey = JSON.stringify(pairs);
    let labels = labelCache.get(cacheKey);
    if (labels === undefined) labelCache.set(cacheKey, (labels = canonicalLabels(pairs)));
    const stack = s.locationId.map((id) => frames.get(num(id)) ?? OTHER_SITES);
    check.note(s.value);
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
  return { ...meta, samples, warnings: check.warnings(source) };
}

const formatMiB = (bytes) => `${+(bytes / 1048576).toFixed(2)} MiB`;

// A file's bytes, refused beyond `maxInflatedBytes` before they are read (a compressed profile is
// never larger than what it decompresses to, give or take gzip's header).
function readPprofFile(file, { maxInflatedBytes = DEFAULT_MAX_INFLATED_BYTES } = {}) {
  return readPprof(readProfileBytes(file, { maxInflatedBytes }), file, { maxInflatedBytes });
}

// A profile file's bytes (for any reader of them: the report, export --otlp), refused beyond
// `maxInflatedBytes` before more is read; ReportError naming the file.
function readProfileBytes(file, { maxInflatedBytes = DEFAULT_MAX_INFLATED_BYTES } = {}) {
  const max = maxInflatedBytes + 1024;
  const tooLarge = () => new ReportError(`${file}: larger than ${limitText(maxInflatedBytes)}`);
  let fd;
  try {
    fd = fs.openSync(file, 'r');
    if (fs.fstatSync(fd).size > max) throw tooLarge();
    // Read in chunks up to the limit: a device or a pipe has no size (/dev/zero never ends).
    const chunks = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(1 << 20, max + 1 - total));
      const n = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      chunks.push(n === chunk.length ? chunk : chunk.subarray(0, n));
      total += n;
      if (total > max) throw tooLarge();
    }
    return Buffer.concat(chunks, total);
  } catch (e) {
    if (e instanceof ReportError) throw e;
    const why = e.code === 'ENOENT' ? 'no such file' : e.code === 'EISDIR' ? 'is a directory' : e.message;
    throw new ReportError(`${file}: cannot read: ${why}`);
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
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
    warnings: [],
  };
}

module.exports = {
  readPprof,
  readPprofFile,
  readProfileBytes,
  inflateProfile,
  profileHeader,
  ValueCheck,
  isStringLabel,
  DEFAULT_MAX_INFLATED_BYTES,
  fromAllocationProfile,
  ReportError,
  OVERFLOW_KEY,
  OTHER_SITES,
  canonicalLabels,
};
