//! Per-isolate state: one per napi environment (the main thread and every worker thread each have
//! their own), stored as napi instance data and dropped on environment teardown on the isolate's
//! thread.

use std::sync::Arc;

use cxx::UniquePtr;
use heap_labels_core::{ExternalCounters, LabelRegistry, DEFAULT_MAX_SETS};
use napi::Env;

use crate::bridge::ffi;
use crate::error::{Error, Result};
use crate::model::ExternalInput;
use crate::ops::OpsState;
use crate::session::Session;
use crate::{allocations, external};

/// Everything the addon keeps for one isolate.
pub struct IsolateAddon {
    /// Interned label sets of this isolate (shared with the near-heap-limit dumper).
    pub registry: Arc<LabelRegistry>,
    /// External-byte totals, charged by the counting allocator on the patched runtime. Leaked
    /// (see `external::leak_counters`): frees may arrive after this state is gone.
    pub counters: &'static ExternalCounters,
    /// The running heap profile session, if any.
    pub session: Option<Session>,
    /// Id of the next session (ids are never reused within an isolate).
    pub next_session_id: u32,
    /// Operations support: the unlabeled-samples set, the near-heap-limit dumper.
    pub ops: OpsState,
    /// V8-side state (holder template, labels key, profiler ownership). Declared last so that it is
    /// dropped last: its destructor stops the profiler and releases the words of live holders.
    pub v8: UniquePtr<ffi::IsolateState>,
    /// Allocations of dead samples per (site, label set). After `v8`, so dropped after it: V8
    /// reports deaths until the profiler stops in `v8`'s destructor.
    pub dead_samples: Box<allocations::Totals>,
}

impl IsolateAddon {
    /// The isolate's external bytes at read time (per label set where they are counted).
    pub fn external_input(&self) -> ExternalInput {
        ExternalInput::from_parts(&self.registry, self.counters, || self.v8.external_memory())
    }

    fn new() -> Self {
        let counters = external::leak_counters();
        let mut addon = IsolateAddon {
            registry: Arc::new(LabelRegistry::new(DEFAULT_MAX_SETS)),
            counters,
            session: None,
            next_session_id: 1,
            ops: OpsState::new(),
            v8: ffi::new_isolate_state(external::address_of(counters)),
            dead_samples: allocations::new_totals(),
        };
        let word = addon.ops.unlabeled_word();
        addon.v8_mut().set_unlabeled_sample_word(word);
        let totals = allocations::address_of(&addon.dead_samples);
        addon.v8_mut().set_dead_sample_totals(totals);
        addon
    }

    /// The V8-side state, pinned for its `&mut self` methods.
    pub fn v8_mut(&mut self) -> std::pin::Pin<&mut ffi::IsolateState> {
        self.v8.pin_mut()
    }
}

impl Drop for IsolateAddon {
    /// The near-heap-limit callback points at `ops`' dumper: remove it before the fields go.
    fn drop(&mut self) {
        self.v8_mut().disarm_near_heap_limit();
    }
}

/// The state of the isolate `env` belongs to, created on first use.
pub fn isolate_state(env: &Env) -> Result<&'static mut IsolateAddon> {
    if env.get_instance_data::<IsolateAddon>()?.is_none() {
        env.set_instance_data(IsolateAddon::new(), (), |_| {})?;
    }
    env.get_instance_data::<IsolateAddon>()?
        .ok_or_else(|| Error::Native("per-isolate state is missing".into()))
}
