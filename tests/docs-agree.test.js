'use strict';
// What is written in more than one place must agree: each entry's exports against its .d.ts (and
// the main entry's ESM twin), and the agent's option table (lib/config.js) against AgentOptions in
// lib/index.d.ts and the table of docs/operations.md. A name added to one place and not the others
// fails here.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const read = (file) => fs.readFileSync(path.join(root, file), 'utf8');
const sorted = (names) => [...new Set(names)].sort();

// The value names a declaration file exports (functions, consts, classes, re-exported values),
// without types and without `default`.
function declaredValues(file) {
  const text = read(file);
  const names = [...text.matchAll(/^export (?:declare )?(?:function|const|let|class) (\w+)/gm)].map((m) => m[1]);
  for (const m of text.matchAll(/^export (?!type )\{([^}]*)\}/gm)) {
    for (const part of m[1].split(',')) {
      const name = part.trim();
      if (name && !name.startsWith('type ')) names.push(name.split(/\s+as\s+/).pop());
    }
  }
  return sorted(names);
}

const pkg = JSON.parse(read('package.json'));
const entries = Object.entries(pkg.exports).filter(([, target]) => typeof target === 'object' && target.types);

for (const [subpath, target] of entries) {
  if (subpath === './register') continue; // a preload: exports nothing (lib/register.d.ts says so)
  test(`heap-labels${subpath.slice(1)}: the module exports what ${target.types} declares`, () => {
    const file = target.require ?? target.default;
    const exported = sorted(Object.keys(require(path.join(root, file))));
    assert.deepEqual(exported, declaredValues(target.types.slice(2)));
  });
}

// The modules behind the report and the integrations entries, and their internal ones: each has a
// .d.ts beside it that declares exactly its exports, and scripts/test.d/40-typescript.sh checks
// every such .d.ts (tests/types/tsconfig.json includes them all, not only those the usage files
// import).
const DECLARED_DIRS = ['lib/report', 'lib/integrations'];
for (const dir of DECLARED_DIRS) {
  for (const name of fs.readdirSync(path.join(root, dir)).filter((f) => f.endsWith('.js'))) {
    const types = `${dir}/${name.replace(/\.js$/, '.d.ts')}`;
    test(`${dir}/${name} exports what ${types} declares`, () => {
      assert.ok(fs.existsSync(path.join(root, types)), `${types} is missing`);
      assert.deepEqual(sorted(Object.keys(require(path.join(root, dir, name)))), declaredValues(types));
    });
  }
}

test('scripts/test.d/40-typescript.sh type-checks every .d.ts of lib/report/ and lib/integrations/', () => {
  const config = JSON.parse(read('tests/types/tsconfig.json').replace(/^\s*\/\/.*$/gm, ''));
  for (const dir of DECLARED_DIRS) assert.ok(config.include?.includes(`../../${dir}/*.d.ts`), `tests/types/tsconfig.json includes ${dir}/*.d.ts`);
  assert.match(read('scripts/test.d/40-typescript.sh'), /"\$tsc" -p tests\/types\/tsconfig\.json/);
});

test('heap-labels: the ESM entry exports what the CommonJS entry does', async () => {
  const esm = await import(path.join(root, pkg.exports['.'].import));
  const named = Object.keys(esm).filter((name) => name !== 'default');
  assert.deepEqual(sorted(named), sorted(Object.keys(require(root))));
});

test('the agent\'s options: lib/config.js, AgentOptions in lib/index.d.ts and docs/operations.md agree', () => {
  const { describeOptions } = require('../lib/config');
  const table = describeOptions();
  const options = sorted(table.map((o) => o.option));

  const dts = read('lib/index.d.ts');
  const body = dts.slice(dts.indexOf('export interface AgentOptions {'), dts.indexOf('export interface ResolvedAgentOptions'));
  assert.deepEqual(sorted([...body.matchAll(/^ {2}(\w+)\?:/gm)].map((m) => m[1])), options, 'AgentOptions members');
  for (const { option, env } of table) {
    const member = body.slice(0, body.indexOf(`  ${option}?:`));
    const doc = member.slice(member.lastIndexOf('/**'));
    assert.ok(doc.includes(env), `AgentOptions.${option}'s comment names ${env}`);
  }

  const rows = [...read('docs/operations.md').matchAll(/^\| `(HEAP_LABELS_\w+)` \| `(\w+)` \|/gm)];
  assert.deepEqual(
    sorted(rows.map((m) => `${m[2]} ${m[1]}`)),
    sorted(table.map((o) => `${o.option} ${o.env}`)),
    'the table of docs/operations.md',
  );
});

// ---- numbers -------------------------------------------------------------------------------------
// Every default, limit and range of the label rules, the session options (startHeapProfile(),
// heap-labels/v8) and the agent's options written in lib/*.d.ts, docs/*.md and README.md, against
// its owner's value: the label rules' from the core (the addon's labelRules()), the session
// options' from lib/session-options.js (its ranges from the addon's sessionLimits()), the agent's
// from lib/config.js (describeOptions()). The option docs of the .d.ts interfaces and the option
// tables of the docs are read whole (any range or default a member or row states); the prose
// statements are listed below, each required to be found, so that rewording one means updating it
// here rather than dropping it unchecked.

