'use strict';
// `heap-labels/opentelemetry` (the OpenTelemetry metrics adapter): the realm's instance's module (./instance-module.js).
module.exports = require('./instance-module').instanceModule('opentelemetry');
