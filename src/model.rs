//! Conversion from the bridge's raw profile (`ffi::RawProfile`) to the core profile model.

use std::sync::Arc;

use heap_labels_core::pprof::EncodeOptions;
use heap_labels_core::{
    dead_sample_estimate, AllocatedGroup, Allocations, CallFrame, ExternalCounters, LabelRegistry,
    LabelSet, Profile, ProfileNode, Sample,
};

use crate::bridge::ffi;

/// External bytes at read time: per label set when the patched runtime's allocator hook counts
/// them, otherwise the isolate's single unlabeled total (`HeapStatistics::external_memory`).
#[derive(Debug, Default)]
pub struct ExternalInput {
    pub by_set: Vec<(Arc<LabelSet>, i64)>,
    pub unlabeled: i64,
}

impl ExternalInput {
    /// The external bytes of `registry`'s sets when `counters` count them; otherwise the single
    /// unlabeled total, from `external_memory` (only called then). `IsolateAddon::external_input`
    /// reads them for an isolate; the near-heap-limit dump passes its own parts.
    pub fn from_parts(
        registry: &LabelRegistry,
        counters: &ExternalCounters,
        external_memory: impl FnOnce() -> u64,
    ) -> Self {
        if counters.counts_per_set() {
            ExternalInput {
                by_set: registry.external_by_set(),
                unlabeled: counters.unlabeled_bytes(),
            }
        } else {
            ExternalInput {
                by_set: Vec::new(),
                unlabeled: i64::try_from(external_memory()).unwrap_or(i64::MAX),
            }
        }
    }
}

/// A core profile plus what V8 reported that the model does not keep.
#[derive(Debug)]
pub struct ReadProfile {
    pub profile: Profile,
    /// V8's scaled `count` of each sample, aligned with `profile.samples`.
    pub v8_counts: Vec<u32>,
    /// pprof header times (session start, duration).
    pub encode_options: EncodeOptions,
}

impl ReadProfile {
    /// Heap bytes this read holds (its vectors and strings, by capacity; label sets are shared and
    /// not counted): what it tells V8 as external memory.
    pub fn native_bytes(&self) -> usize {
        use std::mem::size_of;
        let profile = &self.profile;
        let nodes: usize = profile
            .nodes
            .iter()
            .map(|n| {
                size_of::<ProfileNode>()
                    + n.frame.function_name.capacity()
                    + n.frame.url.capacity()
                    + n.children.capacity() * size_of::<usize>()
            })
            .sum();
        size_of::<Self>()
            + nodes
            + profile.samples.capacity() * size_of::<Sample>()
            + profile.external.capacity() * size_of::<(Arc<LabelSet>, i64)>()
            + self.v8_counts.capacity() * size_of::<u32>()
            + profile
                .allocations
                .as_ref()
                .map_or(0, |a| a.dead.capacity() * size_of::<AllocatedGroup>())
    }
}

/// Builds the core model from a raw V8 profile. Nodes keep V8's pre-order, so raw parent indices
/// are model indices.
pub fn build_profile(
    raw: ffi::RawProfile,
    sample_interval: u64,
    external: ExternalInput,
) -> ReadProfile {
    let mut profile = Profile::new(sample_interval);
    for node in raw.nodes {
        let parent = (node.parent != u32::MAX).then_some(node.parent as usize);
        let frame = CallFrame {
            function_name: node.function_name,
            script_id: node.script_id,
            url: node.script_name,
            line_number: node.line_number,
            column_number: node.column_number,
        };
        profile.add_node(parent, node.node_id, frame);
    }
    let mut allocations = allocations_of(raw.allocations);
    let mut v8_counts = Vec::with_capacity(raw.samples.len());
    // Sized once: grown by doubling, a read of 100k samples copied its samples over and over
    // into fresh memory.
    profile.samples.reserve_exact(raw.samples.len());
    for sample in raw.samples {
        // A kept sample of a collected object (both include-collected flags, a V8 with
        // is_live) counts as allocated in its window, not as in use. With only one flag there is
        // no window and it stays in the profile, as on runtimes without is_live.
        if let (false, Some(window)) = (sample.live, allocations.as_mut()) {
            let labels = labels_of_word(sample.label_word);
            // Older ones were counted by an earlier window (their reference drops here).
            if sample.sample_id > window.window_start {
                let (objects, bytes) = dead_sample_estimate(sample.size, sample_interval);
                window.dead.push(AllocatedGroup {
                    node_id: sample.node_id,
                    labels,
                    objects,
                    bytes,
                });
            }
            continue;
        }
        v8_counts.push(sample.count);
        profile.samples.push(Sample {
            node_id: sample.node_id,
            size: sample.size,
            // One V8 sample is one sampled object: the model scales it (V8's count is scaled).
            count: 1,
            sample_id: sample.sample_id,
            labels: labels_of_word(sample.label_word),
        });
    }
    profile.external = external.by_set;
    profile.unlabeled_external = external.unlabeled;
    profile.allocations = allocations;
    ReadProfile {
        profile,
        v8_counts,
        encode_options: EncodeOptions::default(),
    }
}

/// The allocation window of a read; `None` when the session does not report dead samples.
fn allocations_of(raw: ffi::RawAllocations) -> Option<Allocations> {
    raw.reported.then(|| Allocations {
        dead: raw
            .groups
            .into_iter()
            .map(|group| AllocatedGroup {
                node_id: group.node_id,
                labels: labels_of_word(group.label_word),
                objects: group.objects,
                bytes: group.bytes,
            })
            .collect(),
        window_start: raw.window_start,
    })
}

/// The label set a sample's word refers to (`None` for 0).
fn labels_of_word(word: usize) -> Option<Arc<LabelSet>> {
    if word == 0 {
        return None;
    }
    // SAFETY: cpp/ (CopySamples) took one reference for every non-zero word it copied out of
    // V8's profile, and each dead-sample group's word owns one (`take_dead_samples`); the model
    // takes that reference over.
    Some(unsafe { LabelSet::from_word(word) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(parent: u32, id: u32, name: &str) -> ffi::RawNode {
        ffi::RawNode {
            parent,
            node_id: id,
            function_name: name.into(),
            script_name: "file:///app.js".into(),
            script_id: 3,
            line_number: 10,
            column_number: 2,
        }
    }

    #[test]
    fn raw_profiles_become_the_model_with_unscaled_counts() {
        let raw = ffi::RawProfile {
            nodes: vec![
                node(u32::MAX, 1, "(root)"),
                node(0, 2, "a"),
                node(1, 3, "b"),
                node(0, 4, "c"),
            ],
            samples: vec![ffi::RawSample {
                node_id: 3,
                size: 64,
                count: 8192,
                sample_id: 7,
                label_word: 0,
                live: true,
            }],
            allocations: ffi::RawAllocations::default(),
        };
        let read = build_profile(
            raw,
            512 * 1024,
            ExternalInput {
                by_set: vec![],
                unlabeled: 100,
            },
        );
        let p = &read.profile;
        assert_eq!(p.nodes.len(), 4);
        assert_eq!(p.nodes[0].children, vec![1, 3]);
        assert_eq!(p.nodes[2].parent, Some(1));
        assert_eq!(p.nodes[2].frame.function_name, "b");
        assert_eq!(p.samples[0].count, 1);
        assert!(p.samples[0].labels.is_none());
        assert_eq!(read.v8_counts, vec![8192]);
        assert_eq!(p.unlabeled_external, 100);
        let expected = 64.0 / (1.0 - (-64.0f64 / (512.0 * 1024.0)).exp());
        assert!((p.estimated_bytes() - expected).abs() < 1e-6);
    }
}
