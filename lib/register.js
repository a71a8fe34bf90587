'use strict';
// Preload: `node -r heap-labels/register app.js` or `node --import heap-labels/register app.mjs`.
// Starts the production agent from the HEAP_LABELS_* environment variables (lib/config.js) in the
// main thread of the process that serves the app, not in a launcher (lib/process-model.js). It
// never takes the app down: a bad value, a missing addon or a busy profiler is
// reported once on stderr and the app runs unprofiled.

const { report, reportNotProfiling, during } = require('./preload-report');
const processModel = require('./process-model');

const STARTED = Symbol.for('heap-labels.register');

function register() {
  // Signals and the HTTP port belong to the process: workers (which inherit -r) start nothing.
  if (!processModel.isMainThread() || globalThis[STARTED]) return;
  globalThis[STARTED] = true;
  // npm, npx, yarn, pnpm, corepack and pm2 run the app in another process, which serves it and
  // is profiled: the launcher installs nothing (lib/process-model.js).
  const launcher = processModel.launcherOf();
  if (launcher !== undefined) {
    report(`${launcher} (pid ${process.pid}) is a launcher: not profiled, the process it starts is`);
    return;
  }
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
  const codeCacheProblem = require('./cached-require').problem();
  if (codeCacheProblem !== undefined) report(codeCacheProblem);
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
      if (agent.address) {
        const worker = processModel.workerOf();
        // With option retainers, its route too (an operator turned on what pauses the app).
        const retainers = agent.options.retainers ? `; retainers per label at ${new URL(agent.address.url).origin}/debug/heap-labels/retainers` : '';
        report(`${worker === undefined ? '' : `${worker} (pid ${process.pid}): `}serving heap profiles at ${agent.address.url}${retainers}`);
      }
    },
    (err) => reportNotProfiling(err),
  );
}

during(register);
