// @ts-check
'use strict';
// The async context that carries labels: one AsyncLocalStorage per isolate whose store is a label
// holder. This module is loaded once per realm (lib/instance.js); the addon keeps the first
// storage registered with it and hands it to every later instance, so realms sharing the addon
// share the labels.

const { AsyncLocalStorage } = require('node:async_hooks');
const { native } = require('./native');
const { labelHolder, labelsOfHolder } = require('./labels');
const instance = require('./instance');

// The storage instance is the key the patched runtime looks up in the AsyncContextFrame map. An
// incompatible copy (instance.conflict) keeps its own storage unregistered: its labels are never
// captured, as its capabilities() say.
const storage =
  instance.conflict === undefined ? native.registerLabelsKey(new AsyncLocalStorage()) : new AsyncLocalStorage();

function withHeapProfileLabels(labels, fn) {
  if (typeof fn !== 'function') {
    throw new TypeError(`heap-labels: withHeapProfileLabels: fn must be a function, got ${typeof fn}`);
  }
  return storage.run(labelHolder(labels, 'withHeapProfileLabels'), fn);
}

function setHeapProfileLabels(labels) {
  if (labels === null) {
    storage.enterWith(undefined);
    return;
  }
  storage.enterWith(labelHolder(labels, 'setHeapProfileLabels'));
}

function getHeapProfileLabels() {
  const holder = storage.getStore();
  return holder === undefined ? undefined : labelsOfHolder(holder);
}

// For lib/integrations/request-context.js, which runs a request's own event listeners under the
// labels its integration entered last: the label holder current in this async context (undefined:
// none), and `fn.apply(thisArg, args)` with `holder` current (only this storage's entry of the
// context changes; other AsyncLocalStorage users see what they would have seen).
function currentLabelHolder() {
  return storage.getStore();
}

// (The caller has checked that `holder` is not the current one.)
function runWithLabelHolder(holder, fn, thisArg, args) {
  return storage.run(holder, Reflect.apply, fn, thisArg, args);
}

// For lib/integrations/route-labels.js, which keeps the holders of its route labels: enters
// `holder`, the label holder of an interned label object, as setHeapProfileLabels() would.
function enterLabelHolder(holder) {
  storage.enterWith(holder);
}

// Late binding (docs/architecture.md, "Late binding: request cells"). A request runs under a
// request holder: a label holder whose labels are decided later, when routing knows the route.
// What the request allocates before (middleware, body parsing) is read under the labels it is
// bound to at read time. `bucket` and `labels` are interned label objects with labels of their
// own, `bucketHolder` and `labelsHolder` their label holders. The request holder keeps its labels
// object (what getHeapProfileLabels() reads) in a field of its own, set by the addon as it binds:
// no property, so no property array per request.
function enterRequestLabels(bucket, bucketHolder) {
  const holder = native.createRequestHolder(bucketHolder, bucket);
  storage.enterWith(holder);
  return holder;
}

// Binds the request holder `holder` to `labels`, which are not its labels now (the caller knows
// its request's): the request's samples and external bytes so far and from now on are read under
// them, and getHeapProfileLabels() under the holder returns them. A cell that has used its
// bindings keeps its labels (the addon refuses).
function bindRequestLabels(holder, labels, labelsHolder) {
  native.bindRequestHolder(holder, labelsHolder, labels);
}

let acfEnabled;

// Whether AsyncLocalStorage is backed by AsyncContextFrame in this process. Probed by behaviour:
// with ACF, `run()` stores a frame (a Map keyed by AsyncLocalStorage instances) in V8's
// continuation-preserved embedder data, which the addon reads through the V8 API; with the
// async_hooks implementation that slot stays empty. This is exactly what the patched runtime's
// per-sample label lookup needs, whatever flags or defaults produced it.
function asyncContextFrameEnabled() {
  if (acfEnabled === undefined) {
    const probe = new AsyncLocalStorage();
    const marker = {};
    try {
      acfEnabled = probe.run(marker, () => native.frameValue(probe) === marker);
    } finally {
      probe.disable();
    }
  }
  return acfEnabled;
}

module.exports = {
  withHeapProfileLabels,
  setHeapProfileLabels,
  getHeapProfileLabels,
  asyncContextFrameEnabled,
  currentLabelHolder,
  runWithLabelHolder,
  enterLabelHolder,
  enterRequestLabels,
  bindRequestLabels,
};
