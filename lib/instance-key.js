'use strict';
// Where a realm's heap-labels instance is published (lib/instance.js), and how it is read: one
// owner for the key, so that the preload's loader (lib/cached-require.js), which must tell whether
// an instance exists before it loads lib/instance.js, reads it as the instance module does. Requires
// nothing: the loader loads it outside its code cache.

const KEY = Symbol.for('heap-labels.instance');

// The published instance, read without invoking a getter somebody may have put there; undefined
// when none is (or when what is there is not an instance).
function published() {
  const descriptor = Object.getOwnPropertyDescriptor(globalThis, KEY);
  const value = descriptor && descriptor.value;
  return value !== null && typeof value === 'object' && typeof value.protocol === 'number' ? value : undefined;
}

module.exports = { KEY, published };
