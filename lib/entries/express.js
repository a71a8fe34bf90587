'use strict';
// `heap-labels/express` (Express route labels): the realm's instance's module (./instance-module.js).
module.exports = require('./instance-module').instanceModule('express');
