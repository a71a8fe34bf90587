// @ts-check
'use strict';
// A labeled request's own event listeners (of its node:http IncomingMessage and ServerResponse:
// 'data', 'end', 'error', 'close', 'finish', ...) run under the labels its integration entered
// last: the route's.
//
// Why this is needed. An EventEmitter calls its listeners in the async context of the emit() call,
// not of the on() call. node:http emits a request's body events from the socket's read callback,
// which runs in the context of the server's HTTP parser: one async resource per connection, made
// when the connection was accepted. The integrations enter the route's labels in middleware, after
// the request was emitted. Without AsyncContextFrame, enterWith() writes the labels onto the
// execution async resource of that moment, usually that very parser resource, so the body events
// happen to see them (unless the route was entered in a later continuation). With AsyncContextFrame
// (Node.js 24+, stock 22 with --experimental-async-context-frame, the patched runtime) enterWith()
// only replaces the current frame; the parser resource keeps the frame of the connection's start,
// and every later socket read restores it: 'data' and 'end' listeners (raw-body in body-parser,
// fastify's JSON parser, co-body, a handler's own req.on('end')) see no labels at all, and what
// they allocate, typically the parsed JSON body, is unlabeled.
//
// Why not bind the listeners. AsyncResource.bind / EventEmitterAsyncResource capture the context
// where the listener is added or the emitter made, which is fixed: a listener added before routing
// (an app-level body parser) would keep the bucket, and binding every listener allocates per
// listener and changes what removeListener() and listeners() see. Node.js cannot help either: the
// parser's async resource belongs to the connection and has no per-request reset.
//
// How. The integrations call bindRequest(request, state, holder) right after they enter a request's
// labels: the request's state (below) records the label holder they entered (overwritten when the
// route is entered). IncomingMessage.prototype and ServerResponse.prototype of node:http get an
// own `emit` (installed once per process and addon, on first use): for an event with listeners of
// a request with a recorded holder (for a response: its `req`'s), it calls the emit it shadows
// with that holder current, unless it already is (then it calls it directly). Only this storage's
// entry of the context changes, only for the duration of the emit: other AsyncLocalStorage users
// see what they would have seen, and whatever a listener starts (a promise, a timer) carries the
// request's labels, as on any other path of the request. Nothing leaks to other requests: the
// holder is the request's own, and the previous context is restored when the emit returns. Every
// other IncomingMessage/ServerResponse (client responses, servers without an integration) pays a
// few property reads per emit (and a table lookup when the event has listeners).
//
// Per-request state. What heap-labels keeps per request (its request holder, the labels entered
// last, the framework's own route value, ...) is one RequestState object, found in a WeakMap keyed
// by the request: never properties of the request object itself. Express switches every request's
// prototype (Object.setPrototypeOf(req, app.request)), which leaves req and res on maps outside
// V8's transition tree: each property added to them afterwards builds a new map and a copy of its
// descriptor array (about 1.3 KB with express's properties) in the runtime, on every request, and
// leaves every property access on them megamorphic. Six symbol properties per request made the
// integration cost 9.4 KB of JS heap per request and +20 % of instructions over sampling alone
// (docs/performance.md, "Framework integrations, label calls and start-up"); one WeakMap entry
// and one object with a stable shape cost about 90 bytes and a few hundred instructions.
//
// HTTP/2 the same way: a server stream's data comes from its session's socket reads. The
// automatic instrumentation calls bindStream(stream) when it labels a stream at its start
// (lib/instrument/request-start.js), and bindRequest() of an Http2ServerRequest (fastify's
// request.raw on an http2 server) binds its stream: the stream's listeners and those of its
// compatibility-API request and response (Http2ServerRequest, Http2ServerResponse) run under the
// stream's labels. Their prototypes (the server stream's is not exported by node:http2: it is
// taken from the first stream bound) get the wrapper on first use.
//
// The table and the installation are keyed by the addon file: lib/ copies loaded into several
// realms of one process (Jest) share the addon, hence its labels storage, and share one table and
// one wrapper; a copy with another addon keeps its own.

