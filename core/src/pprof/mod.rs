//! pprof output: gzip-compressed `profile.proto`, readable by `go tool pprof` and most profilers.
//!
//! Layout (the usual one for heap profiles):
//! - sample types `inuse_objects/count` and `inuse_space/bytes` (the default), preceded by
//!   `alloc_objects/count` and `alloc_space/bytes` when the profile has allocation figures (Go's
//!   four heap types, in Go's order); `period_type` `space/bytes`, `period` = the sampling interval;
//! - one [`Location`](proto::Location) per profile node (id = node index + 1) with one
//!   [`Line`](proto::Line); functions deduplicated by (name, url, line), anonymous functions named
//!   `(anonymous)` as DevTools shows them;
//! - one sample per distinct (node, label set), values = unsampled estimates rounded to integers
//!   (dead samples' groups add to the allocated values only; "other sites" has no location),
//!   locations leaf first without the `(root)` node, each label pair as a string label.

pub mod delta;
pub mod proto;

use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;
use rustc_hash::FxHashMap;

use crate::labels::LabelSet;
use crate::profile::{NodeIndex, Profile};

/// Name given to functions whose name is empty.
pub const ANONYMOUS: &str = "(anonymous)";

/// Informational fields of the pprof header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EncodeOptions {
    /// When the profile was taken (start of collection), nanoseconds since the Unix epoch; 0 = unset.
    pub time_nanos: i64,
    /// How long the profiler ran, in nanoseconds; 0 = unset.
    pub duration_nanos: i64,
    /// `alloc_space` is the default sample type when the profile has allocation figures (Go's
    /// `/debug/pprof/allocs`); otherwise `inuse_space` (Go's `/debug/pprof/heap`).
    pub alloc_space_default: bool,
}

/// The profile as gzip-compressed `profile.proto` bytes, without header times.
pub fn encode(profile: &Profile) -> Vec<u8> {
    encode_with(profile, &EncodeOptions::default())
}

/// The profile as gzip-compressed `profile.proto` bytes.
pub fn encode_with(profile: &Profile, options: &EncodeOptions) -> Vec<u8> {
    gzip(&build(profile, options).encode_to_vec())
}

/// gzip at BestSpeed, into memory.
pub(crate) fn gzip(raw: &[u8]) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::with_capacity(raw.len() / 4 + 64), Compression::fast());
    // Writing into a Vec cannot fail: the only I/O errors would come from the sink.
    gz.write_all(raw).expect("gzip into memory");
    gz.finish().expect("gzip into memory")
}

/// String table with `""` at index 0; indices are what the messages store.
struct StringTable {
    strings: Vec<String>,
    index: FxHashMap<String, i64>,
}

impl StringTable {
    fn new() -> Self {
        let mut t = StringTable {
            strings: Vec::new(),
            index: FxHashMap::default(),
        };
        t.intern("");
        t
    }

    fn intern(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.strings.len() as i64;
        self.strings.push(s.to_owned());
        self.index.insert(s.to_owned(), i);
        i
    }
}

