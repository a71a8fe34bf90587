//! [`LabelRegistry`]: interns label sets for one isolate, gives each a compact id and prunes the
//! sets nobody uses.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use dashmap::DashMap;
use smallvec::SmallVec;

use super::hasher::Prehashed;
use super::limits::{DEFAULT_MAX_SETS, MAX_ID, OVERFLOW_ID, OVERFLOW_KEY, OVERFLOW_VALUE};
use super::limits::{PRUNE_MIN_CREATED, PRUNE_OVERFLOWED};
use super::validation::validate_and_sort;
use super::LabelSet;
use crate::callback_guard::assert_outside_v8_callback;
use crate::error::Result;
use crate::group_counters::GroupTable;
use crate::set_counters::CounterTable;

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

/// The sets of one content hash: almost always exactly one, kept inline (a new set's bucket is
/// then no allocation of its own).
type Bucket = SmallVec<[Arc<LabelSet>; 1]>;

/// Interns label sets for one isolate. Thread-safe; `intern` hits take only a shard read lock.
///
/// The registry holds one strong reference to every interned set. [`prune`](Self::prune) drops the
/// sets that nobody else references and that hold no external bytes; call it only on the isolate
/// thread at read/intern time, never from a V8 callback.
pub struct LabelRegistry {
    /// Content hash -> sets with that hash (almost always exactly one).
    by_hash: DashMap<u64, Bucket, Prehashed>,
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
    pub(super) counters: CounterTable,
    overflow: Arc<LabelSet>,
}

impl LabelRegistry {
    /// A registry that interns at most `max_sets` distinct sets; past that, [`intern`](Self::intern)
    /// returns the overflow set.
    pub fn new(max_sets: usize) -> Self {
        Self::with_first_id(max_sets, OVERFLOW_ID + 1, Arc::default())
    }

    /// [`new`](Self::new), whose sets count into the group counters `groups` (another registry's,
    /// [`groups`](Self::groups)).
    pub fn with_groups(max_sets: usize, groups: Arc<GroupTable>) -> Self {
        Self::with_first_id(max_sets, OVERFLOW_ID + 1, groups)
    }

