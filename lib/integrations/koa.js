'use strict';
// heap-labels/koa: labels every request of a koa app by the template of the @koa/router route
// that handles it.
//
//   const { koaRouteLabels } = require('heap-labels/koa');
//   const app = new Koa();
//   koaRouteLabels(app, { labels: (ctx) => ({ tenant: ctx.get('x-tenant') || 'none' }) });
//   app.use(router.routes());
//
// The router matches inside the middleware chain, so the labels come in two steps (late binding:
// route-labels.js, docs/architecture.md):
//
// 1. At request start app.handleRequest (wrapped) starts the request (enterWith) under a request
//    holder bound to its method's bucket (`unmatched` and the method) with its extra labels,
//    before any middleware: each request starts from its own labels (no
//    leak from the previous request of a keep-alive connection), and requests no route matches
//    (404s, middleware after the router) keep the bucket, as does work before routing. Bad extra
//    labels fail the request through koa's error handling (ctx.onerror, the app's 'error' event).
// 2. @koa/router assigns `ctx._matchedRoute = layer.path` synchronously right before it runs a
//    matched layer's middleware (and once for the whole match). A `_matchedRoute` accessor on
//    app.context binds the request's holder to the route's labels there, so what the request
//    allocated before (app-level middleware) moves to the route, and the route's middleware and
//    handler, and everything they await, carry them. Router middleware (router.use) is assigned its own path
//    pattern; only paths of route layers (layers with methods, from ctx.matched) switch the label,
//    so the final route wins and router middleware runs with the route it leads to. Nested routers
//    are flattened by @koa/router with their prefixes, so the template is the full path
//    ('/orgs/:org/members/:member').
//    A layer for every method (router.all) ahead of a route for the request's method in the same
//    match is router middleware too, and does not switch the label: @koa/router runs router.use()
//    layers only for a method some route takes, so apps write middleware that must also run for
//    the others (a CORS layer answering preflights, auth) as router.all(path, mw) before their
//    routes (S3rver). Switching there named everything the layer and the router middleware after
//    it allocate, until the route's own layer, by the layer's path: dead samples resolve at death
//    (docs/architecture.md), so rebinding at the route moved only the live ones. Such a layer is
//    the template when no other route of the match takes the method (an OPTIONS preflight, a
//    method no route has): @koa/router then assigns its path for the match; and under an exclusive
//    router (it runs one layer of the match).
//
// Koa registers its response writing (respond(): serializing ctx.body) and its error handling on
// the middleware promise when the request starts, i.e. under the request holder: where a
// middleware awaited before calling next(), the route is bound later, in a continuation those
// reactions do not descend from, but binding the holder is what changes their labels too, so
// serializing a route's body and its error response count to the route. Upstream middleware that
// awaited before next() resumes after `await next()` under the same holder, hence the route. The
// request's labels and the value of ctx._matchedRoute are kept in the request's state
// (request-context.js; ctx gets no property of its own). Install before
// app.listen()/app.callback() is used, once per app.
//
// koa-mount. A sub-app (or middleware) mounted with koa-mount routes with its own routers, whose
// paths lack the mount prefix: koa-mount strips the prefix from ctx.path while the request is inside
// and records it in ctx.mountPath. An accessor on app.context collects these prefixes (literal
// strings from the app's code); a route matched inside mounts is named by the text the mounts
// consumed (what ctx.originalUrl has before ctx.url) joined to its path ('/sub' + '/x/:id'), when
// that text is made of the recorded prefixes. Otherwise (outside the mounts again, or a rewrite of
// ctx.url) the route is named by its path alone.
//
// The automatic instrumentation (lib/instrument/koa.js, no code in the app) shares all of this
// through instrumentKoa(Application, automatic): Application.prototype.callback() (which
// app.listen() calls, and every server setup that passes koa to node:http) installs the same
// accessors and wrapper on the app when it first hands out its request handler. An app that also
// calls koaRouteLabels(app) gets that call's options (before callback(): installed with them;
// after: the installed hooks switch to them), never a second installation.

const { METHODS } = require('node:http');
const { createRouteLabeler, formatPath, joinPath } = require('./route-labels');
const { stateOf, ensureKoaState } = require('./request-context');

const WHERE = 'heap-labels/koa';

const kMountPath = Symbol('heap-labels.koa.mountPath'); // ctx -> value of ctx.mountPath (koa-mount)
const MAX_MOUNT_PREFIXES = 100; // distinct koa-mount prefixes recorded per app
const kState = Symbol('heap-labels.koa.state'); // app -> AppLabels
const kInstrumented = Symbol('heap-labels.koa.instrumented'); // on an instrumented Application.prototype

