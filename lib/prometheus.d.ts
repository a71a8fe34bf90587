// Type declarations of `heap-labels/prometheus`. prom-client is the app's dependency, not this
// package's: the registry is described by the two methods used.

/** The part of a prom-client `Registry` this adapter uses. */
export interface PrometheusRegistry {
  registerMetric(metric: unknown): void;
  removeSingleMetric(name: string): void;
}

/**
 * Registers gauges `<prefix>heap_bytes`, `<prefix>live_samples`, `<prefix>external_bytes` and
 * `<prefix>external_peak_bytes` (default prefix `heap_labels_`) with the label sets as metric labels.
 * Returns a function that removes them.
 */
export function registerPrometheus(registry: PrometheusRegistry, options?: { prefix?: string }): () => void;
