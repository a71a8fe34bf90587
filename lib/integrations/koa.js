'use strict';
// heap-labels/koa: labels every request of a koa app by the template of the @koa/router route
// that handles it.
//
//   const { koaRouteLabels } = require('heap-labels/koa');
//   const app = new Koa();
//   koaRouteLabels(app, { labels: (ctx) => ({ tenant: ctx.get('x-tenant') || 'none' }) });
//   app.use(router.routes());
//
// The router matches inside the middleware chain, so the labels are entered in two steps, each
// with setHeapProfileLabels (AsyncLocalStorage.enterWith):
//
// 1. At request start app.handleRequest (wrapped) enters the bucket value (`unmatched`) with the
//    request's extra labels, before any middleware: each request starts from its own labels (no
//    leak from the previous request of a keep-alive connection), and requests no route matches
//    (404s, middleware after the router) keep the bucket, as does work before routing. Bad extra
//    labels fail the request through koa's error handling (ctx.onerror, the app's 'error' event).
// 2. @koa/router assigns `ctx._matchedRoute = layer.path` synchronously right before it runs a
//    matched layer's middleware (and once for the whole match). A `_matchedRoute` accessor on
//    app.context enters the route's labels there, so the route's middleware and handler, and
//    everything they await, carry them. Router middleware (router.use) is assigned its own path
//    pattern; only paths of route layers (layers with methods, from ctx.matched) switch the label,
//    so the final route wins and router middleware runs with the route it leads to. Nested routers
//    are flattened by @koa/router with their prefixes, so the template is the full path
//    ('/orgs/:org/members/:member').
//
// Koa registers its response writing (respond(): serializing ctx.body) and its error handling on
// the middleware promise when the request starts, i.e. in the bucket's context; where a middleware
// awaited before calling next(), the route was entered later, in a continuation those reactions do
// not descend from. The middleware promise handed to koa is therefore a thenable that runs koa's
// reactions with the request's latest labels (withHeapProfileLabels), so serializing a route's
// body and its error response count to the route. Upstream middleware that awaited before next()
// resumes after `await next()` with the labels it awaited in: that is AsyncLocalStorage semantics
// and not changed here. Install before app.listen()/app.callback() is used, once per app.
//
// koa-mount. A sub-app (or middleware) mounted with koa-mount routes with its own routers, whose
// paths lack the mount prefix: koa-mount strips the prefix from ctx.path while the request is inside
// and records it in ctx.mountPath. An accessor on app.context collects these prefixes (literal
// strings from the app's code); a route matched inside mounts is named by the text the mounts
// consumed (what ctx.originalUrl has before ctx.url) joined to its path ('/sub' + '/x/:id'), when
// that text is made of the recorded prefixes. Otherwise (outside the mounts again, or a rewrite of
// ctx.url) the route is named by its path alone.

const { withHeapProfileLabels } = require('../context');
const { createRouteLabeler, formatPath, joinPath } = require('./route-labels');

const WHERE = 'heap-labels/koa';

const kLabels = Symbol('heap-labels.koa.labels'); // ctx -> labels entered last
const kExtras = Symbol('heap-labels.koa.extras'); // ctx -> interned extra labels
const kMatched = Symbol('heap-labels.koa.matchedRoute'); // ctx -> value of ctx._matchedRoute
const kMountPath = Symbol('heap-labels.koa.mountPath'); // ctx -> value of ctx.mountPath (koa-mount)
const MAX_MOUNT_PREFIXES = 100; // distinct koa-mount prefixes recorded per app
const kInstalled = Symbol('heap-labels.koa.installed');

