//! Chrome DevTools `.heapprofile` output: the CDP `HeapProfiler.SamplingHeapProfile` object.
//!
//! ```json
//! { "head": { "callFrame": { "functionName", "scriptId": "7", "url", "lineNumber", "columnNumber" },
//!             "selfSize", "id", "children": [ ... ] },
//!   "samples": [ { "size", "nodeId", "ordinal" } ] }
//! ```
//!
//! Line and column numbers are 0-based here (V8's 1-based value minus one; -1 when unknown), as CDP
//! has them. `selfSize` and sample `size` are unsampled estimates rounded to integers, as V8's
//! inspector reports them. Labels have no place in this format; DevTools ignores extra fields, so
//! none are added.
//!
//! Trees are as deep as the profiler's stack depth (V8 records up to 1024 frames when asked):
//! [`to_string`] and [`write()`] walk the tree with an explicit stack and handle any depth (a
//! `serde_json::Value` tree would be dropped and serialized recursively, once per level).

use rustc_hash::FxHashMap;
use std::io::{self, Write};

use crate::profile::{CallFrame, Profile};

/// Estimated self size per node index, rounded, from one pass over the samples.
fn self_sizes(profile: &Profile) -> Vec<u64> {
    let index: FxHashMap<u32, usize> = profile
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id, i))
        .collect();
    let mut sizes = vec![0.0f64; profile.nodes.len()];
    let mut scaler = crate::estimate::Scaler::new(profile.sample_interval);
    for sample in &profile.samples {
        if let Some(&i) = index.get(&sample.node_id) {
            sizes[i] += scaler.objects_and_bytes(sample.size, sample.count).1;
        }
    }
    sizes.into_iter().map(|s| s.round() as u64).collect()
}

/// 1-based V8 position -> 0-based CDP position, -1 when unknown.
fn zero_based(v8: i32) -> i32 {
    if v8 > 0 {
        v8 - 1
    } else {
        -1
    }
}

fn root_frame() -> CallFrame {
    CallFrame {
        function_name: "(root)".into(),
        ..CallFrame::default()
    }
}

/// The profile as compact JSON text.
pub fn to_string(profile: &Profile) -> String {
    let mut out = Vec::with_capacity(64 + profile.nodes.len() * 128 + profile.samples.len() * 48);
    write(profile, &mut out).expect("writing JSON into memory");
    // Only JSON text (valid UTF-8) was written.
    String::from_utf8(out).expect("JSON is UTF-8")
}

/// The profile's call tree alone (the `head` of the `.heapprofile`, without the samples) as
/// compact JSON text: what a reader of the tree needs, at a fraction of the whole file's size.
pub fn head_to_string(profile: &Profile) -> String {
    let mut out = Vec::with_capacity(64 + profile.nodes.len() * 128);
    let mut w = io::BufWriter::new(&mut out);
    write_head(&mut w, profile).expect("writing JSON into memory");
    w.flush().expect("writing JSON into memory");
    drop(w);
    // Only JSON text (valid UTF-8) was written.
    String::from_utf8(out).expect("JSON is UTF-8")
}

/// Writes the profile as compact JSON text.
pub fn write<W: io::Write>(profile: &Profile, out: W) -> io::Result<()> {
    let mut out = io::BufWriter::new(out);
    let w = &mut out;
    w.write_all(b"{\"head\":")?;
    write_head(w, profile)?;
    w.write_all(b",\"samples\":[")?;
    let mut scaler = crate::estimate::Scaler::new(profile.sample_interval);
    for (k, s) in profile.samples.iter().enumerate() {
        if k > 0 {
            w.write_all(b",")?;
        }
        write!(
            w,
            "{{\"size\":{},\"nodeId\":{},\"ordinal\":{}}}",
            scaler.objects_and_bytes(s.size, s.count).1.round() as u64,
            s.node_id,
            s.sample_id
        )?;
    }
    w.write_all(b"]}")?;
    out.flush()
}

/// Writes the call tree (the root node with its children), walking it with an explicit stack so
/// that a deep tree cannot overflow the native stack.
fn write_head<W: io::Write>(w: &mut W, profile: &Profile) -> io::Result<()> {
    if profile.nodes.is_empty() {
        write_node_open(w, &root_frame(), 0, 0)?;
        w.write_all(b"]}")?;
    } else {
        let sizes = self_sizes(profile);
        let mut seen = vec![false; profile.nodes.len()];
        seen[0] = true;
        write_node_open(w, &profile.nodes[0].frame, sizes[0], profile.nodes[0].id)?;
        // (node index, next child position, children written so far)
        let mut stack: Vec<(usize, usize, usize)> = vec![(0, 0, 0)];
        while let Some(top) = stack.last_mut() {
            let (i, pos, written) = *top;
            let children = &profile.nodes[i].children;
            if pos < children.len() {
                top.1 += 1;
                let c = children[pos];
                if c >= seen.len() || std::mem::replace(&mut seen[c], true) {
                    continue;
                }
                top.2 += 1;
                if written > 0 {
                    w.write_all(b",")?;
                }
                let child = &profile.nodes[c];
                write_node_open(w, &child.frame, sizes[c], child.id)?;
                stack.push((c, 0, 0));
            } else {
                w.write_all(b"]}")?;
                stack.pop();
            }
        }
    }
    Ok(())
}

