'use strict';
// heap-labels/fastify: a fastify plugin that labels every request by its route template.
//
//   const { fastifyRouteLabels } = require('heap-labels/fastify');
//   await fastify.register(fastifyRouteLabels, { labels: (request) => ({ tenant: ... }) });
//
// Fastify routes before its first hook runs, so the template is known in onRequest
// (request.routeOptions.url, with the prefixes of the plugins the route is registered in, as
// fastify's route table lists it:
// '/orgs/:org/members/:member'). One onRequest hook enters the route's labels with
// setHeapProfileLabels (enterWith semantics) and calls done() synchronously: body parsing, the
// other hooks, the handler, serialization, the error handler and everything they await descend
// from that call and carry the route. Requests no route matches run fastify's 404 handler, where
// routeOptions.url is undefined: they get the bucket value (`unmatched`). Each request enters its
// labels again in its own onRequest, so nothing leaks into the next request of a keep-alive
// connection. The plugin skips fastify's encapsulation (as fastify-plugin does), so the hook
// applies to every route of the instance it is registered on, including the ones of later-
// registered child plugins. Bad extra labels fail the request through fastify's error handling.
//
// The automatic instrumentation (lib/instrument/fastify.js, no code in the app) registers the
// same hook through fastifyAutomaticPlugin(automatic) on every fastify instance, from the
// 'fastify.initialization' channel fastify publishes when an instance is created. Registering
// fastifyRouteLabels on an instance that has it gives the instance that call's options, with no
// second hook; registered in an encapsulated child context, it adds the child's own hook, which
// runs after the instance's and so wins for the child's routes.

const { createRouteLabeler } = require('./route-labels');

const WHERE = 'heap-labels/fastify';

const kState = Symbol('heap-labels.fastify.state'); // instance (own property) -> InstanceLabels

// How an instance's requests are labeled: its labeler, and whether fastifyRouteLabels configured
// it (else the automatic instrumentation did, and `automatic` is its switch).
class InstanceLabels {
  constructor(labeler, automatic) {
    this.labeler = labeler;
    this.automatic = automatic; // undefined once fastifyRouteLabels configured the instance
    // The symbol of the instance's fastify copy for a request's route context (routeContextKey):
    // null until its first request, undefined if that copy has none.
    this.contextKey = null;
  }
}

function fastifyRouteLabels(fastify, options, done) {
  let labeler;
  try {
    labeler = createRouteLabeler(options, WHERE, true);
  } catch (error) {
    done(error);
    return;
  }
  if (Object.hasOwn(fastify, kState)) {
    const state = fastify[kState];
    state.labeler = labeler;
    state.automatic = undefined;
  } else {
    addLabelHook(fastify, new InstanceLabels(labeler, undefined));
  }
  done();
}

// The URL of the route fastify matched, with its plugins' prefixes: routeOptions.url (fastify
// >= 4.10), else routerPath (older 4.x; deprecated from 4.26, gone in 5). Both are the route
// context's config.url, the route as fastify's route table lists it. Fastify 4 registers the root
// route of a prefixed plugin twice, as '/api' and '/api/' (prefixTrailingSlash 'both'), and each
// has its own URL; fastify 5 names both '/api'.
function routeUrl(request) {
  const options = request.routeOptions;
  return options !== undefined ? options.url : request.routerPath;
}

// The symbol fastify 4 and 5 keep a request's route context under (kRouteContext, an own property
// of every request, `Symbol('fastify.context')`, not exported): found by its description on the
// first request of an instance (each fastify copy in a process has its own). routeOptions.url and
// is404 both read its config.url; reading it here skips routeOptions' getter, which builds an
// object of a dozen fields and asks the server for its constraint strategies on every call.
function routeContextKey(request) {
  for (const symbol of Object.getOwnPropertySymbols(request)) {
    if (symbol.description === 'fastify.context') return symbol;
  }
  return undefined;
}

// The template of the route fastify matched for `request`, undefined for its 404 handler: the route
// context's config.url, or where a fastify copy has no such context, routeOptions/routerPath.
function templateOf(request, state) {
  let key = state.contextKey;
  if (key === null) key = state.contextKey = routeContextKey(request);
  if (key !== undefined) {
    const config = request[key]?.config;
    if (config !== undefined && config !== null) return config.url;
  }
  return request.is404 ? undefined : routeUrl(request);
}

// What fastify-plugin would set: no encapsulation (the hook covers the whole instance), a name.
function skipOverride(plugin, name) {
  plugin[Symbol.for('skip-override')] = true;
  plugin[Symbol.for('fastify.display-name')] = name;
  plugin[Symbol.for('plugin-meta')] = { name };
  return plugin;
}
skipOverride(fastifyRouteLabels, 'heap-labels');

// The plugin the automatic instrumentation registers on every new instance (lib/instrument/
// fastify.js): the hook with `automatic.labeler`, labeling while `automatic.on`. Guarded: a bug
// leaves requests unlabeled (reported once through `automatic.failed`), never fails the app.
function fastifyAutomaticPlugin(automatic) {
  return skipOverride(function heapLabelsAutomatic(fastify, options, done) {
    try {
      if (!Object.hasOwn(fastify, kState)) addLabelHook(fastify, new InstanceLabels(automatic.labeler, automatic));
    } catch (error) {
      automatic.failed(error);
    }
    done();
  }, 'heap-labels-automatic');
}

function addLabelHook(fastify, state) {
  fastify[kState] = state;
  fastify.addHook('onRequest', function heapLabelsOnRequest(request, reply, next) {
    const labeler = state.labeler;
    let failure;
    try {
      const automatic = state.automatic;
      if (automatic === undefined || automatic.on) {
        let extras;
        try {
          extras = labeler.extrasOf(request);
        } catch (error) {
          failure = error; // the user's labels(): fails the request, with the bare bucket
        }
        const template = failure !== undefined ? undefined : templateOf(request, state);
        labeler.enterRoute(request.raw, template, extras);
      }
    } catch (error) {
      // A bug here: the request runs unlabeled rather than failing.
      labeler.warnOnce('failure', `a request could not be labeled: ${error && error.message}`);
    }
    next(failure);
  });
}

module.exports = { fastifyRouteLabels, fastifyAutomaticPlugin };
