'use strict';
// `heap-labels/express` (Express route labels): expressRouteLabels of the realm's instance's module (./instance-module.js).
// The module's other exports serve the automatic instrumentation (lib/instrument/) and are not
// part of the entry.
const { expressRouteLabels } = require('./instance-module').instanceModule('express');

module.exports = { expressRouteLabels };
