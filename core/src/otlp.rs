//! OpenTelemetry profiles output: a `ProfilesData` message of opentelemetry-proto's profiles
//! `v1development` package (opentelemetry-proto v1.10.0, through the `opentelemetry-proto`
//! crate's code generated from the official `.proto` files).
//!
//! The OTLP profile is a translation of the pprof one ([`crate::pprof::build`]), so both carry the
//! same samples, values and labels (one owner of the per-site aggregation):
//! - one shared [`ProfilesDictionary`]: strings, functions, locations (each tagged with the
//!   `profile.frame.type` attribute when the caller names one, `v8js` for ours), stacks (leaf
//!   first) and attributes; every table starts with its zero entry, as the spec requires;
//! - one [`Profile`] per pprof sample type (OTLP profiles have a single sample type each), all in
//!   one `ScopeProfiles`: pprof's default type first (tools show `profiles[0]` by default), then
//!   the others in pprof's order; each with pprof's `period_type`, `period`, time and duration;
//! - one [`Sample`] per pprof sample whose value of that type is not zero, with `values: [v]`;
//!   each pprof label becomes a sample attribute keyed by the label's key (string labels as
//!   string values, numeric ones as ints with their unit);
//! - the resource carries the caller's attributes (`service.name`, `process.*`), the scope names
//!   heap-labels.
//!
//! Any pprof input is accepted ([`from_pprof_bytes`], for files); references to missing
//! functions, locations, mappings or strings are errors, never panics.

use std::io::Read;

use flate2::read::GzDecoder;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::profiles::v1development::{
    Function, KeyValueAndUnit, Line, Link, Location, Mapping, Profile, ProfilesData,
    ProfilesDictionary, ResourceProfiles, Sample, ScopeProfiles, Stack, ValueType,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;
use rustc_hash::FxHashMap;

use crate::pprof::{self, proto as pp};

/// The semantic-conventions attribute that says which runtime a frame belongs to.
pub const FRAME_TYPE_KEY: &str = "profile.frame.type";
/// Its value for JavaScript frames run by V8.
pub const FRAME_TYPE_V8JS: &str = "v8js";
/// Largest decompressed pprof accepted by [`from_pprof_bytes`] (a file is read whole into memory).
pub const MAX_PPROF_BYTES: u64 = 512 * 1024 * 1024;

/// Why a pprof profile could not be translated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OtlpError {
    #[error("not a pprof profile: {0}")]
    NotPprof(String),
    #[error("the pprof profile is larger than {MAX_PPROF_BYTES} bytes uncompressed")]
    TooLarge,
    #[error("the pprof profile refers to {what} {id}, which it does not define")]
    Dangling { what: &'static str, id: i64 },
    #[error("the profile has more {0} than an OTLP dictionary can index")]
    TableFull(&'static str),
}

/// A resource attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    String(String),
    Int(i64),
}

/// What the translation adds to the profile: who sent it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OtlpOptions {
    /// Resource attributes, in order (`service.name`, `process.pid`, ...).
    pub resource: Vec<(String, AttributeValue)>,
    /// Instrumentation scope (`heap-labels` and its version).
    pub scope_name: String,
    pub scope_version: String,
    /// `profile.frame.type` of every location, when known.
    pub frame_type: Option<String>,
}

/// The profile as an uncompressed, protobuf-encoded `ProfilesData` message (the same bytes are a
/// valid `ExportProfilesServiceRequest`: its fields have the same numbers and types).
pub fn encode(
    profile: &crate::Profile,
    pprof_options: &pprof::EncodeOptions,
    options: &OtlpOptions,
) -> Result<Vec<u8>, OtlpError> {
    Ok(from_pprof(&pprof::build(profile, pprof_options), options)?.encode_to_vec())
}

/// gzip-compressed bytes (an OTLP/HTTP body sent with `Content-Encoding: gzip`).
pub fn gzip(raw: &[u8]) -> Vec<u8> {
    pprof::gzip(raw)
}

