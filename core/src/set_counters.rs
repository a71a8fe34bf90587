//! The per-set counters that V8's callbacks keep current, in one dense table per registry.
//!
//! Every [`LabelSet`](crate::LabelSet) has a slot here: its live samples (captured and not yet
//! released by V8 on the patched runtime), its external (ArrayBuffer) bytes and their peak since the
//! previous read, and the slot's generation (how many sets have had it), which together with the
//! set's id names the set for ever: ids are handed out again, (id, generation) pairs never are.
//! The slots of a registry sit side by side in fixed chunks, indexed by set id, so
//! that `labelCounters()` reads 10k sets as one sequential scan of a few hundred KiB instead of
//! chasing a pointer per set through the intern table into each set's own allocation.
//!
//! Who touches what:
//! - V8's callbacks (sample capture and release, ArrayBuffer allocation and free, on the isolate
//!   thread, GC callbacks and sweeper threads) reach a slot through the set's [`SlotRef`]: relaxed
//!   atomics on that slot only, never the table's lock, never an allocation.
//! - The registry takes the table's lock to hand a new set its slot (intern, on a miss) and to scan
//!   the slots (the counters read); neither runs inside a V8 callback.
//!
//! A chunk is reference counted: the table and every set with a slot in it hold it, so a set that
//! outlives its registry (a word V8 or an ArrayBuffer block still holds after isolate teardown)
//! still counts into memory it keeps alive.

use std::sync::{Arc, Mutex, PoisonError};

use crate::callback_guard::assert_outside_v8_callback;
use crate::group_counters::{GroupTable, SetGroup};
// The chunks' `Arc` is loom's under loom (the models check their drop order); the group table's
// stays std's, shared with the registry.
use crate::sync::{self, AtomicI64, AtomicU64, Ordering};

/// Slots per chunk: 256 x 32 bytes = 8 KiB. An index into a chunk is a `u8`, so no bounds check.
#[cfg(not(loom))]
const CHUNK: usize = 256;
/// Under loom: two slots a chunk, so that a model's chunk is a few atomics, not a thousand.
#[cfg(loom)]
const CHUNK: usize = 2;

/// The counters of one set.
#[derive(Debug, Default)]
pub(crate) struct SetCounters {
    pub(crate) live_samples: AtomicI64,
    pub(crate) external: AtomicI64,
    pub(crate) external_peak: AtomicI64,
    /// Sets that have had this slot, the current one included (1 for the first): written under
    /// the table's lock when a set claims the slot, constant while that set lives.
    pub(crate) generation: AtomicU64,
    /// The set's group in a session with groupBy, with its external bytes (`group_counters`).
    pub(crate) group: SetGroup,
}

impl SetCounters {
    fn reset(&self) {
        self.live_samples.store(0, Ordering::Relaxed);
        self.external.store(0, Ordering::Relaxed);
        self.external_peak.store(0, Ordering::Relaxed);
        self.group.reset();
    }

    /// The highest external bytes since the previous call (at least the current value), and
    /// starts a new period at the current value.
    pub(crate) fn take_external_peak(&self) -> i64 {
        let current = self.external.load(Ordering::Relaxed);
        // Most sets hold no external bytes: read first, so a read of 10k sets writes to few.
        if self.external_peak.load(Ordering::Relaxed) == current {
            return current;
        }
        self.external_peak
            .swap(current, Ordering::Relaxed)
            .max(current)
    }

    /// Whether a read has anything to report for this slot.
    #[inline]
    fn is_zero(&self) -> bool {
        self.live_samples.load(Ordering::Relaxed) == 0
            && self.external.load(Ordering::Relaxed) == 0
            && self.external_peak.load(Ordering::Relaxed) == 0
    }
}

type Chunk = [SetCounters; CHUNK];

/// A set's handle on its slot, and on the group counters of its registry.
pub(crate) struct SlotRef {
    chunk: sync::Arc<Chunk>,
    offset: u8,
    groups: Arc<GroupTable>,
}

impl SlotRef {
    #[inline]
    pub(crate) fn get(&self) -> &SetCounters {
        &self.chunk[usize::from(self.offset)]
    }

    /// V8 took a sample of the set (inside `SampleObject`): atomics only.
    #[inline]
    pub(crate) fn sample_taken(&self) {
        let counters = self.get();
        counters.live_samples.fetch_add(1, Ordering::Relaxed);
        self.groups.sample_taken(&counters.group);
    }

    /// V8 dropped a sample of the set (GC weak callback, profiler stop): atomics only.
    #[inline]
    pub(crate) fn sample_dropped(&self) {
        let counters = self.get();
        counters.live_samples.fetch_sub(1, Ordering::Relaxed);
        self.groups.sample_dropped(&counters.group);
    }

    /// A block of external bytes was charged to the set (`delta` > 0) or freed (`delta` < 0):
    /// its bytes, their peak and its group's counters. Any thread: atomics only. Returns the set's
    /// external bytes right after this change (what the peak must cover).
    #[inline]
    pub(crate) fn external_changed(&self, delta: i64) -> i64 {
        let counters = self.get();
        let now = counters.external.fetch_add(delta, Ordering::Relaxed) + delta;
        if delta > 0 {
            counters.external_peak.fetch_max(now, Ordering::Relaxed);
            self.groups
                .external_allocated(&counters.group, delta.unsigned_abs());
        } else if delta < 0 {
            self.groups
                .external_freed(&counters.group, delta.unsigned_abs());
        }
        now
    }

