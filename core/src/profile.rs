//! The heap profile model and its aggregation by label.
//!
//! cpp/ copies V8's `AllocationProfile` into plain structs; src/ turns those into a [`Profile`]:
//! nodes flattened in pre-order with parent indices (index 0 is the root), samples carrying the
//! label set their allocation ran under, and the external bytes per set at read time.

use std::collections::HashMap;
use std::sync::Arc;

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
}

/// What a [`LabelGroup`] is keyed by.
#[derive(Debug, Clone)]
pub enum GroupLabels {
    /// Samples (and external bytes) without labels, or whose set lacks the grouping key.
    Unlabeled,
    /// One full label set (`by_label(None)`).
    Set(Arc<LabelSet>),
    /// One value of the grouping key (`by_label(Some(key))`).
    Value { key: String, value: String },
}

impl PartialEq for GroupLabels {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (GroupLabels::Unlabeled, GroupLabels::Unlabeled) => true,
            (GroupLabels::Set(a), GroupLabels::Set(b)) => Arc::ptr_eq(a, b),
            (
                GroupLabels::Value { key, value },
                GroupLabels::Value {
                    key: k2,
                    value: v2,
                },
            ) => key == k2 && value == v2,
            _ => false,
        }
    }
}

/// Heap and external usage of one group of samples.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelGroup {
    pub labels: GroupLabels,
    /// Estimated live heap bytes (sum of [`Profile::estimate`] over the group's samples).
    pub bytes: f64,
    /// Estimated live object count.
    pub objects: f64,
    /// External bytes of the group's sets (or of the unlabeled bucket).
    pub external_bytes: i64,
    /// Number of samples in the group.
    pub samples: usize,
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

    /// Unsampled estimate of the bytes a sample stands for: `size * count / (1 - exp(-size /
    /// interval))`. Poisson sampling with mean interval r picks an object of size s with probability
    /// 1 - exp(-s/r), so each sampled object stands for 1/(1 - exp(-s/r)) objects (V8's
    /// `ScaleSample`). An interval of 0 means every allocation was sampled: no scaling.
    pub fn estimate(size: u64, count: u32, interval: u64) -> f64 {
        Self::estimate_objects(size, count, interval) * size as f64
    }

    /// Unsampled estimate of the objects a sample stands for: `count / (1 - exp(-size / interval))`
    /// (`count` when the interval or the size is 0).
    pub fn estimate_objects(size: u64, count: u32, interval: u64) -> f64 {
        let count = f64::from(count);
        if interval == 0 || size == 0 {
            return count;
        }
        let p = -(-(size as f64) / interval as f64).exp_m1(); // 1 - exp(-s/r), precise for small s/r
        count / p
    }

    /// Estimated bytes of one sample at this profile's interval.
    pub fn sample_bytes(&self, sample: &Sample) -> f64 {
        Self::estimate(sample.size, sample.count, self.sample_interval)
    }

    /// Estimated objects of one sample at this profile's interval.
    pub fn sample_objects(&self, sample: &Sample) -> f64 {
        Self::estimate_objects(sample.size, sample.count, self.sample_interval)
    }

    /// Estimated live heap bytes of the whole profile.
    pub fn estimated_bytes(&self) -> f64 {
        self.samples.iter().map(|s| self.sample_bytes(s)).sum()
    }

    /// Index in [`nodes`](Self::nodes) of the node with V8 id `node_id`. O(1) when ids equal indices
    /// (or are offset by a constant), O(n) otherwise; bulk users build a [`NodeIndex`].
    pub fn node_index(&self, node_id: u32) -> Option<usize> {
        let first = self.nodes.first()?.id;
        let guess = node_id.wrapping_sub(first) as usize;
        if self.nodes.get(guess).is_some_and(|n| n.id == node_id) {
            return Some(guess);
        }
        self.nodes.iter().position(|n| n.id == node_id)
    }

    /// Estimated bytes allocated directly by the node at `node` (an index), i.e. of the samples
    /// whose `node_id` is that node's id.
    pub fn self_size(&self, node: usize) -> f64 {
        let Some(id) = self.nodes.get(node).map(|n| n.id) else {
            return 0.0;
        };
        self.samples
            .iter()
            .filter(|s| s.node_id == id)
            .map(|s| self.sample_bytes(s))
            .sum()
    }

    /// Node indices from the node with id `node_id` up to and including the root: leaf first.
    /// Empty when no node has that id.
    pub fn stack(&self, node_id: u32) -> Vec<usize> {
        let mut out = Vec::new();
        let mut cur = self.node_index(node_id);
        while let Some(i) = cur {
            out.push(i);
            cur = self.nodes[i].parent;
            if out.len() > self.nodes.len() {
                break; // malformed parent cycle; never loop forever
            }
        }
        out
    }

    /// Groups samples and external bytes by full label set (`key = None`) or by the value of one
    /// key. Unlabeled samples, samples whose set lacks `key`, and unlabeled external bytes form the
    /// [`GroupLabels::Unlabeled`] group (present only when non-empty). External bytes join the
    /// group of their set (or of their set's value for `key`), also when that group has no sample.
    /// Sorted by estimated heap bytes, largest first; ties by external bytes, then by label order.
    pub fn by_label(&self, key: Option<&str>) -> Vec<LabelGroup> {
        let mut grouper = Grouper {
            key,
            groups: Vec::new(),
            unlabeled: None,
            by_set: HashMap::new(),
            by_value: HashMap::new(),
        };
        for sample in &self.samples {
            let g = grouper.slot(sample.labels.as_ref());
            let group = &mut grouper.groups[g];
            group.bytes += self.sample_bytes(sample);
            group.objects += self.sample_objects(sample);
            group.samples += 1;
        }
        for (set, bytes) in &self.external {
            let g = grouper.slot(Some(set));
            grouper.groups[g].external_bytes += bytes;
        }
        if self.unlabeled_external != 0 {
            let g = grouper.slot(None);
            grouper.groups[g].external_bytes += self.unlabeled_external;
        }
        let mut groups = grouper.groups;
        groups.sort_by(|a, b| {
            b.bytes
                .total_cmp(&a.bytes)
                .then(b.external_bytes.cmp(&a.external_bytes))
                .then_with(|| label_order(&a.labels).cmp(&label_order(&b.labels)))
        });
        groups
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
    by_set: HashMap<usize, usize>,
    by_value: HashMap<&'p str, usize>,
}

impl<'p> Grouper<'p, '_> {
    fn push(&mut self, labels: GroupLabels) -> usize {
        self.groups.push(LabelGroup {
            labels,
            bytes: 0.0,
            objects: 0.0,
            external_bytes: 0,
            samples: 0,
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
        let addr = Arc::as_ptr(set) as usize;
        if let Some(&g) = self.by_set.get(&addr) {
            return g;
        }
        let g = match self.key {
            None => self.push(GroupLabels::Set(Arc::clone(set))),
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
    map: HashMap<u32, usize>,
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
