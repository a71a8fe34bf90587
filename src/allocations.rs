//! The isolate's dead-sample totals (`core::DeadSampleTotals`): made with the isolate state,
//! restarted and cleared with its sessions; V8's death callback and profile reads reach them
//! through `v8_callbacks`.
//!
//! Both of those run on the isolate's thread: the death callback inside V8's GC weak processing,
//! reads right after `GetAllocationProfile()`. The mutex only makes the shared access sound; no
//! caller holds it across a call into V8, so it is never held when a GC starts.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use heap_labels_core::{DeadSampleTotals, LabelRegistry, DEFAULT_MAX_GROUPS};

/// The totals of one isolate; boxed in `IsolateAddon` so that their address is stable.
pub type Totals = Mutex<DeadSampleTotals>;

/// `registry`: the isolate's, where the figures since the start find the live set of their labels.
pub fn new_totals(registry: Arc<LabelRegistry>) -> Box<Totals> {
    Box::new(Mutex::new(DeadSampleTotals::with_home(
        DEFAULT_MAX_GROUPS,
        registry,
    )))
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

/// The totals, locked (see the module comment for why this never waits on a GC).
pub fn lock(totals: &Totals) -> MutexGuard<'_, DeadSampleTotals> {
    // A panic while holding the lock cannot leave the totals inconsistent in a way that matters
    // more than losing them: keep counting.
    totals.lock().unwrap_or_else(PoisonError::into_inner)
}
