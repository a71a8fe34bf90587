'use strict';
// `heap-labels/endpoint` (the HTTP handler of heap profiles): the realm's instance's module (./instance-module.js).
module.exports = require('./instance-module').instanceModule('endpoint');
