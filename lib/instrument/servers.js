'use strict';
// Which servers get the node:http fallback label (lib/instrument/request-start.js) and which are
// served by an instrumented framework, whose route label follows.
//
// A server's kind is decided at its first request and kept (a WeakMap, so servers are not held):
//   OWN        the agent's own endpoint server: its requests are not labeled;
//   FRAMEWORK  a server an instrumented framework serves: requests start with the framework's
//              bucket label, which the framework replaces by the route template once it knows it;
//   PLAIN      any other server: requests get the fallback label (method and normalised path).
//   EXPRESS,   a FRAMEWORK server whose listener is an express app, or what koa's app.callback()
//   KOA        returns: its requests' state is made with the framework's fields
//              (lib/integrations/request-context.js).
// A server is a framework's when the framework marked it (fastify's instance.server), or when
// one of its 'request' listeners is a function the framework marked (an express app, what koa's
// app.callback() returns). A server whose listener wraps the framework's ((req, res) => app(req,
// res)) starts as PLAIN: the first time a framework or an explicit integration labels one of its
// requests, the server becomes FRAMEWORK, or EXPRESS when express's routing tracks the request
// (claim()), so only its first requests carried the fallback label before the route's.
//
// Marks are process-wide (module state of the realm's one heap-labels instance) and only ever
// added; nothing here touches the servers themselves. A request's PLAIN server is kept in a table
// of its own here (fallbacks) until the request is claimed.

const OWN = 'own';
const FRAMEWORK = 'framework';
const PLAIN = 'plain';
const EXPRESS = 'express';
const KOA = 'koa';

const kinds = new WeakMap(); // server -> kind, decided at its first request
const ownServers = new WeakSet();
const frameworkServers = new WeakSet();
const frameworkListeners = new WeakMap(); // listener -> EXPRESS or KOA
// request -> the PLAIN server whose fallback label it got (noteFallback), until claimed.
const fallbacks = new WeakMap();

function kindOf(server) {
  let kind = kinds.get(server);
  if (kind === undefined) {
    kind = classify(server);
    kinds.set(server, kind);
  }
  return kind;
}

function classify(server) {
  if (ownServers.has(server)) return OWN;
  if (frameworkServers.has(server)) return FRAMEWORK;
  if (typeof server.listeners === 'function') {
    for (const listener of server.listeners('request')) {
      // A `once` listener is listed unwrapped; a listener that wraps another names it `.listener`.
      const kind = frameworkListeners.get(listener) ?? frameworkListeners.get(listener.listener);
      if (kind !== undefined) return kind;
    }
  }
  return PLAIN;
}

function markOwnServer(server) {
  ownServers.add(server);
  kinds.delete(server);
}

function markFrameworkServer(server) {
  if (server === null || typeof server !== 'object') return;
  frameworkServers.add(server);
  if (kinds.get(server) === PLAIN) kinds.delete(server);
}

// `listener`, a request listener a framework made (an express app, what koa's app.callback()
// returns), makes its servers that framework's (`kind`: EXPRESS or KOA).
function markFrameworkListener(listener, kind) {
  if (typeof listener === 'function') frameworkListeners.set(listener, kind);
}

// Records that `request` got the fallback label as a request of the PLAIN `server`.
function noteFallback(request, server) {
  fallbacks.set(request, server);
}

// Called whenever a framework starts a request or labels are entered for a request not started
// under a request holder (lib/integrations/route-labels.js; `state` is the request's state): a
// request that got the fallback label is now labeled by a framework or an explicit integration,
// so its server is served by one, and its next requests start with the bucket instead.
function claim(request, state) {
  const server = fallbacks.get(request);
  if (server === undefined) return;
  fallbacks.delete(request);
  // A request that express's routing tracks (lib/integrations/express-templates.js gave it its
  // Mount before starting it) makes the server an express app's.
  if (kinds.get(server) === PLAIN) kinds.set(server, state.mount === undefined ? FRAMEWORK : EXPRESS);
}

module.exports = {
  OWN,
  FRAMEWORK,
  PLAIN,
  EXPRESS,
  KOA,
  kindOf,
  markOwnServer,
  markFrameworkServer,
  markFrameworkListener,
  noteFallback,
  claim,
};
