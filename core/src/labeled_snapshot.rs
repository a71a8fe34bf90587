//! Labeled heap snapshots (docs/architecture.md, "Retainers per label", "The labeled
//! `.heapsnapshot`"): V8's serialized heap snapshot, rewritten as a stream with one node per label
//! group added, so that DevTools finds a label's sampled objects by the label's name.
//!
//! The file V8 writes (`HeapSnapshot::Serialize`) is one JSON object: a header with the field
//! layout and the counts, then flat arrays of numbers (`nodes`, `edges`, ...) and last `strings`.
//! A node's edges are consecutive in `edges`, in node order, and nodes and edges name strings by
//! index. So nodes appended at the end of `nodes` own edges appended at the end of `edges`, and
//! strings appended at the end of `strings` have the indices after V8's; only the header's counts
//! and the root's edge count change in place, and the root's new edge goes right after its own.
//!
//! What is added: a synthetic `(heap-labels)` node, reached from the root by an element edge;
//! under it one `native` node per label group, named `(heap-labels) route="/leak"` (DevTools shows
//! a native node's name as its class, so the Summary lists one class per label), reached by a
//! property edge named by the label text; from each, a *weak* edge named `sampled` to each sampled
//! object of the group. DevTools' dominators and retained sizes ignore weak edges, and the added
//! nodes retain nothing strongly, so every V8 node keeps its dominator and retained size; the root,
//! which dominates everything, grows by the added nodes' self sizes (1 byte per label node:
//! DevTools' Summary and search skip nodes of size 0).
//!
//! Two passes over V8's file, each a bounded stream: [`scan`] finds the layout (the header, where
//! each array ends, the root's edges, how many strings there are and the largest node id), then
//! [`rewrite`] copies it with the additions. Memory: the header and a read buffer.

use std::io::{self, Read, Write};

use serde::Serialize;

use crate::profile::{GroupLabels, Profile};
use crate::summary::labels_text;

/// Longest header accepted before `"nodes":[` (V8's is under 2 KiB).
const MAX_HEADER_BYTES: usize = 1 << 20;
/// Read buffer of both passes.
const BUFFER_BYTES: usize = 1 << 20;

/// The name of the synthetic node that holds the label nodes, and the prefix of theirs.
pub const ROOT_NAME: &str = "(heap-labels)";
/// The name of the weak edges from a label node to its sampled objects.
pub const SAMPLED_EDGE: &str = "sampled";
/// Self size of a label node (the synthetic `(heap-labels)` node has 0).
pub const LABEL_NODE_SIZE: u64 = 1;

/// One label group to add: its node's name and the plain snapshot's nodes (ordinals, in V8's
/// order) of its sampled objects.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelNode {
    /// The label text (`labels_text`): the property edge's name; the node is
    /// `(heap-labels) <text>`.
    pub text: String,
    pub targets: Vec<u32>,
}

impl LabelNode {
    /// The node's name in the snapshot.
    pub fn node_name(&self) -> String {
        format!("{ROOT_NAME} {}", self.text)
    }
}

/// One label group of a labeled snapshot, as lib/ reports it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelFacts {
    #[serde(skip)]
    pub labels: GroupLabels,
    /// The id of the group's label set (grouped by full set, or the overflow set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_set: Option<u32>,
    /// The grouping key's value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The label node's name in the file.
    pub node: String,
    /// Estimated live bytes of the group's samples (as `byLabel`).
    pub bytes: f64,
    pub samples: usize,
    /// Of those, the samples whose object has a node in the file (a weak edge from the label
    /// node), and their bytes.
    pub linked_bytes: f64,
    pub linked_samples: usize,
    /// Distinct nodes the label node has edges to.
    pub objects: usize,
}

