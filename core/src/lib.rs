//! `heap-labels-core`: the pure-Rust part of heap-labels (label-aware heap profiling for Node.js).
//!
//! Nothing here knows about V8 or N-API. The crate provides:
//!
//! - [`labels`]: [`LabelSet`] and the per-isolate [`LabelRegistry`] that interns them, plus the
//!   word helpers that carry a set across the V8 boundary as one strong reference; the sets'
//!   live-sample and external-byte counters sit in one dense table per registry (`set_counters`),
//!   read by [`LabelRegistry::fill_counter_rows`];
//! - [`allocations`]: [`DeadSampleTotals`], allocated bytes per (site, label set) as samples die;
//! - [`external`]: [`ExternalCounters`], lock-free accounting of ArrayBuffer bytes per label set;
//! - [`group_counters`]: [`GroupTable`], a session's counters per group of label sets (`groupBy`);
//! - [`block_words`]: [`BlockWords`], the lock-free block address -> label word table beside it;
//! - [`estimate`]: V8's sample scaling (what one sample stands for);
//! - [`profile`]: the heap [`Profile`] model and
//!   aggregation by label ([`Profile::by_label`]);
//! - [`pprof`]: gzip-compressed `profile.proto` output ([`pprof::encode`]);
//! - [`otlp`]: OpenTelemetry profiles (`ProfilesData`), translated from the pprof message;
//! - [`heapprofile`]: Chrome DevTools `.heapprofile` JSON ([`heapprofile::to_string`]);
//! - [`retainers`]: what retains each label group's sampled objects, from the retaining chains of a
//!   heap snapshot ([`retainers::by_label`]);
//! - [`summary`]: the text per-label summary of a dump; [`dump`]: dump file names, atomic writes
//!   and retention.
//!
//! See `docs/architecture.md` for how the addon uses it.

pub mod allocations;
pub mod block_words;
pub mod callback_guard;
pub mod dump;
pub mod error;
pub mod estimate;
pub mod external;
pub mod group_counters;
pub mod heapprofile;
pub mod labeled_snapshot;
pub mod labels;
pub mod otlp;
pub mod pprof;
pub mod profile;
pub mod retainers;
mod set_counters;
pub mod summary;
pub(crate) mod sync;
#[cfg(test)]
mod test_support;

pub use allocations::{
    dead_sample_estimate, AllocatedGroup, AllocationsRead, DeadSampleTotals, DeadSnapshot,
    DEFAULT_MAX_GROUPS, OTHER_SITES_NODE,
};
pub use block_words::BlockWords;
pub use callback_guard::InV8Callback;
pub use error::{ErrorClass, LabelError, LabelRule, Result};
pub use external::ExternalCounters;
pub use group_counters::{
    GroupProjection, GroupRead, GroupTable, DEFAULT_MAX_GROUPS as DEFAULT_MAX_GROUP_COUNT,
    GROUP_ROW_WIDTH, MAX_GROUPS, MAX_GROUP_BY_KEYS, MAX_GROUP_KEY_BYTES, MAX_GROUP_VALUE_BYTES,
};
pub use labels::{
    is_reserved_key, CounterColumns, Interned, LabelRegistry, LabelSet, PendingLabels, RequestCell,
    CELL_TAG, DEFAULT_MAX_SETS, MAX_BINDINGS, MAX_ID, MAX_KEY_BYTES, MAX_LABELS, MAX_VALUE_BYTES,
    OVERFLOW_ID, OVERFLOW_KEY, OVERFLOW_VALUE, PAIR_CHECKS, PRUNE_MIN_CREATED, PRUNE_OVERFLOWED,
    RESERVED_KEYS, RESERVED_KEY_PREFIX,
};
pub use profile::{
    Allocations, CallFrame, GroupLabels, LabelGroup, NodeIndex, Profile, ProfileNode, Sample,
};