/// Builds the uncompressed message (what [`encode_with`] serializes and gzips).
pub fn build(profile: &Profile, options: &EncodeOptions) -> proto::Profile {
    let mut strings = StringTable::new();
    let value_type = |strings: &mut StringTable, ty: &str, unit: &str| proto::ValueType {
        r#type: strings.intern(ty),
        unit: strings.intern(unit),
    };
    // Go's heap profile types; the allocated pair only when the runtime reports dead samples.
    let with_allocations = profile.allocations.is_some();
    let mut sample_type = Vec::with_capacity(4);
    if with_allocations {
        sample_type.push(value_type(&mut strings, "alloc_objects", "count"));
        sample_type.push(value_type(&mut strings, "alloc_space", "bytes"));
    }
    sample_type.push(value_type(&mut strings, "inuse_objects", "count"));
    sample_type.push(value_type(&mut strings, "inuse_space", "bytes"));
    let period_type = value_type(&mut strings, "space", "bytes");
    let default_sample_type = strings.intern(if with_allocations && options.alloc_space_default {
        "alloc_space"
    } else {
        "inuse_space"
    });

    // Functions and locations: one location per node.
    let mut functions: Vec<proto::Function> = Vec::new();
    let mut function_ids: FxHashMap<(i64, i64, i32), u64> = FxHashMap::default();
    let mut locations = Vec::with_capacity(profile.nodes.len());
    for (i, node) in profile.nodes.iter().enumerate() {
        let frame = &node.frame;
        let name = if frame.function_name.is_empty() {
            ANONYMOUS
        } else {
            &frame.function_name
        };
        let name = strings.intern(name);
        let filename = strings.intern(&frame.url);
        let function_id = *function_ids
            .entry((name, filename, frame.line_number))
            .or_insert_with(|| {
                let id = functions.len() as u64 + 1;
                functions.push(proto::Function {
                    id,
                    name,
                    system_name: name,
                    filename,
                    start_line: i64::from(frame.line_number),
                });
                id
            });
        locations.push(proto::Location {
            id: i as u64 + 1,
            mapping_id: 0,
            address: 0,
            line: vec![proto::Line {
                function_id,
                line: i64::from(frame.line_number),
                column: i64::from(frame.column_number),
            }],
            is_folded: false,
        });
    }

    // Samples: merge by (node, label set); values summed as floats, rounded once.
    #[derive(Default)]
    struct Acc {
        node: Option<usize>,
        labels: Option<usize>, // index into `label_lists`
        alloc_objects: f64,
        alloc_bytes: f64,
        objects: f64,
        bytes: f64,
    }
    let nodes = NodeIndex::new(profile);
    let mut accs: Vec<Acc> = Vec::new();
    let mut acc_index: FxHashMap<(Option<usize>, usize), usize> = FxHashMap::default();
    let mut label_lists: Vec<Vec<proto::Label>> = Vec::new();
    let mut label_list_of: FxHashMap<usize, usize> = FxHashMap::default();
    let mut slot_of = |node_id: u32, set: Option<&std::sync::Arc<LabelSet>>| {
        let node = nodes.get(node_id);
        let set_addr = set.map_or(0, |s| std::sync::Arc::as_ptr(s) as usize);
        let labels = set.map(|set| {
            *label_list_of.entry(set_addr).or_insert_with(|| {
                label_lists.push(labels_of(set, &mut strings));
                label_lists.len() - 1
            })
        });
        *acc_index.entry((node, set_addr)).or_insert_with(|| {
            accs.push(Acc {
                node,
                labels,
                ..Acc::default()
            });
            accs.len() - 1
        })
    };
    let mut slots = Vec::with_capacity(profile.samples.len());
    // Neighbouring samples mostly share their stack and labels (V8 hands them out in about
    // allocation order): the previous sample's slot spares three hash lookups.
    let mut last: Option<(u32, usize, usize)> = None;
    for sample in &profile.samples {
        let set_addr = sample
            .labels
            .as_ref()
            .map_or(0, |s| std::sync::Arc::as_ptr(s) as usize);
        let slot = match last {
            Some((node_id, addr, slot)) if node_id == sample.node_id && addr == set_addr => slot,
            _ => slot_of(sample.node_id, sample.labels.as_ref()),
        };
        last = Some((sample.node_id, set_addr, slot));
        slots.push(slot);
    }
    let dead = profile.allocations.iter().flat_map(|a| &a.dead);
    let dead_slots: Vec<usize> = dead
        .clone()
        .map(|g| slot_of(g.node_id, g.labels.as_ref()))
        .collect();
    let mut scaler = crate::estimate::Scaler::new(profile.sample_interval);
    for (sample, &slot) in profile.samples.iter().zip(&slots) {
        let (objects, bytes) = scaler.objects_and_bytes(sample.size, sample.count);
        let acc = &mut accs[slot];
        acc.objects += objects;
        acc.bytes += bytes;
        if profile.allocated_in_window(sample) {
            acc.alloc_objects += objects;
            acc.alloc_bytes += bytes;
        }
    }
    for (group, &slot) in dead.zip(&dead_slots) {
        accs[slot].alloc_objects += group.objects;
        accs[slot].alloc_bytes += group.bytes;
    }
    // Stacks of the sampled nodes, computed once per node.
    let mut stacks: Vec<Option<Vec<u64>>> = vec![None; profile.nodes.len()];
    let samples = accs
        .iter()
        .map(|acc| proto::Sample {
            location_id: acc.node.map_or_else(Vec::new, |n| {
                stacks[n]
                    .get_or_insert_with(|| location_ids(profile, n))
                    .clone()
            }),
            value: if with_allocations {
                vec![
                    acc.alloc_objects.round() as i64,
                    acc.alloc_bytes.round() as i64,
                    acc.objects.round() as i64,
                    acc.bytes.round() as i64,
                ]
            } else {
                vec![acc.objects.round() as i64, acc.bytes.round() as i64]
            },
            label: acc.labels.map_or_else(Vec::new, |l| label_lists[l].clone()),
        })
        .collect();

    proto::Profile {
        sample_type,
        sample: samples,
        mapping: Vec::new(),
        location: locations,
        function: functions,
        string_table: strings.strings,
        drop_frames: 0,
        keep_frames: 0,
        time_nanos: options.time_nanos,
        duration_nanos: options.duration_nanos,
        period_type: Some(period_type),
        period: i64::try_from(profile.sample_interval).unwrap_or(i64::MAX),
        comment: Vec::new(),
        default_sample_type,
    }
}

