'use strict';
// `heap-labels/http` (node:http route labels): the realm's instance's module (./instance-module.js).
module.exports = require('./instance-module').instanceModule('http');