const { native } = require('../lib/native');
const session = require('../lib/session-options');
const { describeOptions } = require('../lib/config');

const RULES = native.labelRules();
const AGENT = new Map(describeOptions().map((o) => [o.option, o]));
const AGENT_BY_ENV = new Map(describeOptions().map((o) => [o.env, o]));
const RESERVED = RULES.reservedKeys.map((r) => r.text);

// Text as one line: comment continuations (` * `, `// `) and line breaks become single spaces.
const flat = (text) => text.replace(/\n\s*(?:\*(?!\/)|\/\/)?[ \t]*/g, ' ').replace(/[ \t]+/g, ' ');

const NUMBER = String.raw`2\^32 ?- ?1|\d+(?:,\d{3})*(?:\.\d+)?(?: (?:KiB|MiB))?`;

// A number as written: 2^32-1, 65,536, 0.1, 512 KiB, 4 MiB.
function num(text) {
  const t = text.trim();
  if (/^2\^32 ?- ?1$/.test(t)) return 2 ** 32 - 1;
  const m = /^(\d+(?:,\d{3})*(?:\.\d+)?)(?: (KiB|MiB))?$/.exec(t);
  assert.ok(m, `${JSON.stringify(text)} is not a number`);
  return Number(m[1].replaceAll(',', '')) * (m[2] === 'KiB' ? 1024 : m[2] === 'MiB' ? 1024 * 1024 : 1);
}

