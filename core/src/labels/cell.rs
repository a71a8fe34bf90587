//! [`RequestCell`]: late binding of a request's labels (docs/architecture.md, "Late binding").
//!
//! A request runs under a label holder whose word is a cell, not a set. Samples and ArrayBuffer
//! blocks taken under it keep the cell; routing binds the cell to the route's set; reads resolve a
//! cell to the set it is bound to then. So what a request allocated before its route was known
//! (middleware, body parsing) ends up under its route.
//!
//! A cell's word is `Arc::into_raw(cell) | CELL_TAG`. Sets and cells are 8-byte aligned, so bit 1 is
//! free in both, and the word stays 2-byte aligned, as V8's aligned-pointer fields require. The word
//! functions of `word.rs` test the tag and come here for cells.
//!
//! Who touches what:
//! - Samples (capture, release, death) and bindings run on the isolate thread only: the cell's
//!   live-sample count is moved from set to set at a binding without any race.
//! - ArrayBuffer frees run on any thread. The cell's external bytes and the index of its current
//!   set share one atomic word (`state`: index over bytes), so a free is credited to the set the
//!   bytes were charged to at that instant: it subtracts from the word and credits the set of the
//!   index it read in the same step, and a binding swaps the index with a compare-and-swap that
//!   keeps the bytes and then moves exactly those bytes.
//! - The sets a cell was bound to stay referenced (and in `sets`) until the cell is dropped, so a
//!   free racing a binding never reads a released set. At most [`MAX_BINDINGS`] bindings are kept;
//!   later ones are ignored (a request routed more than that many times keeps its last kept route).

use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use super::LabelSet;

/// The tag bit of a cell's word.
pub const CELL_TAG: usize = 0b10;

/// Bindings a cell keeps: the bucket it starts with and up to seven routes.
pub const MAX_BINDINGS: usize = 8;

/// `state`: the current binding's index over the cell's live external bytes.
const BYTES_BITS: u32 = 56;
const BYTES_MASK: u64 = (1 << BYTES_BITS) - 1;

/// A request's label cell. Made by [`RequestCell::new`] on the isolate thread; shared with V8
/// through its word.
pub struct RequestCell {
    /// Words of the sets bound so far (each owns one reference); slot `i` is written before index
    /// `i` is published in `state`, and is never written again.
    sets: [AtomicUsize; MAX_BINDINGS],
    /// The current binding's index (high bits) over the live external bytes charged under this
    /// cell (low [`BYTES_BITS`] bits).
    state: AtomicU64,
    /// Samples taken under this cell that V8 still holds (isolate thread only).
    live_samples: AtomicI64,
}

impl RequestCell {
    /// A cell bound to `set` (a request's unrouted bucket).
    pub fn new(set: Arc<LabelSet>) -> Arc<Self> {
        let sets = std::array::from_fn(|_| AtomicUsize::new(0));
        sets[0].store(LabelSet::into_word(set), Ordering::Relaxed);
        Arc::new(RequestCell {
            sets,
            state: AtomicU64::new(0),
            live_samples: AtomicI64::new(0),
        })
    }

    /// Whether `word` is a cell's word.
    #[inline]
    pub fn is_cell_word(word: usize) -> bool {
        word & CELL_TAG != 0
    }

    /// The word of `this`, owning the reference it is made from.
    pub fn into_word(this: Arc<Self>) -> usize {
        Arc::into_raw(this) as usize | CELL_TAG
    }

    /// Borrows the cell behind a cell word.
    ///
    /// # Safety
    /// `word` must be a cell word whose cell is alive for `'a` (a reference is held).
    #[inline]
    pub unsafe fn word_as_ref<'a>(word: usize) -> &'a RequestCell {
        // SAFETY: the caller guarantees the cell is alive; the tag is the only difference from
        // the `Arc::into_raw` pointer.
        unsafe { &*((word & !CELL_TAG) as *const RequestCell) }
    }

    /// Adds one reference for a copy of `word`.
    ///
    /// # Safety
    /// As for [`word_as_ref`](Self::word_as_ref).
    #[inline]
    pub(crate) unsafe fn retain_word(word: usize) {
        // SAFETY: `word` untagged is `Arc::into_raw` of a live cell (caller's guarantee).
        unsafe { Arc::increment_strong_count((word & !CELL_TAG) as *const RequestCell) }
    }

    /// Gives back the reference `word` owns (frees the cell, and its references to its sets, when
    /// it was the last one: plain frees and atomic decrements).
    ///
    /// # Safety
    /// `word` must own a reference not released yet.
    #[inline]
    pub(crate) unsafe fn release_word(word: usize) {
        // SAFETY: as above; the caller's reference is given back exactly once.
        unsafe { Arc::decrement_strong_count((word & !CELL_TAG) as *const RequestCell) }
    }