/// Writes `{"callFrame":{...},"selfSize":N,"id":N,"children":[` (closed by the caller with `]}`).
fn write_node_open<W: io::Write>(
    w: &mut W,
    frame: &CallFrame,
    self_size: u64,
    id: u32,
) -> io::Result<()> {
    w.write_all(b"{\"callFrame\":{\"functionName\":")?;
    serde_json::to_writer(&mut *w, &frame.function_name)?;
    write!(w, ",\"scriptId\":\"{}\",\"url\":", frame.script_id)?;
    serde_json::to_writer(&mut *w, &frame.url)?;
    write!(
        w,
        ",\"lineNumber\":{},\"columnNumber\":{}}},\"selfSize\":{},\"id\":{},\"children\":[",
        zero_based(frame.line_number),
        zero_based(frame.column_number),
        self_size,
        id
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate;
    use crate::profile::Sample;
    use serde_json::Value;

    fn frame(name: &str, line: i32, col: i32) -> CallFrame {
        CallFrame {
            function_name: name.into(),
            script_id: 42,
            url: "file:///a \"quoted\".js".into(),
            line_number: line,
            column_number: col,
        }
    }

    fn small() -> Profile {
        let mut p = Profile::new(1024);
        let root = p.add_node(None, 1, frame("(root)", 0, 0));
        let a = p.add_node(Some(root), 2, frame("a", 5, 1));
        p.add_node(Some(a), 3, frame("", 9, 14));
        p.add_node(Some(root), 4, frame("b", 1, 2));
        let s = |node_id, size, sample_id| Sample {
            node_id,
            size,
            count: 1,
            sample_id,
            labels: None,
        };
        p.samples = vec![s(3, 100, 11), s(3, 2048, 12), s(4, 16, 13)];
        p
    }

    #[test]
    fn shape_matches_cdp() {
        let p = small();
        let v: Value = serde_json::from_str(&to_string(&p)).unwrap();
        let head = &v["head"];
        assert_eq!(head["id"], 1);
        assert_eq!(head["selfSize"], 0);
        assert_eq!(head["callFrame"]["functionName"], "(root)");
        assert_eq!(head["callFrame"]["lineNumber"], -1);
        assert_eq!(head["children"].as_array().unwrap().len(), 2);
        let a = &head["children"][0];
        assert_eq!(a["callFrame"]["scriptId"], "42");
        assert_eq!(a["callFrame"]["lineNumber"], 4);
        assert_eq!(a["callFrame"]["columnNumber"], 0);
        let leaf = &a["children"][0];
        assert_eq!(leaf["id"], 3);
        assert_eq!(leaf["callFrame"]["functionName"], "");
        assert_eq!(leaf["callFrame"]["lineNumber"], 8);
        assert_eq!(leaf["callFrame"]["columnNumber"], 13);
        let expected = (estimate::bytes(100, 1, 1024) + estimate::bytes(2048, 1, 1024)).round();
        assert_eq!(leaf["selfSize"].as_u64().unwrap(), expected as u64);
        assert_eq!(head["children"][1]["id"], 4);

        let samples = v["samples"].as_array().unwrap();
        assert_eq!(samples.len(), 3);
        assert_eq!(samples[1]["nodeId"], 3);
        assert_eq!(samples[1]["ordinal"], 12);
        assert_eq!(
            samples[1]["size"].as_u64().unwrap(),
            estimate::bytes(2048, 1, 1024).round() as u64
        );
    }

    #[test]
    fn the_head_alone_is_the_head_of_the_whole_file() {
        for p in [small(), Profile::new(0), deep(50)] {
            let whole: Value = serde_json::from_str(&to_string(&p)).unwrap();
            let head: Value = serde_json::from_str(&head_to_string(&p)).unwrap();
            assert_eq!(head, whole["head"]);
        }
    }

    #[test]
    fn an_empty_profile_has_a_root() {
        let empty = Profile::new(0);
        let parsed: Value = serde_json::from_str(&to_string(&empty)).unwrap();
        assert_eq!(parsed["head"]["callFrame"]["functionName"], "(root)");
        assert_eq!(parsed["head"]["children"].as_array().unwrap().len(), 0);
        assert_eq!(parsed["samples"].as_array().unwrap().len(), 0);
    }

    fn deep(depth: u32) -> Profile {
        let mut p = Profile::new(512 * 1024);
        let mut parent = p.add_node(None, 1, frame("(root)", 0, 0));
        for id in 2..=depth {
            parent = p.add_node(Some(parent), id, frame("f", id as i32, 1));
        }
        p.samples.push(Sample {
            node_id: depth,
            size: 32,
            count: 1,
            sample_id: 1,
            labels: None,
        });
        p
    }

    #[test]
    fn deep_trees_do_not_recurse() {
        // Far deeper than any stack depth V8 records; a small thread stack proves the writer
        // does not recurse per level.
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let p = deep(100_000);
                let s = to_string(&p);
                assert!(s.starts_with("{\"head\":{\"callFrame\":"));
                assert_eq!(s.matches("\"children\":[").count(), 100_000);
                assert!(s.contains("\"id\":100000,\"children\":[]}"));
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
