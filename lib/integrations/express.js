'use strict';
// heap-labels/express: labels every request of an express 4 or 5 app by its route template.
//
//   const { expressRouteLabels } = require('heap-labels/express');
//   const app = express();
//   expressRouteLabels(app, { labels: (req) => ({ tenant: req.get('x-tenant') ?? 'none' }) });
//   // ... then app.use(...), routers, sub-apps, routes, as usual
//
// Express knows the route only after routing, and routing runs middleware in between, so the
// labels come in two steps (late binding: route-labels.js, docs/architecture.md):
//
// 1. At request start, a middleware placed first in the app's router (after express 4's own
//    query/init layers, wherever the call is made) starts the request (enterWith) under a request
//    holder bound to its method's bucket (`unmatched` and the method) with its extra labels. Every request thus starts from its own labels: a route's label cannot
//    leak into the next request of a keep-alive connection (on Node.js 22 without
//    AsyncContextFrame enterWith writes to the connection's async resource, which would otherwise
//    carry it), requests no route matches (404, the app's catch-all middleware, finalhandler) keep
//    the bucket, and so does work done before routing (middleware ahead of the route). Bad extra
//    labels fail the request with next(error).
// 2. When a route matches, the router assigns `req.route = route` synchronously right before it
//    runs the route's param callbacks and handlers. The request prototype shared by the apps of
//    this express copy gets a `route` accessor whose setter binds the request's holder to the
//    route's labels there: what the request allocated before (app-level middleware) moves to the
//    route, and the handlers, everything they await or schedule (timers, immediates, I/O callbacks), the response
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
// built before the call, gets no template (a warning). The patches apply to every app of that
// express copy from then on and only act on requests of apps where expressRouteLabels was called.
// Templates are cached per route and mount, labels per template (route-labels.js): no validation
// per request.
//
// The automatic instrumentation (lib/instrument/express.js, no code in the app) shares all of
// this through instrumentExpress(express, automatic): it patches the express module when it loads,
// before the app exists, so the router wrappers of express-templates.js (use(), route(), handle())
// see every mount and route, and wraps the application prototype's init() (the express() factory
// calls it last) and handle() (every request of the app, and of sub-apps, enters it): init() gives
// each new app its state, handle() starts the request at the app's root mount, where step 1's
// middleware would. Nothing creates the app's router early (express 4 reads the routing settings
// when it does): the root mount learns the router when the first request enters it. An app
// that also calls expressRouteLabels(app) gets that call's options: the state is reconfigured,
// nothing is installed twice, and the middleware of step 1 takes over the request start.

const { createRouteLabeler } = require('./route-labels');
const { stateOf, ensureExpressState } = require('./request-context');
const {
  Mount,
  routerPrototype,
  routerModulePrototype,
  patchRouterPrototype,
  adoptStack,
  enterApp,
  exitsOf,
  routeTemplate,
  currentMount,
} = require('./express-templates');

const WHERE = 'heap-labels/express';

// Per request, its state (request-context.js) holds its extra labels (`extras`), the value of
// req.route (`route`) and the labels entered last (`labels`): no property is added to req.
const kPatched = Symbol('heap-labels.express.request'); // on the patched request prototype
const kState = Symbol('heap-labels.express.state'); // app -> AppLabels
const kInstrumented = Symbol('heap-labels.express.instrumented'); // on instrumented express modules

// How an app's requests are labeled: its labeler and root mount (express-templates.js), and
// whether expressRouteLabels configured it (else the automatic instrumentation did, and
// `automatic` is its switch). `router`: the app's router, undefined when the automatic
// instrumentation makes the state before express creates it (the root Mount learns it when the
// first request enters it).
class AppLabels {
  constructor(labeler, automatic, router) {
    this.labeler = labeler;
    this.root = new Mount(labeler, '', false, router, undefined);
    this.automatic = automatic; // undefined once expressRouteLabels(app) configured the app
  }

  configure(labeler, router) {
    this.labeler = labeler;
    this.root = new Mount(labeler, '', false, router, undefined);
    this.automatic = undefined;
  }
}

