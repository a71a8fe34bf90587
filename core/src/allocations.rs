//! Allocated bytes and objects per (allocation site, label set): what a session allocated, not
//! only what is still live.
//!
//! V8 keeps a record only for samples whose object is alive. With the patch series' death callback
//! (v8-patches/12.4/0004), V8 hands each dead sample (its label word, node id, size and id) to
//! the addon and forgets it; [`DeadSampleTotals`] adds it to the running total of its
//! (node, label set) group. A read then reports, per group, *allocated* = the dead samples' totals
//! + the live samples allocated in the same window, and *in use* = the live samples.
//!
//! Memory is bounded by sites and label sets, not by allocation volume: at most `max_groups`
//! (node, set) groups, plus one "other sites" group per label set once that is full (label sets
//! are capped by the registry). V8 keeps the nodes of dead samples for the session (one per
//! distinct sampled stack), so a group's node id resolves in every later read.
//!
//! Late binding (docs/architecture.md, "Late binding", step 6): a sample taken under a request's
//! cell that dies before routing binds the cell is kept with the cell, in a bounded pending list,
//! and a read folds it into the group of the set the cell is bound to then: pre-routing garbage
//! goes to the request's route, as its live samples do. Past [`MAX_PENDING_CELLS`] such entries a
//! dead sample resolves at its death (to the request's unrouted bucket).
//!
//! Windows: a read may restart the allocated figures (delta profiles, as continuous profilers
//! collect them). V8's sample ids grow through a session, so after a restarting read whose samples
//! and groups went up to id `w`, samples with ids <= `w` were already counted: live ones as live,
//! dead ones in the groups handed out. The window then starts after `w`.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::estimate;
use crate::labels::{DeadSampleLabels, LabelSet, RequestCell};

/// Node id of the per-label-set group that takes dead samples once `max_groups` groups exist. V8
/// numbers nodes from 1 upwards, so no node has this id; encoders give it an empty stack.
pub const OTHER_SITES_NODE: u32 = u32::MAX;

/// Default bound on (node, label set) groups: about 6 MiB at 96 bytes a group.
pub const DEFAULT_MAX_GROUPS: usize = 1 << 16;

/// Bound on the (node, cell) entries of dead samples of requests not routed yet: about 0.6 MiB
/// with their cells. Reads are rare and requests are routed within milliseconds, so at a read
/// nearly every pending cell is bound.
pub const MAX_PENDING_CELLS: usize = 4096;

/// What one dead sample of `size` bytes stands for at `sample_interval`: (objects, bytes), scaled
/// like the live figures. The one place the allocated figures are estimated.
pub fn dead_sample_estimate(size: u64, sample_interval: u64) -> (f64, f64) {
    let objects = estimate::objects(size, 1, sample_interval);
    (objects, objects * size as f64)
}

/// Estimated allocations of one (node, label set) group.
#[derive(Debug, Clone)]
pub struct AllocatedGroup {
    /// V8 node id of the allocating stack, or [`OTHER_SITES_NODE`].
    pub node_id: u32,
    /// `None` for samples without a label word.
    pub labels: Option<Arc<LabelSet>>,
    /// Estimated objects allocated (scaled like the live figures).
    pub objects: f64,
    /// Estimated bytes allocated.
    pub bytes: f64,
}

/// Dead samples of one (node, cell) whose request was not routed when they died.
#[derive(Debug)]
struct PendingGroup {
    cell: Arc<RequestCell>,
    objects: f64,
    bytes: f64,
}

/// What [`DeadSampleTotals::snapshot`] hands out.
#[derive(Debug, Default)]
pub struct DeadSnapshot {
    /// The dead samples' groups of the window.
    pub groups: Vec<AllocatedGroup>,
    /// Samples with ids up to this were counted before the window began: live samples with
    /// greater ids were allocated in it.
    pub window_start: u64,
}

/// Running totals of dead samples per (node, label set) for one session of one isolate.
///
/// Called from V8's GC weak processing (through the death callback) and from profile reads, both
/// on the isolate's thread; the owner serializes them (a mutex no caller holds across a call into
/// V8, so across a GC).
#[derive(Debug)]
pub struct DeadSampleTotals {
    sample_interval: u64,
    max_groups: usize,
    window_start: u64,
    highest_recorded: u64,
    /// (node id, set address or 0) -> group.
    groups: FxHashMap<(u32, usize), AllocatedGroup>,
    /// (node id, cell address) -> dead samples of a request not routed yet, folded into `groups`
    /// by the cell's set at the next read.
    pending: FxHashMap<(u32, usize), PendingGroup>,
    /// Dead samples that went to an "other sites" group because `groups` was full.
    folded: u64,
}

