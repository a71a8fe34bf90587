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
//! Two views, one set of totals (each dead sample is recorded once and counted in both):
//!
//! - *The window*: a read may restart the allocated figures (delta profiles, as continuous
//!   profilers collect them: the agent's pushes, `getAllocationProfile({ resetAllocations })`).
//!   V8's sample ids grow through a session, so after a restarting read whose samples and groups
//!   went up to id `w`, samples with ids <= `w` were already counted: live ones as live, dead ones
//!   in the groups handed out. The window then starts after `w`. Its groups hold their label sets
//!   until it restarts.
//! - *Since the start* (Go's `/debug/pprof/allocs`): every dead sample of the session, never
//!   restarted by a read, so that two reads subtract (`go tool pprof -base`, `?seconds=N`). A
//!   read adds every live sample to it. So that it does not hold label sets for the life of the
//!   session (they would pile up against `maxLabelSets`), each read *settles* it: its groups move
//!   to groups keyed by a copy of their labels, interned by a registry of the totals' own that
//!   V8 and lib/ never see ([`MAX_SETTLED_SETS`] copies at most, then the overflow labels). A read
//!   shows a copy as the live set of the same labels when the isolate's registry has one (so that
//!   a profile never has two groups of equal labels), else as the copy.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::estimate;
use crate::labels::{DeadSampleLabels, LabelRegistry, LabelSet, RequestCell};

/// Node id of the per-label-set group that takes dead samples once `max_groups` groups exist. V8
/// numbers nodes from 1 upwards, so no node has this id; encoders give it an empty stack.
pub const OTHER_SITES_NODE: u32 = u32::MAX;

/// Default bound on (node, label set) groups per view: about 6 MiB at 96 bytes a group.
pub const DEFAULT_MAX_GROUPS: usize = 1 << 16;

/// Bound on the (node, cell) entries of dead samples of requests not routed yet: about 0.6 MiB
/// with their cells. Reads are rare and requests are routed within milliseconds, so at a read
/// nearly every pending cell is bound.
pub const MAX_PENDING_CELLS: usize = 4096;

/// Bound on the distinct label sets the since-start view keeps copies of (past it, the overflow
/// labels): label sets released and made again with other labels (a rotating tenant id) must not
/// grow it without end.
pub const MAX_SETTLED_SETS: usize = 1 << 16;

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

/// Which figures a read takes (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocationsRead {
    /// The window so far.
    Window,
    /// The window, which then restarts after the highest id among the read's live samples.
    RestartWindow { highest_live: u64 },
    /// Everything since the session started; with `restart_window_after` the window restarts
    /// too, as with [`RestartWindow`](Self::RestartWindow) (an owner that reads only since the
    /// start lets the window's groups go with each read).
    SinceStart { restart_window_after: Option<u64> },
}

/// Dead samples of one (node, cell) whose request was not routed when they died: all of them
/// (since the start) and those of the current window.
#[derive(Debug)]
struct PendingGroup {
    cell: Arc<RequestCell>,
    total: (f64, f64),
    window: (f64, f64),
}

/// What [`DeadSampleTotals::snapshot`] hands out.
#[derive(Debug, Default)]
pub struct DeadSnapshot {
    /// The dead samples' groups of the view read.
    pub groups: Vec<AllocatedGroup>,
    /// Samples with ids up to this were counted before the view began: live samples with
    /// greater ids were allocated in it (0 since the start).
    pub window_start: u64,
}

/// (node, label set) groups, at most `max_groups` then one "other sites" group per set.
#[derive(Debug, Default)]
struct Groups {
    /// (node id, set address or 0) -> group.
    map: FxHashMap<(u32, usize), AllocatedGroup>,
    /// Dead samples that went to an "other sites" group because `map` was full.
    folded: u64,
}

impl Groups {
    fn add(
        &mut self,
        max_groups: usize,
        node_id: u32,
        labels: Option<Arc<LabelSet>>,
        (objects, bytes): (f64, f64),
    ) {
        let address = labels.as_ref().map_or(0, |set| Arc::as_ptr(set) as usize);
        let mut key = (node_id, address);
        if !self.map.contains_key(&key) && self.map.len() >= max_groups {
            key.0 = OTHER_SITES_NODE;
            self.folded += 1;
        }
        let group = self.map.entry(key).or_insert_with(|| AllocatedGroup {
            node_id: key.0,
            labels,
            objects: 0.0,
            bytes: 0.0,
        });
        group.objects += objects;
        group.bytes += bytes;
    }
}