const { addonPath } = require('../native');
const { currentLabelHolder, runWithLabelHolder } = require('../context');

const kStates = Symbol.for(`heap-labels.request-states ${addonPath}`); // on node:http: the table
const kInstalled = Symbol.for(`heap-labels.request-emit ${addonPath}`); // on patched prototypes

// request (or HTTP/2 stream) -> its RequestState, shared by the realms using this addon. Made at
// the first request, with node:http (loaded by then): a process that serves nothing loads neither.
let states;
let http;

function table() {
  if (states !== undefined) return states;
  http = require('node:http');
  states = http[kStates];
  if (states === undefined) {
    states = new WeakMap();
    Object.defineProperty(http, kStates, { value: states });
  }
  return states;
}

// What heap-labels keeps per labeled request: one object per request, every field set by its
// constructor, so that all requests of a framework share one map. Each field is written by the
// module named. What only one framework needs is in its subclass below, made where the request is
// known to be that framework's (its integration; lib/instrument/request-start.js for a server the
// framework's listener serves), so that the other frameworks' requests do not carry it. A request
// whose state was made as a plain RequestState before its framework saw it (a server whose
// listener wraps the framework's) gets the framework's fields as it goes: slower, as correct.
class RequestState {
  constructor() {
    // route-labels.js: the request holder the request was started under (late binding), or
    // undefined; and the labels entered last for the request.
    this.holder = undefined;
    this.labels = undefined;
    // Here: the label holder the request's own listeners run under (bindRequest).
    this.listeners = undefined;
    // The integrations: the request's interned extra labels (their `labels` option).
    this.extras = undefined;
  }
}

// A request a koa app serves.
class KoaRequestState extends RequestState {
  constructor() {
    super();
    // koa.js: koa's own route value behind the accessor that reports it (ctx._matchedRoute).
    this.koaMatchedRoute = undefined;
  }
}

// A request an express app serves: express's routing keeps seven fields per request.
class ExpressRequestState extends RequestState {
  constructor() {
    super();
    // express.js: express's own route value behind the accessor that reports it (req.route). A
    // field of its own beside koa's: one request can pass through both (a koa app in an express
    // route).
    this.expressRoute = undefined;
    // express-templates.js: the Mount the request is in and req.baseUrl when it entered it; how it
    // leaves the first router mount it is in (req.next once it is back in `exitParent`, which
    // `exitBase` was its base; whether the mount's router has been entered), in these fields
    // rather than an object of their own (56 bytes per request).
    this.mount = undefined;
    this.base = undefined;
    this.exitNext = undefined;
    this.exitParent = undefined;
    this.exitBase = undefined;
    this.exitEntered = false;
  }
}

// The state of `request`, undefined if it has none.
function stateOf(request) {
  return table().get(request);
}

// The state of `request` (an object), made as a `Kind` if it has none.
function ensure(request, Kind) {
  let state = table().get(request);
  if (state === undefined) {
    state = new Kind();
    table().set(request, state);
  }
  return state;
}

const ensureState = (request) => ensure(request, RequestState);
// The same for a request an express app, or a koa app, serves.
const ensureExpressState = (request) => ensure(request, ExpressRequestState);
const ensureKoaState = (request) => ensure(request, KoaRequestState);

let installed = false;
let http2; // node:http2, loaded when the first HTTP/2 stream is bound

// Records `holder`, the label holder an integration just entered (current now), as `request`'s
// own (`state` is its state): its and its response's listeners run under it from now on. The
// caller passes the holder it entered: reading the current one back costs a binding call per read
// under AsyncContextFrame on Node.js 22. `request` is node:http's IncomingMessage (also an express
// request, fastify's request.raw, koa's ctx.req) or an HTTP/2 Http2ServerRequest; anything else is
// left alone.
function bindRequest(request, state, holder) {
  table(); // loads node:http
  if (request instanceof http.IncomingMessage) {
    if (!installed) install();
    state.listeners = holder;
  } else if (http2 !== undefined && request instanceof http2.Http2ServerRequest) {
    bindStream(request.stream);
  }
}

