'use strict';
// Labeled heap snapshots (issue 30 item 2): `handle.writeHeapSnapshot({ labels, key, path })`.
//
// On every runtime: the option checks, a plain snapshot, and on runtimes without the sample-labels
// API version 3 the refusal of labels (nothing written). On a labeled runtime with version 3 (this
// one, or HEAP_LABELS_PATCHED_NODE; scripts/test.d/50-patched-runtime.sh sets both): the leaky app
// of tests/fixtures/retainer-apps.js writes a labeled snapshot, and
//   (a) the file has the label nodes, whose weak edges reach /leak's sampled objects;
//   (b) DevTools' own heap snapshot code (the worker module of the DevTools that Debian's chromium
//       bundles, run in that browser) gives every V8 node the same dominator and retained size with
//       and without the added nodes (the same file, the additions cut out), and finds >= 90 % of
//       /leak's linked objects retained by the module's Map;
//   (c) Chrome's Memory panel loads the file and lists the label nodes in its Summary (a
//       screenshot: test-artifacts/labeled-heapsnapshot.png).

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { libPath } = require('./helpers');
const { launchChromium, artifactPath } = require('./browser');
const hl = require(libPath);

const caps = hl.capabilities();

// A runtime whose capabilities() says retainers: true (what labels need), or why there is none.
function labeledRuntime() {
  const tried = [];
  for (const node of [process.execPath, process.env.HEAP_LABELS_PATCHED_NODE]) {
    if (!node || tried.some((t) => t.node === node)) continue;
    const probe = spawnSync(node, ['-e', `process.stdout.write(JSON.stringify(require(${JSON.stringify(libPath)}).capabilities()))`], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    try {
      if (JSON.parse(probe.stdout).retainers) return { node };
      tried.push(`${node}: no sample-labels API version 3`);
    } catch {
      tried.push(`${node}: cannot load heap-labels`);
    }
  }
  return { skip: `no labeled runtime with sample-labels API version 3 (${tried.join('; ')}); set HEAP_LABELS_PATCHED_NODE to one (scripts/test.sh does)` };
}

const labeled = labeledRuntime();

function tmpDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-snapshot-'));
}

// The graph of a .heapsnapshot, parsed whole (test files are a few MB).
function readSnapshot(file) {
  const json = JSON.parse(fs.readFileSync(file, 'utf8'));
  const meta = json.snapshot.meta;
  const nf = meta.node_fields.length;
  const ef = meta.edge_fields.length;
  const count = json.nodes.length / nf;
  const firstEdge = new Uint32Array(count + 1);
  for (let i = 0; i < count; i++) firstEdge[i + 1] = firstEdge[i] + json.nodes[i * nf + meta.node_fields.indexOf('edge_count')] * ef;
  const field = (i, name) => json.nodes[i * nf + meta.node_fields.indexOf(name)];
  const edgesOf = (i) => {
    const out = [];
    for (let e = firstEdge[i]; e < firstEdge[i + 1]; e += ef) {
      const type = meta.edge_types[0][json.edges[e]];
      const nameOrIndex = json.edges[e + 1];
      out.push({ type, name: type === 'element' || type === 'hidden' ? nameOrIndex : json.strings[nameOrIndex], to: json.edges[e + 2] / nf });
    }
    return out;
  };
  return {
    json,
    count,
    edgeCount: json.edges.length / ef,
    name: (i) => json.strings[field(i, 'name')],
    type: (i) => meta.node_types[0][field(i, 'type')],
    id: (i) => field(i, 'id'),
    selfSize: (i) => field(i, 'self_size'),
    edgesOf,
  };
}

// The labeled file's JSON without what writeHeapSnapshot added (the nodes after V8's `nodes`
// count, their edges, the root's last edge, the strings after V8's): V8's snapshot again.
function withoutAdditions(snap, v8Nodes) {
  const { json } = snap;
  const nf = json.snapshot.meta.node_fields.length;
  const ef = json.snapshot.meta.edge_fields.length;
  const edgeCountField = json.snapshot.meta.node_fields.indexOf('edge_count');
  const addedNodes = snap.count - v8Nodes;
  let addedEdges = 0;
  for (let i = v8Nodes; i < snap.count; i++) addedEdges += json.nodes[i * nf + edgeCountField];
  const rootEdges = json.nodes[edgeCountField];
  const nodes = json.nodes.slice(0, v8Nodes * nf);
  nodes[edgeCountField] = rootEdges - 1;
  const edges = json.edges.slice(0, json.edges.length - addedEdges * ef);
  edges.splice((rootEdges - 1) * ef, ef);
  const strings = json.strings.slice(0, json.strings.length - (2 + 2 * (addedNodes - 1)));
  return JSON.stringify({
    ...json,
    snapshot: { ...json.snapshot, node_count: v8Nodes, edge_count: edges.length / ef },
    nodes,
    edges,
    strings,
  });
}

