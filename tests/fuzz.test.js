'use strict';
// Property and fuzz tests (fast-check): what any input may do to the readers of untrusted files,
// the label API and the agent's options. Each property runs a fixed number of cases with a fixed
// seed per run of the suite (printed on failure, so a failure can be replayed), bounded in time.
//
//   - pprof readers (lib/report/model.js; the addon's pprofToOtlp): random bytes and mutations of
//     real profiles give a model or a ReportError, never another error, each in bounded time; the
//     CLI answers exit 0 or exit 2 with one line.
//   - the label API: valid label objects intern to one frozen object whatever the key order,
//     invalid ones throw TypeError or RangeError naming the problem, never anything else.
//   - the agent's options: any value from code or the environment is accepted or refused with
//     ERR_HEAP_LABELS_CONFIG, in bounded time.
//   - the name mappings: Prometheus label names and the report's printable text are injective.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');
const fc = require('fast-check');
const { root, tempDir } = require('./helpers');
const hl = require('../lib');
const { readPprof, ReportError } = require('../lib/report/model');
const { groupModel, callTree } = require('../lib/report/aggregate');
const { reportText } = require('../lib/report/text');
const { reportHtml } = require('../lib/report/html');
const { printable, labelsText } = require('../lib/report/format');
const { labelName } = require('../lib/prometheus');
const { fromOptions, fromEnv } = require('../lib/config');

const SEED = Number(process.env.HEAP_LABELS_FUZZ_SEED ?? Date.now() % 2 ** 31);
const params = (numRuns) => ({ seed: SEED, numRuns, endOnFailure: true });
const tmp = tempDir('fuzz');
test.before(() => console.log(`fuzz seed ${SEED} (HEAP_LABELS_FUZZ_SEED=${SEED} replays it)`));

// A real profile of this process to mutate: labeled where the runtime captures labels.
function realProfile() {
  const handle = hl.startHeapProfile({ sampleInterval: 256 });
  const kept = [];
  for (let i = 0; i < 200; i++) {
    hl.withHeapProfileLabels({ route: `/r${i % 7}`, tenant: `t${i % 3}` }, () => kept.push({ i, s: `x${i}` }, new Array(8).fill(i)));
  }
  const gz = handle.getAllocationProfile().toPprof();
  handle.stop();
  return { gz: Buffer.from(gz), raw: zlib.gunzipSync(gz) };
}
const base = realProfile();

// Everything a model may be fed to: the views must take any model the reader makes.
function useModel(model) {
  reportText(model, { top: 3 });
  reportText(model, { key: 'route', top: 1 });
  for (const g of groupModel(model).groups) callTree(g.samples);
  reportHtml([model]);
}

