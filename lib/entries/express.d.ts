// heap-labels/express: route-template labels for express 4 and 5 apps (lib/integrations/express.d.ts
// declares the module, which also serves the automatic route labels).
export { expressRouteLabels, type ExpressApplication, type RouteLabelOptions } from '../integrations/express.js';