    /// A request cell's binding moved `samples` live samples and `bytes` external bytes to this
    /// set (positive) or away from it (negative). Isolate thread, inside a napi call; frees of the
    /// moved bytes may run on other threads meanwhile (atomics only). Cumulative group figures stay
    /// where they were counted (`GroupTable::samples_moved`, `external_moved`).
    pub(crate) fn moved(&self, samples: i64, bytes: i64) {
        let counters = self.get();
        if samples != 0 {
            counters.live_samples.fetch_add(samples, Ordering::Relaxed);
            self.groups.samples_moved(&counters.group, samples);
        }
        if bytes != 0 {
            let now = counters.external.fetch_add(bytes, Ordering::Relaxed) + bytes;
            if bytes > 0 {
                counters.external_peak.fetch_max(now, Ordering::Relaxed);
            }
            self.groups.external_moved(&counters.group, bytes);
        }
    }

    /// Puts the set in its group of the session with groupBy, if one runs (isolate thread).
    pub(crate) fn assign_group(&self, pairs: &[(Box<str>, Box<str>)], overflow: bool) {
        self.groups.assign(&self.get().group, pairs, overflow);
    }
}

impl Drop for SlotRef {
    /// The slot's set is gone (nobody else can reach the slot now): zero it, so that a scan shows
    /// no row for it until its index goes to a new set.
    fn drop(&mut self) {
        self.get().reset();
    }
}

/// The slots of one registry, indexed by [`slot index`](crate::LabelRegistry) (the set's id, made
/// relative to the registry's first id).
#[derive(Default)]
pub(crate) struct CounterTable {
    chunks: Mutex<Vec<sync::Arc<Chunk>>>,
    groups: Arc<GroupTable>,
}

impl CounterTable {
    /// A table whose sets count into `groups` (shared with another registry's table: the isolate's
    /// unlabeled-samples set is made by a registry of its own).
    pub(crate) fn with_groups(groups: Arc<GroupTable>) -> Self {
        CounterTable {
            chunks: Mutex::default(),
            groups,
        }
    }

    /// The group counters its sets count into.
    pub(crate) fn groups(&self) -> &Arc<GroupTable> {
        &self.groups
    }

    /// The slot at `index`, zeroed, for a new set; allocates the chunks up to it. The previous set
    /// at `index`, if any, is gone: an index is handed out again only after its set was dropped.
    pub(crate) fn claim(&self, index: usize) -> SlotRef {
        assert_outside_v8_callback("the counter table's lock");
        let mut chunks = self.chunks.lock().unwrap_or_else(PoisonError::into_inner);
        let wanted = index / CHUNK + 1;
        while chunks.len() < wanted {
            chunks.push(sync::Arc::new(std::array::from_fn(|_| {
                SetCounters::default()
            })));
        }
        let slot = SlotRef {
            chunk: sync::Arc::clone(&chunks[index / CHUNK]),
            offset: (index % CHUNK) as u8,
            groups: Arc::clone(&self.groups),
        };
        slot.get().reset();
        slot.get().generation.fetch_add(1, Ordering::Relaxed);
        slot
    }

    /// Calls `f(index, counters)` for every slot with anything to report, in index order: one
    /// sequential scan under the table's lock (so `f` must not intern).
    pub(crate) fn for_each_nonzero(&self, mut f: impl FnMut(usize, &SetCounters)) {
        assert_outside_v8_callback("the counter table's lock");
        let chunks = self.chunks.lock().unwrap_or_else(PoisonError::into_inner);
        for (c, chunk) in chunks.iter().enumerate() {
            for (offset, slot) in chunk.iter().enumerate() {
                if !slot.is_zero() {
                    f(c * CHUNK + offset, slot);
                }
            }
        }
    }
}

#[cfg(all(test, loom))]
mod loom_models;

// Under loom the atomics work inside `loom::model` only: these run in the normal build.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_claimed_slot_starts_at_zero_and_is_zeroed_when_its_set_goes() {
        let table = CounterTable::default();
        let slot = table.claim(CHUNK + 3);
        slot.get().live_samples.fetch_add(2, Ordering::Relaxed);
        slot.get().external_peak.store(7, Ordering::Relaxed);
        let mut seen = Vec::new();
        table.for_each_nonzero(|i, c| seen.push((i, c.live_samples.load(Ordering::Relaxed))));
        assert_eq!(seen, [(CHUNK + 3, 2)]);
        drop(slot);
        let mut rows = 0;
        table.for_each_nonzero(|_, _| rows += 1);
        assert_eq!(rows, 0);
        let again = table.claim(CHUNK + 3);
        assert_eq!(again.get().live_samples.load(Ordering::Relaxed), 0);
        // The slot's second set: (index, generation) tells it from the first.
        assert_eq!(again.get().generation.load(Ordering::Relaxed), 2);
        assert_eq!(table.claim(0).get().generation.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_slot_outlives_its_table() {
        let table = CounterTable::default();
        let slot = table.claim(1);
        drop(table);
        slot.get().external.fetch_add(5, Ordering::Relaxed);
        assert_eq!(slot.get().external.load(Ordering::Relaxed), 5);
    }
}
