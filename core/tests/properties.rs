//! Property tests (proptest) of the label interning and the encoders, over generated label sets
//! and profiles: what holds for any input, not only the examples of the unit tests. Each property
//! runs a bounded number of cases (PROPTEST_CASES overrides it), so the suite stays fast.
//!
//! - interning: a set is one `Arc` whatever the order of its pairs; different sets are different
//!   sets with different ids; invalid pairs are errors, never panics.
//! - pprof: any profile encodes to a gzip'd profile.proto that decodes, whose samples point at
//!   existing locations and functions, carry exactly their set's pairs as string labels, and add up
//!   to the profile's estimate (each merged sample rounds once).
//! - DevTools JSON and the summary: any function name, URL, key or value gives valid JSON, and a
//!   summary without control characters.

use std::io::Read;
use std::sync::Arc;

use flate2::read::GzDecoder;
use heap_labels_core::pprof::{self, proto};
use heap_labels_core::profile::{CallFrame, Profile, Sample};
use heap_labels_core::{heapprofile, summary, LabelRegistry, MAX_KEY_BYTES, MAX_LABELS};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use prost::Message;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 128,
        max_shrink_iters: 2000,
        ..ProptestConfig::default()
    }
}

/// Text that exercises escaping and UTF-8: ASCII, quotes, backslashes, controls, ESC, C1, bidi,
/// multi-byte characters.
fn text(max: usize) -> impl Strategy<Value = String> {
    vec(
        prop_oneof![
            4 => proptest::char::range('a', 'z'),
            1 => Just('"'),
            1 => Just('\\'),
            1 => Just('\n'),
            1 => Just('\u{1b}'),
            1 => Just('\u{9b}'),
            1 => Just('\u{202e}'),
            1 => Just('é'),
            1 => Just('🦀'),
            1 => Just(','),
            1 => Just('='),
        ],
        0..max,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

fn key() -> impl Strategy<Value = String> {
    text(12).prop_filter("non-empty, not reserved", |k| {
        !k.is_empty() && !k.starts_with("heap_labels.") && k.len() <= MAX_KEY_BYTES
    })
}

/// A valid label set: 1..8 pairs with distinct keys.
fn label_set() -> impl Strategy<Value = Vec<(String, String)>> {
    btree_map(key(), text(16), 1..8).prop_map(|m| m.into_iter().collect())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_set_interns_to_one_arc_whatever_the_order(pairs in label_set(), rotate in 0usize..8) {
        let reg = LabelRegistry::new(1000);
        let a = reg.intern(pairs.clone()).unwrap();
        let mut shuffled = pairs.clone();
        shuffled.reverse();
        let n = shuffled.len();
        shuffled.rotate_left(rotate % n);
        let b = reg.intern(shuffled).unwrap();
        prop_assert!(Arc::ptr_eq(&a, &b));
        let mut sorted = pairs.clone();
        sorted.sort();
        let got: Vec<(String, String)> = a.pairs().iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        prop_assert_eq!(got, sorted);
    }

    #[test]
    fn different_sets_are_different_sets(x in label_set(), y in label_set()) {
        let reg = LabelRegistry::new(1000);
        let a = reg.intern(x.clone()).unwrap();
        let b = reg.intern(y.clone()).unwrap();
        let (mut sx, mut sy) = (x, y);
        sx.sort();
        sy.sort();
        prop_assert_eq!(sx == sy, Arc::ptr_eq(&a, &b));
        prop_assert_eq!(sx == sy, a.id() == b.id());
    }

}

proptest! {
    // Fewer cases: each holds up to 40 pairs of long text.
    #![proptest_config(ProptestConfig { cases: 32, ..config() })]

    #[test]
    fn invalid_pairs_are_errors_not_panics(
        pairs in vec(
            (
                prop_oneof![9 => text(8), 1 => text(140)],
                prop_oneof![9 => text(8), 1 => text(1030)],
            ),
            0..40,
        ),
        dup in any::<bool>(),
    ) {
        let reg = LabelRegistry::new(10);
        let mut pairs = pairs;
        if dup && !pairs.is_empty() {
            pairs.push(pairs[0].clone());
        }
        let valid = !pairs.is_empty()
            && pairs.len() <= MAX_LABELS
            && pairs.iter().all(|(k, v)| !k.is_empty() && k.len() <= MAX_KEY_BYTES && v.len() <= 1024 && !k.starts_with("heap_labels."))
            && {
                let mut keys: Vec<_> = pairs.iter().map(|(k, _)| k).collect();
                keys.sort();
                keys.windows(2).all(|w| w[0] != w[1])
            };
        let r = reg.intern(pairs);
        if valid {
            prop_assert!(r.is_ok(), "{:?}", r.err());
        }
    }
}

/// A generated profile: a call tree of up to 24 nodes and up to 200 live samples on them, each
/// unlabeled or under one of a few label sets.
#[derive(Debug, Clone)]
struct Plan {
    parents: Vec<usize>,
    names: Vec<(String, String)>,
    samples: Vec<(usize, u64, u32, Option<usize>)>,
    sets: Vec<Vec<(String, String)>>,
    interval: u64,
}

fn plan() -> impl Strategy<Value = Plan> {
    (1usize..16, vec(label_set(), 0..4), 1u64..(1 << 20)).prop_flat_map(|(n, sets, interval)| {
        let parents = (1..n).map(|i| 0..i).collect::<Vec<_>>();
        let set_count = sets.len();
        (
            parents,
            vec((text(10), text(10)), n),
            vec(
                (
                    0..n,
                    1u64..(1 << 22),
                    1u32..4,
                    proptest::option::of(0..set_count.max(1)),
                ),
                0..100,
            ),
            Just(sets),
            Just(interval),
        )
            .prop_map(|(parents, names, samples, sets, interval)| Plan {
                parents,
                names,
                samples,
                sets,
                interval,
            })
    })
}

/// The plan's profile (nodes in pre-order, as V8 gives them) and the registry holding its sets.
fn build(plan: &Plan) -> (Profile, LabelRegistry) {
    let n = plan.names.len();
    let mut children = vec![Vec::new(); n];
    for (i, &p) in plan.parents.iter().enumerate() {
        children[p].push(i + 1);
    }
    let mut profile = Profile::new(plan.interval);
    let mut stack = vec![(0usize, None)];
    while let Some((node, parent)) = stack.pop() {
        let (name, url) = &plan.names[node];
        let frame = CallFrame {
            function_name: name.clone(),
            url: url.clone(),
            line_number: node as i32,
            ..CallFrame::default()
        };
        let index = profile.add_node(parent, node as u32 + 1, frame);
        for &c in children[node].iter().rev() {
            stack.push((c, Some(index)));
        }
    }
    let reg = LabelRegistry::new(1000);
    let sets: Vec<_> = plan
        .sets
        .iter()
        .map(|s| reg.intern(s.clone()).unwrap())
        .collect();
    for (i, &(node, size, count, set)) in plan.samples.iter().enumerate() {
        profile.samples.push(Sample {
            node_id: node as u32 + 1,
            size,
            count,
            sample_id: i as u64,
            labels: set.and_then(|s| sets.get(s)).cloned(),
        });
    }
    (profile, reg)
}

fn decode(gz: &[u8]) -> proto::Profile {
    let mut raw = Vec::new();
    GzDecoder::new(gz).read_to_end(&mut raw).unwrap();
    proto::Profile::decode(raw.as_slice()).unwrap()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn pprof_decodes_with_consistent_references_labels_and_totals(plan in plan()) {
        let (profile, _reg) = build(&plan);
        let d = decode(&pprof::encode(&profile));
        prop_assert_eq!(d.string_table.first().map(String::as_str), Some(""));
        let st = |i: i64| d.string_table.get(i as usize).map(String::as_str);
        let locations: std::collections::HashMap<u64, &proto::Location> = d.location.iter().map(|l| (l.id, l)).collect();
        let functions: std::collections::HashSet<u64> = d.function.iter().map(|f| f.id).collect();
        for f in &d.function {
            prop_assert!(st(f.name).is_some() && st(f.filename).is_some());
        }
        let mut label_sets: Vec<Vec<(String, String)>> = plan.sets.iter().map(|s| { let mut s = s.clone(); s.sort(); s }).collect();
        label_sets.push(Vec::new());
        let space = d.sample_type.iter().position(|t| st(t.r#type) == Some("inuse_space")).unwrap();
        let mut total = 0i64;
        for s in &d.sample {
            for id in &s.location_id {
                let loc = locations.get(id);
                prop_assert!(loc.is_some(), "location {} missing", id);
                for line in &loc.unwrap().line {
                    prop_assert!(functions.contains(&line.function_id));
                }
            }
            let mut pairs: Vec<(String, String)> = s.label.iter().map(|l| (st(l.key).unwrap().to_owned(), st(l.str).unwrap().to_owned())).collect();
            pairs.sort();
            prop_assert!(label_sets.contains(&pairs), "labels {:?} are no set's", pairs);
            total += s.value[space];
        }
        let expected = profile.estimated_bytes();
        prop_assert!((total as f64 - expected).abs() <= d.sample.len() as f64 * 0.5 + 1e-6 * expected, "{} vs {}", total, expected);
    }

    #[test]
    fn devtools_json_and_summary_take_any_text(plan in plan()) {
        let (profile, _reg) = build(&plan);
        let json: serde_json::Value = serde_json::from_str(&heapprofile::to_string(&profile)).unwrap();
        prop_assert!(json.get("head").is_some());
        let text = summary::render(&profile, &summary::SummaryInfo { reason: "proptest", pid: 1, time_nanos: 0, labeled: true });
        for line in text.lines() {
            prop_assert!(!line.chars().any(|c| c.is_control() || c == '\u{202e}'), "{:?}", line);
        }
    }
}
