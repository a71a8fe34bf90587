//! External (ArrayBuffer/Buffer) bytes at the bridge: the counting allocator in cpp/ charges and
//! releases blocks through these functions, on the isolate thread (allocations) and on any thread,
//! V8's sweeper threads included (frees). Atomics only; never a lock or a V8 call.

use heap_labels_core::{ExternalCounters, LabelSet};

/// The counters of one isolate, leaked: blocks allocated while a session tracked external bytes may
/// be freed after the isolate's addon state is gone, and their frees still land here.
pub fn leak_counters() -> &'static ExternalCounters {
    Box::leak(Box::new(ExternalCounters::new()))
}

/// The address cpp/ carries for `counters`.
pub fn address_of(counters: &'static ExternalCounters) -> usize {
    counters as *const ExternalCounters as usize
}

fn counters_at(address: usize) -> &'static ExternalCounters {
    // SAFETY: cpp/ only passes the address made by `address_of` from `leak_counters`, which is never
    // freed.
    unsafe { &*(address as *const ExternalCounters) }
}

fn set_of(word: usize) -> Option<&'static LabelSet> {
    // SAFETY: a non-zero word is held by the block's header (one strong reference taken before the
    // charge and given back only after the free's accounting), so the set outlives this call; the
    // 'static lifetime never escapes the caller.
    (word != 0).then(|| unsafe { LabelSet::word_as_ref(word) })
}

/// Charges a new block. Isolate thread.
pub fn on_alloc(counters: usize, word: usize, bytes: usize) {
    counters_at(counters).on_alloc(set_of(word), bytes);
}

/// Releases a block's charge. Any thread.
pub fn on_free(counters: usize, word: usize, bytes: usize) {
    counters_at(counters).on_free(set_of(word), bytes);
}
