//! The heap profile model and its aggregation by label.
//!
//! cpp/ copies V8's `AllocationProfile` into plain structs; src/ turns those into a [`Profile`]:
//! nodes flattened in pre-order with parent indices (index 0 is the root), samples carrying the
//! label set their allocation ran under, and the external bytes per set at read time.

use rustc_hash::FxHashMap;
use std::sync::Arc;

use crate::allocations::AllocatedGroup;
use crate::estimate;
use crate::labels::LabelSet;

/// Where a node's function is, as V8's `AllocationProfile::Node` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CallFrame {
    /// Empty for anonymous functions; V8 names its synthetic nodes `(root)`, `(V8 API)`, ...
    pub function_name: String,
    pub script_id: i32,
    /// Script name or URL; empty when unknown.
    pub url: String,
    /// 1-based line of the function's start, 0 = unknown (`kNoLineNumberInfo`).
    pub line_number: i32,
    /// 1-based column of the function's start, 0 = unknown (`kNoColumnNumberInfo`).
    pub column_number: i32,
}

/// One call-tree node. Nodes live in [`Profile::nodes`]; `parent` and `children` are indices into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileNode {
    /// V8's node id (what [`Sample::node_id`] refers to); not necessarily the index.
    pub id: u32,
    pub parent: Option<usize>,
    pub frame: CallFrame,
    pub children: Vec<usize>,
}

/// One sampled allocation that is still alive.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Id of the node whose stack allocated it.
    pub node_id: u32,
    /// Size of the sampled object in bytes.
    pub size: u64,
    /// Number of sampled objects this entry stands for, *unscaled*: 1 for a V8 sample. (V8's
    /// `AllocationProfile::Sample::count` is already scaled by 1/(1-exp(-size/interval)); pass 1,
    /// not that value, or the estimate is scaled twice.)
    pub count: u32,
    /// V8's per-session sample id (restarts after stop/start).
    pub sample_id: u64,
    /// The label set current when the object was allocated; `None` when unlabeled.
    pub labels: Option<Arc<LabelSet>>,
}

/// A heap profile: the call tree, its live samples and the external bytes per label set.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    /// Pre-order, index 0 = root. Empty only for an empty profile.
    pub nodes: Vec<ProfileNode>,
    pub samples: Vec<Sample>,
    /// Mean bytes between samples (V8's `sampling_interval`); 0 = every allocation sampled.
    pub sample_interval: u64,
    /// External (ArrayBuffer) bytes per label set at read time.
    pub external: Vec<(Arc<LabelSet>, i64)>,
    /// External bytes allocated without labels at read time.
    pub unlabeled_external: i64,
    /// What the window allocated, live or dead; `None` when the runtime cannot report dead
    /// samples (only the live heap is known then).
    pub allocations: Option<Allocations>,
}

/// The allocation window of a read: the dead samples' groups (see [`crate::allocations`]), and
/// the sample id after which live samples were allocated in the window.
#[derive(Debug, Clone, Default)]
pub struct Allocations {
    pub dead: Vec<AllocatedGroup>,
    pub window_start: u64,
}

/// What a [`LabelGroup`] is keyed by.
#[derive(Debug, Clone)]
pub enum GroupLabels {
    /// Samples (and external bytes) without labels, with the empty set (no labels either), or
    /// whose set lacks the grouping key.
    Unlabeled,
    /// One full label set (`by_label(None)`), and the overflow set in either mode.
    Set(Arc<LabelSet>),
    /// One value of the grouping key (`by_label(Some(key))`).
    Value { key: String, value: String },
}

impl PartialEq for GroupLabels {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (GroupLabels::Unlabeled, GroupLabels::Unlabeled) => true,
            (GroupLabels::Set(a), GroupLabels::Set(b)) => Arc::ptr_eq(a, b),
            (GroupLabels::Value { key, value }, GroupLabels::Value { key: k2, value: v2 }) => {
                key == k2 && value == v2
            }
            _ => false,
        }
    }
}