/// A pprof file's bytes (gzip-compressed or not) as an encoded `ProfilesData` message.
pub fn from_pprof_bytes(bytes: &[u8], options: &OtlpOptions) -> Result<Vec<u8>, OtlpError> {
    let raw;
    let message = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        GzDecoder::new(bytes)
            .take(MAX_PPROF_BYTES + 1)
            .read_to_end(&mut out)
            .map_err(|e| OtlpError::NotPprof(format!("gzip: {e}")))?;
        if out.len() as u64 > MAX_PPROF_BYTES {
            return Err(OtlpError::TooLarge);
        }
        raw = out;
        raw.as_slice()
    } else {
        bytes
    };
    let profile = pp::Profile::decode(message).map_err(|e| OtlpError::NotPprof(e.to_string()))?;
    Ok(from_pprof(&profile, options)?.encode_to_vec())
}

/// Translates a pprof message (see the module comment).
pub fn from_pprof(p: &pp::Profile, options: &OtlpOptions) -> Result<ProfilesData, OtlpError> {
    let string = |i: i64| -> Result<&str, OtlpError> {
        usize::try_from(i)
            .ok()
            .and_then(|i| p.string_table.get(i))
            .map(String::as_str)
            .ok_or(OtlpError::Dangling {
                what: "string",
                id: i,
            })
    };
    let mut dict = Dictionary::new();

    let mut mappings = FxHashMap::default();
    for m in &p.mapping {
        let filename_strindex = dict.string(string(m.filename)?)?;
        let index = dict.push_mapping(Mapping {
            memory_start: m.memory_start,
            memory_limit: m.memory_limit,
            file_offset: m.file_offset,
            filename_strindex,
            attribute_indices: Vec::new(),
        })?;
        mappings.insert(m.id, index);
    }
    let mut functions = FxHashMap::default();
    for f in &p.function {
        let function = Function {
            name_strindex: dict.string(string(f.name)?)?,
            system_name_strindex: dict.string(string(f.system_name)?)?,
            filename_strindex: dict.string(string(f.filename)?)?,
            start_line: f.start_line,
        };
        functions.insert(f.id, dict.push_function(function)?);
    }
    let frame_type = match &options.frame_type {
        Some(t) => vec![dict.attribute(FRAME_TYPE_KEY, Value::String(t.clone()), "")?],
        None => Vec::new(),
    };
    let mut locations = FxHashMap::default();
    for l in &p.location {
        let mapping_index = match l.mapping_id {
            0 => 0,
            id => *mappings.get(&id).ok_or(OtlpError::Dangling {
                what: "mapping",
                id: id as i64,
            })?,
        };
        let lines = l
            .line
            .iter()
            .map(|line| {
                Ok(Line {
                    function_index: *functions.get(&line.function_id).ok_or(
                        OtlpError::Dangling {
                            what: "function",
                            id: line.function_id as i64,
                        },
                    )?,
                    line: line.line,
                    column: line.column,
                })
            })
            .collect::<Result<Vec<_>, OtlpError>>()?;
        let location = Location {
            mapping_index,
            address: l.address,
            lines,
            attribute_indices: frame_type.clone(),
        };
        locations.insert(l.id, dict.push_location(location)?);
    }

    // Each pprof sample's identity (stack, attributes), shared by the profiles of every type.
    let mut identities = Vec::with_capacity(p.sample.len());
    for s in &p.sample {
        let stack = s
            .location_id
            .iter()
            .map(|id| {
                locations.get(id).copied().ok_or(OtlpError::Dangling {
                    what: "location",
                    id: *id as i64,
                })
            })
            .collect::<Result<Vec<i32>, OtlpError>>()?;
        let stack_index = dict.stack(stack)?;
        let mut attributes = Vec::with_capacity(s.label.len());
        let mut keys = Vec::with_capacity(s.label.len());
        for label in &s.label {
            let key = string(label.key)?;
            // OTLP wants one value per key on a sample; pprof allows several: the first stays.
            if keys.contains(&key) {
                continue;
            }
            keys.push(key);
            // heap-labels writes an empty value as string index 0 (pprof has no other way).
            let (value, unit) = if label.str != 0 || (label.num == 0 && label.num_unit == 0) {
                (Value::String(string(label.str)?.to_owned()), "")
            } else {
                (Value::Int(label.num), string(label.num_unit)?)
            };
            attributes.push(dict.attribute(key, value, unit)?);
        }
        identities.push((stack_index, attributes));
    }

    let value_type = |dict: &mut Dictionary, vt: &pp::ValueType| -> Result<ValueType, OtlpError> {
        Ok(ValueType {
            type_strindex: dict.string(string(vt.r#type)?)?,
            unit_strindex: dict.string(string(vt.unit)?)?,
        })
    };
    let period_type = p
        .period_type
        .as_ref()
        .map(|vt| value_type(&mut dict, vt))
        .transpose()?;
    let mut profiles = Vec::with_capacity(p.sample_type.len());
    for t in type_order(p, string)? {
        let samples = p
            .sample
            .iter()
            .zip(&identities)
            .filter_map(|(s, (stack_index, attributes))| {
                let value = s.value.get(t).copied().unwrap_or(0);
                (value != 0).then(|| Sample {
                    stack_index: *stack_index,
                    attribute_indices: attributes.clone(),
                    link_index: 0,
                    values: vec![value],
                    timestamps_unix_nano: Vec::new(),
                })
            })
            .collect();
        profiles.push(Profile {
            sample_type: Some(value_type(&mut dict, &p.sample_type[t])?),
            samples,
            time_unix_nano: u64::try_from(p.time_nanos).unwrap_or(0),
            duration_nano: u64::try_from(p.duration_nanos).unwrap_or(0),
            period_type,
            period: p.period,
            profile_id: Vec::new(),
            dropped_attributes_count: 0,
            original_payload_format: String::new(),
            original_payload: Vec::new(),
            attribute_indices: Vec::new(),
        });
    }

    let resource = Resource {
        attributes: options
            .resource
            .iter()
            .map(|(key, value)| KeyValue {
                key: key.clone(),
                value: Some(any_value(value.clone())),
                key_strindex: 0,
            })
            .collect(),
        dropped_attributes_count: 0,
        entity_refs: Vec::new(),
    };
    let scope = InstrumentationScope {
        name: options.scope_name.clone(),
        version: options.scope_version.clone(),
        attributes: Vec::new(),
        dropped_attributes_count: 0,
    };
    Ok(ProfilesData {
        resource_profiles: vec![ResourceProfiles {
            resource: Some(resource),
            scope_profiles: vec![ScopeProfiles {
                scope: Some(scope),
                profiles,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
        dictionary: Some(dict.tables),
    })
}

/// Indices of the pprof sample types, the default one first (pprof's `default_sample_type`, or
/// its last type when unset, as `go tool pprof` picks it), the others in their order.
fn type_order<'a>(
    p: &'a pp::Profile,
    string: impl Fn(i64) -> Result<&'a str, OtlpError>,
) -> Result<Vec<usize>, OtlpError> {
    let n = p.sample_type.len();
    let mut default = n.checked_sub(1);
    if p.default_sample_type != 0 {
        let name = string(p.default_sample_type)?;
        for (i, vt) in p.sample_type.iter().enumerate() {
            if string(vt.r#type)? == name {
                default = Some(i);
            }
        }
    }
    Ok(default
        .into_iter()
        .chain((0..n).filter(|&i| Some(i) != default))
        .collect())
}

/// A sample attribute's value, as the dictionary deduplicates it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Value {
    String(String),
    Int(i64),
}

fn any_value(value: AttributeValue) -> AnyValue {
    AnyValue {
        value: Some(match value {
            AttributeValue::String(s) => any_value::Value::StringValue(s),
            AttributeValue::Int(i) => any_value::Value::IntValue(i),
        }),
    }
}

/// The shared dictionary being built: each table starts with its zero entry, and strings,
/// attributes and stacks are deduplicated by value.
struct Dictionary {
    tables: ProfilesDictionary,
    strings: FxHashMap<String, i32>,
    attributes: FxHashMap<(i32, Value, i32), i32>,
    stacks: FxHashMap<Vec<i32>, i32>,
}

/// The index the next entry of a table gets.
fn next_index<T>(table: &[T], name: &'static str) -> Result<i32, OtlpError> {
    i32::try_from(table.len()).map_err(|_| OtlpError::TableFull(name))
}

impl Dictionary {
    fn new() -> Self {
        let tables = ProfilesDictionary {
            mapping_table: vec![Mapping::default()],
            location_table: vec![Location::default()],
            function_table: vec![Function::default()],
            link_table: vec![Link::default()],
            string_table: vec![String::new()],
            attribute_table: vec![KeyValueAndUnit::default()],
            stack_table: vec![Stack::default()],
        };
        let mut strings = FxHashMap::default();
        strings.insert(String::new(), 0);
        let mut stacks = FxHashMap::default();
        stacks.insert(Vec::new(), 0);
        Dictionary {
            tables,
            strings,
            attributes: FxHashMap::default(),
            stacks,
        }
    }

    fn string(&mut self, s: &str) -> Result<i32, OtlpError> {
        if let Some(&i) = self.strings.get(s) {
            return Ok(i);
        }
        let i = next_index(&self.tables.string_table, "strings")?;
        self.tables.string_table.push(s.to_owned());
        self.strings.insert(s.to_owned(), i);
        Ok(i)
    }

    fn attribute(&mut self, key: &str, value: Value, unit: &str) -> Result<i32, OtlpError> {
        let key = self.string(key)?;
        let unit = self.string(unit)?;
        let id = (key, value, unit);
        if let Some(&i) = self.attributes.get(&id) {
            return Ok(i);
        }
        let i = next_index(&self.tables.attribute_table, "attributes")?;
        let value = match &id.1 {
            Value::String(s) => AttributeValue::String(s.clone()),
            Value::Int(n) => AttributeValue::Int(*n),
        };
        self.tables.attribute_table.push(KeyValueAndUnit {
            key_strindex: key,
            value: Some(any_value(value)),
            unit_strindex: unit,
        });
        self.attributes.insert(id, i);
        Ok(i)
    }

    fn stack(&mut self, location_indices: Vec<i32>) -> Result<i32, OtlpError> {
        if let Some(&i) = self.stacks.get(&location_indices) {
            return Ok(i);
        }
        let i = next_index(&self.tables.stack_table, "stacks")?;
        self.tables.stack_table.push(Stack {
            location_indices: location_indices.clone(),
        });
        self.stacks.insert(location_indices, i);
        Ok(i)
    }

    fn push_mapping(&mut self, m: Mapping) -> Result<i32, OtlpError> {
        let i = next_index(&self.tables.mapping_table, "mappings")?;
        self.tables.mapping_table.push(m);
        Ok(i)
    }

    fn push_function(&mut self, f: Function) -> Result<i32, OtlpError> {
        let i = next_index(&self.tables.function_table, "functions")?;
        self.tables.function_table.push(f);
        Ok(i)
    }

    fn push_location(&mut self, l: Location) -> Result<i32, OtlpError> {
        let i = next_index(&self.tables.location_table, "locations")?;
        self.tables.location_table.push(l);
        Ok(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::LabelRegistry;
    use crate::profile::Allocations;
    use crate::test_support::{frame, labels, sample};
    use crate::{AllocatedGroup, OTHER_SITES_NODE};
    use std::collections::BTreeMap;
    use std::sync::Arc;

    fn options() -> OtlpOptions {
        OtlpOptions {
            resource: vec![
                ("service.name".into(), AttributeValue::String("svc".into())),
                ("process.pid".into(), AttributeValue::Int(42)),
            ],
            scope_name: "heap-labels".into(),
            scope_version: "0.1.0".into(),
            frame_type: Some(FRAME_TYPE_V8JS.into()),
        }
    }

    /// Two routes, an unlabeled sample, an allocated-only group and one without a site.
    fn profile() -> crate::Profile {
        let reg = LabelRegistry::new(10);
        let a = labels(&reg, &[("route", "/a"), ("tenant", "")]);
        let b = labels(&reg, &[("route", "/b")]);
        let mut p = crate::Profile::new(512 * 1024);
        let root = p.add_node(None, 1, frame("(root)", 0));
        let main = p.add_node(Some(root), 2, frame("main", 10));
        let _leaf = p.add_node(Some(main), 3, frame("", 20));
        let s = sample;
        p.samples = vec![
            s(3, 1 << 20, Some(&a), 1),
            s(3, 100, Some(&b), 2),
            s(2, 4096, None, 3),
        ];
        p.allocations = Some(Allocations {
            dead: vec![
                AllocatedGroup {
                    node_id: 3,
                    labels: Some(Arc::clone(&b)),
                    objects: 10.0,
                    bytes: 1000.0,
                },
                AllocatedGroup {
                    node_id: OTHER_SITES_NODE,
                    labels: Some(a),
                    objects: 2.0,
                    bytes: 300.0,
                },
            ],
            window_start: 1,
        });
        p
    }

    /// Per (sample type, route): the summed values.
    fn totals_otlp(d: &ProfilesData) -> BTreeMap<(String, String), i64> {
        let dict = d.dictionary.as_ref().unwrap();
        let st = |i: i32| dict.string_table[i as usize].clone();
        let mut out = BTreeMap::new();
        for p in &d.resource_profiles[0].scope_profiles[0].profiles {
            let ty = st(p.sample_type.unwrap().type_strindex);
            for s in &p.samples {
                let route = s
                    .attribute_indices
                    .iter()
                    .map(|&i| &dict.attribute_table[i as usize])
                    .find(|a| st(a.key_strindex) == "route")
                    .map_or(String::new(), |a| match &a.value.as_ref().unwrap().value {
                        Some(any_value::Value::StringValue(v)) => v.clone(),
                        other => panic!("route is {other:?}"),
                    });
                *out.entry((ty.clone(), route)).or_default() += s.values[0];
            }
        }
        out
    }

    fn totals_pprof(p: &pp::Profile) -> BTreeMap<(String, String), i64> {
        let st = |i: i64| p.string_table[i as usize].clone();
        let mut out = BTreeMap::new();
        for s in &p.sample {
            let route = s
                .label
                .iter()
                .find(|l| st(l.key) == "route")
                .map_or(String::new(), |l| st(l.str));
            for (t, vt) in p.sample_type.iter().enumerate() {
                if s.value[t] != 0 {
                    *out.entry((st(vt.r#type), route.clone())).or_default() += s.value[t];
                }
            }
        }
        out
    }

    #[test]
    fn totals_per_label_and_type_equal_the_pprof_ones() {
        let p = profile();
        let eo = pprof::EncodeOptions {
            time_nanos: 1_700_000_000_000_000_000,
            duration_nanos: 2_000_000_000,
            ..pprof::EncodeOptions::default()
        };
        let pprof_message = pprof::build(&p, &eo);
        let bytes = encode(&p, &eo, &options()).unwrap();
        let d = ProfilesData::decode(bytes.as_slice()).unwrap();
        assert_eq!(totals_otlp(&d), totals_pprof(&pprof_message));
        assert!(totals_otlp(&d).contains_key(&("alloc_space".into(), "/b".into())));

        let dict = d.dictionary.as_ref().unwrap();
        let st = |i: i32| dict.string_table[i as usize].as_str();
        let profiles = &d.resource_profiles[0].scope_profiles[0].profiles;
        let types: Vec<_> = profiles
            .iter()
            .map(|p| {
                let t = p.sample_type.unwrap();
                (st(t.type_strindex), st(t.unit_strindex))
            })
            .collect();
        assert_eq!(
            types,
            [
                ("inuse_space", "bytes"),
                ("alloc_objects", "count"),
                ("alloc_space", "bytes"),
                ("inuse_objects", "count"),
            ]
        );
        for prof in profiles {
            assert_eq!(prof.period, 512 * 1024);
            let pt = prof.period_type.unwrap();
            assert_eq!(
                (st(pt.type_strindex), st(pt.unit_strindex)),
                ("space", "bytes")
            );
            assert_eq!(prof.time_unix_nano, 1_700_000_000_000_000_000);
            assert_eq!(prof.duration_nano, 2_000_000_000);
        }
        // The zero entries, the frame type on every real location, the anonymous function's name.
        assert_eq!(dict.string_table[0], "");
        assert_eq!(dict.stack_table[0], Stack::default());
        assert_eq!(dict.attribute_table[0], KeyValueAndUnit::default());
        assert_eq!(dict.function_table[0], Function::default());
        assert_eq!(dict.location_table[0], Location::default());
        for l in &dict.location_table[1..] {
            let a = &dict.attribute_table[l.attribute_indices[0] as usize];
            assert_eq!(st(a.key_strindex), FRAME_TYPE_KEY);
        }
        assert!(dict
            .function_table
            .iter()
            .any(|f| st(f.name_strindex) == pprof::ANONYMOUS));
        // The empty label value stays a string attribute.
        assert!(dict
            .attribute_table
            .iter()
            .any(|a| st(a.key_strindex) == "tenant"
                && a.value.as_ref().unwrap().value
                    == Some(any_value::Value::StringValue(String::new()))));
        // "Other sites" has the empty stack.
        let alloc = profiles
            .iter()
            .find(|p| st(p.sample_type.unwrap().type_strindex) == "alloc_space")
            .unwrap();
        assert!(alloc
            .samples
            .iter()
            .any(|s| s.stack_index == 0 && s.values == [300]));
        let resource = d.resource_profiles[0].resource.as_ref().unwrap();
        assert_eq!(resource.attributes[0].key, "service.name");
        assert_eq!(
            d.resource_profiles[0].scope_profiles[0]
                .scope
                .as_ref()
                .unwrap()
                .name,
            "heap-labels"
        );
    }

    #[test]
    fn a_pprof_file_translates_gzipped_or_not_and_bad_input_is_an_error() {
        let p = profile();
        let gz = pprof::encode(&p);
        let from_file = from_pprof_bytes(&gz, &options()).unwrap();
        let raw = pprof::build(&p, &pprof::EncodeOptions::default()).encode_to_vec();
        assert_eq!(from_pprof_bytes(&raw, &options()).unwrap(), from_file);
        assert_eq!(
            from_file,
            encode(&p, &pprof::EncodeOptions::default(), &options()).unwrap()
        );
        assert!(matches!(
            from_pprof_bytes(b"\x1f\x8bnot gzip", &options()),
            Err(OtlpError::NotPprof(_))
        ));
        assert!(matches!(
            from_pprof_bytes(b"\xff\xff\xff", &options()),
            Err(OtlpError::NotPprof(_))
        ));
        let mut dangling = pprof::build(&p, &pprof::EncodeOptions::default());
        dangling.sample[0].location_id = vec![99];
        assert_eq!(
            from_pprof(&dangling, &options()).unwrap_err(),
            OtlpError::Dangling {
                what: "location",
                id: 99
            }
        );
        dangling.string_table.truncate(1);
        assert!(from_pprof(&dangling, &options()).is_err());
    }

    #[test]
    fn an_empty_profile_translates() {
        let d = ProfilesData::decode(
            encode(
                &crate::Profile::new(0),
                &pprof::EncodeOptions::default(),
                &OtlpOptions::default(),
            )
            .unwrap()
            .as_slice(),
        )
        .unwrap();
        let profiles = &d.resource_profiles[0].scope_profiles[0].profiles;
        assert_eq!(profiles.len(), 2);
        assert!(profiles.iter().all(|p| p.samples.is_empty()));
    }
}
