//! Retainers per label: what keeps each label group's sampled objects alive.
//!
//! cpp/ joins a heap snapshot to the session's samples (the labeled runtime's sample-labels API
//! version 3 gives each sample its object's snapshot id) and copies the shortest strong retaining
//! chain of every sampled object ([`Chains`]). Here the chains of each group ([`Profile::by_label`]'s
//! groups, same rules) merge into a prefix tree rooted at the objects, like DevTools' Retainers
//! view: first the object's class, then its first retainer, that one's, and so on, each step
//! weighted by the sample's estimated bytes. Runs of V8-internal nodes (hidden, array, code and
//! shape nodes, such as a Map's hash table; not `system / Context`, whose edges are variables) are
//! one step. The tree is cut to what holds most of the group's bytes: [`Limits`].
//!
//! Memory: the trees have at most one node per sample and step, and the call's tables are dropped
//! with it.

use std::borrow::Cow;
use std::fmt::Write;

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::profile::{GroupLabels, NodeIndex, Profile};

/// [`ChainNode::parent`] of the snapshot's root.
pub const PARENT_ROOT: u32 = u32::MAX;
/// [`ChainNode::parent`] of a node no strong path reaches (weak references only).
pub const PARENT_UNREACHED: u32 = u32::MAX - 1;
/// [`ChainNode::parent`] where cpp/ stopped copying a chain (it goes on in the snapshot).
pub const PARENT_TRUNCATED: u32 = u32::MAX - 2;
/// [`Chains::sample_nodes`] of a sample without a snapshot node: a dead object, or one the
/// snapshot did not see.
pub const NO_NODE: u32 = u32::MAX;

/// V8's `HeapGraphEdge::Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EdgeType {
    ContextVariable,
    Element,
    Property,
    Internal,
    Hidden,
    Shortcut,
    Weak,
    Unknown,
}

impl EdgeType {
    pub fn from_v8(value: u8) -> Self {
        match value {
            0 => EdgeType::ContextVariable,
            1 => EdgeType::Element,
            2 => EdgeType::Property,
            3 => EdgeType::Internal,
            4 => EdgeType::Hidden,
            5 => EdgeType::Shortcut,
            6 => EdgeType::Weak,
            _ => EdgeType::Unknown,
        }
    }

    /// The name in the JSON output.
    pub fn name(self) -> &'static str {
        match self {
            EdgeType::ContextVariable => "context",
            EdgeType::Element => "element",
            EdgeType::Property => "property",
            EdgeType::Internal => "internal",
            EdgeType::Hidden => "hidden",
            EdgeType::Shortcut => "shortcut",
            EdgeType::Weak => "weak",
            EdgeType::Unknown => "unknown",
        }
    }
}

/// V8's `HeapGraphNode::Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeType {
    Hidden,
    Array,
    String,
    Object,
    Code,
    Closure,
    RegExp,
    HeapNumber,
    Native,
    Synthetic,
    ConsString,
    SlicedString,
    Symbol,
    BigInt,
    ObjectShape,
    Unknown,
}

impl NodeType {
    pub fn from_v8(value: u8) -> Self {
        match value {
            0 => NodeType::Hidden,
            1 => NodeType::Array,
            2 => NodeType::String,
            3 => NodeType::Object,
            4 => NodeType::Code,
            5 => NodeType::Closure,
            6 => NodeType::RegExp,
            7 => NodeType::HeapNumber,
            8 => NodeType::Native,
            9 => NodeType::Synthetic,
            10 => NodeType::ConsString,
            11 => NodeType::SlicedString,
            12 => NodeType::Symbol,
            13 => NodeType::BigInt,
            14 => NodeType::ObjectShape,
            _ => NodeType::Unknown,
        }
    }

    /// The name in the JSON output (DevTools' node types).
    pub fn name(self) -> &'static str {
        match self {
            NodeType::Hidden => "hidden",
            NodeType::Array => "array",
            NodeType::String => "string",
            NodeType::Object => "object",
            NodeType::Code => "code",
            NodeType::Closure => "closure",
            NodeType::RegExp => "regexp",
            NodeType::HeapNumber => "number",
            NodeType::Native => "native",
            NodeType::Synthetic => "synthetic",
            NodeType::ConsString => "concatenated string",
            NodeType::SlicedString => "sliced string",
            NodeType::Symbol => "symbol",
            NodeType::BigInt => "bigint",
            NodeType::ObjectShape => "object shape",
            NodeType::Unknown => "unknown",
        }
    }

    /// V8's own structures, which no JS code names (`system / ...`, backing stores, code, maps):
    /// a run of them is one step.
    pub fn is_internal(self) -> bool {
        matches!(
            self,
            NodeType::Hidden | NodeType::Array | NodeType::Code | NodeType::ObjectShape
        )
    }
}

/// One snapshot node on the chain of a sampled object, with the edge from its first retainer.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainNode {
    /// Index of its first retainer in [`Chains::nodes`], or [`PARENT_ROOT`], [`PARENT_UNREACHED`],
    /// [`PARENT_TRUNCATED`].
    pub parent: u32,
    /// The edge from the retainer to this node (meaningless for the marks).
    pub edge_type: EdgeType,
    /// A property or variable name, or an index in decimal.
    pub edge_name: String,
    pub node_type: NodeType,
    /// A constructor, a function, `system / Context`, ...; empty for strings (their contents).
    pub name: String,
    pub self_size: u64,
    /// The heap snapshot object id.
    pub id: u32,
}

