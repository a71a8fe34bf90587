'use strict';
// The route labels of the framework integrations (heap-labels/express, /fastify, /koa, /http):
// one interned, frozen label object per route template, kept in a Map with its label holder, so
// that labeling a request costs a Map lookup and one AsyncLocalStorage.enterWith of a holder the
// labeler has (or one binding of the request's holder), never a validation.
//
// Cardinality: a label value is a route template ('/users/:id'), never a raw URL. Requests that
// match no route get the bucket of their method (`unmatched` and the method: '(unmatched) GET'; a
// method node:http does not know gets the bare `unmatched`), and the number of distinct templates
// is capped (`maxRoutes`): past it new templates share the bucket too, with a warning.
//
// Late binding (docs/architecture.md, "Late binding: request cells"): an integration that sees a
// request before its route is known starts it (`startRequest`) under a request holder bound to
// its bucket; entering the route later binds that holder instead of entering new labels, so what
// the request allocated in between (middleware, body parsing) is read under its route.
// Extra labels come from the user's `labels(request)` function once per request; its result is
// validated like any label set (a frozen object it returns again is validated only once).
//
// The labeler finds its labels' holders through lib/labels.js keptHolderOf: entering or binding a
// route then asks the addon for nothing while the holder lives (a native lookup per use costs about
// 2,000 instructions). A framework's labeler (its templates come from the app's route table)
// keeps the holders of its labels without extra labels (the templates, at most maxRoutes, and the
// buckets) strongly (pinHolder): their sets live as long as the process, so maxLabelSets must
// leave room beyond the app's routes (10,000 by default against maxRoutes' 1,000). All other
// holders (with extra labels, whose number the application decides; the node:http fallback's,
// made from request URLs; heap-labels/http's) are referenced weakly, so the sets no request uses
// any more are pruned after a GC, and overflow does not stay.

// Entering labels for a request also makes them the request's own (request-context.js): the
// listeners of its IncomingMessage and ServerResponse run under them. And it tells the automatic
// instrumentation that the request's server has an integration, so that its next requests start
// with the bucket rather than the node:http fallback label (lib/instrument/servers.js).

const { isRegExp } = require('node:util').types;
const {
  currentLabelHolder,
  enterLabelHolder,
  enterRequestLabels,
  bindRequestLabels,
} = require('../context');
const { MAX_LABELS, intern, internWith, keptHolderOf, pinHolder, labelError } = require('../labels');
const { bindRequest, ensureState } = require('./request-context');
const { claim } = require('../instrument/servers');

const DEFAULT_KEY = 'route';
const DEFAULT_UNMATCHED = '(unmatched)';
const DEFAULT_MAX_ROUTES = 1000;
// node:http's METHODS, loaded when the first labeler is made (by then the app has loaded node:http;
// the preload makes its labelers at the first request or framework, so that a process that serves
// nothing never loads it).
const httpMethods = () => require('node:http').METHODS;

// Route templates are the paths of the app's own route table, as written, joined to the paths the
// routes are mounted under (docs/api.md, "Route templates"):
// - a string path is itself ('/users/:id', express 5's '/files/*path', fastify's '/num/:id(^\d+$)');
// - a RegExp path is its literal, String(regexp): '/^\/files\/(.*)$/' (with its flags, if any);
// - a route or mount with several paths is named by the one path that matched the request, which
//   the integration determines; a list of paths is never a template (formatPath gives undefined).

// The template of one route or mount path (a string or a RegExp); undefined for anything else.
function formatPath(path) {
  if (typeof path === 'string') return path;
  if (isRegExp(path)) return String(path);
  return undefined;
}

// The template of `path` (a string or RegExp, as written) mounted under the template `prefix` ('' at
// the root), e.g. '/api' + '/users/:id'. A mount's trailing slash is dropped and the root path of a
// mounted router ('/' or '') is the mount path itself; a path without a leading slash gets one. A
// RegExp literal is appended as is ('/api' + '/^\/raw\/(\d+)$/'), and after a prefix that ends
// in a RegExp literal (`prefixIsPattern`) the path is appended as is, since the literal's closing
// slash is part of its name ('/^\/v\d+/' + '/ping' is '/^\/v\d+//ping').
function joinPath(prefix, path, prefixIsPattern = false) {
  const piece = formatPath(path);
  if (piece === undefined || prefix === undefined) return undefined;
  if (prefix === '' || (prefix === '/' && !prefixIsPattern)) return piece;
  if (prefixIsPattern) {
    if (piece === '/' || piece === '') return prefix;
    return piece.startsWith('/') ? prefix + piece : `${prefix}/${piece}`;
  }
  const base = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
  if (isRegExp(path)) return base + piece;
  if (piece === '/' || piece === '') return base;
  return piece.startsWith('/') ? base + piece : `${base}/${piece}`;
}

