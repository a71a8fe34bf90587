'use strict';
// Bad labels and options throw TypeError/RangeError naming the offending key, never crash, never
// invoke getters; equal label sets are interned as one frozen object.

const test = require('node:test');
const assert = require('node:assert/strict');
const { libPath, throwsNaming } = require('./helpers');
const hl = require(libPath);
const { withHeapProfileLabels, setHeapProfileLabels, getHeapProfileLabels, startHeapProfile } = hl;

const labelsOf = (labels) => withHeapProfileLabels(labels, getHeapProfileLabels);

test('non-plain objects are rejected with a TypeError', () => {
  class Labels { constructor() { this.route = '/a'; } }
  const bad = [undefined, 1, 'route', true, Symbol('x'), () => {}, ['a'], new Map([['a', 'b']]),
    new Labels(), new Date(), new Proxy({ a: 'b' }, {}), Object.create({ inherited: 'x' })];
  for (const value of bad) {
    throwsNaming(() => withHeapProfileLabels(value, () => {}), TypeError, 'withHeapProfileLabels', 'plain object');
    throwsNaming(() => setHeapProfileLabels(value), TypeError, 'setHeapProfileLabels');
  }
  assert.equal(getHeapProfileLabels(), undefined);
});

test('null clears only through setHeapProfileLabels; withHeapProfileLabels(null) is an error', () => {
  throwsNaming(() => withHeapProfileLabels(null, () => {}), TypeError, 'got null');
  setHeapProfileLabels(null);
  assert.equal(getHeapProfileLabels(), undefined);
});

test('a null-prototype object is a fine label set', () => {
  const labels = Object.assign(Object.create(null), { route: '/np' });
  assert.equal(labelsOf(labels).route, '/np');
});

test('Proxy traps and getters are never invoked', () => {
  let trapped = 0;
  const proxy = new Proxy({ route: '/p' }, {
    get() { trapped++; return '/x'; },
    ownKeys() { trapped++; return ['route']; },
    getOwnPropertyDescriptor() { trapped++; return undefined; },
    getPrototypeOf() { trapped++; return Object.prototype; },
  });
  throwsNaming(() => withHeapProfileLabels(proxy, () => {}), TypeError, 'Proxy');
  assert.equal(trapped, 0);

  let called = 0;
  const withGetter = { a: 'ok' };
  Object.defineProperty(withGetter, 'route', { enumerable: true, get() { called++; return '/g'; } });
  throwsNaming(() => withHeapProfileLabels(withGetter, () => {}), TypeError, '"route"', 'accessor');
  const withSetter = {};
  Object.defineProperty(withSetter, 'tenant', { enumerable: true, set() { called++; } });
  throwsNaming(() => setHeapProfileLabels(withSetter), TypeError, '"tenant"', 'accessor');
  assert.equal(called, 0);
});

test('symbol keys, non-enumerable keys and non-string values name the key', () => {
  throwsNaming(() => withHeapProfileLabels({ [Symbol('tracer')]: 'x' }, () => {}), TypeError, 'Symbol(tracer)');
  const hidden = {};
  Object.defineProperty(hidden, 'secret', { value: 'x', enumerable: false });
  throwsNaming(() => withHeapProfileLabels(hidden, () => {}), TypeError, '"secret"');
  for (const value of [1, undefined, null, {}, ['x'], 1n, true, Symbol('s')]) {
    throwsNaming(() => withHeapProfileLabels({ ok: 'x', tenant: value }, () => {}), TypeError, '"tenant"', 'must be a string');
  }
});