/// Running totals of dead samples per (node, label set) for one session of one isolate.
///
/// Called from V8's GC weak processing (through the death callback) and from profile reads, both
/// on the isolate's thread; the owner serializes them (a mutex no caller holds across a call into
/// V8, so across a GC).
pub struct DeadSampleTotals {
    sample_interval: u64,
    max_groups: usize,
    window_start: u64,
    highest_recorded: u64,
    /// The window's groups.
    window: Groups,
    /// Since the start: dead samples recorded since the last read, by the isolate's sets.
    recent: Groups,
    /// Since the start: everything up to the last read, by the settled copies' sets.
    settled: Groups,
    /// Interns the settled copies (never the isolate's registry: its cap and ids stay the app's).
    copies: LabelRegistry,
    /// The isolate's registry, to show a copy as the live set of the same labels.
    home: Option<Arc<LabelRegistry>>,
    /// (node id, cell address) -> dead samples of a request not routed yet, folded into the
    /// groups by the cell's set at the next read.
    pending: FxHashMap<(u32, usize), PendingGroup>,
}

impl std::fmt::Debug for DeadSampleTotals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeadSampleTotals")
            .field("window", &self.window.map.len())
            .field("recent", &self.recent.map.len())
            .field("settled", &self.settled.map.len())
            .field("pending", &self.pending.len())
            .finish()
    }
}

impl DeadSampleTotals {
    pub fn new(max_groups: usize) -> Self {
        DeadSampleTotals {
            sample_interval: 0,
            max_groups,
            window_start: 0,
            highest_recorded: 0,
            window: Groups::default(),
            recent: Groups::default(),
            settled: Groups::default(),
            copies: LabelRegistry::new(MAX_SETTLED_SETS),
            home: None,
            pending: FxHashMap::default(),
        }
    }