// A mutation of `bytes`: flipped, inserted, deleted or overwritten bytes, a truncation, or a
// varint widened (the lengths and ids of the message shift).
const mutation = (bytes) =>
  fc.array(
    fc.oneof(
      fc.record({ op: fc.constant('flip'), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
      fc.record({ op: fc.constant('set'), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
      fc.record({ op: fc.constant('insert'), at: fc.nat(), value: fc.uint8Array({ minLength: 1, maxLength: 12 }) }),
      fc.record({ op: fc.constant('delete'), at: fc.nat(), length: fc.integer({ min: 1, max: 16 }) }),
      fc.record({ op: fc.constant('truncate'), at: fc.nat() }),
    ),
    { minLength: 1, maxLength: 6 },
  ).map((ops) => {
    let b = Buffer.from(bytes);
    for (const o of ops) {
      const at = b.length ? o.at % b.length : 0;
      if (o.op === 'flip' && b.length) b[at] ^= 1 << o.bit;
      else if (o.op === 'set' && b.length) b[at] = o.value;
      else if (o.op === 'insert') b = Buffer.concat([b.subarray(0, at), o.value, b.subarray(at)]);
      else if (o.op === 'delete') b = Buffer.concat([b.subarray(0, at), b.subarray(at + o.length)]);
      else if (o.op === 'truncate') b = b.subarray(0, at);
    }
    return b;
  });

// CPU milliseconds this process has used: the bounds below are on work done (a reader that goes
// super-linear on some input), not on wall time, which a loaded machine stretches without limit.
function cpuMs() {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

// readPprof: a model or a ReportError, within `ms` of CPU time.
function readsOrRefuses(bytes, ms = 2000) {
  const started = cpuMs();
  let model;
  try {
    model = readPprof(bytes, 'fuzz', { maxInflatedBytes: 1024 * 1024 });
  } catch (err) {
    if (!(err instanceof ReportError)) throw err;
    assert.doesNotMatch(err.message, /\n/, 'one line');
  }
  if (model) useModel(model);
  const took = cpuMs() - started;
  assert.ok(took < ms, `${took.toFixed(0)} ms of CPU for ${bytes.length} bytes`);
  return model;
}

test('pprof reader: random bytes give a model or a ReportError, in bounded time', () => {
  fc.assert(fc.property(fc.uint8Array({ maxLength: 4096 }), (bytes) => void readsOrRefuses(Buffer.from(bytes))), params(3000));
  // The same behind a gzip header.
  fc.assert(fc.property(fc.uint8Array({ maxLength: 2048 }), (bytes) => void readsOrRefuses(zlib.gzipSync(bytes))), params(500));
});

test('pprof reader: mutations of a real profile give a model or a ReportError, in bounded time', () => {
  assert.ok(readsOrRefuses(base.gz).samples.length > 0);
  let models = 0;
  fc.assert(
    fc.property(mutation(base.raw), (bytes) => {
      if (readsOrRefuses(bytes)) models++;
    }),
    params(1500),
  );
  fc.assert(fc.property(mutation(base.gz), (bytes) => void readsOrRefuses(bytes)), params(300));
  assert.ok(models > 0, 'some mutations still decode (the properties reach the views)');
});

test('the CLI on mutated profiles: exit 0, or exit 2 with one line (no stack trace)', () => {
  const files = fc.sample(mutation(base.gz), { seed: SEED, numRuns: 6 }).concat(fc.sample(mutation(base.raw), { seed: SEED, numRuns: 6 }));
  for (const [i, bytes] of files.entries()) {
    const file = path.join(tmp, `m${i}.pb`);
    fs.writeFileSync(file, bytes);
    const r = spawnSync(process.execPath, [path.join(root, 'bin', 'heap-labels.js'), 'report', file, '--top', '2'], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.error, undefined);
    if (r.status !== 0) {
      assert.equal(r.status, 2, `${file}: ${r.stderr}`);
      assert.match(r.stderr, /^heap-labels: [^\n]+\n$/, file);
    }
  }
});

test('the addon\'s pprof reader (pprofToOtlp): random and mutated input is converted or refused with an error', () => {
  const { native } = require('../lib/native');
  const { nativeOtlpOptions, checkOtlpOptions } = require('../lib/otlp');
  const options = nativeOtlpOptions(checkOtlpOptions({}, 'fuzz'), { thisProcess: false });
  const convert = (bytes) => {
    const started = cpuMs();
    try {
      assert.ok(native.pprofToOtlp(bytes, options).length >= 0);
    } catch (err) {
      assert.ok(err instanceof Error && /\S/.test(err.message), String(err));
    }
    assert.ok(cpuMs() - started < 2000);
  };
  convert(base.gz);
  fc.assert(fc.property(fc.uint8Array({ maxLength: 2048 }), (b) => convert(Buffer.from(b))), params(500));
  fc.assert(fc.property(mutation(base.raw), convert), params(500));
});

// --- the label API ----------------------------------------------------------------------------------

const limits = hl.limits;
const key = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }).filter((k) => !k.startsWith('heap_labels.') && k !== '__proto__');
const value = fc.string({ unit: 'grapheme', maxLength: 20 });
const validLabels = fc.dictionary(key, value, { minKeys: 1, maxKeys: Math.min(limits.maxLabels, 6) });

test('label API: valid label objects intern to one frozen object whatever the key order', () => {
  fc.assert(
    fc.property(validLabels, (labels) => {
      const reversed = Object.fromEntries(Object.entries(labels).reverse());
      let a;
      let b;
      hl.withHeapProfileLabels(labels, () => (a = hl.getHeapProfileLabels()));
      hl.withHeapProfileLabels(reversed, () => (b = hl.getHeapProfileLabels()));
      assert.ok(Object.isFrozen(a));
      assert.equal(a, b, 'one interned object');
      assert.deepEqual({ ...a }, Object.fromEntries(Object.entries(labels).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))));
    }),
    params(500),
  );
});

test('label API: any value is accepted or refused with a TypeError or RangeError, never anything else', () => {
  const anyLabels = fc.oneof(
    fc.anything({ maxDepth: 2 }),
    fc.dictionary(fc.string({ maxLength: 300 }), fc.oneof(fc.string({ maxLength: 300 }), fc.anything({ maxDepth: 1 })), { maxKeys: 70 }),
    fc.constantFrom({ ['heap_labels.overflow']: 'true' }, JSON.parse('{"__proto__": "x"}'), { a: '\ud800' }, { ['\udc00']: 'x' }, { ['x'.repeat(10000)]: 'y' }),
  );
  fc.assert(
    fc.property(anyLabels, (labels) => {
      try {
        hl.withHeapProfileLabels(labels, () => hl.getHeapProfileLabels());
      } catch (err) {
        assert.ok(err instanceof TypeError || err instanceof RangeError, `${err?.constructor?.name}: ${err?.message}`);
        assert.match(err.message, /^heap-labels: /);
      }
    }),
    params(1000),
  );
});

// --- the agent's options -----------------------------------------------------------------------------

test('agent options: any value from code or the environment is accepted or refused with ERR_HEAP_LABELS_CONFIG, in bounded time', () => {
  const dirs = [path.join(tmp, 'dumps'), '/proc/self/x', '/dev/null', '', 'rel\0ative', '/proc', os.tmpdir()];
  const names = ['sampleInterval', 'stackDepth', 'maxLabelSets', 'dir', 'keep', 'signal', 'http', 'token', 'nearHeapLimit', 'watchInterval', 'watchPeriods', 'watchMinGrowth', 'watchMinGrowthPercent'];
  const optionValue = fc.oneof(fc.anything({ maxDepth: 1 }), fc.integer(), fc.double(), fc.string({ maxLength: 40 }), fc.constantFrom(...dirs, 'SIGUSR2', 'SIGKILL', 'off', '127.0.0.1:0', '[::1]:99999', 'x'.repeat(20)));
  const options = fc.dictionary(fc.constantFrom(...names, 'bogus'), optionValue, { maxKeys: 5 });
  fc.assert(
    fc.property(options, (o) => {
      if (typeof o.dir === 'string' && !dirs.includes(o.dir)) delete o.dir; // no directories made at random
      const started = cpuMs();
      try {
        fromOptions(o);
      } catch (err) {
        assert.ok(err instanceof TypeError || err.code === 'ERR_HEAP_LABELS_CONFIG', `${err?.constructor?.name}: ${err?.message}`);
      }
      assert.ok(cpuMs() - started < 1000);
    }),
    params(1000),
  );
  const env = fc.dictionary(
    fc.constantFrom('HEAP_LABELS_SAMPLE_INTERVAL', 'HEAP_LABELS_KEEP', 'HEAP_LABELS_SIGNAL', 'HEAP_LABELS_HTTP', 'HEAP_LABELS_TOKEN', 'HEAP_LABELS_WATCH_INTERVAL', 'HEAP_LABELS_DIR'),
    fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom(...dirs.filter(Boolean), '1e3', '0x10', '-1', '4294967296', ' 5', '5 ', '0.1.2')),
    { maxKeys: 4 },
  );
  fc.assert(
    fc.property(env, (e) => {
      if (e.HEAP_LABELS_DIR !== undefined && !dirs.includes(e.HEAP_LABELS_DIR)) delete e.HEAP_LABELS_DIR;
      const started = cpuMs();
      try {
        fromEnv(e);
      } catch (err) {
        assert.equal(err.code, 'ERR_HEAP_LABELS_CONFIG', `${err?.constructor?.name}: ${err?.message}`);
        // A secret's value is never shown (27.8): `HEAP_LABELS_TOKEN (value not shown): ...`.
        for (const p of err.problems) assert.match(p, /^HEAP_LABELS_[A-Z_]+(=| \(value not shown\):)/);
      }
      assert.ok(cpuMs() - started < 1000);
    }),
    params(1000),
  );
});

