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
// How. The integrations call bindRequest(request) right after they enter a request's labels: the
// request records the label holder now current (one property per request, overwritten when the
// route is entered). IncomingMessage.prototype and ServerResponse.prototype of node:http get an
// own `emit` (installed once per process and addon, on first use): for a request with a recorded
// holder (for a response: its `req`'s), it calls the emit it shadows with that holder current,
// unless it already is (then it calls it directly). Only this storage's entry of the context
// changes, only for the duration of the emit: other AsyncLocalStorage users see what they would
// have seen, and whatever a listener starts (a promise, a timer) carries the request's labels, as
// on any other path of the request. Nothing leaks to other requests: the holder is the request
// object's own, and the previous context is restored when the emit returns. Every other
// IncomingMessage/ServerResponse (client responses, servers without an integration) pays one
// property read per emit.
//
// HTTP/2 the same way: a server stream's data comes from its session's socket reads. The
// automatic instrumentation calls bindStream(stream) when it labels a stream at its start
// (lib/instrument/request-start.js), and bindRequest() of an Http2ServerRequest (fastify's
// request.raw on an http2 server) binds its stream: the stream's listeners and those of its
// compatibility-API request and response (Http2ServerRequest, Http2ServerResponse) run under the
// stream's labels. Their prototypes (the server stream's is not exported by node:http2: it is
// taken from the first stream bound) get the wrapper on first use.
//
// The property and the installation are keyed by the addon file: lib/ copies loaded into several
// realms of one process (Jest) share the addon, hence its labels storage, and install one wrapper;
// a copy with another addon keeps its own key and wrapper.

const http = require('node:http');
const { addonPath } = require('../native');
const { currentLabelHolder, applyWithLabelHolder } = require('../context');

const kHolder = Symbol.for(`heap-labels.request-labels ${addonPath}`); // request -> label holder
const kInstalled = Symbol.for(`heap-labels.request-emit ${addonPath}`); // on patched prototypes

let installed = false;
let http2; // node:http2, loaded when the first HTTP/2 stream is bound

// Records the labels current now (just entered by an integration) as `request`'s own: its and its
// response's listeners run under them from now on. `request` is node:http's IncomingMessage (also
// an express request, fastify's request.raw, koa's ctx.req) or an HTTP/2 Http2ServerRequest;
// anything else is left alone.
function bindRequest(request) {
  if (request instanceof http.IncomingMessage) {
    if (!installed) install();
    request[kHolder] = currentLabelHolder();
  } else if (http2 !== undefined && request instanceof http2.Http2ServerRequest) {
    bindStream(request.stream);
  }
}

// The same for an HTTP/2 server stream (ServerHttp2Stream): its listeners and those of its
// compatibility-API request and response.
function bindStream(stream) {
  if (stream === null || typeof stream !== 'object') return;
  if (http2 === undefined) installHttp2(stream);
  stream[kHolder] = currentLabelHolder();
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

// The holder of a compatibility-API request's or response's stream.
function streamHolder(message) {
  const stream = message.stream;
  return stream === undefined || stream === null ? undefined : stream[kHolder];
}

function requestHolder(request) {
  return request[kHolder];
}

function responseHolder(response) {
  const request = response.req;
  return request === undefined || request === null ? undefined : request[kHolder];
}

// Gives `proto` an own emit that runs the emit it shadows (its own one if it had one, else the
// inherited one, looked up per call so that a later wrapper further up still runs) under the
// holder `holderOf(this)` returns.
function wrapEmit(proto, holderOf) {
  if (Object.hasOwn(proto, kInstalled)) return;
  const own = Object.hasOwn(proto, 'emit') ? proto.emit : undefined;
  const parent = Object.getPrototypeOf(proto);
  proto.emit = function emit(event) {
    const shadowed = own === undefined ? parent.emit : own;
    const holder = holderOf(this);
    // No holder, or no listener for the event in EventEmitter's own table: nothing runs that
    // could carry labels. ('error' always takes the labels: its errorMonitor listeners sit under
    // another key.)
    const events = this._events;
    if (
      holder === undefined ||
      (event !== 'error' && events !== undefined && events !== null && events[event] === undefined)
    ) {
      return shadowed.apply(this, arguments);
    }
    return applyWithLabelHolder(holder, shadowed, this, arguments);
  };
  Object.defineProperty(proto, kInstalled, { value: true });
}

module.exports = { bindRequest, bindStream };