fn labels_of(set: &LabelSet, strings: &mut StringTable) -> Vec<proto::Label> {
    set.pairs()
        .iter()
        .map(|(k, v)| proto::Label {
            key: strings.intern(k),
            str: strings.intern(v),
            num: 0,
            num_unit: 0,
        })
        .collect()
}

/// Location ids from `node` up to (not including) the root, leaf first; a sample on the root itself
/// gets the root's location. Bounded by the number of nodes even for a malformed parent cycle.
fn location_ids(profile: &Profile, node: usize) -> Vec<u64> {
    let mut ids = vec![node as u64 + 1];
    let mut cur = profile.nodes[node].parent;
    while let Some(i) = cur {
        let parent = profile.nodes[i].parent;
        if parent.is_none() || ids.len() > profile.nodes.len() {
            break; // `i` is the root
        }
        ids.push(i as u64 + 1);
        cur = parent;
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::LabelRegistry;
    use crate::profile::GroupLabels;
    use crate::test_support::{frame_in, labels, sample, APP};
    use flate2::read::GzDecoder;
    use std::io::Read;
    use std::sync::Arc;

    fn sample_profile() -> (Profile, LabelRegistry) {
        let reg = LabelRegistry::new(10);
        let a = labels(&reg, &[("route", "/a"), ("tenant", "t1")]);
        let mut p = Profile::new(512 * 1024);
        let root = p.add_node(None, 1, frame_in("(root)", "", 0));
        let main = p.add_node(Some(root), 2, frame_in("main", APP, 10));
        let anon = p.add_node(Some(main), 3, frame_in("", APP, 20));
        // Same function (name, url, line) reached through another path: one Function, two Locations.
        let _again = p.add_node(Some(root), 4, frame_in("main", APP, 10));
        assert_eq!(anon, 2);
        let s = sample;
        p.samples = vec![
            s(3, 1 << 20, Some(&a), 1),
            s(3, 1 << 20, Some(&a), 2),
            s(3, 64, None, 3),
            s(2, 4096, Some(&a), 4),
        ];
        (p, reg)
    }

    /// The (type, unit) of each of `d`'s sample types.
    fn sample_types(d: &proto::Profile) -> Vec<(&str, &str)> {
        let st = |i: i64| d.string_table[i as usize].as_str();
        d.sample_type
            .iter()
            .map(|t| (st(t.r#type), st(t.unit)))
            .collect()
    }

    fn decode(bytes: &[u8]) -> proto::Profile {
        let mut raw = Vec::new();
        GzDecoder::new(bytes).read_to_end(&mut raw).unwrap();
        proto::Profile::decode(raw.as_slice()).unwrap()
    }

    #[test]
    fn allocation_figures_add_go_s_alloc_types_before_the_inuse_ones() {
        let (mut p, reg) = sample_profile();
        let a = p.samples[0].labels.clone().unwrap();
        let b = labels(&reg, &[("route", "/b")]);
        // Samples 1 and 2 predate the window; 3 and 4 were allocated in it. Route /b allocated
        // at node 3 and kept nothing; one dead group lost its site.
        p.allocations = Some(crate::profile::Allocations {
            dead: vec![
                crate::AllocatedGroup {
                    node_id: 3,
                    labels: Some(Arc::clone(&b)),
                    objects: 10.0,
                    bytes: 1000.0,
                },
                crate::AllocatedGroup {
                    node_id: crate::OTHER_SITES_NODE,
                    labels: Some(Arc::clone(&a)),
                    objects: 2.0,
                    bytes: 300.0,
                },
            ],
            window_start: 2,
        });
        let d = decode(&encode(&p));
        let st = |i: i64| d.string_table[i as usize].as_str();
        let types = sample_types(&d);
        assert_eq!(
            types,
            [
                ("alloc_objects", "count"),
                ("alloc_space", "bytes"),
                ("inuse_objects", "count"),
                ("inuse_space", "bytes")
            ]
        );
        assert_eq!(st(d.default_sample_type), "inuse_space");
        let allocs = build(
            &p,
            &EncodeOptions {
                alloc_space_default: true,
                ..EncodeOptions::default()
            },
        );
        assert_eq!(
            allocs.string_table[allocs.default_sample_type as usize],
            "alloc_space"
        );
        let route = |s: &proto::Sample| {
            s.label
                .iter()
                .find(|l| st(l.key) == "route")
                .map(|l| st(l.str).to_owned())
        };
        let find = |r: Option<&str>, depth: usize| {
            d.sample
                .iter()
                .find(|s| route(s).as_deref() == r && s.location_id.len() == depth)
                .unwrap_or_else(|| panic!("no sample for {r:?} at depth {depth}"))
        };
        // /b at node 3: allocated only.
        assert_eq!(find(Some("/b"), 2).value, vec![10, 1000, 0, 0]);
        // /a's other sites: no location, allocated only.
        assert_eq!(find(Some("/a"), 0).value, vec![2, 300, 0, 0]);
        // /a at node 3: two live samples from before the window: in use, not allocated.
        let big = find(Some("/a"), 2);
        assert_eq!(big.value[..2], [0, 0]);
        assert!(big.value[3] > 2 << 20);
        // Unlabeled at node 3 and /a at node 2 were allocated in the window: both pairs equal.
        for s in [find(None, 2), find(Some("/a"), 1)] {
            assert_eq!(s.value[..2], s.value[2..]);
            assert!(s.value[3] > 0);
        }
        let groups = p.by_label(Some("route"));
        let of = |v: &str| {
            groups
                .iter()
                .find(|g| matches!(&g.labels, GroupLabels::Value { value, .. } if value == v))
                .unwrap()
        };
        assert_eq!(of("/b").allocated_bytes, 1000.0);
        assert_eq!(of("/b").bytes, 0.0);
        let a_in_window = p.sample_bytes(&p.samples[3]);
        assert!((of("/a").allocated_bytes - (300.0 + a_in_window)).abs() < 1e-6);
    }

    #[test]
    fn output_is_gzip() {
        let (p, _reg) = sample_profile();
        let bytes = encode(&p);
        assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip magic");
        let mut raw = Vec::new();
        GzDecoder::new(bytes.as_slice())
            .read_to_end(&mut raw)
            .unwrap();
        assert_eq!(raw, build(&p, &EncodeOptions::default()).encode_to_vec());
    }

    #[test]
    fn roundtrip_values_locations_and_labels() {
        let (p, _reg) = sample_profile();
        let opts = EncodeOptions {
            time_nanos: 1_700_000_000_000_000_000,
            duration_nanos: 5_000_000_000,
            ..EncodeOptions::default()
        };
        let d = decode(&encode_with(&p, &opts));
        let st = |i: i64| d.string_table[i as usize].as_str();
        assert_eq!(d.string_table[0], "");
        assert_eq!(d.time_nanos, opts.time_nanos);
        assert_eq!(d.duration_nanos, opts.duration_nanos);
        assert_eq!(d.period, 512 * 1024);
        let pt = d.period_type.unwrap();
        assert_eq!((st(pt.r#type), st(pt.unit)), ("space", "bytes"));
        let types = sample_types(&d);
        assert_eq!(
            types,
            [("inuse_objects", "count"), ("inuse_space", "bytes")]
        );
        assert_eq!(st(d.default_sample_type), "inuse_space");

        assert_eq!(d.location.len(), 4);
        assert_eq!(d.function.len(), 3, "(root), main, (anonymous)");
        let fname = |loc_id: u64| {
            let loc = &d.location[loc_id as usize - 1];
            assert_eq!(loc.id, loc_id);
            let f = &d.function[loc.line[0].function_id as usize - 1];
            (st(f.name), st(f.filename), loc.line[0].line)
        };
        assert_eq!(fname(3), ("(anonymous)", "file:///app.js", 20));
        assert_eq!(fname(4).0, "main");
        assert_eq!(
            d.location[1].line[0].function_id,
            d.location[3].line[0].function_id
        );

        // Three distinct (node, labels): the two 1 MiB samples merged.
        assert_eq!(d.sample.len(), 3);
        let big = &d.sample[0];
        assert_eq!(big.location_id, [3, 2], "leaf first, root left out");
        let est = crate::estimate::bytes(1 << 20, 1, 512 * 1024);
        assert_eq!(big.value[1], (2.0 * est).round() as i64);
        let objs = crate::estimate::objects(1 << 20, 1, 512 * 1024);
        assert_eq!(big.value[0], (2.0 * objs).round() as i64);
        let labels: Vec<_> = big.label.iter().map(|l| (st(l.key), st(l.str))).collect();
        assert_eq!(labels, [("route", "/a"), ("tenant", "t1")]);

        let unlabeled = &d.sample[1];
        assert!(unlabeled.label.is_empty());
        // 64 bytes at 512 KiB: 1/(1-exp(-1/8192)) = 8192 + 1/2 + 1/(12*8192) objects -> 8193.
        assert_eq!(unlabeled.value[0], 8193);
        assert!((unlabeled.value[1] - 512 * 1024).abs() <= 64);

        let on_main = &d.sample[2];
        assert_eq!(on_main.location_id, [2]);
        let total: i64 = d.sample.iter().map(|s| s.value[1]).sum();
        assert!((total as f64 - p.estimated_bytes()).abs() < 2.0);
    }

    #[test]
    fn empty_profile_encodes() {
        let d = decode(&encode(&Profile::new(0)));
        assert!(d.sample.is_empty() && d.location.is_empty());
        assert_eq!(d.string_table[0], "");
        assert_eq!(d.sample_type.len(), 2);
    }
}