/// Heap and external usage of one group of samples.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelGroup {
    pub labels: GroupLabels,
    /// Estimated live heap bytes (sum of [`estimate::bytes`] over the group's samples).
    pub bytes: f64,
    /// Estimated live object count.
    pub objects: f64,
    /// External bytes of the group's sets (or of the unlabeled bucket).
    pub external_bytes: i64,
    /// Number of samples in the group.
    pub samples: usize,
    /// Estimated bytes and objects the group allocated in the profile's allocation window, live
    /// or dead (0 when the profile has no [`Allocations`]).
    pub allocated_bytes: f64,
    pub allocated_objects: f64,
}

impl Profile {
    /// An empty profile with the given sampling interval.
    pub fn new(sample_interval: u64) -> Self {
        Profile {
            sample_interval,
            ..Profile::default()
        }
    }

    /// Appends a node as the last child of `parent` (`None` only for the root) and returns its
    /// index. Adding nodes in pre-order keeps `nodes` in pre-order.
    pub fn add_node(&mut self, parent: Option<usize>, id: u32, frame: CallFrame) -> usize {
        let index = self.nodes.len();
        if let Some(p) = parent {
            self.nodes[p].children.push(index);
        }
        self.nodes.push(ProfileNode {
            id,
            parent,
            frame,
            children: Vec::new(),
        });
        index
    }

    /// Estimated bytes of one sample at this profile's interval.
    pub fn sample_bytes(&self, sample: &Sample) -> f64 {
        estimate::bytes(sample.size, sample.count, self.sample_interval)
    }

    /// Estimated objects of one sample at this profile's interval.
    pub fn sample_objects(&self, sample: &Sample) -> f64 {
        estimate::objects(sample.size, sample.count, self.sample_interval)
    }

    /// Whether live sample `sample` was allocated in the allocation window (always false without
    /// [`Allocations`]).
    pub fn allocated_in_window(&self, sample: &Sample) -> bool {
        self.allocations
            .as_ref()
            .is_some_and(|a| sample.sample_id > a.window_start)
    }

    /// Estimated live heap bytes of the whole profile.
    pub fn estimated_bytes(&self) -> f64 {
        let mut scaler = estimate::Scaler::new(self.sample_interval);
        self.samples
            .iter()
            .map(|s| scaler.objects_and_bytes(s.size, s.count).1)
            .sum()
    }

    /// Groups samples and external bytes by full label set (`key = None`) or by the value of one
    /// key. Unlabeled samples, samples of the empty set, samples whose set lacks `key`, and
    /// unlabeled external bytes form the [`GroupLabels::Unlabeled`] group (present only when
    /// non-empty): the groups' labels are distinct, since no user set has the reserved overflow
    /// key. The overflow set is a group of its own in both modes (it stands for sets that did not
    /// fit, not for samples without the key). External bytes join the
    /// group of their set (or of their set's value for `key`), also when that group has no sample.
    /// Sorted by estimated heap bytes, largest first; ties by allocated bytes, then external bytes,
    /// then label order.
    pub fn by_label(&self, key: Option<&str>) -> Vec<LabelGroup> {
        self.by_label_with_members(key).0
    }