test('options are checked before anything is taken', () => {
  const handle = hl.startHeapProfile();
  try {
    const bad = [null, 5, { labels: 'yes' }, { path: '' }, { path: 3 }, { key: 'route' }, { labels: true, key: '' }, { labels: true, key: 7 }];
    for (const options of bad) {
      assert.throws(() => handle.writeHeapSnapshot(options), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: /^heap-labels: writeHeapSnapshot: / }, JSON.stringify(options));
    }
  } finally {
    handle.stop();
  }
});

test('without labels: a plain snapshot, on any runtime', () => {
  const dir = tmpDir();
  const handle = hl.startHeapProfile();
  try {
    const file = path.join(dir, 'plain.heapsnapshot');
    const result = handle.writeHeapSnapshot({ path: file });
    assert.equal(result.path, file);
    assert.equal(result.groups, undefined);
    const snap = readSnapshot(file);
    assert.equal(snap.count, result.nodes);
    assert.equal(result.bytes, fs.statSync(file).size);
    for (let i = 0; i < snap.count; i++) assert.ok(!snap.name(i).startsWith('(heap-labels)') || snap.type(i) === 'string', 'no label node');
    assert.deepEqual(fs.readdirSync(dir), ['plain.heapsnapshot'], 'no temporary file left');
  } finally {
    handle.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('without the sample-labels API version 3, labels are refused and nothing is written', { skip: caps.retainers && 'this runtime has it' }, () => {
  const dir = tmpDir();
  const handle = hl.startHeapProfile();
  try {
    assert.throws(() => handle.writeHeapSnapshot({ labels: true, path: path.join(dir, 'x.heapsnapshot') }), (e) => {
      assert.equal(e.code, 'ERR_HEAP_LABELS_UNSUPPORTED');
      assert.match(e.message, /^heap-labels: writeHeapSnapshot: labels: a labeled heap snapshot needs the labeled runtime \(sample-labels API version 3/);
      assert.match(e.message, /tools\/patched-node\/build\.sh/, 'names the way out');
      return true;
    });
    assert.deepEqual(fs.readdirSync(dir), []);
  } finally {
    handle.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// DevTools' heap snapshot worker, in the DevTools that chromium bundles: each file's dominators
// and retained sizes (by node ordinal), as the Memory panel computes them.
async function devToolsGraphs(page, texts) {
  return page.evaluate(async (texts) => {
    const W = await import('./entrypoints/heap_snapshot_worker/heap_snapshot_worker.js');
    const out = [];
    for (const text of texts) {
      const loader = new W.HeapSnapshotLoader.HeapSnapshotLoader({ sendEvent() {} });
      loader.write(text);
      loader.close();
      const channel = new MessageChannel();
      new W.HeapSnapshot.SecondaryInitManager(channel.port2);
      const snapshot = await loader.buildSnapshot(channel.port1);
      out.push({ retained: Array.from(snapshot.retainedSizes), dominators: Array.from(snapshot.dominatorsTree) });
      channel.port1.close();
    }
    return out;
  }, texts);
}

test('a labeled snapshot: label nodes with weak edges to the samples, unchanged retained sizes, open in the Memory panel', { skip: labeled.skip, timeout: 120_000 }, async () => {
  const dir = tmpDir();
  const file = path.join(dir, 'leak.heapsnapshot');
  try {
    const started = Date.now();
    const run = spawnSync(labeled.node, [path.join(__dirname, 'fixtures', 'retainer-apps.js'), 'map-leak', '400', file], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' },
      timeout: 120_000,
    });
    assert.equal(run.status, 0, run.stderr);
    const out = JSON.parse(run.stdout.trim().split('\n').pop());
    const ran = Date.now() - started;
    const result = out.result;
    assert.equal(result.path, file);
    assert.equal(result.key, 'route');

    // (a) The file: V8's nodes, then (heap-labels) under the root, a label node per group.
    const snap = readSnapshot(file);
    assert.equal(snap.json.snapshot.node_count, snap.count);
    assert.equal(snap.json.snapshot.edge_count, snap.edgeCount);
    assert.equal(snap.count, result.nodes + 1 + result.groups.length);
    const holder = result.nodes;
    assert.deepEqual([snap.name(holder), snap.type(holder), snap.selfSize(holder)], ['(heap-labels)', 'synthetic', 0]);
    const rootEdges = snap.edgesOf(0);
    assert.deepEqual(rootEdges[rootEdges.length - 1], { type: 'element', name: rootEdges.length, to: holder });
    const labelNodes = snap.edgesOf(holder);
    assert.deepEqual(
      labelNodes.map((e) => [e.type, e.name, snap.name(e.to), snap.type(e.to)]),
      result.groups.map((g) => ['property', g.node.slice('(heap-labels) '.length), g.node, 'native']),
    );
    const group = (route) => result.groups.findIndex((g) => g.labels.route === route);
    const leak = result.groups[group('/leak')];
    const leakNode = labelNodes[group('/leak')].to;
    assert.equal(snap.name(leakNode), '(heap-labels) route="/leak"');
    const targets = snap.edgesOf(leakNode);
    assert.ok(targets.every((e) => e.type === 'weak' && e.name === 'sampled' && e.to < holder), 'weak edges to V8 nodes');
    assert.equal(new Set(targets.map((e) => e.to)).size, leak.objects);
    assert.ok(targets.every((e) => snap.id(e.to) % 2 === 1), 'to JS heap objects (odd ids)');
    // Nearly all of /leak's live sampled bytes are linked (the rest: objects that died between the
    // profile and the snapshot), and they are byLabel's bytes.
    assert.ok(leak.samples >= 50, `enough /leak samples: ${leak.samples}`);
    assert.ok(leak.linkedBytes / leak.bytes >= 0.9, `${leak.linkedBytes} of ${leak.bytes} linked`);
    const byLabel = out.byLabel.find((g) => g.labels.route === '/leak');
    assert.ok(Math.abs(leak.bytes / byLabel.bytes - 1) < 0.05, `${leak.bytes} vs byLabel ${byLabel.bytes}`);

    // (b) and (c): in Chromium's DevTools.
    const chromium = await launchChromium();
    try {
      let page = await chromium.context.newPage();
      await page.goto('devtools://devtools/bundled/devtools_app.html');
      const text = fs.readFileSync(file, 'utf8');
      const [withLabels, plain] = await devToolsGraphs(page, [text, withoutAdditions(snap, result.nodes)]);
      const added = result.groups.length; // 1 byte per label node
      assert.equal(withLabels.retained[0], plain.retained[0] + added, 'the root: the total, and the label nodes');
      let differ = 0;
      for (let i = 1; i < result.nodes; i++) {
        if (withLabels.retained[i] !== plain.retained[i] || withLabels.dominators[i] !== plain.dominators[i]) differ++;
      }
      assert.equal(differ, 0, 'every V8 node keeps its retained size and dominator');
      // /leak's objects are retained by the module's Map (the one `leaked` names), /churn's not.
      const leakedMap = findLeakedMap(snap);
      const underMap = (node) => {
        for (let at = node, steps = 0; at !== 0 && steps < 10_000; at = withLabels.dominators[at], steps++) if (at === leakedMap) return true;
        return false;
      };
      const leakUnder = targets.filter((e) => underMap(e.to)).length;
      assert.ok(leakUnder / targets.length >= 0.9, `${leakUnder} of ${targets.length} /leak objects retained by the Map`);
      const churnAt = group('/churn');
      if (churnAt >= 0) {
        const churnTargets = snap.edgesOf(labelNodes[churnAt].to);
        assert.ok(churnTargets.filter((e) => underMap(e.to)).length <= churnTargets.length * 0.1, 'not /churn\'s');
      }

      // (c) The Memory panel, in a DevTools of its own: load the file, filter the Summary by
      // "heap-labels".
      await page.close();
      page = await chromium.context.newPage();
      await page.setViewportSize({ width: 1400, height: 800 });
      await page.goto('devtools://devtools/bundled/devtools_app.html');
      await page.getByRole('tab', { name: 'Memory' }).click();
      const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.getByRole('button', { name: /Load profile/ }).first().click()]);
      await chooser.setFiles(file);
      // Listed at once, shown once loaded: selected until its Summary's class filter appears.
      const item = page.getByRole('treeitem', { name: /leak/ });
      const filter = page.getByRole('textbox', { name: 'Filter by class' });
      for (const until = Date.now() + 30_000; !(await filter.isVisible()); ) {
        if (Date.now() > until) {
          await page.screenshot({ path: artifactPath('labeled-heapsnapshot-failed.png') });
          assert.fail('the Memory panel shows the snapshot within 30 s (test-artifacts/labeled-heapsnapshot-failed.png)');
        }
        // Selecting the selected item again does nothing: the launcher first.
        await page.getByRole('treeitem', { name: 'Profiles' }).click();
        await item.click();
        await page.waitForTimeout(1000);
      }
      await filter.fill('heap-labels');
      const row = page.getByText('(heap-labels) route="/leak"').first();
      await row.waitFor({ timeout: 30_000 });
      await row.click();
      await page.keyboard.press('ArrowRight');
      const shot = artifactPath('labeled-heapsnapshot.png');
      await page.screenshot({ path: shot });
      console.log(`screenshot: ${shot}`);
      for (const g of result.groups) assert.ok(await page.getByText(g.node).first().isVisible(), `${g.node} listed`);
    } finally {
      await chromium.close();
    }
    console.log(`labeled snapshot (app ${ran} ms, all ${Date.now() - started} ms): ${JSON.stringify({ ...result, groups: result.groups.map((g) => g.node) })}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// The Map the fixture's `leaked` variable holds: reached by a context edge named `leaked`.
function findLeakedMap(snap) {
  for (let i = 0; i < snap.count; i++) {
    for (const e of snap.edgesOf(i)) if (e.type === 'context' && e.name === 'leaked' && snap.name(e.to) === 'Map') return e.to;
  }
  throw new Error('no Map named leaked in the snapshot');
}