test('limits: 32 labels, keys 1..128 bytes, values up to 1024 bytes of UTF-8 (RangeError naming the key)', () => {
  assert.deepEqual(hl.limits, { maxLabels: 32, maxKeyBytes: 128, maxValueBytes: 1024 });
  const many = (n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${String(i).padStart(2, '0')}`, 'v']));
  assert.equal(Object.keys(labelsOf(many(32))).length, 32);
  throwsNaming(() => withHeapProfileLabels(many(33), () => {}), RangeError, '33 labels', '32');

  assert.ok(labelsOf({ ['é'.repeat(64)]: 'v' })); // 128 bytes
  throwsNaming(() => withHeapProfileLabels({ ['é'.repeat(65)]: 'v' }, () => {}), RangeError, 'ééé', '130 bytes');
  throwsNaming(() => withHeapProfileLabels({ '': 'v' }, () => {}), RangeError, 'label keys must not be empty');

  assert.equal(labelsOf({ big: 'x'.repeat(1024) }).big.length, 1024);
  assert.equal(labelsOf({ empty: '' }).empty, '');
  throwsNaming(() => withHeapProfileLabels({ big: 'x'.repeat(1025) }, () => {}), RangeError, '"big"', '1025 bytes');
  throwsNaming(() => withHeapProfileLabels({ big: '€'.repeat(342) }, () => {}), RangeError, '"big"', '1026 bytes');
});

test('lone surrogates are rejected, valid astral characters are kept', () => {
  throwsNaming(() => withHeapProfileLabels({ k: 'a\uD800' }, () => {}), TypeError, '"k"', 'well-formed');
  throwsNaming(() => withHeapProfileLabels({ ['\uDC00']: 'v' }, () => {}), TypeError, 'well-formed');
  assert.equal(labelsOf({ emoji: '😀' }).emoji, '😀');
});

test('fn must be a function', () => {
  throwsNaming(() => withHeapProfileLabels({ a: 'b' }, 'nope'), TypeError, 'fn must be a function');
});

test('label rules: lib/ throws what the core throws for the same labels (core\'s wording and class)', () => {
  // lib/labels.js checks the rules up front (a fresh label object costs no native call); the core
  // (core/src/labels/validation.rs, core/src/error.rs) owns them. createLabelHolder hands pairs (as
  // lib/'s canonical key: length-prefixed, in the order given) to the core's checks directly.
  const { native } = require('../lib/native');
  const many = Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v']);
  const cases = [
    many,
    [['', 'v']],
    [['é'.repeat(65), 'v']],
    [['€'.repeat(50), 'v']],
    [['big', 'x'.repeat(1025)]],
    [['big', '€'.repeat(342)]],
    [['__proto__', 'x']],
    [['heap_labels.mine', '1']],
    [['q"uote\n', 'x'.repeat(1025)]],
    // Pairs breaking two rules: the first of the core's checks names the error (a reserved key is
    // reserved whatever its length), and pairs are checked in key order.
    [[`heap_labels.${'k'.repeat(200)}`, 'v']],
    [['__proto__', 'x'.repeat(2000)]],
    [['k'.repeat(200), 'x'.repeat(2000)]],
    [['', 'x'.repeat(2000)]],
    [['b', 'x'.repeat(2000)], ['a', 'x'.repeat(2000)]],
    [['b', 'x'.repeat(2000)], ['heap_labels.a', 'v']],
  ];
  for (const pairs of cases) {
    let core;
    try {
      const canonical = pairs.map(([k, v]) => `${k.length}:${k}${v.length}:${v}`).join('');
      native.createLabelHolder(canonical, {}, new Float64Array(3));
    } catch (err) {
      core = err;
    }
    assert.ok(core, `the core accepted ${JSON.stringify(pairs).slice(0, 80)}`);
    let js;
    try {
      withHeapProfileLabels(Object.fromEntries(pairs), () => {});
    } catch (err) {
      js = err;
    }
    assert.ok(js, `lib/ accepted ${JSON.stringify(pairs).slice(0, 80)}`);
    assert.equal(js.constructor, core.constructor, core.message);
    assert.equal(js.message, core.message.replace(/^heap-labels: /, 'heap-labels: withHeapProfileLabels: '));
  }
});

test('a barrage of odd inputs only ever throws TypeError or RangeError', () => {
  const odd = [NaN, -0, '', {}, [], new Uint8Array(2), new WeakMap(), Promise.resolve(), new Error('e'),
    { toString: () => 'x' }, { valueOf: 'x' }, { __proto__: null, a: 'b' }, JSON.parse('{"__proto__":"x"}'),
    { constructor: 'x' }, { 'a.b': 'c', 'a b': ' ', '0': 'zero' }, Object.freeze({ f: 'g' })];
  for (const value of odd) {
    for (const call of [() => withHeapProfileLabels(value, () => {}), () => setHeapProfileLabels(value)]) {
      try {
        call();
      } catch (err) {
        assert.ok(err instanceof TypeError || err instanceof RangeError, String(err));
      }
    }
  }
  setHeapProfileLabels(null);
});

test('equal label sets are one frozen object in canonical key order', () => {
  const a = labelsOf({ tenant: 't', route: '/r' });
  const b = labelsOf({ route: '/r', tenant: 't' });
  assert.equal(a, b);
  assert.ok(Object.isFrozen(a));
  assert.deepEqual(Object.keys(a), ['route', 'tenant']);
  const input = { route: '/r', tenant: 't' };
  assert.notEqual(labelsOf(input), input, 'the caller\'s object is never adopted');
  assert.equal(labelsOf(a), a, 'an interned object passes through');
  assert.notEqual(labelsOf({ route: '/r', tenant: 'u' }), a);
  assert.equal(labelsOf({}), labelsOf({}));
  withHeapProfileLabels(a, () => {
    setHeapProfileLabels({ tenant: 't', route: '/r' });
    assert.equal(getHeapProfileLabels(), a);
  });
  assert.throws(() => { 'use strict'; a.route = 'x'; }, TypeError);
});

test('startHeapProfile options are validated with the option named', () => {
  const bad = [
    [{ sampleInterval: 0 }, RangeError, 'sampleInterval'],
    [{ sampleInterval: 1.5 }, RangeError, 'sampleInterval'],
    [{ sampleInterval: -1 }, RangeError, 'sampleInterval'],
    [{ sampleInterval: 2 ** 32 }, RangeError, 'sampleInterval'],
    [{ sampleInterval: '1024' }, TypeError, 'sampleInterval'],
    [{ stackDepth: 0 }, RangeError, 'stackDepth'],
    [{ stackDepth: 1025 }, RangeError, 'stackDepth'],
    [{ maxLabelSets: 0 }, RangeError, 'maxLabelSets'],
    [{ includeObjectsCollectedByMajorGC: 1 }, TypeError, 'includeObjectsCollectedByMajorGC'],
    [{ includeObjectsCollectedByMinorGC: 'yes' }, TypeError, 'includeObjectsCollectedByMinorGC'],
    [{ sampleIntervall: 10 }, TypeError, 'sampleIntervall'],
    [null, TypeError, 'options'],
    [[], TypeError, 'options'],
    [5, TypeError, 'options'],
  ];
  for (const [options, ErrorClass, name] of bad) {
    throwsNaming(() => startHeapProfile(options), ErrorClass, name);
  }
  // Nothing was started by the failed calls.
  const handle = startHeapProfile({ sampleInterval: 1024, stackDepth: 1, maxLabelSets: 1 });
  handle.stop();
});

test('session option rules: startHeapProfile() and the addon\'s own guard take and refuse the same integers', () => {
  // lib/session-options.js owns the rules; the addon checks the same ranges only to guard its
  // surface. Each integer rule's edges: both take min and max, both refuse just outside them and the
  // values napi's u32 conversion would wrap (2^32 + min).
  const { RULES, DEFAULTS } = require('../lib/session-options');
  const { native } = require('../lib/native');
  const nativeDefaults = { ...DEFAULTS, forceGc: DEFAULTS.forceGC, groupBy: undefined };
  delete nativeDefaults.forceGC;
  const integers = Object.entries(RULES).filter(([, rule]) => rule.type === 'integer');
  assert.deepEqual(integers.map(([name]) => name).sort(), ['maxGroups', 'maxLabelSets', 'sampleInterval', 'stackDepth']);
  for (const [name, rule] of integers) {
    // maxGroups caps the groups of a groupBy session: startHeapProfile() takes it with groupBy only.
    const extra = name === 'maxGroups' ? { groupBy: ['tenant'] } : {};
    for (const value of [rule.min, rule.max]) {
      startHeapProfile({ ...extra, [name]: value }).stop();
      native.stopProfile(native.startProfile({ ...nativeDefaults, [name]: value })).dispose();
    }
    for (const value of [rule.min - 1, rule.max + 1, 2 ** 32 + rule.min, rule.min + 0.5]) {
      throwsNaming(() => startHeapProfile({ ...extra, [name]: value }), RangeError, name);
      throwsNaming(() => native.startProfile({ ...nativeDefaults, [name]: value }), Error, name);
    }
  }
});

test('27.12: groupBy keys no label can have, maxGroups without groupBy, Proxy labels on node:v8, stack overflows', () => {
  // groupBy keys: a lone surrogate and the reserved prefix can never match a label key.
  throwsNaming(() => startHeapProfile({ groupBy: ['\ud800'] }), TypeError, 'well-formed');
  throwsNaming(() => startHeapProfile({ groupBy: ['tenant', 'heap_labels.overflow'] }), TypeError, 'heap_labels.overflow');
  throwsNaming(() => startHeapProfile({ groupBy: ['__proto__'] }), TypeError, '__proto__');
  // maxGroups alone would be ignored: refused, naming groupBy.
  throwsNaming(() => startHeapProfile({ maxGroups: 4 }), TypeError, 'groupBy');
  startHeapProfile({ groupBy: ['tenant'], maxGroups: 4 }).stop();

  // node:v8's label functions refuse a Proxy without running any of its traps.
  const v8api = require('../lib/v8');
  const trapped = [];
  const handler = new Proxy({}, { get: (target, trap) => (trapped.push(trap), undefined) });
  const proxy = new Proxy({ route: '/p' }, handler);
  for (const call of [() => v8api.setHeapProfileLabels(proxy), () => v8api.withHeapProfileLabels(proxy, () => {})]) {
    assert.throws(call, { code: 'ERR_INVALID_ARG_TYPE', message: /Proxy/ });
  }
  assert.deepEqual(trapped, [], 'no trap ran');

  // A stack overflow inside nested label calls is the engine's RangeError, never given a label
  // error's code, on any runtime.
  for (const withLabels of [v8api.withHeapProfileLabels, require('../lib').withHeapProfileLabels]) {
    const nest = () => withLabels({ route: '/deep' }, nest);
    let caught;
    try {
      nest();
    } catch (error) {
      caught = error;
    }
    assert.ok(caught instanceof RangeError, String(caught));
    assert.match(caught.message, /call stack/);
    assert.equal(caught.code, undefined);
  }
});

test('a frozen user object is validated once and maps to the interned set; unfrozen ones are re-read', () => {
  const frozen = Object.freeze({ route: '/frozen', tenant: 'acme' });
  const first = labelsOf(frozen);
  assert.deepEqual(first, { route: '/frozen', tenant: 'acme' });
  assert.equal(labelsOf(frozen), first, 'the same interned object every time');
  assert.equal(labelsOf({ tenant: 'acme', route: '/frozen' }), first, 'equal to a fresh literal');
  const mutable = { route: '/before' };
  assert.equal(labelsOf(mutable).route, '/before');
  mutable.route = '/after';
  assert.equal(labelsOf(mutable).route, '/after', 'an unfrozen object is validated at each use');
  mutable.route = 42;
  assert.throws(() => labelsOf(mutable), /route/);
});

// --- realms, reserved keys, the empty set ---------------------------------------------------------

test('plain objects of another realm (a vm context, as Jest runs every test file) are accepted', () => {
  const vm = require('node:vm');
  const context = vm.createContext({});
  const literal = vm.runInContext('({ tenant: "t", route: "/vm" })', context);
  const labels = labelsOf(literal);
  assert.deepEqual(Object.entries(labels), [['route', '/vm'], ['tenant', 't']]);
  assert.equal(Object.getPrototypeOf(labels), Object.prototype, 'the interned object belongs to this realm');
  assert.equal(labelsOf({ route: '/vm', tenant: 't' }), labels, 'equal to a literal of this realm');
  assert.equal(labelsOf(vm.runInContext('Object.freeze({ route: "/vm", tenant: "t" })', context)), labels);
  assert.equal(labelsOf(vm.runInContext('Object.assign(Object.create(null), { route: "/np" })', context)).route, '/np');
  setHeapProfileLabels(vm.runInContext('({ route: "/set" })', context));
  assert.equal(getHeapProfileLabels().route, '/set');
  setHeapProfileLabels(null);

  // The same rules as for this realm's objects: only plain objects of string values.
  for (const source of [
    'new (class Labels { constructor() { this.route = "/a"; } })()',
    '["a"]',
    'new Map([["a", "b"]])',
    'new Date()',
    'Object.create({ inherited: "x" })',
    'Object.create(Object.create(null, { constructor: { value: function Object() {} } }))',
  ]) {
    throwsNaming(() => withHeapProfileLabels(vm.runInContext(source, context), () => {}), TypeError, 'plain object');
  }
  throwsNaming(() => withHeapProfileLabels(vm.runInContext('({ route: 1 })', context), () => {}), TypeError, '"route"');

  // Proxies of another realm, and objects whose prototype is a Proxy, are rejected without a trap.
  let trapped = 0;
  const traps = { getPrototypeOf() { trapped++; return Object.prototype; }, ownKeys() { trapped++; return []; } };
  context.traps = traps;
  throwsNaming(() => withHeapProfileLabels(vm.runInContext('new Proxy({ a: "b" }, traps)', context), () => {}), TypeError, 'Proxy');
  throwsNaming(
    () => withHeapProfileLabels(vm.runInContext('Object.create(new Proxy({}, traps))', context), () => {}),
    TypeError,
    'plain object',
  );
  throwsNaming(() => withHeapProfileLabels(Object.create(new Proxy({}, traps)), () => {}), TypeError, 'plain object');
  assert.equal(trapped, 0);
});

test('a "__proto__" key is rejected with a TypeError naming it (it would not survive interning)', () => {
  throwsNaming(
    () => withHeapProfileLabels(JSON.parse('{"route":"/r","__proto__":"x"}'), () => {}),
    TypeError,
    '"__proto__"',
  );
  throwsNaming(() => setHeapProfileLabels({ ['__proto__']: 'x' }), TypeError, '"__proto__"');
  const frozen = Object.freeze(JSON.parse('{"__proto__":"x"}'));
  throwsNaming(() => withHeapProfileLabels(frozen, () => {}), TypeError, '"__proto__"');
  assert.equal(getHeapProfileLabels(), undefined);
  // A `__proto__:` in a literal sets the prototype, not a key: that object is just `{}` (or not plain).
  assert.deepEqual(labelsOf({ __proto__: Object.prototype, route: '/p' }), { route: '/p' });
});

test('keys in the "heap_labels." namespace are reserved (the overflow set uses it)', () => {
  throwsNaming(
    () => withHeapProfileLabels({ 'heap_labels.overflow': 'true' }, () => {}),
    TypeError,
    '"heap_labels.overflow"',
    'reserved',
  );
  throwsNaming(() => setHeapProfileLabels({ route: '/a', 'heap_labels.mine': '1' }), TypeError, '"heap_labels.mine"', 'reserved');
  throwsNaming(
    () => withHeapProfileLabels(Object.freeze({ 'heap_labels.overflow': 'true' }), () => {}),
    TypeError,
    '"heap_labels.overflow"',
  );
  assert.equal(labelsOf({ heap_labels: 'x' }).heap_labels, 'x', 'only the dotted namespace is reserved');
  assert.equal(labelsOf({ 'heap_labelsX.y': 'x' })['heap_labelsX.y'], 'x');
});

test('the empty label set means "no labels": it is the unlabeled `{}` and takes no label set', () => {
  const empty = [];
  withHeapProfileLabels({ route: '/outer' }, () => {
    withHeapProfileLabels({}, () => {
      empty.push(getHeapProfileLabels());
      setHeapProfileLabels(Object.freeze({}));
      empty.push(getHeapProfileLabels());
    });
    assert.equal(getHeapProfileLabels().route, '/outer');
  });
  assert.deepEqual(empty[0], {});
  assert.equal(empty[0], empty[1], 'one interned empty object');
  assert.ok(Object.isFrozen(empty[0]));

  // In a fresh process (this one has interned sets of its own): {} interns no label set, so it is
  // never counted against maxLabelSets, and the one set that is interned is the real one.
  const { spawnSync } = require('node:child_process');
  const run = spawnSync(process.execPath, ['-e', `
    const hl = require(${JSON.stringify(libPath)});
    const counts = [hl.stats().labelSets];
    hl.withHeapProfileLabels({}, () => counts.push(hl.stats().labelSets));
    hl.withHeapProfileLabels({ route: '/r' }, () => counts.push(hl.stats().labelSets));
    console.log(JSON.stringify(counts));
  `], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout), [0, 0, 1]);
});
