// @ts-check
'use strict';
// Label validation and interning: equal label sets become one frozen object, and each interned
// object gets (lazily) one native label holder, the AsyncLocalStorage store that carries it.
//
// Rules beyond the core's (below): a label object is a plain object of any realm (vm contexts,
// Jest) of data properties with string values; the empty set {} means "no labels" (its holder
// carries none, and no label set is interned for it).

const { types } = require('node:util');
const { native } = require('./native');
const { rememberSet, knownLabels } = require('./label-sets');

// The label rules, defined once in the Rust core (core/src/labels/limits.rs, validation.rs and
// error.rs) and read from the addon at load: the limits, the reserved keys and why each is, and
// every rule in the order the core checks a set against them, with the class of its error. lib/
// checks the same rules up front, in that order and worded as the core words them
// (tests/validation.test.js compares), so that a fresh label object costs no native call and fails
// before anything is interned.
const RULES = native.labelRules();
const { maxLabels: MAX_LABELS, maxKeyBytes: MAX_KEY_BYTES, maxValueBytes: MAX_VALUE_BYTES } = RULES;
const ERROR_CLASSES = { TypeError, RangeError };
/** @type {Record<string, ErrorConstructor>} */
const ruleClass = Object.create(null);
for (const { name, errorClass } of RULES.checks) ruleClass[name] = ERROR_CLASSES[errorClass];

// The error that says `rule` (a rule's name in RULES.checks) was broken.
function labelError(rule, message) {
  return new ruleClass[rule](message);
}

// The reserved keys, and their first UTF-16 units apart: this runs for every key of every fresh
// label object, and most keys start with the first unit of none.
const RESERVED = RULES.reservedKeys;
const RESERVED_FIRST = Uint16Array.from(RESERVED, (r) => r.text.charCodeAt(0));

function reservedEntry(key) {
  const first = key.charCodeAt(0);
  for (let i = 0; i < RESERVED_FIRST.length; i++) {
    if (RESERVED_FIRST[i] !== first) continue;
    const r = RESERVED[i];
    if (r.prefix ? key.startsWith(r.text) : key === r.text) return r;
  }
  return undefined;
}

// What lib/ knows of each frozen label object it made, in one WeakMap entry (a new label set costs
// one insertion into a weak table, whose entries are costly to make and, for the GC, to keep).
// Small, as the objects of up to maxLabelSets sets are held at once: the pairs are not kept (the
// object has them; see pairsOf).
class LabelState {
  constructor(key, user) {
    this.key = key; // canonicalKey(keys, values): the pairs as they cross to the addon
    // A user label set (no reserved key): the API takes the object as it is. The overflow set's
    // object (from a profile) is not.
    this.user = user;
    // Serial numbers of its label holder bound to its own set (or to no labels), and of its holder
    // bound to the overflow set; the addon hands out a holder while it lives
    // (native.liveLabelHolder). Weak both ways: a holder lives while an async context stores it,
    // not merely while its label object does, so label objects kept elsewhere (a profile's
    // samples, a route table) pin no label set. Not a WeakRef: once created or dereferenced, a
    // WeakRef keeps its target until the end of the job, so a synchronous batch of items with
    // labels of their own would keep every item's holder and set (the cap would fill with sets
    // nothing uses) until the event loop turns.
    this.serial = undefined;
    this.overflowSerial = undefined;
    // Its holder, for a label object used over and over (see keptHolderOf): weakly, or strongly
    // (`pinned`) once its holder is bound to its own set, for the objects pinHolder() marked
    // (`pin`).
    this.kept = undefined;
    this.pin = false;
    this.pinned = undefined;
    // The id lib/label-sets.js names it under (-1: none): while it does, its key's entry holds it
    // strongly.
    this.id = -1;
    // Whether it was ever held weakly under its key (registered with `forget`), and whether a
    // holder was ever made for it or it was ever bound to a set (lib/label-sets.js named it).
    this.weak = false;
    this.held = false;
  }
}