/// The retaining chains of a profile's samples.
#[derive(Debug, Clone, Default)]
pub struct Chains {
    pub nodes: Vec<ChainNode>,
    /// Per sample of the profile (index-aligned): its object's node, or [`NO_NODE`].
    pub sample_nodes: Vec<u32>,
}

/// How much of each group's tree is kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Retainer steps below the object's class.
    pub max_depth: usize,
    /// Children kept per node, largest first; the rest are one `(other)` child.
    pub max_children: usize,
    /// Children with less than this share of the group's bytes go to `(other)` too.
    pub min_share: f64,
    /// Groups reported, largest first; the rest are counted in [`Retainers::more_groups`].
    pub max_groups: usize,
    /// Allocation sites listed per group.
    pub max_sites: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: 12,
            max_children: 8,
            min_share: 0.01,
            max_groups: 50,
            max_sites: 5,
        }
    }
}

/// What the snapshot cost (filled by the caller, which took it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotFacts {
    /// Nodes of the heap snapshot.
    pub nodes: u64,
    /// Milliseconds for the snapshot and the profile with object ids.
    pub snapshot_ms: f64,
    /// Milliseconds for the walk and the copy of the chains.
    pub walk_ms: f64,
    /// Native bytes of the walk's tables (freed with the snapshot).
    pub walk_bytes: u64,
    /// Milliseconds the whole call held the isolate: snapshot, walk and aggregation.
    pub pause_ms: f64,
}

/// Retainers per label group.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Retainers {
    pub snapshot: SnapshotFacts,
    pub sample_interval: u64,
    /// Grouped by this label key's value; `None`: by full label set.
    pub key: Option<String>,
    /// Largest first, at most [`Limits::max_groups`].
    pub groups: Vec<RetainerGroup>,
    /// The groups left out.
    pub more_groups: MoreGroups,
}

impl Retainers {
    /// The JSON lib/ parses (groups name their label set by id: `labelSet`).
    pub fn to_json(&self) -> String {
        // Serializing plain structs of strings and numbers cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The groups beyond [`Limits::max_groups`], counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MoreGroups {
    pub groups: usize,
    pub bytes: f64,
    pub samples: usize,
}

/// One label group's sampled objects and what retains them.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetainerGroup {
    /// The group ([`Profile::by_label`]'s).
    #[serde(skip)]
    pub labels: GroupLabels,
    /// The id of the group's label set (grouped by full set, or the overflow set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_set: Option<u32>,
    /// The grouping key's value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Estimated live bytes of the group's samples (as `byLabel`).
    pub bytes: f64,
    pub samples: usize,
    /// Of those, the samples whose object the snapshot has no node for (none of their bytes are in
    /// `paths`).
    pub unmatched_bytes: f64,
    pub unmatched_samples: usize,
    /// The objects' classes, each with its retainers below it.
    pub paths: Vec<PathNode>,
    /// Where the group's sampled objects were allocated, largest first.
    pub sites: Vec<Site>,
}

/// What a [`PathNode`] stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum StepKind {
    /// The sampled objects of one class (the first level).
    Object,
    /// An edge from a retainer (or from a run of V8-internal nodes) to the node above.
    Retainer,
    /// The objects are reachable only through weak references.
    Unreachable,
    /// The chain goes on, not copied further.
    Truncated,
    /// The children not shown, merged.
    Other,
}

/// One step of the tree.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PathNode {
    pub kind: StepKind,
    /// The step as the text report shows it: `Object`, `table in Map`, `[*] in system / Context`.
    pub text: String,
    /// Object: its class; retainer: the retainer's class (the first of an internal run).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_type: Option<&'static str>,
    /// Retainer: the edge's name, `[12]` for an index (`[*]` when the merged edges had several).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edge: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edge_type: Option<&'static str>,
    /// Retainer: the step stands for a run of V8-internal nodes; the last one's class when the
    /// run is longer than one.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub internal: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub through: Option<String>,
    /// Estimated bytes of the samples whose chain passes here.
    pub bytes: f64,
    pub samples: usize,
    /// `bytes` over the group's bytes.
    pub share: f64,
    /// Some chains go on beyond the depth limit.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deeper: bool,
    /// Retainer: the fewest and most times in a row the chains took this step (a linked list's
    /// `next in Link`), when more than once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat: Option<[u32; 2]>,
    /// Other: how many steps it merges. Its children are what those lead to, merged by step (when
    /// that is an `(other)` again, what that one leads to, and so on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged: Option<usize>,
    pub children: Vec<PathNode>,
}

/// An allocation site of a group's samples (the leaf frame of their stacks).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Site {
    pub function_name: String,
    pub url: String,
    /// 1-based, 0 when unknown.
    pub line_number: i32,
    pub bytes: f64,
    pub samples: usize,
    pub share: f64,
}