    /// [`new`](Self::new), showing settled figures under the live sets of `home` (the isolate's
    /// registry) where it has sets of the same labels.
    pub fn with_home(max_groups: usize, home: Arc<LabelRegistry>) -> Self {
        DeadSampleTotals {
            home: Some(home),
            ..Self::new(max_groups)
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
        self.window = Groups::default();
        self.recent = Groups::default();
        self.settled = Groups::default();
        self.copies = LabelRegistry::new(MAX_SETTLED_SETS);
        self.pending = FxHashMap::default();
    }

    /// Adds a dead sample. Runs in V8's GC weak processing: native memory only (hash map inserts
    /// at most), never V8, never a registry.
    ///
    /// # Safety
    /// `word` is 0 or owns the reference [`LabelSet::capture_sample_word`] took for this sample;
    /// it is consumed.
    pub unsafe fn record(&mut self, word: usize, node_id: u32, size: u64, sample_id: u64) {
        // SAFETY: the caller hands over the sample's reference.
        let labels = (word != 0).then(|| unsafe { LabelSet::adopt_dead_sample(word) });
        // Samples up to the window's start were counted as live by the read that started it.
        let in_window = sample_id > self.window_start;
        if in_window {
            self.highest_recorded = self.highest_recorded.max(sample_id);
        }
        let figures = dead_sample_estimate(size, self.sample_interval);
        let labels = match labels {
            None => None,
            Some(DeadSampleLabels::Set(set)) => Some(set),
            Some(DeadSampleLabels::Unbound(cell)) => {
                let key = (node_id, Arc::as_ptr(&cell) as usize);
                if self.pending.len() < MAX_PENDING_CELLS || self.pending.contains_key(&key) {
                    let group = self.pending.entry(key).or_insert(PendingGroup {
                        cell,
                        total: (0.0, 0.0),
                        window: (0.0, 0.0),
                    });
                    add_to(&mut group.total, figures);
                    if in_window {
                        add_to(&mut group.window, figures);
                    }
                    return;
                }
                Some(cell.current_arc())
            }
        };
        if in_window {
            self.window
                .add(self.max_groups, node_id, labels.clone(), figures);
        }
        self.recent.add(self.max_groups, node_id, labels, figures);
    }

    /// Moves the pending dead samples into the groups of the sets their cells are bound to now
    /// (a request still not routed: its unrouted bucket), releasing the cells.
    fn fold_pending(&mut self) {
        for ((node_id, _), pending) in std::mem::take(&mut self.pending) {
            let set = pending.cell.current_arc();
            if pending.window != (0.0, 0.0) {
                let labels = Some(Arc::clone(&set));
                self.window
                    .add(self.max_groups, node_id, labels, pending.window);
            }
            self.recent
                .add(self.max_groups, node_id, Some(set), pending.total);
        }
    }

    /// Moves the recent since-start groups to the settled ones, by copies of their labels: the
    /// isolate's sets they held are released.
    fn settle(&mut self) {
        let recent = std::mem::take(&mut self.recent.map);
        for group in recent.into_values() {
            let copy = group.labels.as_ref().map(|set| self.copy_of(set));
            self.settled.add(
                self.max_groups,
                group.node_id,
                copy,
                (group.objects, group.bytes),
            );
        }
    }

    /// The settled copy of `set`'s labels (the overflow labels once [`MAX_SETTLED_SETS`] copies
    /// exist).
    fn copy_of(&self, set: &LabelSet) -> Arc<LabelSet> {
        if set.is_overflow() {
            return self.copies.overflow();
        }
        let pairs = set
            .pairs()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        // The pairs are a valid set's; should they be refused anyway, the overflow labels.
        self.copies
            .intern(pairs)
            .unwrap_or_else(|_| self.copies.overflow())
    }

    /// The settled groups with each copy shown as the live set of the same labels where the
    /// isolate's registry has one.
    fn since_start_groups(&self) -> Vec<AllocatedGroup> {
        let mut shown: FxHashMap<usize, Arc<LabelSet>> = FxHashMap::default();
        self.settled
            .map
            .values()
            .map(|group| {
                let labels = group.labels.as_ref().map(|copy| {
                    let key = Arc::as_ptr(copy) as usize;
                    let set = shown.entry(key).or_insert_with(|| {
                        self.home
                            .as_ref()
                            .and_then(|home| {
                                if copy.is_overflow() {
                                    Some(home.overflow())
                                } else {
                                    home.find(copy.pairs())
                                }
                            })
                            .unwrap_or_else(|| Arc::clone(copy))
                    });
                    Arc::clone(set)
                });
                AllocatedGroup {
                    labels,
                    ..group.clone()
                }
            })
            .collect()
    }

    /// The groups of the view `read` asks for (see [`AllocationsRead`]). Not from a V8 callback
    /// (it reads registries).
    pub fn snapshot(&mut self, read: AllocationsRead) -> DeadSnapshot {
        self.fold_pending();
        self.settle();
        let window_start = self.window_start;
        match read {
            AllocationsRead::Window => DeadSnapshot {
                groups: self.window.map.values().cloned().collect(),
                window_start,
            },
            AllocationsRead::RestartWindow { highest_live } => {
                self.window_start = window_start.max(self.highest_recorded).max(highest_live);
                DeadSnapshot {
                    groups: std::mem::take(&mut self.window.map).into_values().collect(),
                    window_start,
                }
            }
            AllocationsRead::SinceStart {
                restart_window_after,
            } => {
                if let Some(highest_live) = restart_window_after {
                    self.window_start = window_start.max(self.highest_recorded).max(highest_live);
                    self.window.map = FxHashMap::default();
                }
                DeadSnapshot {
                    groups: self.since_start_groups(),
                    window_start: 0,
                }
            }
        }
    }

    /// Number of window groups held now (not counting the pending entries).
    pub fn len(&self) -> usize {
        self.window.map.len()
    }

    /// Number of since-start groups held now (recent and settled).
    pub fn since_start_len(&self) -> usize {
        self.recent.map.len() + self.settled.map.len()
    }

    /// Entries of dead samples whose request was not routed yet.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.window.map.is_empty()
    }

    /// Dead samples folded into "other sites" groups of the window since the session started.
    pub fn folded(&self) -> u64 {
        self.window.folded
    }
}

