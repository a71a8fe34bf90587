// Type declarations of `heap-labels/endpoint`: the heap profile over HTTP (Go's /debug/pprof/heap).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Agent } from './index';

export interface HeapProfileHandlerOptions {
  /** The agent whose session is served (default: the running agent of this thread). */
  agent?: Agent;
  /** Require `Authorization: Bearer <token>` (at least 16 characters). */
  token?: string;
  /**
   * `'heap'` (default) or `'allocs'`: Go's allocs profile, the same data with `alloc_space` the
   * default sample type. Allocated figures count from the agent's start, as in Go.
   */
  profile?: 'heap' | 'allocs';
}

/**
 * `(req, res)` handler serving the gzip-compressed pprof (`?gc=1`: full GC first; `?debug=1`: the text
 * per-label table; `?seconds=N`, N in 1..3600: the difference between a profile now and one N
 * seconds later, as Go's net/http/pprof serves it). Mount it for node:http or express, e.g.
 * `app.get('/debug/pprof/heap', handler)`.
 * Concurrent requests share one copy of the profile; refused ones get 429 (`?gc=1` more than once
 * per 10 s) or 503 (more than 64 waiting) with `Retry-After`. A profile's response carries
 * `X-Heap-Labels-Pid` (the serving process's pid). The returned promise never rejects.
 */
export function createHeapProfileHandler(
  options?: HeapProfileHandlerOptions,
): (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** Fastify route handler: `fastify.get('/debug/pprof/heap', fastifyHeapProfile())`. */
export function fastifyHeapProfile(
  options?: HeapProfileHandlerOptions,
): (request: { raw: IncomingMessage }, reply: { raw: ServerResponse; hijack(): void }) => Promise<void>;

/** Koa middleware answering `path` (default `/debug/pprof/heap`): `app.use(koaHeapProfile())`. */
export function koaHeapProfile(
  options?: HeapProfileHandlerOptions & { path?: string },
): (
  ctx: { path: string; req: IncomingMessage; res: ServerResponse; respond?: boolean },
  next: () => Promise<unknown>,
) => Promise<unknown>;

/** `/debug/pprof/heap`. */
export const HEAP_PATH: string;
/** `/debug/pprof/allocs`. */
export const ALLOCS_PATH: string;
