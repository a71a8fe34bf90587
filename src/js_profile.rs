//! `NativeProfile`: one read of the allocation profile, held in Rust and exposed to lib/, which
//! turns it into the public `AllocationProfile` (label pairs become lib/'s interned frozen objects).

use std::collections::BTreeMap;
use std::sync::Arc;

use heap_labels_core::{heapprofile, pprof, GroupLabels, LabelSet};
use napi::bindgen_prelude::{Buffer, Float64Array, Uint32Array};
use napi_derive::napi;

use crate::model::ReadProfile;

/// A label set as parallel key/value arrays, sorted by key.
#[napi(object)]
pub struct NativeLabelSet {
    pub id: u32,
    pub keys: Vec<String>,
    pub values: Vec<String>,
}

/// The samples as columns (one typed array per field, index-aligned): 100k samples cross the
/// boundary as five buffers instead of 100k objects, and lib/ builds sample objects only when asked.
#[napi(object)]
pub struct NativeSampleColumns {
    pub node_ids: Uint32Array,
    pub sizes: Float64Array,
    /// V8's count (already scaled by 1 / (1 - exp(-size / interval)), rounded).
    pub counts: Uint32Array,
    pub sample_ids: Float64Array,
    /// Label-set id per sample (see `labelSets()`); `NO_LABEL_SET` when unlabeled.
    pub label_sets: Uint32Array,
}

/// `NativeSampleColumns::label_sets` of an unlabeled sample. Registries hand out ids from 1
/// upwards (0 is the overflow set), one per distinct set ever interned, so u32::MAX is never an id
/// in practice; `labels` treats ids at or past it as unlabeled.
pub const NO_LABEL_SET: u32 = u32::MAX;

/// One group of `byLabel`: `keys`/`values` are the group's labels (empty when unlabeled).
#[napi(object)]
pub struct NativeGroup {
    pub keys: Vec<String>,
    pub values: Vec<String>,
    pub unlabeled: bool,
    pub bytes: f64,
    pub objects: f64,
    pub external_bytes: f64,
    pub samples: u32,
}

/// External bytes of one label set (`labelSet` absent: the unlabeled total).
#[napi(object)]
pub struct NativeExternal {
    pub label_set: Option<u32>,
    pub bytes: f64,
}

/// One read of the allocation profile.
#[napi]
pub struct NativeProfile {
    read: ReadProfile,
}

impl NativeProfile {
    pub fn new(read: ReadProfile) -> Self {
        NativeProfile { read }
    }

    fn sets(&self) -> impl Iterator<Item = &Arc<LabelSet>> {
        let profile = &self.read.profile;
        let sampled = profile.samples.iter().filter_map(|s| s.labels.as_ref());
        sampled.chain(profile.external.iter().map(|(set, _)| set))
    }
}

#[napi]
impl NativeProfile {
    /// Signature: `() => number` - the mean bytes between samples of the session.
    #[napi(getter)]
    pub fn sample_interval(&self) -> f64 {
        self.read.profile.sample_interval as f64
    }

    /// Signature: `() => NativeSampleColumns` - the samples as typed-array columns.
    #[napi]
    pub fn sample_columns(&self) -> NativeSampleColumns {
        let samples = &self.read.profile.samples;
        NativeSampleColumns {
            node_ids: Uint32Array::new(samples.iter().map(|s| s.node_id).collect()),
            sizes: Float64Array::new(samples.iter().map(|s| s.size as f64).collect()),
            counts: Uint32Array::new(self.read.v8_counts.clone()),
            sample_ids: Float64Array::new(samples.iter().map(|s| s.sample_id as f64).collect()),
            label_sets: Uint32Array::new(
                samples
                    .iter()
                    .map(|s| s.labels.as_ref().map_or(NO_LABEL_SET, |set| set.id()))
                    .collect(),
            ),
        }
    }

    /// Signature: `() => NativeLabelSet[]` - every set that a sample or an external entry refers to.
    #[napi]
    pub fn label_sets(&self) -> Vec<NativeLabelSet> {
        let mut by_id = BTreeMap::new();
        for set in self.sets() {
            by_id.entry(set.id()).or_insert_with(|| {
                let (keys, values) = split_pairs(set.pairs().iter().map(|(k, v)| (&**k, &**v)));
                NativeLabelSet {
                    id: set.id(),
                    keys,
                    values,
                }
            });
        }
        by_id.into_values().collect()
    }

    /// Signature: `() => NativeExternal[]`.
    #[napi]
    pub fn external_bytes(&self) -> Vec<NativeExternal> {
        let profile = &self.read.profile;
        let mut out: Vec<NativeExternal> = profile
            .external
            .iter()
            .map(|(set, bytes)| NativeExternal {
                label_set: Some(set.id()),
                bytes: *bytes as f64,
            })
            .collect();
        if profile.unlabeled_external != 0 {
            out.push(NativeExternal {
                label_set: None,
                bytes: profile.unlabeled_external as f64,
            });
        }
        out
    }

    /// Signature: `(key?: string) => NativeGroup[]` - estimates per label set or per value of
    /// `key`, largest first.
    #[napi]
    pub fn by_label(&self, key: Option<String>) -> Vec<NativeGroup> {
        self.read
            .profile
            .by_label(key.as_deref())
            .into_iter()
            .map(|group| {
                let (keys, values) = match &group.labels {
                    GroupLabels::Unlabeled => (Vec::new(), Vec::new()),
                    GroupLabels::Set(set) => {
                        split_pairs(set.pairs().iter().map(|(k, v)| (&**k, &**v)))
                    }
                    GroupLabels::Value { key, value } => (vec![key.clone()], vec![value.clone()]),
                };
                NativeGroup {
                    unlabeled: matches!(group.labels, GroupLabels::Unlabeled),
                    keys,
                    values,
                    bytes: group.bytes,
                    objects: group.objects,
                    external_bytes: group.external_bytes as f64,
                    samples: u32::try_from(group.samples).unwrap_or(u32::MAX),
                }
            })
            .collect()
    }

    /// Signature: `() => Buffer` - gzip-compressed pprof `profile.proto`.
    #[napi]
    pub fn to_pprof(&self) -> Buffer {
        pprof::encode_with(&self.read.profile, &self.read.encode_options).into()
    }

    /// Signature: `() => string` - DevTools `.heapprofile` JSON.
    #[napi]
    pub fn to_heap_profile_json(&self) -> String {
        heapprofile::to_string(&self.read.profile)
    }
}

fn split_pairs<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> (Vec<String>, Vec<String>) {
    pairs.map(|(k, v)| (k.to_owned(), v.to_owned())).unzip()
}
