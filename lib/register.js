'use strict';
// Preload: `node -r heap-labels/register app.js` or `node --import heap-labels/register app.mjs`.
// Starts the production agent from the HEAP_LABELS_* environment variables (lib/config.js) in the
// main thread. It never takes the app down: a bad value, a missing addon or a busy profiler is
// reported once on stderr and the app runs unprofiled.

const { isMainThread } = require('node:worker_threads');
const { report, reportNotProfiling } = require('./preload-report');

const STARTED = Symbol.for('heap-labels.register');

function register() {
  // Signals and the HTTP port belong to the process: workers (which inherit -r) start nothing.
  if (!isMainThread || globalThis[STARTED]) return;
  globalThis[STARTED] = true;
  let options;
  let lib;
  const notes = [];
  try {
    const { fromEnv } = require('./config');
    options = fromEnv(process.env, notes);
    lib = { ...require('./agent'), ...require('./capabilities') };
  } catch (err) {
    reportNotProfiling(err);
    return;
  }
  for (const note of notes) report(note);
  let caps;
  try {
    caps = lib.capabilities();
  } catch (err) {
    reportNotProfiling(err);
    return;
  }
  lib.startValidated(options).then(
    (agent) => {
      if (!caps.sampleLabels) {
        report(`profiles carry no labels on this runtime (${caps.reasons[0] ?? 'sampleLabels unavailable'})`);
      }
      if (agent.address) report(`serving heap profiles at ${agent.address.url}`);
    },
    (err) => reportNotProfiling(err),
  );
}

register();
