'use strict';
// `heap-labels/koa` (Koa route labels): the realm's instance's module (./instance-module.js).
module.exports = require('./instance-module').instanceModule('koa');
