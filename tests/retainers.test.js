'use strict';
// Retainers per label (issue 30): `handle.retainers(key)` and `heap-labels retainers`.
//
// On every runtime: the argument checks, the refusal on runtimes without the sample-labels API
// version 3 (never a guess), and the text view of a result. On a labeled runtime with version 3
// (this one, or HEAP_LABELS_PATCHED_NODE; scripts/test.d/50-patched-runtime.sh sets both): two
// leaky apps, whose report must put the leaking route's bytes under the leak's path.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { libPath } = require('./helpers');
const hl = require(libPath);
const { retainersText, reportHtml, fromAllocationProfile } = require('../lib/report');
const { retainersSection } = require('../lib/report/retainers-html');
const { main } = require('../lib/report/cli');

const caps = hl.capabilities();

// A runtime whose capabilities() says retainers: true, or why there is none.
function labeledRuntime() {
  const tried = [];
  for (const node of [process.execPath, process.env.HEAP_LABELS_PATCHED_NODE]) {
    if (!node || tried.some((t) => t.node === node)) continue;
    const probe = spawnSync(node, ['-e', `process.stdout.write(JSON.stringify(require(${JSON.stringify(libPath)}).capabilities()))`], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    let probed;
    try {
      probed = JSON.parse(probe.stdout);
    } catch {
      tried.push({ node, reason: `cannot load heap-labels: ${probe.stderr.trim().split('\n')[0]}` });
      continue;
    }
    if (probed.retainers) return { node };
    tried.push({ node, reason: probed.reasons.find((r) => r.startsWith('retainers:')) ?? 'retainers: false' });
  }
  const why = tried.map((t) => `${t.node}: ${t.reason.split('; a labeled runtime')[0]}`).join('; ');
  return { skip: `no labeled runtime with sample-labels API version 3 (${why}); set HEAP_LABELS_PATCHED_NODE to one (scripts/test.sh does)` };
}

const labeled = labeledRuntime();

function runApp(scenario, requests) {
  const result = spawnSync(labeled.node, [path.join(__dirname, 'fixtures', 'retainer-apps.js'), scenario, String(requests)], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
    timeout: 300_000,
    maxBuffer: 256 * 1024 * 1024,
  });
  assert.equal(result.status, 0, `${scenario} failed:\n${result.stderr}`);
  const lines = result.stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]);
}

// Bytes of a group's tree under the first step (from the objects up) that `matches`: each chain
// counted once, at the nearest such step; `(other)` nodes are not looked into.
function bytesUnder(paths, matches) {
  let bytes = 0;
  const stack = [...paths];
  while (stack.length > 0) {
    const node = stack.pop();
    if (matches(node)) bytes += node.bytes;
    else stack.push(...node.children);
  }
  return bytes;
}

const groupOf = (result, route) => result.groups.find((g) => g.labels.route === route);

test('the key must be a non-empty string or undefined', () => {
  const handle = hl.startHeapProfile();
  try {
    for (const key of ['', 5, null, {}]) {
      assert.throws(() => handle.retainers(key), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: /retainers: key must be/ });
    }
  } finally {
    handle.stop();
  }
});

test('the options must be an object whose force is a boolean', () => {
  const handle = hl.startHeapProfile();
  try {
    for (const options of [null, 'force', { force: 'yes' }, { force: 1 }]) {
      assert.throws(() => handle.retainers('route', options), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: /retainers: options must be an object whose force is a boolean/ });
    }
  } finally {
    handle.stop();
  }
});