/// The retainers of `profile`'s samples per label group (by full set, or by `key`'s value).
/// `chains.sample_nodes` is index-aligned with `profile.samples`; a shorter one leaves the rest
/// unmatched.
pub fn by_label(
    profile: &Profile,
    chains: &Chains,
    key: Option<&str>,
    limits: &Limits,
) -> Retainers {
    let (groups, members) = profile.by_label_with_members(key);
    let shown = groups.len().min(limits.max_groups);
    let mut trees: Vec<Tree<'_>> = (0..shown).map(|_| Tree::default()).collect();
    let mut sites: Vec<FxHashMap<u32, (f64, usize)>> = vec![FxHashMap::default(); shown];
    let mut unmatched = vec![(0.0, 0usize); shown];
    let mut steps = Vec::new();
    for (i, sample) in profile.samples.iter().enumerate() {
        let g = members[i];
        if g >= shown {
            continue;
        }
        let bytes = profile.sample_bytes(sample);
        let site = sites[g].entry(sample.node_id).or_default();
        site.0 += bytes;
        site.1 += 1;
        let node = chains.sample_nodes.get(i).copied().unwrap_or(NO_NODE);
        if node == NO_NODE || node as usize >= chains.nodes.len() {
            unmatched[g].0 += bytes;
            unmatched[g].1 += 1;
            continue;
        }
        let deeper = chain_steps(&chains.nodes, node, limits.max_depth, &mut steps);
        trees[g].add(&steps, deeper, bytes);
    }
    let node_index = NodeIndex::new(profile);
    let mut more = MoreGroups::default();
    let mut out = Vec::with_capacity(shown);
    for (g, group) in groups.into_iter().enumerate() {
        if g >= shown {
            more.groups += 1;
            more.bytes += group.bytes;
            more.samples += group.samples;
            continue;
        }
        let (label_set, value) = match &group.labels {
            GroupLabels::Set(set) => (Some(set.id()), None),
            GroupLabels::Value { value, .. } => (None, Some(value.clone())),
            GroupLabels::Unlabeled => (None, None),
        };
        out.push(RetainerGroup {
            paths: trees[g].cut(group.bytes, limits),
            sites: top_sites(
                profile,
                &node_index,
                &sites[g],
                group.bytes,
                limits.max_sites,
            ),
            labels: group.labels,
            label_set,
            value,
            bytes: group.bytes,
            samples: group.samples,
            unmatched_bytes: unmatched[g].0,
            unmatched_samples: unmatched[g].1,
        });
    }
    Retainers {
        snapshot: SnapshotFacts::default(),
        sample_interval: profile.sample_interval,
        key: key.map(str::to_owned),
        groups: out,
        more_groups: more,
    }
}

/// A class as a step shows it: strings, numbers and the like by their type (a string node's name
/// is its contents, never copied), closures as `name()`, the rest by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Class<'a> {
    node_type: NodeType,
    name: &'a str,
}

impl<'a> Class<'a> {
    fn of(node: &'a ChainNode) -> Self {
        let name = match node.node_type {
            NodeType::String
            | NodeType::ConsString
            | NodeType::SlicedString
            | NodeType::HeapNumber
            | NodeType::Symbol
            | NodeType::BigInt
            | NodeType::RegExp => "",
            _ => node.name.as_str(),
        };
        Class {
            node_type: node.node_type,
            name,
        }
    }

    fn text(self) -> Cow<'a, str> {
        match (self.node_type, self.name) {
            (NodeType::String, _) => "(string)".into(),
            (NodeType::ConsString, _) => "(concatenated string)".into(),
            (NodeType::SlicedString, _) => "(sliced string)".into(),
            (NodeType::HeapNumber, _) => "(number)".into(),
            (NodeType::Symbol, _) => "(symbol)".into(),
            (NodeType::BigInt, _) => "(bigint)".into(),
            (NodeType::RegExp, _) => "(regexp)".into(),
            (NodeType::Closure, "") => "(anonymous)()".into(),
            (NodeType::Closure, name) => format!("{name}()").into(),
            (NodeType::Synthetic, "") => "(root)".into(),
            // V8 leaves backing stores (FixedArray and the like: a Map's hash table) unnamed;
            // DevTools' name for them.
            (NodeType::Array, "") => "(internal array)".into(),
            (_, "") => "(no name)".into(),
            (_, name) => name.into(),
        }
    }
}

/// An edge as steps merge it: indices merge whatever their value (`[12]` and `[13]` of one
/// array are one way of retaining), names do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Edge<'a> {
    Index(EdgeType),
    Name(EdgeType, &'a str),
}

/// An index edge's value, when the edge is one (elements, hidden edges, and internal edges named
/// by a number: a FixedArray's slots).
fn index_of(node: &ChainNode) -> Option<u64> {
    let digits = !node.edge_name.is_empty() && node.edge_name.bytes().all(|b| b.is_ascii_digit());
    match node.edge_type {
        EdgeType::Element | EdgeType::Hidden => Some(node.edge_name.parse().unwrap_or(0)),
        _ if digits => node.edge_name.parse().ok(),
        _ => None,
    }
}

fn edge_of(node: &ChainNode) -> Edge<'_> {
    match index_of(node) {
        Some(_) => Edge::Index(node.edge_type),
        None => Edge::Name(node.edge_type, &node.edge_name),
    }
}

/// What a tree node is keyed by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum StepKey<'a> {
    Object(Class<'a>),
    Retainer {
        edge: Edge<'a>,
        retainer: Class<'a>,
        /// The last node of an internal run longer than one.
        through: Option<Class<'a>>,
        internal: bool,
    },
    Unreachable,
    Truncated,
}

/// One step of a sample's chain: its key, the index of an index edge (`mixed` when a repeated
/// step's edges had several), and how many times in a row the chain took it.
#[derive(Debug, Clone, Copy)]
struct Step<'a> {
    key: StepKey<'a>,
    index: Option<u64>,
    mixed: bool,
    repeat: u32,
}

impl<'a> Step<'a> {
    fn new(key: StepKey<'a>, index: Option<u64>) -> Self {
        Step {
            key,
            index,
            mixed: false,
            repeat: 1,
        }
    }
}

fn is_node(parent: u32, nodes: &[ChainNode]) -> bool {
    (parent as usize) < nodes.len()
}

