//! External (ArrayBuffer backing store) byte accounting for one isolate.
//!
//! cpp/ wraps the isolate's ArrayBuffer allocator; every block it charges carries the label word of
//! the context it was allocated in, and its free subtracts using that word. Allocations happen on the
//! isolate thread, but frees mostly run on V8's ArrayBuffer sweeper threads, so everything here is
//! atomics only: no allocation, no lock, no V8 handle.
//!
//! The per-set bytes live in each set's counter slot ([`LabelSet::external_bytes`]); this module keeps
//! the bytes of blocks allocated without labels (and their peak) and, in [`BlockWords`],
//! which word each labeled block was charged to (beside the block, not in a header inside it, so
//! that Node's own ArrayBuffer bookkeeping sees the exact lengths).

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use crate::block_words::BlockWords;
use crate::sync::const_fn_unless_loom;
use std::sync::{Arc, OnceLock};

use crate::group_counters::{GroupTable, SetGroup};
use crate::labels::{LabelSet, RequestCell};

/// Isolate-wide external-byte counters. `const`-constructible, so it can be a `static` or a field of
/// the per-isolate state.
#[derive(Debug, Default)]
pub struct ExternalCounters {
    /// See [`counts_per_set`](Self::counts_per_set).
    per_set: AtomicBool,
    unlabeled: AtomicI64,
    words: BlockWords,
    /// Highest `unlabeled` since the last [`take_unlabeled_peak`](Self::take_unlabeled_peak).
    unlabeled_peak: AtomicI64,
    /// The isolate's group counters (its registry's), where unlabeled blocks go to the unknown
    /// group; set once, before any block is counted.
    groups: OnceLock<Arc<GroupTable>>,
    /// The unlabeled bytes' group word (their bytes and the unknown group's tag).
    unlabeled_group: SetGroup,
}

#[inline]
fn as_i64(bytes: usize) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

impl ExternalCounters {
    const_fn_unless_loom! {
        /// Counters that count nothing per set yet, all zero.
        pub fn new() -> Self {
            ExternalCounters {
                per_set: AtomicBool::new(false),
                unlabeled: AtomicI64::new(0),
                words: BlockWords::new(),
                unlabeled_peak: AtomicI64::new(0),
                groups: OnceLock::new(),
                unlabeled_group: SetGroup::new(),
            }
        }
    }

    /// Counts unlabeled blocks into `groups` (the registry's, [`LabelRegistry::groups`]
    /// (crate::LabelRegistry::groups)) from now on. Call it before any block is counted; later
    /// calls are ignored.
    pub fn attach_groups(&self, groups: Arc<GroupTable>) {
        let _ = self.groups.set(groups);
    }

    /// Puts the unlabeled bytes in the unknown group of the session with groupBy that starts now.
    pub fn assign_unlabeled_group(&self) {
        if let Some(groups) = self.groups.get() {
            groups.assign_unlabeled(&self.unlabeled_group);
        }
    }

    /// The label word of every labeled block charged here, by block address.
    pub fn words(&self) -> &BlockWords {
        &self.words
    }

    /// From now on, reads report external bytes per label set: called when the first session
    /// installed the counting allocator. Never undone: blocks charged then keep being subtracted
    /// when freed, also after the session, so the per-set figures stay right.
    pub fn mark_counting_per_set(&self) {
        self.per_set.store(true, Ordering::Release);
    }

    /// Whether external bytes are reported per label set (a session installed the counting
    /// allocator at some point; see [`mark_counting_per_set`](Self::mark_counting_per_set)).
    /// Read at profile and counters reads; the allocator wrapper charges whatever reaches it and
    /// never asks.
    #[inline]
    pub fn counts_per_set(&self) -> bool {
        self.per_set.load(Ordering::Acquire)
    }

    /// Charges a new block of `bytes` to `labels` (or to the unlabeled bucket). The caller decided
    /// to charge it (the counting allocator is installed) and must remember the label
    /// word in the block so that the free is attributed the same way.
    ///
    /// Runs on V8's ArrayBuffer allocation path (isolate thread): relaxed atomic adds only, no
    /// allocation, no lock.
    #[inline]
    pub fn on_alloc(&self, labels: Option<&LabelSet>, bytes: usize) {
        let bytes = as_i64(bytes);
        match labels {
            Some(set) => set.add_external(bytes),
            None => {
                let now = self.unlabeled.fetch_add(bytes, Ordering::Relaxed) + bytes;
                self.unlabeled_peak.fetch_max(now, Ordering::Relaxed);
                if let Some(groups) = self.groups.get() {
                    groups.external_allocated(&self.unlabeled_group, bytes.unsigned_abs());
                }
            }
        }
    }

    /// Gives back a block charged by [`on_alloc`](Self::on_alloc) with the same `labels` and `bytes`.
    ///
    /// Runs on any thread, usually V8's ArrayBuffer sweeper threads: relaxed atomic subtractions only,
    /// no allocation, no lock, no V8 handle.
    #[inline]
    pub fn on_free(&self, labels: Option<&LabelSet>, bytes: usize) {
        let bytes = as_i64(bytes);
        match labels {
            Some(set) => set.add_external(-bytes),
            None => {
                self.unlabeled.fetch_sub(bytes, Ordering::Relaxed);
                if let Some(groups) = self.groups.get() {
                    groups.external_freed(&self.unlabeled_group, bytes.unsigned_abs());
                }
            }
        }
    }