// How an app's requests are labeled: its labeler, and whether koaRouteLabels configured it (else
// the automatic instrumentation did, and `automatic` is its switch).
class AppLabels {
  constructor(labeler, automatic) {
    this.labeler = labeler;
    this.automatic = automatic; // undefined once koaRouteLabels(app) configured the app
    this.mountPrefixes = new Set(); // the koa-mount prefixes seen on the app's requests
  }

  get on() {
    return this.automatic === undefined || this.automatic.on;
  }
}

function koaRouteLabels(app, options) {
  if (app === null || typeof app !== 'object' || typeof app.handleRequest !== 'function' || !app.context) {
    throw new TypeError(`heap-labels: ${WHERE}: expected a koa application, got ${describe(app)}`);
  }
  const existing = app[kState];
  if (existing !== undefined && existing.automatic === undefined) {
    throw new Error(`heap-labels: ${WHERE}: route labels are already installed on this app`);
  }
  if (existing === undefined && Object.getOwnPropertyDescriptor(app.context, '_matchedRoute') !== undefined) {
    throw new Error(`heap-labels: ${WHERE}: app.context already defines "_matchedRoute"`);
  }
  const labeler = createRouteLabeler(options, WHERE, true);
  if (existing !== undefined) {
    // Instrumented automatically already (callback() was called): these options from now on.
    existing.labeler = labeler;
    existing.automatic = undefined;
    return app;
  }
  install(app, new AppLabels(labeler, undefined));
  return app;
}

// The automatic instrumentation of a koa Application class (koa 2 or 3; lib/instrument/koa.js):
// each app installs the hooks below with `automatic.labeler` when its callback() is first
// called, labels while `automatic.on`, and its request handlers are passed to
// `automatic.onListener(handler)`. Idempotent per class. Guarded: a bug leaves the app or the
// request unlabeled (reported once through `automatic.failed`), never throws into koa.
function instrumentKoa(Application, automatic) {
  const proto = Application.prototype;
  if (Object.hasOwn(proto, kInstrumented)) return;
  const callback = proto.callback;
  if (typeof callback !== 'function' || typeof proto.handleRequest !== 'function') {
    throw new TypeError(`heap-labels: ${WHERE}: the Application class has no callback()/handleRequest()`);
  }
  proto.callback = function callback_() {
    try {
      if (
        this[kState] === undefined &&
        this.context !== null &&
        typeof this.context === 'object' &&
        Object.getOwnPropertyDescriptor(this.context, '_matchedRoute') === undefined
      ) {
        install(this, new AppLabels(automatic.labeler, automatic));
      }
    } catch (error) {
      automatic.failed(error);
    }
    const handler = Reflect.apply(callback, this, arguments);
    try {
      automatic.onListener(handler);
    } catch (error) {
      automatic.failed(error);
    }
    return handler;
  };
  Object.defineProperty(proto.callback, 'name', { value: 'callback' });
  Object.defineProperty(proto, kInstrumented, { value: true });
}

// The accessor on app.context and the wrapper of app.handleRequest; both read the labeler from
// `state` per request, so that koaRouteLabels(app) can reconfigure an app installed automatically.
function install(app, state) {
  // koa-mount's record of the prefix it strips (absent if something else defines ctx.mountPath).
  if (Object.getOwnPropertyDescriptor(app.context, 'mountPath') === undefined) {
    Object.defineProperty(app.context, 'mountPath', {
      configurable: true,
      enumerable: true,
      get() {
        return this[kMountPath];
      },
      set(prefix) {
        this[kMountPath] = prefix;
        if (typeof prefix === 'string' && prefix !== '' && state.mountPrefixes.size < MAX_MOUNT_PREFIXES) {
          state.mountPrefixes.add(prefix);
        }
      },
    });
  }

  Object.defineProperty(app.context, '_matchedRoute', {
    configurable: true,
    enumerable: true,
    get() {
      const request = stateOf(this.req);
      return request === undefined ? undefined : request.koaMatchedRoute;
    },
    set(path) {
      const request = stateOf(this.req);
      if (request === undefined) {
        // A context koa's request handling did not make (app.createContext() called directly):
        // the data property @koa/router would have made.
        Object.defineProperty(this, '_matchedRoute', { value: path, writable: true, enumerable: true, configurable: true });
        return;
      }
      request.koaMatchedRoute = path;
      // Labeled while the app labels (handleRequest below then started the request).
      if (request.labels === undefined || !state.on) return;
      // Guarded: @koa/router assigns this in its dispatch, where a throw would fail the request.
      try {
        if (!isRoutePath(this.matched, path, this.method, this.router)) return;
        const template =
          this[kMountPath] === undefined
            ? formatPath(path)
            : joinPath(mountedPrefix(this, state.mountPrefixes), path);
        const labels = state.labeler.routeLabels(template, request.extras, this.req.method);
        // The router assigns a route once for the match and once before its middleware: enter once.
        if (labels === request.labels) return;
        state.labeler.enterLabels(this.req, labels, request);
      } catch (error) {
        state.labeler.warnOnce('failure', `a request could not be labeled: ${error && error.message}`);
      }
    },
  });

  const handleRequest = app.handleRequest;
  app.handleRequest = function handleRequestWithLabels(ctx, fnMiddleware) {
    if (!state.on) return handleRequest.call(this, ctx, fnMiddleware);
    const labeler = state.labeler;
    let badExtras;
    try {
      const request = ensureKoaState(ctx.req);
      request.extras = undefined;
      try {
        request.extras = labeler.extrasOf(ctx);
      } catch (error) {
        badExtras = error; // the user's labels(): fails the request, with the bare bucket
      }
      labeler.startRequest(ctx.req, request.extras, request);
    } catch (error) {
      // A bug here: the request runs unlabeled rather than failing.
      labeler.warnOnce('failure', `a request could not be labeled: ${error && error.message}`);
      return handleRequest.call(this, ctx, fnMiddleware);
    }
    if (badExtras !== undefined) return handleRequest.call(this, ctx, rejecting(badExtras));
    return handleRequest.call(this, ctx, fnMiddleware);
  };
  app[kState] = state;
}

