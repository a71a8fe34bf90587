//! `NativeProfile`: one read of the allocation profile, held in Rust and exposed to lib/, which
//! turns it into the public `AllocationProfile`. Samples, external entries and groups name their
//! label sets by id; lib/ finds the labels of most ids in its own cache (by the set's key, see
//! `labels::SetKey`) and asks for the pairs of the others only.

use std::cell::OnceCell;
use std::sync::Arc;

use heap_labels_core::{heapprofile, otlp, pprof, GroupLabels, LabelGroup, LabelSet};
use napi::bindgen_prelude::{Buffer, Float64Array, ObjectFinalize, Uint32Array};
use napi::Env;
use napi_derive::napi;
use rustc_hash::FxHashSet;

use crate::error::{Error, Result};
use crate::model::ReadProfile;
use crate::otlp::NativeOtlpOptions;

/// A label set as parallel key/value arrays, sorted by key (JavaScript's string order).
#[napi(object)]
pub struct NativeLabelSet {
    pub id: u32,
    pub generation: f64,
    pub keys: Vec<String>,
    pub values: Vec<String>,
}

impl NativeLabelSet {
    pub fn of(set: &LabelSet) -> Self {
        let (keys, values) = split_pairs(set.pairs().iter().map(|(k, v)| (&**k, &**v)));
        NativeLabelSet {
            id: set.id(),
            generation: set.generation() as f64,
            keys,
            values,
        }
    }
}

/// The keys of a read's label sets (see `labels::SetKey`), index-aligned, ordered by id.
#[napi(object)]
pub struct NativeSetKeys {
    pub ids: Uint32Array,
    pub generations: Float64Array,
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
    /// Label-set id per sample (see `labelSetKeys()`); `NO_LABEL_SET` when unlabeled.
    pub label_sets: Uint32Array,
}

/// `NativeSampleColumns::label_sets` of an unlabeled sample. Registries hand out ids from 1
/// upwards (0 is the overflow set) and never reach it (`heap_labels_core::MAX_ID`).
pub const NO_LABEL_SET: u32 = u32::MAX;

/// The groups of `byLabel`, largest first, as columns (index-aligned): 10k groups cross as a few
/// buffers and one array of strings instead of 10k objects. A group is a label set of the read
/// (`labelSets[i]` its id), one value of the grouping key (`values[i]`), or the unlabeled samples
/// (`labelSets[i]` is `NO_LABEL_SET` and `values[i]` null).
#[napi(object)]
pub struct NativeGroupColumns {
    pub label_sets: Uint32Array,
    pub values: Vec<Option<String>>,
    pub bytes: Float64Array,
    pub objects: Float64Array,
    pub external_bytes: Float64Array,
    /// Estimated bytes and objects allocated in the read's window, live or dead; empty when the
    /// profile has no allocation figures.
    pub allocated_bytes: Float64Array,
    pub allocated_objects: Float64Array,
}

/// External bytes of one label set (`labelSet` absent: the unlabeled total).
#[napi(object)]
pub struct NativeExternal {
    pub label_set: Option<u32>,
    pub bytes: f64,
}

/// One read of the allocation profile. Its native copy (~50 bytes per sample) is reported to V8
/// as external memory while it lives, so that a process which reads profiles but allocates little
/// on the JS heap still collects old reads; `dispose()` frees it at once.
#[napi(custom_finalize)]
pub struct NativeProfile {
    /// `None` once disposed.
    read: Option<ReadProfile>,
    /// Bytes reported to V8 for `read` (given back on dispose or finalize).
    reported: i64,
    /// The sets the samples and external entries refer to, by id (made on first use).
    sets: OnceCell<Vec<Arc<LabelSet>>>,
}

impl NativeProfile {
    /// Takes `read` over and reports its size to V8 (`napi_adjust_external_memory`).
    pub fn new(env: &Env, read: ReadProfile) -> Result<Self> {
        let reported = i64::try_from(read.native_bytes()).unwrap_or(i64::MAX);
        env.adjust_external_memory(reported)?;
        Ok(NativeProfile {
            read: Some(read),
            reported,
            sets: OnceCell::new(),
        })
    }