// Whether `text` (a default as written: 524288, 512 KiB, on, 'SIGUSR2', `off`, none) says `value`.
function saysValue(text, value) {
  const t = text.trim().replace(/^[`'"]|[`'"]$/g, '');
  if (typeof value === 'number') return new RegExp(`^(?:${NUMBER})$`).test(t) && num(t) === value;
  if (value === true) return t === 'true' || t === 'on';
  if (value === false) return t === 'false' || t === 'off';
  if (value === null) return ['off', 'none', 'null', "off'/null"].includes(t);
  if (typeof value === 'string') return t === value;
  if (typeof value === 'object' && Object.keys(value).length === 0) return t === 'none';
  return false;
}

// Defaults that depend on the process and are described in words, not values: where each doc's
// statement must start.
const DESCRIBED_DEFAULTS = {
  dir: ['the working directory'],
  serviceName: ['OTEL_SERVICE_NAME', '`OTEL_SERVICE_NAME`'],
};

function checkDefault(where, option, text, value) {
  if (DESCRIBED_DEFAULTS[option]) {
    assert.ok(DESCRIBED_DEFAULTS[option].some((d) => text.startsWith(d)), `${where}: ${option}'s default is "${text}"`);
    return;
  }
  assert.ok(saysValue(text, value), `${where}: ${option}'s default is written "${text}", its owner's is ${JSON.stringify(value)}`);
}

// The ranges (`a..b`, `a to b`, with `dash` also `a-b`) and defaults (`default x`, `(default x)`,
// `x (default)`) a piece of option documentation states.
function statements(text, dash = false) {
  const to = dash ? String.raw`\.\.=?| to |-` : String.raw`\.\.=?| to `;
  const ranges = [...text.matchAll(new RegExp(`(?<![\\w.])(${NUMBER})( \\(off\\))?(?:${to})(${NUMBER})(?!\\w|\\.\\d)`, 'g'))].map(
    (m) => ({ min: num(m[1]), max: num(m[3]), text: m[0] }),
  );
  const defaults = [
    ...[...text.matchAll(new RegExp(`\\bdefault:? ((?:${NUMBER})(?!\\w|\\.\\d)|[^\\s,;:)]+(?: working directory)?)`, 'g'))].map((m) => m[1].replace(/\.$/, '')),
    ...[...text.matchAll(/(\S+) \(default\)/g)].map((m) => m[1]),
  ];
  return { ranges, defaults };
}

// The members of `export interface name { ... }` in a .d.ts, each with its doc comment.
function interfaceMembers(file, name) {
  const text = read(file);
  const start = text.indexOf(`export interface ${name} {`);
  assert.ok(start >= 0, `${file} declares ${name}`);
  const body = text.slice(start, text.indexOf('\n}', start));
  return [...body.matchAll(/\/\*\*([\s\S]*?)\*\/\s*(\w+)\??:/g)].map((m) => ({ option: m[2], doc: flat(m[1]).trim() }));
}

// What a session option's documentation may state: its rule's range and its default.
function sessionOwner(option, defaults) {
  const rule = session.RULES[option];
  const bounds =
    rule?.type === 'integer' ? { min: rule.min, max: rule.max } : rule?.type === 'keys' ? { min: 1, max: rule.maxKeys } : undefined;
  return { bounds, default: defaults[option], hasDefault: Object.hasOwn(defaults, option) };
}

function checkOptionDoc(where, option, doc, owner, dash = false) {
  const { ranges, defaults } = statements(doc, dash);
  for (const range of ranges) {
    assert.ok(owner.bounds, `${where}: ${option} states a range (${range.text}), but its owner has none`);
    assert.deepEqual([range.min, range.max], [owner.bounds.min, owner.bounds.max], `${where}: ${option}'s range ${range.text}`);
  }
  if (owner.bounds?.off !== undefined && ranges.length) {
    assert.match(doc, /\b0 \(off\)|\b0 or\b|\(0: off\)/, `${where}: ${option} says 0 turns it off`);
  }
  for (const text of defaults) {
    assert.ok(owner.hasDefault, `${where}: ${option} states a default (${text}), but its owner has none`);
    checkDefault(where, option, text, owner.default);
  }
  return ranges.length + defaults.length;
}

test('label limits and reserved keys: lib/index.d.ts, docs/api.md and docs/architecture.md state the core\'s', () => {
  const limits = [RULES.maxLabels, RULES.maxKeyBytes, RULES.maxValueBytes];
  const claims = [
    ['lib/index.d.ts', /At most (\d+) labels; keys 1\.\.(\d+) bytes and values 0\.\.(\d+) bytes of UTF-8/, limits],
    ['lib/index.d.ts', /keys starting with `([^`]+)` and `([^`]+)` are reserved/, RESERVED],
    ['docs/api.md', /limits: \{ maxLabels: (\d+), maxKeyBytes: (\d+), maxValueBytes: (\d+) \}/, limits],
    ['docs/api.md', /more than (\d+) labels, keys over (\d+) bytes or values over (\d+) bytes of UTF-8/, limits],
    ['docs/api.md', /Keys starting with `([^`]+)` are reserved \(the overflow set's\), and so is `([^`]+)`/, RESERVED],
    ['docs/architecture.md', /at most (\d+) pairs, keys 1\.\.=(\d+) bytes, values 0\.\.=(\d+) bytes/, limits],
    ['docs/architecture.md', /Reserved keys \(`is_reserved_key`, also checked by lib\/\): the `([^`]+)` namespace/, [RESERVED[0]]],
  ];
  for (const [file, re, expected] of claims) {
    const m = re.exec(flat(read(file)));
    assert.ok(m, `${file} no longer says ${re}: update this test with it`);
    const written = m.slice(1).map((v) => (/^\d+$/.test(v) ? Number(v) : v));
    assert.deepEqual(written, expected, `${file}: ${m[0]}`);
  }
  assert.deepEqual(require(root).limits, { maxLabels: RULES.maxLabels, maxKeyBytes: RULES.maxKeyBytes, maxValueBytes: RULES.maxValueBytes });
});

test('session options: HeapProfileOptions (lib/index.d.ts), StartHeapProfileOptions (lib/v8.d.ts) and the docs state lib/session-options.js\'s ranges and defaults', () => {
  const v8Defaults = { ...session.DEFAULTS, ...session.NODE_V8_DEFAULTS };
  let stated = 0;
  for (const [file, name, defaults] of [
    ['lib/index.d.ts', 'HeapProfileOptions', session.DEFAULTS],
    ['lib/v8.d.ts', 'StartHeapProfileOptions', v8Defaults],
  ]) {
    for (const { option, doc } of interfaceMembers(file, name)) {
      stated += checkOptionDoc(`${file} ${name}`, option, doc, sessionOwner(option, defaults));
      // "Integer >= 1": the least value.
      for (const m of doc.matchAll(/[Ii]nteger >= (\d+)/g)) assert.equal(Number(m[1]), session.RULES[option].min, `${file}: ${option}`);
      // groupBy's keys: "of at most N bytes".
      for (const m of doc.matchAll(/keys of at most (\d+) bytes/g)) assert.equal(Number(m[1]), session.RULES.groupBy.maxKeyBytes, `${file}: ${option}`);
    }
  }
  assert.ok(stated >= 16, `only ${stated} ranges and defaults found in the option docs: did the format change?`);

  // docs/api.md's signature: `option?: type /* default */`.
  const api = flat(read('docs/api.md'));
  const signature = api.slice(api.indexOf('startHeapProfile(options?: {'), api.indexOf('}): HeapProfileHandle;'));
  const inline = [...signature.matchAll(/(\w+)\?: \w+ \/\* ([^*]+?) \*\//g)];
  assert.ok(inline.length >= 4, 'docs/api.md: startHeapProfile\'s defaults');
  for (const [, option, text] of inline) checkDefault('docs/api.md startHeapProfile', option, text, session.DEFAULTS[option]);

  // docs/v8-api.md's signature: `option?: type; // comment`.
  const v8api = read('docs/v8-api.md');
  const block = v8api.slice(v8api.indexOf('startHeapProfile(options?: {'), v8api.indexOf('}): HeapProfileHandle;'));
  let v8stated = 0;
  for (const m of block.matchAll(/^ {2}(\w+)\?: [^;]+; *\/\/ (.*)$/gm)) {
    // Code comments there write ranges as `a-b`.
    v8stated += checkOptionDoc('docs/v8-api.md startHeapProfile', m[1], m[2], sessionOwner(m[1], v8Defaults), true);
    for (const b of m[2].matchAll(/<= (\d+) bytes each/g)) assert.equal(Number(b[1]), session.RULES.groupBy.maxKeyBytes, 'docs/v8-api.md groupBy');
  }
  assert.ok(v8stated >= 5, `docs/v8-api.md: only ${v8stated} ranges and defaults found`);

  // Prose.
  const claims = [
    ['README.md', /startHeapProfile\(\); +\/\/ V8's sampling heap profiler, (\d+ KiB)/, (m) => [num(m[1]), session.DEFAULTS.sampleInterval]],
    ['docs/architecture.md', /A session started with `groupBy` \((\d+)-(\d+) keys\)/, (m) => [[Number(m[1]), Number(m[2])], [1, session.RULES.groupBy.maxKeys]]],
    ['docs/architecture.md', /none -> unknown group \(0\), a value over (\d+) bytes or the/, (m) => [Number(m[1]), session.LIMITS.maxGroupValueBytes]],
    ['docs/v8-api.md', /the \*\*overflow\*\* group \(a value over (\d+) bytes/, (m) => [Number(m[1]), session.LIMITS.maxGroupValueBytes]],
    ['lib/index.d.ts', /'overflow' \(second: a value over (\d+) bytes/, (m) => [Number(m[1]), session.LIMITS.maxGroupValueBytes]],
  ];
  for (const [file, re, values] of claims) {
    const m = re.exec(flat(read(file)));
    assert.ok(m, `${file} no longer says ${re}: update this test with it`);
    const [written, owner] = values(m);
    assert.deepEqual(written, owner, `${file}: ${m[0]}`);
  }
});

test('agent options: AgentOptions (lib/index.d.ts), the option tables and the prose of the docs state lib/config.js\'s ranges and defaults', () => {
  const owner = (option) => {
    const o = AGENT.get(option);
    assert.ok(o, `no agent option ${option}`);
    return { bounds: o.bounds, default: o.default, hasDefault: true };
  };
  let stated = 0;
  for (const { option, doc } of interfaceMembers('lib/index.d.ts', 'AgentOptions')) {
    stated += checkOptionDoc('lib/index.d.ts AgentOptions', option, doc, owner(option));
    for (const m of doc.matchAll(/at most (\d+)\b/g)) assert.equal(Number(m[1]), AGENT.get(option).bounds.max, `AgentOptions.${option}: ${m[0]}`);
  }
  assert.ok(stated >= 25, `AgentOptions: only ${stated} ranges and defaults found: did the format change?`);

  // Every option table (`| variable | option | accepts | default |`), in docs/*.md and README.md.
  const files = ['README.md', ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  let rows = 0;
  for (const file of files) {
    for (const m of read(file).matchAll(/^\| `(HEAP_LABELS_\w+)` \| `(\w+)` \| (.*) \| (.*) \|$/gm)) {
      const [, env, option, accepts, written] = m;
      assert.equal(AGENT.get(option)?.env, env, `${file}: ${option}'s variable`);
      checkOptionDoc(`${file} (table)`, option, accepts, { ...owner(option), hasDefault: false });
      checkDefault(`${file} (table)`, option, written, AGENT.get(option).default);
      rows++;
    }
  }
  assert.ok(rows >= AGENT.size, `only ${rows} option rows in the docs' tables`);

  // Prose: `HEAP_LABELS_X`, default N / (`option`, a..b, default N) / HEAP_LABELS_X="v": must be an integer in a..b.
  for (const file of files) {
    const text = flat(read(file));
    for (const m of text.matchAll(/`(HEAP_LABELS_\w+)`, default ([^\s,;:)]+)/g)) {
      checkDefault(file, AGENT_BY_ENV.get(m[1]).option, m[2], AGENT_BY_ENV.get(m[1]).default);
    }
    for (const m of text.matchAll(/\(`(\w+)`, ([^()]*?default [^\s,;:)]+)\)/g)) {
      if (AGENT.has(m[1])) checkOptionDoc(file, m[1], m[2], owner(m[1]));
    }
    for (const m of text.matchAll(new RegExp(`(HEAP_LABELS_\\w+)="[^"]*": must be an integer in (${NUMBER})\\.\\.(${NUMBER})`, 'g'))) {
      const { bounds } = AGENT_BY_ENV.get(m[1]);
      assert.deepEqual([num(m[2]), num(m[3])], [bounds.min, bounds.max], `${file}: ${m[0]}`);
    }
  }
  const ops = flat(read('docs/operations.md'));
  const defaults = Object.fromEntries([...AGENT].map(([option, o]) => [option, o.default]));
  const claims = [
    [/`HEAP_LABELS_WATCH_PERIODS` \(k = (\d+)\)/, (m) => [Number(m[1]), defaults.watchPeriods]],
    [
      /`HEAP_LABELS_WATCH_MIN_GROWTH` bytes \((\d+ MiB), (\d+) default sampling intervals\)/,
      (m) => [[num(m[1]), Number(m[2])], [defaults.watchMinGrowth, defaults.watchMinGrowth / defaults.sampleInterval]],
    ],
    [/`HEAP_LABELS_WATCH_MIN_GROWTH_PERCENT` \((\d+) %\)/, (m) => [Number(m[1]), defaults.watchMinGrowthPercent]],
  ];
  for (const [re, values] of claims) {
    const m = re.exec(ops);
    assert.ok(m, `docs/operations.md no longer says ${re}: update this test with it`);
    const [written, value] = values(m);
    assert.deepEqual(written, value, `docs/operations.md: ${m[0]}`);
  }
});

// ---- numbers owned by a constant in code ---------------------------------------------------------
// The other defaults and limits the docs state (the endpoint's rate limits, the report's input
// limit, the allocation groups, the retainers' cut, ...): each statement below against the constant
// that owns it, read from its source file (JS, Rust or C++: the value as the code computes it, not a
// copy of it here). Every statement must be found, and a statement made in several places is
// matched in each of them (the `g` patterns), so rewording one means updating it here.

// The value of `const NAME = expression;` (JS), `pub const NAME: T = expression;` (Rust) or
// `constexpr T NAME = expression;` (C++) in `file`; names of other constants of the file in the
// expression are resolved, numeric separators and C++ suffixes dropped.
function constant(file, name) {
  const text = read(file);
  const m = new RegExp(String.raw`^\s*(?:(?:pub(?:\([\w:]+\))? )?const|constexpr [\w:]+) ${name}(?:: \w+)? = ([^;]+);`, 'm').exec(text);
  assert.ok(m, `${file} no longer defines the constant ${name}: update this test with its owner`);
  return evaluate(file, m[1]);
}

// The value of `name: expression,` inside the block of `file` that starts at `anchor` (a struct's
// Default impl, an options object).
function member(file, anchor, name) {
  const text = read(file);
  const start = text.indexOf(anchor);
  assert.ok(start >= 0, `${file} no longer has ${anchor}: update this test with its owner`);
  const m = new RegExp(String.raw`\b${name}: ([^,\n]+),`).exec(text.slice(start));
  assert.ok(m, `${file}: ${anchor} no longer sets ${name}`);
  return evaluate(file, m[1]);
}

// The number a pattern captures in a source file (a literal that has one place: an argument, a regex).
function literal(file, re) {
  const m = re.exec(read(file));
  assert.ok(m, `${file} no longer matches ${re}: update this test with its owner`);
  return evaluate(file, m[1]);
}

function evaluate(file, expression) {
  const string = /^'([^'\\]*)'$/.exec(expression.trim());
  if (string) return string[1];
  const resolved = expression
    .replace(/\bu32::MAX\b/g, String(2 ** 32 - 1))
    .replace(/\b[A-Z][A-Z0-9_]+\b/g, (id) => String(constant(file, id)))
    .replace(/(\d)_(?=\d)/g, '$1')
    .replace(/\b(\d+)u\b/g, '$1');
  assert.match(resolved, /^[\d\s.()+\-*/<]+$/, `${file}: cannot evaluate ${expression}`);
  return Function(`return (${resolved});`)();
}

const ALLOCATION_GROUPS = constant('core/src/allocations.rs', 'DEFAULT_MAX_GROUPS');
const GC_INTERVAL_S = constant('lib/profile-reads.js', 'GC_INTERVAL_MS') / 1000;
const COPY_GAP_FACTOR = constant('lib/profile-reads.js', 'COPY_GAP_FACTOR');
const READ_SHARE_PERCENT = 100 / (1 + COPY_GAP_FACTOR);
const MAX_WAITING = constant('lib/profile-reads.js', 'MAX_WAITING');
const MAX_DELTA_SECONDS = constant('lib/endpoint.js', 'MAX_DELTA_SECONDS');
const MAX_INFLATED = constant('lib/report/model.js', 'DEFAULT_MAX_INFLATED_BYTES');
const REPORT_GROUPS = constant('lib/report/summary.js', 'DEFAULT_GROUPS');
const REPORT_TOP = constant('lib/report/summary.js', 'DEFAULT_TOP');
const MAX_ROUTES = constant('lib/integrations/route-labels.js', 'DEFAULT_MAX_ROUTES');
const RETAINERS = Object.fromEntries(
  ['max_depth', 'max_children', 'min_share', 'max_groups', 'max_sites'].map((f) => [f, member('core/src/retainers.rs', 'impl Default for Limits', f)]),
);
const MINUTE = 60;

// [files, pattern, (match) => [as written, the owner's]]: a `g` pattern is checked at each of its
// matches (at least one) in each file.
const OWNED = [
  // The endpoint's reads (lib/profile-reads.js, lib/endpoint.js) and the agent's server (lib/agent.js).
  [['README.md', 'docs/operations.md', 'lib/index.d.ts'], /at most (\d+) % of the time/g, (m) => [Number(m[1]), READ_SHARE_PERCENT]],
  [['docs/operations.md'], /no other copy starts for (\d+)\*t\*/, (m) => [Number(m[1]), COPY_GAP_FACTOR]],
  [['README.md', 'docs/operations.md', 'lib/index.d.ts'], /at most once per (\d+) s\b/g, (m) => [Number(m[1]), GC_INTERVAL_S]],
  [['lib/endpoint.d.ts'], /`\?gc=1` more than once per (\d+) s\) or 503 \(more than (\d+) waiting\)/, (m) => [[Number(m[1]), Number(m[2])], [GC_INTERVAL_S, MAX_WAITING]]],
  [['docs/operations.md'], /more than (\d+) waiting requests get 503/, (m) => [Number(m[1]), MAX_WAITING]],
  [['lib/endpoint.d.ts'], /`\?seconds=N`, N in (\d+)\.\.(\d+)/, (m) => [[Number(m[1]), Number(m[2])], [1, MAX_DELTA_SECONDS]]],
  [['docs/operations.md'], /`\?seconds=N` \((\d+)\.\.(\d+)\)/, (m) => [[Number(m[1]), Number(m[2])], [1, MAX_DELTA_SECONDS]]],
  [['docs/otlp.md'], /`\?seconds=N` \(a whole number, (\d+)\.\.(\d+),/, (m) => [[Number(m[1]), Number(m[2])], [1, MAX_DELTA_SECONDS]]],
  [['docs/otlp.md'], /at most (\d+) such requests wait at once/, (m) => [Number(m[1]), constant('lib/endpoint.js', 'MAX_DELTAS')]],
  [['lib/endpoint.d.ts'], /Bearer <token>` \(at least (\d+) characters\)/, (m) => [Number(m[1]), constant('lib/config.js', 'MIN_TOKEN')]],
  [
    ['docs/operations.md'],
    /cuts clients that take over (\d+) s to send their headers, and serves at most (\d+) connections at once: a request on a connection beyond them is answered `503` with `Retry-After: (\d+)` and the connection closed; beyond (\d+) open connections/,
    (m) => [
      m.slice(1).map(Number),
      [
        member('lib/agent.js', 'const SERVER_OPTIONS', 'headersTimeout') / 1000,
        constant('lib/agent.js', 'MAX_CONNECTIONS'),
        literal('lib/agent.js', /setHeader\('retry-after', '(\d+)'\)/),
        constant('lib/agent.js', 'MAX_OPEN_CONNECTIONS'),
      ],
    ],
  ],
  [['docs/operations.md'], /shown to its first (\d+) characters/, (m) => [Number(m[1]), constant('lib/config.js', 'MAX_SHOWN')]],
  [['docs/operations.md'], /the \*\*first free port of P\+1\.\.P\+(\d+)\*\*/, (m) => [Number(m[1]), constant('lib/process-model.js', 'WORKER_PORTS')]],

  // The near-heap-limit profile (cpp/near_heap_limit.cc).
  [
    ['docs/operations.md'],
    /generation's size \(at least (\d+ MiB)\)[^]*?once the heap shrinks to (\d+) %/,
    (m) => [[num(m[1]), Number(m[2])], [constant('cpp/near_heap_limit.cc', 'kMinHeadroom'), 100 * literal('cpp/near_heap_limit.cc', /AutomaticallyRestoreInitialHeapLimit\(([\d.]+)\)/)]],
  ],

  // The growth watch (lib/growth.js).
  [
    ['docs/operations.md'],
    /must also exceed (\d+) standard deviations[^]*?at least (\d+) samples\); with k = (\d+) an unchanging set comes out increasing by chance at most once in (\d+) windows/,
    (m) => [m.slice(1).map(Number), [constant('lib/growth.js', 'NOISE_Z'), constant('lib/growth.js', 'NOISE_Z') ** 2, AGENT.get('watchPeriods').default, 2 ** AGENT.get('watchPeriods').default]],
  ],

  // Pushes (lib/push.js, lib/config.js, lib/agent.js).
  [['README.md'], /pushed over OTLP every (minute)/, () => [MINUTE, AGENT.get('pushInterval').default]],
  [
    ['docs/otlp.md'],
    /at most (\d+) headers, (\d+ KiB)/,
    (m) => [[Number(m[1]), num(m[2])], [constant('lib/config.js', 'MAX_HEADERS'), constant('lib/config.js', 'MAX_HEADER_BYTES')]],
  ],
  [
    ['docs/otlp.md'],
    /retryable \((\d+), (\d+), (\d+), (\d+)\) are retried with exponential backoff \(from the interval, at most (\d+) s, doubling up to a (minute), with jitter; a `Retry-After` is honoured up to a (minute)\)/,
    (m) => [
      [m.slice(1, 5).map(Number), Number(m[5]), MINUTE, MINUTE],
      [
        [...literalSet('lib/push.js', 'RETRYABLE')],
        constant('lib/push.js', 'FIRST_BACKOFF_MS') / 1000,
        constant('lib/push.js', 'MAX_BACKOFF_MS') / 1000,
        constant('lib/push.js', 'MAX_BACKOFF_MS') / 1000,
      ],
    ],
  ],
  [['docs/otlp.md'], /within `min\(HEAP_LABELS_PUSH_TIMEOUT, (\d+) s\)`/, (m) => [Number(m[1]), constant('lib/agent.js', 'EXIT_FLUSH_MS') / 1000]],
  [['lib/index.d.ts'], /More resource attributes \(at most (\d+)\)/, (m) => [Number(m[1]), constant('lib/otlp.js', 'MAX_ATTRIBUTES')]],

  // Allocated figures (core/src/allocations.rs).
  [['docs/api.md', 'docs/otlp.md'], /at most ([\d,]+) groups/g, (m) => [num(m[1]), ALLOCATION_GROUPS]],
  [['docs/architecture.md'], /at most `DEFAULT_MAX_GROUPS` \(([\d,]+)\) groups/, (m) => [num(m[1]), ALLOCATION_GROUPS]],
  [['docs/otlp.md'], /at most ([\d,]+) distinct labels are remembered/, (m) => [num(m[1]), constant('core/src/allocations.rs', 'MAX_SETTLED_SETS')]],
  [['docs/architecture.md'], /`MAX_PENDING_CELLS`, ([\d,]+) entries/, (m) => [num(m[1]), constant('core/src/allocations.rs', 'MAX_PENDING_CELLS')]],

  // Label sets (core/src/labels/).
  [['docs/architecture.md'], /as many as the registry held before them, at least (\d+)\) or (\d+) overflowed interns/, (m) => [[Number(m[1]), Number(m[2])], [constant('core/src/labels/limits.rs', 'PRUNE_MIN_CREATED'), constant('core/src/labels/limits.rs', 'PRUNE_OVERFLOWED')]]],
  [['docs/architecture.md'], /\(at most (\d+) bindings, `MAX_BINDINGS`/, (m) => [Number(m[1]), constant('core/src/labels/cell.rs', 'MAX_BINDINGS')]],
  [['docs/architecture.md'], /the sets it was bound to \(at most (\d+), each owning/, (m) => [Number(m[1]), constant('core/src/labels/cell.rs', 'MAX_BINDINGS')]],
  [['docs/architecture.md'], /V8's sampler picks an allocation \((\d+ KiB) apart on average\)/, (m) => [num(m[1]), session.DEFAULTS.sampleInterval]],

  // Route labels (lib/integrations/route-labels.js, lib/instrument/fallback-route.js).
  [['docs/api.md'], /Options: `key` \(default `'([^']+)'`\), `unmatched` \([^()]*, default `'([^']+)'`/, (m) => [[m[1], m[2]], [constant('lib/integrations/route-labels.js', 'DEFAULT_KEY'), constant('lib/integrations/route-labels.js', 'DEFAULT_UNMATCHED')]]],
  [['lib/integrations/route-labels.d.ts'], /Label key of the route template; default '([^']+)'/, (m) => [m[1], constant('lib/integrations/route-labels.js', 'DEFAULT_KEY')]],
  [['lib/integrations/route-labels.d.ts'], /of work done before routing; default '([^']+)'/, (m) => [m[1], constant('lib/integrations/route-labels.js', 'DEFAULT_UNMATCHED')]],
  [['docs/api.md'], /`maxRoutes` \(default (\d+) templates/, (m) => [Number(m[1]), MAX_ROUTES]],
  [['lib/integrations/route-labels.d.ts'], /later ones get `unmatched`\. Default (\d+)\./, (m) => [Number(m[1]), MAX_ROUTES]],
  [['docs/operations.md'], /past (\d+) distinct values \(`maxRoutes`\)/, (m) => [Number(m[1]), MAX_ROUTES]],
  [
    ['docs/operations.md'],
    /hexadecimal with a digit and (\d+)\+ characters `:hex`, longer than (\d+) characters[^]*?past (\d+) segments the rest is `\/\*`/,
    (m) => [
      m.slice(1).map(Number),
      [literal('lib/instrument/fallback-route.js', /^const HEX = .*\]\{(\d+),\}/m), constant('lib/instrument/fallback-route.js', 'MAX_PLAIN_SEGMENT'), constant('lib/instrument/fallback-route.js', 'MAX_SEGMENTS')],
    ],
  ],

  // Reports (lib/report/).
  [
    ['docs/api.md', 'docs/otlp.md', 'docs/architecture.md', 'docs/performance.md', 'lib/report/export.d.ts', 'lib/report/model.d.ts'],
    /(\d+ MiB)(?: of decompressed| once decompressed| by default|\)?[;.]? ?\(?`?--max-inflated-mib| default allows|\. \*\/)/g,
    (m) => [num(m[1]), MAX_INFLATED],
  ],
  [['docs/architecture.md'], /at most one repeated element per (\d+) bytes/, (m) => [Number(m[1]), constant('lib/report/model.js', 'ELEMENT_BYTES')]],
  [['README.md', 'docs/api.md'], /# (?:the )?(\d+) largest labels/g, (m) => [Number(m[1]), REPORT_GROUPS]],
  [['docs/api.md'], /By default it lists the (\d+) largest labels/, (m) => [Number(m[1]), REPORT_GROUPS]],
  [['docs/architecture.md'], /groups it shows \((\d+) by default, `--all` every one\)/, (m) => [Number(m[1]), REPORT_GROUPS]],
  [['docs/performance.md'], /\((\d+) groups, one line for the rest\)/, (m) => [Number(m[1]), REPORT_GROUPS]],
  [['lib/report/summary.d.ts'], /Groups shown \(default (\d+), `DEFAULT_GROUPS`/, (m) => [Number(m[1]), REPORT_GROUPS]],
  [['lib/report/text.d.ts'], /largest groups \(default (\d+); Infinity: all\)/, (m) => [Number(m[1]), REPORT_GROUPS]],
  [['docs/api.md'], /\[--top (\d+)\]/, (m) => [Number(m[1]), REPORT_TOP]],
  [['lib/report/summary.d.ts'], /Sites per shown group \(default (\d+), `DEFAULT_TOP`\)/, (m) => [Number(m[1]), REPORT_TOP]],
  [['lib/report/summary.d.ts'], /\/\*\* (\d+)\. \*\/ export const DEFAULT_GROUPS\b/, (m) => [Number(m[1]), REPORT_GROUPS]],
  [['lib/report/summary.d.ts'], /\/\*\* (\d+): sites per group \(`top`\)\. \*\/ export const DEFAULT_TOP\b/, (m) => [Number(m[1]), REPORT_TOP]],
  [['lib/index.d.ts'], /Sites listed per group, default (\d+)\./, (m) => [Number(m[1]), REPORT_TOP]],
  [['docs/api.md'], /call trees for the (\d+) largest labels/, (m) => [Number(m[1]), constant('lib/report/html.js', 'MAX_TREES')]],

  // Retainers per label (core/src/retainers.rs's Limits, cpp/retainers.cc).
  [
    ['docs/api.md'],
    /Cut: (\d+) steps deep, the (\d+) largest children of a step with at least (\d+) % of the group's bytes, the rest one `\(other\)` under which their retainers go on, merged; (\d+) groups \(`moreGroups` counts the rest\); (\d+) allocation sites per group/,
    (m) => [m.slice(1).map(Number), [RETAINERS.max_depth, RETAINERS.max_children, RETAINERS.min_share * 100, RETAINERS.max_groups, RETAINERS.max_sites]],
  ],
  [['docs/architecture.md'], /largest children with at least (\d+) % of the group's bytes/, (m) => [Number(m[1]), RETAINERS.min_share * 100]],
  [['docs/architecture.md'], /at most (\d+) steps per chain \(`PARENT_TRUNCATED` beyond\)/, (m) => [Number(m[1]), constant('cpp/retainers.cc', 'kMaxChainSteps')]],
  [['lib/report/cli.js'], /retainer steps shown below each class \(default: all, at most (\d+)\)/, (m) => [Number(m[1]), RETAINERS.max_depth]],
  [['lib/index.d.ts'], /Largest first; at most (\d+)\. \*\/\s+groups: RetainerGroup\[\]/, (m) => [Number(m[1]), RETAINERS.max_groups]],

  // node:v8's (lib/v8.js) and Node.js' own.
  [
    ['docs/v8-api.md'],
    /kSamplingNoFlags (\d+), kSamplingForceGC (\d+), \.\.\.MajorGC (\d+), \.\.\.MinorGC (\d+)/,
    (m) => {
      const c = require('../lib/v8').heapProfilerConstants;
      return [m.slice(1).map(Number), [c.kSamplingNoFlags, c.kSamplingForceGC, c.kSamplingIncludeObjectsCollectedByMajorGC, c.kSamplingIncludeObjectsCollectedByMinorGC]];
    },
  ],
  // Node.js 24 raised the pool from 8 to 64 KiB; each runtime of the test run checks its own line's value.
  [
    ['docs/external-bytes.md'],
    /shared pool of `Buffer.poolSize` bytes \((\d+ KiB) on Node.js 22, (\d+ KiB) on 24 and later\)/,
    (m) => [num(m[process.versions.node.startsWith('22.') ? 1 : 2]), Buffer.poolSize],
  ],

  // The test run (scripts/test.sh, tests/real-apps/harness.js).
  [['README.md'], /what is left of an (\d+)-minute budget/, (m) => [Number(m[1]), literal('scripts/test.sh', /\$\{HEAP_LABELS_TEST_BUDGET_MIN:-(\d+)\}/)]],
  [['README.md'], /with the preload under (\d+) s of traffic each/, (m) => [Number(m[1]), constant('tests/real-apps/harness.js', 'ISSUE_SECONDS')]],
];

// The numbers of `const NAME = new Set([...])` in `file`.
function literalSet(file, name) {
  const m = new RegExp(String.raw`^const ${name} = new Set\(\[([^\]]*)\]\)`, 'm').exec(read(file));
  assert.ok(m, `${file} no longer defines the set ${name}`);
  return m[1].split(',').map((v) => evaluate(file, v.trim()));
}

test('defaults and limits owned by a constant in code: lib/*.d.ts, docs/*.md and README.md state its value', () => {
  const problems = [];
  for (const [files, re, values] of OWNED) {
    for (const file of files) {
      const text = flat(read(file));
      const matches = re.global ? [...text.matchAll(re)] : [re.exec(text)].filter(Boolean);
      if (matches.length === 0) problems.push(`${file} no longer says ${re}: update this test with it`);
      for (const m of matches) {
        try {
          const [written, owner] = values(m);
          assert.deepEqual(written, owner);
        } catch (e) {
          problems.push(`${file}: "${m[0]}": ${e.message.split('\n').filter(Boolean).join(' ')}`);
        }
      }
    }
  }
  assert.deepEqual(problems, []);
});
