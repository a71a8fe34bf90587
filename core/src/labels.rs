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

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use dashmap::DashMap;

use crate::error::{LabelError, Result};
use crate::set_counters::{CounterTable, SlotRef};

/// Most pairs in one label set.
pub const MAX_LABELS: usize = 32;
/// Longest key, in bytes of UTF-8. Keys must also be non-empty.
pub const MAX_KEY_BYTES: usize = 128;
/// Longest value, in bytes of UTF-8. Values may be empty.
pub const MAX_VALUE_BYTES: usize = 1024;
/// Default cap on distinct label sets per registry (`maxLabelSets`).
pub const DEFAULT_MAX_SETS: usize = 10_000;
/// Key of the single pair of the overflow set.
pub const OVERFLOW_KEY: &str = "heap_labels.overflow";
/// Value of the single pair of the overflow set.
pub const OVERFLOW_VALUE: &str = "true";
/// Id of every registry's overflow set; interned sets are numbered from 1.
pub const OVERFLOW_ID: u32 = 0;
/// Highest id of an interned set. `u32::MAX` is never an id, so that the boundary can use it for
/// "no set".
pub const MAX_ID: u32 = u32::MAX - 1;
/// Keys starting with this are reserved for heap-labels' own labels (the overflow set's key).
pub const RESERVED_KEY_PREFIX: &str = "heap_labels.";
/// [`LabelRegistry::prune_if_due`] prunes after at least this many new sets...
pub const PRUNE_MIN_CREATED: usize = 64;
/// ...or after this many interns answered with the overflow set.
pub const PRUNE_OVERFLOWED: usize = 256;

/// One interned set of labels. Obtain it from [`LabelRegistry::intern`]; compare sets by identity
/// (`Arc::ptr_eq`) or by [`id`](Self::id), which is equivalent within one registry.
pub struct LabelSet {
    id: u32,
    overflow: bool,
    pairs: Box<[(Box<str>, Box<str>)]>,
    /// Live samples and external bytes, in the registry's dense table (see `set_counters`).
    counters: SlotRef,
}

impl LabelSet {
    fn new(id: u32, overflow: bool, pairs: Vec<(String, String)>, counters: SlotRef) -> Self {
        let pairs = pairs
            .into_iter()
            .map(|(k, v)| (k.into_boxed_str(), v.into_boxed_str()))
            .collect();
        LabelSet {
            id,
            overflow,
            pairs,
            counters,
        }
    }

    /// Compact id in `1..=`[`MAX_ID`], unique among the live sets of the registry that made this
    /// set (a pruned set's id goes to a later set). The overflow set has id [`OVERFLOW_ID`].
    pub fn id(&self) -> u32 {
        self.id
    }

    /// How many sets of its registry have had this set's id, this one included (1 for the first).
    /// `(id, generation)` names this set for ever: lib/ keys its id -> labels cache by it, so an
    /// entry of a pruned set is never taken for the later set that got its id.
    pub fn generation(&self) -> u64 {
        self.counters.get().generation.load(Ordering::Relaxed)
    }

    /// The pairs, sorted by key in [`key_order`]; keys are unique.
    pub fn pairs(&self) -> &[(Box<str>, Box<str>)] {
        &self.pairs
    }

    /// The value of `key`, if the set has it (binary search).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .binary_search_by(|(k, _)| key_order(k, key))
            .ok()
            .map(|i| &*self.pairs[i].1)
    }

    /// Whether this is the registry's overflow set (handed out once `maxLabelSets` is reached).
    pub fn is_overflow(&self) -> bool {
        self.overflow
    }

    /// External (ArrayBuffer) bytes currently charged to this set. Relaxed load: a racy but
    /// torn-free snapshot.
    pub fn external_bytes(&self) -> i64 {
        self.counters.get().external.load(Ordering::Relaxed)
    }

    /// Adds `delta` (negative on free) to [`external_bytes`](Self::external_bytes).
    ///
    /// Runs on V8's ArrayBuffer allocation path and on sweeper threads: one relaxed atomic add,
    /// no allocation, no lock.
    #[inline]
    pub fn add_external(&self, delta: i64) {
        let counters = self.counters.get();
        let now = counters.external.fetch_add(delta, Ordering::Relaxed) + delta;
        if delta > 0 {
            counters.external_peak.fetch_max(now, Ordering::Relaxed);
        }
    }

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
        // SAFETY: the caller guarantees that `word` is `Arc::as_ptr`/`into_raw` of a live
        // `Arc<LabelSet>`, which is exactly the precondition of `increment_strong_count`.
        unsafe { Arc::increment_strong_count(word as *const LabelSet) }
    }

    /// Gives back the strong reference owned by `word`.
    ///
    /// Runs from V8's GC weak callbacks, at profiler stop, and on ArrayBuffer sweeper threads:
    /// one atomic decrement, no lock. It frees the set (a plain heap free, no lock of ours) only
    /// when this was the last reference, which can happen only after [`LabelRegistry::prune`] or
    /// registry drop released the registry's own reference.
    ///
    /// # Safety
    /// `word` must own a reference (from [`into_word`](Self::into_word) or a matching
    /// [`retain_word`](Self::retain_word)) that has not been released yet; the word must not be
    /// used again by this owner afterwards.
    #[inline]
    pub unsafe fn release_word(word: usize) {
        // SAFETY: the caller guarantees that `word` owns one strong reference of a live
        // `Arc<LabelSet>`; decrementing gives exactly that reference back.
        unsafe { Arc::decrement_strong_count(word as *const LabelSet) }
    }

    /// Borrows the set behind `word` without touching the reference count.
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

    fn same_pairs(&self, pairs: &[(String, String)]) -> bool {
        self.pairs.len() == pairs.len()
            && self
                .pairs
                .iter()
                .zip(pairs)
                .all(|((k, v), (k2, v2))| **k == **k2 && **v == **v2)
    }
}

impl fmt::Debug for LabelSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LabelSet")
            .field("id", &self.id)
            .field("pairs", &self.pairs)
            .field("overflow", &self.overflow)
            .field("external_bytes", &self.external_bytes())
            .finish()
    }
}

/// `{key="value", other="x"}`
impl fmt::Display for LabelSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, (k, v)) in self.pairs.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{k}={v:?}")?;
        }
        f.write_str("}")
    }
}