function expressRouteLabels(app, options) {
  if (typeof app !== 'function' || typeof app.handle !== 'function' || typeof app.use !== 'function') {
    throw new TypeError(`heap-labels: ${WHERE}: expected an express application, got ${typeof app}`);
  }
  const existing = app[kState];
  if (existing !== undefined && existing.automatic === undefined) {
    throw new Error(`heap-labels: ${WHERE}: route labels are already installed on this app`);
  }
  const labeler = createRouteLabeler(options, WHERE, true);
  const router = routerOf(app);
  patchRouterPrototype(routerPrototype(router));
  patchRequestPrototype(Object.getPrototypeOf(app.request));
  adoptStack(router, true);

  // Instrumented automatically already: these options from now on, and the middleware below
  // starts the requests (the handle() wrapper steps aside for configured apps).
  let state = existing;
  if (state === undefined) state = new AppLabels(labeler, undefined, router);
  else state.configure(labeler, router);
  router.use(function heapLabelsStart(req, res, next) {
    // A sub-app whose parent is labeled too keeps the parent's state (and mount prefix).
    const { labeler, root } = state;
    const request = ensureExpressState(req);
    if (!enterApp(request, req, root)) return next();
    exitsOf(request, app, true);
    request.extras = undefined;
    try {
      request.extras = labeler.extrasOf(req);
    } catch (error) {
      labeler.startRequest(req, undefined, request);
      return next(error);
    }
    labeler.startRequest(req, request.extras, request);
    return next();
  });
  // First in the stack, after express 4's query parser and init (which set up req.get() etc.).
  const { stack } = router;
  const start = stack.pop();
  let at = 0;
  while (at < stack.length && (stack[at].name === 'query' || stack[at].name === 'expressInit')) at++;
  stack.splice(at, 0, start);
  app[kState] = state;
  return app;
}

// The automatic instrumentation of an express module (4 or 5; lib/instrument/express.js): every
// app it creates from now on labels its requests by route template with `automatic.labeler`
// while `automatic.on`, and is passed to `automatic.onApp(app)`. Idempotent per module. Every
// hook body is guarded: a bug in it leaves the request unlabeled (reported once through
// `automatic.failed`), never throws into express.
function instrumentExpress(express, automatic) {
  if (Object.hasOwn(express, kInstrumented)) return;
  const appProto = express.application;
  const init = appProto.init;
  const handle = appProto.handle;
  if (typeof init !== 'function' || typeof handle !== 'function') {
    throw new TypeError(`heap-labels: ${WHERE}: express.application has no init()/handle()`);
  }
  patchRouterPrototype(routerModulePrototype(express.Router));
  patchRequestPrototype(express.request);

  // express() mixes the prototype's own properties into each app it creates, then calls init():
  // apps created from now on get these wrappers.
  appProto.init = function init_() {
    const result = Reflect.apply(init, this, arguments);
    try {
      if (this[kState] === undefined) {
        this[kState] = new AppLabels(automatic.labeler, automatic, undefined);
        automatic.onApp(this);
      }
    } catch (error) {
      automatic.failed(error);
    }
    return result;
  };
  // Its three parameters passed on as such (express's handle() takes three and reads no more):
  // `arguments` would be an object per request wherever this runs unoptimized.
  appProto.handle = function handle_(req, res, callback) {
    try {
      const state = this[kState];
      if (state !== undefined && state.automatic !== undefined && state.automatic.on) {
        const request = ensureExpressState(req);
        if (enterApp(request, req, state.root)) {
          exitsOf(request, this, false);
          request.extras = undefined;
          state.labeler.startRequest(req, undefined, request);
        }
      }
    } catch (error) {
      automatic.failed(error);
    }
    return handle.call(this, req, res, callback);
  };
  Object.defineProperty(appProto.init, 'name', { value: 'init' });
  Object.defineProperty(appProto.handle, 'name', { value: 'handle' });
  Object.defineProperty(express, kInstrumented, { value: true });
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
function patchRequestPrototype(proto) {
  if (proto[kPatched]) return;
  const existing = Object.getOwnPropertyDescriptor(proto, 'route');
  if (existing !== undefined) {
    throw new Error(`heap-labels: ${WHERE}: express's request prototype already defines "route"`);
  }
  Object.defineProperty(proto, 'route', {
    configurable: true,
    enumerable: true,
    get() {
      const state = stateOf(this);
      return state === undefined ? undefined : state.expressRoute;
    },
    set(route) {
      // Kept in the request's state even for a request no labeled app has started yet (an
      // unlabeled app routing before it hands the request to a labeled sub-app): an own property
      // here would hide this accessor from every later assignment.
      const state = ensureExpressState(this);
      state.expressRoute = route;
      const mount = currentMount(state, this);
      if (mount === undefined || route === null || typeof route !== 'object' || route.path === undefined) return;
      // Guarded: express assigns req.route in its router, where a throw would fail the request.
      try {
        const labels = mount.labeler.routeLabels(routeTemplate(this, mount, route), state.extras, this.method);
        // Express 4 assigns the route twice (router, then Route#dispatch): enter once.
        if (labels === state.labels) return;
        mount.labeler.enterLabels(this, labels, state);
      } catch (error) {
        mount.labeler.warnOnce('failure', `a request could not be labeled: ${error && error.message}`);
      }
    },
  });
  proto[kPatched] = true;
}

module.exports = { expressRouteLabels, instrumentExpress };
