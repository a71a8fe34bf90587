'use strict';
// `heap-labels/fastify` (Fastify route labels): the realm's instance's module (./instance-module.js).
module.exports = require('./instance-module').instanceModule('fastify');