impl DeadSampleTotals {
    pub fn new(max_groups: usize) -> Self {
        DeadSampleTotals {
            sample_interval: 0,
            max_groups,
            window_start: 0,
            highest_recorded: 0,
            groups: FxHashMap::default(),
            pending: FxHashMap::default(),
            folded: 0,
        }
    }

    /// The session's sample interval (what the estimates scale by).
    pub fn sample_interval(&self) -> u64 {
        self.sample_interval
    }

    /// Starts over for a new session (V8's sample ids restart with it), dropping every group.
    pub fn restart(&mut self, sample_interval: u64) {
        self.sample_interval = sample_interval;
        self.window_start = 0;
        self.highest_recorded = 0;
        self.groups = FxHashMap::default();
        self.pending = FxHashMap::default();
        self.folded = 0;
    }

    /// Adds a dead sample. Runs in V8's GC weak processing: native memory only (a hash map insert
    /// at most), never V8.
    ///
    /// # Safety
    /// `word` is 0 or owns the reference [`LabelSet::capture_sample_word`] took for this sample;
    /// it is consumed.
    pub unsafe fn record(&mut self, word: usize, node_id: u32, size: u64, sample_id: u64) {
        // SAFETY: the caller hands over the sample's reference.
        let labels = (word != 0).then(|| unsafe { LabelSet::adopt_dead_sample(word) });
        if sample_id <= self.window_start {
            return; // Counted as live by the read that started the window; `labels` drops here.
        }
        self.highest_recorded = self.highest_recorded.max(sample_id);
        let (objects, bytes) = dead_sample_estimate(size, self.sample_interval);
        let labels = match labels {
            None => None,
            Some(DeadSampleLabels::Set(set)) => Some(set),
            Some(DeadSampleLabels::Unbound(cell)) => {
                let key = (node_id, Arc::as_ptr(&cell) as usize);
                if self.pending.len() < MAX_PENDING_CELLS || self.pending.contains_key(&key) {
                    let group = self.pending.entry(key).or_insert(PendingGroup {
                        cell,
                        objects: 0.0,
                        bytes: 0.0,
                    });
                    group.objects += objects;
                    group.bytes += bytes;
                    return;
                }
                Some(cell.current_arc())
            }
        };
        self.add(node_id, labels, objects, bytes);
    }

    /// Adds to the group of (node, set), or to the set's "other sites" group once `max_groups`
    /// groups exist.
    fn add(&mut self, node_id: u32, labels: Option<Arc<LabelSet>>, objects: f64, bytes: f64) {
        let address = labels.as_ref().map_or(0, |set| Arc::as_ptr(set) as usize);
        let mut key = (node_id, address);
        if !self.groups.contains_key(&key) && self.groups.len() >= self.max_groups {
            key.0 = OTHER_SITES_NODE;
            self.folded += 1;
        }
        let group = self.groups.entry(key).or_insert_with(|| AllocatedGroup {
            node_id: key.0,
            labels,
            objects: 0.0,
            bytes: 0.0,
        });
        group.objects += objects;
        group.bytes += bytes;
    }

    /// Moves the pending dead samples into the groups of the sets their cells are bound to now
    /// (a request still not routed: its unrouted bucket), releasing the cells.
    fn fold_pending(&mut self) {
        for ((node_id, _), pending) in std::mem::take(&mut self.pending) {
            let set = pending.cell.current_arc();
            self.add(node_id, Some(set), pending.objects, pending.bytes);
        }
    }

    /// The window's groups. With `restart_after = Some(highest_live_sample_id)` (the highest id
    /// among the live samples of the same read) the window restarts: the groups are handed out and
    /// later deaths of samples counted here are skipped.
    pub fn snapshot(&mut self, restart_after: Option<u64>) -> DeadSnapshot {
        self.fold_pending();
        let window_start = self.window_start;
        let groups = match restart_after {
            Some(highest_live) => {
                self.window_start = window_start.max(self.highest_recorded).max(highest_live);
                std::mem::take(&mut self.groups).into_values().collect()
            }
            None => self.groups.values().cloned().collect(),
        };
        DeadSnapshot {
            groups,
            window_start,
        }
    }

