'use strict';
// `heap-labels/fastify` (Fastify route labels): fastifyRouteLabels of the realm's instance's module (./instance-module.js).
// The module's other exports serve the automatic instrumentation (lib/instrument/) and are not
// part of the entry.
const { fastifyRouteLabels } = require('./instance-module').instanceModule('fastify');

module.exports = { fastifyRouteLabels };
