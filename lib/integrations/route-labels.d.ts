// Options shared by the framework integrations (heap-labels/express, /fastify, /koa, /http).
import type { Labels } from '../index.js';

export interface RouteLabelOptions<Request> {
  /** Label key of the route template; default 'route'. */
  key?: string;
  /**
   * Label value of requests no route matches (404s) and, in express and koa, of work done before
   * routing; default '(unmatched)'. The bounded bucket: raw URLs never become label values.
   */
  unmatched?: string;
  /**
   * Extra labels of a request (a tenant from a header, say), called once per request. The result
   * is validated like any label set (a TypeError/RangeError naming the key fails the request); it
   * must not contain `key`. A frozen object returned again is validated only once.
   */
  labels?(request: Request): Labels | null | undefined;
  /** Most distinct route templates with their own value; later ones get `unmatched`. Default 1000. */
  maxRoutes?: number;
}

/**
 * One integration's labeler (route-labels.js): the interned label object per route template, the
 * per-method unmatched buckets, the `maxRoutes` cap, and the entry of a request's labels. Shared by
 * heap-labels/express, /fastify, /koa, /http and the automatic route labels.
 */
export interface RouteLabeler<Request = unknown> {
  readonly where: string;
  readonly key: string;
  readonly unmatched: string;
  readonly maxRoutes: number;
  /** The interned extra labels of a request (the `labels` option), or undefined; throws on bad ones. */
  extrasOf(request: Request): Labels | undefined;
  /** `unmatched` and the method ('(unmatched) GET') for node:http's methods, `unmatched` otherwise. */
  bucketValue(method: string | undefined): string;
  /** The frozen labels of `template` (undefined: the bucket of `method`) with `extras`; throws on a bad template. */
  labelsFor(template: string | undefined, extras: Labels | undefined, method?: string): Labels;
  /** Whether `value` gets (or has) its own label value: at most `maxRoutes` templates do. */
  admits(value: string): boolean;
  /** Enters the labels of `template` for the rest of the async context and as the request's own. */
  enter(request: object, template: string | undefined, extras?: Labels): Labels;
  /** Starts `request` under a request holder bound to its method's bucket; returns the bucket's labels. */
  startRequest(request: object, extras?: Labels, state?: object): Labels;
  /** Makes `labels` (made by this labeler) the labels of `request`; returns them. */
  enterLabels(request: object, labels: Labels, state?: object): Labels;
  /** As labelsFor() for a framework's route: a template that cannot be a label value gets the bucket. */
  routeLabels(template: string | undefined, extras: Labels | undefined, method?: string): Labels;
  /** As enter(), with routeLabels(). */
  enterRoute(request: object, template: string | undefined, extras?: Labels): Labels;
  /** Emits one warning (code HEAP_LABELS_ROUTE) per `what`. */
  warnOnce(what: string, message: string): void;
}

/**
 * What the integrations' automatic hooks read (their instrument functions; lib/instrument/index.js
 * makes it, one per realm, and switches it on and off with the agent).
 */
export interface AutomaticRouteLabels {
  /** Whether to label now (the agent runs with option `routes`). */
  on: boolean;
  labeler: RouteLabeler<any>;
  /** Reports a hook that threw (the request goes unlabeled); set while instrumentation runs. */
  failed: ((error: unknown) => void) | undefined;
  /** An express app the hooks labeled (its server is a framework's, not a plain one). */
  onApp(app: unknown): void;
  /** A koa request handler the hooks labeled. */
  onListener(listener: unknown): void;
}

/** A labeler for `options` (validated: a TypeError/RangeError names the bad one); `where` names the caller in messages. */
export function createRouteLabeler<Request = unknown>(
  options: RouteLabelOptions<Request> | undefined | null,
  where: string,
  /** The templates come from the application's route table (a framework's labeler): their label holders are kept for the process. */
  routeTable?: boolean,
): RouteLabeler<Request>;

/** The template of one route or mount path as written: a string itself, a RegExp its literal; undefined otherwise. */
export function formatPath(path: unknown): string | undefined;

/**
 * `path` (as written) mounted under the template `prefix` ('' at the root): '/api' + '/users/:id';
 * after a prefix that ends in a RegExp literal (`prefixIsPattern`) the path is appended as is.
 * Undefined when either cannot be told.
 */
export function joinPath(prefix: string | undefined, path: unknown, prefixIsPattern?: boolean): string | undefined;
