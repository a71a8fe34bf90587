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
    // SAFETY: a non-zero word is either the current holder's (alive during the allocation) or
    // owned by the block's table entry (one strong reference taken at the charge and given back
    // only after the free's accounting), so the set outlives this call; the 'static lifetime never
    // escapes the caller.
    (word != 0).then(|| unsafe { LabelSet::word_as_ref(word) })
}

/// Charges a new block at address `block`, allocated while `word`'s set (0: none) was current, and
/// records the word beside the block (taking one reference for it) so that its free is attributed
/// the same way. When the word cannot be recorded (see `BlockWords::insert`) the block is charged
/// as unlabeled. Isolate thread; atomics only (the table allocates plain memory when it grows).
pub fn on_alloc(counters: usize, block: usize, word: usize, bytes: usize) {
    let counters = counters_at(counters);
    let word = if word != 0 && counters.words().insert(block, word) {
        // The table's entry owns this reference until the block's free.
        crate::labels::retain_word(word);
        word
    } else {
        0
    };
    counters.on_alloc(set_of(word), bytes);
}

/// Releases the charge of the block at `block`: `bytes` leave the set it was charged to (found in
/// the table) or the unlabeled bucket. Any thread; atomics only.
pub fn on_free(counters: usize, block: usize, bytes: usize) {
    let counters = counters_at(counters);
    let word = counters.words().remove(block).unwrap_or(0);
    counters.on_free(set_of(word), bytes);
    // The reference the entry owned, given back only after the accounting used the set.
    crate::labels::release_word(word);
}
