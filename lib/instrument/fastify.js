'use strict';
// fastify 4 and 5 for the automatic route labels. Fastify publishes every new instance on the
// 'fastify.initialization' channel (diagnostics_channel, since fastify 3.21), where the plugin of
// lib/integrations/fastify.js (fastifyAutomaticPlugin, the explicit heap-labels/fastify's hook)
// is registered on it, and its server is marked as a framework's (servers.js). The module itself
// needs no patch: recognising it as it loads (the exports' shape) only serves the stderr line and
// the version check, which the channel repeats per instance from instance.version (so a fastify
// that loaded unseen, bundled say, is covered too).

const dc = require('node:diagnostics_channel');
const { markFrameworkServer } = require('./servers');

const CHANNEL = 'fastify.initialization';

// fastify() with itself as its `fastify` and `default` exports (3.x to 5.x alike).
function recognise(exports) {
  return exports.fastify === exports && exports.default === exports;
}

// Subscribes; returns the function that unsubscribes. `admit(version)`: whether this fastify
// version is to be instrumented (it says so when not); `done(version)`: an instance was.
function watch(automatic, { admit, done }) {
  let plugin; // made when the first instance comes (the integration loads then: start-up cost)
  function onInstance(message) {
    try {
      const instance = message.fastify;
      const version = instance.version;
      if (!admit(version)) return;
      plugin ??= require('../integrations/fastify').fastifyAutomaticPlugin(automatic);
      instance.register(plugin);
      markFrameworkServer(instance.server);
      done(version);
    } catch (error) {
      automatic.failed(error);
    }
  }
  dc.subscribe(CHANNEL, onInstance);
  return () => dc.unsubscribe(CHANNEL, onInstance);
}

module.exports = {
  name: 'fastify',
  majors: [4, 5],
  recognise,
  instrument: () => {}, // per instance, from the channel (watch)
  watch,
};
