'use strict';
// The route template of an express 4 or 5 request (for express.js): where the request is in its
// app's tree of mounted routers and sub-apps, and which path of the route (or mount) matched.
//
// Mounts. Express keeps no mount path on its layers, so the router prototype's use() is wrapped to
// record it when a router or a sub-app is mounted; the mounted layer's handle_request/handleRequest
// then tracks, per request, the Mount it is in (its template prefix, '/orgs/:org'), and restores the
// parent's when the router hands the request back (next, with or without an error). The template
// is the prefix of the request's Mount joined to the route's path (route-labels.js joinPath).
//
// Several paths. A route or mount registered with several paths (an array, nested or not) matches
// if any of them does, and is named by the one that matched. Express does not say which: express 4
// joins the paths into one RegExp, express 5's router tries one matcher per path. So each such
// layer gets a PathChoice made with express's own Layer constructor and the options the router gave
// the layer, one Layer per path, tried on the path the router matched: the request's pathname for a
// route, the text the mount consumed (the growth of req.baseUrl) for a mount. The choice follows
// the router: express 4's joined RegExp takes the leftmost match, then the first path; express 5
// takes the first path that matches. Only layers with several paths pay for it.
//
// URL rewrites inside a mount. Routes match req.url, which a mount trims ('/api/users/7' is
// '/users/7' inside the mount at '/api'), and which middleware may rewrite:
// - a middleware that sets req.url back to the full URL inside a mount (verdaccio's logger does:
//   req.url = req.originalUrl) makes the routes below match the full path: such a route is named by
//   its own path, without the mount prefixes ('/-/verdaccio/data/packages', not
//   '/-/verdaccio/-/verdaccio/data/packages'). Told by req.baseUrl being non-empty while req.url has
//   the pathname of req.originalUrl.
// - a request dispatched again from the top of a router it is already inside (req.app.handle(req,
//   res, next) or router.handle() after rewriting req.url) is named from that router's place: the
//   router prototype's handle() is wrapped, and when the router is an ancestor of the request's
//   Mount, the request moves back to that Mount until the router hands it back.
// - any other rewrite keeps the prefix of the mount the route is in ('/legacy' + '/new/:id').
// A router called directly by middleware (router(req, res, next), vhost) runs under the Mount of
// the caller, which is right: it sees the URL as the caller does.

const { isRegExp } = require('node:util').types;
const { joinPath, formatPath } = require('./route-labels');
const { stateOf } = require('./request-context');

const WHERE = 'heap-labels/express';

// Per request, its state (request-context.js) holds the Mount it is in (`mount`) and req.baseUrl
// when it entered that Mount (`base`).
const kPatched = Symbol('heap-labels.express.patched'); // on patched router prototypes
const kAdopted = Symbol('heap-labels.express.adopted'); // on layers seen by the use() wrapper

const routeChoices = new WeakMap(); // Route with several paths -> PathChoice

// A place in an app's tree of mounts: its template prefix, the router whose layers run there, and
// the cached templates of the routes below it. One per mount point and path (per labeled app),
// made on first use, shared by the requests.
class Mount {
  // `prefix`: the template prefix, undefined when it could not be told (every route below is then
  // labeled as unmatched); `patternEnd`: the prefix ends in a RegExp literal; `router`: the router
  // (undefined for a sub-app until its router is first entered: express hides it in a closure; and
  // for an app's root under the automatic instrumentation, made before the app's router exists).
  constructor(labeler, prefix, patternEnd, router, parent) {
    this.labeler = labeler;
    this.prefix = prefix;
    this.patternEnd = patternEnd;
    this.router = router;
    this.parent = parent;
    this.root = parent === undefined ? this : parent.root;
    this.children = new WeakMap(); // mounted layer -> Mount per path of the layer
    this.templates = new WeakMap(); // Route -> template per path of the route
  }

  // The Mount below this one through `layer` mounted at `paths[index]` (index -1: not told).
  child(layer, paths, index) {
    let children = this.children.get(layer);
    if (children === undefined) {
      children = [];
      this.children.set(layer, children);
    }
    const at = index < 0 ? paths.length : index;
    let child = children[at];
    if (child === undefined) {
      const path = paths[index];
      const root = index >= 0 && (formatPath(path) === '/' || path === '');
      const prefix = index < 0 ? undefined : root ? this.prefix : joinPath(this.prefix, path, this.patternEnd);
      const patternEnd = root ? this.patternEnd : isRegExp(path);
      child = new Mount(this.labeler, prefix, patternEnd, routerOf(layer.handle), this);
      children[at] = child;
    }
    return child;
  }

