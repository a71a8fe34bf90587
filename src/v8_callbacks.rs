//! Everything V8 calls into Rust, through cpp/ and the bridge's `extern "Rust"` block.
//!
//! The contract, for every function here:
//! - It may run inside V8's allocation path (GC forbidden), inside GC weak processing, at profiler
//!   stop or isolate teardown, and, for the ArrayBuffer frees, on any thread (V8's sweeper
//!   threads). So it never calls into V8 or JS, never allocates on the JS heap and never takes a
//!   lock that a caller could hold across a GC. Atomics on label sets and their counter slots,
//!   plain heap frees, and (dead samples) one mutex that is never held across a call into V8.
//! - A label set crosses as a *word* (`LabelSet::into_word`): an opaque `usize`, 0 for "no
//!   labels", that owns one strong reference. Who holds a word owns that reference: a label holder
//!   (retained when it is bound, released by its weak callback), a V8 sample (retained by the
//!   capture callback, released or handed to the dead-sample totals by V8), a backing-store block
//!   (retained at its allocation, released at its free). Reads of a profile take references of
//!   their own for the samples they copy (cpp/sampling.cc), which the model adopts.
//! - Each function marks its thread as inside a V8 callback (`InV8Callback`) while it runs: in debug
//!   builds a registry lock taken meanwhile panics (core/src/callback_guard.rs), so a test that
//!   makes a callback reach one fails.
//! - Addresses of Rust objects that cpp/ carries (the external counters, the dead-sample totals)
//!   are made here and turned back into references here, nowhere else.

use heap_labels_core::{
    AllocationsRead, DeadSnapshot, ExternalCounters, InV8Callback, LabelSet, PendingLabels,
};

use crate::allocations::{self, Totals};

// ---- label words ---------------------------------------------------------------------------------

/// Gives back the reference a word owns (0 is ignored): holder weak callbacks and rebinds, V8
/// dropping a sample, block frees. One atomic decrement (and a heap free when it was the last).
pub fn release_label_word(word: usize) {
    let _callback = InV8Callback::enter();
    if word != 0 {
        // SAFETY: cpp/ passes each word it owns exactly once, so the word still owns its reference.
        unsafe { LabelSet::release_word(word) }
    }
}

/// Takes one more reference for `word` (0 is ignored): one atomic increment.
pub fn retain_label_word(word: usize) {
    let _callback = InV8Callback::enter();
    if word != 0 {
        // SAFETY: cpp/ passes words read from a live label holder (which owns a reference while it
        // is reachable, and it is: it is the current async context's store) or from V8's
        // per-sample storage (which owns one until the release callback), so the set is alive.
        unsafe { LabelSet::retain_word(word) }
    }
}

/// For a read of V8's samples (cpp/sampling.cc): a word with a reference of its own to the set
/// `word` stands for now (a request cell resolves to the set it is bound to). Isolate thread.
pub fn resolve_label_word(word: usize) -> usize {
    let _callback = InV8Callback::enter();
    if word == 0 {
        return 0;
    }
    // SAFETY: cpp/ passes words of V8's live samples, each of which owns a reference until V8's
    // release callback, which cannot run during the read.
    unsafe { LabelSet::retain_resolved_word(word) }
}

/// Frees the pending labels of a holder bound to the overflow set (`labels::bind_new_holder` made
/// the box): at a rebind, in the holder's weak callback or at teardown. A plain free.
pub fn drop_pending_labels(pending: usize) {
    let _callback = InV8Callback::enter();
    if pending != 0 {
        // SAFETY: cpp/ passes each box it received from `bind_new_holder` exactly once.
        drop(unsafe { Box::from_raw(pending as *mut PendingLabels) });
    }
}

// ---- samples -------------------------------------------------------------------------------------

/// The capture callback, inside V8's `SampleObject`: retains the word for the sample and counts a
/// live sample for its set. Two atomic increments.
pub fn capture_sample_word(word: usize) {
    let _callback = InV8Callback::enter();
    if word != 0 {
        // SAFETY: cpp/ passes the word of the current async context's holder (alive: the frame
        // references it) or the isolate's unlabeled-samples set (alive with the isolate state).
        unsafe { LabelSet::capture_sample_word(word) }
    }
}

/// V8 dropped a sample (GC weak callback or profiler stop): uncounts it and releases its word.
pub fn release_sample_word(word: usize) {
    let _callback = InV8Callback::enter();
    if word != 0 {
        // SAFETY: V8 hands back each word captured by `capture_sample_word` exactly once.
        unsafe { LabelSet::release_sample_word(word) }
    }
}

