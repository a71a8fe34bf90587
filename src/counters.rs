//! Per-label counters without reading a profile: live samples per label set (counted by the
//! capture/release callbacks in `v8_callbacks` on the patched runtime), external bytes and their
//! peak since the previous read. Cost: one scan of the registry's counter table
//! (`LabelRegistry::fill_counter_rows`, into buffers lib/ keeps), no call tree, no V8 profile.

use heap_labels_core::CounterColumns;
use napi::bindgen_prelude::{BigInt64Array, Float64Array, Uint32Array};
use napi::Env;
use napi_derive::napi;

use crate::bridge::ffi;
use crate::error::{self, Error};
use crate::js_profile::NativeLabelSet;
use crate::state::isolate_state;

/// The result of a `labelCounters()` read besides its rows, which go into the caller's buffers:
/// one per label set with a live sample or external bytes (the overflow set, id 0, included).
#[napi(object)]
pub struct NativeCounters {
    /// Rows written into the buffers.
    pub rows: u32,
    /// 0 when the read fit; otherwise the buffers were too short for the rows there could be,
    /// nothing was read (no peak period ended), and this is the length they need.
    pub rows_needed: u32,
    /// Mean bytes between samples of the running session; 0 when none runs.
    pub sample_interval: f64,
    /// Whether samples are counted per label set (the patched runtime's capture callback runs).
    pub per_set_samples: bool,
    /// Live unlabeled samples (0 on stock runtimes, where samples are not counted).
    pub unlabeled_samples: f64,
    /// Estimated heap bytes of the unlabeled samples (stock runtimes: V8's used heap size).
    pub unlabeled_heap_bytes: f64,
    pub unlabeled_external_bytes: f64,
    pub unlabeled_external_peak_bytes: f64,
}

/// The bytes a typed array's elements occupy.
fn byte_range<T>(elements: &[T]) -> std::ops::Range<usize> {
    let start = elements.as_ptr() as usize;
    start..start + std::mem::size_of_val(elements)
}

/// Whether two of the (non-empty) ranges share a byte.
fn overlapping(ranges: &[std::ops::Range<usize>]) -> bool {
    ranges.iter().enumerate().any(|(i, a)| {
        ranges[i + 1..]
            .iter()
            .any(|b| !a.is_empty() && !b.is_empty() && a.start < b.end && b.start < a.end)
    })
}

fn sample_labels_available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| ffi::patched_api_status().sample_labels)
}

/// Writes the
/// rows (a set's key, `ids`/`generations`, then its counters) into the five (distinct) arrays,
/// which lib/ keeps from read to read, so a read allocates nothing per row; when they are too
/// short it reads nothing and says how long they must be (`rowsNeeded`).
#[napi]
pub fn label_counters(
    env: Env,
    mut ids: Uint32Array,
    mut generations: Float64Array,
    mut samples: Float64Array,
    mut external_bytes: Float64Array,
    mut external_peak_bytes: Float64Array,
) -> napi::Result<NativeCounters> {
    let mut run = || -> error::Result<NativeCounters> {
        let state = isolate_state(&env)?;
        let ranges = [
            byte_range(&ids),
            byte_range(&generations),
            byte_range(&samples),
            byte_range(&external_bytes),
            byte_range(&external_peak_bytes),
        ];
        if overlapping(&ranges) {
            return Err(Error::Native(
                "labelCounters: the arrays must not share memory".into(),
            ));
        }
        // SAFETY: the arrays do not overlap (checked above), so the `&mut` slices do not alias; no
        // JS runs until this call returns, and lib/ makes them on plain (not shared) ArrayBuffers,
        // so nothing else reads or writes them meanwhile. The slices do not outlive the call.
        let (ids, generations, samples, external_bytes, external_peak_bytes) = unsafe {
            (
                ids.as_mut(),
                generations.as_mut(),
                samples.as_mut(),
                external_bytes.as_mut(),
                external_peak_bytes.as_mut(),
            )
        };
        let interval = state.session.map_or(0, |s| s.options.sample_interval);
        // A session runs (its interval is not 0) on a runtime whose capture callback counts samples.
        let per_set = interval != 0 && sample_labels_available();
        let columns = CounterColumns {
            ids,
            generations,
            samples,
            external_bytes,
            external_peak_bytes,
        };
        let rows = match state.registry.fill_counter_rows(columns) {
            Ok(rows) => rows,
            Err(needed) => {
                return Ok(NativeCounters {
                    rows: 0,
                    rows_needed: u32::try_from(needed).unwrap_or(u32::MAX),
                    sample_interval: interval as f64,
                    per_set_samples: per_set,
                    unlabeled_samples: 0.0,
                    unlabeled_heap_bytes: 0.0,
                    unlabeled_external_bytes: 0.0,
                    unlabeled_external_peak_bytes: 0.0,
                })
            }
        };
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
            // Rows fit in a u32: they are at most the registry's sets (`maxLabelSets` <= u32::MAX).
            rows: rows as u32,
            rows_needed: 0,
            sample_interval: interval as f64,
            per_set_samples: per_set,
            unlabeled_samples,
            unlabeled_heap_bytes,
            unlabeled_external_bytes: unlabeled_external as f64,
            unlabeled_external_peak_bytes: unlabeled_peak as f64,
        })
    };
    run().map_err(|e| e.throw(&env))
}

