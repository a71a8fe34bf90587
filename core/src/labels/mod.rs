//! Label sets and the per-isolate registry that interns them.
//!
//! A [`LabelSet`] is an immutable list of `(key, value)` string pairs sorted by key, with unique keys,
//! plus an atomic counter of the external (ArrayBuffer) bytes charged to it. The [`LabelRegistry`]
//! makes equal sets the same `Arc<LabelSet>` and gives each a compact id, unique among the sets it
//! holds (the id of a pruned set is given to a later one, so ids never run out).
//!
//! Across the V8 boundary a set travels as an opaque *word*: `Arc::into_raw(set) as usize`. Every word
//! owns one strong reference. The word helpers ([`LabelSet::into_word`], [`LabelSet::retain_word`],
//! [`LabelSet::release_word`], ...) are the only code here that runs inside V8 (allocation path, GC weak
//! callbacks, ArrayBuffer sweeper threads): they are a single atomic operation each and never allocate
//! or lock.
//!
//! One concept per file: `limits.rs` (what a set may hold), `set.rs`
//! ([`LabelSet`]), `word.rs` (the unsafe word API, the only part that runs inside V8),
//! `cell.rs` ([`RequestCell`], a request's late-bound labels), `validation.rs` (the checks before
//! interning and the key order),
//! `hasher.rs` (the registry maps' hasher), `registry.rs`
//! ([`LabelRegistry`]) and `counter_rows.rs` (the per-label counters read).

mod cell;
mod counter_rows;
mod hasher;
mod limits;
mod registry;
mod set;
mod validation;
mod word;

pub use cell::{RequestCell, CELL_TAG, MAX_BINDINGS};
pub use counter_rows::CounterColumns;
pub use limits::{
    ReservedKey, DEFAULT_MAX_SETS, MAX_ID, MAX_KEY_BYTES, MAX_LABELS, MAX_VALUE_BYTES, OVERFLOW_ID,
    OVERFLOW_KEY, OVERFLOW_VALUE, PRUNE_MIN_CREATED, PRUNE_OVERFLOWED, RESERVED_KEYS,
    RESERVED_KEY_PREFIX,
};
pub use registry::{Interned, LabelRegistry, PendingLabels};
pub use set::LabelSet;
pub use validation::{is_reserved_key, key_order, PAIR_CHECKS};
pub use word::DeadSampleLabels;

/// Owned pairs from string literals, for the tests of every file here.
#[cfg(test)]
fn p(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