    /// [`Profile::by_label`], and the index of each sample's group in it (index-aligned with
    /// `samples`): what aggregations per group beside the figures (retainers) group by.
    pub fn by_label_with_members(&self, key: Option<&str>) -> (Vec<LabelGroup>, Vec<usize>) {
        let mut grouper = Grouper {
            key,
            groups: Vec::new(),
            unlabeled: None,
            by_set: FxHashMap::default(),
            by_value: FxHashMap::default(),
        };
        let mut members = Vec::with_capacity(self.samples.len());
        let mut scaler = estimate::Scaler::new(self.sample_interval);
        // Neighbouring samples mostly share their labels: the previous sample's group spares a
        // hash lookup.
        let mut last: Option<(usize, usize)> = None;
        for sample in &self.samples {
            let addr = sample
                .labels
                .as_ref()
                .map_or(0, |s| Arc::as_ptr(s) as usize);
            let g = match last {
                Some((at, g)) if at == addr => g,
                _ => grouper.slot(sample.labels.as_ref()),
            };
            last = Some((addr, g));
            members.push(g);
            let (objects, bytes) = scaler.objects_and_bytes(sample.size, sample.count);
            let group = &mut grouper.groups[g];
            group.bytes += bytes;
            group.objects += objects;
            group.samples += 1;
            if self.allocated_in_window(sample) {
                group.allocated_bytes += bytes;
                group.allocated_objects += objects;
            }
        }
        for dead in self.allocations.iter().flat_map(|a| &a.dead) {
            let g = grouper.slot(dead.labels.as_ref());
            grouper.groups[g].allocated_bytes += dead.bytes;
            grouper.groups[g].allocated_objects += dead.objects;
        }
        for (set, bytes) in &self.external {
            let g = grouper.slot(Some(set));
            grouper.groups[g].external_bytes += bytes;
        }
        if self.unlabeled_external != 0 {
            let g = grouper.slot(None);
            grouper.groups[g].external_bytes += self.unlabeled_external;
        }
        let groups = grouper.groups;
        let mut order: Vec<usize> = (0..groups.len()).collect();
        order.sort_by(|&a, &b| {
            let (a, b) = (&groups[a], &groups[b]);
            b.bytes
                .total_cmp(&a.bytes)
                .then(b.allocated_bytes.total_cmp(&a.allocated_bytes))
                .then(b.external_bytes.cmp(&a.external_bytes))
                .then_with(|| label_order(&a.labels).cmp(&label_order(&b.labels)))
        });
        let mut rank = vec![0; groups.len()];
        for (sorted, &g) in order.iter().enumerate() {
            rank[g] = sorted;
        }
        for g in &mut members {
            *g = rank[*g];
        }
        let mut slots: Vec<Option<LabelGroup>> = groups.into_iter().map(Some).collect();
        let groups = order.iter().filter_map(|&g| slots[g].take()).collect();
        (groups, members)
    }
}

/// Tie-break order of groups with equal bytes: sets by id, values by value, unlabeled last.
fn label_order(labels: &GroupLabels) -> (u8, u32, &str) {
    match labels {
        GroupLabels::Set(s) => (0, s.id(), ""),
        GroupLabels::Value { value, .. } => (0, 0, value),
        GroupLabels::Unlabeled => (1, 0, ""),
    }
}

/// Assigns samples to groups: a set's group is found by its address first (cheap), and, when
/// grouping by key, its value is looked up only the first time the set is seen.
struct Grouper<'p, 'k> {
    key: Option<&'k str>,
    groups: Vec<LabelGroup>,
    unlabeled: Option<usize>,
    /// Set address -> group index (sets stay alive: the profile holds them).
    by_set: FxHashMap<usize, usize>,
    by_value: FxHashMap<&'p str, usize>,
}

impl<'p> Grouper<'p, '_> {
    fn push(&mut self, labels: GroupLabels) -> usize {
        self.groups.push(LabelGroup {
            labels,
            bytes: 0.0,
            objects: 0.0,
            external_bytes: 0,
            samples: 0,
            allocated_bytes: 0.0,
            allocated_objects: 0.0,
        });
        self.groups.len() - 1
    }

    fn unlabeled(&mut self) -> usize {
        match self.unlabeled {
            Some(g) => g,
            None => {
                let g = self.push(GroupLabels::Unlabeled);
                self.unlabeled = Some(g);
                g
            }
        }
    }

    fn slot(&mut self, set: Option<&'p Arc<LabelSet>>) -> usize {
        let Some(set) = set else {
            return self.unlabeled();
        };
        if set.pairs().is_empty() {
            return self.unlabeled();
        }
        let addr = Arc::as_ptr(set) as usize;
        if let Some(&g) = self.by_set.get(&addr) {
            return g;
        }
        let g = match self.key {
            None => self.push(GroupLabels::Set(Arc::clone(set))),
            Some(_) if set.is_overflow() => self.push(GroupLabels::Set(Arc::clone(set))),
            Some(key) => match set.get(key) {
                None => self.unlabeled(),
                Some(value) => match self.by_value.get(value) {
                    Some(&g) => g,
                    None => {
                        let g = self.push(GroupLabels::Value {
                            key: key.to_owned(),
                            value: value.to_owned(),
                        });
                        self.by_value.insert(value, g);
                        g
                    }
                },
            },
        };
        self.by_set.insert(addr, g);
        g
    }
}

/// Maps V8 node ids to indices in [`Profile::nodes`] in O(1).
#[derive(Debug, Clone)]
pub struct NodeIndex {
    map: FxHashMap<u32, usize>,
}