/// The label nodes of `profile`'s samples per group (by full set, or by `key`'s value, as
/// `Profile::by_label`), largest first: each group with samples, with the nodes of its sampled
/// objects (`sample_nodes`, index-aligned with the samples; `u32::MAX` or past `node_count`: none).
pub fn label_nodes(
    profile: &Profile,
    sample_nodes: &[u32],
    node_count: u64,
    key: Option<&str>,
) -> (Vec<LabelNode>, Vec<LabelFacts>) {
    let (groups, members) = profile.by_label_with_members(key);
    let mut targets: Vec<Vec<u32>> = vec![Vec::new(); groups.len()];
    let mut linked = vec![(0.0, 0usize); groups.len()];
    for (i, sample) in profile.samples.iter().enumerate() {
        let node = sample_nodes.get(i).copied().unwrap_or(u32::MAX);
        if u64::from(node) >= node_count {
            continue;
        }
        let g = members[i];
        targets[g].push(node);
        linked[g].0 += profile.sample_bytes(sample);
        linked[g].1 += 1;
    }
    let mut nodes = Vec::new();
    let mut facts = Vec::new();
    for ((group, mut targets), (linked_bytes, linked_samples)) in
        groups.into_iter().zip(targets).zip(linked)
    {
        if group.samples == 0 {
            continue; // external bytes only: no object in the heap
        }
        targets.sort_unstable();
        targets.dedup();
        let node = LabelNode {
            text: labels_text(&group.labels),
            targets,
        };
        let (label_set, value) = match &group.labels {
            GroupLabels::Set(set) => (Some(set.id()), None),
            GroupLabels::Value { value, .. } => (None, Some(value.clone())),
            GroupLabels::Unlabeled => (None, None),
        };
        facts.push(LabelFacts {
            node: node.node_name(),
            objects: node.targets.len(),
            labels: group.labels,
            label_set,
            value,
            bytes: group.bytes,
            samples: group.samples,
            linked_bytes,
            linked_samples,
        });
        nodes.push(node);
    }
    (nodes, facts)
}

/// What writing a heap snapshot file did and cost, as lib/ reports it.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileFacts {
    pub path: String,
    /// Bytes of the file.
    pub bytes: u64,
    /// Nodes of V8's snapshot (the label nodes not counted).
    pub nodes: u64,
    /// Milliseconds for the snapshot (and the profile).
    pub snapshot_ms: f64,
    /// Milliseconds for V8's serialization.
    pub serialize_ms: f64,
    /// Milliseconds for the two passes that add the label nodes (0 without labels).
    pub label_ms: f64,
    /// Milliseconds the whole call held the isolate.
    pub pause_ms: f64,
    /// With labels: grouped by this key's value; `None`: by full label set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// With labels: one per label group with samples, largest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<LabelFacts>>,
}

impl FileFacts {
    /// The JSON lib/ parses (groups name their label set by id: `labelSet`).
    pub fn to_json(&self) -> String {
        // Serializing plain structs of strings and numbers cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Why a file is not a heap snapshot this module can extend.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("reading or writing the heap snapshot failed: {0}")]
    Io(#[from] io::Error),
    #[error("not a V8 heap snapshot as this runtime writes it: {0}")]
    Format(String),
}

fn format_error<T>(what: impl Into<String>) -> Result<T, SnapshotError> {
    Err(SnapshotError::Format(what.into()))
}

/// Where the fields are in a node or an edge, and the type indices the additions use.
#[derive(Debug, Clone, Default, PartialEq)]
struct Fields {
    node_fields: usize,
    node_type: usize,
    node_name: usize,
    node_id: usize,
    node_self_size: usize,
    node_edge_count: usize,
    edge_fields: usize,
    edge_type: usize,
    edge_name: usize,
    edge_to_node: usize,
    synthetic_type: u64,
    native_type: u64,
    element_edge: u64,
    property_edge: u64,
    weak_edge: u64,
}

/// What [`scan`] learns of a plain snapshot: the counts and the byte offsets the rewrite edits at.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Layout {
    fields: Fields,
    pub node_count: u64,
    pub edge_count: u64,
    pub string_count: u64,
    /// The largest node id.
    pub max_id: u64,
    root_edges: u64,
    /// Byte ranges of the digits of the header's `node_count` and `edge_count`, and of the root's
    /// edge count.
    node_count_digits: (u64, u64),
    edge_count_digits: (u64, u64),
    root_edge_count_digits: (u64, u64),
    /// Offsets of the `]` that ends `nodes`, `edges` and `strings`.
    nodes_end: u64,
    edges_end: u64,
    strings_end: u64,
    /// Where the root's new edge goes: right after its last edge (the start of `edges` when it has
    /// none).
    root_edges_end: u64,
}

/// A byte reader that counts its offset.
struct Bytes<R> {
    inner: R,
    buffer: Vec<u8>,
    start: usize,
    end: usize,
    offset: u64,
}

impl<R: Read> Bytes<R> {
    fn new(inner: R, buffer_bytes: usize) -> Self {
        Bytes {
            inner,
            buffer: vec![0; buffer_bytes],
            start: 0,
            end: 0,
            offset: 0,
        }
    }