// The LabelState of each frozen label object made here rides on the object itself, in a private
// field added before it is frozen (the returned-object idiom: a base constructor that returns the
// object lets a subclass add its field to it). Not a WeakMap: a new set then cost an ephemeron
// insertion, its write barrier and the table's rehashing as sets come and go, about a tenth of a
// first use's time. A private field is invisible to the user (no key, no descriptor, no Proxy trap)
// and to other copies of this module, which have their own.
class ObjectOf {
  constructor(object) {
    return object;
  }
}

class LabelStateField extends ObjectOf {
  #state;

  constructor(labels, state) {
    super(labels);
    this.#state = state;
  }

  // The state of `value` when it is a label object made here (undefined for anything else, Proxy
  // included: `#state in` runs no trap).
  static of(value) {
    return typeof value === 'object' && value !== null && #state in value ? value.#state : undefined;
  }
}

const stateOf = { get: LabelStateField.of, set: (labels, state) => new LabelStateField(labels, state) };

// One frozen object per content, by canonical key, in one map whose entry is either the object
// itself or a WeakRef to it. Strongly: the objects of the sets lib/label-sets.js names ("bound";
// the entry goes back to weak, or goes, when that id goes to another set), held as the label-sets
// cache holds them: a new set's object is bound when its holder is made, and no WeakRef is made for
// it (one would keep it, and with it its state, to the end of the job: a synchronous batch of a
// million new sets would keep a million). Weakly: every other object (made for a profile's groups,
// an integration's extra labels, a holder on the overflow set). One map, so that a new set costs
// one lookup of its key, not one per map: string-keyed lookups were a tenth of a first use's time.
const objectOfKey = new Map(); // canonical key -> frozen labels | WeakRef(frozen labels)
const objectPrototypes = new WeakSet(); // other realms' Object.prototype objects seen
const frozenUserLabels = new WeakMap(); // a user's frozen label object -> its interned equal
const forget = new FinalizationRegistry((key) => {
  const entry = objectOfKey.get(key);
  if (entry instanceof WeakRef && entry.deref() === undefined) objectOfKey.delete(key);
});

function describe(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value !== 'object') return `a ${typeof value}`;
  if (types.isProxy(value)) return 'a Proxy';
  if (types.isMap(value)) return 'a Map';
  const proto = Object.getPrototypeOf(value);
  // Descriptors only, also here: describing a bad value must not run its getters or traps.
  const ctor = proto && !types.isProxy(proto) ? Object.getOwnPropertyDescriptor(proto, 'constructor')?.value : undefined;
  const name =
    typeof ctor === 'function' && !types.isProxy(ctor) ? Object.getOwnPropertyDescriptor(ctor, 'name')?.value : '';
  return typeof name === 'string' && name ? `an instance of ${name}` : 'an object with a custom prototype';
}

// A key in a message, as core/src/error.rs writes it: cut to MAX_KEY_BYTES bytes of UTF-8 (on a
// character boundary, `...` appended), then a JSON string.
function quote(key) {
  if (utf8Length(key, MAX_KEY_BYTES) <= MAX_KEY_BYTES) return JSON.stringify(key);
  let end = Math.min(key.length, MAX_KEY_BYTES);
  while (Buffer.byteLength(key.slice(0, end), 'utf8') > MAX_KEY_BYTES) end--;
  if (end > 0 && key.charCodeAt(end - 1) >= 0xd800 && key.charCodeAt(end - 1) <= 0xdbff) end--;
  return JSON.stringify(`${key.slice(0, end)}...`);
}

