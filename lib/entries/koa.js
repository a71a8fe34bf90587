'use strict';
// `heap-labels/koa` (Koa route labels): koaRouteLabels of the realm's instance's module (./instance-module.js).
// The module's other exports serve the automatic instrumentation (lib/instrument/) and are not
// part of the entry.
const { koaRouteLabels } = require('./instance-module').instanceModule('koa');

module.exports = { koaRouteLabels };