  // The template of `route` matched at its path number `index` (undefined: not told).
  template(route, index) {
    const templates = this.templates.get(route);
    return (templates === undefined ? this.cacheTemplates(route) : templates)[index];
  }

  // The templates of `route`, made and cached at its first request. A method of its own: the
  // closure here would otherwise give template() a context allocated at every call (about 80
  // bytes per request where it runs unoptimized).
  cacheTemplates(route) {
    const templates = pathsOf(route.path).map((path) => joinPath(this.prefix, path, this.patternEnd));
    this.templates.set(route, templates);
    return templates;
  }
}

// The paths of a layer: its path, or the paths of an array, flattened as express does.
function pathsOf(path) {
  return Array.isArray(path) ? path.flat(Infinity) : [path];
}

// The router a mounted layer's handle is (undefined for a sub-app's mounted_app closure).
function routerOf(handle) {
  const fn = unwrapped(handle);
  return Array.isArray(fn.stack) && typeof fn.handle === 'function' ? fn : undefined;
}

// The function a tracer's wrapper stands for: OpenTelemetry's express instrumentation (through
// shimmer, which keeps the wrapped function as `__original`) replaces every layer's handle, and its
// wrapper neither is the router express calls handle() on nor has the name of a sub-app's closure.
function unwrapped(fn) {
  for (let depth = 0; depth < 8 && typeof fn.__original === 'function'; depth++) fn = fn.__original;
  return fn;
}

function noop() {}

// Which of a layer's several paths matches a path, decided as the layer's router decides.
class PathChoice {
  constructor(paths, layer, options) {
    const Layer = layer.constructor;
    const layers = paths.map((path) => new Layer(path, options, noop));
    if (isRegExp(layer.regexp)) {
      // express 4: one RegExp with the paths' sources as alternatives, the layer's flags.
      this.regexps = layers.map((one) => new RegExp(one.regexp.source, layer.regexp.flags));
      this.layers = undefined;
    } else {
      this.regexps = undefined;
      this.layers = layers; // express 5's router: one matcher per path, in order
    }
  }

  // The number of the path that matches `path` (-1: none).
  pick(path) {
    if (typeof path !== 'string') return -1;
    if (this.regexps !== undefined) {
      let best = -1;
      let bestAt = Infinity;
      for (let i = 0; i < this.regexps.length; i++) {
        const at = path.search(this.regexps[i]);
        if (at >= 0 && at < bestAt) {
          best = i;
          bestAt = at;
        }
      }
      return best;
    }
    for (let i = 0; i < this.layers.length; i++) {
      try {
        if (this.layers[i].match(path)) return i;
      } catch {
        return -1; // a parameter that does not decode: the router failed the same way before
      }
    }
    return -1;
  }
}

// A PathChoice for `layer` with several paths (undefined when it has one, or express's Layer could
// not be used as expected: the template is then not told).
function pathChoice(paths, layer, options) {
  if (paths.length < 2 || typeof layer.constructor !== 'function') return undefined;
  try {
    return new PathChoice(paths, layer, options);
  } catch {
    return undefined;
  }
}

// Records the PathChoice of a route layer with several paths.
function describeRoute(router, layer) {
  const route = layer.route;
  if (route === null || typeof route !== 'object' || !Array.isArray(route.path) || routeChoices.has(route)) return;
  const paths = pathsOf(route.path);
  if (paths.length < 2) return;
  const options = { sensitive: router.caseSensitive, strict: router.strict, end: true };
  routeChoices.set(route, pathChoice(paths, layer, options) ?? null);
}

// The express 4 `proto` object, or express 5's Router.prototype: where use(), route() and handle()
// live, found from a router.
function routerPrototype(router) {
  for (let p = Object.getPrototypeOf(router); p !== null; p = Object.getPrototypeOf(p)) {
    if (isRouterPrototype(p)) return p;
  }
  throw new TypeError(`heap-labels: ${WHERE}: the app's router has no use()/route()/handle() (not express 4 or 5?)`);
}

// The same from the module's Router export: express 4's Router is `proto` itself, express 5's is
// a class (the `router` package's) with the methods on its prototype.
function routerModulePrototype(Router) {
  if (isRouterPrototype(Router)) return Router;
  if (typeof Router === 'function' && isRouterPrototype(Router.prototype)) return Router.prototype;
  throw new TypeError(`heap-labels: ${WHERE}: express.Router has no use()/route()/handle() (not express 4 or 5?)`);
}

function isRouterPrototype(p) {
  return (
    p !== null &&
    p !== undefined &&
    Object.hasOwn(p, 'use') &&
    Object.hasOwn(p, 'route') &&
    Object.hasOwn(p, 'handle')
  );
}

