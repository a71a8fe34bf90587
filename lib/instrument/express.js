'use strict';
// express 4 and 5 for the automatic route labels: recognised by the shape of the module's exports
// (the express() factory with its application, request and Router), instrumented by
// lib/integrations/express.js (instrumentExpress), which the explicit heap-labels/express shares.
// Its apps' functions are marked as framework listeners (servers.js), so that the servers they
// serve (app.listen(), http.createServer(app), NestJS's adapter) start requests with the bucket.

// The integration loads when an express module does (not with the agent: start-up cost).
function recognise(exports) {
  const application = exports.application;
  return (
    application !== null &&
    typeof application === 'object' &&
    typeof application.init === 'function' &&
    typeof application.handle === 'function' &&
    typeof exports.Router === 'function' &&
    exports.request !== null &&
    typeof exports.request === 'object'
  );
}

module.exports = {
  name: 'express',
  majors: [4, 5],
  recognise,
  instrument: (express, automatic) => require('../integrations/express').instrumentExpress(express, automatic),
};