// Middleware that fails the request with `error`. Made here: a closure in handleRequestWithLabels
// would put its variables in a context allocated at every request, the ones that need no closure
// included.
function rejecting(error) {
  return () => Promise.reject(error);
}

// Whether assigning `path` to ctx._matchedRoute names the request's route: `path` is the path of a
// route layer (one with methods) among the layers the routers matched for this request, and not
// only of layers for every method (router.all) with a route for the request's `method` after
// them in the match (router middleware, above). Anything else (router.use middleware) keeps the
// current labels. Without ctx.matched (another router) every assignment counts, and under an
// exclusive router (@koa/router's `exclusive` option: it runs one layer of the match, which is
// then the route whatever its methods) every route layer's does.
function isRoutePath(matched, path, method, router) {
  if (!Array.isArray(matched)) return true;
  const exclusive = router !== null && typeof router === 'object' && Boolean(router.exclusive);
  let routeAfter = false; // a route for `method`, not for every method, later in the match
  for (let i = matched.length - 1; i >= 0; i--) {
    const methods = matched[i].methods;
    if (!Array.isArray(methods) || methods.length === 0) continue;
    const everyMethod = !exclusive && takesEveryMethod(methods);
    if (matched[i].path === path && !(everyMethod && routeAfter)) return true;
    if (!everyMethod && methods.includes(method)) routeAfter = true;
  }
  return false;
}

// Whether a layer's methods are every method node:http knows (router.all(): @koa/router registers
// http.METHODS), remembered per methods array (a layer's, fixed when the route is registered).
// A loop, not METHODS.every() with a closure: that would give this function a context for
// `methods` at every call (per request, where it runs unoptimized), the cached ones included.
const everyMethodOf = new WeakMap();
function takesEveryMethod(methods) {
  if (methods.length < METHODS.length) return false;
  let every = everyMethodOf.get(methods);
  if (every === undefined) {
    every = true;
    for (const method of METHODS) if (!methods.includes(method)) every = false;
    everyMethodOf.set(methods, every);
  }
  return every;
}

// The text koa-mount consumed from the request's path where `ctx` is now: what ctx.originalUrl's
// path has before ctx.url's ('/outer/inner' for '/outer/inner/c/4' seen as '/c/4'), when it is made
// of recorded mount prefixes; '' otherwise (outside the mounts, or ctx.url rewritten).
function mountedPrefix(ctx, prefixes) {
  const { originalUrl, url } = ctx;
  if (typeof originalUrl !== 'string' || typeof url !== 'string' || originalUrl === url) return '';
  const full = originalUrl.slice(0, pathEnd(originalUrl));
  const path = url.slice(0, pathEnd(url));
  let consumed;
  if (full.length > path.length && full.endsWith(path)) consumed = full.slice(0, full.length - path.length);
  else if (path === '/' && full !== '') consumed = full; // koa-mount maps its prefix itself to '/'
  else return '';
  return madeOf(consumed, prefixes) ? consumed : '';
}

function pathEnd(url) {
  const query = url.indexOf('?');
  return query === -1 ? url.length : query;
}

// Whether `text` is a sequence of `prefixes` (each may repeat).
function madeOf(text, prefixes) {
  const reached = new Uint8Array(text.length + 1);
  reached[0] = 1;
  for (let at = 0; at < text.length; at++) {
    if (reached[at] === 0) continue;
    for (const prefix of prefixes) if (text.startsWith(prefix, at)) reached[at + prefix.length] = 1;
  }
  return reached[text.length] === 1;
}

function describe(value) {
  return value === null ? 'null' : typeof value;
}

module.exports = { koaRouteLabels, instrumentKoa };
