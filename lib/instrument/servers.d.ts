// Which servers get the node:http fallback label and which an instrumented framework serves
// (servers.js). Internal to the package.

export const OWN: 'own';
export const FRAMEWORK: 'framework';
export const PLAIN: 'plain';
/** A framework's server whose listener is an express app, or what koa's app.callback() returns. */
export const EXPRESS: 'express';
export const KOA: 'koa';
export type ServerKind = typeof OWN | typeof FRAMEWORK | typeof PLAIN | typeof EXPRESS | typeof KOA;

/** The server's kind, decided at its first request and kept. */
export function kindOf(server: object): ServerKind;
/** The agent's own endpoint server: its requests get no route label. */
export function markOwnServer(server: object): void;
/** A server an instrumented framework serves (fastify's instance.server). */
export function markFrameworkServer(server: object | null | undefined): void;
/** A request listener a framework made (an express app: EXPRESS; what koa's app.callback() returns: KOA). */
export function markFrameworkListener(listener: unknown, kind: typeof EXPRESS | typeof KOA): void;
/** Records that `request` got the fallback label as a request of `server`. */
export function noteFallback(request: object, server: object): void;
/**
 * An integration labeled `request` (`state`: its RequestState, lib/integrations/request-context.js):
 * a server taken for a plain one is a framework's after all.
 */
export function claim(request: object, state: { mount?: object }): void;
