'use strict';
// The growth watch (lib/growth.js, HEAP_LABELS_WATCH_*): the rule on explicit series (strict growth
// over k periods, the byte, percentage and sampling-noise thresholds, one report per episode, reset
// after a drop, bounded memory), the detector on series of real counters, the agent's API and its
// summary section in-process, and an app started with the preload whose /leak route retains without
// bound while /ok does not.
//
// On the patched runtime samples carry labels and the tests check /leak is flagged and /ok is not.
// On stock runtimes the only counters group is the unlabeled one (V8's used heap size): there the
// unlabeled group is what gets flagged, and no label ever appears.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { root, sleep, tempDir, acfExecArgv, childEnv, spawnApp } = require('./helpers');
const hl = require('../lib');
const { native } = require('../lib/native');
const { GrowthWatch, NOISE_Z, formatEpisode } = require('../lib/growth');

const labeled = hl.capabilities().sampleLabels;
const registerCjs = path.join(root, 'lib', 'register.js');
const fixtures = path.join(__dirname, 'fixtures');
const tmp = tempDir('growth');

// --- the rule on explicit series -------------------------------------------------------------------

const A = Object.freeze({ route: '/a' });
const B = Object.freeze({ route: '/b' });
const UNLABELED = Object.freeze({});
const R = 1024; // sampling interval of the explicit snapshots

// A counters()-shaped snapshot with per-set samples: [[labels, samples], ...].
function counted(rows) {
  return {
    sampleInterval: R,
    perSetSamples: true,
    groups: rows.map(([labels, samples]) => ({ labels, heapBytes: samples * R, samples, externalBytes: 0, externalPeakBytes: 0 })),
  };
}

// A stock-runtime snapshot: only the unlabeled group, bytes and no samples.
function stock(bytes) {
  return {
    sampleInterval: R,
    perSetSamples: false,
    groups: [{ labels: UNLABELED, heapBytes: bytes, samples: 0, externalBytes: 0, externalPeakBytes: 0 }],
  };
}

// Feeds `series` (samples per snapshot) of one set; returns the index of each snapshot that started
// an episode.
function episodesOf(watch, series, labels = A) {
  const starts = [];
  series.forEach((n, i) => {
    if (watch.observe(counted([[labels, n]]), i * 1000).length) starts.push(i);
  });
  return starts;
}

const loose = { minGrowth: 0, minGrowthPercent: 0 };

test('growth: flagged after k strict increases in a row, once per episode', () => {
  const watch = new GrowthWatch({ periods: 3, ...loose });
  // 100 -> 400 in 3 steps of 100 samples: 300 >= 4 * sqrt(500) = 89.
  for (const [i, n] of [100, 200, 300].entries()) {
    assert.deepEqual(watch.observe(counted([[A, n]]), i * 1000), [], 'fewer than k increases: not yet');
  }
  const [entry, ...more] = watch.observe(counted([[A, 400]]), 3000);
  assert.equal(more.length, 0);
  assert.equal(entry.labels, A);
  assert.equal(entry.periods, 3);
  assert.equal(entry.since, 3000);
  assert.equal(entry.fromBytes, 100 * R);
  assert.equal(entry.heapBytes, 400 * R);
  assert.deepEqual(entry.series.map((p) => [p.time, p.samples]), [[0, 100], [1000, 200], [2000, 300], [3000, 400]]);
  assert.equal(
    formatEpisode(entry, 1),
    'live heap of route="/a" grew 3 periods in a row (a snapshot every 1 s): 100 KiB -> 400 KiB',
  );
  // Growing on, and flat: still the same episode, no new report.
  assert.deepEqual(watch.observe(counted([[A, 500]]), 4000), []);
  assert.deepEqual(watch.observe(counted([[A, 500]]), 5000), []);
  const [now] = watch.growth();
  assert.equal(now.periods, 4);
  assert.equal(now.fromBytes, 100 * R, 'the episode keeps where it started');
  assert.equal(now.series.length, 4, 'at most k + 1 points');
  assert.deepEqual(now.series.map((p) => p.samples), [300, 400, 500, 500]);
});