// Wraps the router prototype's use() (to record mount paths), route() (to record the routes with
// several paths) and handle() (to follow a request dispatched again from an ancestor router).
// `proto` is routerPrototype(router) or routerModulePrototype(express.Router).
function patchRouterPrototype(proto) {
  if (proto[kPatched]) return;
  const { use, route, handle } = proto;
  proto.use = function use_(fn) {
    const path = mountPathOf(fn);
    const before = this.stack.length;
    const result = use.apply(this, arguments);
    for (let i = before; i < this.stack.length; i++) adopt(this, this.stack[i], path);
    return result;
  };
  proto.route = function route_() {
    const result = route.apply(this, arguments);
    const layer = this.stack[this.stack.length - 1];
    if (layer !== undefined && layer.route === result) describeRoute(this, layer);
    return result;
  };
  proto.handle = function handle_(req, res, out) {
    const state = stateOf(req);
    if (state === undefined || state.mount === undefined) return handle.call(this, req, res, out);
    if (entersMount(state, this)) return handle.call(this, req, res, out);
    const mount = currentMount(state, req);
    if (mount.router === this) {
      // The router the request is in, dispatching it again (req.app.handle() from its own
      // middleware): nothing tells when this dispatch hands the request back, so req.next cannot
      // tell a mount's exit from now on.
      if (state.exitNext === undefined) state.exitNext = NO_EXIT;
      return handle.call(this, req, res, out);
    }
    return enterRouter(this, handle, state, req, res, out);
  };
  for (const [name, fn] of [['use', proto.use], ['route', proto.route], ['handle', proto.handle]]) {
    Object.defineProperty(fn, 'name', { value: name });
  }
  proto[kPatched] = true;
}

// A router's handle() entered while the request (whose state is `state`) is in a Mount whose
// router it is not.
function enterRouter(router, handle, state, req, res, out) {
  const mount = state.mount;
  if (mount.router === undefined) {
    // The first router entered below a sub-app's mount is the sub-app's; what was registered on it
    // before installation is adopted now. The first router entered at an app's root Mount is the
    // app's (the automatic instrumentation makes the root before express creates the router).
    mount.router = router;
    adoptStack(router);
    return handle.call(router, req, res, out);
  }
  if (typeof out === 'function') {
    for (let above = mount.parent; above !== undefined; above = above.parent) {
      if (above.router !== router) continue;
      // Dispatched again from the top of a router the request is already inside.
      const base = state.base;
      state.mount = above;
      state.base = req.baseUrl;
      return handle.call(router, req, res, function leaveRedispatch(error) {
        state.mount = mount;
        state.base = base;
        return out.apply(this, arguments);
      });
    }
  }
  return handle.call(router, req, res, out); // called directly (router(req, res, next)): the caller's place
}

// The path argument of use() as express reads it: a leading non-function (or array of those).
function mountPathOf(first) {
  if (typeof first === 'function') return '/';
  let arg = first;
  while (Array.isArray(arg) && arg.length !== 0) arg = arg[0];
  return typeof arg === 'function' ? '/' : first;
}

// A router (express.Router(), or any router of the `router` package) or an express sub-app (whose
// mount layer's handle is express's `mounted_app` closure).
function isMount(handle) {
  return typeof handle === 'function' && (routerOf(handle) !== undefined || unwrapped(handle).name === 'mounted_app');
}

function describeRoutes(router) {
  for (const layer of router.stack) if (layer.route !== undefined) describeRoute(router, layer);
}

// Layers that existed before installation: their mount paths from what the layer still knows. A
// mount whose path express 4 does not keep is an error naming the fix when `strict` (in
// expressRouteLabels(app), for the app's own router); found later (in a router being mounted, or in
// a sub-app's router when a request first enters it) it gets no template instead: its routes are
// labeled as unmatched, with a warning. A wrong prefix would be worse, and neither app.use() nor a
// request may fail because of the labels.
function adoptStack(router, strict = false) {
  describeRoutes(router);
  for (const layer of router.stack) {
    if (layer[kAdopted] || !isMount(layer.handle)) continue;
    let path;
    if (layer.rawPath !== undefined) path = layer.rawPath; // router >= 2.3 (express 5)
    else if (layer.slash === true || (layer.regexp && layer.regexp.fast_slash === true)) path = '/';
    else if (strict) {
      throw new Error(
        `heap-labels: ${WHERE}: ${layer.handle.name || 'a router'} was mounted before ` +
          'expressRouteLabels(app) was called, and express does not keep its mount path: call ' +
          'expressRouteLabels(app) right after creating the app, before mounting routers or sub-apps',
      );
    } else {
      process.emitWarning(
        `heap-labels: ${WHERE}: ${layer.handle.name || 'a router'} was mounted before ` +
          'expressRouteLabels(app) was called, and express does not keep its mount path: the routes ' +
          'below it are labeled as unmatched (call expressRouteLabels(app) before building routers)',
        { code: 'HEAP_LABELS_ROUTE' },
      );
    }
    adopt(router, layer, path, strict);
  }
}