    /// Takes the cell behind `word` with the reference the word owns.
    ///
    /// # Safety
    /// As for [`release_word`](Self::release_word).
    pub unsafe fn from_word(word: usize) -> Arc<RequestCell> {
        // SAFETY: as above; `from_raw` adopts the word's reference.
        unsafe { Arc::from_raw((word & !CELL_TAG) as *const RequestCell) }
    }

    fn set_at(&self, index: u64) -> &LabelSet {
        let word = self.sets[index as usize].load(Ordering::Acquire);
        // SAFETY: slot `index` was written before the index was published and stays referenced
        // until the cell is dropped, which cannot happen while `self` is borrowed.
        unsafe { LabelSet::word_as_ref(word) }
    }

    /// The set the cell is bound to now.
    #[inline]
    pub fn current(&self) -> &LabelSet {
        self.set_at(self.state.load(Ordering::Acquire) >> BYTES_BITS)
    }

    /// A reference to the set the cell is bound to now.
    pub fn current_arc(&self) -> Arc<LabelSet> {
        let word = self.sets[(self.state.load(Ordering::Acquire) >> BYTES_BITS) as usize]
            .load(Ordering::Acquire);
        // SAFETY: as in `set_at`; the new reference is owned by the returned `Arc`.
        unsafe {
            LabelSet::retain_word(word);
            LabelSet::from_word(word)
        }
    }

    /// Whether routing has bound the cell (it left the bucket it started with).
    #[inline]
    pub fn is_bound(&self) -> bool {
        self.state.load(Ordering::Acquire) >> BYTES_BITS != 0
    }

    /// Live samples taken under this cell.
    pub fn live_samples(&self) -> i64 {
        self.live_samples.load(Ordering::Relaxed)
    }

    /// External bytes charged under this cell and not freed yet.
    pub fn external_bytes(&self) -> u64 {
        self.state.load(Ordering::Relaxed) & BYTES_MASK
    }

    /// V8 took a sample under this cell (inside `SampleObject`: atomics only).
    #[inline]
    pub(crate) fn sample_taken(&self) {
        self.live_samples.fetch_add(1, Ordering::Relaxed);
        self.current().counters.sample_taken();
    }

    /// V8 dropped or reported dead a sample taken under this cell (GC weak processing, profiler
    /// stop: atomics only). The sample counts under the cell's current set, where the last
    /// binding moved it.
    #[inline]
    pub(crate) fn sample_dropped(&self) {
        self.live_samples.fetch_sub(1, Ordering::Relaxed);
        self.current().counters.sample_dropped();
    }

    /// A block of `bytes` was allocated under this cell: returns the set to charge (the current
    /// one, read in the same atomic step that adds the bytes). Isolate thread.
    #[inline]
    pub fn charge(&self, bytes: u64) -> &LabelSet {
        let before = self.state.fetch_add(bytes & BYTES_MASK, Ordering::AcqRel);
        self.set_at(before >> BYTES_BITS)
    }

    /// A block of `bytes` charged under this cell is freed: returns the set to credit (the one
    /// holding the bytes at this instant). Any thread (V8's sweepers).
    #[inline]
    pub fn credit(&self, bytes: u64) -> &LabelSet {
        let before = self.state.fetch_sub(bytes & BYTES_MASK, Ordering::AcqRel);
        self.set_at(before >> BYTES_BITS)
    }

    /// Whether [`bind`](Self::bind) would bind the cell to `set`: not when `set` is the current
    /// set already or the cell has used its [`MAX_BINDINGS`]. Isolate thread.
    pub fn can_bind(&self, set: &LabelSet) -> bool {
        let index = self.state.load(Ordering::Acquire) >> BYTES_BITS;
        !std::ptr::eq(self.set_at(index), set) && (index as usize) + 1 < MAX_BINDINGS
    }

    /// Binds the cell to `set` (routing decided the request's route): from now on the cell
    /// resolves to `set`, and the live samples and external bytes taken under it so far move from
    /// the previous set to `set`. Returns false, and changes nothing, when it cannot
    /// ([`can_bind`](Self::can_bind)). Isolate thread, inside a napi call.
    pub fn bind(&self, set: Arc<LabelSet>) -> bool {
        if !self.can_bind(&set) {
            return false;
        }
        let index = self.state.load(Ordering::Acquire) >> BYTES_BITS;
        let old = self.set_at(index);
        let next = index + 1;
        self.sets[next as usize].store(LabelSet::into_word(set), Ordering::Release);
        // Only this thread changes the index; frees change the bytes meanwhile.
        let before = self.state.fetch_add(1 << BYTES_BITS, Ordering::AcqRel);
        let bytes = (before & BYTES_MASK) as i64;
        let samples = self.live_samples.load(Ordering::Relaxed);
        let new = self.set_at(next);
        old.counters.moved(-samples, -bytes);
        new.counters.moved(samples, bytes);
        true
    }
}