// ---- dead samples (allocation figures) -----------------------------------------------------------

/// The address cpp/ hands back to [`record_dead_sample`] and [`take_dead_samples`].
pub fn dead_sample_totals_address(totals: &Totals) -> usize {
    totals as *const Totals as usize
}

/// The totals at `address`.
///
/// # Safety
/// `address` comes from [`dead_sample_totals_address`] of totals that outlive the use (the
/// `IsolateAddon` drops them after its V8 state, which stops the profiler, so they outlive every
/// callback).
unsafe fn totals_at<'a>(address: usize) -> &'a Totals {
    // SAFETY: the caller guarantees that `address` is a live `Totals`.
    unsafe { &*(address as *const Totals) }
}

/// V8's death callback (GC weak processing, patched runtime): adds the dead sample to the totals;
/// `word` (0 or the sample's reference) is consumed.
pub fn record_dead_sample(address: usize, word: usize, node_id: u32, size: u64, sample_id: u64) {
    let _callback = InV8Callback::enter();
    // SAFETY: cpp/ passes the address set by `set_dead_sample_totals`, alive as the profiler is.
    let mut totals = allocations::lock(unsafe { totals_at(address) });
    // SAFETY: V8 hands each captured word over exactly once, to the death or the release callback.
    unsafe { totals.record(word, node_id, size, sample_id) };
}

/// The dead samples of the view `read` asks for, right after `GetAllocationProfile()` (no V8 call
/// in between, so no GC can run the death callback meanwhile).
pub fn take_dead_samples(address: usize, read: AllocationsRead) -> DeadSnapshot {
    // SAFETY: as in `record_dead_sample`.
    let totals = unsafe { totals_at(address) };
    allocations::lock(totals).snapshot(read)
}

// ---- external (ArrayBuffer) bytes ----------------------------------------------------------------

/// The counters of one isolate, leaked: blocks allocated while a session tracked external bytes
/// may be freed after the isolate's addon state is gone, and their frees still land here.
pub fn leak_external_counters() -> &'static ExternalCounters {
    Box::leak(Box::new(ExternalCounters::new()))
}

/// The address cpp/ carries for `counters` (to the counting allocator).
pub fn external_counters_address(counters: &'static ExternalCounters) -> usize {
    counters as *const ExternalCounters as usize
}

fn counters_at(address: usize) -> &'static ExternalCounters {
    // SAFETY: cpp/ only passes the address made by `external_counters_address` from
    // `leak_external_counters`, which is never freed.
    unsafe { &*(address as *const ExternalCounters) }
}

/// The counting allocator made a block at `block` while `word`'s set (0: none) was current:
/// charges it (a request cell's word: the set it is bound to, see `RequestCell::charge`) and
/// records the word beside the block (taking one reference for it) so that its free
/// is attributed the same way. When the word cannot be recorded (see `BlockWords::insert`) the
/// block is charged as unlabeled. Usually the isolate thread; another thread (a worker resizing a
/// buffer this isolate made) passes word 0. Atomics only (the table allocates plain memory when it
/// grows).
pub fn external_alloc(counters: usize, block: usize, word: usize, bytes: usize) {
    let _callback = InV8Callback::enter();
    let counters = counters_at(counters);
    let word = if word != 0 && counters.words().insert(block, word) {
        // The table's entry owns this reference until the block's free.
        retain_label_word(word);
        word
    } else {
        0
    };
    // SAFETY: a non-zero word is the current holder's (alive during the allocation) and now also
    // owned by the block's table entry.
    unsafe { counters.on_alloc_word(word, bytes) };
}

/// The counting allocator frees the block at `block` (any thread, V8's sweeper threads included;
/// before the memory goes, since its address may be handed out again right after): `bytes` leave
/// the set it was charged to or the unlabeled bucket. Atomics only.
pub fn external_free(counters: usize, block: usize, bytes: usize) {
    let _callback = InV8Callback::enter();
    let counters = counters_at(counters);
    let word = counters.words().remove(block).unwrap_or(0);
    // SAFETY: the block's table entry owned a reference to the word's set or cell, given back
    // only below, after the accounting.
    unsafe { counters.on_free_word(word, bytes) };
    // The reference the entry owned, given back only after the accounting used the set.
    release_label_word(word);
}
