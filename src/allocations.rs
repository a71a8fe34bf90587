//! The isolate's dead-sample totals (`core::DeadSampleTotals`) as the death callback and profile
//! reads reach them through the bridge.
//!
//! Both run on the isolate's thread: the death callback inside V8's GC weak processing, reads
//! right after `GetAllocationProfile()`. The mutex only makes the shared access sound; no caller
//! holds it across a call into V8, so it is never held when a GC starts.

use std::sync::{Mutex, MutexGuard, PoisonError};

use heap_labels_core::{DeadSampleTotals, LabelSet, DEFAULT_MAX_GROUPS};

use crate::bridge::ffi;

/// The totals of one isolate; boxed in `IsolateAddon` so that their address is stable.
pub type Totals = Mutex<DeadSampleTotals>;

pub fn new_totals() -> Box<Totals> {
    Box::new(Mutex::new(DeadSampleTotals::new(DEFAULT_MAX_GROUPS)))
}

/// Starts a new session's totals (sample ids restart with the session).
pub fn restart(totals: &Totals, sample_interval: u64) {
    lock(totals).restart(sample_interval);
}

/// Drops the groups of a stopped session, and with them the label sets they hold.
pub fn clear(totals: &Totals) {
    let mut totals = lock(totals);
    let interval = totals.sample_interval();
    totals.restart(interval);
}

/// The address cpp/ hands back to [`record_dead_sample`] and [`take_dead_samples`].
pub fn address_of(totals: &Totals) -> usize {
    totals as *const Totals as usize
}

fn lock(totals: &Totals) -> MutexGuard<'_, DeadSampleTotals> {
    // A panic while holding the lock cannot leave the totals inconsistent in a way that matters
    // more than losing them: keep counting.
    totals.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The totals at `address`.
///
/// # Safety
/// `address` comes from [`address_of`] of totals that outlive the use (the `IsolateAddon` drops
/// them after its V8 state, which stops the profiler, so they outlive every callback).
unsafe fn totals_at<'a>(address: usize) -> &'a Totals {
    // SAFETY: the caller guarantees that `address` is a live `Totals`.
    unsafe { &*(address as *const Totals) }
}

/// See `ffi::record_dead_sample`.
pub fn record_dead_sample(address: usize, word: usize, node_id: u32, size: u64, sample_id: u64) {
    // SAFETY: cpp/ passes the address set by `set_dead_sample_totals`, alive as the profiler is.
    let mut totals = lock(unsafe { totals_at(address) });
    // SAFETY: V8 hands each captured word over exactly once, to the death or the release callback.
    unsafe { totals.record(word, node_id, size, sample_id) };
}

/// See `ffi::take_dead_samples`.
pub fn take_dead_samples(
    address: usize,
    restart: bool,
    highest_live_sample_id: u64,
) -> ffi::RawAllocations {
    // SAFETY: as in `record_dead_sample`.
    let totals = unsafe { totals_at(address) };
    let snapshot = lock(totals).snapshot(restart.then_some(highest_live_sample_id));
    ffi::RawAllocations {
        reported: true,
        groups: snapshot
            .groups
            .into_iter()
            .map(|group| ffi::RawAllocatedGroup {
                node_id: group.node_id,
                label_word: group.labels.map_or(0, LabelSet::into_word),
                objects: group.objects,
                bytes: group.bytes,
            })
            .collect(),
        window_start: snapshot.window_start,
    }
}
