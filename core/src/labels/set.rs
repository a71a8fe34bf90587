//! [`LabelSet`]: one interned set of labels, its pairs and its counters.

use std::fmt;
use std::sync::atomic::Ordering;

use super::validation::key_order;
use crate::set_counters::SlotRef;

/// One interned set of labels. Obtain it from
/// [`LabelRegistry::intern`](super::LabelRegistry::intern); compare sets by identity
/// (`Arc::ptr_eq`) or by [`id`](Self::id), which is equivalent within one registry.
pub struct LabelSet {
    id: u32,
    overflow: bool,
    pairs: Box<[(Box<str>, Box<str>)]>,
    /// Live samples and external bytes, in the registry's dense table (see `set_counters`).
    pub(super) counters: SlotRef,
}

impl LabelSet {
    pub(super) fn new(
        id: u32,
        overflow: bool,
        pairs: Vec<(String, String)>,
        counters: SlotRef,
    ) -> Self {
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

    /// Compact id in `1..=`[`MAX_ID`](super::MAX_ID), unique among the live sets of the registry
    /// that made this set (a pruned set's id goes to a later set). The overflow set has id
    /// [`OVERFLOW_ID`](super::OVERFLOW_ID).
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
        self.counters.external_changed(delta);
    }

    /// Puts the set in its group of the session with groupBy, if one runs (`group_counters`):
    /// when the session starts and when the set is made. Isolate thread.
    pub(crate) fn assign_group(&self) {
        self.counters.assign_group(&self.pairs, self.overflow);
    }

    /// Samples of this set that V8 still holds (captured and not yet released).
    pub fn live_samples(&self) -> i64 {
        self.counters.get().live_samples.load(Ordering::Relaxed)
    }

    pub(super) fn same_pairs(&self, pairs: &[(String, String)]) -> bool {
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