/// Hasher for keys that already are hashes (content hashes) or small ids: no second SipHash on the
/// lookup path. Ids are spread with a Fibonacci multiply so that DashMap, which picks shards by the
/// high bits, does not put every sequential id into one shard.
#[derive(Default)]
struct PrehashedHasher(u64);

impl Hasher for PrehashedHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Not used by the two key types (u64, u32); kept correct anyway.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type Prehashed = BuildHasherDefault<PrehashedHasher>;

/// What [`LabelRegistry::try_intern`] found.
#[derive(Debug)]
pub enum Interned {
    /// The one set equal to the pairs.
    Set(Arc<LabelSet>),
    /// The set is new and the registry is full: the validated pairs, for a later
    /// [`LabelRegistry::retry`]. Meanwhile the owner uses the overflow set.
    Full(PendingLabels),
}

/// Validated, sorted label pairs that did not fit into a full registry
/// ([`LabelRegistry::try_intern`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingLabels {
    pairs: Vec<(String, String)>,
}

impl PendingLabels {
    /// The pairs, sorted by key.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }
}

/// Interns label sets for one isolate. Thread-safe; `intern` hits take only a shard read lock.
///
/// The registry holds one strong reference to every interned set. [`prune`](Self::prune) drops the
/// sets that nobody else references and that hold no external bytes; call it only on the isolate
/// thread at read/intern time, never from a V8 callback.
pub struct LabelRegistry {
    /// Content hash -> sets with that hash (almost always exactly one).
    by_hash: DashMap<u64, Vec<Arc<LabelSet>>, Prehashed>,
    /// Id -> content hash, to find a set by id.
    by_id: DashMap<u32, u64, Prehashed>,
    hasher: RandomState,
    len: AtomicUsize,
    max_sets: AtomicUsize,
    /// The next never-used id; ids of pruned sets go to `free_ids` and are handed out first.
    next_id: AtomicU32,
    /// Ids of pruned sets. Taken under a `by_hash` shard lock (intern), filled by `prune` after its
    /// walk; never touched from V8 callbacks.
    free_ids: Mutex<Vec<u32>>,
    /// Sets created since the last prune (drives [`LabelRegistry::prune_if_due`]).
    created_since_prune: AtomicUsize,
    /// Interns answered with the overflow set since the last prune.
    overflowed_since_prune: AtomicUsize,
    /// The first never-used id (1 but in tests): ids map to slot indexes from it.
    first_id: u32,
    /// Every set's counters, by slot index (the overflow set's is 0).
    counters: CounterTable,
    overflow: Arc<LabelSet>,
}

impl LabelRegistry {
    /// A registry that interns at most `max_sets` distinct sets; past that, [`intern`](Self::intern)
    /// returns the overflow set.
    pub fn new(max_sets: usize) -> Self {
        Self::with_first_id(max_sets, OVERFLOW_ID + 1)
    }

    /// [`new`](Self::new), with never-used ids starting at `first_id` instead of 1: lets tests
    /// reach the end of the id space without creating four billion sets.
    fn with_first_id(max_sets: usize, first_id: u32) -> Self {
        let counters = CounterTable::default();
        let overflow = LabelSet::new(
            OVERFLOW_ID,
            true,
            vec![(OVERFLOW_KEY.to_owned(), OVERFLOW_VALUE.to_owned())],
            counters.claim(0),
        );
        LabelRegistry {
            by_hash: DashMap::with_hasher(Prehashed::default()),
            by_id: DashMap::with_hasher(Prehashed::default()),
            hasher: RandomState::new(),
            len: AtomicUsize::new(0),
            max_sets: AtomicUsize::new(max_sets),
            next_id: AtomicU32::new(first_id),
            free_ids: Mutex::new(Vec::new()),
            created_since_prune: AtomicUsize::new(0),
            overflowed_since_prune: AtomicUsize::new(0),
            first_id,
            counters,
            overflow: Arc::new(overflow),
        }
    }

    /// Changes the cap. Lowering it below [`len`](Self::len) keeps the existing sets; new distinct
    /// sets overflow until pruning brings the count under the cap.
    pub fn set_max_sets(&self, max_sets: usize) {
        self.max_sets.store(max_sets, Ordering::Relaxed);
    }

    /// The current cap on distinct sets.
    pub fn max_sets(&self) -> usize {
        self.max_sets.load(Ordering::Relaxed)
    }

    /// Validates `pairs` (any order), sorts them by key and returns the one set equal to them.
    ///
    /// Limits: at most [`MAX_LABELS`] pairs, keys 1..=[`MAX_KEY_BYTES`] bytes, values
    /// 0..=[`MAX_VALUE_BYTES`] bytes, keys unique and not reserved ([`is_reserved_key`]). When the
    /// set is new and the registry already holds `max_sets` sets, the overflow set is returned
    /// instead (not an error).
    ///
    /// The hit path sorts in place and compares against the stored set by borrowed strings: it
    /// allocates nothing beyond the caller's `pairs`.
    pub fn intern(&self, pairs: Vec<(String, String)>) -> Result<Arc<LabelSet>> {
        Ok(match self.try_intern(pairs)? {
            Interned::Set(set) => set,
            Interned::Full(_) => self.overflow(),
        })
    }

    /// [`intern`](Self::intern), but when the registry is full the validated pairs come back as
    /// [`PendingLabels`] (instead of the overflow set), to be [`retry`](Self::retry)'d once there is
    /// room: what a long-lived owner of the labels (a label holder) needs to leave the overflow set.
    pub fn try_intern(&self, mut pairs: Vec<(String, String)>) -> Result<Interned> {
        validate_and_sort(&mut pairs)?;
        Ok(match self.intern_sorted(pairs) {
            Ok(set) => Interned::Set(set),
            Err(pairs) => Interned::Full(PendingLabels { pairs }),
        })
    }

    /// The set equal to `pending`, interning it if there is room now; `None` while the registry is
    /// still full (counted like an overflowed [`intern`](Self::intern) for
    /// [`prune_if_due`](Self::prune_if_due)). Allocates only when it creates the set.
    pub fn retry(&self, pending: &PendingLabels) -> Option<Arc<LabelSet>> {
        self.intern_sorted(pending.pairs.as_slice()).ok()
    }