test('growth: a flat or falling step breaks the run; a drop ends the episode, the next needs k new increases', () => {
  const watch = new GrowthWatch({ periods: 3, ...loose });
  //                             0    1    2    3    4    5    6    7    8    9   10   11   12
  assert.deepEqual(episodesOf(watch, [100, 200, 300, 300, 400, 500, 600, 550, 650, 750, 850, 950, 1050]), [6, 10]);
  assert.equal(watch.growth().length, 1);
  watch.observe(counted([[A, 1000]]), 99_000);
  assert.deepEqual(watch.growth(), [], 'unflagged after a drop');
});

test('growth: the byte floor, the percentage and the sampling-noise bound each hold a flag back', () => {
  // Noise: +4 samples over 4 periods on 100 is far inside 4 sd (sqrt(204) = 14.3 samples per sd).
  assert.deepEqual(episodesOf(new GrowthWatch({ periods: 4, ...loose }), [100, 101, 102, 103, 104]), []);
  // Just below and at the bound: 4 * sqrt(a + b) samples.
  const need = (a) => {
    let b = a + 1;
    while (b - a < NOISE_Z * Math.sqrt(a + b)) b++;
    return b;
  };
  const b = need(100);
  const steps = (a, z) => [a, a + (z - a) / 4, a + (2 * (z - a)) / 4, a + (3 * (z - a)) / 4, z].map(Math.round);
  assert.deepEqual(episodesOf(new GrowthWatch({ periods: 4, ...loose }), steps(100, b - 1)), []);
  assert.deepEqual(episodesOf(new GrowthWatch({ periods: 4, ...loose }), steps(100, b)), [4]);
  // From nothing the bound is 16 samples (NOISE_Z^2).
  assert.equal(need(0), NOISE_Z ** 2);
  // The byte floor: 300 samples of growth = 300 KiB.
  assert.deepEqual(episodesOf(new GrowthWatch({ periods: 3, minGrowth: 300 * R + 1, minGrowthPercent: 0 }), [100, 200, 300, 400]), []);
  assert.deepEqual(episodesOf(new GrowthWatch({ periods: 3, minGrowth: 300 * R, minGrowthPercent: 0 }), [100, 200, 300, 400]), [3]);
  // The percentage of the first point: 1000 -> 1300 is 30 %.
  assert.deepEqual(episodesOf(new GrowthWatch({ periods: 3, minGrowth: 0, minGrowthPercent: 31 }), [1000, 1100, 1200, 1300]), []);
  assert.deepEqual(episodesOf(new GrowthWatch({ periods: 3, minGrowth: 0, minGrowthPercent: 30 }), [1000, 1100, 1200, 1300]), [3]);
});

test('growth: on stock runtimes (no per-set samples) bytes are the series and no noise bound applies', () => {
  const watch = new GrowthWatch({ periods: 2, minGrowth: 1000, minGrowthPercent: 10 });
  assert.deepEqual(watch.observe(stock(10_000)), []);
  assert.deepEqual(watch.observe(stock(10_600)), []);
  const [entry] = watch.observe(stock(11_200));
  assert.equal(entry.labels, UNLABELED);
  assert.equal(entry.series.at(-1).samples, 0);
  // 10 % of 20 000 is 2 000: 1 200 of growth is not enough.
  const big = new GrowthWatch({ periods: 2, minGrowth: 1000, minGrowthPercent: 10 });
  for (const bytes of [20_000, 20_600, 21_200]) assert.deepEqual(big.observe(stock(bytes)), []);
});

test('growth: memory is bounded: k + 1 points per set, vanished sets dropped, at most maxSeries sets', () => {
  const watch = new GrowthWatch({ periods: 2, ...loose, maxSeries: 2 });
  const C = Object.freeze({ route: '/c' });
  for (let i = 0; i < 10; i++) watch.observe(counted([[A, 10 + i], [B, 5], [C, 1]]), i);
  assert.deepEqual(watch.stats(), { series: 2, points: 6, skipped: 10 });
  // B leaves the counters (its samples died): it is forgotten (C, still over the cap in that
  // read, is skipped once more), and C finds room at the next read.
  watch.observe(counted([[A, 30], [C, 1]]), 10);
  assert.deepEqual(watch.stats(), { series: 1, points: 3, skipped: 11 });
  watch.observe(counted([[A, 31], [C, 1]]), 11);
  assert.deepEqual(watch.stats(), { series: 2, points: 4, skipped: 11 });
  // A flagged set that vanishes is no longer reported.
  const flagging = new GrowthWatch({ periods: 2, ...loose });
  episodesOf(flagging, [100, 200, 300]);
  assert.equal(flagging.growth().length, 1);
  flagging.observe(counted([[B, 1]]), 4);
  assert.deepEqual(flagging.growth(), []);
});

