#!/usr/bin/env node
'use strict';
// `npx heap-labels report|diff|export|retainers ...`: reads pprof files this project writes, and the
// JSON of handle.retainers() (lib/report/). report, diff and retainers need no native addon
// (reports can be made on any machine with Node.js); export --otlp uses the addon's translation.

const { main } = require('../lib/report/cli');

process.exitCode = main(process.argv.slice(2));
