// heap-labels/koa: route-template labels for koa apps routed by @koa/router.
import type { RouteLabelOptions } from './route-labels.js';

export type { RouteLabelOptions } from './route-labels.js';

/** The parts of a koa application this module uses (a `new Koa()` app satisfies it). */
export interface KoaApplication {
  use(...args: any[]): unknown;
  /** The app's context prototype; its type is the context type `labels()` receives. */
  context: object;
}

/**
 * Labels every request of `app` by the template of the @koa/router route that handles it (with
 * the prefixes of nested routers and of koa-mount); work before routing and unmatched requests get
 * the `unmatched` value. Call it before app.listen()/app.callback(). Returns `app`.
 */
export function koaRouteLabels<App extends KoaApplication>(
  app: App,
  options?: RouteLabelOptions<App['context']>,
): App;
