'use strict';
// `heap-labels/register` (the preload, `node -r heap-labels/register`): runs the realm's instance's
// preload (lib/register.js), so that a second copy of the package starts no agent of its own.
// Workers (which inherit -r) start nothing, so they do not load the library either. Loading it can
// fail (no addon for this runtime): that is reported on stderr, never thrown, and the app runs
// unprofiled.

if (require('../process-model').isMainThread()) {
  try {
    require('./instance-module').instanceModule('register');
  } catch (err) {
    require('../preload-report').reportNotProfiling(err);
  }
}
