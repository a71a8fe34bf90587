// The route label value of a request to a plain node:http/https/http2 server (fallback-route.js).

/** Segments kept before the rest of a path becomes '/*'. */
export const MAX_SEGMENTS: number;

/** A request target's path with identifier-like segments replaced: '/users/1234?x' -> '/users/:int'. */
export function normalisePath(target: string | undefined): string;

/** Method and normalised path: ('GET', '/users/1234') -> 'GET /users/:int'; unknown methods '_OTHER'. */
export function fallbackRoute(method: string | undefined, target: string | undefined): string;