/// The steps of the chain of `object` into `steps`: its class, then at most `max_depth` retainer
/// steps up to (not including) the snapshot's root. The same retainer step taken again right away
/// (a linked list's `next in Link`, a rope's `first in (concatenated string)`) counts as one,
/// repeated. True when the chain goes on beyond them.
fn chain_steps<'a>(
    nodes: &'a [ChainNode],
    object: u32,
    max_depth: usize,
    steps: &mut Vec<Step<'a>>,
) -> bool {
    steps.clear();
    let mut at = &nodes[object as usize];
    steps.push(Step::new(StepKey::Object(Class::of(at)), None));
    loop {
        let key = match at.parent {
            PARENT_ROOT => return false,
            PARENT_UNREACHED => StepKey::Unreachable,
            parent if !is_node(parent, nodes) => StepKey::Truncated,
            parent => {
                let retainer = &nodes[parent as usize];
                // The root itself is no step: the chain ends at what the root holds.
                if retainer.parent == PARENT_ROOT {
                    return false;
                }
                let (last, internal) = internal_run(nodes, retainer);
                let step = Step::new(
                    StepKey::Retainer {
                        edge: edge_of(at),
                        retainer: Class::of(retainer),
                        through: (!std::ptr::eq(last, retainer)).then(|| Class::of(last)),
                        internal,
                    },
                    index_of(at),
                );
                let previous = steps.last_mut().filter(|p| p.key == step.key);
                if let Some(previous) = previous {
                    previous.repeat = previous.repeat.saturating_add(1);
                    previous.mixed |= previous.index != step.index;
                } else if steps.len() > max_depth {
                    return true;
                } else {
                    steps.push(step);
                }
                at = last;
                continue;
            }
        };
        if steps.len() > max_depth {
            return true;
        }
        steps.push(Step::new(key, None));
        return false;
    }
}

/// The last node of the run of V8-internal nodes that starts at `first` (`first` itself when it is
/// not internal), and whether it is a run.
fn internal_run<'a>(nodes: &'a [ChainNode], first: &'a ChainNode) -> (&'a ChainNode, bool) {
    if !first.node_type.is_internal() {
        return (first, false);
    }
    let mut last = first;
    while is_node(last.parent, nodes) {
        let next = &nodes[last.parent as usize];
        if !next.node_type.is_internal() || next.parent == PARENT_ROOT {
            break;
        }
        last = next;
    }
    (last, true)
}

/// A group's prefix tree while samples are added: an arena, children found by (parent, key).
#[derive(Default)]
struct Tree<'a> {
    nodes: Vec<TreeNode<'a>>,
    /// (parent index or `TOP` for the top level, key) -> node index.
    index: FxHashMap<(usize, StepKey<'a>), usize>,
}

struct TreeNode<'a> {
    key: StepKey<'a>,
    parent: usize,
    bytes: f64,
    samples: usize,
    deeper: bool,
    /// The first index its edges had, and whether they had several.
    index: Option<u64>,
    mixed: bool,
    /// The fewest and most times in a row its chains took the step.
    repeat: (u32, u32),
}

const TOP: usize = usize::MAX;

impl<'a> Tree<'a> {
    fn add(&mut self, steps: &[Step<'a>], deeper: bool, bytes: f64) {
        let mut parent = TOP;
        for step in steps {
            let next = self.nodes.len();
            let at = *self.index.entry((parent, step.key)).or_insert(next);
            if at == next {
                self.nodes.push(TreeNode {
                    key: step.key,
                    parent,
                    bytes: 0.0,
                    samples: 0,
                    deeper: false,
                    index: step.index,
                    mixed: false,
                    repeat: (step.repeat, step.repeat),
                });
            }
            let node = &mut self.nodes[at];
            node.bytes += bytes;
            node.samples += 1;
            node.mixed |= step.mixed || node.index != step.index;
            node.repeat = (
                node.repeat.0.min(step.repeat),
                node.repeat.1.max(step.repeat),
            );
            parent = at;
        }
        if deeper && parent != TOP {
            self.nodes[parent].deeper = true;
        }
    }

    /// The tree as output, cut by `limits`; shares of `total`.
    fn cut(&self, total: f64, limits: &Limits) -> Vec<PathNode> {
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        let mut top = Vec::new();
        for (i, node) in self.nodes.iter().enumerate() {
            match node.parent {
                TOP => top.push(i),
                p => children[p].push(i),
            }
        }
        let cut = Cut {
            tree: self,
            children,
            total,
            limits,
        };
        cut.level(&top)
    }
}

/// The cut of one tree. A shown step may stand for several tree nodes of one key: the children
/// merged into `(other)` keep their own retainers, merged by key below it, so chains that part
/// near the objects and meet further up (many properties of one record, held by one Map) still
/// show where they meet.
struct Cut<'t, 'a> {
    tree: &'t Tree<'a>,
    children: Vec<Vec<usize>>,
    total: f64,
    limits: &'t Limits,
}

impl Cut<'_, '_> {
    fn share(&self, bytes: f64) -> f64 {
        if self.total > 0.0 {
            bytes / self.total
        } else {
            0.0
        }
    }

