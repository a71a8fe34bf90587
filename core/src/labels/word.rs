//! The word API: how a [`LabelSet`] crosses the V8 boundary as one strong reference.
//!
//! A word is `Arc::into_raw(set) as usize` and owns one strong reference. These functions are the
//! only label code that runs inside V8 (allocation path, GC weak callbacks, ArrayBuffer sweeper
//! threads): each is one or two atomic operations, never an allocation or a lock. All of them sit
//! in this one `impl`, so that every `unsafe` contract of the boundary reads in one place.
//!
//! A word may also be a request cell's ([`RequestCell`], tagged with [`CELL_TAG`]): the functions
//! that V8's sample and holder paths call take either kind (one branch on the tag); those named
//! for a set (`word_as_ref`, `from_word`) take set words only, and reads turn a cell into its
//! current set first ([`retain_resolved_word`](LabelSet::retain_resolved_word)).

use std::sync::Arc;

use super::cell::{RequestCell, CELL_TAG};
use super::LabelSet;

/// The labels of a dead sample ([`LabelSet::adopt_dead_sample`]).
#[derive(Debug)]
pub enum DeadSampleLabels {
    /// Its set: a plain set's, or the set a routed request's cell is bound to.
    Set(Arc<LabelSet>),
    /// The cell of a request that routing has not bound yet: its set is still to be decided.
    Unbound(Arc<RequestCell>),
}

impl LabelSet {
    /// Turns one strong reference into a word for the V8 boundary. The word owns that reference
    /// until it is given back to [`release_word`](Self::release_word) or [`from_word`](Self::from_word).
    /// A word is never 0, so 0 can stand for "no labels".
    pub fn into_word(this: Arc<Self>) -> usize {
        Arc::into_raw(this) as usize
    }

    /// The word of `this` *without* transferring a reference (e.g. to store in a holder's aligned
    /// pointer field after [`retain_word`](Self::retain_word), or to compare with a word).
    pub fn as_word(this: &Arc<Self>) -> usize {
        Arc::as_ptr(this) as usize
    }

    /// Adds one strong reference to the set behind `word` (the new reference is owned by whoever
    /// now holds a copy of the word).
    ///
    /// Runs inside V8's `SampleObject` (allocation path, GC forbidden): one atomic increment, no
    /// allocation, no lock.
    ///
    /// # Safety
    /// `word` must come from [`into_word`](Self::into_word) or [`as_word`](Self::as_word) of a set
    /// that is still alive (at least one reference is held for the duration of the call).
    #[inline]
    pub unsafe fn retain_word(word: usize) {
        if word & CELL_TAG != 0 {
            // SAFETY: a live cell's word (caller's guarantee).
            return unsafe { RequestCell::retain_word(word) };
        }
        // SAFETY: the caller guarantees that `word` is `Arc::as_ptr`/`into_raw` of a live
        // `Arc<LabelSet>`, which is exactly the precondition of `increment_strong_count`.
        unsafe { Arc::increment_strong_count(word as *const LabelSet) }
    }

    /// For a read of V8's samples: a word with a new reference to the set `word` stands for now
    /// (`word` itself for a set, the current set for a request cell). Isolate thread; one atomic
    /// increment.
    ///
    /// # Safety
    /// As for [`retain_word`](Self::retain_word).
    #[inline]
    pub unsafe fn retain_resolved_word(word: usize) -> usize {
        if word & CELL_TAG != 0 {
            // SAFETY: a live cell's word (caller's guarantee).
            let cell = unsafe { RequestCell::word_as_ref(word) };
            return Self::into_word(cell.current_arc());
        }
        // SAFETY: as in `retain_word`.
        unsafe { Self::retain_word(word) };
        word
    }

    /// Gives back the strong reference owned by `word`.
    ///
    /// Runs from V8's GC weak callbacks, at profiler stop, and on ArrayBuffer sweeper threads: one
    /// atomic decrement, no lock. It frees the set (a plain heap free, no lock of ours) only when
    /// this was the last reference, which can happen only after
    /// [`LabelRegistry::prune`](super::LabelRegistry::prune) or registry drop released the
    /// registry's own reference.
    ///
    /// # Safety
    /// `word` must own a reference (from [`into_word`](Self::into_word) or a matching
    /// [`retain_word`](Self::retain_word)) that has not been released yet; the word must not be
    /// used again by this owner afterwards.
    #[inline]
    pub unsafe fn release_word(word: usize) {
        if word & CELL_TAG != 0 {
            // SAFETY: the word owns a reference of a live cell (caller's guarantee).
            return unsafe { RequestCell::release_word(word) };
        }
        // SAFETY: the caller guarantees that `word` owns one strong reference of a live
        // `Arc<LabelSet>`; decrementing gives exactly that reference back.
        unsafe { Arc::decrement_strong_count(word as *const LabelSet) }
    }

    /// Borrows the set behind a set word (never a cell's) without touching the reference count.
    ///
    /// Safe to call on any thread and inside V8 callbacks: no allocation, no lock, no atomic write.
    ///
    /// # Safety
    /// `word` must be the word of a live set and a reference must be held for all of `'a`.
    #[inline]
    pub unsafe fn word_as_ref<'a>(word: usize) -> &'a LabelSet {
        // SAFETY: the caller guarantees that `word` points to a live `LabelSet` inside an `Arc`
        // allocation that stays alive for `'a`; `LabelSet` is only mutated through atomics.
        unsafe { &*(word as *const LabelSet) }
    }

