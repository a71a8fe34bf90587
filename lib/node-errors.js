'use strict';
// Errors shaped as Node.js core makes them (lib/internal/errors.js): the class Node.js uses for the
// code, `code` as an own enumerable property, and Node.js' wording. The node:v8 API
// (lib/v8.js) throws these, so that code written for node:v8 that checks `err.code` or the class
// behaves the same on every runtime. Node.js' own helpers are internal; this is the small part of
// them that the API needs.

const { inspect, types } = require('node:util');

function withCode(error, code) {
  Object.defineProperty(error, 'code', { value: code, enumerable: true, writable: true, configurable: true });
  return error;
}

// How Node.js describes a received value ("Received type string ('x')", "Received null", ...).
function received(value) {
  if (value === null || value === undefined) return `Received ${value}`;
  // Describing a Proxy would run its traps (getPrototypeOf, get): name it without touching it.
  if (types.isProxy(value)) return `Received a Proxy (${typeof value})`;
  if (typeof value === 'function') return `Received function ${value.name || '<anonymous>'}`;
  if (typeof value === 'object') {
    const name = Object.getPrototypeOf(value)?.constructor?.name;
    return name ? `Received an instance of ${name}` : `Received ${inspect(value, { depth: -1 })}`;
  }
  let shown = inspect(value, { colors: false });
  if (shown.length > 28) shown = `${shown.slice(0, 25)}...`;
  return `Received type ${typeof value} (${shown})`;
}

// A name with a dot is a property ("options.groupBy"), otherwise an argument.
const what = (name) => (name.includes('.') ? 'property' : 'argument');

function invalidArgType(name, expected, value) {
  return withCode(
    new TypeError(`The "${name}" ${what(name)} must be ${expected}. ${received(value)}`),
    'ERR_INVALID_ARG_TYPE',
  );
}

function invalidArgValue(name, value, reason = 'is invalid') {
  let shown = inspect(value, { colors: false, depth: 1 });
  if (shown.length > 128) shown = `${shown.slice(0, 128)}...`;
  return withCode(
    new TypeError(`The ${what(name)} '${name}' ${reason}. Received ${shown}`),
    'ERR_INVALID_ARG_VALUE',
  );
}

function outOfRange(name, range, value) {
  return withCode(
    new RangeError(`The value of "${name}" is out of range. It must be ${range}. Received ${inspect(value)}`),
    'ERR_OUT_OF_RANGE',
  );
}

// A code on an error of another origin (heap-labels' own validation, the addon), keeping its
// message, which names the offending label and limit.
function coded(error, code) {
  return withCode(error, code);
}

function notSupportedInSnapshot(feature) {
  return withCode(new Error(`${feature} is not supported in startup snapshot`), 'ERR_NOT_SUPPORTED_IN_SNAPSHOT');
}

module.exports = { invalidArgType, invalidArgValue, outOfRange, coded, notSupportedInSnapshot };