    fn read(&self) -> Result<&ReadProfile> {
        self.read.as_ref().ok_or(Error::ProfileDisposed)
    }

    /// Frees the native copy now and gives its size back to V8. Idempotent.
    fn release(&mut self, env: &Env) -> napi::Result<()> {
        self.read = None;
        self.sets = OnceCell::new();
        let reported = std::mem::take(&mut self.reported);
        if reported != 0 {
            env.adjust_external_memory(-reported)?;
        }
        Ok(())
    }

    /// Every set a sample or an external entry of `read` refers to, once each, by id (ids are
    /// unique among the read's sets: they all are alive).
    fn sets<'a>(&'a self, read: &ReadProfile) -> &'a [Arc<LabelSet>] {
        self.sets.get_or_init(|| {
            let profile = &read.profile;
            let sampled = profile.samples.iter().filter_map(|s| s.labels.as_ref());
            // Each set once, by address, before any clone or sort: a read has many samples and
            // few sets (a clone and a sort per sample were about a tenth of a read of 100k).
            let mut seen = FxHashSet::default();
            let mut last = std::ptr::null();
            let mut sets = Vec::new();
            for set in sampled.chain(profile.external.iter().map(|(set, _)| set)) {
                let at = Arc::as_ptr(set);
                if at != last && seen.insert(at) {
                    sets.push(Arc::clone(set));
                }
                last = at;
            }
            sets.sort_unstable_by_key(|set| set.id());
            sets
        })
    }
}

impl ObjectFinalize for NativeProfile {
    /// The JS object was collected: the copy goes with it (plain frees and atomic decrements of
    /// the label sets it held) and V8 learns that the memory is gone.
    fn finalize(mut self, env: Env) -> napi::Result<()> {
        self.release(&env)
    }
}

/// Runs `f` on the profile, throwing the addon's error (e.g. "disposed") as a JS error.
fn with_read<T>(
    env: &Env,
    profile: &NativeProfile,
    f: impl FnOnce(&ReadProfile) -> T,
) -> napi::Result<T> {
    profile.read().map(f).map_err(|e| e.throw(env))
}

#[napi]
impl NativeProfile {
    /// The mean bytes between samples of the session (0 once disposed).
    #[napi(getter)]
    pub fn sample_interval(&self) -> f64 {
        self.read
            .as_ref()
            .map_or(0.0, |read| read.profile.sample_interval as f64)
    }

    /// Whether the read has allocation figures (the session reports dead samples: patched runtime,
    /// API version 2); false once disposed.
    #[napi(getter)]
    pub fn has_allocations(&self) -> bool {
        self.read
            .as_ref()
            .is_some_and(|read| read.profile.allocations.is_some())
    }

    /// Frees the native copy now; every other method throws afterwards.
    #[napi]
    pub fn dispose(&mut self, env: Env) -> napi::Result<()> {
        self.release(&env)
    }

    /// The samples as typed-array columns.
    #[napi]
    pub fn sample_columns(&self, env: Env) -> napi::Result<NativeSampleColumns> {
        with_read(&env, self, |read| {
            let samples = &read.profile.samples;
            NativeSampleColumns {
                node_ids: Uint32Array::new(samples.iter().map(|s| s.node_id).collect()),
                sizes: Float64Array::new(samples.iter().map(|s| s.size as f64).collect()),
                counts: Uint32Array::new(read.v8_counts.clone()),
                sample_ids: Float64Array::new(samples.iter().map(|s| s.sample_id as f64).collect()),
                label_sets: Uint32Array::new(
                    samples
                        .iter()
                        .map(|s| s.labels.as_ref().map_or(NO_LABEL_SET, |set| set.id()))
                        .collect(),
                ),
            }
        })
    }