    /// The highest unlabeled bytes since the previous call (at least the current value), and starts
    /// a new period at the current value. Isolate thread (the per-label counters' read).
    /// [`on_alloc`](Self::on_alloc) for a block allocated under `word` (0: none; a set's word or a
    /// request cell's, whose current set is charged). Isolate thread: atomics only.
    ///
    /// # Safety
    /// A non-zero `word` must be alive for the call (a reference is held).
    #[inline]
    pub unsafe fn on_alloc_word(&self, word: usize, bytes: usize) {
        // SAFETY: the caller keeps the word alive for the call.
        let set = unsafe { charged_set(word, bytes, RequestCell::charge) };
        self.on_alloc(set, bytes);
    }

    /// [`on_free`](Self::on_free) for a block allocated under `word`: the set that holds its bytes
    /// now is credited (for a request cell, the set it is bound to at this instant). Any thread.
    ///
    /// # Safety
    /// As for [`on_alloc_word`](Self::on_alloc_word).
    #[inline]
    pub unsafe fn on_free_word(&self, word: usize, bytes: usize) {
        // SAFETY: as above.
        let set = unsafe { charged_set(word, bytes, RequestCell::credit) };
        self.on_free(set, bytes);
    }

    pub fn take_unlabeled_peak(&self) -> i64 {
        let current = self.unlabeled.load(Ordering::Relaxed);
        let peak = self.unlabeled_peak.swap(current, Ordering::Relaxed);
        peak.max(current)
    }

    /// Bytes of charged blocks allocated with no label set current and still allocated. (The
    /// labeled bytes are in the sets' slots: isolate-wide totals would cost two more atomic updates
    /// on every ArrayBuffer allocation and free, and nothing reads them.)
    pub fn unlabeled_bytes(&self) -> i64 {
        self.unlabeled.load(Ordering::Relaxed)
    }
}

// Under loom (the block table's atomics are loom's) these need `loom::model`: normal build only.
/// The set a block's bytes go to or come from: none for word 0, the set of a set word, and for a
/// cell word what `through` (the cell's charge or credit of `bytes`) returns.
///
/// # Safety
/// A non-zero `word` must be alive for `'a`.
#[inline]
unsafe fn charged_set<'a>(
    word: usize,
    bytes: usize,
    through: fn(&'a RequestCell, u64) -> &'a LabelSet,
) -> Option<&'a LabelSet> {
    if word == 0 {
        None
    } else if RequestCell::is_cell_word(word) {
        // SAFETY: the caller keeps the cell alive for 'a.
        Some(through(
            unsafe { RequestCell::word_as_ref(word) },
            bytes as u64,
        ))
    } else {
        // SAFETY: the caller keeps the set alive for 'a.
        Some(unsafe { LabelSet::word_as_ref(word) })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::labels::LabelRegistry;
    use std::sync::Arc;

    #[test]
    fn the_per_set_flag_is_independent_of_counting() {
        static COUNTERS: ExternalCounters = ExternalCounters::new();
        assert!(!COUNTERS.counts_per_set());
        COUNTERS.on_alloc(None, 100);
        COUNTERS.mark_counting_per_set();
        assert!(COUNTERS.counts_per_set());
        COUNTERS.on_free(None, 100);
        assert_eq!(COUNTERS.unlabeled_bytes(), 0);
    }

    #[test]
    fn alloc_and_free_are_attributed_to_the_set() {
        let reg = LabelRegistry::new(10);
        let a = reg.intern(vec![("k".into(), "a".into())]).unwrap();
        let b = reg.intern(vec![("k".into(), "b".into())]).unwrap();
        let c = ExternalCounters::new();
        c.on_alloc(Some(&a), 1000);
        c.on_alloc(Some(&a), 24);
        c.on_alloc(Some(&b), 5);
        c.on_alloc(None, 7);
        assert_eq!(c.unlabeled_bytes(), 7);
        assert_eq!(a.external_bytes(), 1024);
        assert_eq!(b.external_bytes(), 5);
        c.on_free(Some(&a), 1000);
        c.on_free(None, 7);
        assert_eq!(a.external_bytes(), 24);
        assert_eq!(c.unlabeled_bytes(), 0);
    }

    #[test]
    fn multithreaded_alloc_free_balances_to_zero() {
        let reg = LabelRegistry::new(10);
        let sets: Vec<_> = (0..3)
            .map(|i| reg.intern(vec![("k".into(), i.to_string())]).unwrap())
            .collect();
        let counters = Arc::new(ExternalCounters::new());
        // Allocate on "the isolate thread", free on several "sweeper threads".
        let mut blocks = Vec::new();
        for i in 0..30_000usize {
            let set = (i % 4 < 3).then(|| Arc::clone(&sets[i % 4]));
            let bytes = 16 + i % 4096;
            counters.on_alloc(set.as_deref(), bytes);
            blocks.push((set, bytes));
        }
        assert!(counters.unlabeled_bytes() > 0);
        let chunks: Vec<Vec<_>> = blocks.chunks(7_500).map(|c| c.to_vec()).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let counters = Arc::clone(&counters);
                std::thread::spawn(move || {
                    for (set, bytes) in chunk {
                        counters.on_free(set.as_deref(), bytes);
                    }
                })
            })
            .collect();
        // Meanwhile keep allocating and freeing on this thread.
        for i in 0..10_000usize {
            counters.on_alloc(Some(&sets[0]), i);
            counters.on_free(Some(&sets[0]), i);
        }
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(counters.unlabeled_bytes(), 0);
        for set in &sets {
            assert_eq!(set.external_bytes(), 0);
        }
    }
}