// --- series of real counters -------------------------------------------------------------------

test('growth: series of real counters flag a label set that retains more each period', (t) => {
  const INTERVAL = 4096;
  const handle = hl.startHeapProfile({ sampleInterval: INTERVAL });
  t.after(() => handle.stop());
  const watch = new GrowthWatch({ periods: 3, minGrowth: 1024 * 1024, minGrowthPercent: 10 });
  const LEAK = Object.freeze({ route: '/growth-real' });
  const kept = [];
  let started = [];
  for (let i = 0; i < 4; i++) {
    kept.push(hl.withHeapProfileLabels(LEAK, () => Array.from({ length: 40_000 }, (_, j) => ({ j, name: `v-${j}` }))));
    // A full GC first: the series then follows what is retained, not garbage waiting for a GC.
    native.collectGarbage();
    started = started.concat(watch.observe(hl.labelCounters(), i));
  }
  assert.equal(started.length, 1, JSON.stringify(watch.growth()));
  const [entry] = started;
  if (labeled) {
    assert.equal(entry.labels, hl.withHeapProfileLabels(LEAK, hl.getHeapProfileLabels));
    assert.ok(entry.series.every((p) => p.heapBytes === p.samples * INTERVAL));
  } else {
    assert.deepEqual(entry.labels, {}, 'stock: the unlabeled group (V8\'s used heap)');
  }
  assert.ok(entry.heapBytes - entry.fromBytes > 3e6, JSON.stringify(entry.series));
  void kept;
});

// --- the agent -----------------------------------------------------------------------------------

