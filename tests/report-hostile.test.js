'use strict';
/* global window, document -- the page.evaluate() callbacks run in the browser */
// `heap-labels report|diff` reading files from anywhere: gzip bombs and huge string tables are
// refused or read in bounded time and memory, deep stacks and many label groups do not overflow
// the stack, negative int64 values stay negative, and label values and function names reach the
// terminal escaped and the HTML page as text. Bad input: exit 2 with one line, no stack trace.
//
// Hostile files are built here: with pprof-format's encoder (encodePprof of tests/helpers.js; a
// devDependency, not the CLI's reader) for well-formed profiles, by hand for malformed bytes.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const { pathToFileURL } = require('node:url');
const { root, encodePprof, tempDir } = require('./helpers');
const { launchChromium } = require('./browser');

const BIN = path.join(root, 'bin', 'heap-labels.js');
const tmp = tempDir('hostile');

// Runs the CLI in a child that also reports its peak RSS: { status, stdout, stderr, ms, maxRssMiB }.
function cli(args, { timeout = 600_000 } = {}) {
  const started = Date.now();
  const r = spawnSync(
    process.execPath,
    ['-e', `process.on('exit', () => require('fs').writeSync(3, String(process.resourceUsage().maxRSS)));
            process.argv.splice(1, 0, ${JSON.stringify(BIN)}); require(${JSON.stringify(BIN)});`, '--', ...args],
    { encoding: 'utf8', timeout, stdio: ['ignore', 'pipe', 'pipe', 'pipe'], maxBuffer: 256 * 1024 * 1024 },
  );
  assert.equal(r.error, undefined, `the CLI did not finish within ${timeout} ms`);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, ms: Date.now() - started, maxRssMiB: Number(r.output[3]) / 1024 };
}

// One line on stderr, exit 2, no stack trace.
function assertBadInput(r, re) {
  assert.equal(r.status, 2, `exit ${r.status}: ${r.stderr.slice(0, 2000)}`);
  assert.match(r.stderr, /^heap-labels: [^\n]+\n$/, r.stderr.slice(0, 2000));
  assert.match(r.stderr, re);
}

function write(name, bytes) {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, bytes);
  return file;
}

// A gzip'd heap pprof of functions in app.js at V8's default sampling interval, from
// { samples: [{ stack: [names leaf first], values: [inuseObjects, inuseBytes], labels: {k: v} }] }.
const pprof = ({ samples }) => zlib.gzipSync(encodePprof({ samples, file: 'app.js', periodType: ['space', 'bytes'], period: 524288 }));

// profile.proto by hand: field 6 (string_table) entries "", "s0", "s1", ...
function stringsOnly(n) {
  const out = Buffer.alloc(2 + n * 10);
  let pos = out.writeUInt16BE(0x3200, 0);
  for (let i = 0; i < n; i++) {
    const s = `s${i}`;
    out[pos++] = 0x32;
    out[pos++] = s.length;
    pos += out.write(s, pos, 'latin1');
  }
  return out.subarray(0, pos);
}

test('a gzip bomb is refused at the inflated-size cap, fast and small; --max-inflated-mib raises the cap', () => {
  // 100 MiB of zeros in ~100 KB: past the 64 MiB default.
  const bomb = write('bomb.pb.gz', zlib.gzipSync(Buffer.alloc(100 * 1024 * 1024), { level: 9 }));
  assert.ok(fs.statSync(bomb).size < 200 * 1024);
  const r = cli(['report', bomb]);
  assertBadInput(r, /bomb\.pb\.gz: decompresses to more than 64 MiB \(raise it with --max-inflated-mib\)/);
  assert.ok(r.maxRssMiB < 400, `peak RSS ${r.maxRssMiB.toFixed(0)} MiB`);
  // Raised: read, and refused for what it is (zeros are not a profile).
  const raised = cli(['report', bomb, '--max-inflated-mib', '128']);
  assertBadInput(raised, /bomb\.pb\.gz: not a pprof profile \(field number 0\)/);
  assertBadInput(cli(['report', bomb, '--max-inflated-mib', 'lots']), /--max-inflated-mib must be a number of MiB/);
  // A plain (not gzip'd) file beyond the cap is refused before it is read.
  const big = write('big.pb', Buffer.alloc(65 * 1024 * 1024, 0x32));
  assertBadInput(cli(['report', big]), /big\.pb: larger than 64 MiB/);
  fs.rmSync(big);
  // A device without end, for every command that reads profiles (export --otlp too).
  for (const args of [['report', '/dev/zero'], ['diff', '/dev/zero', '/dev/zero'], ['export', '--otlp', '/dev/zero', '--out', path.join(tmp, 'zero.otlp.pb')]]) {
    const z = cli(args);
    assertBadInput(z, /\/dev\/zero: larger than 64 MiB/);
    assert.ok(z.maxRssMiB < 400, `${args[0]}: peak RSS ${z.maxRssMiB.toFixed(0)} MiB`);
  }
});