    /// Finds or creates the set of validated, sorted `pairs`; gives `pairs` back when a new set does
    /// not fit. `pairs` is an owned `Vec` (moved into a new set) or a slice (copied only then).
    fn intern_sorted<P>(&self, pairs: P) -> std::result::Result<Arc<LabelSet>, P>
    where
        P: AsRef<[(String, String)]> + Into<Vec<(String, String)>>,
    {
        let hash = self.hash_pairs(pairs.as_ref());

        if let Some(bucket) = self.by_hash.get(&hash) {
            if let Some(set) = bucket.iter().find(|s| s.same_pairs(pairs.as_ref())) {
                return Ok(Arc::clone(set));
            }
        }

        // Miss: take the shard's write lock and look again (another thread may have won the race).
        let mut bucket = self.by_hash.entry(hash).or_default();
        if let Some(set) = bucket.iter().find(|s| s.same_pairs(pairs.as_ref())) {
            return Ok(Arc::clone(set));
        }
        let Some(id) = self.reserve_slot() else {
            let empty = bucket.is_empty();
            drop(bucket);
            if empty {
                self.by_hash.remove_if(&hash, |_, b| b.is_empty());
            }
            self.overflowed_since_prune.fetch_add(1, Ordering::Relaxed);
            return Err(pairs);
        };
        let slot = self.counters.claim(self.slot_index(id));
        let set = Arc::new(LabelSet::new(id, false, pairs.into(), slot));
        bucket.push(Arc::clone(&set));
        drop(bucket);
        self.by_id.insert(id, hash);
        self.created_since_prune.fetch_add(1, Ordering::Relaxed);
        Ok(set)
    }

    /// Reserves room for one more set and its id; `None` when the cap is reached or ids ran out
    /// (every id in `1..=MAX_ID` held by a live set).
    fn reserve_slot(&self) -> Option<u32> {
        let max = self.max_sets.load(Ordering::Relaxed);
        self.len
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()?;
        let id = self.take_id();
        if id.is_none() {
            self.len.fetch_sub(1, Ordering::AcqRel);
        }
        id
    }

    /// A free id: one of a pruned set first, else the next never-used one.
    fn take_id(&self) -> Option<u32> {
        let reused = self
            .free_ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        reused.or_else(|| {
            self.next_id
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |id| {
                    (id <= MAX_ID).then(|| id + 1)
                })
                .ok()
        })
    }

    /// Where the counters of the set with `id` sit in the dense table: ids are compact (the lowest
    /// free ones are handed out again), so the table stays as long as the most sets held at once.
    fn slot_index(&self, id: u32) -> usize {
        if id == OVERFLOW_ID {
            0
        } else {
            (id - self.first_id) as usize + 1
        }
    }

    /// The id of the set whose counters sit at `index` ([`slot_index`](Self::slot_index) inverted).
    fn id_at(&self, index: usize) -> u32 {
        if index == 0 {
            OVERFLOW_ID
        } else {
            // An index came from an id, so it fits.
            self.first_id + (index - 1) as u32
        }
    }

    fn hash_pairs(&self, pairs: &[(String, String)]) -> u64 {
        let mut h = self.hasher.build_hasher();
        pairs.len().hash(&mut h);
        for (k, v) in pairs {
            k.as_str().hash(&mut h);
            v.as_str().hash(&mut h);
        }
        h.finish()
    }

    /// The set with this id, if it is still interned (or the overflow set for [`OVERFLOW_ID`]).
    pub fn by_id(&self, id: u32) -> Option<Arc<LabelSet>> {
        if id == OVERFLOW_ID {
            return Some(self.overflow());
        }
        let hash = *self.by_id.get(&id)?;
        let bucket = self.by_hash.get(&hash)?;
        bucket.iter().find(|s| s.id == id).cloned()
    }

    /// Number of distinct interned sets, not counting the overflow set.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// Whether no set is interned (the overflow set does not count).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The registry's overflow set: pairs `[("heap_labels.overflow", "true")]`.
    pub fn overflow(&self) -> Arc<LabelSet> {
        Arc::clone(&self.overflow)
    }

    /// Drops the sets that only the registry references and that hold no external bytes; returns
    /// how many. Their ids go to later sets; interning equal pairs later makes a new set.
    ///
    /// Isolate thread only, at read/intern time (never from a V8 callback). Concurrent `intern`
    /// calls are safe: the reference count is checked under the shard's write lock, and every other
    /// way to get a new reference (a word, a clone) already owns one.
    pub fn prune(&self) -> usize {
        self.created_since_prune.store(0, Ordering::Relaxed);
        self.overflowed_since_prune.store(0, Ordering::Relaxed);
        let mut removed = Vec::new();
        self.by_hash.retain(|_, bucket| {
            bucket.retain(|set| {
                let unused = Arc::strong_count(set) == 1 && set.external_bytes() == 0;
                if unused {
                    removed.push(set.id);
                }
                !unused
            });
            !bucket.is_empty()
        });
        for id in &removed {
            self.by_id.remove(id);
        }
        // Only now, with their `by_id` entries gone, may the ids go to new sets.
        self.free_ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(&removed);
        self.len.fetch_sub(removed.len(), Ordering::AcqRel);
        removed.len()
    }

    /// [`prune`](Self::prune)s only when it is worth it, so that calling this before every
    /// `intern` costs amortized O(1) instead of a walk over all sets: when the sets created since
    /// the last prune reach a quarter of the live sets (at least [`PRUNE_MIN_CREATED`]), or when
    /// [`PRUNE_OVERFLOWED`] interns were answered with the overflow set since the last prune (so
    /// that sets released while the registry is full make room again). Returns how many sets
    /// were dropped (0 when not due). Same thread rules as `prune`.
    pub fn prune_if_due(&self) -> usize {
        let created = self.created_since_prune.load(Ordering::Relaxed);
        let overflowed = self.overflowed_since_prune.load(Ordering::Relaxed);
        let due =
            created >= PRUNE_MIN_CREATED.max(self.len() / 4) || overflowed >= PRUNE_OVERFLOWED;
        if due {
            self.prune()
        } else {
            0
        }
    }

    /// Every interned set (not the overflow set), ordered by id.
    pub fn live_sets(&self) -> Vec<Arc<LabelSet>> {
        let mut sets: Vec<_> = self
            .by_hash
            .iter()
            .flat_map(|bucket| bucket.value().clone())
            .collect();
        sets.sort_unstable_by_key(|s| s.id);
        sets
    }

    /// Writes one row per set (the overflow set first, then by id) with a live sample, external
    /// bytes or an external peak since the previous read into `out`, and returns how many: the
    /// native half of `labelCounters()`, one scan of the dense counter table (see `set_counters`)
    /// into the caller's buffers, allocating nothing. Starts a new external-peak period for every
    /// set it reports. `Err(rows)` without reading anything (no peak is taken) when `out` may be
    /// too short: it needs room for [`counter_rows_bound`](Self::counter_rows_bound) rows. Not from
    /// a V8 callback (takes the table's lock).
    pub fn fill_counter_rows(&self, out: CounterColumns<'_>) -> std::result::Result<usize, usize> {
        let bound = self.counter_rows_bound();
        if out.capacity() < bound {
            return Err(bound);
        }
        let mut rows = 0;
        self.counters.for_each_nonzero(|index, counters| {
            // Only the sets alive now have non-zero slots (a dropped set zeroes its own), and only
            // this thread interns, so the bound holds; a row past it would be a bug, never data.
            assert!(rows < bound, "more counter rows than label sets");
            out.ids[rows] = self.id_at(index);
            out.generations[rows] = counters.generation.load(Ordering::Relaxed) as f64;
            out.samples[rows] = counters.live_samples.load(Ordering::Relaxed) as f64;
            out.external_bytes[rows] = counters.external.load(Ordering::Relaxed) as f64;
            out.external_peak_bytes[rows] = counters.take_external_peak() as f64;
            rows += 1;
        });
        Ok(rows)
    }

    /// Most rows [`fill_counter_rows`](Self::fill_counter_rows) can write now: a row per
    /// interned set and the overflow set's.
    pub fn counter_rows_bound(&self) -> usize {
        self.len() + 1
    }

    /// The sets (overflow included, first) that currently hold non-zero external bytes, with those
    /// bytes: the `external` list of a [`Profile`](crate::Profile).
    pub fn external_by_set(&self) -> Vec<(Arc<LabelSet>, i64)> {
        std::iter::once(self.overflow())
            .chain(self.live_sets())
            .filter_map(|s| {
                let bytes = s.external_bytes();
                (bytes != 0).then_some((s, bytes))
            })
            .collect()
    }
}