// A layer just added by `router`.use(path, ...): a mount of a router or sub-app gets its paths
// recorded and its handle_request wrapped (path undefined: not known, no template below it).
function adopt(router, layer, path, strict = false) {
  if (layer[kAdopted]) return;
  layer[kAdopted] = true;
  const handle = layer.handle;
  if (!isMount(handle)) return;
  if (routerOf(handle) !== undefined) adoptStack(handle, strict); // populated before installation
  const paths = pathsOf(path);
  if (paths.length === 0 || paths.every((one) => formatPath(one) === '/' || one === '')) return; // at the root
  const options = { sensitive: router.caseSensitive, strict: false, end: false };
  const choice = pathChoice(paths, layer, options);
  const method = typeof layer.handleRequest === 'function' ? 'handleRequest' : 'handle_request';
  const handleRequest = layer[method];
  // While the request is inside the mounted router, its mount is one level down; when the router
  // hands the request back (next, with or without an error), it is restored: noticed from
  // req.next (its mount exit) for the first router mount the request is in, by a wrapper of
  // `next` for a sub-app and below the first.
  const mountsRouter = routerOf(handle) !== undefined;
  layer[method] = function handleMounted(req, res, next) {
    const state = stateOf(req);
    if (state === undefined || state.mount === undefined) return handleRequest.call(this, req, res, next);
    const parent = currentMount(state, req);
    const base = state.base;
    const index = paths.length === 1 ? 0 : choice === undefined ? -1 : choice.pick(consumedBy(req.baseUrl, base));
    if (index < 0) untold(parent, paths);
    state.mount = parent.child(layer, paths, index);
    state.base = req.baseUrl;
    if (mountsRouter && state.exitNext === undefined && req.next === next && parent.router === router) {
      state.exitNext = next;
      state.exitParent = parent;
      state.exitBase = base;
      state.exitEntered = false;
      return handleRequest.call(this, req, res, next);
    }
    if (state.exitNext === undefined) state.exitNext = ENTERING;
    return handleRequest.call(this, req, res, leaveMount(state, parent, base, next));
  };
}

// The `next` of a mount entered while the request has a mount exit (or whose exit req.next cannot
// tell): it restores the parent when the router hands the request back. Made here, not in
// handleMounted, whose variables a closure would otherwise put in a context allocated at every
// call, the calls that need no closure included.
function leaveMount(state, parent, base, next) {
  return function leaveMount(error) {
    state.mount = parent;
    state.base = base;
    if (state.exitNext === ENTERING) state.exitNext = undefined; // a mount that entered no router
    return next(error);
  };
}

// How the request leaves the router mount it entered first, without a function per request: the
// router of a mount (express 4's and the router package's handle()) sets req.next to its own
// `next` when it starts and, when it hands the request back, sets it back to the value it had
// before: the `next` of the router the mount's layer is in, which that router also passed to the
// layer. So once req.next is that function again, the request has left the mount: a request in
// the mount, or in anything below it, has another req.next. This holds only while the router of
// the mount's parent Mount is the one dispatching the request: a mount in a router that has no
// Mount of its own (mounted at the root, or called directly by middleware), a dispatch of a router
// into itself (req.app.handle() from its own middleware) or an app mounted in another app could
// hand the request back to a router whose `next` is another, and req.next would never tell. So a
// request holds one mount exit at most, made only for a mount whose layer belongs to the router of
// its parent Mount, and none once a router dispatched it again or when it runs in an app mounted
// in another (NO_EXIT); any other mount gets the wrapper of `next` (leaveMount), which restores
// the parent when called. The exit is read where the request's Mount matters: currentMount().
// The exit's fields are the request state's (ExpressRequestState: exitNext, exitParent, exitBase,
// exitEntered), not an object per request. exitNext is req.next once the request is back in
// exitParent (whose base was exitBase), or else: undefined (no exit yet, one may be made),
// ENTERING (a Mount was just entered without one, or the app's root: the next handle() of its
// router is its entry, not a dispatch again), NO_EXIT (none for the rest of the request).
// exitEntered: whether the mount's router has been entered (handle_).
const ENTERING = Symbol('entering');
const NO_EXIT = Symbol('no exit');

