'use strict';
// Whether this is the process's main thread, where signals and the endpoint port belong (workers
// inherit `-r` and start nothing). Asked without loading node:worker_threads, which with the
// streams it brings costs about 10M instructions, a tenth of a bare `node -e 0`: a worker's
// bootstrap has always loaded it before any preload runs (Node.js 22, 24 and 26;
// tests/process-model.test.js starts a worker under the preload), so a process that has not loaded
// it is on its main thread, and one that has asks it at no cost. A file of its own: it is the one
// thing the preload asks before it loads anything else (lib/entries/register.js).
function isMainThread() {
  if (!process.moduleLoadList.includes('NativeModule worker_threads')) return true;
  return require('node:worker_threads').isMainThread;
}

module.exports = { isMainThread };
