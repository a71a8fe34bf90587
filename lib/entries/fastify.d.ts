// heap-labels/fastify: a fastify plugin with route-template labels (lib/integrations/fastify.d.ts
// declares the module, which also serves the automatic route labels).
export { fastifyRouteLabels, type RouteLabelOptions } from '../integrations/fastify.js';