    /// [`new`](Self::new), with never-used ids starting at `first_id` instead of 1: lets tests
    /// reach the end of the id space without creating four billion sets.
    pub(super) fn with_first_id(max_sets: usize, first_id: u32, groups: Arc<GroupTable>) -> Self {
        let counters = CounterTable::with_groups(groups);
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
    /// Limits: at most [`MAX_LABELS`](super::MAX_LABELS) pairs, keys
    /// 1..=[`MAX_KEY_BYTES`](super::MAX_KEY_BYTES) bytes, values
    /// 0..=[`MAX_VALUE_BYTES`](super::MAX_VALUE_BYTES) bytes, keys unique and not reserved
    /// ([`is_reserved_key`](super::is_reserved_key)). When the set is new and the registry already
    /// holds `max_sets` sets, the overflow set is returned instead (not an error).
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

    /// The interned set whose pairs equal `pairs` (sorted, as [`LabelSet::pairs`] gives them), if
    /// one is live now; never creates a set. Isolate thread, outside V8 callbacks (it reads the
    /// intern maps): the allocation totals use it to show the figures of a released set under the
    /// live set of the same labels.
    pub fn find(&self, pairs: &[(Box<str>, Box<str>)]) -> Option<Arc<LabelSet>> {
        assert_outside_v8_callback("the registry's intern maps");
        let owned: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let bucket = self.by_hash.get(&self.hash_pairs(&owned))?;
        let found = bucket.iter().find(|s| s.same_pairs(&owned)).cloned();
        found
    }

    /// Finds or creates the set of validated, sorted `pairs`; gives `pairs` back when a new set does
    /// not fit. `pairs` is an owned `Vec` (moved into a new set) or a slice (copied only then).
    fn intern_sorted<P>(&self, pairs: P) -> std::result::Result<Arc<LabelSet>, P>
    where
        P: AsRef<[(String, String)]> + Into<Vec<(String, String)>>,
    {
        assert_outside_v8_callback("the registry's intern maps");
        let hash = self.hash_pairs(pairs.as_ref());

        // Straight to the shard's write lock: lib/ finds the sets it knows without an intern, so
        // what reaches here is mostly new, and a read-locked look first would probe the (cold,
        // when sets come and go) table twice per new set.
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
        // A session with groupBy puts the new set in its group before any sample or block of it.
        set.assign_group();
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
        assert_outside_v8_callback("the registry's free ids");
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
    pub(super) fn id_at(&self, index: usize) -> u32 {
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
        assert_outside_v8_callback("the registry's intern maps");
        let hash = *self.by_id.get(&id)?;
        let bucket = self.by_hash.get(&hash)?;
        bucket.iter().find(|s| s.id() == id).cloned()
    }

    /// Number of distinct interned sets, not counting the overflow set.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// Whether no set is interned (the overflow set does not count).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The group counters its sets count into (`group_counters`).
    pub fn groups(&self) -> &Arc<GroupTable> {
        self.counters.groups()
    }

    /// Starts the group counters of a session with groupBy (`keys`, at most `max_groups` groups)
    /// and projects every set, `also` (sets of other registries counting into the same groups:
    /// the isolate's unlabeled-samples set) included. A projection's group is made at its first
    /// charge (`group_counters`): sets merely alive from before take no group. Isolate thread,
    /// before the session's first sample.
    pub fn start_grouping(&self, keys: Vec<String>, max_groups: usize, also: &[&LabelSet]) {
        self.groups().start(keys, max_groups, self.max_sets());
        self.overflow.assign_group();
        for set in self.live_sets() {
            set.assign_group();
        }
        for set in also {
            set.assign_group();
        }
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
        assert_outside_v8_callback("the registry's intern maps");
        self.created_since_prune.store(0, Ordering::Relaxed);
        self.overflowed_since_prune.store(0, Ordering::Relaxed);
        let mut removed = Vec::new();
        self.by_hash.retain(|_, bucket| {
            bucket.retain(|set| {
                let unused = Arc::strong_count(set) == 1 && set.external_bytes() == 0;
                if unused {
                    removed.push(set.id());
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
    /// the last prune reach as many as it held before them (at least [`PRUNE_MIN_CREATED`]): a
    /// walk per as many new sets as it visits, whose entries are cold in memory when sets come and
    /// go (a walk every third of that was a seventh of a first use's time at 10,000 sets), or when
    /// [`PRUNE_OVERFLOWED`] interns were answered with the overflow set since the last prune (so
    /// that sets released while the registry is full make room again). Returns how many sets
    /// were dropped (0 when not due). Same thread rules as `prune`.
    pub fn prune_if_due(&self) -> usize {
        let created = self.created_since_prune.load(Ordering::Relaxed);
        let overflowed = self.overflowed_since_prune.load(Ordering::Relaxed);
        // `len` counts the sets created since: half of it is as many new sets as it held before.
        let due =
            created >= PRUNE_MIN_CREATED.max(self.len() / 2) || overflowed >= PRUNE_OVERFLOWED;
        if due {
            self.prune()
        } else {
            0
        }
    }

    /// Every interned set (not the overflow set), ordered by id.
    pub fn live_sets(&self) -> Vec<Arc<LabelSet>> {
        assert_outside_v8_callback("the registry's intern maps");
        let mut sets: Vec<_> = self
            .by_hash
            .iter()
            .flat_map(|bucket| bucket.value().clone())
            .collect();
        sets.sort_unstable_by_key(|s| s.id());
        sets
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::callback_guard::InV8Callback;
    use crate::labels::*;
    use std::sync::Barrier;

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
    fn ids_of_pruned_sets_are_reused_so_they_never_run_out() {
        // Never-used ids start three short of the end of the id space.
        let reg = LabelRegistry::with_first_id(10, MAX_ID - 2, Arc::default());
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

        // 400 held sets: the threshold grows with the live count (as many new sets as it held).
        let held: Vec<_> = (1000..1400).map(|i| reg.intern(make(i)).unwrap()).collect();
        assert_eq!(
            reg.prune_if_due(),
            0,
            "400 created >= 400 / 2: due, but all are held"
        );
        for i in 2000..2398 {
            reg.intern(make(i)).unwrap();
        }
        assert_eq!(reg.prune_if_due(), 0, "398 < max(64, 798 / 2)");
        reg.intern(make(2398)).unwrap();
        assert_eq!(reg.prune_if_due(), 399, "399 >= 799 / 2");

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
    #[cfg_attr(
        not(debug_assertions),
        ignore = "the guard is compiled into debug builds only"
    )]
    #[should_panic(expected = "taken inside a V8 callback")]
    fn a_registry_lock_inside_a_v8_callback_fails_in_debug_builds() {
        let reg = LabelRegistry::new(10);
        let _callback = InV8Callback::enter();
        let _ = reg.intern(p(&[("k", "v")]));
    }

    #[test]
    fn the_word_api_is_what_a_v8_callback_may_use() {
        let reg = LabelRegistry::new(10);
        let set = reg.intern(p(&[("k", "v")])).unwrap();
        let word = LabelSet::as_word(&set);
        {
            let _callback = InV8Callback::enter();
            // SAFETY: `set` holds a reference for the whole block.
            unsafe {
                LabelSet::capture_sample_word(word);
                LabelSet::release_sample_word(word);
            }
            set.add_external(1);
            set.add_external(-1);
        }
        // Outside the callback again, locking is fine.
        assert_eq!(reg.live_sets().len(), 1);
    }
}
