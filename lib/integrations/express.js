'use strict';
// heap-labels/express: labels every request of an express 4 or 5 app by its route template.
//
//   const { expressRouteLabels } = require('heap-labels/express');
//   const app = express();
//   expressRouteLabels(app, { labels: (req) => ({ tenant: req.get('x-tenant') ?? 'none' }) });
//   // ... then app.use(...), routers, sub-apps, routes, as usual
//
// Express knows the route only after routing, and routing runs middleware in between, so the
// labels are entered in two steps, each with setHeapProfileLabels (AsyncLocalStorage.enterWith):
//
// 1. At request start, a middleware placed first in the app's router (after express 4's own
//    query/init layers, wherever the call is made) enters the bucket value (`unmatched`) with the
//    request's extra labels. Every request thus starts from its own labels: a route's label cannot
//    leak into the next request of a keep-alive connection (on Node.js 22 without
//    AsyncContextFrame enterWith writes to the connection's async resource, which would otherwise
//    carry it), requests no route matches (404, the app's catch-all middleware, finalhandler) keep
//    the bucket, and so does work done before routing (middleware ahead of the route). Bad extra
//    labels fail the request with next(error).
// 2. When a route matches, the router assigns `req.route = route` synchronously right before it
//    runs the route's param callbacks and handlers. The request prototype shared by the apps of
//    this express copy gets a `route` accessor whose setter enters the route's labels there, so the
//    handlers, everything they await or schedule (timers, immediates, I/O callbacks), the response
//    and the error handlers after a failing route carry the final route. A route that calls
//    next() / next('route') hands over to the next matching route, which enters its own labels.
//
// The template is the route's path joined to the mount paths of the routers and sub-apps it is
// mounted under ('/orgs/:org' + '/members/:member'); a route with several paths is named by the one
// that matched, and URL rewrites inside a mount are followed (express-templates.js). Express keeps no
// mount path on its layers, so the router prototype's use() is wrapped to record it when a router or
// a sub-app is mounted: call expressRouteLabels(app) before mounting routers. A router mounted on
// the app earlier whose path express 4 cannot tell is an error at install time (express 5's router
// >= 2.3 keeps it as layer.rawPath and is adopted); one found later, inside a router or sub-app
// built before the call, gets no template (a warning). The patches apply to every app of that express copy
// from then on and only act on requests of apps where expressRouteLabels was called. Templates are
// cached per route and mount, labels per template (route-labels.js): no validation per request.

const { createRouteLabeler } = require('./route-labels');
const { Mount, patchRouterPrototype, adoptStack, enterApp, requestMount, routeTemplate } = require('./express-templates');

const WHERE = 'heap-labels/express';

const kExtras = Symbol('heap-labels.express.extras'); // req -> interned extra labels
const kEntered = Symbol('heap-labels.express.entered'); // req -> template entered last
const kRoute = Symbol('heap-labels.express.route'); // req -> the value of req.route
const kPatched = Symbol('heap-labels.express.patched'); // on the patched request prototype
const kInstalled = Symbol('heap-labels.express.installed'); // on apps

function expressRouteLabels(app, options) {
  if (typeof app !== 'function' || typeof app.handle !== 'function' || typeof app.use !== 'function') {
    throw new TypeError(`heap-labels: ${WHERE}: expected an express application, got ${typeof app}`);
  }
  if (app[kInstalled]) throw new Error(`heap-labels: ${WHERE}: route labels are already installed on this app`);
  const labeler = createRouteLabeler(options, WHERE);
  const router = routerOf(app);
  patchRouterPrototype(router);
  patchRequestPrototype(app);
  adoptStack(router, true);

  const root = new Mount(labeler, '', false, router, undefined);
  router.use(function heapLabelsStart(req, res, next) {
    // A sub-app whose parent is labeled too keeps the parent's state (and mount prefix).
    if (!enterApp(req, root)) return next();
    req[kEntered] = undefined;
    req[kExtras] = undefined;
    try {
      req[kExtras] = labeler.extrasOf(req);
    } catch (error) {
      labeler.enterRoute(req, undefined, undefined);
      return next(error);
    }
    labeler.enterRoute(req, undefined, req[kExtras]);
    return next();
  });
  // First in the stack, after express 4's query parser and init (which set up req.get() etc.).
  const { stack } = router;
  const start = stack.pop();
  let at = 0;
  while (at < stack.length && (stack[at].name === 'query' || stack[at].name === 'expressInit')) at++;
  stack.splice(at, 0, start);
  app[kInstalled] = true;
  return app;
}

function routerOf(app) {
  if (typeof app.lazyrouter === 'function') {
    app.lazyrouter(); // express 4 creates app._router lazily
    return app._router;
  }
  return app.router; // express 5 (a getter that creates it)
}

// The `route` accessor on the request prototype shared by the apps of this express copy (a sub-app
// switches req's prototype to its own app.request, which inherits from it).
function patchRequestPrototype(app) {
  const proto = Object.getPrototypeOf(app.request);
  if (proto[kPatched]) return;
  const existing = Object.getOwnPropertyDescriptor(proto, 'route');
  if (existing !== undefined) {
    throw new Error(`heap-labels: ${WHERE}: express's request prototype already defines "route"`);
  }
  Object.defineProperty(proto, 'route', {
    configurable: true,
    enumerable: true,
    get() {
      return this[kRoute];
    },
    set(route) {
      this[kRoute] = route;
      const mount = requestMount(this);
      if (mount === undefined || route === null || typeof route !== 'object' || route.path === undefined) return;
      const template = routeTemplate(this, mount, route);
      // Express 4 assigns the route twice (router, then Route#dispatch): enter once.
      if (template === this[kEntered]) return;
      this[kEntered] = template;
      mount.labeler.enterRoute(this, template, this[kExtras]);
    },
  });
  proto[kPatched] = true;
}

module.exports = { expressRouteLabels };