/// The pairs of the sets with these ids that
/// are still interned (ids of pruned sets are left out; 0 is the overflow set).
#[napi]
pub fn label_set_pairs(env: Env, ids: Uint32Array) -> napi::Result<Vec<NativeLabelSet>> {
    let run = || -> error::Result<Vec<NativeLabelSet>> {
        let state = isolate_state(&env)?;
        Ok(ids
            .iter()
            .filter_map(|&id| state.registry.by_id(id))
            .map(|set| NativeLabelSet::of(&set))
            .collect())
    };
    run().map_err(|e: Error| e.throw(&env))
}

/// The result of a `groupStats()` read besides its rows, which go into the caller's buffer.
#[napi(object)]
pub struct NativeGroupStats {
    /// Rows written (one per group: unknown, overflow, then the projections).
    pub groups: u32,
    /// 0 when the read fit; otherwise nothing was read (no peak window closed), and this is the
    /// number of rows the buffer needs room for.
    pub rows_needed: u32,
    pub sample_interval: f64,
    /// Peak windows closed by advancing reads since the session started.
    pub peak_window_id: f64,
    /// Label sets put in the overflow group.
    pub overflow_count: f64,
    /// The session read (the running one's id when asked for session 0).
    pub session: u32,
}

/// The group counters of the running session `session` (0: whichever
/// runs)
/// (`GROUP_ROW_WIDTH` counters per group, in `GroupTable::read`'s order) into `rows`, which lib/
/// keeps from read to read; `null` when the session has no groupBy. A copy of at most maxGroups + 2
/// rows: the counters are kept at capture, so the number of label sets does not matter.
#[napi]
pub fn group_stats(
    env: Env,
    session: u32,
    advance_peak_window: bool,
    mut rows: BigInt64Array,
) -> napi::Result<Option<NativeGroupStats>> {
    let mut run = || -> error::Result<Option<NativeGroupStats>> {
        let state = isolate_state(&env)?;
        let interval = state.session.map_or(0, |s| s.options.sample_interval);
        let running = state.session.map_or(0, |s| s.id);
        // SAFETY: no JS runs until this call returns, and lib/ makes the array on a plain (not
        // shared) ArrayBuffer, so nothing else touches it while the slice lives.
        let out = unsafe { rows.as_mut() };
        let read = crate::session::group_stats(state, session, advance_peak_window, out)?;
        Ok(match read {
            Ok(None) => None,
            Ok(Some(read)) => Some(NativeGroupStats {
                groups: read.groups as u32,
                rows_needed: 0,
                sample_interval: interval as f64,
                peak_window_id: read.peak_window_id as f64,
                overflow_count: read.overflow_count as f64,
                session: running,
            }),
            Err(needed) => Some(NativeGroupStats {
                groups: 0,
                rows_needed: needed as u32,
                sample_interval: interval as f64,
                peak_window_id: 0.0,
                overflow_count: 0.0,
                session: running,
            }),
        })
    };
    run().map_err(|e| e.throw(&env))
}

/// A group's labels: its projection, keys in groupBy's order.
#[napi(object)]
pub struct NativeGroupLabels {
    pub keys: Vec<String>,
    pub values: Vec<String>,
}

/// The labels of the running session's groups from position `from` on, in `groupStats` order
/// (the unknown and overflow groups, 0 and 1, have none).
#[napi]
pub fn group_labels(env: Env, session: u32, from: u32) -> napi::Result<Vec<NativeGroupLabels>> {
    let run = || -> error::Result<Vec<NativeGroupLabels>> {
        let state = isolate_state(&env)?;
        if state.session.map(|s| s.id) != Some(session) {
            return Err(Error::SessionNotRunning(session));
        }
        let labels = state
            .registry
            .groups()
            .labels_from(from as usize)
            .unwrap_or_default();
        Ok(labels
            .into_iter()
            .map(|pairs| {
                let (keys, values) = pairs.into_iter().unzip();
                NativeGroupLabels { keys, values }
            })
            .collect())
    };
    run().map_err(|e| e.throw(&env))
}