    /// The steps below the tree nodes `parents` (the top level for the roots): their children
    /// merged by key, largest first, cut.
    fn level(&self, members: &[usize]) -> Vec<PathNode> {
        let nodes = &self.tree.nodes;
        let mut by_key: FxHashMap<StepKey<'_>, usize> = FxHashMap::default();
        let mut groups: Vec<(f64, Vec<usize>)> = Vec::new();
        for &i in members {
            let g = *by_key.entry(nodes[i].key).or_insert_with(|| {
                groups.push((0.0, Vec::new()));
                groups.len() - 1
            });
            groups[g].0 += nodes[i].bytes;
            groups[g].1.push(i);
        }
        groups.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1[0].cmp(&b.1[0])));
        let mut out = Vec::new();
        let mut other: Vec<usize> = Vec::new();
        let mut merged = 0;
        for (rank, (bytes, group)) in groups.into_iter().enumerate() {
            if rank < self.limits.max_children && self.share(bytes) >= self.limits.min_share {
                let mut path = self.path_node(&group);
                path.children = self.level(&self.children_of(&group));
                out.push(path);
            } else {
                merged += 1;
                other.extend(group);
            }
        }
        if !other.is_empty() {
            let bytes: f64 = other.iter().map(|&i| nodes[i].bytes).sum();
            let mut children = self.level(&self.children_of(&other));
            // An `(other)` whose steps lead to an `(other)` again shows where those lead.
            if let [only] = children.as_mut_slice() {
                if only.kind == StepKind::Other {
                    children = std::mem::take(&mut only.children);
                }
            }
            out.push(PathNode {
                kind: StepKind::Other,
                text: "(other)".into(),
                merged: Some(merged),
                bytes,
                samples: other.iter().map(|&i| nodes[i].samples).sum(),
                share: self.share(bytes),
                deeper: other.iter().any(|&i| nodes[i].deeper),
                children,
                ..PathNode::empty()
            });
        }
        out
    }

    fn children_of(&self, group: &[usize]) -> Vec<usize> {
        group
            .iter()
            .flat_map(|&i| self.children[i].iter().copied())
            .collect()
    }

    /// The output step of tree nodes that share one key.
    fn path_node(&self, group: &[usize]) -> PathNode {
        let nodes = &self.tree.nodes;
        let first = &nodes[group[0]];
        let bytes: f64 = group.iter().map(|&i| nodes[i].bytes).sum();
        let repeat = group.iter().fold((u32::MAX, 0), |(lo, hi), &i| {
            (lo.min(nodes[i].repeat.0), hi.max(nodes[i].repeat.1))
        });
        let mixed = group
            .iter()
            .any(|&i| nodes[i].mixed || nodes[i].index != first.index);
        let mut path = PathNode {
            bytes,
            samples: group.iter().map(|&i| nodes[i].samples).sum(),
            share: self.share(bytes),
            deeper: group.iter().any(|&i| nodes[i].deeper),
            ..PathNode::empty()
        };
        match first.key {
            StepKey::Object(class) => {
                path.kind = StepKind::Object;
                path.text = class.text().into_owned();
                path.name = path.text.clone();
                path.node_type = Some(class.node_type.name());
            }
            StepKey::Retainer {
                edge,
                retainer,
                through,
                internal,
            } => {
                let edge_text = match edge {
                    Edge::Index(_) if mixed => "[*]".to_owned(),
                    Edge::Index(_) => format!("[{}]", first.index.unwrap_or(0)),
                    Edge::Name(_, "") => "(unnamed)".to_owned(),
                    Edge::Name(_, name) => name.to_owned(),
                };
                let edge_type = match edge {
                    Edge::Index(t) | Edge::Name(t, _) => t,
                };
                path.kind = StepKind::Retainer;
                path.name = retainer.text().into_owned();
                path.node_type = Some(retainer.node_type.name());
                path.internal = internal;
                path.through = through.map(|c| c.text().into_owned());
                let mut text = format!("{edge_text} in {}", path.name);
                if let Some(last) = &path.through {
                    let _ = write!(text, " \u{2026} {last}");
                }
                match repeat {
                    (_, 1) => {}
                    (lo, hi) if lo == hi => {
                        let _ = write!(text, " \u{d7}{hi}");
                    }
                    (lo, hi) => {
                        let _ = write!(text, " \u{d7}{lo}-{hi}");
                    }
                }
                path.repeat = (repeat.1 > 1).then_some([repeat.0, repeat.1]);
                path.text = text;
                path.edge = Some(edge_text);
                path.edge_type = Some(edge_type.name());
            }
            StepKey::Unreachable => {
                path.kind = StepKind::Unreachable;
                path.text = "(reachable through weak references only)".into();
            }
            StepKey::Truncated => {
                path.kind = StepKind::Truncated;
                path.text = "(chain not followed further)".into();
            }
        }
        path
    }
}

impl PathNode {
    fn empty() -> Self {
        PathNode {
            kind: StepKind::Other,
            text: String::new(),
            name: String::new(),
            node_type: None,
            edge: None,
            edge_type: None,
            internal: false,
            through: None,
            bytes: 0.0,
            samples: 0,
            share: 0.0,
            deeper: false,
            repeat: None,
            merged: None,
            children: Vec::new(),
        }
    }
}

