'use strict';
// The start of every request a node:http, https or http2 server receives, from the channels
// Node.js publishes there (diagnostics_channel, no patching):
//   'http.server.request.start'   node:http and https, right before the server emits 'request',
//                                 in the same synchronous call (so labels entered here are the
//                                 request listener's, and everything it starts inherits them);
//   'http2.server.stream.start'   http2, right before the session schedules its 'stream' event
//                                 (and so the compatibility API's 'request' event).
// Each request starts under its own labels, so that nothing carries over from the previous
// request of a keep-alive connection (without AsyncContextFrame, enterWith() writes to the
// connection's async resource):
//   a framework's server (servers.js: FRAMEWORK, EXPRESS, KOA): a request holder bound to the
//     bucket of the request's method (`(unmatched) GET`), which the framework's instrumentation
//     binds to the route template once routing knows it (late binding:
//     lib/integrations/route-labels.js, docs/architecture.md);
//   a plain server: the fallback label, method and normalised path (fallback-route.js), with the
//     maxRoutes guard of its own labeler;
//   the agent's own endpoint server: nothing.
// The request's own events run under its labels (lib/integrations/request-context.js): the
// route labelers bind a node:http request; an HTTP/2 stream is bound here.

const dc = require('node:diagnostics_channel');
const { fallbackRoute } = require('./fallback-route');
const servers = require('./servers');
const { bindStream, ensureExpressState, ensureKoaState } = require('../integrations/request-context');

const HTTP_START = 'http.server.request.start';
const HTTP2_START = 'http2.server.stream.start';

// The state of a request of a server of that kind: its framework's, undefined where that has no
// state of its own (startRequest then makes a RequestState).
function frameworkState(request, kind) {
  if (kind === servers.EXPRESS) return ensureExpressState(request);
  if (kind === servers.KOA) return ensureKoaState(request);
  return undefined;
}

// Subscribes; returns the function that unsubscribes. `labelers`: { framework, fallback } (route
// labelers), `failed(error)`: reports a bug here once (the request then goes unlabeled).
function watchRequestStarts({ labelers, failed }) {
  // Enters the labels `request` starts with; returns whether it did.
  function start(request, server, method, target) {
    const kind = servers.kindOf(server);
    if (kind === servers.OWN) return false;
    if (kind !== servers.PLAIN) {
      // Late binding: a request holder bound to the method's bucket, which routing binds to the
      // route, so what the app's middleware allocates before routing counts to the route. An
      // express or koa app's request gets its framework's state from the start.
      labelers.framework.startRequest(request, undefined, frameworkState(request, kind));
      return true;
    }
    labelers.fallback.enterRoute(request, fallbackRoute(method, target), undefined);
    servers.noteFallback(request, server);
    return true;
  }

  // A subscriber that throws would reach the app as an uncaught exception (diagnostics_channel
  // rethrows on the next tick): every body is guarded.
  function onHttpStart(message) {
    try {
      const { request, server } = message;
      start(request, server, request.method, request.url);
    } catch (error) {
      failed(error);
    }
  }

  function onHttp2Start(message) {
    try {
      const { stream, headers } = message;
      const session = stream.session;
      const server = session === undefined ? undefined : session.server;
      if (server === undefined || server === null) return;
      if (start(stream, server, headers[':method'], headers[':path'])) bindStream(stream);
    } catch (error) {
      failed(error);
    }
  }

  dc.subscribe(HTTP_START, onHttpStart);
  dc.subscribe(HTTP2_START, onHttp2Start);
  return function unwatch() {
    dc.unsubscribe(HTTP_START, onHttpStart);
    dc.unsubscribe(HTTP2_START, onHttp2Start);
  };
}

module.exports = { watchRequestStarts };
