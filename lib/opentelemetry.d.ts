// Type declarations of `heap-labels/opentelemetry`. @opentelemetry/api is the app's dependency, not
// this package's: the meter is described by the methods used.

/** The part of an OpenTelemetry `Meter` this adapter uses. */
export interface OpenTelemetryMeter {
  createObservableGauge(name: string, options?: { description?: string; unit?: string }): object;
  /** Used with `groups: true`. */
  createObservableCounter?(name: string, options?: { description?: string; unit?: string }): object;
  addBatchObservableCallback(callback: (result: any) => void, observables: object[]): void;
  removeBatchObservableCallback(callback: (result: any) => void, observables: object[]): void;
}

/**
 * Creates observable gauges `<prefix>heap_bytes`, `<prefix>live_samples`, `<prefix>external_bytes`
 * and `<prefix>external_peak_bytes` (default prefix `heap_labels.`) with the label sets as attributes
 * (`sets`, default true); with `groups: true` also the group counters of a session started with
 * `groupBy` (`<prefix>group_*`: gauges, and observable counters for what is counted since the
 * session started; the group's projection as attributes). Returns a function that removes the callback.
 */
export function registerOpenTelemetry(
  meter: OpenTelemetryMeter,
  options?: { prefix?: string; sets?: boolean; groups?: boolean },
): () => void;
