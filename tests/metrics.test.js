'use strict';
// Per-label counters without a profile (labelCounters) and the adapters that publish them: a
// prom-client registry scraped over HTTP and an OpenTelemetry MeterProvider collected by a reader.
// prom-client and @opentelemetry/* are devDependencies (package-lock.json), never dependencies.

const test = require('node:test');
const assert = require('node:assert/strict');
const { isDeepStrictEqual } = require('node:util');
const http = require('node:http');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { root, runFixture } = require('./helpers');
const hl = require('../lib');
const { registerPrometheus } = require('heap-labels/prometheus');
const { registerOpenTelemetry } = require('heap-labels/opentelemetry');

const caps = hl.capabilities();
const INTERVAL = 1024;

// Objects retained under `labels`, allocated in a function of its own.
function retainUnder(labels, count) {
  return hl.withHeapProfileLabels(labels, () => {
    const kept = [];
    for (let i = 0; i < count; i++) kept.push({ i, text: `value-${i}`, list: [i, i] });
    return kept;
  });
}

const A = Object.freeze({ route: '/metrics-a', tenant: 't.1' });
const B = Object.freeze({ route: '/metrics-b' });

function groupOf(c, labels) {
  return c.groups.find((g) => JSON.stringify(g.labels) === JSON.stringify(labels));
}

test('labelCounters: live samples per label set, external bytes and their peak since the last read', async () => {
  const handle = hl.startHeapProfile({ sampleInterval: INTERVAL });
  try {
    const keptA = retainUnder(A, 30000);
    const keptB = retainUnder(B, 10000);
    const c = hl.labelCounters();
    assert.equal(c.sampleInterval, INTERVAL);
    const unlabeled = groupOf(c, {});
    assert.ok(unlabeled, 'the unlabeled group is always there');
    assert.equal(c.groups.at(-1), unlabeled);
    if (caps.sampleLabels) {
      assert.equal(c.perSetSamples, true);
      const a = groupOf(c, A);
      const b = groupOf(c, B);
      assert.ok(a && b, JSON.stringify(c.groups.map((g) => g.labels)));
      assert.equal(a.labels, hl.withHeapProfileLabels(A, hl.getHeapProfileLabels), 'the interned label object');
      assert.equal(a.heapBytes, a.samples * INTERVAL);
      // A retained three times what B did: the counts follow (Poisson noise is small at ~1000s).
      const ratio = a.samples / b.samples;
      assert.ok(ratio > 2 && ratio < 4.5, `A/B samples ${a.samples}/${b.samples}`);
      // The counters agree with a profile read of the same heap.
      const fromProfile = handle.getAllocationProfile().byLabel().find((g) => g.labels === a.labels);
      assert.ok(Math.abs(fromProfile.bytes - a.heapBytes) / fromProfile.bytes < 0.2, `${fromProfile.bytes} vs ${a.heapBytes}`);
    } else {
      assert.equal(c.perSetSamples, false);
      assert.equal(c.groups.length, 1, 'stock: only the unlabeled group');
      // Stock: the whole heap (V8's used heap size), samples not counted.
      assert.equal(unlabeled.samples, 0);
      assert.ok(unlabeled.heapBytes > 1e6, JSON.stringify(unlabeled));
    }
    keptA.length = 0;
    keptB.length = 0;
  } finally {
    handle.stop();
  }
});

