//! The difference of two pprof profiles of one session: what `?seconds=N` of the agent's endpoint
//! serves, as Go's net/http/pprof does (a profile at the start, one after N seconds, the first
//! subtracted from the second with pprof's merge rules).
//!
//! Samples are matched by what `go tool pprof -base` matches them by: the stack as its frames'
//! contents (function name, file, start line, line, column; not location or function ids, which
//! each profile numbers its own way) and the labels as (key, value, number, unit), order aside.
//! Values subtract type by type; samples that come out all zero are left out. A sample of the
//! base alone (a site whose figures went from the bucket of an unrouted request to its route)
//! comes out negative, as in Go.

use std::io::Read;

use flate2::read::GzDecoder;
use prost::Message;
use rustc_hash::FxHashMap;

use super::proto;

/// The most a gzip'd profile may inflate to (a profile of the largest session is far smaller).
pub const MAX_INFLATED_BYTES: u64 = 512 << 20;

/// Why two profiles cannot be subtracted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DeltaError {
    #[error("the {which} profile is not a gzip'd pprof profile: {reason}")]
    Malformed { which: &'static str, reason: String },
    #[error("the {which} profile inflates to more than {MAX_INFLATED_BYTES} bytes")]
    TooLarge { which: &'static str },
    #[error("the profiles have different sample types ({base} and {current})")]
    SampleTypes { base: String, current: String },
}

/// `current - base`, both gzip'd `profile.proto` (as [`super::encode_with`] makes them), as a
/// gzip'd profile with `current`'s header, its `duration_nanos` the time between the two.
pub fn delta(base: &[u8], current: &[u8]) -> Result<Vec<u8>, DeltaError> {
    let base = decode(base, "first")?;
    let mut out = decode(current, "second")?;
    let (base_types, out_types) = (types_text(&base), types_text(&out));
    if base_types != out_types
        || base.period_type.map(|t| text_of_type(&base, t))
            != out.period_type.map(|t| text_of_type(&out, t))
    {
        return Err(DeltaError::SampleTypes {
            base: base_types,
            current: out_types,
        });
    }
    let mut tables = Tables::of(&out);
    let mut index: FxHashMap<SampleKey, usize> = FxHashMap::default();
    {
        let ids = Ids::of(&out);
        for (i, sample) in out.sample.iter().enumerate() {
            index.entry(sample_key(&out, &ids, sample)).or_insert(i);
        }
    }
    let base_ids = Ids::of(&base);
    for sample in &base.sample {
        let key = sample_key(&base, &base_ids, sample);
        let i = match index.get(&key) {
            Some(&i) => i,
            None => {
                let imported = tables.import_sample(&base, &base_ids, sample, &mut out);
                out.sample.push(imported);
                index.insert(key, out.sample.len() - 1);
                out.sample.len() - 1
            }
        };
        let values = &mut out.sample[i].value;
        for (v, b) in values.iter_mut().zip(&sample.value) {
            *v = v.saturating_sub(*b);
        }
    }
    out.sample.retain(|s| s.value.iter().any(|&v| v != 0));
    if base.time_nanos != 0 && out.time_nanos != 0 {
        out.duration_nanos = out.time_nanos.saturating_sub(base.time_nanos);
    }
    Ok(super::gzip(&out.encode_to_vec()))
}

fn decode(gz: &[u8], which: &'static str) -> Result<proto::Profile, DeltaError> {
    let mut raw = Vec::new();
    let read = GzDecoder::new(gz)
        .take(MAX_INFLATED_BYTES + 1)
        .read_to_end(&mut raw);
    read.map_err(|e| DeltaError::Malformed {
        which,
        reason: e.to_string(),
    })?;
    if raw.len() as u64 > MAX_INFLATED_BYTES {
        return Err(DeltaError::TooLarge { which });
    }
    let profile = proto::Profile::decode(raw.as_slice()).map_err(|e| DeltaError::Malformed {
        which,
        reason: e.to_string(),
    })?;
    if profile.string_table.first().is_none_or(|s| !s.is_empty()) {
        return Err(DeltaError::Malformed {
            which,
            reason: "its string table does not start with \"\"".into(),
        });
    }
    Ok(profile)
}

fn string(p: &proto::Profile, i: i64) -> &str {
    usize::try_from(i)
        .ok()
        .and_then(|i| p.string_table.get(i))
        .map_or("", String::as_str)
}

fn text_of_type(p: &proto::Profile, t: proto::ValueType) -> String {
    format!("{}/{}", string(p, t.r#type), string(p, t.unit))
}

fn types_text(p: &proto::Profile) -> String {
    p.sample_type
        .iter()
        .map(|&t| text_of_type(p, t))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One frame by content: function name, system name, file, start line, line, column.
type LineKey = (String, String, String, i64, i64, i64);

/// A sample by content: its stack (leaf first, each location as its frames plus address) and its
/// labels, sorted.
#[derive(Debug, PartialEq, Eq, Hash)]
struct SampleKey {
    stack: Vec<(u64, Vec<LineKey>)>,
    labels: Vec<(String, String, i64, String)>,
}

/// A profile's functions and locations by id.
struct Ids<'a> {
    functions: FxHashMap<u64, &'a proto::Function>,
    locations: FxHashMap<u64, &'a proto::Location>,
}

impl<'a> Ids<'a> {
    fn of(p: &'a proto::Profile) -> Self {
        Ids {
            functions: p.function.iter().map(|f| (f.id, f)).collect(),
            locations: p.location.iter().map(|l| (l.id, l)).collect(),
        }
    }
}

fn line_key(p: &proto::Profile, ids: &Ids, line: &proto::Line) -> LineKey {
    let f = ids.functions.get(&line.function_id);
    (
        f.map_or("", |f| string(p, f.name)).to_owned(),
        f.map_or("", |f| string(p, f.system_name)).to_owned(),
        f.map_or("", |f| string(p, f.filename)).to_owned(),
        f.map_or(0, |f| f.start_line),
        line.line,
        line.column,
    )
}

fn sample_key(p: &proto::Profile, ids: &Ids, sample: &proto::Sample) -> SampleKey {
    let stack = sample
        .location_id
        .iter()
        .map(|id| {
            ids.locations.get(id).map_or((0, Vec::new()), |l| {
                (
                    l.address,
                    l.line.iter().map(|line| line_key(p, ids, line)).collect(),
                )
            })
        })
        .collect();
    let mut labels: Vec<_> = sample
        .label
        .iter()
        .map(|l| {
            (
                string(p, l.key).to_owned(),
                string(p, l.str).to_owned(),
                l.num,
                string(p, l.num_unit).to_owned(),
            )
        })
        .collect();
    labels.sort();
    SampleKey { stack, labels }
}

/// A location by content in the output's tables: address and (function id, line, column) per frame.
type LocationKey = (u64, Vec<(u64, i64, i64)>);

/// The output's string, function and location tables, to add a sample of the base to it.
struct Tables {
    strings: FxHashMap<String, i64>,
    functions: FxHashMap<(i64, i64, i64, i64), u64>,
    locations: FxHashMap<LocationKey, u64>,
    next_function: u64,
    next_location: u64,
}

impl Tables {
    fn of(out: &proto::Profile) -> Self {
        let strings = out
            .string_table
            .iter()
            .enumerate()
            .map(|(i, s)| (s.clone(), i as i64))
            .collect();
        let functions = out
            .function
            .iter()
            .map(|f| ((f.name, f.system_name, f.filename, f.start_line), f.id))
            .collect();
        let locations = out
            .location
            .iter()
            .filter(|l| l.mapping_id == 0)
            .map(|l| {
                let lines = l
                    .line
                    .iter()
                    .map(|x| (x.function_id, x.line, x.column))
                    .collect();
                ((l.address, lines), l.id)
            })
            .collect();
        Tables {
            strings,
            functions,
            locations,
            next_function: out.function.iter().map(|f| f.id).max().unwrap_or(0) + 1,
            next_location: out.location.iter().map(|l| l.id).max().unwrap_or(0) + 1,
        }
    }

    fn string(&mut self, from: &proto::Profile, i: i64, out: &mut proto::Profile) -> i64 {
        let s = string(from, i);
        if let Some(&j) = self.strings.get(s) {
            return j;
        }
        let j = out.string_table.len() as i64;
        out.string_table.push(s.to_owned());
        self.strings.insert(s.to_owned(), j);
        j
    }

    fn function(
        &mut self,
        from: &proto::Profile,
        ids: &Ids,
        id: u64,
        out: &mut proto::Profile,
    ) -> u64 {
        let Some(&&f) = ids.functions.get(&id) else {
            return 0;
        };
        let key = (
            self.string(from, f.name, out),
            self.string(from, f.system_name, out),
            self.string(from, f.filename, out),
            f.start_line,
        );
        if let Some(&id) = self.functions.get(&key) {
            return id;
        }
        let id = self.next_function;
        self.next_function += 1;
        out.function.push(proto::Function {
            id,
            name: key.0,
            system_name: key.1,
            filename: key.2,
            start_line: key.3,
        });
        self.functions.insert(key, id);
        id
    }

    fn location(
        &mut self,
        from: &proto::Profile,
        ids: &Ids,
        id: u64,
        out: &mut proto::Profile,
    ) -> u64 {
        let Some(&l) = ids.locations.get(&id) else {
            return 0;
        };
        let lines: Vec<proto::Line> = l
            .line
            .iter()
            .map(|x| proto::Line {
                function_id: self.function(from, ids, x.function_id, out),
                line: x.line,
                column: x.column,
            })
            .collect();
        let key = (
            l.address,
            lines
                .iter()
                .map(|x| (x.function_id, x.line, x.column))
                .collect(),
        );
        if let Some(&id) = self.locations.get(&key) {
            return id;
        }
        let id = self.next_location;
        self.next_location += 1;
        out.location.push(proto::Location {
            id,
            mapping_id: 0,
            address: l.address,
            line: lines,
            is_folded: l.is_folded,
        });
        self.locations.insert(key, id);
        id
    }

    /// `sample` of `from` with its stack and labels in `out`'s tables, values zero (the caller
    /// subtracts).
    fn import_sample(
        &mut self,
        from: &proto::Profile,
        ids: &Ids,
        sample: &proto::Sample,
        out: &mut proto::Profile,
    ) -> proto::Sample {
        proto::Sample {
            location_id: sample
                .location_id
                .iter()
                .map(|&id| self.location(from, ids, id, out))
                .collect(),
            value: vec![0; sample.value.len()],
            label: sample
                .label
                .iter()
                .map(|l| proto::Label {
                    key: self.string(from, l.key, out),
                    str: self.string(from, l.str, out),
                    num: l.num,
                    num_unit: self.string(from, l.num_unit, out),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocations::AllocatedGroup;
    use crate::labels::LabelRegistry;
    use crate::profile::{Allocations, Profile};
    use crate::test_support::{frame, labels, sample};

    /// A profile with allocation figures: `dead` bytes dead at `leaf` under `route`, and one live
    /// 100-byte sample under `/a` at `main`. `extra` adds a node first (other node ids and
    /// location ids, same frames).
    fn profile(reg: &LabelRegistry, dead: &[(&str, &str, f64)], extra: bool) -> Vec<u8> {
        let mut p = Profile::new(0);
        let root = p.add_node(None, 1, frame("(root)", 0));
        if extra {
            p.add_node(Some(root), 9, frame("other", 99));
        }
        let main = p.add_node(Some(root), 2, frame("main", 1));
        p.add_node(Some(main), 3, frame("leaf", 2));
        p.add_node(Some(main), 4, frame("gone", 3));
        let a = labels(reg, &[("route", "/a")]);
        p.samples.push(sample(2, 100, Some(&a), 1));
        let leaf = |name: &str| if name == "leaf" { 3 } else { 4 };
        p.allocations = Some(Allocations {
            dead: dead
                .iter()
                .map(|&(site, route, bytes)| AllocatedGroup {
                    node_id: leaf(site),
                    labels: Some(reg.intern(vec![("route".into(), route.into())]).unwrap()),
                    objects: 1.0,
                    bytes,
                })
                .collect(),
            window_start: 0,
        });
        super::super::encode(&p)
    }

    fn values(gz: &[u8]) -> Vec<(String, String, Vec<i64>)> {
        let p = decode(gz, "test").unwrap();
        let mut out: Vec<_> = p
            .sample
            .iter()
            .map(|s| {
                let key = sample_key(&p, &Ids::of(&p), s);
                let leaf = key
                    .stack
                    .first()
                    .map_or(String::new(), |(_, lines)| lines[0].0.clone());
                let route = key.labels.first().map_or(String::new(), |l| l.1.clone());
                (leaf, route, s.value.clone())
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn subtracts_by_stack_and_labels_whatever_the_ids() {
        let reg = LabelRegistry::new(16);
        let base = profile(&reg, &[("leaf", "/a", 1000.0), ("gone", "/b", 50.0)], false);
        let current = profile(&reg, &[("leaf", "/a", 1500.0)], true);
        let d = values(&delta(&base, &current).unwrap());
        assert_eq!(
            d,
            vec![
                ("gone".into(), "/b".into(), vec![-1, -50, 0, 0]),
                ("leaf".into(), "/a".into(), vec![0, 500, 0, 0]),
            ],
            "the live sample at main cancels out; a base-only sample comes out negative"
        );
    }

    #[test]
    fn refuses_profiles_of_other_types_and_non_profiles() {
        let reg = LabelRegistry::new(16);
        let with = profile(&reg, &[("leaf", "/a", 1.0)], false);
        let mut p = Profile::new(0);
        p.add_node(None, 1, frame("(root)", 0));
        let without = super::super::encode(&p);
        assert!(matches!(
            delta(&with, &without),
            Err(DeltaError::SampleTypes { .. })
        ));
        assert!(matches!(
            delta(b"not gzip", &with),
            Err(DeltaError::Malformed { which: "first", .. })
        ));
    }
}