    fn fill(&mut self) -> io::Result<bool> {
        if self.start < self.end {
            return Ok(true);
        }
        loop {
            match self.inner.read(&mut self.buffer) {
                Ok(n) => {
                    self.start = 0;
                    self.end = n;
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    fn peek(&mut self) -> Result<u8, SnapshotError> {
        if !self.fill()? {
            return format_error("the file ends early");
        }
        Ok(self.buffer[self.start])
    }

    fn next(&mut self) -> Result<u8, SnapshotError> {
        let byte = self.peek()?;
        self.start += 1;
        self.offset += 1;
        Ok(byte)
    }

    fn skip_space(&mut self) -> Result<u8, SnapshotError> {
        loop {
            let byte = self.peek()?;
            if !byte.is_ascii_whitespace() {
                return Ok(byte);
            }
            self.next()?;
        }
    }

    fn expect(&mut self, wanted: u8) -> Result<(), SnapshotError> {
        let byte = self.skip_space()?;
        if byte != wanted {
            return format_error(format!(
                "'{}' at byte {}, expected '{}'",
                byte.escape_ascii(),
                self.offset,
                wanted as char
            ));
        }
        self.next()?;
        Ok(())
    }

    /// An unsigned integer; returns it with the offsets of its digits.
    fn number(&mut self) -> Result<(u64, u64, u64), SnapshotError> {
        let start = self.offset;
        let mut value: u64 = 0;
        while self.fill()? && self.buffer[self.start].is_ascii_digit() {
            let digit = u64::from(self.next()? - b'0');
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(digit))
                .ok_or_else(|| SnapshotError::Format(format!("a number too large at {start}")))?;
        }
        if self.offset == start {
            return format_error(format!("no number at byte {start}"));
        }
        Ok((value, start, self.offset))
    }

    /// A string whose opening quote was read, up to and including its closing quote.
    fn skip_string(&mut self) -> Result<(), SnapshotError> {
        loop {
            match self.next()? {
                b'"' => return Ok(()),
                b'\\' => {
                    self.next()?;
                }
                _ => {}
            }
        }
    }

    /// A key (a plain string, as V8 writes them) and its colon.
    fn key(&mut self) -> Result<String, SnapshotError> {
        self.expect(b'"')?;
        let mut key = Vec::new();
        loop {
            match self.next()? {
                b'"' => break,
                b'\\' => return format_error("an escaped key"),
                byte if key.len() < 64 => key.push(byte),
                _ => return format_error("a key longer than 64 bytes"),
            }
        }
        self.expect(b':')?;
        Ok(String::from_utf8_lossy(&key).into_owned())
    }

    /// The rest of an array whose `[` was read, whatever it holds; returns the offset of its `]`.
    fn skip_array(&mut self) -> Result<u64, SnapshotError> {
        let mut depth = 1usize;
        loop {
            match self.next()? {
                b'"' => self.skip_string()?,
                b'[' | b'{' => depth += 1,
                b']' | b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(self.offset - 1);
                    }
                }
                _ => {}
            }
        }
    }
}

/// Reads the header up to and including `"nodes":[`.
fn read_header<R: Read>(bytes: &mut Bytes<R>) -> Result<Vec<u8>, SnapshotError> {
    const MARK: &[u8] = b"\"nodes\":[";
    let mut header = Vec::new();
    while !header.ends_with(MARK) {
        if header.len() >= MAX_HEADER_BYTES {
            return format_error("no \"nodes\" array in the first MiB");
        }
        header.push(bytes.next()?);
    }
    Ok(header)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The digits after `"name":` in the header, and their value.
fn header_count(header: &[u8], name: &str) -> Result<(u64, (u64, u64)), SnapshotError> {
    let mark = format!("\"{name}\":");
    let Some(at) = find(header, mark.as_bytes()) else {
        return format_error(format!("no {name} in the header"));
    };
    let start = at + mark.len();
    let end = start
        + header[start..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
    let value = std::str::from_utf8(&header[start..end])
        .ok()
        .and_then(|s| s.parse().ok());
    match value {
        Some(value) => Ok((value, (start as u64, end as u64))),
        None => format_error(format!("{name} is not a number")),
    }
}

fn position(names: &[String], name: &str, what: &str) -> Result<usize, SnapshotError> {
    match names.iter().position(|n| n == name) {
        Some(i) => Ok(i),
        None => format_error(format!("no {name:?} among the {what}")),
    }
}

fn string_list(value: &serde_json::Value, what: &str) -> Result<Vec<String>, SnapshotError> {
    match value.as_array() {
        Some(items) => Ok(items
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_owned())
            .collect()),
        None => format_error(format!("no {what} in the header")),
    }
}

/// The field layout of the header (its meta object).
fn fields_of(header: &[u8]) -> Result<Fields, SnapshotError> {
    // `{"snapshot":{...},\n"nodes":[`: the object before `"nodes"`, closed.
    let body = &header[..header.len() - b"\"nodes\":[".len()];
    let body = body.trim_ascii_end();
    let body = body.strip_suffix(b",").unwrap_or(body);
    let mut text = body.to_vec();
    text.push(b'}');
    let parsed: serde_json::Value = match serde_json::from_slice(&text) {
        Ok(value) => value,
        Err(e) => return format_error(format!("the header is not JSON: {e}")),
    };
    let meta = &parsed["snapshot"]["meta"];
    let node_fields = string_list(&meta["node_fields"], "node_fields")?;
    let edge_fields = string_list(&meta["edge_fields"], "edge_fields")?;
    let node_types = string_list(&meta["node_types"][0], "node types")?;
    let edge_types = string_list(&meta["edge_types"][0], "edge types")?;
    Ok(Fields {
        node_fields: node_fields.len(),
        node_type: position(&node_fields, "type", "node fields")?,
        node_name: position(&node_fields, "name", "node fields")?,
        node_id: position(&node_fields, "id", "node fields")?,
        node_self_size: position(&node_fields, "self_size", "node fields")?,
        node_edge_count: position(&node_fields, "edge_count", "node fields")?,
        edge_fields: edge_fields.len(),
        edge_type: position(&edge_fields, "type", "edge fields")?,
        edge_name: position(&edge_fields, "name_or_index", "edge fields")?,
        edge_to_node: position(&edge_fields, "to_node", "edge fields")?,
        synthetic_type: position(&node_types, "synthetic", "node types")? as u64,
        native_type: position(&node_types, "native", "node types")? as u64,
        element_edge: position(&edge_types, "element", "edge types")? as u64,
        property_edge: position(&edge_types, "property", "edge types")? as u64,
        weak_edge: position(&edge_types, "weak", "edge types")? as u64,
    })
}

/// The first pass: the layout of a plain snapshot read from `input`, checked against its header's
/// counts.
pub fn scan<R: Read>(input: R) -> Result<Layout, SnapshotError> {
    scan_with(input, BUFFER_BYTES)
}

fn scan_with<R: Read>(input: R, buffer_bytes: usize) -> Result<Layout, SnapshotError> {
    let mut bytes = Bytes::new(input, buffer_bytes);
    let header = read_header(&mut bytes)?;
    let fields = fields_of(&header)?;
    let (node_count, node_count_digits) = header_count(&header, "node_count")?;
    let (edge_count, edge_count_digits) = header_count(&header, "edge_count")?;
    let mut layout = Layout {
        node_count_digits,
        edge_count_digits,
        ..Layout::default()
    };

    // nodes: the root's edge count (node 0) and the largest id.
    let mut values = 0u64;
    let mut root_edges = None;
    loop {
        match bytes.skip_space()? {
            b']' => break,
            b',' if values > 0 => {
                bytes.next()?;
            }
            _ => {
                let (value, start, end) = bytes.number()?;
                let field = (values % fields.node_fields as u64) as usize;
                if values < fields.node_fields as u64 && field == fields.node_edge_count {
                    root_edges = Some(value);
                    layout.root_edge_count_digits = (start, end);
                }
                if field == fields.node_id {
                    layout.max_id = layout.max_id.max(value);
                }
                values += 1;
            }
        }
    }
    layout.nodes_end = bytes.offset;
    bytes.next()?;
    if !values.is_multiple_of(fields.node_fields as u64) {
        return format_error("nodes is not a whole number of nodes");
    }
    layout.node_count = values / fields.node_fields as u64;
    let Some(root_edges) = root_edges else {
        return format_error("the snapshot has no nodes");
    };
    layout.root_edges = root_edges;

    // The other arrays, by name, to the end of the object.
    let mut seen_edges = false;
    let mut seen_strings = false;
    loop {
        match bytes.skip_space()? {
            b',' => {
                bytes.next()?;
            }
            b'}' => break,
            _ => {
                let key = bytes.key()?;
                bytes.expect(b'[')?;
                match key.as_str() {
                    "edges" => {
                        layout.edge_count = scan_edges(&mut bytes, &fields, &mut layout)?;
                        seen_edges = true;
                    }
                    "strings" => {
                        layout.string_count = scan_strings(&mut bytes)?;
                        layout.strings_end = bytes.offset;
                        bytes.next()?;
                        seen_strings = true;
                    }
                    _ => {
                        bytes.skip_array()?;
                    }
                }
            }
        }
    }
    if !seen_edges || !seen_strings {
        return format_error("no edges or no strings array");
    }
    if layout.node_count != node_count || layout.edge_count != edge_count {
        return format_error(format!(
            "the header says {node_count} nodes and {edge_count} edges, the arrays hold {} and {}",
            layout.node_count, layout.edge_count
        ));
    }
    layout.fields = fields;
    Ok(layout)
}

/// The edges array after its `[`: counts the edges, notes where the root's end; leaves `bytes`
/// after the `]`.
fn scan_edges<R: Read>(
    bytes: &mut Bytes<R>,
    fields: &Fields,
    layout: &mut Layout,
) -> Result<u64, SnapshotError> {
    let root_values = layout.root_edges * fields.edge_fields as u64;
    layout.root_edges_end = bytes.offset;
    let mut values = 0u64;
    loop {
        match bytes.skip_space()? {
            b']' => break,
            b',' if values > 0 => {
                bytes.next()?;
            }
            _ => {
                let (_, _, end) = bytes.number()?;
                values += 1;
                if values == root_values {
                    layout.root_edges_end = end;
                }
            }
        }
    }
    layout.edges_end = bytes.offset;
    bytes.next()?;
    if !values.is_multiple_of(fields.edge_fields as u64) || values < root_values {
        return format_error("edges is not a whole number of edges, or fewer than the root's");
    }
    Ok(values / fields.edge_fields as u64)
}

/// The strings array after its `[`: counts them; leaves `bytes` at the `]`.
fn scan_strings<R: Read>(bytes: &mut Bytes<R>) -> Result<u64, SnapshotError> {
    let mut count = 0;
    loop {
        match bytes.skip_space()? {
            b']' => return Ok(count),
            b',' if count > 0 => {
                bytes.next()?;
            }
            b'"' => {
                bytes.next()?;
                bytes.skip_string()?;
                count += 1;
            }
            other => {
                return format_error(format!(
                    "'{}' in strings at byte {}",
                    other.escape_ascii(),
                    bytes.offset
                ))
            }
        }
    }
}

/// What the rewrite added.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Added {
    pub nodes: u64,
    pub edges: u64,
    pub strings: u64,
    /// The id of the `(heap-labels)` node; the label nodes follow, 2 apart.
    pub first_id: u64,
}

/// One edit of the copy: at `offset`, drop `remove` bytes and write `insert`.
struct Edit {
    offset: u64,
    remove: u64,
    insert: Vec<u8>,
}

fn join(numbers: &[u64]) -> String {
    numbers
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The second pass: copies the plain snapshot `input` (as [`scan`] saw it) to `output` with
/// `labels` added.
pub fn rewrite<R: Read, W: Write>(
    input: R,
    layout: &Layout,
    labels: &[LabelNode],
    output: W,
) -> Result<Added, SnapshotError> {
    let f = &layout.fields;
    let groups = labels.len() as u64;
    let links: u64 = labels.iter().map(|l| l.targets.len() as u64).sum();
    for label in labels {
        if let Some(&bad) = label
            .targets
            .iter()
            .find(|&&t| u64::from(t) >= layout.node_count)
        {
            return format_error(format!(
                "node {bad} of {} is not in the snapshot",
                label.text
            ));
        }
    }
    let added = Added {
        nodes: 1 + groups,
        edges: 1 + groups + links,
        strings: 2 + 2 * groups,
        // Even: DevTools takes odd ids for JS objects.
        first_id: (layout.max_id / 2 + 1) * 2,
    };
    let string = |i: u64| layout.string_count + i;
    let node_index = |ordinal: u64| ordinal * f.node_fields as u64;
    let holder = layout.node_count;

    let node = |type_: u64, name: u64, id: u64, size: u64, edges: u64| {
        let mut values = vec![0; f.node_fields];
        values[f.node_type] = type_;
        values[f.node_name] = name;
        values[f.node_id] = id;
        values[f.node_self_size] = size;
        values[f.node_edge_count] = edges;
        format!("\n,{}", join(&values))
    };
    let edge = |type_: u64, name: u64, to: u64| {
        let mut values = vec![0; f.edge_fields];
        values[f.edge_type] = type_;
        values[f.edge_name] = name;
        values[f.edge_to_node] = node_index(to);
        join(&values)
    };

    // Strings: "(heap-labels)", "sampled", then per label its text and its node's name.
    let mut strings = String::new();
    for text in [ROOT_NAME.to_owned(), SAMPLED_EDGE.to_owned()]
        .into_iter()
        .chain(labels.iter().flat_map(|l| [l.text.clone(), l.node_name()]))
    {
        strings.push_str(",\n");
        strings.push_str(&serde_json::Value::String(text).to_string());
    }
    let mut nodes = node(f.synthetic_type, string(0), added.first_id, 0, groups);
    for (i, label) in labels.iter().enumerate() {
        let i = i as u64;
        nodes.push_str(&node(
            f.native_type,
            string(3 + 2 * i),
            added.first_id + 2 * (i + 1),
            LABEL_NODE_SIZE,
            label.targets.len() as u64,
        ));
    }
    let mut edges = String::new();
    for i in 0..groups {
        edges.push_str(",\n");
        edges.push_str(&edge(f.property_edge, string(2 + 2 * i), holder + 1 + i));
    }
    for label in labels {
        for &target in &label.targets {
            edges.push_str(",\n");
            edges.push_str(&edge(f.weak_edge, string(1), u64::from(target)));
        }
    }
    let root_edge = edge(f.element_edge, layout.root_edges + 1, holder);
    let root_edge = if layout.root_edges > 0 {
        format!(",\n{root_edge}")
    } else if layout.edge_count > 0 {
        format!("{root_edge},\n")
    } else {
        root_edge
    };

    let replace = |(start, end): (u64, u64), value: u64| Edit {
        offset: start,
        remove: end - start,
        insert: value.to_string().into_bytes(),
    };
    let edits = [
        replace(layout.node_count_digits, layout.node_count + added.nodes),
        replace(layout.edge_count_digits, layout.edge_count + added.edges),
        replace(layout.root_edge_count_digits, layout.root_edges + 1),
        Edit {
            offset: layout.nodes_end,
            remove: 0,
            insert: nodes.into_bytes(),
        },
        Edit {
            offset: layout.root_edges_end,
            remove: 0,
            insert: root_edge.into_bytes(),
        },
        Edit {
            offset: layout.edges_end,
            remove: 0,
            insert: edges.into_bytes(),
        },
        Edit {
            offset: layout.strings_end,
            remove: 0,
            insert: strings.into_bytes(),
        },
    ];
    copy_with_edits(input, output, &edits, BUFFER_BYTES)?;
    Ok(added)
}

/// Copies `input` to `output` applying `edits` (in offset order).
fn copy_with_edits<R: Read, W: Write>(
    mut input: R,
    mut output: W,
    edits: &[Edit],
    buffer_bytes: usize,
) -> Result<(), SnapshotError> {
    let mut buffer = vec![0u8; buffer_bytes];
    let mut offset = 0u64;
    let mut next = 0;
    let mut skip = 0u64;
    loop {
        let n = match input.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        let mut at = 0usize;
        while at < n {
            if skip > 0 {
                let dropped = skip.min((n - at) as u64);
                skip -= dropped;
                at += dropped as usize;
                offset += dropped;
                continue;
            }
            let chunk_end = match edits.get(next) {
                Some(edit) if edit.offset < offset + (n - at) as u64 => {
                    (edit.offset - offset) as usize + at
                }
                _ => n,
            };
            output.write_all(&buffer[at..chunk_end])?;
            offset += (chunk_end - at) as u64;
            at = chunk_end;
            while let Some(edit) = edits.get(next).filter(|e| e.offset == offset) {
                output.write_all(&edit.insert)?;
                skip += edit.remove;
                next += 1;
                if skip > 0 {
                    break;
                }
            }
        }
    }
    if next < edits.len() || skip > 0 {
        return format_error("the file changed between the two passes");
    }
    output.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // A snapshot in V8's layout: root (0) -> (GC roots) (1) -> object (2) -> string (3).
    const PLAIN: &str = r#"{"snapshot":{"meta":{"node_fields":["type","name","id","self_size","edge_count","trace_node_id","detachedness"],"node_types":[["hidden","array","string","object","code","closure","regexp","number","native","synthetic","concatenated string","sliced string","symbol","bigint","object shape"],"string","number","number","number","number","number"],"edge_fields":["type","name_or_index","to_node"],"edge_types":[["context","element","property","internal","hidden","shortcut","weak"],"string_or_number","node"],"trace_function_info_fields":["function_id","name","script_name","script_id","line","column"],"trace_node_fields":["id","function_info_index","count","size","children"],"sample_fields":["timestamp_us","last_assigned_id"],"location_fields":["object_index","script_id","line","column"]},"node_count":4,"edge_count":3,"trace_function_count":0},
"nodes":[9,1,1,0,1,0,0
,9,2,3,0,1,0,0
,3,3,5,32,1,0,0
,2,4,7,20,0,0,0],
"edges":[1,1,7
,2,5,14
,2,6,21],
"trace_function_infos":[],
"trace_tree":[],
"samples":[],
"locations":[],
"strings":["<dummy>",
"",
"(GC roots)",
"Leak",
"a \"quoted\" \\ string ]",
"field",
"text"]}
"#;

    fn labeled(labels: &[LabelNode]) -> (serde_json::Value, Added) {
        let layout = scan(PLAIN.as_bytes()).unwrap();
        let mut out = Vec::new();
        let added = rewrite(PLAIN.as_bytes(), &layout, labels, &mut out).unwrap();
        (serde_json::from_slice(&out).unwrap(), added)
    }

    #[test]
    fn scan_reads_the_counts_and_the_root() {
        let layout = scan(PLAIN.as_bytes()).unwrap();
        assert_eq!(
            (layout.node_count, layout.edge_count, layout.string_count),
            (4, 3, 7)
        );
        assert_eq!((layout.max_id, layout.root_edges), (7, 1));
        assert_eq!(&PLAIN[layout.nodes_end as usize..][..1], "]");
        assert_eq!(&PLAIN[layout.edges_end as usize..][..1], "]");
        assert_eq!(&PLAIN[layout.strings_end as usize..][..2], "]}");
        assert!(PLAIN[..layout.root_edges_end as usize].ends_with("[1,1,7"));
        for buffer in 1..8 {
            assert_eq!(
                scan_with(PLAIN.as_bytes(), buffer).unwrap(),
                layout,
                "buffer {buffer}"
            );
        }
    }

    #[test]
    fn label_nodes_are_appended_with_their_edges_and_strings() {
        let labels = [
            LabelNode {
                text: "route=\"/leak\"".into(),
                targets: vec![2, 3],
            },
            LabelNode {
                text: "route=\"/churn\"".into(),
                targets: vec![],
            },
        ];
        let (json, added) = labeled(&labels);
        assert_eq!(added.nodes, 3);
        assert_eq!(added.edges, 1 + 2 + 2);
        assert_eq!(added.first_id, 8);
        assert_eq!(json["snapshot"]["node_count"], 7);
        assert_eq!(json["snapshot"]["edge_count"], 8);
        let nodes: Vec<u64> = serde_json::from_value(json["nodes"].clone()).unwrap();
        let edges: Vec<u64> = serde_json::from_value(json["edges"].clone()).unwrap();
        let strings: Vec<String> = serde_json::from_value(json["strings"].clone()).unwrap();
        // The root gained one edge, to the (heap-labels) node (ordinal 4, index 28), right after
        // its own.
        assert_eq!(&nodes[..7], &[9, 1, 1, 0, 2, 0, 0]);
        assert_eq!(&edges[..6], &[1, 1, 7, 1, 2, 28]);
        assert_eq!(
            &edges[6..12],
            &[2, 5, 14, 2, 6, 21],
            "V8's other edges unchanged"
        );
        assert_eq!(
            &nodes[28..],
            &[9, 7, 8, 0, 2, 0, 0, 8, 10, 10, 1, 2, 0, 0, 8, 12, 12, 1, 0, 0, 0]
        );
        assert_eq!(strings.len(), 7 + 6);
        assert_eq!(strings[4], "a \"quoted\" \\ string ]");
        assert_eq!(&strings[7..9], ["(heap-labels)", "sampled"]);
        assert_eq!(strings[10], "(heap-labels) route=\"/leak\"");
        assert_eq!(strings[9], "route=\"/leak\"");
        // (heap-labels) -> its labels (property edges named by the label text), then /leak's weak
        // edges to its objects (ordinals 2 and 3).
        assert_eq!(&edges[12..], &[2, 9, 35, 2, 11, 42, 6, 8, 14, 6, 8, 21]);
    }

    #[test]
    fn without_labels_only_the_holder_is_added() {
        let (json, added) = labeled(&[]);
        assert_eq!((added.nodes, added.edges, added.strings), (1, 1, 2));
        assert_eq!(json["snapshot"]["node_count"], 5);
    }

    #[test]
    fn what_is_not_a_snapshot_is_refused() {
        for (text, message) in [
            ("{}", "ends early"),
            (
                &PLAIN.replace("\"node_count\":4", "\"node_count\":5"),
                "the header says 5 nodes",
            ),
            (&PLAIN.replace(",2,6,21]", ",2,6]"), "whole number of edges"),
            (&PLAIN.replace("\"weak\"", "\"feeble\""), "no \"weak\""),
        ] {
            let err = scan(text.as_bytes()).unwrap_err().to_string();
            assert!(err.contains(message), "{err}");
        }
        let layout = scan(PLAIN.as_bytes()).unwrap();
        let bad = [LabelNode {
            text: "x".into(),
            targets: vec![4],
        }];
        let err = rewrite(PLAIN.as_bytes(), &layout, &bad, Vec::new()).unwrap_err();
        assert!(err.to_string().contains("node 4 of x"), "{err}");
    }

    #[test]
    fn edits_apply_across_buffer_boundaries() {
        // Inserting and replacing at every offset of a small input, with buffers of 1 to 4 bytes,
        // gives the same as on a string.
        let input = b"abcdefghij";
        for (at, buffer) in (0..input.len() as u64).flat_map(|at| (1..5).map(move |b| (at, b))) {
            let edits = [Edit {
                offset: at,
                remove: 2.min(input.len() as u64 - at),
                insert: b"XY".to_vec(),
            }];
            let mut out = Vec::new();
            copy_with_edits(&input[..], &mut out, &edits, buffer).unwrap();
            let mut expected = input[..at as usize].to_vec();
            expected.extend_from_slice(b"XY");
            expected.extend_from_slice(&input[(at + edits[0].remove) as usize..]);
            assert_eq!(out, expected, "at {at}, buffer {buffer}");
        }
    }
}
