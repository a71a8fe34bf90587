'use strict';
// koa 2 and 3 (routes from @koa/router, or any router that sets ctx._matchedRoute) for the
// automatic route labels: recognised by the shape of the Application class koa exports (koa 3's
// ESM entry re-exports the same CommonJS class), instrumented by lib/integrations/koa.js
// (instrumentKoa), which the explicit heap-labels/koa shares. The request handlers its
// callback() returns are marked as framework listeners (servers.js).

// The integration loads when a koa module does (not with the agent: start-up cost).
function recognise(exports) {
  const proto = exports.prototype;
  return (
    proto !== null &&
    typeof proto === 'object' &&
    typeof proto.callback === 'function' &&
    typeof proto.handleRequest === 'function' &&
    typeof proto.createContext === 'function'
  );
}

module.exports = {
  name: 'koa',
  majors: [2, 3],
  recognise,
  instrument: (Application, automatic) => require('../integrations/koa').instrumentKoa(Application, automatic),
};