function isPlainObject(value) {
  if (value === null || typeof value !== 'object' || types.isProxy(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === null || proto === Object.prototype || isObjectPrototype(proto);
}

// Whether `proto` is the Object.prototype of some realm (a vm context; Jest runs every test file
// in one): a non-Proxy object without a prototype whose own `constructor` data property is that
// realm's native Object function, which points back at it. Reads data descriptors only: no getter
// or Proxy trap runs.
function isObjectPrototype(proto) {
  if (objectPrototypes.has(proto)) return true;
  if (types.isProxy(proto) || Object.getPrototypeOf(proto) !== null) return false;
  const ctor = Object.getOwnPropertyDescriptor(proto, 'constructor')?.value;
  if (typeof ctor !== 'function' || types.isProxy(ctor)) return false;
  if (Object.getOwnPropertyDescriptor(ctor, 'prototype')?.value !== proto) return false;
  if (Object.getOwnPropertyDescriptor(ctor, 'name')?.value !== 'Object') return false;
  if (Function.prototype.toString.call(ctor) !== 'function Object() { [native code] }') return false;
  objectPrototypes.add(proto);
  return true;
}

// Validates a user label object without invoking any getter or Proxy trap, and returns its pairs
// sorted by key.
function validate(labels, where) {
  if (!isPlainObject(labels)) {
    throw new TypeError(
      `heap-labels: ${where}: labels must be a plain object of string values, got ${describe(labels)}`,
    );
  }
  // The own string keys, then one descriptor per key: on this path, run for every request a
  // middleware labels, that allocates the least while never invoking a getter. Not
  // Reflect.ownKeys: V8 answers getOwnPropertyNames from the object's map when every property is
  // enumerable (the usual label object), and a symbol is found by a second call: together
  // about 1,000 instructions fewer per fresh object (a tenth of validation and interning). The
  // first symbol key is the one Reflect.ownKeys would list first.
  const symbols = Object.getOwnPropertySymbols(labels);
  if (symbols.length !== 0) {
    throw new TypeError(
      `heap-labels: ${where}: label keys must be strings, got the symbol key ${String(symbols[0])}`,
    );
  }
  const keys = Object.getOwnPropertyNames(labels);
  if (keys.length > MAX_LABELS) {
    throw labelError(
      'tooManyLabels',
      `heap-labels: ${where}: ${keys.length} labels, more than the limit of ${MAX_LABELS}`,
    );
  }
  if (keys.length > 1) keys.sort();
  const values = new Array(keys.length);
  for (let i = 0; i < keys.length; i++) {
    values[i] = checkPair(keys[i], Object.getOwnPropertyDescriptor(labels, keys[i]), where);
  }
  return [keys, values];
}

// The core's checks of one pair (core/src/labels/validation.rs `check_pair`), numbered for the
// switch in checkCoreRules.
const EMPTY_KEY = 0;
const RESERVED_KEY = 1;
const KEY_TOO_LONG = 2;
const VALUE_TOO_LONG = 3;
const PAIR_RULES = { emptyKey: EMPTY_KEY, reservedKey: RESERVED_KEY, keyTooLong: KEY_TOO_LONG, valueTooLong: VALUE_TOO_LONG };

// A rule lib/ does not know, or one the addon does not name, means an addon of another version.
function unknownRule(name) {
  return new Error(
    `heap-labels: the label rule ${name} is known to one of lib/labels.js (${__filename}) and the ` +
      'addon, not to the other: they are of different versions',
  );
}
for (const name of ['tooManyLabels', 'duplicateKey', ...Object.keys(PAIR_RULES)]) {
  if (ruleClass[name] === undefined) throw unknownRule(name);
}

// The pair checks in the core's order.
const PAIR_CHECKS = Uint8Array.from(
  RULES.checks.filter((check) => check.perPair),
  ({ name }) => {
    if (!Object.hasOwn(PAIR_RULES, name)) throw unknownRule(name);
    return PAIR_RULES[name];
  },
);

// Throws the error of the first of the core's checks the pair fails, in the core's order. The order
// only decides which error a pair that breaks several rules gets, so a pair is first tested against
// all of them at once: this runs for every key of every fresh label object, and a loop through the
// checks costs it about 4 % more instructions (a middleware's fresh two-label object).
function checkCoreRules(key, value, where) {
  if (
    key.length !== 0 &&
    reservedEntry(key) === undefined &&
    utf8Length(key, MAX_KEY_BYTES) <= MAX_KEY_BYTES &&
    utf8Length(value, MAX_VALUE_BYTES) <= MAX_VALUE_BYTES
  ) {
    return;
  }
  for (let i = 0; i < PAIR_CHECKS.length; i++) {
    switch (PAIR_CHECKS[i]) {
      case EMPTY_KEY:
        if (key.length === 0) throw labelError('emptyKey', `heap-labels: ${where}: label keys must not be empty`);
        break;
      case RESERVED_KEY: {
        const reserved = reservedEntry(key);
        if (reserved !== undefined) {
          throw labelError(
            'reservedKey',
            `heap-labels: ${where}: label key ${quote(key)} is reserved: ${reserved.reason}`,
          );
        }
        break;
      }
      case KEY_TOO_LONG: {
        const keyBytes = utf8Length(key, MAX_KEY_BYTES);
        if (keyBytes > MAX_KEY_BYTES) {
          throw labelError(
            'keyTooLong',
            `heap-labels: ${where}: label key ${quote(key)} is ${keyBytes} bytes long, ` +
              `more than the limit of ${MAX_KEY_BYTES} bytes`,
          );
        }
        break;
      }
      case VALUE_TOO_LONG: {
        const valueBytes = utf8Length(value, MAX_VALUE_BYTES);
        if (valueBytes > MAX_VALUE_BYTES) {
          throw labelError(
            'valueTooLong',
            `heap-labels: ${where}: the value of label ${quote(key)} is ${valueBytes} bytes long, ` +
              `more than the limit of ${MAX_VALUE_BYTES} bytes`,
          );
        }
        break;
      }
    }
  }
}

// One pair of a label object, in key order: first what only JS can get wrong (the core is never
// handed an accessor or a value that is not a string), then the core's checks in its order (so that
// what the core would reject gets the core's error), then well-formed Unicode (lib/'s own rule:
// napi would hand the core U+FFFD for a lone surrogate).
function checkPair(key, descriptor, where) {
  if (!('value' in descriptor)) {
    throw new TypeError(
      `heap-labels: ${where}: label ${quote(key)} is an accessor (getter/setter); ` +
        'labels must be plain data properties (the getter was not called)',
    );
  }
  if (!descriptor.enumerable) {
    throw new TypeError(`heap-labels: ${where}: label ${quote(key)} is not enumerable`);
  }
  const value = descriptor.value;
  if (typeof value !== 'string') {
    throw new TypeError(
      `heap-labels: ${where}: the value of label ${quote(key)} must be a string, got ${describe(value)}`,
    );
  }
  checkCoreRules(key, value, where);
  if (!key.isWellFormed()) {
    throw new TypeError(`heap-labels: ${where}: label key ${quote(key)} is not well-formed Unicode`);
  }
  if (!value.isWellFormed()) {
    throw new TypeError(
      `heap-labels: ${where}: the value of label ${quote(key)} is not well-formed Unicode`,
    );
  }
  return value;
}

// Whether user labels may not have `key`, and why (the core's words).
function isReservedKey(key) {
  return reservedEntry(key) !== undefined;
}

function reservedReason(key) {
  return reservedEntry(key)?.reason;
}

// UTF-8 length of `text` where it matters for `limit`: exact when the string could exceed it;
// otherwise its UTF-16 length, which is 0 exactly when the string is empty and, as a UTF-16 code
// unit is at most 3 bytes of UTF-8, within the limit like the true length. Short strings (the
// usual label) so skip the native call.
function utf8Length(text, limit) {
  if (text.length * 3 <= limit) return text.length;
  return Buffer.byteLength(text, 'utf8');
}

// The intern-table key of sorted pairs: length-prefixed, so no escaping is needed and no two
// different sets share a key.
function canonicalKey(keys, values) {
  let key = '';
  for (let i = 0; i < keys.length; i++) {
    key += `${keys[i].length}:${keys[i]}${values[i].length}:${values[i]}`;
  }
  return key;
}

// The one frozen object for these (valid) pairs; `keys` are unique. Pairs are put in JS sort
// order first when they are not (the addon's sets already are: it sorts keys the same way). The
// overflow set's object (from a profile) is not a valid user label object: passing it back to the
// API is rejected like any reserved key. `weak`: a new object is entered into `byKey` (weakly);
// false when the caller binds it to a set at once (it then enters `bound`, or `byKey` when its set
// overflowed).
function internPairs(keys, values, weak = true) {
  if (!isSorted(keys)) [keys, values] = sortPairs(keys, values);
  const key = canonicalKey(keys, values);
  const existing = labelsOfKey(key);
  if (existing !== undefined) return existing;
  const labels = {};
  for (let i = 0; i < keys.length; i++) labels[keys[i]] = values[i];
  // The state's private field before the freeze: adding one to a non-extensible object is allowed
  // today, but a standards proposal (private fields follow non-extensibility) would make it throw.
  const state = new LabelState(key, !keys.some(isReservedKey));
  stateOf.set(labels, state);
  Object.freeze(labels);
  if (weak) keepWeakly(labels, state);
  return labels;
}

// The pairs of a frozen label object made here, sorted by key as canonicalKey takes them (the
// default sort: UTF-16 code units; the object's own key order puts integer-like keys first).
function pairsOf(labels) {
  const keys = Object.keys(labels).sort();
  return [keys, keys.map((k) => labels[k])];
}

// The frozen object of canonical key `key`, if there is one.
function labelsOfKey(key) {
  const entry = objectOfKey.get(key);
  return entry instanceof WeakRef ? entry.deref() : entry;
}

// (Only while `key` has no object.)
function keepWeakly(labels, state) {
  objectOfKey.set(state.key, new WeakRef(labels));
  if (!state.weak) forget.register(labels, state.key);
  state.weak = true;
}

// lib/label-sets.js names `labels` (its set's key, from the addon): it is the object of that set,
// held strongly. The object lib/label-sets.js named under that id before, if another, is not any
// more (its set was pruned): it is held weakly again if it was before it was bound, and not at all
// otherwise, unless it names another set now.
function bindLabels(labels, state, id, generation) {
  const evicted = rememberSet(id, generation, labels);
  if (evicted !== undefined && evicted !== labels) {
    const old = stateOf.get(evicted);
    // Its key's entry goes only if it is still this object's: an equal object may have been bound
    // to another set since (one made before this one's set was pruned, and kept by its user).
    if (old !== undefined && old.id === id) {
      old.id = -1;
      if (objectOfKey.get(old.key) === evicted) {
        if (old.weak) objectOfKey.set(old.key, new WeakRef(evicted));
        else objectOfKey.delete(old.key);
      }
    }
  }
  state.id = id;
  state.held = true;
  objectOfKey.set(state.key, labels);
}

function isSorted(keys) {
  for (let i = 1; i < keys.length; i++) if (keys[i - 1] > keys[i]) return false;
  return true;
}

function sortPairs(keys, values) {
  const order = keys.map((_, i) => i).sort((a, b) => (keys[a] < keys[b] ? -1 : 1));
  return [order.map((i) => keys[i]), order.map((i) => values[i])];
}

// Validates user labels and returns the interned frozen object equal to them. `weak`: as for
// internPairs.
function intern(labels, where, weak = true) {
  if (stateOf.get(labels)?.user) return labels;
  return internOther(labels, where, weak);
}

// intern() of `labels` that is not a user label object made here.
function internOther(labels, where, weak) {
  // A frozen plain object cannot change after it was validated once: a middleware that keeps one
  // `Object.freeze({ route })` per route pays a WeakMap lookup per request, not a validation.
  const known = frozenUserLabels.get(labels);
  if (known !== undefined) return known;
  const [keys, values] = validate(labels, where);
  const result = internPairs(keys, values, weak);
  if (Object.isFrozen(labels)) frozenUserLabels.set(labels, result);
  return result;
}

// The interned label set of an interned `labels` plus one more pair, validated like any pair:
// how an integration adds its route label to the extra labels of a request without building and
// validating a new object. `key` must not be in `labels` yet.
function internWith(labels, key, value, where) {
  const [keys, values] = pairsOf(labels);
  if (keys.length >= MAX_LABELS) {
    throw labelError(
      'tooManyLabels',
      `heap-labels: ${where}: ${keys.length + 1} labels, more than the limit of ${MAX_LABELS}`,
    );
  }
  if (keys.includes(key)) {
    throw labelError('duplicateKey', `heap-labels: ${where}: label key ${quote(key)} appears more than once`);
  }
  checkPair(key, { value, enumerable: true }, where);
  return internPairs([...keys, key], [...values, value]);
}

// The label holder of user labels `labels` (validated and interned first): what
// withHeapProfileLabels and setHeapProfileLabels store.
function labelHolder(labels, where) {
  const state = stateOf.get(labels);
  if (state?.user) return keptHolderOf(labels, state);
  // Not one of ours: interned without a weak entry, since its holder is made below (or it is
  // known already). Not intern(): it would test the private field again, a V8 runtime call on an
  // object without it.
  const interned = internOther(labels, where, false);
  return keptHolderOf(interned, stateOf.get(interned));
}

// Holders of label objects used over and over (a frozen per-route object, a route labeler's labels),
// found again without an addon call (a native lookup is about 2,000 instructions, most of a label
// call): from the second use that finds the holder alive, a WeakRef to it. Weak, because
// lib/label-sets.js keeps the frozen objects of live sets: a strong holder there would keep its set
// alive, and the set its cache entry, for good. So a holder no async context uses still dies at the
// next GC, and its set is pruned as before; a dereferenced one lives to the end of the current job
// at most. Labels used once (a batch of distinct sets) are not dereferenced at all.
// Objects marked with pinHolder() keep their holder strongly instead, once it is bound to a set of
// its own (not the overflow set, whose holders must keep asking for a set of their own): no
// WeakRef deref per use, which costs a table the GC keeps the target in until the end of the job,
// about 115 bytes of JS heap per request when a route labeler enters a route.
function keptHolderOf(labels, state = stateOf.get(labels)) {
  const pinned = state.pinned;
  if (pinned !== undefined) return pinned;
  const kept = state.kept?.deref();
  if (kept !== undefined) {
    if (state.pin) pinKept(state, kept);
    return kept;
  }
  if (state.serial === undefined) return holderOnOverflow(labels, state);
  const live = native.liveLabelHolder(state.serial);
  if (!live) return holderOnOverflow(labels, state); // undefined (or null from the addon): not alive
  if (state.pin) pinKept(state, live);
  else state.kept = new WeakRef(live);
  return live;
}

// Keeps `holder`, the live holder of a pinned state's labels bound to their own set, strongly.
function pinKept(state, holder) {
  state.pinned = holder;
  state.kept = undefined;
}

// Marks the interned label object `labels` as one of a bounded set used for the life of the
// process (a route labeler's route templates and buckets, capped by its maxRoutes): its holder,
// hence its label set, is kept strongly once it has a set of its own, so finding it costs no
// WeakRef. Never for labels whose number the application decides (extra labels, user labels).
function pinHolder(labels) {
  const state = stateOf.get(labels);
  if (state !== undefined) state.pin = true;
}

// A new holder, and one made while the registry was at maxLabelSets (bound to the overflow set).
// Each use of the latter asks the addon to bind it to its own set if there is room now (the addon
// also does so for all such holders when a session starts, a profile is read or stats are taken),
// so a label object that lives long (a frozen per-route object, a busy route) recovers its real
// labels. The addon writes the holder's binding into setKey: [id, generation] of its own set
// (id -1: no labels, NO_SET_OF_ITS_OWN: the overflow set) and its serial number; reads then find
// these labels by the set's key.
const setKey = new Float64Array(3);
const NO_SET_OF_ITS_OWN = -2;

function holderOnOverflow(labels, state) {
  let holder = state.overflowSerial === undefined ? undefined : native.liveLabelHolder(state.overflowSerial);
  if (holder === undefined) {
    // An object whose set was pruned while it was kept (by the user, or a profile) may have been
    // replaced as the object of its content by an equal one since: contexts entered with either
    // get the one profiles name. An object that never had a holder and was never bound to a set is
    // the object of its content (it was made on a miss, and is held under its key, or under none
    // yet when it was made for this call): no lookup, which a first use would pay for nothing.
    if (state.held) {
      const canonical = labelsOfKey(state.key);
      if (canonical !== undefined && canonical !== labels) return keptHolderOf(canonical);
    }
    state.held = true;
    // One addon call makes the holder (frozen, `labels` its read-only property) and binds it.
    holder = native.createLabelHolder(state.key, labels, setKey);
  } else {
    native.bindLabelHolder(holder, setKey);
  }
  const id = setKey[0];
  if (id >= 0) bindLabels(labels, state, id, setKey[1]);
  else if (labelsOfKey(state.key) === undefined) keepWeakly(labels, state); // {}, or overflowed
  if (id === NO_SET_OF_ITS_OWN) {
    // A holder of these labels bound to their own set was collected: the labels are on the
    // overflow set now, and no holder of theirs is settled.
    state.serial = undefined;
    state.overflowSerial = setKey[2];
  } else {
    state.overflowSerial = undefined;
    state.serial = setKey[2];
    if (state.pin) pinKept(state, holder);
  }
  return holder;
}

// This realm's label object of a holder's labels. Realms that share the addon share the labels
// key (one set of labels per isolate), so a holder may come from another realm's instance.
// (Its frozen object is validated once, then found in frozenUserLabels.) A label holder has them
// as its `labels` property, a request holder (lib/context.js) in a field the addon reads.
function labelsOfHolder(holder) {
  // An own property only: a request holder inherits from Object.prototype, whose `labels` (a
  // library's, or prototype pollution) must not stand for its labels.
  const labels = Object.hasOwn(holder, 'labels') ? holder.labels : native.requestHolderLabels(holder);
  return stateOf.get(labels)?.user ? labels : intern(labels, 'getHeapProfileLabels');
}

// The labels of the sets with keys `ids[i]`/`generations[i]` (i < count), as an array indexed by
// id: from the cache of lib/label-sets.js, and for the keys it does not know from
// `fetchPairs(ids: Uint32Array)`, asked once, which returns `{ id, generation, keys, values }` for
// the sets it still has (a read's own sets are always there; the registry's may have been pruned
// since): an id it leaves out stays undefined.
function labelsOfSets(ids, generations, count, fetchPairs) {
  let maxId = 0;
  for (let i = 0; i < count; i++) if (ids[i] > maxId) maxId = ids[i];
  // Pre-sized, so that stores in the sets' (unordered) id order stay in fast elements.
  const byId = new Array(maxId + 1);
  let missing;
  for (let i = 0; i < count; i++) {
    const id = ids[i];
    const labels = knownLabels(id, generations[i]);
    if (labels === undefined) (missing ??= []).push(id);
    else byId[id] = labels;
  }
  if (missing !== undefined) {
    for (const set of fetchPairs(Uint32Array.from(missing))) {
      const labels = internPairs(set.keys, set.values, false);
      bindLabels(labels, stateOf.get(labels), set.id, set.generation);
      byId[set.id] = labels;
    }
  }
  return byId;
}

module.exports = {
  isReservedKey,
  reservedReason,
  labelError,
  MAX_LABELS,
  MAX_KEY_BYTES,
  MAX_VALUE_BYTES,
  intern,
  internPairs,
  internWith,
  keptHolderOf,
  pinHolder,
  labelHolder,
  labelsOfHolder,
  labelsOfSets,
};
