// heap-labels/koa: route-template labels for koa apps routed by @koa/router.
import type { AutomaticRouteLabels, RouteLabelOptions } from './route-labels.js';

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

/**
 * The automatic route labels of a koa Application class (koa 2 or 3; lib/instrument/koa.js): each
 * app installs its hooks with `automatic.labeler` when its callback() is first called. Idempotent
 * per class. Not part of heap-labels/koa (lib/entries/koa.d.ts).
 */
export function instrumentKoa(Application: unknown, automatic: AutomaticRouteLabels): void;
