'use strict';
// `heap-labels/v8` (node:v8's heap-profile-labels API): the realm's instance's module (./instance-module.js).
module.exports = require('./instance-module').instanceModule('v8');