function readOptions(options, where) {
  if (options === undefined || options === null) options = {};
  if (typeof options !== 'object') {
    throw new TypeError(`heap-labels: ${where}: options must be an object, got a ${typeof options}`);
  }
  const { key = DEFAULT_KEY, unmatched = DEFAULT_UNMATCHED, labels, maxRoutes = DEFAULT_MAX_ROUTES } = options;
  if (typeof key !== 'string') {
    throw new TypeError(`heap-labels: ${where}: option "key" must be a string, got a ${typeof key}`);
  }
  if (typeof unmatched !== 'string') {
    throw new TypeError(`heap-labels: ${where}: option "unmatched" must be a string, got a ${typeof unmatched}`);
  }
  if (labels !== undefined && typeof labels !== 'function') {
    throw new TypeError(`heap-labels: ${where}: option "labels" must be a function, got a ${typeof labels}`);
  }
  if (!Number.isSafeInteger(maxRoutes) || maxRoutes < 1) {
    throw new RangeError(`heap-labels: ${where}: option "maxRoutes" must be an integer >= 1, got ${maxRoutes}`);
  }
  return { key, unmatched, labels, maxRoutes };
}

class RouteLabeler {
  constructor(options, where, routeTable) {
    const { key, unmatched, labels, maxRoutes } = readOptions(options, where);
    this.where = where;
    // Whether the templates come from the application's route table (express, fastify, koa): then
    // their label holders are pinned (see labelsFor). Not for templates made from request URLs
    // (the node:http fallback) or named by the application per request (heap-labels/http), which
    // a client's requests could fill with values nothing uses again.
    this.routeTable = routeTable === true;
    this.key = key;
    this.unmatched = unmatched;
    this.extraLabels = labels;
    this.maxRoutes = maxRoutes;
    this.none = intern({}, where);
    // Validates the key and the bucket values now: a bad option fails at setup, naming the key
    // (the longest method's bucket stands for all of them).
    this.bucket = internWith(this.none, key, unmatched, `${where}: option "unmatched"`);
    const longestMethod = httpMethods().reduce((a, b) => (b.length > a.length ? b : a));
    internWith(this.none, key, `${unmatched} ${longestMethod}`, `${where}: option "unmatched"`);
    // method -> its bucket value, made once: a string built per request would be allocated, and
    // flattened again for the cache lookup, on every request.
    this.bucketValues = new Map(httpMethods().map((method) => [method, `${unmatched} ${method}`]));
    if (this.routeTable) pinHolder(this.bucket);
    this.plain = new Map([[unmatched, this.bucket]]); // label value -> labels, without extra labels
    this.withExtras = new WeakMap(); // interned extra labels -> Map(template -> labels)
    this.accepted = new Set(); // templates with their own label value (at most maxRoutes)
    this.warned = new Set();
  }

  // The interned extra labels of a request, or undefined (no `labels` option, or it returned
  // undefined/null). Throws the library's TypeError/RangeError naming the key when they are bad.
  extrasOf(request) {
    if (this.extraLabels === undefined) return undefined;
    const out = this.extraLabels(request);
    if (out === undefined || out === null) return undefined;
    const where = `${this.where}: labels()`;
    const extras = intern(out, where);
    // Checked here, per request, so that adding the route label later cannot fail.
    const count = Object.keys(extras).length;
    if (count >= MAX_LABELS) {
      throw labelError(
        'tooManyLabels',
        `heap-labels: ${where}: returned ${count} labels; with the label ${JSON.stringify(this.key)} ` +
          `that is more than the limit of ${MAX_LABELS}`,
      );
    }
    if (Object.hasOwn(extras, this.key)) {
      throw new TypeError(
        `heap-labels: ${where}: returned the label ${JSON.stringify(this.key)}, which the integration ` +
          'sets itself (the route template); use another key',
      );
    }
    return extras;
  }

  // The bucket value of a request with HTTP method `method`: `unmatched` and the method for the
  // methods node:http knows (a bounded set), `unmatched` alone otherwise.
  bucketValue(method) {
    return this.bucketValues.get(method) ?? this.unmatched;
  }

  // The frozen label object of `template` (undefined: the bucket of `method`) with `extras`.
  // Throws when the template cannot be a label value (longer than the limit, or not well-formed
  // Unicode).
  labelsFor(template, extras, method) {
    const bucket = template === undefined;
    const value = bucket ? this.bucketValue(method) : template;
    const cache = extras === undefined ? this.plain : this.cacheOf(extras);
    const cached = cache.get(value);
    if (cached !== undefined) return cached;
    if (!bucket && !this.admits(value)) return this.labelsFor(undefined, extras, method);
    const labels = internWith(extras === undefined ? this.none : extras, this.key, value, this.where);
    if (!bucket) this.accepted.add(value);
    // A route table's templates without extra labels: a bounded set (maxRoutes templates, one bucket
    // per method) used for the life of the app, whose holders are kept strongly (no WeakRef deref
    // per request).
    if (extras === undefined && this.routeTable) pinHolder(labels);
    cache.set(value, labels);
    return labels;
  }

