#!/usr/bin/env node
'use strict';
// `npx heap-labels report|diff ...`: reads pprof files this project writes (lib/report/).
// Needs no native addon: reports can be made on any machine with Node.js.

const { main } = require('../lib/report/cli');

process.exitCode = main(process.argv.slice(2));
