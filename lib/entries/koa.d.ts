// heap-labels/koa: route-template labels for koa apps routed by @koa/router (lib/integrations/koa.d.ts
// declares the module, which also serves the automatic route labels).
export { koaRouteLabels, type KoaApplication, type RouteLabelOptions } from '../integrations/koa.js';