/// The largest allocation sites of a group, by the leaf frame of the samples' stacks.
fn top_sites(
    profile: &Profile,
    node_index: &NodeIndex,
    sites: &FxHashMap<u32, (f64, usize)>,
    total: f64,
    max: usize,
) -> Vec<Site> {
    let mut sorted: Vec<_> = sites.iter().collect();
    sorted.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0).then(a.0.cmp(b.0)));
    sorted
        .into_iter()
        .take(max)
        .map(|(&node_id, &(bytes, samples))| {
            let frame = node_index
                .get(node_id)
                .map(|i| profile.nodes[i].frame.clone())
                .unwrap_or_default();
            Site {
                function_name: frame.function_name,
                url: frame.url,
                line_number: frame.line_number,
                bytes,
                samples,
                share: if total > 0.0 { bytes / total } else { 0.0 },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::LabelRegistry;
    use crate::profile::{CallFrame, Sample};
    use crate::test_support::labels;
    use std::sync::Arc;
    use EdgeType as E;
    use NodeType as N;

    /// Builds chains the way cpp/ copies them: each node once, its parent before it.
    #[derive(Default)]
    struct Graph {
        nodes: Vec<ChainNode>,
    }

    impl Graph {
        fn node(&mut self, parent: u32, edge: (EdgeType, &str), ty: NodeType, name: &str) -> u32 {
            self.nodes.push(ChainNode {
                parent,
                edge_type: edge.0,
                edge_name: edge.1.into(),
                node_type: ty,
                name: name.into(),
                self_size: 16,
                id: self.nodes.len() as u32 * 2 + 1,
            });
            self.nodes.len() as u32 - 1
        }

        /// A chain of nodes from `parent`, each step's node held by the one before; the last.
        fn path(&mut self, parent: u32, steps: &[(EdgeType, &str, NodeType, &str)]) -> u32 {
            steps
                .iter()
                .fold(parent, |at, &(edge, edge_name, ty, name)| {
                    self.node(at, (edge, edge_name), ty, name)
                })
        }

        /// The root and the global object it holds (a shortcut edge, as V8's snapshot has it).
        fn global(&mut self) -> (u32, u32) {
            let root = self.node(PARENT_ROOT, NONE, NodeType::Synthetic, "");
            (root, self.global_under(root))
        }

        fn global_under(&mut self, root: u32) -> u32 {
            self.node(root, (EdgeType::Shortcut, "1"), NodeType::Object, "global")
        }

        /// The chains of these nodes, with the samples' objects at `sample_nodes`.
        fn chains(self, sample_nodes: Vec<u32>) -> Chains {
            Chains {
                nodes: self.nodes,
                sample_nodes,
            }
        }
    }

    const NONE: (EdgeType, &str) = (EdgeType::Element, "0");
    /// global.registry, a Registry.
    const REGISTRY: (EdgeType, &str, NodeType, &str) =
        (E::Property, "registry", N::Object, "Registry");

    fn profile(samples: Vec<(u64, Option<&Arc<crate::LabelSet>>)>) -> Profile {
        let mut p = Profile::new(0); // estimates = sizes
        let root = p.add_node(None, 1, CallFrame::default());
        p.add_node(
            Some(root),
            2,
            CallFrame {
                function_name: "handler".into(),
                url: "file:///app.js".into(),
                line_number: 7,
                ..CallFrame::default()
            },
        );
        p.samples = samples
            .into_iter()
            .enumerate()
            .map(|(i, (size, labels))| Sample {
                node_id: 2,
                size,
                count: 1,
                sample_id: i as u64 + 1,
                labels: labels.cloned(),
            })
            .collect();
        p
    }

    /// A module-level Map that keeps request objects: root > (GC roots) > ... > handler() >
    /// context > leaked > table > [i].
    fn leak_graph(g: &mut Graph, entries: &[&str]) -> Vec<u32> {
        let root = g.node(PARENT_ROOT, NONE, NodeType::Synthetic, "");
        let table = g.path(
            root,
            &[
                (E::Element, "1", N::Synthetic, "(GC roots)"),
                (E::Element, "4", N::Synthetic, "(Global handles)"),
                (E::Internal, "1", N::Closure, "handler"),
                (E::Internal, "context", N::Object, "system / Context"),
                (E::ContextVariable, "leaked", N::Object, "Map"),
                // V8 names no FixedArray: the table is an unnamed array node.
                (E::Internal, "table", N::Array, ""),
            ],
        );
        entries
            .iter()
            .map(|i| g.node(table, (EdgeType::Internal, i), NodeType::Object, "Object"))
            .collect()
    }

    fn texts(paths: &[PathNode]) -> Vec<&str> {
        paths.iter().map(|p| p.text.as_str()).collect()
    }

    #[test]
    fn chains_merge_into_a_tree_from_the_objects_with_index_edges_merged() {
        let mut g = Graph::default();
        let objects = leak_graph(&mut g, &["3", "7", "9"]);
        let body = g.node(
            objects[0],
            (EdgeType::Property, "body"),
            NodeType::String,
            "",
        );
        let chains = g.chains(vec![objects[0], objects[1], objects[2], body]);
        let p = profile(vec![(100, None), (100, None), (100, None), (700, None)]);
        let r = by_label(&p, &chains, None, &Limits::default());
        assert_eq!(r.groups.len(), 1);
        let group = &r.groups[0];
        assert_eq!(
            (group.bytes, group.samples, group.unmatched_samples),
            (1000.0, 4, 0)
        );
        assert_eq!(texts(&group.paths), ["(string)", "Object"]);
        let string = &group.paths[0];
        assert_eq!((string.bytes, string.share), (700.0, 0.7));
        assert_eq!(
            texts(&string.children),
            ["body in Object"],
            "a string is shown by its type"
        );
        let object = &group.paths[1];
        // Three slots of one table: one step, several indices.
        assert_eq!(texts(&object.children), ["[*] in (internal array)"]);
        let slot = &object.children[0];
        assert!(slot.internal);
        assert_eq!(slot.edge_type, Some("internal"));
        assert_eq!((slot.bytes, slot.samples), (300.0, 3));
        // The string's chain: body in Object, then the one slot it went through.
        assert_eq!(
            texts(&string.children[0].children),
            ["[3] in (internal array)"]
        );
        let mut chain = vec![];
        let mut at = &slot.children;
        while let [only] = at.as_slice() {
            chain.push(only.text.as_str());
            at = &only.children;
        }
        assert_eq!(
            chain,
            [
                "table in Map",
                "leaked in system / Context",
                "context in handler()",
                "[1] in (Global handles)",
                "[4] in (GC roots)"
            ],
            "the chain ends at what the root holds"
        );
        assert!(at.is_empty());
        assert_eq!(group.sites.len(), 1);
        assert_eq!(group.sites[0].function_name, "handler");
        assert_eq!((group.sites[0].bytes, group.sites[0].share), (1000.0, 1.0));
    }

    #[test]
    fn runs_of_internal_nodes_are_one_step() {
        let mut g = Graph::default();
        let (_, global) = g.global();
        let object = g.path(
            global,
            &[
                (E::Property, "cache", N::Object, "Cache"),
                (E::Internal, "properties", N::Array, "(object properties)"),
                (E::Internal, "5", N::Hidden, "system / NameDictionary"),
                (E::Internal, "2", N::Code, "(code)"),
                (E::Internal, "value", N::Object, "Entry"),
            ],
        );
        let chains = g.chains(vec![object]);
        let r = by_label(
            &profile(vec![(64, None)]),
            &chains,
            None,
            &Limits::default(),
        );
        let entry = &r.groups[0].paths[0];
        assert_eq!(entry.text, "Entry");
        let step = &entry.children[0];
        assert_eq!(step.text, "value in (code) \u{2026} (object properties)");
        assert!(step.internal);
        assert_eq!(step.through.as_deref(), Some("(object properties)"));
        assert_eq!(texts(&step.children), ["properties in Cache"]);
        assert_eq!(texts(&step.children[0].children), ["cache in global"]);
        assert!(step.children[0].children[0].children.is_empty());
    }

    #[test]
    fn groups_follow_by_label_and_unmatched_samples_are_counted_apart() {
        let reg = LabelRegistry::new(10);
        let leak = labels(&reg, &[("route", "/leak")]);
        let churn = labels(&reg, &[("route", "/churn"), ("tenant", "a")]);
        let mut g = Graph::default();
        let objects = leak_graph(&mut g, &["1", "2"]);
        let chains = g.chains(vec![objects[0], objects[1], NO_NODE, NO_NODE]);
        let p = profile(vec![
            (300, Some(&leak)),
            (300, Some(&leak)),
            (50, Some(&churn)),
            (10, None),
        ]);
        let r = by_label(&p, &chains, Some("route"), &Limits::default());
        assert_eq!(r.key.as_deref(), Some("route"));
        let summary: Vec<_> = r
            .groups
            .iter()
            .map(|g| {
                (
                    g.value.as_deref(),
                    g.label_set,
                    g.bytes,
                    g.unmatched_bytes,
                    g.paths.len(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (Some("/leak"), None, 600.0, 0.0, 1),
                (Some("/churn"), None, 50.0, 50.0, 0),
                (None, None, 10.0, 10.0, 0),
            ]
        );
        let by_set = by_label(&p, &chains, None, &Limits::default());
        assert_eq!(by_set.groups[0].label_set, Some(leak.id()));
        assert_eq!(by_set.groups[1].label_set, Some(churn.id()));
        let json = serde_json::to_value(&by_set).unwrap();
        assert_eq!(json["groups"][0]["labelSet"], leak.id());
        assert!(
            json["groups"][2].get("labelSet").is_none(),
            "unlabeled: no set"
        );
        assert_eq!(json["groups"][0]["paths"][0]["children"][0]["edge"], "[*]");
        assert_eq!(json["groups"][0]["paths"][0]["nodeType"], "object");
    }

    #[test]
    fn the_tree_is_cut_by_depth_children_and_share() {
        let mut g = Graph::default();
        let (root, first) = g.global();
        // A chain of 20 different steps: the depth limit stops it, and says so.
        let names: Vec<String> = (0..20).map(|i| format!("p{i}")).collect();
        let steps: Vec<_> = names
            .iter()
            .map(|name| (E::Property, name.as_str(), N::Object, "Link"))
            .collect();
        let deep = g.path(first, &steps);
        // Ten holders of one object each, of decreasing size, all in one registry.
        let global = g.global_under(root);
        let registry = g.path(global, &[REGISTRY]);
        let holders: Vec<u32> = (0..10)
            .map(|i| {
                let name = format!("holder{i}");
                g.path(registry, &[(E::Property, &name, N::Object, "Item")])
            })
            .collect();
        let mut sample_nodes = vec![deep];
        sample_nodes.extend(&holders);
        let chains = g.chains(sample_nodes);
        let mut samples = vec![(1000, None)];
        samples.extend((0..10).map(|i| (100 - i * 10 + 1, None)));
        let p = profile(samples);
        let limits = Limits {
            max_depth: 4,
            max_children: 3,
            min_share: 0.02,
            ..Limits::default()
        };
        let r = by_label(&p, &chains, None, &limits);
        let group = &r.groups[0];
        assert_eq!(texts(&group.paths), ["Link", "Item"]);
        let mut depth = 0;
        let mut node = &group.paths[0];
        while let [child] = node.children.as_slice() {
            assert_eq!(child.text, format!("p{} in Link", 19 - depth));
            node = child;
            depth += 1;
        }
        assert_eq!(depth, 4);
        assert!(node.deeper, "the list goes on beyond the cut");
        let items = &group.paths[1];
        assert!(!items.deeper);
        // holder0..2 kept (the three largest); holder3.. (sizes 71, 61, ...) are (other), and so
        // is nothing under 2 % (all are above it here).
        assert_eq!(
            texts(&items.children),
            [
                "holder0 in Registry",
                "holder1 in Registry",
                "holder2 in Registry",
                "(other)"
            ]
        );
        let other = &items.children[3];
        assert_eq!(other.merged, Some(7));
        // What the merged steps lead to is kept, merged by step: all seven meet in the registry.
        assert_eq!(texts(&other.children), ["registry in global"]);
        assert_eq!(other.children[0].bytes, other.bytes);
        assert_eq!(other.children[0].samples, 7);
        assert_eq!(
            other.bytes,
            (3..10).map(|i| 100.0 - i as f64 * 10.0 + 1.0).sum::<f64>()
        );
        let total: f64 = items.children.iter().map(|c| c.bytes).sum();
        assert_eq!(
            total, items.bytes,
            "(other) keeps the bytes of what it merges"
        );
        let share_cut = by_label(
            &p,
            &chains,
            None,
            &Limits {
                min_share: 0.05,
                ..limits
            },
        );
        // The group holds 1000 + 560 bytes; 5 % of it is 78: holder0..2 (101, 91, 81) pass.
        assert_eq!(share_cut.groups[0].paths[1].children.len(), 4);
        // 6 % is 93.6: holder0 alone.
        let strict = by_label(
            &p,
            &chains,
            None,
            &Limits {
                min_share: 0.06,
                ..limits
            },
        );
        assert_eq!(
            texts(&strict.groups[0].paths[1].children),
            ["holder0 in Registry", "(other)"],
            "children under the share go to (other)"
        );
    }

    #[test]
    fn an_other_leads_to_where_its_steps_meet() {
        let mut g = Graph::default();
        let (_, global) = g.global();
        let registry = g.path(global, &[REGISTRY]);
        let items: Vec<u32> = (0..10)
            .map(|i| {
                let (edge, class, item) =
                    (format!("box{i}"), format!("Box{i}"), format!("item{i}"));
                g.path(
                    registry,
                    &[
                        (E::Property, &edge, N::Object, &class),
                        (E::Property, &item, N::Object, "Item"),
                    ],
                )
            })
            .collect();
        let chains = g.chains(items);
        let p = profile((0..10).map(|_| (10, None)).collect());
        let limits = Limits {
            min_share: 0.5,
            ..Limits::default()
        };
        let item = &by_label(&p, &chains, None, &limits).groups[0].paths[0];
        // Ten ways of 10 % each: one (other), whose steps lead to ten more of 10 % (an (other)
        // again, skipped), which meet in the registry.
        assert_eq!(texts(&item.children), ["(other)"]);
        assert_eq!(item.children[0].merged, Some(10));
        assert_eq!(texts(&item.children[0].children), ["registry in global"]);
        assert_eq!(item.children[0].children[0].share, 1.0);
    }

    #[test]
    fn a_step_taken_again_right_away_is_one_step_repeated() {
        let mut g = Graph::default();
        let (_, global) = g.global();
        let list = |g: &mut Graph, name: &str, links: usize| {
            let mut at = g.node(global, (EdgeType::Property, name), NodeType::Object, "Link");
            for _ in 0..links {
                at = g.node(at, (EdgeType::Property, "next"), NodeType::Object, "Link");
            }
            at
        };
        let (short, long) = (list(&mut g, "head", 3), list(&mut g, "head", 30));
        let chains = g.chains(vec![short, long]);
        let r = by_label(
            &profile(vec![(10, None), (10, None)]),
            &chains,
            None,
            &Limits::default(),
        );
        let link = &r.groups[0].paths[0];
        assert_eq!(texts(&link.children), ["next in Link \u{d7}3-30"]);
        let next = &link.children[0];
        assert_eq!(next.repeat, Some([3, 30]));
        assert!(!next.deeper, "repeats use no depth");
        assert_eq!(texts(&next.children), ["head in global"]);
    }

    #[test]
    fn weak_only_and_truncated_chains_are_steps_of_their_own() {
        let mut g = Graph::default();
        let weak = g.node(PARENT_UNREACHED, NONE, NodeType::Object, "Cached");
        let cut = g.node(PARENT_TRUNCATED, NONE, NodeType::Object, "Far");
        let far = g.node(cut, (EdgeType::Property, "x"), NodeType::Closure, "");
        let chains = g.chains(vec![weak, far]);
        let r = by_label(
            &profile(vec![(10, None), (20, None)]),
            &chains,
            None,
            &Limits::default(),
        );
        let paths = &r.groups[0].paths;
        assert_eq!(texts(paths), ["(anonymous)()", "Cached"]);
        assert_eq!(
            texts(&paths[1].children),
            ["(reachable through weak references only)"]
        );
        assert_eq!(texts(&paths[0].children), ["x in Far"]);
        assert_eq!(
            texts(&paths[0].children[0].children),
            ["(chain not followed further)"]
        );
    }

    #[test]
    fn groups_beyond_the_limit_are_counted() {
        let reg = LabelRegistry::new(10);
        let sets: Vec<_> = (0..4)
            .map(|i| reg.intern(vec![("job".into(), format!("j{i}"))]).unwrap())
            .collect();
        let p = profile(
            sets.iter()
                .enumerate()
                .map(|(i, s)| (100 - i as u64, Some(s)))
                .collect(),
        );
        let chains = Chains::default();
        let r = by_label(
            &p,
            &chains,
            None,
            &Limits {
                max_groups: 2,
                ..Limits::default()
            },
        );
        assert_eq!(r.groups.len(), 2);
        assert_eq!(r.groups[1].label_set, Some(sets[1].id()));
        assert_eq!(
            r.more_groups,
            MoreGroups {
                groups: 2,
                bytes: 98.0 + 97.0,
                samples: 2
            }
        );
        assert_eq!(
            r.groups[0].unmatched_samples, 1,
            "no chains: every sample unmatched"
        );
    }
}
