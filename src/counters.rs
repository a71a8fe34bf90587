//! Per-label counters without reading a profile: live samples per label set (counted by the
//! capture/release callbacks in `v8_callbacks` on the patched runtime), external bytes and their
//! peak since the previous read. Cost: one scan of the registry's counter table
//! (`LabelRegistry::counter_rows`), no call tree, no V8 profile.

use napi::bindgen_prelude::{Float64Array, Uint32Array};
use napi::Env;
use napi_derive::napi;

use crate::bridge::ffi;
use crate::error::{self, Error};
use crate::js_profile::NativeLabelSet;
use crate::state::isolate_state;

/// Rows of `labelCounters()`: one per label set with a live sample or external bytes (the
/// overflow set, id 0, included), as columns.
#[napi(object)]
pub struct NativeCounters {
    /// Mean bytes between samples of the running session; 0 when none runs.
    pub sample_interval: f64,
    /// Whether samples are counted per label set (the patched runtime's capture callback runs).
    pub per_set_samples: bool,
    pub ids: Uint32Array,
    pub samples: Float64Array,
    pub external_bytes: Float64Array,
    pub external_peak_bytes: Float64Array,
    /// Live unlabeled samples (0 on stock runtimes, where samples are not counted).
    pub unlabeled_samples: f64,
    /// Estimated heap bytes of the unlabeled samples (stock runtimes: V8's used heap size).
    pub unlabeled_heap_bytes: f64,
    pub unlabeled_external_bytes: f64,
    pub unlabeled_external_peak_bytes: f64,
    /// The registry's count of reused ids (`LabelRegistry::id_reuses`): lib/ drops its id -> labels
    /// cache when it changes, since an id may then name another set.
    pub id_reuses: f64,
}

fn sample_labels_available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| ffi::patched_api_status().sample_labels)
}

/// Signature: `() => NativeCounters`.
#[napi]
pub fn label_counters(env: Env) -> napi::Result<NativeCounters> {
    let run = || -> error::Result<NativeCounters> {
        let state = isolate_state(&env)?;
        let interval = state.session.map_or(0, |s| s.options.sample_interval);
        // A session runs (its interval is not 0) on a runtime whose capture callback counts samples.
        let per_set = interval != 0 && sample_labels_available();
        let rows = state.registry.counter_rows();
        let (unlabeled_samples, unlabeled_heap_bytes) = if per_set {
            let live = state.ops.unlabeled.live_samples() as f64;
            (live, live * interval as f64)
        } else if interval != 0 {
            // Stock runtime: no capture callback, so samples cannot be counted without reading a
            // profile (V8 builds its call tree for that). The unlabeled group is the whole heap:
            // V8's used heap size, and no sample count.
            (0.0, state.v8.used_heap_size() as f64)
        } else {
            (0.0, 0.0)
        };
        let (unlabeled_external, unlabeled_peak) = if state.counters.counts_per_set() {
            let current = state.counters.unlabeled_bytes();
            (current, state.counters.take_unlabeled_peak())
        } else {
            let total = i64::try_from(state.v8.external_memory()).unwrap_or(i64::MAX);
            (total, total)
        };
        Ok(NativeCounters {
            sample_interval: interval as f64,
            per_set_samples: per_set,
            ids: Uint32Array::new(rows.ids),
            samples: Float64Array::new(rows.samples),
            external_bytes: Float64Array::new(rows.external_bytes),
            external_peak_bytes: Float64Array::new(rows.external_peak_bytes),
            unlabeled_samples,
            unlabeled_heap_bytes,
            unlabeled_external_bytes: unlabeled_external as f64,
            unlabeled_external_peak_bytes: unlabeled_peak as f64,
            id_reuses: state.registry.id_reuses() as f64,
        })
    };
    run().map_err(|e| e.throw(&env))
}

/// Signature: `(ids: Uint32Array) => NativeLabelSet[]` - the pairs of the sets with these ids that
/// are still interned (ids of pruned sets are left out; 0 is the overflow set).
#[napi]
pub fn label_set_pairs(env: Env, ids: Uint32Array) -> napi::Result<Vec<NativeLabelSet>> {
    let run = || -> error::Result<Vec<NativeLabelSet>> {
        let state = isolate_state(&env)?;
        Ok(ids
            .iter()
            .filter_map(|&id| state.registry.by_id(id))
            .map(|set| {
                let (keys, values) = set
                    .pairs()
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .unzip();
                NativeLabelSet {
                    id: set.id(),
                    keys,
                    values,
                }
            })
            .collect())
    };
    run().map_err(|e: Error| e.throw(&env))
}