impl Default for LabelRegistry {
    fn default() -> Self {
        LabelRegistry::new(DEFAULT_MAX_SETS)
    }
}

impl fmt::Debug for LabelRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LabelRegistry")
            .field("len", &self.len())
            .field("max_sets", &self.max_sets())
            .finish_non_exhaustive()
    }
}

/// Whether user labels may not use `key`: the [`RESERVED_KEY_PREFIX`] namespace (so that no user
/// set can look like the overflow set) and `__proto__` (assigning it to an object sets the
/// prototype instead of a label, so the key would vanish from the JS label object).
pub fn is_reserved_key(key: &str) -> bool {
    key.starts_with(RESERVED_KEY_PREFIX) || key == "__proto__"
}

// ---- per-label counters (read by `counters()` without a profile) -------------------------------

/// The caller's buffers for [`LabelRegistry::fill_counter_rows`]: row `i` is the set with id
/// `ids[i]` and generation `generations[i]` (see [`LabelSet::generation`]).
#[derive(Debug)]
pub struct CounterColumns<'a> {
    pub ids: &'a mut [u32],
    /// Exact in an f64 (generations stay far below 2^53).
    pub generations: &'a mut [f64],
    /// Live samples (captured by V8 and not yet released).
    pub samples: &'a mut [f64],
    /// External bytes charged now.
    pub external_bytes: &'a mut [f64],
    /// Highest external bytes since the previous read (at least `external_bytes`).
    pub external_peak_bytes: &'a mut [f64],
}

impl CounterColumns<'_> {
    /// Rows that fit in all the buffers.
    pub fn capacity(&self) -> usize {
        self.ids
            .len()
            .min(self.generations.len())
            .min(self.samples.len())
            .min(self.external_bytes.len())
            .min(self.external_peak_bytes.len())
    }
}

impl LabelSet {
    /// Samples of this set that V8 still holds (captured and not yet released).
    pub fn live_samples(&self) -> i64 {
        self.counters.get().live_samples.load(Ordering::Relaxed)
    }

    /// [`retain_word`](Self::retain_word) for a sampled allocation: also counts a live sample.
    ///
    /// Runs inside V8's `SampleObject` (GC forbidden): two atomic increments, nothing else.
    ///
    /// # Safety
    /// As for [`retain_word`](Self::retain_word).
    #[inline]
    pub unsafe fn capture_sample_word(word: usize) {
        // SAFETY: the caller guarantees that `word` is a live set (see `retain_word`).
        unsafe {
            Self::word_as_ref(word)
                .counters
                .get()
                .live_samples
                .fetch_add(1, Ordering::Relaxed);
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
        // SAFETY: the word owns its reference (caller's guarantee), so the set is alive while the
        // counter is updated, and `from_word` adopts that reference.
        unsafe {
            Self::word_as_ref(word)
                .counters
                .get()
                .live_samples
                .fetch_sub(1, Ordering::Relaxed);
            Self::from_word(word)
        }
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
        // SAFETY: the word still owns its reference until `release_word` below, so the set is
        // alive while the counter is updated.
        unsafe {
            Self::word_as_ref(word)
                .counters
                .get()
                .live_samples
                .fetch_sub(1, Ordering::Relaxed);
            Self::release_word(word);
        }
    }
}

/// The order of a set's keys: UTF-16 code units, JavaScript's string order, so that lib/ takes a
/// set's pairs as they come. It is UTF-8 byte order except where the first differing characters
/// are one in U+E000..=U+FFFF and one above U+FFFF (which UTF-16 writes as surrogates, below).
pub fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Checks the limits, then sorts by key and rejects duplicate keys.
fn validate_and_sort(pairs: &mut [(String, String)]) -> Result<()> {
    if pairs.len() > MAX_LABELS {
        return Err(LabelError::TooManyLabels {
            count: pairs.len(),
            max: MAX_LABELS,
        });
    }
    for (key, value) in pairs.iter() {
        if key.is_empty() {
            return Err(LabelError::EmptyKey);
        }
        if is_reserved_key(key) {
            return Err(LabelError::ReservedKey {
                key: preview(key, MAX_KEY_BYTES),
            });
        }
        if key.len() > MAX_KEY_BYTES {
            return Err(LabelError::KeyTooLong {
                key: preview(key, MAX_KEY_BYTES),
                len: key.len(),
                max: MAX_KEY_BYTES,
            });
        }
        if value.len() > MAX_VALUE_BYTES {
            return Err(LabelError::ValueTooLong {
                key: key.clone(),
                len: value.len(),
                max: MAX_VALUE_BYTES,
            });
        }
    }
    pairs.sort_unstable_by(|a, b| key_order(&a.0, &b.0));
    if let Some(w) = pairs.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(LabelError::DuplicateKey {
            key: w[0].0.clone(),
        });
    }
    Ok(())
}

