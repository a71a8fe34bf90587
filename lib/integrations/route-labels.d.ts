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