test('labelCounters: external bytes per label and their peak (patched runtime)', { skip: !caps.externalBytes && 'external bytes per label need the patched runtime' }, async () => {
  const handle = hl.startHeapProfile();
  const C = Object.freeze({ job: 'metrics-buffers' });
  try {
    let buffers = hl.withHeapProfileLabels(C, () => [Buffer.alloc(4 << 20), Buffer.alloc(4 << 20)]);
    let g = groupOf(hl.labelCounters(), C);
    assert.ok(g.externalBytes >= 8 << 20, JSON.stringify(g));
    assert.ok(g.externalPeakBytes >= g.externalBytes);
    buffers = undefined;
    for (let i = 0; i < 10 && (groupOf(hl.labelCounters(), C)?.externalBytes ?? 0) > 0; i++) {
      globalThis.gc?.();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    void buffers;
    // The group may be gone by now; a new allocation and free within one period shows as a peak.
    hl.withHeapProfileLabels(C, () => Buffer.alloc(2 << 20));
    g = groupOf(hl.labelCounters(), C);
    assert.ok(g.externalPeakBytes >= 2 << 20, JSON.stringify(g));
  } finally {
    handle.stop();
  }
});

test('labelCounters: each reader has its own external-peak period; a prom-client scrape sees the peak another read ended (patched runtime)', { skip: !caps.externalBytes && 'external bytes per label need the patched runtime' }, () => {
  const run = runFixture('counter-readers.js', { nodeArgs: ['--expose-gc'] });
  assert.equal(run.status, 0, run.stderr);
  const out = run.json;
  const MB4 = 4 << 20;
  assert.ok(out.watchAtPeak >= MB4, JSON.stringify(out));
  assert.equal(out.bytesAfterFree, 0, 'the buffer is freed');
  // The scrape's period began before the buffer: it reports its peak, although two other reads
  // ended the addon's periods since and the set holds no bytes now.
  assert.ok(out.scrapedPeak >= MB4, `the scrape sees the peak: ${JSON.stringify(out)}`);
  // Once: the next scrape's period starts after it.
  assert.ok(out.nextScrapedPeak < MB4, `a peak is reported to a reader once: ${JSON.stringify(out)}`);
});

// A registry served the way an app exposes /metrics, scraped over HTTP.
async function scrape(registry) {
  const server = http.createServer(async (req, res) => {
    res.setHeader('content-type', registry.contentType);
    res.end(await registry.metrics());
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const res = await fetch(`http://127.0.0.1:${server.address().port}/metrics`);
    assert.equal(res.status, 200);
    return await res.text();
  } finally {
    server.close();
  }
}

test('labelCounters: the native read writes into buffers it is given, refuses short ones before reading and shared memory', () => {
  const { native } = require('../lib/native');
  const { readColumns } = require('../lib/counters');
  // More sets with external bytes than the first buffers hold (64 rows) on the patched runtime;
  // everywhere, the bound covers every interned set.
  const handle = hl.startHeapProfile({ sampleInterval: INTERVAL });
  // External bytes are charged per set for blocks allocated while a session runs.
  const held = Array.from({ length: 200 }, (_, i) =>
    hl.withHeapProfileLabels({ route: `/buffers-${i}` }, () => Buffer.alloc(8192)),
  );
  try {
    const short = native.labelCounters(new Uint32Array(0), new Float64Array(0), new Float64Array(0), new Float64Array(0), new Float64Array(0));
    assert.equal(short.rows, 0);
    assert.ok(short.rowsNeeded >= 1, `rowsNeeded ${short.rowsNeeded}`);
    const read = readColumns();
    assert.equal(read.rowsNeeded, 0);
    assert.ok(read.ids.length >= read.rows);
    assert.deepEqual([...read.ids.subarray(0, read.rows)], [...read.ids.subarray(0, read.rows)].sort((a, b) => a - b), 'rows in id order');
    const shared = new Float64Array(16);
    assert.throws(
      () => native.labelCounters(new Uint32Array(16), new Float64Array(16), shared, shared.subarray(4), new Float64Array(16)),
      /must not share memory/,
    );
    const counts = hl.labelCounters();
    if (caps.externalBytes) {
      const rows = counts.groups.filter((g) => g.labels.route?.startsWith('/buffers-'));
      assert.equal(rows.length, 200, 'every set with external bytes has its row');
      assert.ok(rows.every((g) => g.externalBytes >= 8192), JSON.stringify(rows[0]));
    }
  } finally {
    handle.stop();
    held.length = 0;
  }
});

test('prom-client: gauges per label set with the labels as metric labels, scraped over HTTP', async () => {
  const client = require('prom-client');
  const registry = new client.Registry();
  const unregister = registerPrometheus(registry);
  const handle = hl.startHeapProfile({ sampleInterval: INTERVAL });
  try {
    const kept = retainUnder(A, 20000);
    const text = await scrape(registry);
    for (const name of ['heap_labels_heap_bytes', 'heap_labels_live_samples', 'heap_labels_external_bytes', 'heap_labels_external_peak_bytes']) {
      assert.match(text, new RegExp(`^# TYPE ${name} gauge$`, 'm'), name);
    }
    const line = (metric, labels) => new RegExp(`^${metric}${labels} (\\d+(?:\\.\\d+)?(?:e\\+\\d+)?)$`, 'm');
    const unlabeled = line('heap_labels_heap_bytes', '').exec(text);
    assert.ok(unlabeled, text);
    if (caps.sampleLabels) {
      const a = line('heap_labels_live_samples', '\\{route="/metrics-a",tenant="t\\.1"\\}').exec(text);
      assert.ok(a && Number(a[1]) > 100, text);
      const bytes = line('heap_labels_heap_bytes', '\\{route="/metrics-a",tenant="t\\.1"\\}').exec(text);
      assert.equal(Number(bytes[1]), Number(a[1]) * INTERVAL);
    } else {
      assert.ok(Number(unlabeled[1]) > 1e6, text);
      assert.doesNotMatch(text, /route=/);
    }
    kept.length = 0;
    unregister();
    assert.doesNotMatch(await registry.metrics(), /heap_labels_/);
  } finally {
    handle.stop();
  }
});

test('prom-client: label keys become distinct valid Prometheus names (escaped, never collapsed); reserved names are escaped', async (t) => {
  const { labelName } = require('heap-labels/prometheus');
  // Each pair collapsed into one name before: now distinct, valid, not reserved, and stable.
  const pairs = [['user.id', 'user_id'], ['é', 'ü'], ['a.b', 'a_b'], ['__name__', 'name'], ['U__x_2e_', 'x.'], ['1st', '_1st']];
  for (const [a, b] of pairs) {
    assert.notEqual(labelName(a), labelName(b), `${a} / ${b}`);
    for (const k of [a, b]) {
      assert.match(labelName(k), /^[A-Za-z_][A-Za-z0-9_]*$/, k);
      assert.ok(!labelName(k).startsWith('__'), `${k} -> ${labelName(k)} is reserved`);
      assert.equal(labelName(k), labelName(k));
    }
  }
  assert.equal(labelName('route'), 'route');
  assert.equal(labelName('user.id'), 'U__user_2e_id');
  assert.equal(labelName('é'), 'U___e9_');
  assert.equal(labelName('__name__'), 'U______name____');

  const client = require('prom-client');
  const registry = new client.Registry();
  const unregister = registerPrometheus(registry, { prefix: 'app_heap_' });
  const handle = hl.startHeapProfile({ sampleInterval: INTERVAL });
  try {
    const kept = [
      retainUnder({ 'http.route': '/x', '1st': 'y' }, 20000),
      retainUnder({ 'user.id': '1' }, 20000),
      retainUnder({ user_id: '1' }, 20000),
      retainUnder({ 'a.b': 'x', a_b: 'y' }, 20000),
      retainUnder({ __name__: 'spoof' }, 20000),
    ];
    const text = await registry.metrics();
    assert.match(text, /^# TYPE app_heap_heap_bytes gauge$/m);
    if (!caps.sampleLabels) {
      t.skip(`label sets have no counters on this runtime (${caps.reasons[0] ?? 'sampleLabels unavailable'}): the names are checked above`);
    } else {
      const series = (labels) => new RegExp(`^app_heap_live_samples\\{${labels}\\} \\d+$`, 'm');
      assert.match(text, series('U__1st="y",U__http_2e_route="/x"'));
      assert.match(text, series('U__user_2e_id="1"'));
      assert.match(text, series('user_id="1"'));
      assert.match(text, series('U__a_2e_b="x",a_b="y"'));
      assert.match(text, series('U______name____="spoof"'));
      assert.doesNotMatch(text, /[{,]__name__=/);
    }
    kept.length = 0;
  } finally {
    unregister();
    handle.stop();
  }
  assert.throws(() => registerPrometheus({}), /must be a prom-client Registry/);
  assert.throws(() => registerPrometheus(new client.Registry(), { prefix: 'bad prefix' }), /prefix must match/);
});

test('OpenTelemetry: label sets that differ only in key spelling stay distinct attribute sets', async (t) => {
  if (!caps.sampleLabels) {
    t.skip(`label sets have no counters on this runtime (${caps.reasons[0] ?? 'sampleLabels unavailable'})`);
    return;
  }
  const { MeterProvider, MetricReader } = require('@opentelemetry/sdk-metrics');
  class TestReader extends MetricReader {
    async onForceFlush() {}
    async onShutdown() {}
  }
  const reader = new TestReader();
  const provider = new MeterProvider({ readers: [reader] });
  const unregister = registerOpenTelemetry(provider.getMeter('heap-labels-names'));
  const handle = hl.startHeapProfile({ sampleInterval: INTERVAL });
  try {
    const sets = [{ 'user.id': '1' }, { user_id: '1' }, { é: 'same' }, { ü: 'same' }, { 'a.b': 'x', a_b: 'y' }];
    const kept = sets.map((labels) => retainUnder(labels, 20000));
    const { resourceMetrics } = await reader.collect();
    const points = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === 'heap_labels.live_samples').dataPoints;
    for (const labels of sets) {
      assert.ok(points.some((p) => isDeepStrictEqual({ ...p.attributes }, { ...labels }) && p.value > 0), JSON.stringify(labels));
    }
    kept.length = 0;
  } finally {
    unregister();
    handle.stop();
    await provider.shutdown();
  }
});

test('OpenTelemetry: observable gauges with the labels as attributes, collected by a MetricReader', async () => {
  const { MeterProvider, MetricReader } = require('@opentelemetry/sdk-metrics');
  class TestReader extends MetricReader {
    async onForceFlush() {}
    async onShutdown() {}
  }
  const reader = new TestReader();
  const provider = new MeterProvider({ readers: [reader] });
  const unregister = registerOpenTelemetry(provider.getMeter('heap-labels-test'));
  const handle = hl.startHeapProfile({ sampleInterval: INTERVAL });
  try {
    const kept = retainUnder(B, 20000);
    const { resourceMetrics, errors } = await reader.collect();
    assert.deepEqual(errors, []);
    const metrics = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
    const byName = Object.fromEntries(metrics.map((m) => [m.descriptor.name, m]));
    for (const name of ['heap_labels.heap_bytes', 'heap_labels.live_samples', 'heap_labels.external_bytes', 'heap_labels.external_peak_bytes']) {
      assert.ok(byName[name], `${name} in ${Object.keys(byName)}`);
    }
    assert.equal(byName['heap_labels.heap_bytes'].descriptor.unit, 'By');
    const points = byName['heap_labels.live_samples'].dataPoints;
    const unlabeled = points.find((p) => Object.keys(p.attributes).length === 0);
    assert.ok(unlabeled, 'the unlabeled group');
    if (caps.sampleLabels) {
      const b = points.find((p) => p.attributes.route === '/metrics-b');
      assert.ok(b && b.value > 100, JSON.stringify(points));
      const bytes = byName['heap_labels.heap_bytes'].dataPoints.find((p) => p.attributes.route === '/metrics-b');
      assert.equal(bytes.value, b.value * INTERVAL);
    } else {
      const heap = byName['heap_labels.heap_bytes'].dataPoints.find((p) => Object.keys(p.attributes).length === 0);
      assert.ok(heap.value > 1e6, JSON.stringify(heap));
    }
    kept.length = 0;
    unregister();
  } finally {
    handle.stop();
    await provider.shutdown();
  }
  assert.throws(() => registerOpenTelemetry({}), /must be an OpenTelemetry Meter/);
});

test('prom-client and OpenTelemetry: group counters of a groupBy session, one series per group', async () => {
  const client = require('prom-client');
  const { MeterProvider, MetricReader } = require('@opentelemetry/sdk-metrics');
  class TestReader extends MetricReader {
    async onForceFlush() {}
    async onShutdown() {}
  }
  const registry = new client.Registry();
  const unregisterProm = registerPrometheus(registry, { sets: false, groups: true });
  const reader = new TestReader();
  const provider = new MeterProvider({ readers: [reader] });
  const unregisterOtel = registerOpenTelemetry(provider.getMeter('heap-labels-groups'), { sets: false, groups: true });
  // No grouped session yet: the metrics exist, without series.
  assert.doesNotMatch(await registry.metrics(), /^heap_labels_group_live_samples\{/m);
  await new Promise((resolve) => setImmediate(resolve)); // the next scrape reads again
  const handle = hl.startHeapProfile({ sampleInterval: INTERVAL, groupBy: ['tenant'], maxGroups: 4 });
  try {
    const kept = [
      retainUnder({ route: '/g1', tenant: 'acme' }, 20000),
      retainUnder({ route: '/g2', tenant: 'acme' }, 20000),
      retainUnder({ route: '/g3' }, 5000),
    ];
    const text = await registry.metrics();
    assert.doesNotMatch(text, /^heap_labels_heap_bytes/m, 'sets: false');
    assert.match(text, /^# TYPE heap_labels_group_live_samples gauge$/m);
    assert.match(text, /^# TYPE heap_labels_group_samples_total counter$/m);
    assert.match(text, /^# TYPE heap_labels_group_freed_external_bytes_total counter$/m);
    const series = (metric) => [...text.matchAll(new RegExp(`^${metric}(\\{[^}]*\\})? (\\d+)$`, 'gm'))].map((m) => [m[1], Number(m[2])]);
    const live = series('heap_labels_group_live_samples');
    const names = live.map(([labels]) => labels);
    assert.deepEqual(names.slice(0, 2), ['{heap_labels_group="unknown"}', '{heap_labels_group="overflow"}']);
    // A projection's group exists once something was charged to it in the session (27.4): nothing
    // ever is where samples carry no labels. (Label sets of earlier tests that are still held take
    // no group here unless charged.)
    const charged = caps.sampleLabels || caps.externalBytes;
    assert.equal(names.filter((l) => l === '{tenant="acme"}').length, charged ? 1 : 0, 'both routes of tenant acme in one series');
    const { resourceMetrics, errors } = await reader.collect();
    assert.deepEqual(errors, []);
    const byName = Object.fromEntries(resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).map((m) => [m.descriptor.name, m]));
    const acme = byName['heap_labels.group_live_samples'].dataPoints.find((p) => p.attributes.tenant === 'acme');
    assert.ok(charged ? acme : acme === undefined, Object.keys(byName).join());
    assert.equal(byName['heap_labels.group_samples'].descriptor.type, 'OBSERVABLE_COUNTER');
    if (caps.sampleLabels) {
      const acmeLive = live.find(([labels]) => labels === '{tenant="acme"}')[1];
      assert.ok(acmeLive > 100, text);
      assert.equal(series('heap_labels_group_heap_bytes').find(([l]) => l === '{tenant="acme"}')[1], acmeLive * INTERVAL);
      assert.ok(live[0][1] > 0, 'the route without a tenant is in the unknown group');
      assert.ok(acme.value > 100);
    } else {
      assert.ok(live.every(([, n]) => n === 0), 'samples carry no labels on this runtime');
    }
    kept.length = 0;
  } finally {
    handle.stop();
    unregisterProm();
    unregisterOtel();
    await provider.shutdown();
  }
  assert.throws(() => registerPrometheus(new client.Registry(), { groups: 'yes' }), /must be booleans/);
});

test('27.3: groupBy the key heap_labels_group: no series or data point of a projection equals the unknown or overflow group\'s', { skip: !caps.sampleLabels && 'a projection\'s group is listed once something is charged to it, and samples carry no labels on this runtime' }, async () => {
  const client = require('prom-client');
  const { MeterProvider, MetricReader } = require('@opentelemetry/sdk-metrics');
  class TestReader extends MetricReader {
    async onForceFlush() {}
    async onShutdown() {}
  }
  const registry = new client.Registry();
  const unregisterProm = registerPrometheus(registry, { sets: false, groups: true });
  const reader = new TestReader();
  const provider = new MeterProvider({ readers: [reader] });
  const unregisterOtel = registerOpenTelemetry(provider.getMeter('heap-labels-27-3'), { sets: false, groups: true });
  const handle = hl.startHeapProfile({ sampleInterval: INTERVAL, groupBy: ['heap_labels_group'], maxGroups: 8 });
  try {
    const kept = [
      retainUnder({ heap_labels_group: 'unknown' }, 2000),
      retainUnder({ heap_labels_group: 'overflow' }, 2000),
      retainUnder({ route: '/none' }, 2000),
    ];
    const text = await registry.metrics();
    const series = [...text.matchAll(/^heap_labels_group_live_samples(\{[^}]*\})? \d+$/gm)].map((m) => m[1]);
    assert.equal(new Set(series).size, series.length, `duplicate series: ${series.join(' ')}`);
    for (const marker of ['{heap_labels_group="unknown"}', '{heap_labels_group="overflow"}']) {
      assert.ok(series.includes(marker), `${marker} in ${series.join(' ')}`);
    }
    for (const value of ['unknown', 'overflow']) {
      assert.ok(series.includes(`{U__heap__labels__group="${value}"}`), `the projection ${value} in ${series.join(' ')}`);
    }
    const { resourceMetrics, errors } = await reader.collect();
    assert.deepEqual(errors, []);
    const metric = resourceMetrics.scopeMetrics.flatMap((m) => m.metrics).find((m) => m.descriptor.name === 'heap_labels.group_live_samples');
    const attributes = metric.dataPoints.map((p) => JSON.stringify(p.attributes));
    assert.equal(new Set(attributes).size, attributes.length, `duplicate data points: ${attributes.join(' ')}`);
    for (const value of ['unknown', 'overflow']) {
      assert.ok(attributes.includes(JSON.stringify({ 'heap_labels.group': value })), attributes.join(' '));
      assert.ok(attributes.includes(JSON.stringify({ heap_labels_group: value })), attributes.join(' '));
    }
    kept.length = 0;
  } finally {
    handle.stop();
    unregisterProm();
    unregisterOtel();
    await provider.shutdown();
  }
});

test('the adapters do not make prom-client or OpenTelemetry runtime dependencies', () => {
  const pkg = require(path.join(root, 'package.json'));
  for (const name of ['prom-client', '@opentelemetry/api', '@opentelemetry/sdk-metrics']) {
    assert.ok(pkg.devDependencies[name], `${name} is a devDependency`);
    assert.equal(pkg.dependencies?.[name], undefined);
  }
  // Loading the adapters pulls in neither package, nor anything the package does not declare as a
  // runtime dependency (the addon's loader is one).
  const r = spawnSync(process.execPath, ['-e', `
    require('heap-labels/prometheus'); require('heap-labels/opentelemetry');
    const loaded = Object.keys(require.cache).filter((f) => /node_modules/.test(f));
    console.log(JSON.stringify(loaded));`], { cwd: root, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const declared = Object.keys(pkg.dependencies ?? {});
  const undeclared = JSON.parse(r.stdout).filter(
    (file) => !declared.some((name) => file.includes(`${path.sep}node_modules${path.sep}${name}${path.sep}`)),
  );
  assert.deepEqual(undeclared, []);
});
