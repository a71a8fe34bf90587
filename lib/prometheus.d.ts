// Type declarations of `heap-labels/prometheus`. prom-client is the app's dependency, not this
// package's: the registry is described by the two methods used.

/** The part of a prom-client `Registry` this adapter uses. */
export interface PrometheusRegistry {
  registerMetric(metric: unknown): void;
  removeSingleMetric(name: string): void;
}

/**
 * Registers gauges `<prefix>heap_bytes`, `<prefix>live_samples`, `<prefix>external_bytes` and
 * `<prefix>external_peak_bytes` (default prefix `heap_labels_`) with the label sets as metric labels
 * (`sets`, default true); with `groups: true` also the group counters of a session started with
 * `groupBy` (`<prefix>group_*`, counters with `_total`; the group's projection as labels,
 * `heap_labels_group="unknown"|"overflow"` for the first two; a label key `heap_labels_group` is escaped). Returns a function that removes them.
 */
export function registerPrometheus(
  registry: PrometheusRegistry,
  options?: { prefix?: string; sets?: boolean; groups?: boolean },
): () => void;

/**
 * The Prometheus label name of a label key: the key itself when it is a valid name
 * (`[A-Za-z_][A-Za-z0-9_]*`) that neither starts with `__` (reserved, e.g. `__name__`) nor with `U__`;
 * otherwise Prometheus 3's "values" escaping: `U__`, then `_` as `__`, letters and digits as they are,
 * other characters as `_<hex code point>_` (`user.id` -> `U__user_2e_id`). Distinct keys get distinct
 * names.
 */
export function labelName(key: string): string;
