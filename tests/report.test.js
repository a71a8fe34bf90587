'use strict';
// `heap-labels report|diff` (bin/heap-labels.js, lib/report/) and diffProfiles() on real profiles:
// a workload (fixtures/report-workload.js) where route /report/big retains far more than
// /report/small and grows between snapshots. The expected figures come from the pprof files
// themselves, decoded by the test-only decoder of tests/helpers.js (not lib/report/pprof-decode.js,
// the CLI's reader), and from the workload's in-process byLabel(). On stock runtimes samples carry no
// labels: one unlabeled group; on the patched runtime: one group per route.
//
// The HTML views are opened in headless Chromium (tests/browser.js) and read back from the DOM.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const { pathToFileURL } = require('node:url');
const { root, fixtureJson, fixtureOnce, decodePprof, encodePprof, labeledPprof, goPprof, asyncContextFrameFlags, tempDir, cli } = require('./helpers');
const { launchChromium, artifactPath } = require('./browser');
const lib = require('../lib');
const lib_mjs = import('../lib/index.mjs');

const FLAGS = ['--expose-gc'];
FLAGS.push(...asyncContextFrameFlags());

const tmp = tempDir('report');

function cliJson(...args) {
  const r = cli(...args, '--json');
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

const run = fixtureOnce('report-workload.js', tmp, FLAGS);
const labeled = () => run().capabilities.sampleLabels;

// Independent figures of a pprof file: per group (full label set, or one key's value, as byLabel
// groups them) the summed values, by sample type, and per leaf function.
function expected(file, key) {
  const p = decodePprof(fs.readFileSync(file));
  const idx = (type) => p.sampleTypes.findIndex((t) => t.type === type);
  const [ib, io, ab, ao] = [idx('inuse_space'), idx('inuse_objects'), idx('alloc_space'), idx('alloc_objects')];
  const fnOf = new Map(p.functions.map((f) => [f.id, f]));
  const locOf = new Map(p.locations.map((l) => [l.id, l]));
  const groups = new Map();
  let total = 0;
  for (const s of p.samples) {
    const labels = Object.fromEntries(s.labels.map((l) => [l.key, l.str]));
    let name;
    if (s.labels.length === 0) name = '(unlabeled)';
    else if (key === undefined || labels['heap_labels.overflow']) name = Object.keys(labels).sort().map((k) => `${k}=${JSON.stringify(labels[k])}`).join(', ');
    else name = key in labels ? `${key}=${JSON.stringify(labels[key])}` : '(unlabeled)';
    const g = groups.get(name) ?? { name, bytes: 0, objects: 0, allocBytes: 0, allocObjects: 0, samples: 0, sites: new Map() };
    groups.set(name, g);
    g.bytes += s.values[ib];
    g.objects += s.values[io];
    if (ab >= 0) {
      g.allocBytes += s.values[ab];
      g.allocObjects += s.values[ao];
    }
    g.samples++;
    total += s.values[ib];
    const leaf = locOf.get(s.locationIds[0]);
    const fn = leaf && fnOf.get(leaf.lines[0].functionId);
    // Named as the report names sites: function file:line, or the bare name of a builtin (no file).
    const site = !fn ? '(other sites)' : fn.filename ? `${fn.name} ${fn.filename}:${leaf.lines[0].line}` : fn.name;
    g.sites.set(site, (g.sites.get(site) ?? 0) + s.values[ib]);
  }
  return { total, groups, profile: p, hasAllocations: ab >= 0 && ao >= 0 };
}

const close = (a, b, slack, what) => assert.ok(Math.abs(a - b) <= slack, `${what}: ${a} vs ${b} (slack ${slack})`);

test('the workload ran and wrote three snapshots', () => {
  const w = run();
  assert.equal(w.snapshots.length, 3);
  for (const s of w.snapshots) assert.ok(fs.statSync(s.file).size > 0);
  assert.equal(w.kept, 74000);
});

test('report --json: per-group bytes and objects are the pprof file\'s own sums, shares add up', () => {
  const w = run();
  for (const key of [undefined, 'route']) {
    const file = w.snapshots[2].file;
    const [out] = cliJson('report', file, ...(key ? ['--key', key] : []));
    const exp = expected(file, key);
    assert.deepEqual(out.groups.map((g) => g.name).sort(), [...exp.groups.keys()].sort());
    for (const g of out.groups) {
      const e = exp.groups.get(g.name);
      assert.equal(g.inuseBytes, e.bytes, `${g.name} bytes`);
      assert.equal(g.inuseObjects, e.objects, `${g.name} objects`);
      close(g.share, e.bytes / exp.total, 1e-12, `${g.name} share`);
    }
    assert.equal(out.total.inuseBytes, exp.total);
    // And the JS profile's byLabel() of the same read, within pprof's per-sample rounding.
    const byLabel = key ? w.snapshots[2].byRoute : w.snapshots[2].byLabel;
    const inProcess = (g) => byLabel.find((b) => labelName(b.labels, key) === g.name);
    for (const g of out.groups) {
      const b = inProcess(g);
      assert.ok(b, `byLabel has ${g.name}`);
      close(g.inuseBytes, b.bytes, exp.groups.get(g.name).samples * 0.5 + 1, `${g.name} vs byLabel`);
    }
  }
});

function labelName(labels, key) {
  const keys = Object.keys(labels);
  if (keys.length === 0) return '(unlabeled)';
  if (key !== undefined && !labels['heap_labels.overflow']) return `${key}=${JSON.stringify(labels[key])}`;
  return keys.sort().map((k) => `${k}=${JSON.stringify(labels[k])}`).join(', ');
}

test('label text: lib/ writes every case of tests/fixtures/label-text.json as core/src/summary.rs does', () => {
  const { labelsText } = require('../lib/format');
  const cases = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', 'label-text.json'), 'utf8'));
  for (const [pairs, text] of cases) assert.equal(labelsText(Object.fromEntries(pairs)), text);
});

test('report (text): the label table and the top sites (function file:line) of each label', () => {
  const w = run();
  const file = w.snapshots[2].file;
  const r = cli('report', file, '--key', 'route', '--top', '3');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  const exp = expected(file, 'route');
  const lines = r.stdout.split('\n');
  const rowOf = (name) => lines.find((l) => l.startsWith(`${name} `));
  for (const [name, g] of exp.groups) {
    const row = rowOf(name);
    assert.ok(row, `a row for ${name} in:\n${r.stdout}`);
    assert.ok(row.includes(`${((g.bytes / exp.total) * 100).toFixed(1)}%`), `${name}'s share in: ${row}`);
    assert.ok(row.includes(Math.round(g.objects).toLocaleString('en-US')), `${name}'s objects in: ${row}`);
  }
  assert.ok(rowOf('total').includes('100.0%'));
  const bigSite = `retainBig ${w.workload.file}:${w.workload.bigLine}`;
  const smallSite = `retainSmall ${w.workload.file}:${w.workload.smallLine}`;
  // The section of each label: its heading line, then the indented site rows.
  const section = (name) => {
    const start = lines.findIndex((l, i) => l === name && i > lines.indexOf(lines.find((x) => x.startsWith('Top '))));
    assert.ok(start > 0, `a sites section for ${name}`);
    const end = lines.findIndex((l, i) => i > start + 1 && !l.startsWith('  '));
    return lines.slice(start + 2, end < 0 ? undefined : end);
  };
  if (!labeled()) {
    assert.deepEqual([...exp.groups.keys()], ['(unlabeled)']);
    assert.match(r.stdout, /No sample carries labels/);
    const sites = section('(unlabeled)');
    assert.ok(sites.length <= 3);
    assert.ok(sites[0].trim().startsWith(bigSite), `retainBig first in:\n${sites.join('\n')}`);
    return;
  }
  const big = exp.groups.get('route="/report/big"');
  const small = exp.groups.get('route="/report/small"');
  assert.ok(big.bytes > 5 * small.bytes, `big ${big.bytes} vs small ${small.bytes}`);
  assert.ok(lines.indexOf(rowOf('route="/report/big"')) < lines.indexOf(rowOf('route="/report/small"')), 'largest first');
  const bigSites = section('route="/report/big"');
  assert.ok(bigSites[0].trim().startsWith(bigSite), bigSites.join('\n'));
  assert.ok(!bigSites.some((l) => l.includes('retainSmall')), 'no site of another route');
  assert.ok(section('route="/report/small"')[0].trim().startsWith(smallSite));
});

test('report by full label set: one row per (route, tenant) set on the patched runtime', { skip: !labeled() && 'samples carry no labels on this runtime' }, () => {
  const w = run();
  const [out] = cliJson('report', w.snapshots[2].file);
  const names = out.groups.map((g) => g.name);
  assert.ok(names.includes('route="/report/big", tenant="acme"'), names.join(' '));
  assert.ok(names.includes('route="/report/small", tenant="globex"'), names.join(' '));
});

test('diff --json: growth per group and site is current minus base of the files\' own sums', () => {
  const w = run();
  const [base, current] = [w.snapshots[0].file, w.snapshots[1].file];
  const d = cliJson('diff', base, current, '--key', 'route', '--top', '5');
  const [eb, ec] = [expected(base, 'route'), expected(current, 'route')];
  for (const g of d.groups) {
    const b = eb.groups.get(g.name)?.bytes ?? 0;
    const c = ec.groups.get(g.name)?.bytes ?? 0;
    assert.equal(g.delta.inuseBytes, c - b, g.name);
    if (b > 0) close(g.percent, ((c - b) / b) * 100, 1e-9, `${g.name} percent`);
    for (const s of g.sites) {
      const sb = eb.groups.get(g.name)?.sites.get(s.name) ?? 0;
      const sc = ec.groups.get(g.name)?.sites.get(s.name) ?? 0;
      assert.equal(s.delta.inuseBytes, sc - sb, `${g.name} ${s.name}`);
    }
  }
  assert.equal(d.total.delta.inuseBytes, ec.total - eb.total);
  const bigSite = `retainBig ${w.workload.file}:${w.workload.bigLine}`;
  const grown = labeled() ? d.groups.find((g) => g.name === 'route="/report/big"') : d.groups[0];
  assert.ok(grown, d.groups.map((g) => g.name).join(' '));
  // 30000 more objects of ~300 bytes: several MB, nearly all at retainBig.
  assert.ok(grown.delta.inuseBytes > 4e6, `grew by ${grown.delta.inuseBytes}`);
  assert.equal(grown.sites[0].name, bigSite);
  if (labeled()) {
    assert.equal(d.groups[0].name, 'route="/report/big"', 'most grown first');
    const small = d.groups.find((g) => g.name === 'route="/report/small"');
    assert.ok(Math.abs(small.delta.inuseBytes) < grown.delta.inuseBytes / 10, `small moved by ${small.delta.inuseBytes}`);
  }
});

test('diff (text): a row per group with delta and percent, and the growing sites', () => {
  const w = run();
  const r = cli('diff', w.snapshots[0].file, w.snapshots[1].file, '--key', 'route', '--top', '2');
  assert.equal(r.status, 0, r.stderr);
  const d = cliJson('diff', w.snapshots[0].file, w.snapshots[1].file, '--key', 'route');
  const lines = r.stdout.split('\n');
  for (const g of d.groups) {
    const row = lines.find((l) => l.startsWith(`${g.name} `));
    assert.ok(row, `row ${g.name} in:\n${r.stdout}`);
    const growth = g.percent === null ? 'new' : `${g.percent > 0 ? '+' : ''}${g.percent.toFixed(1)}%`;
    assert.ok(row.includes(growth), `${growth} in ${row}`);
  }
  assert.ok(r.stdout.includes(`retainBig ${w.workload.file}:${w.workload.bigLine}`));
});

test('diffProfiles(base, current): in-process growth agrees with the CLI diff of the same reads', async () => {
  const w = run();
  assert.equal(typeof lib.diffProfiles, 'function');
  assert.equal((await lib_mjs).diffProfiles, lib.diffProfiles);
  const inProcess = w.diff;
  const fromFiles = cliJson('diff', w.snapshots[0].file, w.snapshots[1].file, '--key', 'route', '--top', '5');
  const exp = [expected(w.snapshots[0].file, 'route'), expected(w.snapshots[1].file, 'route')];
  assert.deepEqual(inProcess.groups.map((g) => g.name).sort(), fromFiles.groups.map((g) => g.name).sort());
  for (const g of inProcess.groups) {
    const f = fromFiles.groups.find((x) => x.name === g.name);
    const slack = (exp[0].groups.get(g.name)?.samples ?? 0) * 0.5 + (exp[1].groups.get(g.name)?.samples ?? 0) * 0.5 + 2;
    close(g.delta.inuseBytes, f.delta.inuseBytes, slack, `${g.name} delta`);
    close(g.current.inuseBytes, f.current.inuseBytes, slack, `${g.name} current`);
    // The figures are the profile's own byLabel('route') (kept by the fixture).
    const b = w.snapshots[1].byRoute.find((x) => labelName(x.labels, 'route') === g.name);
    close(g.current.inuseBytes, b.bytes, 1e-6, `${g.name} vs byLabel`);
    assert.equal(g.sites[0]?.name, f.sites[0]?.name, `${g.name}: same top growing site`);
  }
  assert.throws(() => lib.diffProfiles({}, {}), /expected an AllocationProfile/);
  assert.throws(() => lib.diffProfiles(undefined, undefined, { key: '' }), /key must be a non-empty string/);
});

test('go tool pprof -diff_base reads two of these files: the growth at retainBig', async () => {
  const w = run();
  const r = await goPprof(tmp, '-top', '-lines', '-unit=B', '-sample_index=inuse_space', '-nodecount=1000', '-diff_base', w.snapshots[0].file, w.snapshots[1].file);
  const d = cliJson('diff', w.snapshots[0].file, w.snapshots[1].file, '--top', '1000');
  const site = `retainBig ${w.workload.file}:${w.workload.bigLine}`;
  const ours = d.groups.flatMap((g) => g.sites).filter((s) => s.name === site).reduce((n, s) => n + s.delta.inuseBytes, 0);
  // "   8965964B 102.86% 102.86%   8965964B 102.86%  retainBig /path/report-workload.js:22"
  const row = r.stdout.split('\n').find((l) => l.includes(site));
  assert.ok(row, `${site} in:\n${r.stdout}`);
  const flat = Number(/^\s*(-?\d+)B/.exec(row)[1]);
  assert.equal(flat, ours);
  if (labeled()) {
    const focused = await goPprof(tmp, '-top', '-tagfocus', 'route=/report/big', '-diff_base', w.snapshots[0].file, w.snapshots[1].file);
    assert.match(focused.stdout, /retainBig/);
  }
});

test('allocated figures (trackAllocations): alloc columns where the profile has alloc_* types, none elsewhere', () => {
  const dir = fs.mkdtempSync(path.join(tmp, 'alloc-'));
  const w = fixtureJson('report-workload.js', { nodeArgs: FLAGS, args: [dir, 'alloc'] });
  const snap = w.snapshots[2];
  const exp = expected(snap.file, 'route');
  // The patched runtime reports dead samples; stock Node.js 26 marks kept ones (V8's is_live).
  assert.equal(exp.hasAllocations, snap.hasAllocations);
  const [out] = cliJson('report', snap.file, '--key', 'route');
  assert.equal(out.hasAllocations, snap.hasAllocations);
  const text = cli('report', snap.file, '--key', 'route').stdout;
  if (!snap.hasAllocations) {
    assert.doesNotMatch(text, /alloc bytes/);
    assert.ok(out.groups.every((g) => g.allocBytes === 0 && g.allocObjects === 0));
    return;
  }
  assert.match(text, /in-use objects\s+alloc bytes\s+alloc share\s+alloc objects/);
  for (const g of out.groups) {
    const e = exp.groups.get(g.name);
    assert.equal(g.allocBytes, e.allocBytes, g.name);
    assert.equal(g.allocObjects, e.allocObjects, g.name);
    // Allocated includes what is still in use, and the churn the workload dropped.
    assert.ok(g.allocBytes >= g.inuseBytes * 0.5, `${g.name}: allocated ${g.allocBytes}, in use ${g.inuseBytes}`);
  }
  const grown = out.groups.find((g) => g.name === (w.capabilities.sampleLabels ? 'route="/report/big"' : '(unlabeled)'));
  assert.ok(grown.allocBytes > grown.inuseBytes, 'the churn of /report/big was allocated and dropped');
});

test('package.json bin: heap-labels is bin/heap-labels.js, an executable node script', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  assert.equal(pkg.bin['heap-labels'], 'bin/heap-labels.js');
  assert.ok(pkg.files.includes('bin/'));
  // The reader is the package's own (lib/report/pprof-decode.js): no runtime dependency.
  assert.equal(pkg.dependencies?.['pprof-format'], undefined);
  const bin = path.join(root, pkg.bin['heap-labels']);
  assert.match(fs.readFileSync(bin, 'utf8'), /^#!\/usr\/bin\/env node\n/);
  assert.ok(fs.statSync(bin).mode & 0o111, 'executable');
});

test('bad input: one line on stderr, exit status 2, no stack trace', () => {
  const w = run();
  const notPprof = path.join(tmp, 'not.pb.gz');
  fs.writeFileSync(notPprof, zlib.gzipSync(Buffer.from('{"hello": "world"}')));
  const empty = path.join(tmp, 'empty.pb.gz');
  fs.writeFileSync(empty, '');
  const cases = [
    [['report', path.join(tmp, 'missing.pb.gz')], /missing\.pb\.gz: cannot read: no such file/],
    [['report', path.join(root, 'package.json')], /package\.json: not a pprof profile/],
    [['report', notPprof], /not\.pb\.gz: not a (pprof|heap) profile/],
    [['report', empty], /empty\.pb\.gz: not a heap profile/],
    [['report', tmp], /cannot read: is a directory/],
    [['report', w.snapshots[0].file, '--bogus'], /Unknown option '--bogus'/],
    [['report', w.snapshots[0].file, '--top', 'many'], /--top must be a non-negative integer/],
    [['report'], /no profile given/],
    [['diff', w.snapshots[0].file], /needs two profiles/],
    [['frobnicate'], /unknown command "frobnicate"/],
    [[], /usage: heap-labels report/],
  ];
  for (const [args, message] of cases) {
    const r = cli(...args);
    assert.equal(r.status, 2, `${args.join(' ')}: status ${r.status}\n${r.stderr}`);
    assert.match(r.stderr, message, args.join(' '));
    assert.equal(r.stdout, '');
    if (args.length) assert.equal(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr}`);
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  }
  const help = cli('--help');
  assert.equal(help.status, 0);
  assert.match(help.stdout, /heap-labels diff <base\.pb\.gz> <current\.pb\.gz>/);
});

// A labeled profile as the patched runtime writes it (string labels, the overflow set, an
// allocated-only "other sites" sample without location, Go's four sample types), encoded with
// pprof-format: the labeled and allocated paths of the reader checked on every runtime, against
// figures this test sets itself.
test('labeled pprof with allocation types: groups by set and by key, overflow, other sites', () => {
  const p = labeledPprof({
    samples: [
      { stack: ['keep', 'handle'], values: [10, 5000, 4, 2000], labels: { route: '/a', tenant: 't1' } },
      { stack: ['keep', 'handle'], values: [2, 600, 2, 600], labels: { route: '/a', tenant: 't2' } },
      { stack: ['handle'], values: [1, 100, 1, 100], labels: { route: '/b' } },
      { stack: [], values: [3, 900, 0, 0], labels: { route: '/b' } },
      { stack: ['keep'], values: [5, 700, 5, 700], labels: { 'heap_labels.overflow': 'true' } },
      { stack: ['handle'], values: [1, 50, 1, 50], labels: { tenant: 't9' } },
      { stack: ['handle'], values: [1, 30, 1, 30] },
    ],
  });
  const file = path.join(tmp, 'labeled.pb.gz');
  fs.writeFileSync(file, zlib.gzipSync(p));
  const [bySet] = cliJson('report', file);
  assert.equal(bySet.hasAllocations, true);
  // time_nanos (session start) + duration_nanos: when the read was made (doubles: ~256 ns apart).
  close(bySet.readNanos, 1_700_000_005_000_000_000, 1024, 'readNanos');
  const g = (out, name) => out.groups.find((x) => x.name === name);
  assert.deepEqual(
    bySet.groups.map((x) => [x.name, x.inuseBytes, x.allocBytes]),
    [
      ['route="/a", tenant="t1"', 2000, 5000],
      ['heap_labels.overflow="true"', 700, 700],
      ['route="/a", tenant="t2"', 600, 600],
      ['route="/b"', 100, 1000],
      ['tenant="t9"', 50, 50],
      ['(unlabeled)', 30, 30],
    ],
  );
  assert.deepEqual(g(bySet, 'route="/b"').sites.map((x) => [x.name, x.allocBytes]), [['handle /app.js:9', 100], ['(other sites)', 900]]);
  const [byRoute] = cliJson('report', file, '--key', 'route');
  assert.deepEqual(
    byRoute.groups.map((x) => [x.name, x.inuseBytes, x.inuseObjects, x.allocBytes, x.allocObjects]),
    [
      ['route="/a"', 2600, 6, 5600, 12],
      ['heap_labels.overflow="true"', 700, 5, 700, 5],
      ['route="/b"', 100, 1, 1000, 4],
      ['(unlabeled)', 80, 2, 80, 2],
    ],
  );
  const text = cli('report', file, '--key', 'route');
  assert.equal(text.status, 0, text.stderr);
  assert.match(text.stdout, /label\s+in-use bytes\s+share\s+in-use objects\s+alloc bytes\s+alloc share\s+alloc objects/);
  assert.match(text.stdout, /^route="\/a"\s+2\.5 KiB\s+74\.7%\s+6\s+5\.5 KiB\s+75\.9%\s+12$/m);
});

// --- HTML -------------------------------------------------------------------------------------

// Opens an HTML file in Chromium; fails on console errors, page errors and any request that is not
// the file itself (the page must be self-contained). Returns what `read(page)` returns.
async function inBrowser(t, file, screenshot, read) {
  const chromium = await launchChromium();
  try {
    const page = await chromium.context.newPage();
    const problems = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console.${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    const url = pathToFileURL(file).href;
    page.on('request', (req) => {
      if (req.url() !== url) problems.push(`request: ${req.url()}`);
    });
    await page.goto(url, { waitUntil: 'load' });
    const result = await read(page);
    const shot = artifactPath(screenshot);
    await page.screenshot({ path: shot, fullPage: true });
    t.diagnostic(`screenshot: ${shot}`);
    assert.deepEqual(problems, []);
    return result;
  } finally {
    await chromium.close();
  }
}

test('report --html of three snapshots: label bars, flame graph and timeline show the profiles\' figures', { timeout: 180_000 }, async (t) => {
  const w = run();
  const files = w.snapshots.map((s) => s.file);
  const html = path.join(tmp, 'report.html');
  const r = cli('report', ...files, '--key', 'route', '--html', html);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /wrote .*report\.html/);
  const source = fs.readFileSync(html, 'utf8');
  // (The SVG namespace URI is a name, not a fetch.)
  assert.doesNotMatch(source, /<(link|img|iframe)\b|\bsrc=|https?:\/\/(?!www\.w3\.org\/2000\/svg')/, 'nothing external');
  const exp = files.map((f) => expected(f, 'route'));
  const page = await inBrowser(t, html, 'report.png', async (p) => {
    const rows = await p.$$eval('tr.label-row', (trs) => trs.map((tr) => ({ label: tr.dataset.label, bytes: Number(tr.dataset.bytes), objects: Number(tr.dataset.objects), text: tr.textContent })));
    const lines = await p.$$eval('#timeline polyline', (ls) => ls.map((l) => ({ label: l.dataset.label, bytes: l.dataset.bytes.split(' ').map(Number), points: l.getAttribute('points').split(' ').length })));
    const title = await p.textContent('#title');
    // Click the last label: the flame graph shows that label's tree.
    const lastLabel = rows[rows.length - 1].label;
    await p.locator('tr.label-row').last().click();
    const flame = await p.$$eval('#flame .frame', (fs) => fs.map((f) => ({ name: f.dataset.name, value: Number(f.dataset.value) })));
    const flameLabel = await p.getAttribute('#flame', 'data-label');
    const selected = await p.$eval('#label-select', (s) => s.value);
    return { rows, lines, title, lastLabel, flame, flameLabel, selected };
  });
  assert.equal(page.title, 'heap-labels report by route');
  // The table is the latest snapshot's groups, largest first, with the file's own sums.
  const latest = exp[2];
  assert.deepEqual(page.rows.map((x) => x.label), [...latest.groups.values()].sort((a, b) => b.bytes - a.bytes).map((g) => g.name));
  for (const row of page.rows) {
    assert.equal(row.bytes, latest.groups.get(row.label).bytes, row.label);
    assert.equal(row.objects, latest.groups.get(row.label).objects, row.label);
    assert.ok(row.text.includes(`${((row.bytes / latest.total) * 100).toFixed(1)}%`), row.text);
  }
  // One line per label over the three snapshots, in time order.
  assert.deepEqual(page.lines.map((l) => l.label).sort(), [...new Set(exp.flatMap((e) => [...e.groups.keys()]))].sort());
  for (const line of page.lines) {
    assert.equal(line.points, 3);
    assert.deepEqual(line.bytes, exp.map((e) => e.groups.get(line.label)?.bytes ?? 0), line.label);
  }
  const big = labeled() ? 'route="/report/big"' : '(unlabeled)';
  const series = page.lines.find((l) => l.label === big).bytes;
  assert.ok(series[0] < series[1] && series[1] < series[2], `${big} grows: ${series}`);
  // The flame graph of the clicked label: its root is the label's total, and its sites appear.
  assert.equal(page.flameLabel, page.lastLabel);
  assert.equal(page.selected, page.lastLabel);
  assert.equal(page.flame[0].name, 'all');
  assert.equal(page.flame[0].value, latest.groups.get(page.lastLabel).bytes);
  const topSite = [...latest.groups.get(page.lastLabel).sites.entries()].sort((a, b) => b[1] - a[1])[0][0];
  assert.ok(page.flame.some((f) => f.name === topSite), `${topSite} in the flame graph`);
});

test('diff --html: growth bars per label and the growth flame graph', { timeout: 180_000 }, async (t) => {
  const w = run();
  const html = path.join(tmp, 'diff.html');
  const r = cli('diff', w.snapshots[0].file, w.snapshots[1].file, '--key', 'route', '--html', html);
  assert.equal(r.status, 0, r.stderr);
  const [eb, ec] = [expected(w.snapshots[0].file, 'route'), expected(w.snapshots[1].file, 'route')];
  const page = await inBrowser(t, html, 'diff.png', async (p) => ({
    rows: await p.$$eval('tr.label-row', (trs) => trs.map((tr) => ({ label: tr.dataset.label, delta: Number(tr.dataset.deltaBytes), bytes: Number(tr.dataset.bytes) }))),
    flame: await p.$$eval('#flame .frame', (fs) => fs.map((f) => ({ name: f.dataset.name, value: Number(f.dataset.value) }))),
    flameLabel: await p.getAttribute('#flame', 'data-label'),
    totalDelta: Number(await p.getAttribute('tr.total', 'data-delta-bytes')),
  }));
  assert.equal(page.totalDelta, ec.total - eb.total);
  for (const row of page.rows) {
    assert.equal(row.delta, (ec.groups.get(row.label)?.bytes ?? 0) - (eb.groups.get(row.label)?.bytes ?? 0), row.label);
    assert.equal(row.bytes, ec.groups.get(row.label)?.bytes ?? 0, row.label);
  }
  const big = labeled() ? 'route="/report/big"' : '(unlabeled)';
  assert.equal(page.rows[0].label, big, 'most grown first');
  assert.equal(page.flameLabel, big);
  const site = `retainBig ${w.workload.file}:${w.workload.bigLine}`;
  const siteGrowth = (ec.groups.get(big).sites.get(site) ?? 0) - (eb.groups.get(big).sites.get(site) ?? 0);
  const frames = page.flame.filter((f) => f.name === site);
  assert.ok(frames.length > 0, `${site} in the growth flame graph`);
  // Stacks that grew only (shrinking ones are left out), so at least the site's net growth.
  assert.ok(frames.reduce((n, f) => n + f.value, 0) >= siteGrowth, `${frames.map((f) => f.value)} vs ${siteGrowth}`);
});

// Three labeled snapshots as the patched runtime writes them (pprof-format, figures set here), so
// that the multi-label page (several bars, one timeline line per label, selecting another label)
// is checked on every runtime.
test('report --html of labeled snapshots: a line per label over time, clicking a label shows its tree', { timeout: 180_000 }, async (t) => {
  const files = [1, 2, 3].map((n) => {
    const p = encodePprof({
      samples: [
        { stack: ['keep', 'handle', 'main'], values: [10 * n, 100_000 * n], labels: { route: '/big' } },
        { stack: ['handle', 'main'], values: [5, 40_000], labels: { route: '/small' } },
        { stack: ['main'], values: [2, 20_000 * (4 - n)] },
      ],
      lines: { main: 1, handle: 9, keep: 5 },
      timeNanos: 1_700_000_000_000_000_000n,
      durationNanos: BigInt(n) * 60_000_000_000n,
      period: 4096,
    });
    const file = path.join(tmp, `labeled-${n}.pb.gz`);
    fs.writeFileSync(file, zlib.gzipSync(p));
    return file;
  });
  const html = path.join(tmp, 'labeled.html');
  // Given out of time order: the timeline orders by read time.
  const r = cli('report', files[2], files[0], files[1], '--key', 'route', '--html', html);
  assert.equal(r.status, 0, r.stderr);
  const page = await inBrowser(t, html, 'report-labeled.png', async (p) => {
    const rows = await p.$$eval('tr.label-row', (trs) => trs.map((tr) => [tr.dataset.label, Number(tr.dataset.bytes)]));
    const lines = await p.$$eval('#timeline polyline', (ls) => Object.fromEntries(ls.map((l) => [l.dataset.label, l.dataset.bytes])));
    const ticks = await p.$$eval('#timeline text', (ts) => ts.map((x) => x.textContent));
    await p.locator('tr.label-row', { hasText: 'route="/small"' }).click();
    const flame = await p.$$eval('#flame .frame', (fs) => fs.map((f) => [f.dataset.name, Number(f.dataset.value)]));
    return { rows, lines, ticks, flame, flameLabel: await p.getAttribute('#flame', 'data-label') };
  });
  assert.deepEqual(page.rows, [['route="/big"', 300_000], ['route="/small"', 40_000], ['(unlabeled)', 20_000]]);
  assert.deepEqual(page.lines, { 'route="/big"': '100000 200000 300000', 'route="/small"': '40000 40000 40000', '(unlabeled)': '60000 40000 20000' });
  assert.ok(['+0.0 s', '+60.0 s', '+120.0 s'].every((x) => page.ticks.includes(x)), page.ticks.join(' '));
  assert.equal(page.flameLabel, 'route="/small"');
  assert.deepEqual(page.flame, [['all', 40_000], ['main /app.js:1', 40_000], ['handle /app.js:9', 40_000]]);
});

test('report --html with many label sets: every label has its bar, the largest 200 their call tree', { timeout: 180_000 }, async (t) => {
  const n = 250;
  const p = encodePprof({
    samples: Array.from({ length: n }, (_, i) => ({ stack: ['alloc'], values: [1, 1000 + i], labels: { tenant: `t${i}` } })),
    lines: { alloc: 3 },
    period: 4096,
  });
  const file = path.join(tmp, 'many.pb.gz');
  fs.writeFileSync(file, zlib.gzipSync(p));
  const html = path.join(tmp, 'many.html');
  assert.equal(cli('report', file, '--html', html).status, 0);
  const page = await inBrowser(t, html, 'report-many.png', async (pg) => {
    const rows = await pg.$$eval('tr.label-row', (trs) => trs.map((tr) => tr.dataset.label));
    await pg.locator('tr.label-row').nth(199).click();
    const frames200 = await pg.$$eval('#flame .frame', (fs) => fs.length);
    await pg.locator('tr.label-row').last().click();
    return { rows, frames200, framesLast: await pg.$$eval('#flame .frame', (fs) => fs.length), detail: await pg.textContent('#flame-detail') };
  });
  assert.equal(page.rows.length, n);
  assert.equal(page.rows[0], `tenant="t${n - 1}"`, 'largest first');
  assert.equal(page.frames200, 2); // "all" and alloc
  assert.equal(page.framesLast, 0);
  assert.match(page.detail, /no call tree in this page for tenant="t0": only the 200 largest labels have one/);
});

test('report --html with retainers: a readable section of trees per label, names as text, the rest of the page unchanged', { timeout: 180_000 }, async (t) => {
  const p = encodePprof({
    samples: [
      { stack: ['record', 'handle'], values: [10, 40_000], labels: { route: '/leak' } },
      { stack: ['handle'], values: [1, 4_000], labels: { route: '/churn' } },
    ],
    lines: { record: 12, handle: 30 },
    period: 4096,
  });
  const file = path.join(tmp, 'with-retainers.pb.gz');
  fs.writeFileSync(file, zlib.gzipSync(p));
  // A retainers result as handle.retainers('route') gives it, with a name from request data.
  const step = (kind, text, bytes, children = [], more = {}) => ({ kind, text, bytes, samples: 1, share: bytes / 40_000, children, ...more });
  const result = {
    snapshot: { nodes: 91_615, snapshotMs: 1300, walkMs: 242, walkBytes: 1_000_000, pauseMs: 1600 },
    sampleInterval: 4096,
    key: 'route',
    groups: [
      {
        labels: { route: '/leak' },
        bytes: 40_000,
        samples: 10,
        unmatchedBytes: 0,
        unmatchedSamples: 0,
        paths: [
          step('object', 'Object', 36_000, [
            step('retainer', '[*] in (internal array)', 36_000, [
              step('retainer', 'table in Map', 36_000, [step('retainer', 'leaked in system / Context', 36_000, [], { edge: 'leaked' })], { name: 'Map' }),
            ]),
          ]),
          step('object', '<img src=x onerror=alert(1)> in Object', 4_000),
        ],
        sites: [{ functionName: 'record', url: '/app.js', lineNumber: 12, bytes: 40_000, samples: 10, share: 1 }],
      },
    ],
    moreGroups: { groups: 0, bytes: 0, samples: 0 },
  };
  const retainers = path.join(tmp, 'retainers.json');
  fs.writeFileSync(retainers, JSON.stringify(result));
  const html = path.join(tmp, 'with-retainers.html');
  const r = cli('report', file, '--key', 'route', '--retainers', retainers, '--html', html);
  assert.equal(r.status, 0, r.stderr);
  const page = await inBrowser(t, html, 'report-retainers.png', async (pg) => ({
    visible: await pg.isVisible('#retainers-section'),
    head: await pg.textContent('#retainers-section .retainers-head'),
    summary: await pg.textContent('.retainer-group summary'),
    rows: await pg.$$eval('.retainer-tree tr.step', (trs) => trs.map((tr) => [tr.querySelector('.share').textContent, tr.querySelector('.step-text').textContent, Number(tr.dataset.depth)])),
    sites: await pg.$$eval('.retainer-sites td', (tds) => tds.map((td) => td.textContent)),
    injected: await pg.$$eval('#retainers-section img', (imgs) => imgs.length),
    // The page's own views still work beside it.
    labels: await pg.$$eval('tr.label-row', (trs) => trs.map((tr) => tr.dataset.label)),
    frames: await pg.$$eval('#flame .frame', (fs) => fs.length),
    collapsed: await pg.locator('.retainer-group summary').click().then(() => pg.isVisible('.retainer-tree')),
    // Open again for the screenshot.
    reopened: await pg.locator('.retainer-group summary').click().then(() => pg.isVisible('.retainer-tree')),
  }));
  assert.equal(page.visible, true);
  assert.match(page.head, /^Retainers per route: heap snapshot of 91,615 nodes, app paused 1\.6 s \(snapshot 1\.3 s, walk 242 ms\)/);
  assert.equal(page.summary, 'route="/leak": 39.1 KiB in 10 samples');
  assert.deepEqual(page.rows, [
    ['90.0%', 'Object', 0],
    ['90.0%', '[*] in (internal array)', 1],
    ['90.0%', 'table in Map', 2],
    ['90.0%', 'leaked in system / Context', 3],
    ['10.0%', '<img src=x onerror=alert(1)> in Object', 0],
  ]);
  assert.equal(page.injected, 0, 'names are text, never markup');
  assert.deepEqual(page.sites, ['record /app.js:12', '39.1 KiB', '100.0%']);
  assert.deepEqual(page.labels, ['route="/leak"', 'route="/churn"']);
  assert.ok(page.frames >= 2, 'the flame graph is drawn');
  assert.deepEqual([page.collapsed, page.reopened], [false, true], 'a group folds and opens');
});