test('1M strings are read in one pass; more repeated elements than the size allows are refused', (t) => {
  // 1M strings (~8 MB; 2M took minutes and 1 GB before): read, then refused as not a heap profile
  // (no sample types).
  const strings = write('strings.pb.gz', zlib.gzipSync(stringsOnly(1_000_000)));
  const r = cli(['report', strings]);
  assertBadInput(r, /strings\.pb\.gz: not a heap profile \(sample types: none;/);
  t.diagnostic(`1M strings: ${r.ms} ms, peak RSS ${r.maxRssMiB.toFixed(0)} MiB`);
  assert.ok(r.maxRssMiB < 1024, `peak RSS ${r.maxRssMiB.toFixed(0)} MiB`);
  // 4.2M one-character strings in 12.6 MB: more than one element per 16 bytes of the 64 MiB cap.
  const many = Buffer.alloc(3 * 4_300_000);
  for (let i = 0; i < 4_300_000; i++) many.set([0x32, 1, 0x61], i * 3);
  const r2 = cli(['report', write('many.pb.gz', zlib.gzipSync(many))]);
  assertBadInput(r2, /not a pprof profile \(more than 4194304 repeated elements; the limit follows 64 MiB/);
});

test('malformed protobuf is one line and exit 2, whatever the bytes', () => {
  const cases = [
    [Buffer.from([0x12, 0x05, 0x01]), /length beyond the end of its message/],
    [Buffer.from([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), /varint longer than 10 bytes/],
    [Buffer.from([0x0b, 0x00]), /wire type 3/],
    [Buffer.from([0x12, 0x02, 0x0a, 0x05]), /length beyond the end of its message/],
    [Buffer.from([0x08]), /truncated varint/],
  ];
  for (const [bytes, re] of cases) assertBadInput(cli(['report', write('bad.pb', bytes)]), re);
});

test('text from the file in an error message is escaped: a sample type with a newline or ESC stays one line', () => {
  // Found by the fuzz suite (a mutated string table): "not a heap profile (sample types: ...)" named
  // the types as they were, so a newline split the CLI's one-line error.
  const good = zlib.gunzipSync(pprof({ samples: [{ stack: ['f'], values: [1, 64] }] }));
  const at = good.indexOf('inuse_space');
  assert.ok(at > 0);
  const bad = Buffer.from(good);
  bad.write('in\ns\x1b[2J', at, 'latin1'); // same length: the message stays well-formed protobuf
  const r = cli(['report', write('newline-type.pb', bad)]);
  assertBadInput(r, /not a heap profile \(sample types: inuse_objects, in\\ns\\x1b\[2J/);
  assert.ok(!r.stderr.includes('\x1b'), 'no ESC reaches the terminal');
});

test('130k label groups and a 5000-frame stack: report, --html and diff finish (no stack overflow)', () => {
  // 130k groups: past what Math.max(...rows) takes; 5000 frames: past what recursion over a call
  // tree takes (and JSON.stringify of a nested one).
  const deep = { stack: Array.from({ length: 5000 }, (_, i) => `frame${i}`), values: [1, 10_000_000], labels: { tenant: 'deep' } };
  const samples = [deep];
  for (let i = 0; i < 130_000; i++) samples.push({ stack: ['leaf', 'main'], values: [1, 1000 + i], labels: { tenant: `t${i}` } });
  const file = write('wide-deep.pb.gz', pprof({ samples }));
  const html = path.join(tmp, 'wide-deep.html');
  const r = cli(['report', file, '--top', '1', '--all', '--html', html]);
  assert.equal(r.status, 0, r.stderr.slice(0, 2000));
  assert.match(r.stdout, /^tenant="deep"\s+9\.5 MiB/m);
  assert.equal(r.stdout.match(/^tenant="t\d+" /gm).length, 130_000);
  assert.match(fs.readFileSync(html, 'utf8'), /frame4999/);
  const narrow = write('deep.pb.gz', pprof({ samples: [deep, { ...deep, labels: { tenant: 'other' } }] }));
  const diff = cli(['diff', narrow, file, '--top', '1', '--html', path.join(tmp, 'wide-deep-diff.html')]);
  assert.equal(diff.status, 0, diff.stderr.slice(0, 2000));
  assert.match(diff.stdout, /^tenant="t129999"\s/m);
});

test('negative int64 sample values are read as negative, not as 2^64 - x', () => {
  const file = write('negative.pb.gz', pprof({ samples: [{ stack: ['f'], values: [-2, -3072], labels: { route: '/neg' } }, { stack: ['g'], values: [1, 1024] }] }));
  const r = cli(['report', file, '--json']);
  assert.equal(r.status, 0, r.stderr);
  const neg = JSON.parse(r.stdout)[0].groups.find((g) => g.name === 'route="/neg"');
  assert.equal(neg.inuseBytes, -3072);
  assert.equal(neg.inuseObjects, -2);
  const text = cli(['report', file]);
  assert.match(text.stdout, /^route="\/neg"\s+-3\.0 KiB/m);
  assert.doesNotMatch(text.stdout, /TiB/);
});

const HOSTILE = {
  newline: 'ok\nroute=/forged  999 GiB  100.0%',
  ansi: '\u001b[2J\u001b[31mred',
  osc: '\u001b]8;;https://evil.example\u0007click\u001b]8;;\u0007',
  csi: '\u009b31m',
  bidi: 'abc\u202edcba',
  markup: '</script><script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">',
};

function hostileProfile() {
  return pprof({
    samples: Object.entries(HOSTILE).map(([name, value], i) => ({
      stack: [`fn_${name}_${value}`, 'main'],
      values: [1, 1024 * (i + 1)],
      labels: { tenant: value, [`k\u001b[1m${name}`]: 'v' },
    })),
  });
}

test('label values and function names reach the terminal escaped: no control characters, no forged rows', () => {
  const file = write('hostile.pb.gz', hostileProfile());
  for (const args of [['report', file], ['report', file, '--key', 'tenant'], ['diff', file, file]]) {
    const r = cli(args);
    assert.equal(r.status, 0, r.stderr);
    // eslint-disable-next-line no-control-regex -- no control character may get through
    assert.doesNotMatch(r.stdout, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/, `${args.join(' ')}: a control character got through`);
    assert.doesNotMatch(r.stdout, /^route=\/forged/m);
  }
  const r = cli(['report', file, '--key', 'tenant']);
  assert.match(r.stdout, /^tenant="ok\\nroute=\/forged {2}999 GiB {2}100\.0%"\s/m);
  assert.match(r.stdout, /tenant="\\u001b\[2J\\u001b\[31mred"/);
  assert.match(r.stdout, /tenant="\\u001b]8;;https:\/\/evil\.example\\u0007click/);
  assert.match(r.stdout, /tenant="abc\\u202edcba"/);
  assert.match(r.stdout, /tenant="\\u009b31m"/);
  assert.match(cli(['report', file]).stdout, /^"k\\u001b\[1mansi"="v", tenant="\\u001b\[2J/m);
  assert.match(r.stdout, /fn_ansi_\\x1b\[2J/);
  // --json carries the values as they are (JSON escapes them).
  const json = JSON.parse(cli(['report', file, '--json', '--key', 'tenant']).stdout);
  assert.ok(json[0].groups.some((g) => g.labels.tenant === HOSTILE.osc));
});

test('the HTML report shows label values and function names as text, never as markup', async (t) => {
  const file = write('hostile-html.pb.gz', hostileProfile());
  const html = path.join(tmp, 'hostile.html');
  const r = cli(['report', file, '--key', 'tenant', '--html', html]);
  assert.equal(r.status, 0, r.stderr);
  const page = fs.readFileSync(html, 'utf8');
  assert.doesNotMatch(page, /<img src=x/);
  assert.equal(page.match(/<script/g).length, 2, 'only the page\'s own two script elements');
  let chromium;
  try {
    chromium = await launchChromium();
  } catch (err) {
    t.skip(`no browser: ${err.message}`);
    return;
  }
  try {
    const tab = await chromium.context.newPage();
    const errors = [];
    tab.on('pageerror', (e) => errors.push(e.message));
    await tab.goto(pathToFileURL(html).href, { waitUntil: 'load' });
    assert.equal(await tab.evaluate(() => window.pwned), undefined);
    assert.equal(await tab.evaluate(() => document.querySelectorAll('img, #labels script').length), 0);
    const names = await tab.evaluate(() => [...document.querySelectorAll('#labels td.name')].map((td) => td.textContent));
    assert.ok(names.some((n) => n.includes('</script><script>window.pwned = 1</script><img src=x onerror=\\"window.pwned = 2\\">')), names.join('\n'));
    const frames = await tab.evaluate(() => [...document.querySelectorAll('#flame .frame')].map((d) => d.getAttribute('data-name')));
    assert.ok(frames.length > 0);
    assert.deepEqual(errors, []);
  } finally {
    await chromium.close();
  }
});

// 27.11: a report is bounded by default (the largest groups, a line for the rest, --all for every
// group); values a sum cannot take as they are are reported; one inflated-size limit for every
// command that reads profiles.

test('27.11 report lists the 50 largest groups by default, one line for the rest; --all lists every group (text and --json)', () => {
  const samples = Array.from({ length: 120 }, (_, i) => ({ stack: [`site${i % 3}`, 'main'], values: [1, 1024 * (i + 1)], labels: { tenant: `t${i}` } }));
  const file = write('many-groups.pb.gz', pprof({ samples }));
  const restBytes = Array.from({ length: 70 }, (_, i) => 1024 * (i + 1)).reduce((a, b) => a + b, 0);
  const totalBytes = Array.from({ length: 120 }, (_, i) => 1024 * (i + 1)).reduce((a, b) => a + b, 0);

  const r = cli(['report', file]);
  assert.equal(r.status, 0, r.stderr);
  const rows = r.stdout.match(/^tenant="t\d+" /gm);
  assert.equal(rows.length, 50, 'one table row per shown group, none in the site sections');
  assert.match(r.stdout, /^tenant="t119"\s+120 KiB/m);
  assert.match(r.stdout, /^tenant="t70"\s/m);
  assert.doesNotMatch(r.stdout, /^tenant="t69"\s/m);
  const share = ((restBytes / totalBytes) * 100).toFixed(1);
  assert.match(r.stdout, new RegExp(`^70 more groups not shown \\(2\\.4 MiB, ${share.replace('.', '\\.')}% of in-use bytes\\): --all shows every group$`, 'm'));
  assert.equal(r.stdout.match(/^ {2}site\d main/gm), null);
  assert.equal(r.stdout.match(/^ {2}site\d app\.js:1/gm).length, 50, 'sites of the shown groups only');

  const all = cli(['report', file, '--all']);
  assert.equal(all.status, 0, all.stderr);
  assert.equal(all.stdout.match(/^tenant="t\d+" /gm).length, 120);
  assert.doesNotMatch(all.stdout, /more groups? not shown/);

  const json = JSON.parse(cli(['report', file, '--json']).stdout)[0];
  assert.equal(json.groupCount, 120);
  assert.equal(json.groups.length, 50);
  assert.deepEqual(json.groups.map((g) => g.labels.tenant), Array.from({ length: 50 }, (_, i) => `t${119 - i}`));
  assert.equal(json.moreGroups.count, 70);
  assert.equal(json.moreGroups.inuseBytes, restBytes);
  assert.equal(json.moreGroups.inuseObjects, 70);
  assert.equal(json.total.inuseBytes, totalBytes);
  const jsonAll = JSON.parse(cli(['report', file, '--json', '--all']).stdout)[0];
  assert.equal(jsonAll.groups.length, 120);
  assert.equal(jsonAll.moreGroups, null);
  // --all is report's: diff and export refuse it.
  assertBadInput(cli(['diff', file, file, '--all']), /--all is an option of report/);
});

test('27.11 report of 600k label groups: read within the default limit, in bounded memory, printing a bounded table', (t) => {
  // The profile of docs/performance.md's measurement (benchmark/report/wide-profile.js): one sample
  // per { tenant, route } set. Before, it was refused at the default limit (its samples' ids,
  // values and labels counted as kept elements), and read with a raised limit it printed 170 MB.
  const { wideProfile } = require('../benchmark/report/wide-profile');
  const file = write('wide-600k.pb.gz', wideProfile(600_000));
  const r = cli(['report', file]);
  assert.equal(r.status, 0, r.stderr.slice(0, 2000));
  t.diagnostic(`600k groups: ${r.ms} ms, peak RSS ${r.maxRssMiB.toFixed(0)} MiB, ${r.stdout.length} bytes printed`);
  assert.ok(r.stdout.length < 64 * 1024, `${r.stdout.length} bytes printed`);
  assert.match(r.stdout, /^599,950 more groups not shown \([^)]+\): --all shows every group$/m);
  assert.ok(r.maxRssMiB < 768, `peak RSS ${r.maxRssMiB.toFixed(0)} MiB`);
  const byTenant = cli(['report', file, '--key', 'tenant', '--json', '--top', '1']);
  assert.equal(byTenant.status, 0, byTenant.stderr.slice(0, 2000));
  const summary = JSON.parse(byTenant.stdout)[0];
  assert.equal(summary.groupCount, Math.ceil(600_000 / 64)); // tenant-${i >> 6}
  assert.equal(summary.groups.length + summary.moreGroups.count, summary.groupCount);
  assert.equal(summary.groups.reduce((a, g) => a + g.inuseObjects, 0) + summary.moreGroups.inuseObjects, summary.total.inuseObjects);
});

test('27.11 negative and overflowing sample values: one warning line each on stderr (how many, which types), figures as the warning says', () => {
  const negative = write('negative-warn.pb.gz', pprof({
    samples: [
      { stack: ['f'], values: [-2, -3072], labels: { route: '/neg' } },
      { stack: ['g'], values: [1, 1024] },
      { stack: ['h'], values: [-1, 5], labels: { route: '/neg' } },
    ],
  }));
  const warning = /^heap-labels: warning: \S+negative-warn\.pb\.gz: 3 negative sample values \(2 inuse_objects, 1 inuse_space\): summed as they are, so figures are net amounts$/m;
  for (const args of [['report', negative], ['report', negative, '--json'], ['report', negative, '--all', '--top', '0'], ['diff', negative, negative]]) {
    const r = cli(args);
    assert.equal(r.status, 0, r.stderr);
    const times = args[0] === 'diff' ? 2 : 1;
    assert.equal(r.stderr.match(new RegExp(warning.source, 'gm'))?.length, times, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr.split('\n').filter(Boolean).length, times, r.stderr);
  }
  const json = JSON.parse(cli(['report', negative, '--json']).stdout)[0];
  assert.equal(json.groups.find((g) => g.name === 'route="/neg"').inuseBytes, -3067);
  assert.equal(json.warnings.length, 1);

  // 2^60 in one sample, and three of 2^52 whose sum passes 2^53: approximate, said once.
  const huge = write('huge-warn.pb.gz', pprof({
    samples: [
      { stack: ['f'], values: [1, 2n ** 60n], labels: { route: '/huge' } },
      ...Array.from({ length: 3 }, () => ({ stack: ['g'], values: [1, 2n ** 52n], labels: { route: '/big' } })),
    ],
  }));
  const r = cli(['report', huge]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /^heap-labels: warning: \S+huge-warn\.pb\.gz: 1 sample value beyond 2\^53 - 1 \(1 inuse_space\); sums of inuse_space can pass it: such figures are rounded to the nearest representable number \(approximate, not exact\)\n$/);
  assert.match(r.stdout, /^route="\/huge"\s+1048576 TiB\s/m); // 2^60 bytes, the nearest double of the sum
  // A clean profile: nothing on stderr.
  const clean = cli(['report', write('clean.pb.gz', pprof({ samples: [{ stack: ['f'], values: [1, 64] }] }))]);
  assert.equal(clean.stderr, '');
});

test('27.11 export --otlp and report share one inflated-size limit, named in the error with how to raise it', () => {
  // A valid heap profile padded with an unknown field to 70 MiB once inflated (~70 KB gzip'd):
  // past the 64 MiB default. Before, report refused it and export --otlp (its own 512 MiB cap)
  // converted it.
  const profile = zlib.gunzipSync(pprof({ samples: [{ stack: ['f'], values: [1, 64], labels: { route: '/a' } }] }));
  const pad = 70 * 1024 * 1024;
  const key = Buffer.from([0x7a]); // field 15, length-delimited: skipped by every reader
  const length = [];
  let n = pad;
  for (; n >= 0x80; n >>>= 7) length.push((n & 0x7f) | 0x80);
  length.push(n);
  const padded = write('padded.pb.gz', zlib.gzipSync(Buffer.concat([profile, key, Buffer.from(length), Buffer.alloc(pad)])));
  const out = path.join(tmp, 'padded.otlp.pb');
  const limit = /padded\.pb\.gz: decompresses to more than 64 MiB \(raise it with --max-inflated-mib\)/;
  assertBadInput(cli(['report', padded]), limit);
  assertBadInput(cli(['export', '--otlp', padded, '--out', out]), limit);
  assert.ok(!fs.existsSync(out));
  // Raised, both read it.
  const report = cli(['report', padded, '--max-inflated-mib', '128']);
  assert.equal(report.status, 0, report.stderr);
  assert.match(report.stdout, /^route="\/a"\s+64 B/m);
  const exported = cli(['export', '--otlp', padded, '--out', out, '--max-inflated-mib', '128']);
  assert.equal(exported.status, 0, exported.stderr);
  assert.ok(fs.statSync(out).size > 0);
});