    /// The key of every set a sample or an external entry refers to.
    #[napi]
    pub fn label_set_keys(&self, env: Env) -> napi::Result<NativeSetKeys> {
        with_read(&env, self, |read| {
            let sets = self.sets(read);
            NativeSetKeys {
                ids: Uint32Array::new(sets.iter().map(|s| s.id()).collect()),
                generations: Float64Array::new(
                    sets.iter().map(|s| s.generation() as f64).collect(),
                ),
            }
        })
    }

    /// The pairs of the read's sets with these ids (ids the read has no set for are left out).
    #[napi]
    pub fn label_set_pairs(&self, env: Env, ids: Uint32Array) -> napi::Result<Vec<NativeLabelSet>> {
        with_read(&env, self, |read| {
            let sets = self.sets(read);
            ids.iter()
                .filter_map(|&id| {
                    let i = sets.binary_search_by_key(&id, |s| s.id()).ok()?;
                    Some(NativeLabelSet::of(&sets[i]))
                })
                .collect()
        })
    }

    /// External bytes per label set of the read, and the unlabeled total last (when not 0).
    #[napi]
    pub fn external_bytes(&self, env: Env) -> napi::Result<Vec<NativeExternal>> {
        with_read(&env, self, |read| {
            let profile = &read.profile;
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
        })
    }

    /// Estimates per label set or per value of `key`, largest first.
    #[napi]
    pub fn by_label(&self, env: Env, key: Option<String>) -> napi::Result<NativeGroupColumns> {
        with_read(&env, self, |read| {
            let groups = read.profile.by_label(key.as_deref());
            let column = |f: fn(&LabelGroup) -> f64| -> Float64Array {
                Float64Array::new(groups.iter().map(f).collect())
            };
            let (allocated_bytes, allocated_objects) = if read.profile.allocations.is_some() {
                (
                    column(|g| g.allocated_bytes),
                    column(|g| g.allocated_objects),
                )
            } else {
                (Float64Array::new(Vec::new()), Float64Array::new(Vec::new()))
            };
            NativeGroupColumns {
                label_sets: Uint32Array::new(
                    groups
                        .iter()
                        .map(|g| match &g.labels {
                            GroupLabels::Set(set) => set.id(),
                            _ => NO_LABEL_SET,
                        })
                        .collect(),
                ),
                values: groups
                    .iter()
                    .map(|g| match &g.labels {
                        GroupLabels::Value { value, .. } => Some(value.clone()),
                        _ => None,
                    })
                    .collect(),
                bytes: column(|g| g.bytes),
                objects: column(|g| g.objects),
                external_bytes: column(|g| g.external_bytes as f64),
                allocated_bytes,
                allocated_objects,
            }
        })
    }

    /// Gzip-compressed pprof `profile.proto`.
    #[napi]
    pub fn to_pprof(&self, env: Env) -> napi::Result<Buffer> {
        with_read(&env, self, |read| {
            pprof::encode_with(&read.profile, &read.encode_options).into()
        })
    }

    /// An encoded OTLP `ProfilesData` message (uncompressed), translated from the same pprof
    /// message `toPprof()` encodes.
    #[napi]
    pub fn to_otlp(&self, env: Env, options: NativeOtlpOptions) -> napi::Result<Buffer> {
        let encoded = with_read(&env, self, |read| {
            otlp::encode(&read.profile, &read.encode_options, &options.to_core())
        })?;
        encoded
            .map(Buffer::from)
            .map_err(|e| Error::Native(e.to_string()).throw(&env))
    }

    /// DevTools `.heapprofile` JSON.
    #[napi]
    pub fn to_heap_profile_json(&self, env: Env) -> napi::Result<String> {
        with_read(&env, self, |read| heapprofile::to_string(&read.profile))
    }

    /// The `.heapprofile`'s call tree alone (`head`), as JSON.
    #[napi]
    pub fn head_json(&self, env: Env) -> napi::Result<String> {
        with_read(&env, self, |read| {
            heapprofile::head_to_string(&read.profile)
        })
    }
}

fn split_pairs<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> (Vec<String>, Vec<String>) {
    pairs.map(|(k, v)| (k.to_owned(), v.to_owned())).unzip()
}