function koaRouteLabels(app, options) {
  if (app === null || typeof app !== 'object' || typeof app.handleRequest !== 'function' || !app.context) {
    throw new TypeError(`heap-labels: ${WHERE}: expected a koa application, got ${describe(app)}`);
  }
  if (app[kInstalled]) throw new Error(`heap-labels: ${WHERE}: route labels are already installed on this app`);
  if (Object.getOwnPropertyDescriptor(app.context, '_matchedRoute') !== undefined) {
    throw new Error(`heap-labels: ${WHERE}: app.context already defines "_matchedRoute"`);
  }
  const labeler = createRouteLabeler(options, WHERE);
  const mountPrefixes = new Set(); // the koa-mount prefixes seen on this app's requests

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
        if (typeof prefix === 'string' && prefix !== '' && mountPrefixes.size < MAX_MOUNT_PREFIXES) {
          mountPrefixes.add(prefix);
        }
      },
    });
  }

  Object.defineProperty(app.context, '_matchedRoute', {
    configurable: true,
    enumerable: true,
    get() {
      return this[kMatched];
    },
    set(path) {
      this[kMatched] = path;
      if (this[kLabels] === undefined || !isRoutePath(this.matched, path)) return;
      const template =
        this[kMountPath] === undefined ? formatPath(path) : joinPath(mountedPrefix(this, mountPrefixes), path);
      const labels = labeler.routeLabels(template, this[kExtras]);
      // The router assigns a route once for the match and once before its middleware: enter once.
      if (labels === this[kLabels]) return;
      this[kLabels] = labeler.enterLabels(this.req, labels);
    },
  });

  const handleRequest = app.handleRequest;
  const labeledChains = new WeakMap(); // koa's composed middleware -> its labeled wrapper
  app.handleRequest = function handleRequestWithLabels(ctx, fnMiddleware) {
    let chain = labeledChains.get(fnMiddleware);
    if (chain === undefined) {
      chain = (c) => new LabeledResult(c, fnMiddleware(c));
      labeledChains.set(fnMiddleware, chain);
    }
    try {
      ctx[kExtras] = labeler.extrasOf(ctx);
    } catch (error) {
      ctx[kExtras] = undefined;
      ctx[kLabels] = labeler.enterRoute(ctx.req, undefined, undefined);
      return handleRequest.call(this, ctx, (c) => new LabeledResult(c, Promise.reject(error)));
    }
    ctx[kLabels] = labeler.enterRoute(ctx.req, undefined, ctx[kExtras]);
    return handleRequest.call(this, ctx, chain);
  };
  app[kInstalled] = true;
  return app;
}

// Whether `path` is the path of a route layer (one with methods) among the layers the routers
// matched for this request; anything else (router.use middleware) keeps the current labels.
// Without ctx.matched (another router) every assignment counts.
function isRoutePath(matched, path) {
  if (!Array.isArray(matched)) return true;
  for (let i = matched.length - 1; i >= 0; i--) {
    const layer = matched[i];
    if (layer.path === path && Array.isArray(layer.methods) && layer.methods.length > 0) return true;
  }
  return false;
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

// The middleware promise as koa sees it: reactions registered on it (koa's respond and onerror)
// run with the request's labels as they are when the promise settles (see the top of the file).
class LabeledResult {
  constructor(ctx, promise) {
    this.ctx = ctx;
    this.promise = promise;
  }

  then(onFulfilled, onRejected) {
    const ctx = this.ctx;
    const wrap = (fn) =>
      typeof fn === 'function' ? (value) => withHeapProfileLabels(ctx[kLabels], () => fn(value)) : fn;
    return new LabeledResult(ctx, this.promise.then(wrap(onFulfilled), wrap(onRejected)));
  }

  catch(onRejected) {
    return this.then(undefined, onRejected);
  }

  finally(onFinally) {
    const ctx = this.ctx;
    const run =
      typeof onFinally === 'function' ? () => withHeapProfileLabels(ctx[kLabels], onFinally) : onFinally;
    return new LabeledResult(ctx, this.promise.finally(run));
  }
}

function describe(value) {
  return value === null ? 'null' : typeof value;
}

module.exports = { koaRouteLabels };