fn add_to(sum: &mut (f64, f64), (objects, bytes): (f64, f64)) {
    sum.0 += objects;
    sum.1 += bytes;
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
            before + 2,
            "one reference for the window's group, one for the since-start one until a read"
        );
        let snap = totals.snapshot(AllocationsRead::Window);
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
        let first = totals.snapshot(AllocationsRead::RestartWindow { highest_live: 9 });
        assert_eq!(first.window_start, 0);
        assert_eq!(first.groups.len(), 1);
        // Sample 8 was live in that read (counted there); sample 12 is new.
        unsafe { totals.record(captured(&a), 1, 100, 8) };
        unsafe { totals.record(captured(&a), 1, 100, 12) };
        let second = totals.snapshot(AllocationsRead::Window);
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
        let snap = totals.snapshot(AllocationsRead::Window);
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
        let snap = totals.snapshot(AllocationsRead::Window);
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
        let snap = totals.snapshot(AllocationsRead::RestartWindow { highest_live: 1 });
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
        let snap = totals.snapshot(AllocationsRead::Window);
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
        let snap = totals.snapshot(AllocationsRead::Window);
        assert!(snap.groups[0].labels.is_none());
        assert_eq!(
            snap.groups[0].bytes, 48.0,
            "interval 0: every allocation sampled"
        );
    }

    fn bytes_by_labels(snap: &DeadSnapshot, route: &str) -> f64 {
        snap.groups
            .iter()
            .filter(|g| {
                g.labels
                    .as_ref()
                    .is_some_and(|l| l.get("route") == Some(route))
            })
            .map(|g| g.bytes)
            .sum()
    }

    #[test]
    fn since_the_start_counts_every_dead_sample_whatever_the_window_reads_did() {
        let home = Arc::new(LabelRegistry::new(16));
        let a = set(&home, "/a");
        let mut totals = DeadSampleTotals::with_home(16, Arc::clone(&home));
        totals.restart(0);
        // SAFETY (all records): each word owns the reference `captured` took.
        unsafe { totals.record(captured(&a), 1, 100, 1) };
        // A push ends the window; its live samples went up to id 5.
        let push = totals.snapshot(AllocationsRead::RestartWindow { highest_live: 5 });
        assert_eq!(bytes_of(&push, &a), 100.0);
        drop(push);
        // Sample 4 was live in that push (the window skips it), sample 6 is new.
        unsafe { totals.record(captured(&a), 1, 10, 4) };
        unsafe { totals.record(captured(&a), 1, 1, 6) };
        let window = totals.snapshot(AllocationsRead::Window);
        assert_eq!(bytes_of(&window, &a), 1.0);
        drop(window);
        let since = totals.snapshot(AllocationsRead::SinceStart {
            restart_window_after: None,
        });
        assert_eq!(since.window_start, 0, "every live sample counts too");
        assert_eq!(
            bytes_of(&since, &a),
            111.0,
            "shown under the live set of its labels"
        );
        drop(since);
        // A second read adds nothing and takes nothing away.
        let again = totals.snapshot(AllocationsRead::SinceStart {
            restart_window_after: None,
        });
        assert_eq!(bytes_of(&again, &a), 111.0);
    }

    #[test]
    fn since_the_start_does_not_hold_the_isolate_sets() {
        let home = Arc::new(LabelRegistry::new(16));
        let mut totals = DeadSampleTotals::with_home(16, Arc::clone(&home));
        totals.restart(0);
        let a = set(&home, "/rotating");
        // SAFETY: the word owns the reference `captured` took.
        unsafe { totals.record(captured(&a), 1, 100, 1) };
        // The window (not read since) holds the set; end it as a push would.
        drop(totals.snapshot(AllocationsRead::RestartWindow { highest_live: 1 }));
        assert_eq!(
            Arc::strong_count(&a),
            2,
            "the registry and the test: the totals let go"
        );
        drop(a);
        assert_eq!(home.prune(), 1, "the set is released");
        let since = totals.snapshot(AllocationsRead::SinceStart {
            restart_window_after: None,
        });
        assert_eq!(
            bytes_by_labels(&since, "/rotating"),
            100.0,
            "kept under a copy of its labels"
        );
        drop(since);
        // The same labels again: a new set of the registry, and the figures join it.
        let again = set(&home, "/rotating");
        // SAFETY: as above.
        unsafe { totals.record(captured(&again), 1, 5, 2) };
        let since = totals.snapshot(AllocationsRead::SinceStart {
            restart_window_after: None,
        });
        assert_eq!(since.groups.len(), 1, "one group for one (site, labels)");
        assert_eq!(bytes_of(&since, &again), 105.0);
    }

    #[test]
    fn a_pending_request_sample_counts_since_the_start_under_its_route() {
        let home = Arc::new(LabelRegistry::new(16));
        let bucket = set(&home, "(unmatched) GET");
        let route = set(&home, "/users/:id");
        let mut totals = DeadSampleTotals::with_home(16, Arc::clone(&home));
        totals.restart(0);
        let (cell, word) = request(&bucket);
        // SAFETY: the word owns the reference `captured_word` took.
        unsafe { totals.record(captured_word(word), 5, 100, 3) };
        assert!(cell.bind(Arc::clone(&route)));
        let since = totals.snapshot(AllocationsRead::SinceStart {
            restart_window_after: None,
        });
        assert_eq!(bytes_of(&since, &route), 100.0);
        let window = totals.snapshot(AllocationsRead::Window);
        assert_eq!(bytes_of(&window, &route), 100.0, "and in the window");
        drop((since, window));
        totals.restart(0);
        // SAFETY: `word` owns the reference `request` made.
        unsafe { RequestCell::release_word(word) };
    }
}
