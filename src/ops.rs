//! Per-isolate state of the operations features (dumps, near-heap-limit profiles, per-label
//! counters), kept apart from the profiling core in `state`.

use std::sync::Arc;

use heap_labels_core::{GroupTable, LabelRegistry, LabelSet};

use crate::bridge::NearHeapLimitHook;

/// What the operations features keep per isolate.
pub struct OpsState {
    /// The set that unlabeled samples carry on the patched runtime, so that V8 releasing them is
    /// seen and live unlabeled samples can be counted like labeled ones (`counters`). Made by a
    /// throwaway registry: it is never interned, and cpp/ maps its word back to "unlabeled" before
    /// any profile reaches the model.
    pub unlabeled: Arc<LabelSet>,
    /// The armed near-heap-limit dump; cpp/ holds its address while armed.
    pub near_heap_limit: Option<Box<NearHeapLimitHook>>,
}

impl OpsState {
    /// `groups`: the isolate registry's group counters, where unlabeled samples count too.
    pub fn new(groups: &Arc<GroupTable>) -> Self {
        let unlabeled = LabelRegistry::with_groups(1, Arc::clone(groups))
            .intern(Vec::new())
            .expect("the empty label set is valid");
        OpsState {
            unlabeled,
            near_heap_limit: None,
        }
    }

    /// The word of the unlabeled-samples set (no reference transferred: `unlabeled` keeps one for
    /// as long as the isolate state lives, longer than any session).
    pub fn unlabeled_word(&self) -> usize {
        LabelSet::as_word(&self.unlabeled)
    }
}