impl Drop for RequestCell {
    fn drop(&mut self) {
        for slot in &mut self.sets {
            let word = *slot.get_mut();
            if word != 0 {
                // SAFETY: each non-zero slot owns one reference, given back once, here.
                unsafe { LabelSet::release_word(word) }
            }
        }
    }
}

impl std::fmt::Debug for RequestCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestCell")
            .field("current", &self.current())
            .field("live_samples", &self.live_samples())
            .field("external_bytes", &self.external_bytes())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::labels::*;

    #[test]
    fn a_binding_moves_samples_and_bytes_to_the_route() {
        let reg = LabelRegistry::new(10);
        let bucket = reg.intern(p(&[("route", "(unrouted) GET")])).unwrap();
        let route = reg.intern(p(&[("route", "/users/:id")])).unwrap();
        let cell = RequestCell::new(Arc::clone(&bucket));
        let word = RequestCell::into_word(Arc::clone(&cell));
        assert!(RequestCell::is_cell_word(word));
        assert!(!RequestCell::is_cell_word(LabelSet::as_word(&bucket)));
        // SAFETY: `word` owns a reference until the release at the end; captured samples are
        // released once each.
        unsafe {
            LabelSet::capture_sample_word(word);
            LabelSet::capture_sample_word(word);
        }
        cell.current().counters.get();
        assert_eq!(cell.charge(1000).id(), bucket.id());
        assert_eq!(bucket.live_samples(), 2);
        assert_eq!(bucket.external_bytes(), 0, "charge only names the set");
        bucket.add_external(1000);

        assert!(cell.bind(Arc::clone(&route)));
        assert!(
            !cell.bind(Arc::clone(&route)),
            "binding the current set changes nothing"
        );
        assert_eq!(bucket.live_samples(), 0);
        assert_eq!(route.live_samples(), 2);
        assert_eq!(bucket.external_bytes(), 0);
        assert_eq!(route.external_bytes(), 1000);
        assert_eq!(cell.current().id(), route.id());

        // The free after the binding is credited to the route, which holds the bytes now.
        cell.credit(1000).add_external(-1000);
        assert_eq!(route.external_bytes(), 0);
        // SAFETY: as above.
        unsafe {
            let resolved = LabelSet::retain_resolved_word(word);
            assert_eq!(resolved, LabelSet::as_word(&route));
            LabelSet::release_word(resolved);
            LabelSet::release_sample_word(word);
            let dead = LabelSet::adopt_dead_sample_word(word);
            assert!(Arc::ptr_eq(&dead, &route));
            LabelSet::release_word(word);
        }
        assert_eq!(route.live_samples(), 0);
        assert_eq!(Arc::strong_count(&cell), 1);
        drop(cell);
        assert_eq!(Arc::strong_count(&bucket), 2, "registry + test");
        assert_eq!(Arc::strong_count(&route), 2, "registry + test");
    }

    #[test]
    fn bindings_past_the_limit_are_ignored() {
        let reg = LabelRegistry::new(20);
        let sets: Vec<_> = (0..10)
            .map(|i| reg.intern(p(&[("route", &i.to_string())])).unwrap())
            .collect();
        let cell = RequestCell::new(Arc::clone(&sets[0]));
        assert!(!cell.can_bind(&sets[0]), "bound to it already");
        for set in &sets[1..MAX_BINDINGS] {
            assert!(cell.can_bind(set));
            assert!(cell.bind(Arc::clone(set)));
        }
        assert!(!cell.can_bind(&sets[MAX_BINDINGS]));
        assert!(!cell.bind(Arc::clone(&sets[MAX_BINDINGS])));
        assert_eq!(cell.current().id(), sets[MAX_BINDINGS - 1].id());
    }

    #[test]
    fn frees_racing_bindings_credit_the_set_that_holds_the_bytes() {
        let reg = LabelRegistry::new(20);
        let sets: Vec<_> = (0..MAX_BINDINGS)
            .map(|i| reg.intern(p(&[("route", &i.to_string())])).unwrap())
            .collect();
        let cell = RequestCell::new(Arc::clone(&sets[0]));
        const BLOCKS: u64 = 200_000;
        for _ in 0..BLOCKS {
            cell.charge(8).add_external(8);
        }
        std::thread::scope(|scope| {
            let freeing = scope.spawn(|| {
                for _ in 0..BLOCKS {
                    cell.credit(8).add_external(-8);
                }
            });
            // Each binding lands while the other thread is freeing: after another eighth of the
            // bytes is gone.
            for (i, set) in sets.iter().enumerate().skip(1) {
                let below = BLOCKS * 8 * (MAX_BINDINGS - i) as u64 / MAX_BINDINGS as u64;
                while cell.external_bytes() > below {
                    std::hint::spin_loop();
                }
                assert!(cell.bind(Arc::clone(set)));
            }
            freeing.join().unwrap();
        });
        for set in &sets {
            assert_eq!(set.external_bytes(), 0, "{set}");
        }
        assert_eq!(cell.external_bytes(), 0);
    }
}
