'use strict';
// OpenTelemetry profiles: AllocationProfile.toOtlp() and `heap-labels export --otlp`, decoded by
// the official generated code (PyPI opentelemetry-proto, tests/otlp-decoder.js), which also checks
// the dictionary rules (zero entries, indices in range, one value per key on a sample). The totals
// per label and sample type must equal those of toPprof() of the same read (decoded by the
// test-only pprof decoder of tests/helpers.js). On stock runtimes samples carry no labels (one
// unlabeled group); labeled profiles are checked on the patched runtime, and on every runtime
// through a labeled pprof file (as the patched runtime writes them) given to export.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');
const { decodePprof, pprofTotals, labeledPprof, tempDir, cli } = require('./helpers');
const { decodeOtlp, otlpTotals } = require('./otlp-decoder');
const lib = require('../lib');
const { version } = require('../package.json');

const tmp = tempDir('otlp');

function retainUnder(labels, count) {
  return lib.withHeapProfileLabels(labels, () => {
    const kept = [];
    for (let i = 0; i < count; i++) kept.push({ i, payload: new Array(64).fill(i) });
    return kept;
  });
}

test('toOtlp(): the same totals per label and sample type as toPprof(), a resource, v8js frames', (t) => {
  const caps = lib.capabilities();
  const handle = lib.startHeapProfile({ sampleInterval: 4096, trackAllocations: caps.allocations });
  const kept = [];
  try {
    kept.push(retainUnder({ route: '/a' }, 20_000), retainUnder({ route: '/b', tenant: '' }, 5_000));
    const profile = handle.getAllocationProfile();
    const decoded = decodeOtlp(profile.toOtlp({ serviceName: 'otlp-test', attributes: { 'deployment.environment.name': 'test', shard: 3 } }));
    const pprof = decodePprof(profile.toPprof());

    assert.deepEqual(otlpTotals(decoded, 'route'), pprofTotals(pprof, 'route'));
    const [rp] = decoded.resourceProfiles;
    assert.equal(rp.resource['service.name'], 'otlp-test');
    assert.equal(rp.resource['process.pid'], process.pid);
    assert.equal(rp.resource['process.runtime.name'], 'nodejs');
    assert.equal(rp.resource['process.runtime.version'], process.versions.node);
    assert.equal(rp.resource['host.name'], os.hostname());
    assert.equal(rp.resource['deployment.environment.name'], 'test');
    assert.equal(rp.resource.shard, 3);
    assert.deepEqual(rp.scopes[0].scope, { name: 'heap-labels', version });

    const profiles = rp.scopes[0].profiles;
    const types = profiles.map((p) => `${p.type}/${p.unit}`);
    const expected = ['inuse_space/bytes', 'inuse_objects/count'];
    if (profile.hasAllocations) expected.splice(1, 0, 'alloc_objects/count', 'alloc_space/bytes');
    assert.deepEqual(types, expected, 'the default type (inuse_space) first, then pprof order');
    for (const p of profiles) {
      assert.equal(p.period, 4096);
      assert.deepEqual([p.periodType, p.periodUnit], ['space', 'bytes']);
      assert.equal(Number(p.timeUnixNano), pprof.timeNanos);
    }
    const frames = profiles[0].samples.flatMap((s) => s.stack);
    assert.ok(frames.length > 0);
    assert.ok(frames.every((f) => f.frameType === 'v8js'));
    assert.ok(frames.some((f) => f.name === 'retainUnder' && f.file.endsWith('otlp.test.js')), 'the allocating function is on a stack');

    // The same bytes are the OTLP/HTTP request body.
    assert.deepEqual(decodeOtlp(profile.toOtlp({ serviceName: 'otlp-test' }), 'request').resourceProfiles[0].resource['service.name'], 'otlp-test');

    t.test('labels become sample attributes keyed by the label key', { skip: !caps.sampleLabels && 'samples carry no labels on this runtime' }, () => {
      const inuse = otlpTotals(decoded, 'route').inuse_space;
      assert.ok(inuse['/a'] > inuse['/b'] && inuse['/b'] > 0, JSON.stringify(inuse));
      const b = profiles[0].samples.find((s) => s.attributes.route === '/b');
      assert.deepEqual(b.attributes, { route: '/b', tenant: '' }, 'an empty value stays a string');
    });
  } finally {
    handle.stop();
  }
  assert.ok(kept.length === 2);
});

test('toOtlp(): service.name from OTEL_SERVICE_NAME, else unknown_service; bad options are errors', () => {
  const handle = lib.startHeapProfile();
  try {
    const profile = handle.getAllocationProfile();
    const saved = process.env.OTEL_SERVICE_NAME;
    try {
      process.env.OTEL_SERVICE_NAME = 'from-env';
      assert.equal(decodeOtlp(profile.toOtlp()).resourceProfiles[0].resource['service.name'], 'from-env');
      delete process.env.OTEL_SERVICE_NAME;
      assert.equal(decodeOtlp(profile.toOtlp()).resourceProfiles[0].resource['service.name'], `unknown_service:${path.basename(process.execPath)}`);
    } finally {
      if (saved === undefined) delete process.env.OTEL_SERVICE_NAME;
      else process.env.OTEL_SERVICE_NAME = saved;
    }
    assert.throws(() => profile.toOtlp({ serviceName: 7 }), { name: 'TypeError', message: /serviceName/ });
    assert.throws(() => profile.toOtlp({ service: 'x' }), { name: 'TypeError', message: /unknown option "service"/ });
    assert.throws(() => profile.toOtlp({ attributes: { a: 1.5 } }), { name: 'TypeError', message: /attribute "a"/ });
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v']));
    assert.throws(() => profile.toOtlp({ attributes: many }), { name: 'RangeError' });
    profile[Symbol.dispose]();
    assert.throws(() => profile.toOtlp(), /disposed/);
  } finally {
    handle.stop();
  }
});

