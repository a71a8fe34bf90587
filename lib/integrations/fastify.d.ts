// heap-labels/fastify: a fastify plugin with route-template labels.
import type { FastifyPluginCallback, FastifyRequest } from 'fastify';
import type { RouteLabelOptions } from './route-labels.js';

export type { RouteLabelOptions } from './route-labels.js';

/**
 * Labels every request by its route template (request.routeOptions.url, with plugin prefixes) from
 * an onRequest hook; 404s get the `unmatched` value. Not encapsulated: register it on the root
 * instance. `fastify.register(fastifyRouteLabels, options)`.
 */
export const fastifyRouteLabels: FastifyPluginCallback<RouteLabelOptions<FastifyRequest>>;