/// `s` cut to at most `max` bytes on a char boundary, with `...` appended when cut.
fn preview(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    /// `fill_counter_rows` into buffers of exactly the bound, trimmed to the rows written.
    #[derive(Debug)]
    struct Rows {
        ids: Vec<u32>,
        generations: Vec<f64>,
        samples: Vec<f64>,
        external_bytes: Vec<f64>,
        external_peak_bytes: Vec<f64>,
    }

    impl Rows {
        fn len(&self) -> usize {
            self.ids.len()
        }
        fn is_empty(&self) -> bool {
            self.ids.is_empty()
        }
    }

    fn counter_rows(reg: &LabelRegistry) -> Rows {
        let n = reg.counter_rows_bound();
        let (mut ids, mut generations, mut samples, mut external, mut peak) = (
            vec![0; n],
            vec![0.0; n],
            vec![0.0; n],
            vec![0.0; n],
            vec![0.0; n],
        );
        let rows = reg
            .fill_counter_rows(CounterColumns {
                ids: &mut ids,
                generations: &mut generations,
                samples: &mut samples,
                external_bytes: &mut external,
                external_peak_bytes: &mut peak,
            })
            .unwrap();
        for column in [&mut generations, &mut samples, &mut external, &mut peak] {
            column.truncate(rows);
        }
        ids.truncate(rows);
        Rows {
            ids,
            generations,
            samples,
            external_bytes: external,
            external_peak_bytes: peak,
        }
    }

    #[test]
    fn keys_sort_in_javascript_order() {
        // U+FF5E (one UTF-16 unit, 0xFF5E) against U+1F600 (surrogates 0xD83D 0xDE00): UTF-8 bytes
        // put U+FF5E first, JavaScript's `sort()` puts U+1F600 first; a set follows JavaScript.
        let reg = LabelRegistry::new(10);
        let set = reg
            .intern(p(&[
                ("\u{FF5E}", "wide"),
                ("\u{1F600}", "astral"),
                ("a", "ascii"),
            ]))
            .unwrap();
        let keys: Vec<&str> = set.pairs().iter().map(|(k, _)| &**k).collect();
        assert_eq!(keys, ["a", "\u{1F600}", "\u{FF5E}"]);
        assert_eq!(set.get("\u{FF5E}"), Some("wide"));
        assert_eq!(set.get("\u{1F600}"), Some("astral"));
        assert_eq!(set.get("b"), None);
    }

    #[test]
    fn buffers_too_short_for_the_bound_are_refused_before_any_peak_is_taken() {
        let reg = LabelRegistry::new(10);
        let set = reg.intern(vec![("k".into(), "v".into())]).unwrap();
        set.add_external(10);
        set.add_external(-10);
        let (mut ids, mut f) = ([0u32; 1], [[0.0f64; 1]; 4]);
        let [g, a, b, c] = &mut f;
        let short = CounterColumns {
            ids: &mut ids,
            generations: g,
            samples: a,
            external_bytes: b,
            external_peak_bytes: c,
        };
        assert_eq!(reg.fill_counter_rows(short), Err(2));
        let rows = counter_rows(&reg);
        assert_eq!(
            (rows.ids.as_slice(), rows.external_peak_bytes[0]),
            ([set.id()].as_slice(), 10.0)
        );
    }

    #[test]
    fn counter_rows_report_each_set_with_counts_once_by_its_id() {
        let reg = LabelRegistry::new(10_000);
        // More sets than one chunk of the counter table; keep half, so that a prune leaves holes.
        let sets: Vec<_> = (0..2000)
            .map(|i| reg.intern(vec![("k".into(), format!("v{i}"))]).unwrap())
            .collect();
        assert!(
            counter_rows(&reg).is_empty(),
            "no set has anything to report yet"
        );
        for (i, set) in sets.iter().enumerate() {
            // SAFETY: `sets` keeps every set alive; the reference is released below.
            unsafe { LabelSet::capture_sample_word(LabelSet::as_word(set)) };
            if i % 3 == 0 {
                set.add_external(i as i64 + 1);
            }
        }
        reg.overflow().add_external(5);
        let rows = counter_rows(&reg);
        assert_eq!(rows.len(), 2001);
        assert_eq!((rows.ids[0], rows.external_bytes[0]), (OVERFLOW_ID, 5.0));
        for (row, set) in sets.iter().enumerate().map(|(i, s)| (i + 1, s)) {
            assert_eq!(rows.ids[row], set.id());
            assert_eq!(rows.generations[row], set.generation() as f64);
            assert_eq!(rows.samples[row], 1.0);
            let external = if (row - 1) % 3 == 0 { row as f64 } else { 0.0 };
            assert_eq!(
                (rows.external_bytes[row], rows.external_peak_bytes[row]),
                (external, external)
            );
        }
        reg.overflow().add_external(-5);
        for (i, set) in sets.iter().enumerate() {
            // SAFETY: gives back the reference the capture above took.
            unsafe { LabelSet::release_sample_word(LabelSet::as_word(set)) };
            if i % 3 == 0 {
                set.add_external(-(i as i64 + 1));
            }
        }
        // The external bytes are gone, but their peak is reported once more.
        assert_eq!(counter_rows(&reg).len(), 1 + 667);
        assert!(counter_rows(&reg).is_empty());
        let kept: Vec<_> = sets.into_iter().step_by(2).collect();
        assert_eq!(reg.prune(), 1000);
        for set in &kept {
            set.add_external(1);
        }
        let rows = counter_rows(&reg);
        let mut ids: Vec<_> = kept.iter().map(|s| s.id()).collect();
        ids.sort_unstable();
        assert_eq!(
            rows.ids, ids,
            "rows come in id order, pruned sets have none"
        );
    }

    #[test]
    fn counter_rows_name_ids_near_the_end_of_the_id_space() {
        let reg = LabelRegistry::with_first_id(10, MAX_ID - 2);
        let sets: Vec<_> = (0..3)
            .map(|i| reg.intern(vec![("k".into(), format!("v{i}"))]).unwrap())
            .collect();
        for set in &sets {
            set.add_external(1);
        }
        assert_eq!(counter_rows(&reg).ids, [MAX_ID - 2, MAX_ID - 1, MAX_ID]);
    }

    fn p(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn equal_sets_in_any_order_are_one_arc() {
        let reg = LabelRegistry::new(100);
        let a = reg.intern(p(&[("route", "/a"), ("tenant", "x")])).unwrap();
        let b = reg.intern(p(&[("tenant", "x"), ("route", "/a")])).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.pairs()[0].0.as_ref(), "route");
        assert_eq!(a.pairs()[1].0.as_ref(), "tenant");
        assert_eq!(a.get("tenant"), Some("x"));
        assert_eq!(a.get("missing"), None);
        let c = reg.intern(p(&[("route", "/a"), ("tenant", "y")])).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        assert_ne!(a.id(), c.id());
        assert_eq!(reg.len(), 2);
        assert!(!a.is_overflow());
        assert_eq!(a.to_string(), r#"{route="/a", tenant="x"}"#);
    }

    #[test]
    fn empty_set_is_a_set() {
        let reg = LabelRegistry::new(10);
        let a = reg.intern(vec![]).unwrap();
        let b = reg.intern(vec![]).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(a.pairs().is_empty());
    }

    #[test]
    fn limits_are_enforced_and_name_the_key() {
        let reg = LabelRegistry::new(10);
        let many: Vec<_> = (0..=MAX_LABELS)
            .map(|i| (format!("k{i}"), String::new()))
            .collect();
        assert_eq!(
            reg.intern(many).unwrap_err(),
            LabelError::TooManyLabels { count: 33, max: 32 }
        );
        let exactly: Vec<_> = (0..MAX_LABELS)
            .map(|i| (format!("k{i}"), String::new()))
            .collect();
        assert_eq!(reg.intern(exactly).unwrap().pairs().len(), 32);

        assert_eq!(
            reg.intern(p(&[("", "v")])).unwrap_err(),
            LabelError::EmptyKey
        );

        let long_key = "é".repeat(65); // 130 bytes
        let err = reg.intern(vec![(long_key, "v".into())]).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(
            err,
            LabelError::KeyTooLong {
                len: 130,
                max: 128,
                ..
            }
        ));
        assert!(
            msg.contains("ééé") && msg.contains("130") && msg.contains("128"),
            "{msg}"
        );
        reg.intern(vec![("k".repeat(128), String::new())]).unwrap();

        let err = reg
            .intern(vec![("big".into(), "x".repeat(1025))])
            .unwrap_err();
        assert_eq!(
            err,
            LabelError::ValueTooLong {
                key: "big".into(),
                len: 1025,
                max: 1024
            }
        );
        assert!(err.to_string().contains("\"big\""));
        reg.intern(vec![("big".into(), "x".repeat(1024))]).unwrap();

        let err = reg
            .intern(p(&[("a", "1"), ("dup", "1"), ("dup", "2")]))
            .unwrap_err();
        assert_eq!(err, LabelError::DuplicateKey { key: "dup".into() });
        assert!(err.to_string().contains("\"dup\""));
    }

    #[test]
    fn overflow_past_max_sets() {
        let reg = LabelRegistry::new(2);
        let a = reg.intern(p(&[("k", "1")])).unwrap();
        let _b = reg.intern(p(&[("k", "2")])).unwrap();
        let c = reg.intern(p(&[("k", "3")])).unwrap();
        assert!(c.is_overflow());
        assert_eq!(c.id(), OVERFLOW_ID);
        assert_eq!(c.get(OVERFLOW_KEY), Some("true"));
        assert!(Arc::ptr_eq(&c, &reg.overflow()));
        // Existing sets are still found past the cap.
        assert!(Arc::ptr_eq(&a, &reg.intern(p(&[("k", "1")])).unwrap()));
        assert_eq!(reg.len(), 2);
        assert_eq!(reg.live_sets().len(), 2);

        reg.set_max_sets(3);
        let d = reg.intern(p(&[("k", "3")])).unwrap();
        assert!(!d.is_overflow());
        assert_eq!(reg.len(), 3);
    }

    #[test]
    fn prune_drops_only_unreferenced_sets_without_external_bytes() {
        let reg = LabelRegistry::new(10);
        let held = reg.intern(p(&[("k", "held")])).unwrap();
        let ext = reg.intern(p(&[("k", "ext")])).unwrap();
        ext.add_external(4096);
        let word = LabelSet::into_word(reg.intern(p(&[("k", "word")])).unwrap());
        let gone = reg.intern(p(&[("k", "gone")])).unwrap();
        let gone_id = gone.id();
        drop(gone);
        drop(ext);

        assert_eq!(reg.prune(), 1);
        assert_eq!(reg.len(), 3);
        assert!(reg.by_id(gone_id).is_none());
        assert_eq!(reg.by_id(held.id()).unwrap().get("k"), Some("held"));

        // A pruned set comes back as a new set; its id went to the free list and is reused.
        let again = reg.intern(p(&[("k", "gone")])).unwrap();
        assert_eq!(again.id(), gone_id);
        assert_eq!(
            Arc::strong_count(&again),
            2,
            "a new set: only the registry and `again`"
        );
        drop(again);

        // Releasing the word and the external bytes makes those prunable too.
        // SAFETY: `word` came from `into_word` above and is released exactly once.
        unsafe { LabelSet::release_word(word) };
        let ext = reg
            .live_sets()
            .into_iter()
            .find(|s| s.get("k") == Some("ext"));
        ext.unwrap().add_external(-4096);
        assert_eq!(reg.prune(), 3); // word, ext, again
        assert_eq!(reg.len(), 1);
        assert_eq!(reg.live_sets()[0].id(), held.id());
    }

    #[test]
    fn reserved_keys_are_rejected_naming_the_key() {
        let reg = LabelRegistry::new(10);
        for key in ["heap_labels.overflow", "heap_labels.x", "__proto__"] {
            let err = reg.intern(p(&[("route", "/a"), (key, "v")])).unwrap_err();
            assert_eq!(err, LabelError::ReservedKey { key: key.into() });
            let msg = err.to_string();
            assert!(
                msg.contains(&format!("\"{key}\"")) && msg.contains("reserved"),
                "{msg}"
            );
        }
        assert!(is_reserved_key(OVERFLOW_KEY));
        // Only the dotted namespace and the exact `__proto__` are reserved.
        for key in ["heap_labels", "heap_labelsX.y", "__proto__x", "proto"] {
            reg.intern(p(&[(key, "v")])).unwrap();
        }
        assert_eq!(reg.len(), 4);
        assert!(!reg.live_sets().iter().any(|s| s.is_overflow()));
    }

    #[test]
    fn ids_of_pruned_sets_are_reused_so_they_never_run_out() {
        // Never-used ids start three short of the end of the id space.
        let reg = LabelRegistry::with_first_id(10, MAX_ID - 2);
        let sets: Vec<_> = (0..3)
            .map(|i| reg.intern(p(&[("k", &i.to_string())])).unwrap())
            .collect();
        let ids: Vec<u32> = sets.iter().map(|s| s.id()).collect();
        assert_eq!(ids, [MAX_ID - 2, MAX_ID - 1, MAX_ID]);
        // Every id is held by a live set: a new set overflows although the cap has room.
        assert!(reg.intern(p(&[("k", "new")])).unwrap().is_overflow());
        assert_eq!(reg.len(), 3);

        // A released set gives its id back.
        let freed = ids[1];
        let mut sets = sets;
        drop(sets.remove(1));
        assert_eq!(reg.prune(), 1);
        assert_eq!(sets[0].generation(), 1);
        let new = reg.intern(p(&[("k", "new")])).unwrap();
        assert!(!new.is_overflow());
        assert_eq!(new.id(), freed);
        // Caches of id -> labels outside the registry tell the new set from the pruned one.
        assert_eq!(new.generation(), 2);
        assert!(Arc::ptr_eq(&reg.by_id(freed).unwrap(), &new));
        drop(new);
        assert_eq!(reg.prune(), 1);

        // Creating and releasing sets forever keeps working, within the same few ids; never the
        // overflow id 0 or u32::MAX (the boundary's "no set").
        for i in 0..1000 {
            let set = reg.intern(p(&[("k", &format!("churn-{i}"))])).unwrap();
            assert!(!set.is_overflow(), "set {i} overflowed");
            assert!(set.id() == freed, "id {} of set {i}", set.id());
            assert_eq!(
                reg.by_id(set.id()).unwrap().get("k"),
                Some(&*format!("churn-{i}"))
            );
            drop(set);
            assert_eq!(reg.prune(), 1);
        }
        assert!(sets
            .iter()
            .all(|s| reg.by_id(s.id()).is_some_and(|t| Arc::ptr_eq(s, &t))));
    }

    #[test]
    fn ids_are_unique_among_live_sets_under_churn() {
        let reg = LabelRegistry::new(50);
        let mut live: Vec<Arc<LabelSet>> = Vec::new();
        for round in 0..200 {
            for i in 0..10 {
                live.push(reg.intern(p(&[("k", &format!("{round}-{i}"))])).unwrap());
            }
            // Release every other set, prune, check that live ids are distinct and found by id.
            live = live
                .into_iter()
                .enumerate()
                .filter(|(i, _)| i % 2 == 0)
                .map(|(_, s)| s)
                .collect();
            live.truncate(30);
            reg.prune();
            let ids: std::collections::HashSet<u32> = live.iter().map(|s| s.id()).collect();
            assert_eq!(ids.len(), live.len());
            for set in &live {
                assert!(!set.is_overflow());
                assert!(Arc::ptr_eq(&reg.by_id(set.id()).unwrap(), set));
            }
        }
        assert!(
            reg.live_sets().iter().all(|s| s.id() <= 60),
            "ids stay dense"
        );
    }

    #[test]
    fn pending_labels_are_interned_by_retry_once_there_is_room() {
        let reg = LabelRegistry::new(1);
        let a = reg.intern(p(&[("k", "a")])).unwrap();
        let Interned::Full(pending) = reg.try_intern(p(&[("z", "1"), ("k", "b")])).unwrap() else {
            panic!("the registry is full");
        };
        assert_eq!(
            pending.pairs(),
            p(&[("k", "b"), ("z", "1")]).as_slice(),
            "validated and sorted"
        );
        assert!(reg.retry(&pending).is_none(), "still full");
        // Validation still applies to try_intern.
        assert!(reg.try_intern(p(&[("heap_labels.x", "1")])).is_err());

        drop(a);
        assert!(
            reg.retry(&pending).is_none(),
            "the released set still counts until a prune"
        );
        assert_eq!(reg.prune(), 1);
        let b = reg.retry(&pending).unwrap();
        assert_eq!(b.get("k"), Some("b"));
        // Equal to what intern now returns; a second retry finds the same set.
        assert!(Arc::ptr_eq(
            &b,
            &reg.intern(p(&[("k", "b"), ("z", "1")])).unwrap()
        ));
        assert!(Arc::ptr_eq(&b, &reg.retry(&pending).unwrap()));
        let Interned::Set(same) = reg.try_intern(p(&[("z", "1"), ("k", "b")])).unwrap() else {
            panic!("the set exists now");
        };
        assert!(Arc::ptr_eq(&b, &same));
    }

    #[test]
    fn failed_retries_drive_prune_if_due_like_overflowed_interns() {
        let reg = LabelRegistry::new(1);
        let a = reg.intern(p(&[("k", "a")])).unwrap();
        let Interned::Full(pending) = reg.try_intern(p(&[("k", "b")])).unwrap() else {
            panic!("the registry is full");
        };
        drop(a);
        // A busy label object retried on every use: a prune is due after PRUNE_OVERFLOWED misses,
        // which makes the room the retry then finds.
        let mut uses = 0;
        let set = loop {
            uses += 1;
            reg.prune_if_due();
            if let Some(set) = reg.retry(&pending) {
                break set;
            }
            assert!(uses <= PRUNE_OVERFLOWED + 1, "never recovered");
        };
        assert_eq!(set.get("k"), Some("b"));
        assert!(uses > 1);
    }

    #[test]
    fn prune_if_due_is_amortized() {
        let reg = LabelRegistry::new(1000);
        let make = |i: usize| vec![("k".to_string(), i.to_string())];
        // 63 unreferenced sets: not due yet.
        for i in 0..63 {
            reg.intern(make(i)).unwrap();
        }
        assert_eq!(reg.prune_if_due(), 0);
        assert_eq!(reg.len(), 63);
        reg.intern(make(63)).unwrap();
        assert_eq!(reg.prune_if_due(), 64);
        assert_eq!(reg.prune_if_due(), 0, "counter reset by the prune");

        // 400 held sets: the threshold grows with the live count (a quarter of it).
        let held: Vec<_> = (1000..1400).map(|i| reg.intern(make(i)).unwrap()).collect();
        assert_eq!(
            reg.prune_if_due(),
            0,
            "400 created >= 100: due, but all are held"
        );
        for i in 2000..2132 {
            reg.intern(make(i)).unwrap();
        }
        assert_eq!(reg.prune_if_due(), 0, "132 < max(64, 532 / 4)");
        reg.intern(make(2132)).unwrap();
        assert_eq!(reg.prune_if_due(), 133, "133 >= 533 / 4");

        // Full registry: released sets come back after enough overflowed interns.
        reg.set_max_sets(400);
        drop(held);
        for i in 0..PRUNE_OVERFLOWED {
            assert!(reg.intern(make(5000 + i)).unwrap().is_overflow());
        }
        assert_eq!(reg.prune_if_due(), 400);
        assert!(!reg.intern(make(9999)).unwrap().is_overflow());
    }

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

    #[test]
    fn concurrent_interning_yields_one_set() {
        let reg = Arc::new(LabelRegistry::new(1000));
        let barrier = Arc::new(Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let reg = Arc::clone(&reg);
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    let mut words = Vec::new();
                    for i in 0..200 {
                        // Different order per thread; same content.
                        let mut pairs = p(&[("route", "/shared"), ("n", &(i % 50).to_string())]);
                        if t % 2 == 0 {
                            pairs.reverse();
                        }
                        words.push(LabelSet::into_word(reg.intern(pairs).unwrap()));
                    }
                    words
                })
            })
            .collect();
        let all: Vec<Vec<usize>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(reg.len(), 50);
        for words in &all[1..] {
            assert_eq!(
                words, &all[0],
                "every thread got the same sets in the same order"
            );
        }
        let ids: std::collections::HashSet<u32> = reg.live_sets().iter().map(|s| s.id()).collect();
        assert_eq!(ids.len(), 50);
        for words in all {
            for w in words {
                // SAFETY: each word owns the reference `into_word` gave it; released once here.
                unsafe { LabelSet::release_word(w) };
            }
        }
        assert_eq!(reg.prune(), 50);
    }

    #[test]
    fn concurrent_misses_respect_the_cap() {
        let reg = Arc::new(LabelRegistry::new(100));
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let reg = Arc::clone(&reg);
                std::thread::spawn(move || {
                    (0..100)
                        .filter(|i| {
                            let v = format!("{t}-{i}");
                            reg.intern(vec![("k".into(), v)]).unwrap().is_overflow()
                        })
                        .count()
                })
            })
            .collect();
        let overflowed: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(reg.len(), 100);
        assert_eq!(overflowed, 300);
    }

    #[test]
    fn external_by_set_lists_nonzero_sets_including_overflow() {
        let reg = LabelRegistry::new(1);
        let a = reg.intern(p(&[("k", "a")])).unwrap();
        let o = reg.intern(p(&[("k", "b")])).unwrap();
        assert!(o.is_overflow());
        a.add_external(10);
        o.add_external(7);
        let ext = reg.external_by_set();
        assert_eq!(ext.len(), 2);
        assert!(ext[0].0.is_overflow() && ext[0].1 == 7);
        assert!(Arc::ptr_eq(&ext[1].0, &a) && ext[1].1 == 10);
    }

    #[test]
    fn sample_and_external_peak_counters() {
        let reg = LabelRegistry::new(10);
        let set = reg.intern(p(&[("route", "/a")])).unwrap();
        let word = LabelSet::as_word(&set);
        // SAFETY: `set` holds a reference for the whole test.
        unsafe {
            LabelSet::capture_sample_word(word);
            LabelSet::capture_sample_word(word);
        }
        assert_eq!(set.live_samples(), 2);
        assert_eq!(Arc::strong_count(&set), 4); // registry, `set`, two samples
                                                // SAFETY: gives back one of the two references captured above.
        unsafe { LabelSet::release_sample_word(word) };
        assert_eq!((set.live_samples(), Arc::strong_count(&set)), (1, 3));
        // SAFETY: gives back the other one.
        unsafe { LabelSet::release_sample_word(word) };

        set.add_external(100);
        set.add_external(50);
        set.add_external(-120);
        assert_eq!(set.external_bytes(), 30);
        // The peak since the previous read, as a counters read reports it (0: no row).
        let take_peak = || {
            let rows = counter_rows(&reg);
            let row = rows.ids.iter().position(|&id| id == set.id());
            row.map_or(0.0, |i| rows.external_peak_bytes[i])
        };
        assert_eq!(take_peak(), 150.0);
        // A new period starts at the current value.
        assert_eq!(take_peak(), 30.0);
        set.add_external(-30);
        assert_eq!(take_peak(), 30.0);
        assert_eq!(take_peak(), 0.0);
    }
}