  cacheOf(extras) {
    let cache = this.withExtras.get(extras);
    if (cache === undefined) {
      cache = new Map();
      this.withExtras.set(extras, cache);
    }
    return cache;
  }

  // Whether `value` gets (or has) its own label value: at most maxRoutes templates do. The others
  // are not cached, so a flood of raw URLs cannot grow any table.
  admits(value) {
    if (value === this.unmatched || this.accepted.has(value) || this.accepted.size < this.maxRoutes) return true;
    this.warnOnce(
      'maxRoutes',
      `${this.accepted.size} distinct route templates, the maxRoutes limit: further templates are ` +
        `labeled ${JSON.stringify(this.unmatched)} (is a raw URL passed where a route template belongs?)`,
    );
    return false;
  }

  // Enters the labels of `template` for the rest of the current async context and as the
  // labels of `request` (node:http's request object), and returns them.
  enter(request, template, extras) {
    return this.enterLabels(request, this.labelsFor(template, extras, request?.method));
  }

  // Starts `request` under a request holder bound to its method's bucket (with `extras`), for
  // the rest of the current async context and as the labels of its own event listeners; returns
  // the bucket's labels. A request started already (by another labeler) keeps its holder, bound
  // to this labeler's bucket. The request's state (request-context.js) keeps the holder, shared
  // by every labeler (the zero-code node:http start and a framework's routing may be different
  // labelers). A framework starts its requests here: a server that was taken for a plain one
  // (its listener wraps the framework's) is a framework's from now on (claim). `state`: the
  // request's state, when the caller has it at hand.
  startRequest(request, extras, state) {
    const labels = this.routeLabels(undefined, extras, request?.method);
    if (request === null || typeof request !== 'object') {
      enterLabelHolder(keptHolderOf(labels));
      return labels;
    }
    if (state === undefined) state = ensureState(request);
    if (state.holder !== undefined) return this.enterLabels(request, labels, state);
    state.holder = enterRequestLabels(labels, keptHolderOf(labels));
    state.labels = labels;
    bindRequest(request, state, state.holder);
    claim(request, state);
    return labels;
  }

  // Makes `labels` (made by this labeler) the labels of `request`: a started request's holder is
  // bound to them (what it allocated so far moves with it); any other request enters them for
  // the rest of the current async context and as the labels of its own event listeners. Returns
  // them. `state`: the request's state, when the caller has it at hand.
  enterLabels(request, labels, state) {
    if (state === undefined && request !== null && typeof request === 'object') state = ensureState(request);
    const holder = state === undefined ? undefined : state.holder;
    const labelsHolder = keptHolderOf(labels);
    if (holder !== undefined) {
      // state.labels are the labels entered last: its holder's (startRequest, here), unless the
      // cell refused a binding (it has used its bindings), which it refuses again.
      if (state.labels !== labels) bindRequestLabels(holder, labels, labelsHolder);
      state.labels = labels;
      // The holder is current wherever the request's context went; where it is not (a context
      // lost on the way, or user labels entered since), the route's labels are entered as today.
      if (currentLabelHolder() !== holder) {
        enterLabelHolder(labelsHolder);
        bindRequest(request, state, labelsHolder);
      } else if (state.listeners !== holder) {
        // An earlier binding entered another route's holder for the listeners (its context was
        // lost): they follow the request holder again, now bound to these labels.
        bindRequest(request, state, holder);
      }
      return labels;
    }
    enterLabelHolder(labelsHolder);
    if (state !== undefined) {
      state.labels = labels;
      bindRequest(request, state, labelsHolder);
      claim(request, state);
    }
    return labels;
  }

  // As labelsFor(), for a framework's route template, where throwing would escape the framework's
  // error handling: a template that cannot be a label value gets the bucket (and one warning
  // naming it) instead of an exception.
  routeLabels(template, extras, method) {
    try {
      return this.labelsFor(template, extras, method);
    } catch (error) {
      // Only templates from the application's route definitions get here: a bounded set.
      this.warnOnce(
        `template ${template}`,
        `a route template cannot be a label value, labeled as unmatched: ${error.message}`,
      );
      return this.labelsFor(undefined, extras, method);
    }
  }

  // As enter(), with routeLabels(template, extras).
  enterRoute(request, template, extras) {
    return this.enterLabels(request, this.routeLabels(template, extras, request?.method));
  }

  warnOnce(what, message) {
    if (this.warned.has(what)) return;
    this.warned.add(what);
    process.emitWarning(`heap-labels: ${this.where}: ${message}`, { code: 'HEAP_LABELS_ROUTE' });
  }
}

// `routeTable`: the templates come from the application's route table (a framework's labeler).
function createRouteLabeler(options, where, routeTable = false) {
  return new RouteLabeler(options, where, routeTable);
}

module.exports = { createRouteLabeler, formatPath, joinPath };
