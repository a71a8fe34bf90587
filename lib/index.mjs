// ESM entry point: the same single instance as the CommonJS module (one AsyncLocalStorage per
// isolate, whichever way the package is imported).
import heapLabels from './index.js';

export const {
  withHeapProfileLabels,
  setHeapProfileLabels,
  getHeapProfileLabels,
  capabilities,
  startHeapProfile,
  stats,
  startAgent,
  currentAgent,
  labelCounters,
  diffProfiles,
  limits,
} = heapLabels;

export default heapLabels;
