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

const { createRouteLabeler } = require('./route-labels');

const WHERE = 'heap-labels/fastify';

function fastifyRouteLabels(fastify, options, done) {
  let labeler;
  try {
    labeler = createRouteLabeler(options, WHERE);
  } catch (error) {
    done(error);
    return;
  }
  fastify.addHook('onRequest', function heapLabelsOnRequest(request, reply, next) {
    let extras;
    try {
      extras = labeler.extrasOf(request);
    } catch (error) {
      labeler.enterRoute(request.raw, undefined, undefined);
      next(error);
      return;
    }
    // is404 is a cheap check; routeOptions builds an object, so it is read only for routes.
    labeler.enterRoute(request.raw, request.is404 ? undefined : routeUrl(request), extras);
    next();
  });
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

// What fastify-plugin would set: no encapsulation (the hook covers the whole instance), a name.
fastifyRouteLabels[Symbol.for('skip-override')] = true;
fastifyRouteLabels[Symbol.for('fastify.display-name')] = 'heap-labels';
fastifyRouteLabels[Symbol.for('plugin-meta')] = { name: 'heap-labels' };

module.exports = { fastifyRouteLabels };
