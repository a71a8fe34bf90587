// heap-labels/express: route-template labels for express 4 and 5 apps.
import type { AutomaticRouteLabels, RouteLabelOptions } from './route-labels.js';

export type { RouteLabelOptions } from './route-labels.js';

/** The parts of an express application this module uses (an `express()` app satisfies it). */
export interface ExpressApplication {
  (req: any, res: any, next?: any): any;
  use(...args: any[]): unknown;
  /** The app's request prototype; its type is the request type `labels()` receives. */
  request: object;
}

/**
 * Labels every request of `app` by its route template, including the mount paths of routers and
 * sub-apps ('/orgs/:org/members/:member'; a route with several paths is named by the one that
 * matched); work before routing and unmatched requests get the `unmatched` value. Call it right after creating the app, before mounting routers. Returns `app`.
 */
export function expressRouteLabels<App extends ExpressApplication>(
  app: App,
  options?: RouteLabelOptions<App['request']>,
): App;

/**
 * The automatic route labels of an express module (4 or 5; lib/instrument/express.js): every app it
 * creates from now on is labeled with `automatic.labeler` while `automatic.on`. Idempotent per
 * module. Not part of heap-labels/express (lib/entries/express.d.ts).
 */
export function instrumentExpress(express: unknown, automatic: AutomaticRouteLabels): void;
