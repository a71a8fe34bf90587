'use strict';
// `heap-labels/register` (the preload, `node -r heap-labels/register`): runs the realm's instance's
// preload (lib/register.js), so that a second copy of the package starts no agent of its own.
// Workers (which inherit -r) start nothing, so they do not load the library either. Loading it can
// fail (no addon for this runtime): that is reported on stderr, never thrown, and the app runs
// unprofiled. The library's modules load through the preload's code cache
// (lib/cached-require.js), which spares the app's start-up their parsing and compiling.

if (require('../main-thread').isMainThread()) {
  try {
    require('../cached-require').requireLib('entries/instance-module.js', module, require).instanceModule('register');
  } catch (err) {
    require('../preload-report').reportNotProfiling(err);
  }
}