test('without the sample-labels API version 3 retainers refuses, and capabilities() says why', { skip: caps.retainers && 'this runtime has it' }, () => {
  assert.equal(caps.retainers, false);
  const reason = caps.reasons.find((r) => r.startsWith('retainers:'));
  assert.match(reason, /needs the labeled runtime \(sample-labels API version 3/);
  const handle = hl.startHeapProfile();
  try {
    assert.throws(() => handle.retainers('route'), (e) => {
      assert.equal(e.code, 'ERR_HEAP_LABELS_UNSUPPORTED');
      assert.match(e.message, /^heap-labels: retainers: .*needs the labeled runtime \(sample-labels API version 3/);
      assert.match(e.message, /tools\/patched-node\/build\.sh/, 'names the way out');
      return true;
    });
    // The refusal leaves the session as it was.
    assert.ok(handle.getAllocationProfile().sampleInterval > 0);
  } finally {
    handle.stop();
  }
});

test('a stopped handle has no retainers', { skip: !caps.retainers && 'this runtime has no sample-labels API version 3 (refused before the session check)' }, () => {
  const handle = hl.startHeapProfile();
  handle.stop();
  assert.throws(() => handle.retainers(), { code: 'ERR_HEAP_LABELS_SESSION_NOT_RUNNING' });
});

// A result as handle.retainers('route') returns it, by hand.
const RESULT = {
  snapshot: { nodes: 123456, snapshotMs: 812.4, walkMs: 95.2, walkBytes: 2469120, pauseMs: 930.1 },
  sampleInterval: 4096,
  key: 'route',
  groups: [
    {
      labels: { route: '/leak' },
      bytes: 1000,
      samples: 10,
      unmatchedBytes: 100,
      unmatchedSamples: 1,
      paths: [
        {
          kind: 'object',
          text: 'Object',
          bytes: 900,
          samples: 9,
          share: 0.9,
          children: [
            {
              kind: 'retainer',
              text: '[*] in (internal array)',
              bytes: 900,
              samples: 9,
              share: 0.9,
              children: [{ kind: 'retainer', text: 'table in Map\u001b[31m', bytes: 900, samples: 9, share: 0.9, deeper: true, children: [] }],
            },
          ],
        },
      ],
      sites: [{ functionName: 'record', url: 'file:///app.js', lineNumber: 12, bytes: 1000, samples: 10, share: 1 }],
    },
  ],
  moreGroups: { groups: 2, bytes: 30, samples: 3 },
};

test('the text view: a tree per group under its share and bytes, names escaped', () => {
  const text = retainersText(RESULT);
  const lines = text.split('\n');
  assert.match(lines[0], /^Retainers per route: heap snapshot of 123,456 nodes, app paused 930 ms \(snapshot 812 ms, walk 95 ms\)/);
  assert.ok(lines.includes('route="/leak": 1000 B in 10 samples'), text);
  const tree = lines.slice(lines.indexOf('route="/leak": 1000 B in 10 samples') + 1);
  assert.deepEqual(tree.slice(0, 5), [
    '  share  bytes  retained by',
    '  90.0%  900 B  Object',
    '  90.0%  900 B    [*] in (internal array)',
    '  90.0%  900 B      table in Map\\x1b[31m \u2026',
    '  10.0%  100 B  (not in the snapshot: dead, or allocated after it)',
  ]);
  assert.ok(!text.includes('\u001b'), 'no control character reaches the terminal');
  assert.match(text, /record file:\/\/\/app\.js:12 +1000 B +100\.0%/);
  assert.match(text, /2 more groups not shown \(30 B in 3 samples\)/);
  const shallow = retainersText(RESULT, { depth: 1 });
  assert.match(shallow, /\[\*\] in \(internal array\) \u2026\n/, 'a cut step says there is more');
  assert.doesNotMatch(shallow, /table in Map/);
});

// The HTML of one group of a retainers section (lib/report/retainers-html.js), read without a DOM:
// its rows as { kind, depth, bytes, text } (text with its entities as written), its sites' cells.
function htmlGroup(html, label) {
  const start = html.indexOf(`<details class="retainer-group" open data-label="${label}"`);
  assert.ok(start >= 0, `a group ${label} in:\n${html}`);
  const block = html.slice(start, html.indexOf('</details>', start));
  const rows = [...block.matchAll(/<tr class="step" data-kind="(\w+)" data-depth="(\d+)" data-bytes="([\d.e+-]+)">.*?<td class="step-text"[^>]*>(.*?)<\/td><\/tr>/g)].map((m) => ({
    kind: m[1],
    depth: Number(m[2]),
    bytes: Number(m[3]),
    text: m[4],
  }));
  return { block, rows };
}

test('the HTML report\'s retainers section: a table per group, every name escaped, readable without script', () => {
  const hostile = structuredClone(RESULT);
  hostile.groups[0].labels = { route: '/leak<script>alert(1)</script>' };
  hostile.groups[0].paths[0].children[0].text = '<img src=x onerror=alert(1)> in "Object" & \u202eevil';
  hostile.groups[0].sites[0].functionName = '</table><script>';
  const html = retainersSection([{ source: 'dir/<r>.json', result: hostile }]);
  assert.doesNotMatch(html, /<script|<img|<\/table><script/i, 'no markup from the result');
  assert.ok(!html.includes('\u001b') && !html.includes('\u202e'), 'control and bidirectional characters are shown escaped');
  const { block, rows } = htmlGroup(html, 'route=&quot;/leak&lt;script&gt;alert(1)&lt;/script&gt;&quot;');
  assert.deepEqual(rows, [
    { kind: 'object', depth: 0, bytes: 900, text: 'Object' },
    { kind: 'retainer', depth: 1, bytes: 900, text: '&lt;img src=x onerror=alert(1)&gt; in &quot;Object&quot; &amp; \\u{202e}evil' },
    { kind: 'retainer', depth: 2, bytes: 900, text: 'table in Map\\x1b[31m \u2026' },
    { kind: 'unmatched', depth: 0, bytes: 100, text: '(not in the snapshot: dead, or allocated after it)' },
  ]);
  assert.match(block, /<td class="share">90\.0%<\/td><td class="bytes">900 B<\/td>/);
  assert.match(block, /<td>&lt;\/table&gt;&lt;script&gt; file:\/\/\/app\.js:12<\/td><td>1000 B<\/td><td>100\.0%<\/td>/);
  assert.match(html, /<p class="retainers-head">Retainers per route: heap snapshot of 123,456 nodes, app paused 930 ms .*<br><span class="source">dir\/&lt;r&gt;\.json<\/span><\/p>/);
  assert.match(html, /2 more groups not shown \(30 B in 3 samples\)/);
  assert.equal(retainersSection([]), '');
});

test('heap-labels report shows retainers given with --retainers, and a dump\'s own beside its pprof', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-retainers-report-'));
  const run = (...argv) => {
    const out = { stdout: '', stderr: '' };
    const io = { stdout: { write: (s) => (out.stdout += s) }, stderr: { write: (s) => (out.stderr += s) } };
    return { status: main(argv, io), ...out };
  };
  const handle = hl.startHeapProfile();
  try {
    const kept = Array.from({ length: 5000 }, (_, i) => ({ i }));
    const profile = handle.getAllocationProfile();
    assert.ok(kept.length > 0);
    const dump = path.join(dir, 'heap-labels-20261203T120000.000Z-1-1.pb.gz');
    fs.writeFileSync(dump, profile.toPprof());
    const other = path.join(dir, 'other.pb.gz');
    fs.copyFileSync(dump, other);
    const given = path.join(dir, 'r.json');
    fs.writeFileSync(given, JSON.stringify(RESULT));
    // Without retainers: no section.
    const plain = run('report', other, '--html', path.join(dir, 'plain.html'));
    assert.equal(plain.status, 0, plain.stderr);
    assert.doesNotMatch(fs.readFileSync(path.join(dir, 'plain.html'), 'utf8'), /retainers-section/);
    assert.doesNotMatch(plain.stdout, /Retainers per/);
    // Given: after the tables, and a section of the page.
    const withGiven = run('report', other, '--retainers', given, '--html', path.join(dir, 'given.html'));
    assert.equal(withGiven.status, 0, withGiven.stderr);
    assert.ok(withGiven.stdout.endsWith(retainersText(RESULT)), withGiven.stdout);
    const page = fs.readFileSync(path.join(dir, 'given.html'), 'utf8');
    assert.equal(page.match(/<section id="retainers-section">/g).length, 1);
    assert.ok(page.indexOf('id="flame-section"') < page.indexOf('id="retainers-section"'));
    htmlGroup(page, 'route=&quot;/leak&quot;');
    // A dump's own file (<stem>.retainers.json) is found; a bad one is refused like any input.
    fs.writeFileSync(dump.replace(/\.pb\.gz$/, '.retainers.json'), JSON.stringify(RESULT));
    const own = run('report', dump, '--html', path.join(dir, 'own.html'));
    assert.equal(own.status, 0, own.stderr);
    assert.match(own.stderr, /with the dump's retainers .*heap-labels-20261203T120000\.000Z-1-1\.retainers\.json/);
    assert.match(fs.readFileSync(path.join(dir, 'own.html'), 'utf8'), /<section id="retainers-section">/);
    fs.writeFileSync(dump.replace(/\.pb\.gz$/, '.retainers.json'), '{"groups": 1}');
    const bad = run('report', dump);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /not a retainers result/);
    assert.match(run('diff', dump, other, '--retainers', given).stderr, /--retainers is an option of report/);
    // In process, reportHtml takes them with their source.
    assert.match(reportHtml([fromAllocationProfile(profile)], { retainers: [{ source: 'x', result: RESULT }] }), /id="retainers-section"/);
  } finally {
    handle.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('heap-labels retainers prints a saved result and refuses what is not one', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-retainers-'));
  const run = (...argv) => {
    const out = { stdout: '', stderr: '' };
    const io = { stdout: { write: (s) => (out.stdout += s) }, stderr: { write: (s) => (out.stderr += s) } };
    return { status: main(argv, io), ...out };
  };
  try {
    const good = path.join(dir, 'r.json');
    fs.writeFileSync(good, JSON.stringify(RESULT));
    const ok = run('retainers', good, '--depth', '2');
    assert.equal(ok.status, 0, ok.stderr);
    assert.equal(ok.stdout, retainersText(RESULT, { depth: 2 }));
    const deep = { kind: 'retainer', text: 'x', bytes: 1, samples: 1, share: 1, children: [] };
    let at = deep;
    for (let i = 0; i < 100; i++) {
      at.children = [{ ...deep, children: [] }];
      at = at.children[0];
    }
    const cases = [
      ['not json', /not JSON/],
      [JSON.stringify({ groups: 'x' }), /no groups/],
      [JSON.stringify({ ...RESULT, groups: [{ ...RESULT.groups[0], labels: { route: 1 } }] }), /a group without labels/],
      [JSON.stringify({ ...RESULT, groups: [{ ...RESULT.groups[0], paths: [{ text: 'x' }] }] }), /without text, bytes or share/],
      [JSON.stringify({ ...RESULT, groups: [{ ...RESULT.groups[0], paths: [deep] }] }), /nested deeper than 64/],
    ];
    for (const [content, message] of cases) {
      const file = path.join(dir, 'bad.json');
      fs.writeFileSync(file, content);
      const bad = run('retainers', file);
      assert.equal(bad.status, 2);
      assert.match(bad.stderr, message);
    }
    assert.match(run('retainers').stderr, /no file given/);
    assert.match(run('report', good, '--depth', '2').stderr, /--depth is an option of retainers/);
    assert.match(run('retainers', good, '--depth', 'x').stderr, /--depth must be a non-negative integer/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a module-level Map that keeps /leak\'s requests holds >= 90 % of its sampled bytes', { skip: labeled.skip }, () => {
  const out = runApp('map-leak', 600);
  assert.equal(out.kept, 600);
  const leak = groupOf(out.result, '/leak');
  assert.ok(leak && leak.samples >= 100, `enough /leak samples: ${JSON.stringify(leak && leak.samples)}`);
  // The same bytes as byLabel's group of the session.
  const byLabel = out.byLabel.find((g) => g.labels.route === '/leak');
  assert.ok(Math.abs(leak.bytes / byLabel.bytes - 1) < 0.05, `retainers ${leak.bytes} vs byLabel ${byLabel.bytes}`);
  const underMap = bytesUnder(leak.paths, (p) => p.name === 'Map');
  assert.ok(underMap / leak.bytes >= 0.9, `under the Map: ${((underMap / leak.bytes) * 100).toFixed(1)} %\n${retainersText(out.result)}`);
  // The Map step names the variable that holds it.
  const text = retainersText(out.result);
  assert.match(text, /table in Map\n.*leaked in /, text);
  // The HTML report's section shows the same: /leak's rows through the Map's table, and the
  // variable that holds the Map.
  const { rows } = htmlGroup(retainersSection([{ source: 'map-leak', result: out.result }]), 'route=&quot;/leak&quot;');
  const throughMap = rows.filter((r) => /^table in Map( \u2026)?$/.test(r.text)).reduce((sum, r) => sum + r.bytes, 0);
  assert.ok(throughMap / leak.bytes >= 0.9, `HTML rows through the Map: ${throughMap} of ${leak.bytes}`);
  assert.ok(rows.some((r) => /^leaked in /.test(r.text)), 'the Map\'s variable');
  const churn = groupOf(out.result, '/churn');
  assert.ok(!churn || churn.bytes < leak.bytes * 0.1, `/churn keeps little: ${churn && churn.bytes}`);
  // The module's Map, the one `leaked` names: /churn's few live samples are code objects the JIT made
  // while it ran, and any of V8's or Node.js's own Maps on their way to the roots is not this one.
  const leakedMap = (p) => p.name === 'Map' && p.children.some((c) => c.edge === 'leaked');
  if (churn) assert.ok(bytesUnder(churn.paths, leakedMap) <= churn.bytes * 0.1, 'nothing of /churn under the Map');
  assert.equal(out.result.key, 'route');
  const s = out.result.snapshot;
  assert.ok(s.nodes > 1000 && s.pauseMs > 0 && s.pauseMs <= out.wallMs + 1, JSON.stringify(s));
  console.log(`map-leak: ${JSON.stringify({ snapshot: s, wallMs: out.wallMs, heapUsed: out.before.memory.heapUsed, maxRssKiB: [out.before.maxRssKiB, out.after.maxRssKiB] })}`);
});

test('an event listener\'s closure that keeps /subscribe\'s buffers holds >= 90 % of its sampled bytes', { skip: labeled.skip }, () => {
  const out = runApp('listener', 500);
  assert.equal(out.listeners, 500);
  const subscribe = groupOf(out.result, '/subscribe');
  assert.ok(subscribe && subscribe.samples >= 100, `enough /subscribe samples: ${JSON.stringify(subscribe && subscribe.samples)}`);
  const underListener = bytesUnder(subscribe.paths, (p) => p.name === 'onMessage()');
  assert.ok(
    underListener / subscribe.bytes >= 0.9,
    `under the listener: ${((underListener / subscribe.bytes) * 100).toFixed(1)} %\n${retainersText(out.result)}`,
  );
  assert.match(retainersText(out.result), /context in onMessage\(\)/);
  const churn = groupOf(out.result, '/churn');
  assert.ok(!churn || bytesUnder(churn.paths, (p) => p.name === 'onMessage()') === 0, 'nothing of /churn under the listener');
  console.log(`listener: ${JSON.stringify({ snapshot: out.result.snapshot, wallMs: out.wallMs, maxRssKiB: [out.before.maxRssKiB, out.after.maxRssKiB] })}`);
});

function runRefusal(scenario, nodeArgs = []) {
  const result = spawnSync(labeled.node, [...nodeArgs, path.join(__dirname, 'fixtures', 'retainer-refusals.js'), scenario], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
    timeout: 120_000,
  });
  assert.equal(result.status, 0, `${scenario} failed:\n${result.stderr}`);
  return JSON.parse(result.stdout.trim().split('\n').pop());
}

test('while another heap snapshot is held, retainers refuses; once it is done, it answers', { skip: labeled.skip }, () => {
  const out = runRefusal('busy');
  assert.equal(out.refused?.code, 'ERR_HEAP_LABELS_SNAPSHOT_BUSY', JSON.stringify(out));
  assert.match(out.refused.message, /another heap snapshot is in progress \(V8 holds 1: v8\.getHeapSnapshot\(\) still streaming/);
  assert.equal(out.after, null, JSON.stringify(out.after));
});

test('with less than the used heap free below the heap limit, retainers refuses before the snapshot', { skip: labeled.skip }, () => {
  const out = runRefusal('no-room', ['--max-old-space-size=64', '--expose-gc']);
  assert.ok(out.used > out.limit / 2, JSON.stringify(out));
  assert.equal(out.refused?.code, 'ERR_HEAP_LABELS_NO_ROOM', JSON.stringify(out));
  assert.match(out.refused.message, /a heap snapshot needs about the used heap again \(\d+\.\d MiB\), and only \d+\.\d MiB are left below the heap limit/);
  // force skips the room check: the snapshot is taken (its memory is mostly outside the JS heap).
  assert.ok(out.forced.groups >= 1, `forced: ${JSON.stringify(out.forced)}`);
  assert.equal(out.after, null, `after a GC it fits: ${JSON.stringify(out.after)}`);
});
