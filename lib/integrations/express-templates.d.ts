// The route template of an express 4 or 5 request (express-templates.js): where the request is in
// its app's tree of mounted routers and sub-apps, and which path of the route matched. Internal to
// heap-labels/express and the automatic route labels.
import type { RouteLabeler } from './route-labels.js';
import type { RequestState } from './request-context.js';

/** A place in an app's tree of mounts: its template prefix, its router, the templates of the routes below it. */
export class Mount {
  /** `prefix` undefined: not told (every route below is labeled as unmatched); `patternEnd`: it ends in a RegExp literal. */
  constructor(labeler: RouteLabeler<any>, prefix: string | undefined, patternEnd: boolean, router: object | undefined, parent?: Mount);
  readonly labeler: RouteLabeler<any>;
  readonly prefix: string | undefined;
  readonly patternEnd: boolean;
  router: object | undefined;
  readonly parent: Mount | undefined;
  readonly root: Mount;
  /** The Mount below this one through `layer` mounted at `paths[index]` (index -1: not told). */
  child(layer: { handle: unknown }, paths: unknown[], index: number): Mount;
  /** The template of `route` matched at its path number `index` (undefined: not told). */
  template(route: { path: unknown }, index: number): string | undefined;
}

/** express 4's `proto` or express 5's Router.prototype, found from a router; throws for anything else. */
export function routerPrototype(router: object): object;

/** The same from the module's Router export (express.Router). */
export function routerModulePrototype(Router: unknown): object;

/** Wraps the router prototype's use(), route() and handle() (once per prototype). */
export function patchRouterPrototype(proto: object): void;

/** Adopts the layers a router had before installation; `strict`: a mount path express 4 lost is an error naming the fix. */
export function adoptStack(router: { stack: unknown[] }, strict?: boolean): void;

/** Starts tracking a request of a labeled app at its root Mount; false if it is tracked already. */
export function enterApp(state: RequestState, req: { baseUrl?: unknown }, root: Mount): boolean;

/** How a request's mounts are left, once enterApp() started tracking it in `app`: `routerEntered` says whether the app's router already runs. */
export function exitsOf(state: RequestState, app: { parent?: unknown }, routerEntered: boolean): void;

/** The request's Mount now: the one it was in before the first router mount it entered, once that mount's router has handed it back (req.next tells). */
export function currentMount(state: RequestState, req: { next?: unknown }): Mount;

/** The template of `route`, just matched for `req` in `mount`; undefined when it cannot be told. */
export function routeTemplate(req: object, mount: Mount, route: { path: unknown }): string | undefined;
