'use strict';
// The module behind a subpath entry, taken from the realm's instance (lib/instance.js): this copy's
// when it is the first or an incompatible one, else the first copy's. So every entry, like the main
// one, uses the realm's one AsyncLocalStorage, set of labels and addon.

const { ENTRY } = require('../instance');

function instanceModule(name) {
  return require('../index')[ENTRY](name);
}

module.exports = { instanceModule };