impl NodeIndex {
    /// Builds the index (O(nodes)).
    pub fn new(profile: &Profile) -> Self {
        NodeIndex {
            map: profile
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.id, i))
                .collect(),
        }
    }

    /// Index of the node with V8 id `node_id`.
    pub fn get(&self, node_id: u32) -> Option<usize> {
        self.map.get(&node_id).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::LabelRegistry;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn estimate_matches_hand_computed_values() {
        // 100 B x2 at 400 B: 200 / (1 - e^-0.25) = 904.16233283756
        assert!(close(estimate::bytes(100, 2, 400), 904.162_332_837_559_7));
        // size == interval: 1024 / (1 - e^-1) = 1619.94414783419
        assert!(close(
            estimate::bytes(1024, 1, 1024),
            1_619.944_147_834_190_3
        ));
        assert!(close(
            estimate::objects(1024, 1, 1024),
            1.581_976_706_869_326_5
        ));
        // interval 0: every allocation sampled, no scaling.
        assert_eq!(estimate::bytes(100, 3, 0), 300.0);
        // Huge objects are always sampled: the estimate tends to the size.
        assert!(close(
            estimate::bytes(1 << 30, 1, 1024),
            (1u64 << 30) as f64
        ));
    }

    /// root(1) -> a(10) -> b(11); root -> c(12). Ids deliberately not equal to indices.
    fn tree() -> Profile {
        let mut p = Profile::new(1024);
        let f = |n: &str| CallFrame {
            function_name: n.into(),
            ..CallFrame::default()
        };
        let root = p.add_node(None, 1, f("(root)"));
        let a = p.add_node(Some(root), 10, f("a"));
        p.add_node(Some(a), 11, f("b"));
        p.add_node(Some(root), 12, f("c"));
        p
    }

    fn sample(node_id: u32, size: u64, labels: Option<&Arc<LabelSet>>) -> Sample {
        Sample {
            node_id,
            size,
            count: 1,
            sample_id: 0,
            labels: labels.cloned(),
        }
    }

    #[test]
    fn node_index_and_estimates() {
        let mut p = tree();
        assert_eq!(NodeIndex::new(&p).get(11), Some(2));
        assert_eq!(NodeIndex::new(&p).get(99), None);
        p.nodes[1].id = 50; // ids no longer a constant offset
        assert_eq!(NodeIndex::new(&p).get(50), Some(1));
        p.nodes[1].id = 10;
        assert_eq!(p.nodes[0].children, [1, 3]);

        p.samples = vec![
            sample(11, 1024, None),
            sample(11, 1024, None),
            sample(12, 8, None),
        ];
        let one_kib = 1_619.944_147_834_190_3;
        assert!(close(p.sample_bytes(&p.samples[0]), one_kib));
        assert!(close(
            p.estimated_bytes(),
            2.0 * one_kib + p.sample_bytes(&p.samples[2])
        ));
    }

    #[test]
    fn by_label_groups_by_set_and_by_key_with_unlabeled_and_external() {
        let reg = LabelRegistry::new(10);
        let pairs = |route: &str, tenant: Option<&str>| {
            let mut v = vec![("route".to_string(), route.to_string())];
            if let Some(t) = tenant {
                v.push(("tenant".into(), t.into()));
            }
            v
        };
        let a1 = reg.intern(pairs("/a", Some("t1"))).unwrap();
        let a2 = reg.intern(pairs("/a", Some("t2"))).unwrap();
        let b = reg.intern(pairs("/b", None)).unwrap();
        let ext_only = reg.intern(pairs("/ext", Some("t3"))).unwrap();

        let mut p = tree();
        p.sample_interval = 0; // estimates = raw sizes: easy arithmetic
        p.samples = vec![
            sample(11, 100, Some(&a1)),
            sample(11, 50, Some(&a2)),
            sample(12, 500, Some(&b)),
            sample(12, 30, None),
            sample(11, 20, Some(&a1)),
        ];
        p.external = vec![(Arc::clone(&a1), 1000), (Arc::clone(&ext_only), 7)];
        p.unlabeled_external = 5;

        let by_set = p.by_label(None);
        let summary: Vec<_> = by_set
            .iter()
            .map(|g| (g.labels.clone(), g.bytes, g.external_bytes, g.samples))
            .collect();
        assert_eq!(
            summary,
            [
                (GroupLabels::Set(Arc::clone(&b)), 500.0, 0, 1),
                (GroupLabels::Set(Arc::clone(&a1)), 120.0, 1000, 2),
                (GroupLabels::Set(Arc::clone(&a2)), 50.0, 0, 1),
                (GroupLabels::Unlabeled, 30.0, 5, 1),
                (GroupLabels::Set(Arc::clone(&ext_only)), 0.0, 7, 0),
            ]
        );
        assert_eq!(by_set[1].objects, 2.0);

        let by_tenant = p.by_label(Some("tenant"));
        let summary: Vec<_> = by_tenant
            .iter()
            .map(|g| (g.labels.clone(), g.bytes, g.external_bytes, g.samples))
            .collect();
        let v = |value: &str| GroupLabels::Value {
            key: "tenant".into(),
            value: value.into(),
        };
        assert_eq!(
            summary,
            [
                // b lacks "tenant": joins the unlabeled group with the unlabeled sample.
                (GroupLabels::Unlabeled, 530.0, 5, 2),
                (v("t1"), 120.0, 1000, 2),
                (v("t2"), 50.0, 0, 1),
                (v("t3"), 0.0, 7, 0),
            ]
        );

        // Each sample's member index names its group in the sorted list.
        let (groups, members) = p.by_label_with_members(Some("tenant"));
        assert_eq!(members, [1, 2, 0, 0, 1]);
        for (sample, &g) in p.samples.iter().zip(&members) {
            let expected = match sample.labels.as_ref().and_then(|set| set.get("tenant")) {
                Some(value) => v(value),
                None => GroupLabels::Unlabeled,
            };
            assert_eq!(groups[g].labels, expected);
        }

        let by_route = p.by_label(Some("route"));
        assert_eq!(
            by_route.len(),
            4,
            "/a merges t1 and t2; /b, /ext, unlabeled"
        );
        assert_eq!(
            by_route[1].labels,
            GroupLabels::Value {
                key: "route".into(),
                value: "/a".into()
            }
        );
        assert_eq!(
            (
                by_route[1].bytes,
                by_route[1].samples,
                by_route[1].external_bytes
            ),
            (170.0, 3, 1000)
        );
    }

    #[test]
    fn by_label_puts_the_empty_set_with_the_unlabeled_and_keeps_the_overflow_set_apart() {
        let reg = LabelRegistry::new(2);
        let empty = reg.intern(vec![]).unwrap();
        let a = reg.intern(vec![("route".into(), "/a".into())]).unwrap();
        let overflow = reg.intern(vec![("route".into(), "/b".into())]).unwrap();
        assert!(overflow.is_overflow());

        let mut p = tree();
        p.sample_interval = 0;
        p.samples = vec![
            sample(11, 100, Some(&empty)),
            sample(11, 10, None),
            sample(12, 50, Some(&a)),
            sample(12, 30, Some(&overflow)),
        ];
        p.external = vec![(Arc::clone(&empty), 4), (Arc::clone(&overflow), 6)];
        p.unlabeled_external = 1;

        let by_set: Vec<_> = p
            .by_label(None)
            .into_iter()
            .map(|g| (g.labels, g.bytes, g.external_bytes, g.samples))
            .collect();
        assert_eq!(
            by_set,
            [
                (GroupLabels::Unlabeled, 110.0, 5, 2),
                (GroupLabels::Set(Arc::clone(&a)), 50.0, 0, 1),
                (GroupLabels::Set(Arc::clone(&overflow)), 30.0, 6, 1),
            ]
        );
        let by_route: Vec<_> = p
            .by_label(Some("route"))
            .into_iter()
            .map(|g| (g.labels, g.bytes, g.external_bytes))
            .collect();
        assert_eq!(
            by_route,
            [
                (GroupLabels::Unlabeled, 110.0, 5),
                (
                    GroupLabels::Value {
                        key: "route".into(),
                        value: "/a".into()
                    },
                    50.0,
                    0
                ),
                (GroupLabels::Set(Arc::clone(&overflow)), 30.0, 6),
            ]
        );
    }

    #[test]
    fn by_label_on_empty_profile_is_empty() {
        assert!(Profile::new(1024).by_label(None).is_empty());
    }
}
