// @ts-check
'use strict';
// heap-labels: label-aware heap profiling for Node.js.
//
//   withHeapProfileLabels / setHeapProfileLabels / getHeapProfileLabels   labels of async contexts
//   startHeapProfile(options) -> handle { getAllocationProfile(), stop(), [Symbol.dispose]() }
//   capabilities()                                                        what this runtime can do
//   stats()                                                               label-set bookkeeping
//
// A realm has one instance, whichever copy loads it (lib/instance.js): a compatible copy loaded
// later exports the first one's API.

//   startAgent(options) / currentAgent()                                  production agent (dumps,
//                                                                         HTTP, near-heap-limit)
//   labelCounters()                                                       per-label counters
//   diffProfiles(base, current, { key, top })                             growth per label/site

const instance = require('./instance');

// The modules behind the package's subpath entries (package.json "exports", lib/entries/): each
// entry takes its module from the realm's instance, so that a second copy's heap-labels/express
// labels through the first copy's AsyncLocalStorage and the first copy's addon. heap-labels/report
// is not one of them: it reads profiles and holds no state of the realm.
// The integrations' modules also export what the automatic route labels (lib/instrument/) share
// with them: their entries carry the public functions only (one object each, whichever copy asks).
const ENTRIES = Object.freeze({
  express: once(() => ({ expressRouteLabels: require('./integrations/express').expressRouteLabels })),
  fastify: once(() => ({ fastifyRouteLabels: require('./integrations/fastify').fastifyRouteLabels })),
  koa: once(() => ({ koaRouteLabels: require('./integrations/koa').koaRouteLabels })),
  http: () => require('./integrations/http'),
  endpoint: () => require('./endpoint'),
  prometheus: () => require('./prometheus'),
  opentelemetry: () => require('./opentelemetry'),
  v8: () => require('./v8'),
  register: () => require('./register'),
});

function once(make) {
  let made;
  return () => (made ??= make());
}

module.exports = instance.shared ?? create();

function create() {
  const {
    withHeapProfileLabels,
    setHeapProfileLabels,
    getHeapProfileLabels,
  } = require('./context');
  const { capabilities } = require('./capabilities');
  const { startHeapProfile } = require('./profile');
  const { MAX_LABELS, MAX_KEY_BYTES, MAX_VALUE_BYTES } = require('./labels');
  const { native, addonPath } = require('./native');
  const { currentAgent } = require('./current-agent');
  // The agent's modules (node:http with them) load when an agent starts, not with the library.
  function startAgent(options) {
    return require('./agent').startAgent(options);
  }
  const { counters: labelCounters } = require('./counters');
  // The report's modules (and node:zlib with them) load on the first diff, not with the library.
  function diffProfiles(base, current, options) {
    return require('./report/diff').diffProfiles(base, current, options);
  }

  // Bookkeeping of this isolate, for watching label cardinality: label sets still referenced (by a
  // label holder, a live sample or live external bytes), holders alive and, of those, the ones on
  // the overflow set, whether a session runs.
  function stats() {
    const s = native.stats();
    return {
      labelSets: s.labelSets,
      liveLabelHolders: s.liveHolders,
      overflowLabelHolders: s.overflowLabelHolders,
      profiling: s.sampling,
      addon: addonPath,
    };
  }

  const api = {
    withHeapProfileLabels,
    setHeapProfileLabels,
    getHeapProfileLabels,
    capabilities,
    startHeapProfile,
    stats,
    startAgent,
    currentAgent,
    labelCounters,
    diffProfiles,
    limits: Object.freeze({
      maxLabels: MAX_LABELS,
      maxKeyBytes: MAX_KEY_BYTES,
      maxValueBytes: MAX_VALUE_BYTES,
    }),
  };
  Object.defineProperty(api, instance.ENTRY, {
    value: (name) => {
      if (!Object.hasOwn(ENTRIES, name)) throw new Error(`heap-labels: no entry ${JSON.stringify(name)}`);
      return ENTRIES[name]();
    },
  });
  instance.publish(api);
  return api;
}
