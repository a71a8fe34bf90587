// heap-labels/fastify: a fastify plugin with route-template labels.
import type { FastifyPluginCallback, FastifyRequest } from 'fastify';
import type { AutomaticRouteLabels, RouteLabelOptions } from './route-labels.js';

export type { RouteLabelOptions } from './route-labels.js';

/**
 * Labels every request by its route template (request.routeOptions.url, with plugin prefixes) from
 * an onRequest hook; 404s get the `unmatched` value. Not encapsulated: register it on the root
 * instance. `fastify.register(fastifyRouteLabels, options)`.
 */
export const fastifyRouteLabels: FastifyPluginCallback<RouteLabelOptions<FastifyRequest>>;

/**
 * The plugin the automatic route labels register on every new fastify instance
 * (lib/instrument/fastify.js): the hook with `automatic.labeler`, labeling while `automatic.on`.
 * Not part of heap-labels/fastify (lib/entries/fastify.d.ts).
 */
export function fastifyAutomaticPlugin(automatic: AutomaticRouteLabels): FastifyPluginCallback;