    /// Number of groups held now (not counting the pending entries).
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// Entries of dead samples whose request was not routed yet.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Dead samples folded into "other sites" groups since the session started.
    pub fn folded(&self) -> u64 {
        self.folded
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::LabelRegistry;

    fn captured(set: &Arc<LabelSet>) -> usize {
        let word = LabelSet::as_word(set);
        // SAFETY: `set` is alive; this takes the sample's reference as V8's capture does.
        unsafe { LabelSet::capture_sample_word(word) };
        word
    }

    fn set(registry: &LabelRegistry, route: &str) -> Arc<LabelSet> {
        registry
            .intern(vec![("route".into(), route.into())])
            .unwrap()
    }

    #[test]
    fn dead_samples_add_up_per_node_and_set_and_give_their_reference_back() {
        let registry = LabelRegistry::new(16);
        let a = set(&registry, "/a");
        let mut totals = DeadSampleTotals::new(16);
        totals.restart(1024);
        let before = Arc::strong_count(&a);
        for id in 1..=3 {
            let word = captured(&a);
            // SAFETY: `word` owns the reference `captured` took.
            unsafe { totals.record(word, 7, 64, id) };
        }
        assert_eq!(a.live_samples(), 0, "a dead sample is no longer live");
        assert_eq!(
            Arc::strong_count(&a),
            before + 1,
            "one reference for the group"
        );
        let snap = totals.snapshot(None);
        assert_eq!(snap.groups.len(), 1);
        let per_object = estimate::objects(64, 1, 1024);
        assert!((snap.groups[0].objects - 3.0 * per_object).abs() < 1e-9);
        assert!((snap.groups[0].bytes - 3.0 * 64.0 * per_object).abs() < 1e-6);
        drop(snap);
        totals.restart(1024);
        assert_eq!(Arc::strong_count(&a), before);
    }

    #[test]
    fn a_restarting_read_skips_later_deaths_of_samples_it_counted() {
        let registry = LabelRegistry::new(16);
        let a = set(&registry, "/a");
        let mut totals = DeadSampleTotals::new(16);
        totals.restart(1024);
        // SAFETY: each word owns the reference `captured` took.
        unsafe { totals.record(captured(&a), 1, 100, 5) };
        // A read whose live samples went up to id 9 restarts the window.
        let first = totals.snapshot(Some(9));
        assert_eq!(first.window_start, 0);
        assert_eq!(first.groups.len(), 1);
        // Sample 8 was live in that read (counted there); sample 12 is new.
        unsafe { totals.record(captured(&a), 1, 100, 8) };
        unsafe { totals.record(captured(&a), 1, 100, 12) };
        let second = totals.snapshot(None);
        assert_eq!(second.window_start, 9);
        let per_object = estimate::objects(100, 1, 1024);
        assert!((second.groups[0].objects - per_object).abs() < 1e-9);
        assert_eq!(a.live_samples(), 0);
    }

    #[test]
    fn groups_stay_bounded_and_fold_into_one_other_sites_group_per_set() {
        let registry = LabelRegistry::new(16);
        let a = set(&registry, "/a");
        let b = set(&registry, "/b");
        let mut totals = DeadSampleTotals::new(4);
        totals.restart(1024);
        let mut id = 0;
        for node in 1..=1000u32 {
            for s in [&a, &b] {
                id += 1;
                // SAFETY: the word owns the reference `captured` took.
                unsafe { totals.record(captured(s), node, 32, id) };
            }
        }
        assert_eq!(
            totals.len(),
            4 + 2,
            "4 groups, then one other-sites group per set"
        );
        assert_eq!(totals.folded(), 2000 - 4);
        let snap = totals.snapshot(None);
        let total: f64 = snap.groups.iter().map(|g| g.objects).sum();
        let per_object = estimate::objects(32, 1, 1024);
        assert!(
            (total - 2000.0 * per_object).abs() < 1e-6,
            "nothing is lost"
        );
        assert!(snap.groups.iter().any(|g| g.node_id == OTHER_SITES_NODE));
    }

    /// A request's cell bound to `bucket`, and its word (owning one reference).
    fn request(bucket: &Arc<LabelSet>) -> (Arc<RequestCell>, usize) {
        let cell = RequestCell::new(Arc::clone(bucket));
        let word = RequestCell::into_word(Arc::clone(&cell));
        (cell, word)
    }

    fn captured_word(word: usize) -> usize {
        // SAFETY: the cell behind `word` is alive (the test holds it); this takes the sample's
        // reference as V8's capture does.
        unsafe { LabelSet::capture_sample_word(word) };
        word
    }

    fn bytes_of(snap: &DeadSnapshot, set: &Arc<LabelSet>) -> f64 {
        snap.groups
            .iter()
            .filter(|g| g.labels.as_ref().is_some_and(|l| Arc::ptr_eq(l, set)))
            .map(|g| g.bytes)
            .sum()
    }

    #[test]
    fn a_dead_sample_of_a_request_not_routed_yet_goes_to_the_route_it_gets_later() {
        let registry = LabelRegistry::new(16);
        let bucket = set(&registry, "(unmatched) GET");
        let route = set(&registry, "/users/:id");
        let mut totals = DeadSampleTotals::new(16);
        totals.restart(0);
        let (cell, word) = request(&bucket);
        // Pre-routing garbage: dies before routing binds the cell.
        // SAFETY: the word owns the reference `captured_word` took.
        unsafe { totals.record(captured_word(word), 5, 100, 1) };
        assert_eq!(totals.pending_len(), 1);
        assert_eq!(cell.live_samples(), 0, "a dead sample is no longer live");
        assert!(cell.bind(Arc::clone(&route)));
        // After routing: resolved at death.
        // SAFETY: as above.
        unsafe { totals.record(captured_word(word), 5, 50, 2) };
        let snap = totals.snapshot(None);
        assert_eq!(bytes_of(&snap, &route), 150.0, "both under the route");
        assert_eq!(bytes_of(&snap, &bucket), 0.0);
        assert_eq!(snap.groups.len(), 1, "one (node, set) group");
        assert_eq!(totals.pending_len(), 0);
        drop(snap);
        totals.restart(0);
        // SAFETY: `word` owns the reference `request` made; the totals gave theirs back.
        unsafe { RequestCell::release_word(word) };
        assert_eq!(
            Arc::strong_count(&cell),
            1,
            "no reference of the totals is left"
        );
    }

    #[test]
    fn a_request_never_routed_stays_in_its_bucket() {
        let registry = LabelRegistry::new(16);
        let bucket = set(&registry, "(unmatched) POST");
        let mut totals = DeadSampleTotals::new(16);
        totals.restart(0);
        let (_cell, word) = request(&bucket);
        // SAFETY: the word owns the reference `captured_word` took.
        unsafe { totals.record(captured_word(word), 9, 64, 1) };
        let snap = totals.snapshot(Some(1));
        assert_eq!(bytes_of(&snap, &bucket), 64.0);
        // SAFETY: `word` owns the reference `request` made.
        unsafe { RequestCell::release_word(word) };
    }

    #[test]
    fn requests_of_one_route_share_its_groups() {
        // One group per (node, set), however many requests (cells) died there: the groups stay
        // per site and set, and do not fill `max_groups` with one group per request.
        let registry = LabelRegistry::new(16);
        let bucket = set(&registry, "(unmatched) GET");
        let route = set(&registry, "/a");
        let mut totals = DeadSampleTotals::new(4);
        totals.restart(0);
        let mut words = Vec::new();
        for id in 1..=100u64 {
            let (cell, word) = request(&bucket);
            assert!(cell.bind(Arc::clone(&route)));
            // SAFETY: the word owns the reference `captured_word` took.
            unsafe { totals.record(captured_word(word), 3, 10, id) };
            words.push(word);
        }
        assert_eq!(totals.len(), 1);
        assert_eq!(totals.folded(), 0);
        for word in words {
            // SAFETY: each word owns the reference `request` made.
            unsafe { RequestCell::release_word(word) };
        }
    }

    #[test]
    fn past_the_pending_bound_a_dead_sample_resolves_at_death() {
        let registry = LabelRegistry::new(16);
        let bucket = set(&registry, "(unmatched) GET");
        let route = set(&registry, "/late");
        let mut totals = DeadSampleTotals::new(16);
        totals.restart(0);
        let mut cells = Vec::new();
        for id in 0..=MAX_PENDING_CELLS as u64 {
            let (cell, word) = request(&bucket);
            // SAFETY: the word owns the reference `captured_word` took.
            unsafe { totals.record(captured_word(word), 1, 1, id + 1) };
            // SAFETY: `word` owns the reference `request` made.
            unsafe { RequestCell::release_word(word) };
            cells.push(cell);
        }
        assert_eq!(totals.pending_len(), MAX_PENDING_CELLS);
        for cell in &cells {
            cell.bind(Arc::clone(&route));
        }
        let snap = totals.snapshot(None);
        assert_eq!(bytes_of(&snap, &route), MAX_PENDING_CELLS as f64);
        assert_eq!(
            bytes_of(&snap, &bucket),
            1.0,
            "the one past the bound stayed in the bucket"
        );
    }

    #[test]
    fn unlabeled_dead_samples_count_too() {
        let mut totals = DeadSampleTotals::new(4);
        totals.restart(0);
        // SAFETY: word 0 owns nothing.
        unsafe { totals.record(0, 3, 48, 1) };
        let snap = totals.snapshot(None);
        assert!(snap.groups[0].labels.is_none());
        assert_eq!(
            snap.groups[0].bytes, 48.0,
            "interval 0: every allocation sampled"
        );
    }
}