    /// Turns a word back into the `Arc` it owns (consumes the word's reference).
    ///
    /// No allocation, no lock, no atomic operation.
    ///
    /// # Safety
    /// Same as [`release_word`](Self::release_word).
    #[inline]
    pub unsafe fn from_word(word: usize) -> Arc<LabelSet> {
        // SAFETY: the caller guarantees that `word` owns one reference from `Arc::into_raw` (or a
        // matching increment); `from_raw` adopts it.
        unsafe { Arc::from_raw(word as *const LabelSet) }
    }
    /// [`retain_word`](Self::retain_word) for a sampled allocation: also counts a live sample.
    ///
    /// Runs inside V8's `SampleObject` (GC forbidden): two atomic increments, nothing else.
    ///
    /// # Safety
    /// As for [`retain_word`](Self::retain_word).
    #[inline]
    pub unsafe fn capture_sample_word(word: usize) {
        // SAFETY: the caller guarantees that `word` is a live set or cell (see `retain_word`).
        unsafe {
            if word & CELL_TAG != 0 {
                RequestCell::word_as_ref(word).sample_taken();
            } else {
                Self::word_as_ref(word).counters.sample_taken();
            }
            Self::retain_word(word);
        }
    }

    /// Takes over the reference [`capture_sample_word`](Self::capture_sample_word) took, for a
    /// sample V8 reports dead: the sample no longer counts as live, and its reference goes on to
    /// the allocation totals ([`crate::allocations`]).
    ///
    /// Runs from V8's GC weak callbacks: one atomic decrement, nothing else.
    ///
    /// # Safety
    /// As for [`from_word`](Self::from_word).
    #[inline]
    pub unsafe fn adopt_dead_sample_word(word: usize) -> Arc<LabelSet> {
        if word & CELL_TAG != 0 {
            // SAFETY: the word owns a reference of a live cell (caller's guarantee), given back
            // after the cell's current set was taken.
            unsafe {
                let cell = RequestCell::word_as_ref(word);
                cell.sample_dropped();
                let set = cell.current_arc();
                RequestCell::release_word(word);
                return set;
            }
        }
        // SAFETY: the word owns its reference (caller's guarantee), so the set is alive while the
        // counter is updated, and `from_word` adopts that reference.
        unsafe {
            Self::word_as_ref(word).counters.sample_dropped();
            Self::from_word(word)
        }
    }

    /// Takes over the reference [`capture_sample_word`](Self::capture_sample_word) took, for a
    /// sample V8 reports dead, keeping a request's cell while the request is not routed yet: its
    /// set is decided later (the allocation totals resolve it at their next read). A set word, or
    /// the cell of a routed request, gives its set as [`adopt_dead_sample_word`] does.
    ///
    /// Runs from V8's GC weak callbacks: atomics only.
    ///
    /// # Safety
    /// As for [`adopt_dead_sample_word`](Self::adopt_dead_sample_word).
    ///
    /// [`adopt_dead_sample_word`]: Self::adopt_dead_sample_word
    #[inline]
    pub unsafe fn adopt_dead_sample(word: usize) -> DeadSampleLabels {
        if word & CELL_TAG != 0 {
            // SAFETY: the word owns a reference of a live cell (caller's guarantee); `from_word`
            // adopts it after the sample stopped counting as live.
            let cell = unsafe {
                RequestCell::word_as_ref(word).sample_dropped();
                RequestCell::from_word(word)
            };
            return if cell.is_bound() {
                DeadSampleLabels::Set(cell.current_arc())
            } else {
                DeadSampleLabels::Unbound(cell)
            };
        }
        // SAFETY: as in `adopt_dead_sample_word`.
        DeadSampleLabels::Set(unsafe { Self::adopt_dead_sample_word(word) })
    }

    /// Gives back a reference taken by [`capture_sample_word`](Self::capture_sample_word) when V8
    /// drops the sample.
    ///
    /// Runs from V8's GC weak callbacks and at profiler stop: atomics only, no lock.
    ///
    /// # Safety
    /// As for [`release_word`](Self::release_word).
    #[inline]
    pub unsafe fn release_sample_word(word: usize) {
        // SAFETY: the word still owns its reference until `release_word` below, so the set or
        // cell is alive while the counter is updated.
        unsafe {
            if word & CELL_TAG != 0 {
                RequestCell::word_as_ref(word).sample_dropped();
            } else {
                Self::word_as_ref(word).counters.sample_dropped();
            }
            Self::release_word(word);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::*;

    #[test]
    fn word_retain_and_release_move_the_refcount() {
        let reg = LabelRegistry::new(10);
        let set = reg.intern(p(&[("k", "v")])).unwrap();
        assert_eq!(Arc::strong_count(&set), 2); // registry + `set`

        let word = LabelSet::into_word(Arc::clone(&set));
        assert_eq!(word, LabelSet::as_word(&set));
        assert_eq!(Arc::strong_count(&set), 3);
        // SAFETY: `word` owns a reference for the whole block; every retain is matched by a release.
        unsafe {
            LabelSet::retain_word(word);
            assert_eq!(Arc::strong_count(&set), 4);
            assert_eq!(LabelSet::word_as_ref(word).get("k"), Some("v"));
            LabelSet::release_word(word);
            assert_eq!(Arc::strong_count(&set), 3);
            let back = LabelSet::from_word(word);
            assert_eq!(Arc::strong_count(&set), 3);
            drop(back);
        }
        assert_eq!(Arc::strong_count(&set), 2);
    }
}