// The request's Mount now: the Mount it was in before its mount exit's mount, if its router has
// handed it back since.
function currentMount(state, req) {
  const next = state.exitNext;
  if (typeof next === 'function' && req.next === next) {
    state.exitNext = undefined;
    state.mount = state.exitParent;
    state.base = state.exitBase;
  }
  return state.mount;
}

// Whether this handle() of `router` is the request's entry into its current Mount (whose router
// `router` is): the first call since the Mount was entered (handleMounted, enterApp), while req.next
// is still the parent's. Anything else is a call of that router after it handed the request back
// (currentMount() then restores the parent) or a dispatch of it again.
function entersMount(state, router) {
  const next = state.exitNext;
  if (next === ENTERING) state.exitNext = undefined;
  if (state.mount.router !== router) return false;
  if (next === ENTERING) return true;
  if (typeof next !== 'function' || state.exitEntered) return false;
  state.exitEntered = true;
  return true;
}

// The text a mount consumed: what it added to req.baseUrl (undefined if that cannot be told).
function consumedBy(baseUrl, before) {
  if (typeof baseUrl !== 'string' || typeof before !== 'string' || !baseUrl.startsWith(before)) return undefined;
  return baseUrl.slice(before.length);
}

// Starts tracking a request of a labeled app (`state`: its state) at its root Mount; false if the
// request is already tracked (a sub-app whose parent is labeled too keeps the parent's state and
// mount prefix).
function enterApp(state, req, root) {
  if (state.mount !== undefined) return false;
  state.mount = root;
  state.base = typeof req.baseUrl === 'string' ? req.baseUrl : '';
  return true;
}

// How a request's mounts are left (its mount exit), once enterApp() started tracking it in `app`:
// `routerEntered` says whether the app's router already runs (a middleware of it entered the app),
// or is entered next (app.handle()). In an app mounted in another app, req.next does not tell.
function exitsOf(state, app, routerEntered) {
  if (app.parent !== undefined) state.exitNext = NO_EXIT;
  else if (!routerEntered) state.exitNext = ENTERING;
}

// The template of `route`, which the router just matched for `req` (in `mount`, its Mount):
// undefined when it cannot be told (it is then labeled as unmatched).
function routeTemplate(req, mount, route) {
  let at = mount;
  if (at.prefix !== '' && fullUrlRestored(req)) at = at.root;
  let index = 0;
  if (Array.isArray(route.path)) {
    const choice = routeChoices.get(route);
    if (choice !== undefined) index = choice === null ? -1 : choice.pick(pathnameOf(req));
    else if (pathsOf(route.path).length > 1) index = -1; // registered where route() was not seen
    if (index < 0) untold(mount, route.path);
  }
  return at.template(route, index);
}

// A route or mount with several paths, of which the one that matched could not be told: its
// requests are labeled as unmatched, and the app's labeler warns once.
function untold(mount, paths) {
  const list = pathsOf(paths).map(formatPath).join(', ');
  mount.labeler.warnOnce(
    `paths ${list}`,
    `cannot tell which of the paths [${list}] matched a request: its requests are labeled as unmatched`,
  );
}

// Whether middleware inside a mount set req.url back to the full URL: something was trimmed
// (req.baseUrl) but req.url has the pathname of req.originalUrl.
function fullUrlRestored(req) {
  const { baseUrl, url, originalUrl } = req;
  if (typeof baseUrl !== 'string' || baseUrl === '' || typeof url !== 'string' || typeof originalUrl !== 'string') {
    return false;
  }
  if (url === originalUrl) return true;
  if (baseUrl.length + url.length === originalUrl.length) return false; // as trimmed: not rewritten
  const length = pathEnd(url);
  if (length !== pathEnd(originalUrl)) return false;
  for (let i = 0; i < length; i++) if (url.charCodeAt(i) !== originalUrl.charCodeAt(i)) return false;
  return true;
}

function pathEnd(url) {
  const query = url.indexOf('?');
  return query === -1 ? url.length : query;
}

// The pathname the router matched: parseurl's, cached on the request by the router for req.url.
function pathnameOf(req) {
  const parsed = req._parsedUrl;
  const url = req.url;
  if (parsed !== null && typeof parsed === 'object' && parsed._raw === url && typeof parsed.pathname === 'string') {
    return parsed.pathname;
  }
  return typeof url === 'string' ? url.slice(0, pathEnd(url)) : undefined;
}

module.exports = {
  Mount,
  currentMount,
  routerPrototype,
  routerModulePrototype,
  patchRouterPrototype,
  adoptStack,
  enterApp,
  exitsOf,
  routeTemplate,
};