// A labeled profile as the patched runtime writes it (string labels, an empty value, the overflow
// set, an allocated-only sample without location, Go's four types) plus what other pprof writers
// put in (a numeric label with a unit, location ids that are not 1..n).
const labeledProfile = () => labeledPprof({
  samples: [
    { stack: ['keep', 'handle'], values: [10, 5000, 4, 2000], labels: { route: '/a', tenant: 't1' } },
    { stack: ['keep', 'handle'], values: [2, 600, 2, 600], labels: { route: '/a', tenant: '' } },
    { stack: ['handle'], values: [1, 100, 1, 100], labels: { route: '/b', bytes: [512, 'bytes'] } },
    { stack: [], values: [3, 900, 0, 0], labels: { route: '/b' } },
    { stack: ['keep'], values: [5, 700, 5, 700], labels: { 'heap_labels.overflow': 'true' } },
    { stack: ['handle'], values: [1, 30, 1, 30] },
  ],
  locationIds: { handle: 7 },
});

test('export --otlp: a labeled pprof file becomes an OTLP profile with the same totals per label', () => {
  const file = path.join(tmp, 'labeled.pb.gz');
  fs.writeFileSync(file, zlib.gzipSync(labeledProfile()));
  const r = cli('export', '--otlp', file, '--service-name', 'checkout', '--attribute', 'k8s.pod.name=web-1');
  assert.equal(r.status, 0, r.stderr);
  const out = path.join(tmp, 'labeled.otlp.pb');
  assert.match(r.stderr, /wrote .*labeled\.otlp\.pb \(\d+ bytes\)/);
  const decoded = decodeOtlp(fs.readFileSync(out));
  const pprof = decodePprof(fs.readFileSync(file));
  assert.deepEqual(otlpTotals(decoded, 'route'), pprofTotals(pprof, 'route'));
  assert.deepEqual(otlpTotals(decoded, 'route').alloc_space, { '/a': 5600, '/b': 1000, '': 730 });
  assert.deepEqual(otlpTotals(decoded, 'heap_labels.overflow').inuse_space, { true: 700, '': 2730 });
  const [rp] = decoded.resourceProfiles;
  assert.deepEqual(rp.resource, { 'service.name': 'checkout', 'k8s.pod.name': 'web-1' }, 'a file is not this process: no process.*');
  const profiles = rp.scopes[0].profiles;
  assert.deepEqual(profiles.map((p) => p.type), ['inuse_space', 'alloc_objects', 'alloc_space', 'inuse_objects']);
  const inuse = profiles[0];
  assert.equal(inuse.timeUnixNano, '1700000000000000000');
  assert.equal(inuse.durationNano, '5000000000');
  const b = inuse.samples.find((s) => s.attributes.route === '/b');
  assert.deepEqual(b.attributes, { route: '/b', bytes: 512 });
  assert.deepEqual(b.stack.map((f) => [f.name, f.file, f.line]), [['handle', '/app.js', 9]]);
  const a2 = inuse.samples.find((s) => s.attributes.tenant === '');
  assert.deepEqual(a2.stack.map((f) => f.name), ['keep', 'handle'], 'leaf first');
  const otherSites = profiles.find((p) => p.type === 'alloc_space').samples.find((s) => s.value === 900);
  assert.deepEqual(otherSites.stack, []);

  // --out, and an ungzipped pprof.
  const raw = path.join(tmp, 'raw.pb');
  fs.writeFileSync(raw, labeledProfile());
  const chosen = path.join(tmp, 'chosen.bin');
  assert.equal(cli('export', '--otlp', raw, '--out', chosen).status, 0);
  assert.deepEqual(otlpTotals(decodeOtlp(fs.readFileSync(chosen)), 'route'), pprofTotals(pprof, 'route'));
});

test('export: bad input is one line on stderr and exit status 2', () => {
  const junk = path.join(tmp, 'junk.pb.gz');
  fs.writeFileSync(junk, zlib.gzipSync(Buffer.from([0xff, 0xff, 0xff, 0xff])));
  const cases = [
    [['export', '--otlp', junk], /junk\.pb\.gz: not a pprof profile/],
    [['export', '--otlp', path.join(tmp, 'missing.pb.gz')], /cannot read: no such file/],
    [['export', junk], /--otlp/],
    [['report', junk, '--otlp'], /--otlp is an option of export/],
    [['export', '--otlp', junk, '--attribute', 'novalue'], /KEY=VALUE/],
  ];
  for (const [args, message] of cases) {
    const r = cli(...args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
});
