'use strict';
// One heap-labels instance per realm, whichever copy of the package is loaded and however often.
//
// The first instance to load publishes itself on the global object under a registry symbol,
// with the instance protocol it speaks. A later load (a module registry reset, as Jest and hot
// reload do, or a second installed copy at another path) finds it there: a copy that speaks the
// same protocol exports the first instance's API, so the realm has one AsyncLocalStorage, one set
// of interned labels and one profiler session owner. A copy that speaks another protocol cannot
// share them: it runs on its own with per-sample labels off, and says why (capabilities().reasons
// and a process warning) instead of silently missing labels.
//
// Realms (vm contexts) sharing one addon instance share its labels key too (see the addon's
// registerLabelsKey), so labels are one per isolate there as well.

// Bump when the published API (its entries included) or the meaning of labels changes
// incompatibly. 2: the API carries the subpath entries' modules ([ENTRY]).
const PROTOCOL = 2;
const { KEY, published } = require('./instance-key');
// The published API's function from a subpath entry's name ('express', 'endpoint', ...) to that
// entry's module in the copy that published it (lib/entries/).
const ENTRY = Symbol.for('heap-labels.entry');

const { version } = require('../package.json');

const here = require('node:path').join(__dirname, '..');

const first = published();
// The first instance's API when this load can use it; undefined when this load is the first.
const shared = first !== undefined && first.protocol === PROTOCOL ? first.api : undefined;
// Why this load cannot share the first instance (undefined when it can, or is the first).
const conflict =
  first !== undefined && first.protocol !== PROTOCOL
    ? `heap-labels ${first.version} at ${first.path} (instance protocol ${first.protocol}) was loaded ` +
      `first and owns the labels of this realm; this copy, heap-labels ${version} at ${here} ` +
      `(instance protocol ${PROTOCOL}), is incompatible with it, so labels set through this copy are ` +
      'never captured and its sessions record none; load a single version of heap-labels ' +
      '(`npm ls heap-labels` shows the copies)'
    : undefined;

// Makes `api` the realm's instance (only the first load does this).
function publish(api) {
  if (first !== undefined) return;
  Object.defineProperty(globalThis, KEY, {
    value: Object.freeze({ protocol: PROTOCOL, version, path: here, api }),
    enumerable: false,
    writable: false,
    configurable: false,
  });
}

if (conflict !== undefined) {
  process.emitWarning(conflict, { code: 'HEAP_LABELS_INCOMPATIBLE_COPY' });
}

module.exports = { PROTOCOL, ENTRY, shared, conflict, publish };