// --- name mappings -----------------------------------------------------------------------------------

test('Prometheus label names: valid, never reserved, injective and deterministic over any keys', () => {
  fc.assert(
    fc.property(fc.uniqueArray(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }), { minLength: 2, maxLength: 20 }), (keys) => {
      const names = keys.map(labelName);
      assert.equal(new Set(names).size, keys.length, JSON.stringify(keys));
      for (const [i, n] of names.entries()) {
        assert.match(n, /^[A-Za-z_][A-Za-z0-9_]*$/);
        assert.ok(!n.startsWith('__'));
        assert.equal(labelName(keys[i]), n);
      }
    }),
    params(1000),
  );
});

test('printable text: no control or bidi character survives, and distinct texts stay distinct', () => {
  const text = fc.string({ unit: fc.oneof(fc.constantFrom('\\', '\n', '\u001b', '\u009b', '\u202e', '\u2028', 'x', 'n', '{'), fc.string({ unit: 'binary', maxLength: 1 })), maxLength: 12 });
  fc.assert(
    fc.property(fc.uniqueArray(text, { minLength: 2, maxLength: 20 }), (texts) => {
      const out = texts.map(printable);
      assert.equal(new Set(out).size, texts.length, JSON.stringify(texts));
      // eslint-disable-next-line no-control-regex -- no control character may survive
      for (const o of out) assert.doesNotMatch(o, /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
    }),
    params(2000),
  );
});

test('label text: no control or bidi character survives, and distinct label sets get distinct texts', () => {
  const piece = fc.string({ unit: fc.oneof(fc.constantFrom('\\', '"', '=', ',', ' ', '\n', '\u001b', '\u009b', '\u007f', '\u202e', '\u2028', 'a', 'b'), fc.string({ unit: 'binary', maxLength: 1 })), maxLength: 6 });
  const set = fc.dictionary(piece.filter((k) => k.length > 0 && k !== '__proto__'), piece, { minKeys: 1, maxKeys: 3 });
  fc.assert(
    fc.property(fc.uniqueArray(set, { minLength: 2, maxLength: 10, selector: (s) => JSON.stringify(Object.entries(s).sort()) }), (sets) => {
      const texts = sets.map(labelsText);
      assert.equal(new Set(texts).size, sets.length, JSON.stringify(sets));
      // eslint-disable-next-line no-control-regex -- no control character may survive
      for (const t of texts) assert.doesNotMatch(t, /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
    }),
    params(2000),
  );
});