test('agent.growth() and the summary\'s growth section; off by default', async () => {
  const off = await hl.startAgent({ signal: 'off', nearHeapLimit: 0 });
  try {
    assert.equal(off.options.watchInterval, 0);
    assert.deepEqual(off.growth(), []);
    assert.doesNotMatch(await off.profile({ format: 'summary' }), /# growth/);
  } finally {
    await off.stop();
  }
  await assert.rejects(hl.startAgent({ watchInterval: 0.01 }), /option watchInterval must be 0 \(off\) or a number of seconds in 0\.1\.\.86400, got 0\.01/);
  await assert.rejects(hl.startAgent({ watchPeriods: 0 }), /option watchPeriods must be an integer in 1\.\.50, got 0/);

  const agent = await hl.startAgent({
    signal: 'off',
    nearHeapLimit: 0,
    sampleInterval: 16384,
    watchInterval: 0.1,
    watchPeriods: 3,
    watchMinGrowth: 1024 * 1024,
  });
  const LEAK = Object.freeze({ route: '/agent-leak' });
  const kept = [];
  let leaking;
  try {
    assert.match(await agent.profile({ format: 'summary' }), /\n# growth: a snapshot every 0\.1 s, flagged after 3 increases.*\n# growth: none flagged\n$/);
    // Retain ~1.5 MB under LEAK every 30 ms, from a timer (the leak goes on while the test awaits).
    leaking = setInterval(() => {
      kept.push(hl.withHeapProfileLabels(LEAK, () => Array.from({ length: 20_000 }, (_, j) => ({ j, name: `k-${j}` }))));
    }, 30);
    const deadline = Date.now() + 20_000;
    let flagged;
    while (Date.now() < deadline) {
      await sleep(20);
      flagged = agent.growth().find((g) => (labeled ? g.labels.route === '/agent-leak' : true));
      if (flagged) break;
    }
    assert.ok(flagged, 'flagged within 20 s');
    assert.ok(flagged.periods >= 3);
    assert.ok(flagged.series.length === 4);
    for (let i = 1; i < 4; i++) assert.ok(flagged.series[i].heapBytes > flagged.series[i - 1].heapBytes);
    if (labeled) assert.equal(flagged.labels, hl.withHeapProfileLabels(LEAK, hl.getHeapProfileLabels));
    else assert.deepEqual(flagged.labels, {});
    for (const g of agent.growth()) if (!labeled) assert.deepEqual(g.labels, {}, 'stock: labels never appear');
    // The summary shows the episode (a GC can end one on stock runtimes, where the series is the
    // whole used heap: the leak goes on, so a few reads see one).
    const shown = labeled ? 'route="/agent-leak"' : '\\(unlabeled\\)';
    const line = new RegExp(`\\n# growth: ${shown} grew \\d+ periods in a row since \\d{4}-`);
    let summary;
    for (let i = 0; i < 10 && !line.test(summary ?? ''); i++) summary = await agent.profile({ format: 'summary' });
    assert.match(summary, line);
  } finally {
    clearInterval(leaking);
    await agent.stop();
  }
  assert.deepEqual(agent.growth(), [], 'a stopped agent watches nothing');
  void kept;
});

test('a dump\'s summary file ends with the growth section when the watch is on, and has none when it is off', async () => {
  const dir = fs.mkdtempSync(path.join(tmp, 'dump-'));
  for (const watchInterval of [0, 0.1]) {
    const agent = await hl.startAgent({ signal: 'off', nearHeapLimit: 0, dir, watchInterval, watchPeriods: 3 });
    try {
      if (watchInterval > 0) await sleep(250); // a few snapshots
      const { summaryPath } = await agent.dump({ reason: 'test' });
      const text = fs.readFileSync(summaryPath, 'utf8');
      assert.match(text, /^# heap-labels per-label summary\n# reason: test\n/);
      if (watchInterval > 0) {
        assert.match(text, /\n# growth: a snapshot every 0\.1 s, flagged after 3 increases.*\n# growth: none flagged\n$/);
      } else {
        assert.doesNotMatch(text, /# growth/);
      }
    } finally {
      await agent.stop();
    }
  }
});

// --- an app with the preload ------------------------------------------------------------------------

test('preload: /leak is flagged once on stderr and in ?debug=1, /ok is not; the app keeps serving', async () => {
  const app = await spawnApp([...acfExecArgv, '-r', registerCjs, path.join(fixtures, 'ops-app.js')], {
    env: childEnv({
      HEAP_LABELS_HTTP: '127.0.0.1:0',
      HEAP_LABELS_SAMPLE_INTERVAL: '16384',
      HEAP_LABELS_WATCH_INTERVAL: '0.2',
      HEAP_LABELS_WATCH_PERIODS: '3',
      // The default floors (4 MiB, 10 %): at 0.2 s, /ok's garbage waiting for a scavenge can
      // grow for a few periods in a row; it stays far below 4 MiB, /leak passes it in ~3 periods.
      HEAP_LABELS_DIR: tmp,
    }),
    ready: /serving heap profiles at (\S+)\n/,
  });
  try {
    const until = async (predicate, what, ms = 30_000) => {
      const deadline = Date.now() + ms;
      while (!predicate()) {
        if (app.child.exitCode !== null || Date.now() > deadline) assert.fail(`${what}:\n${app.stderr}`);
        await sleep(20);
      }
    };
    const { port } = app;
    const url = app.ready[1];
    // node:http on a new connection per request, with a deadline: a request that stalls fails the
    // test with its reason instead of stopping the traffic silently.
    const get = (route) =>
      new Promise((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port, path: route, agent: false, timeout: 5000 }, (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`${route}: ${res.statusCode}`))));
        });
        req.on('timeout', () => req.destroy(new Error(`${route}: no answer within 5 s`)));
        req.on('error', reject);
      });
    const leakLine = labeled
      ? /live heap of route="\/leak" grew (\d+) periods in a row \(a snapshot every 0\.2 s\): [\d.]+ \w+ -> [\d.]+ \w+\n/
      : /live heap of \(unlabeled\) grew (\d+) periods in a row \(a snapshot every 0\.2 s\): [\d.]+ \w+ -> [\d.]+ \w+\n/;
    // Traffic in the background: a /leak (~0.5 MB retained) and three /ok every ~20 ms, without
    // pauses, so that /leak grows in every 0.2 s period while the test reads.
    let stop = false;
    let requests = 0;
    let trafficError;
    const traffic = (async () => {
      while (!stop) {
        await get('/leak');
        for (let i = 0; i < 3; i++) await get('/ok');
        requests += 4;
        await sleep(20);
      }
    })().catch((err) => {
      trafficError = err;
    });
    try {
      await until(
        () => leakLine.test(app.stderr) || trafficError !== undefined,
        `no growth line for the leak within 30 s (${requests} requests)`,
      );
      if (trafficError) throw trafficError;
      assert.ok(Number(leakLine.exec(app.stderr)[1]) >= 3);
      // The leak goes on for several more periods: the same episode, no second line.
      await sleep(1000);
      const section = labeled ? /\n# growth: route="\/leak" grew \d+ periods/ : /\n# growth: \(unlabeled\) grew \d+ periods/;
      let text = '';
      for (let i = 0; i < 10 && !section.test(text); i++) text = await (await fetch(`${url}?debug=1`)).text();
      assert.match(text, /^# heap-labels per-label summary\n/);
      assert.match(text, /\n# growth: a snapshot every 0\.2 s, flagged after 3 increases in a row of at least 4194304 bytes and 10 %/);
      // /leak's samples never die, so its episode lasts; on stock the series is V8's used heap,
      // which a GC may lower between the stderr line and this read, ending the episode.
      if (labeled) {
        assert.match(text, section);
        assert.equal(app.stderr.match(/live heap of route="\/leak"/g).length, 1, `one line per episode:\n${app.stderr}`);
        assert.doesNotMatch(app.stderr, /route="\/ok"/);
        assert.doesNotMatch(text, /# growth: route="\/ok"/);
      } else {
        assert.doesNotMatch(app.stderr, /live heap of (?!\(unlabeled\))/, 'stock: labels never appear');
        assert.doesNotMatch(text, /# growth: (?!\(unlabeled\)|a snapshot|none flagged)/);
      }
    } finally {
      stop = true;
      await traffic;
    }
    await get('/ok');
    assert.equal(app.child.exitCode, null, 'the app runs on');
  } finally {
    await app.kill();
  }
});

test('a bad HEAP_LABELS_WATCH_* value is reported once with its range; a good one never keeps the app alive', () => {
  const run = (env) =>
    spawnSync(process.execPath, [...acfExecArgv, '-r', registerCjs, path.join(fixtures, 'ops-status.js')], {
      cwd: root,
      env: childEnv(env),
      encoding: 'utf8',
      timeout: 60_000,
    });
  const bad = run({
    HEAP_LABELS_WATCH_INTERVAL: '1m',
    HEAP_LABELS_WATCH_PERIODS: '0',
    HEAP_LABELS_WATCH_MIN_GROWTH: '-1',
    HEAP_LABELS_WATCH_MIN_GROWTH_PERCENT: '10%',
  });
  assert.equal(bad.status, 0, bad.stderr);
  assert.deepEqual(JSON.parse(bad.stdout.trim()), { agent: false, labeled });
  assert.equal(bad.stderr.match(/heap-labels:/g)?.length, 1, `one report:\n${bad.stderr}`);
  assert.match(bad.stderr, /runs without heap profiling/);
  assert.match(bad.stderr, /HEAP_LABELS_WATCH_INTERVAL="1m": must be 0 \(off\) or a number of seconds in 0\.1\.\.86400/);
  assert.match(bad.stderr, /HEAP_LABELS_WATCH_PERIODS="0": must be an integer in 1\.\.50/);
  assert.match(bad.stderr, /HEAP_LABELS_WATCH_MIN_GROWTH="-1": must be an integer in 0\.\.4294967295/);
  assert.match(bad.stderr, /HEAP_LABELS_WATCH_MIN_GROWTH_PERCENT="10%": must be an integer in 0\.\.10000/);
  // A watch every 0.1 s: the app (which ends by itself after 300 ms) still exits on its own.
  const good = run({ HEAP_LABELS_WATCH_INTERVAL: '0.1', HEAP_LABELS_WATCH_PERIODS: '2', HEAP_LABELS_WATCH_MIN_GROWTH_PERCENT: '0' });
  assert.equal(good.status, 0, good.stderr);
  const report = JSON.parse(good.stdout.trim());
  assert.equal(report.agent, true, good.stderr);
  assert.equal(report.options.watchInterval, 0.1);
  assert.equal(report.options.watchPeriods, 2);
  assert.equal(report.options.watchMinGrowthPercent, 0);
});
