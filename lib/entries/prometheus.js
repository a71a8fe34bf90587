'use strict';
// `heap-labels/prometheus` (the prom-client adapter): the realm's instance's module (./instance-module.js).
module.exports = require('./instance-module').instanceModule('prometheus');
