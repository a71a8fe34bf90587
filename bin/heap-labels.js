#!/usr/bin/env node
'use strict';
// `npx heap-labels report|diff|export ...`: reads pprof files this project writes (lib/report/).
// report and diff need no native addon (reports can be made on any machine with Node.js);
// export --otlp uses the addon's translation.

const { main } = require('../lib/report/cli');

process.exitCode = main(process.argv.slice(2));