// The same for an HTTP/2 server stream (ServerHttp2Stream): its listeners and those of its
// compatibility-API request and response.
function bindStream(stream) {
  if (stream === null || typeof stream !== 'object') return;
  if (http2 === undefined) installHttp2(stream);
  ensureState(stream).listeners = currentLabelHolder();
}

function install() {
  installed = true;
  wrapEmit(http.IncomingMessage.prototype, requestHolder);
  wrapEmit(http.ServerResponse.prototype, responseHolder);
}

function installHttp2(stream) {
  http2 = require('node:http2');
  wrapEmit(Object.getPrototypeOf(stream), requestHolder);
  wrapEmit(http2.Http2ServerRequest.prototype, streamHolder);
  wrapEmit(http2.Http2ServerResponse.prototype, streamHolder);
}

// The listeners' holder of a request (or stream), of a response's request, of a
// compatibility-API request's or response's stream.
function requestHolder(request) {
  const state = table().get(request);
  return state === undefined ? undefined : state.listeners;
}

function responseHolder(response) {
  const request = response.req;
  return request === undefined || request === null ? undefined : requestHolder(request);
}

function streamHolder(message) {
  const stream = message.stream;
  return stream === undefined || stream === null ? undefined : requestHolder(stream);
}

// Gives `proto` an own emit that runs the emit it shadows (its own one if it had one, else the
// inherited one, looked up per call so that a later wrapper further up still runs) under the
// holder `holderOf(this)` returns. The wrapper passes its arguments on as a spread rest parameter,
// which optimized code does without allocating it; where it runs unoptimized, an event without
// arguments ('end', 'finish', 'close': most of a request's) costs an empty array, smaller than the
// `arguments` object it would otherwise cost.
function wrapEmit(proto, holderOf) {
  if (Object.hasOwn(proto, kInstalled)) return;
  const own = Object.hasOwn(proto, 'emit') ? proto.emit : undefined;
  const parent = Object.getPrototypeOf(proto);
  proto.emit = function emit(event, ...args) {
    const shadowed = own === undefined ? parent.emit : own;
    const holder = runsListeners(this._events, event) ? holderOf(this) : undefined;
    if (holder === undefined || holder === currentLabelHolder()) return shadowed.call(this, event, ...args);
    return emitWithHolder.call(this, holder, shadowed, event, ...args);
  };
  Object.defineProperty(proto, kInstalled, { value: true });
}

// Whether an emit of `event` runs a listener that should carry the request's labels: not when
// EventEmitter's own table (`events`) has none ('error' always counts: its errorMonitor listeners
// sit under another key), nor when the one listener of an 'end' is Node.js's own clearIncoming,
// which node:http adds to a request's 'end' when the response finished first (it allocates
// nothing, and the emit would cost a context frame per request). Only then is a listener's name
// read: the name of a bound function ('bound resOnFinish', on every response's 'finish') is built
// anew at each read.
function runsListeners(events, event) {
  if (event === 'error' || events === undefined || events === null) return true;
  const listeners = events[event];
  if (listeners === undefined) return false;
  return event !== 'end' || typeof listeners !== 'function' || listeners.name !== 'clearIncoming';
}

// The wrapper's other path: the shadowed emit with the holder current. A function of its own, so
// that the wrapper hands its rest parameter on as a spread only (which optimized code does
// without making the array) on both paths.
function emitWithHolder(holder, shadowed, ...args) {
  return runWithLabelHolder(holder, shadowed, this, args);
}

module.exports = { bindRequest, bindStream, stateOf, ensureState, ensureExpressState, ensureKoaState };
