//! Per-isolate state: one per napi environment (the main thread and every worker thread each have
//! their own), stored as napi instance data and dropped on environment teardown on the isolate's
//! thread.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use cxx::UniquePtr;
use heap_labels_core::pprof::EncodeOptions;
use heap_labels_core::{ExternalCounters, LabelRegistry, DEFAULT_MAX_SETS};
use napi::Env;

use crate::allocations;
use crate::bridge::ffi;
use crate::error::{Error, Result};
use crate::model::ExternalInput;
use crate::ops::OpsState;
use crate::v8_callbacks;

/// Everything the addon keeps for one isolate.
pub struct IsolateAddon {
    /// Interned label sets of this isolate (shared with the near-heap-limit dumper).
    pub registry: Arc<LabelRegistry>,
    /// External-byte totals, charged by the counting allocator on the patched runtime. Leaked
    /// (see `v8_callbacks::leak_external_counters`): frees may arrive after this state is gone.
    pub counters: &'static ExternalCounters,
    /// The running heap profile session, if any.
    pub session: Option<Session>,
    /// Id of the next session (ids are never reused within an isolate).
    pub next_session_id: u32,
    /// Operations support: the unlabeled-samples set, the near-heap-limit dumper.
    pub ops: OpsState,
    /// `collected_holders()` at the last prune made because the registry was full
    /// (`labels::make_room`).
    pub pruned_at_collected: u64,
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
        let counters = v8_callbacks::leak_external_counters();
        let registry = Arc::new(LabelRegistry::new(DEFAULT_MAX_SETS));
        // Unlabeled blocks and samples count into the unknown group of the registry's groups.
        counters.attach_groups(Arc::clone(registry.groups()));
        let ops = OpsState::new(registry.groups());
        let dead_samples = allocations::new_totals(Arc::clone(&registry));
        let mut addon = IsolateAddon {
            registry,
            counters,
            session: None,
            next_session_id: 1,
            ops,
            pruned_at_collected: 0,
            v8: ffi::new_isolate_state(v8_callbacks::external_counters_address(counters)),
            dead_samples,
        };
        let word = addon.ops.unlabeled_word();
        addon.v8_mut().set_unlabeled_sample_word(word);
        let totals = v8_callbacks::dead_sample_totals_address(&addon.dead_samples);
        addon.v8_mut().set_dead_sample_totals(totals);
        addon
    }

    /// The V8-side state, pinned for its `&mut self` methods.
    pub fn v8_mut(&mut self) -> std::pin::Pin<&mut ffi::IsolateState> {
        self.v8.pin_mut()
    }

    /// Removes V8's near-heap-limit callback first, then drops the hook it points at.
    pub fn disarm_near_heap_limit(&mut self) {
        self.v8_mut().disarm_near_heap_limit();
        self.ops.near_heap_limit = None;
    }
}

impl Drop for IsolateAddon {
    /// The near-heap-limit callback points at `ops`' hook: remove it before the fields go.
    fn drop(&mut self) {
        self.v8_mut().disarm_near_heap_limit();
    }
}

/// Options of a session, as lib/ validated and defaulted them (lib/session-options.js holds the
/// defaults, lib/profile.js and lib/config.js the user-facing errors; the ranges come from here,
/// `js_types`, which guards the conversion at the native surface).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SessionOptions {
    pub sample_interval: u64,
    pub stack_depth: u32,
    pub include_objects_collected_by_major_gc: bool,
    pub include_objects_collected_by_minor_gc: bool,
    pub track_allocations: bool,
    pub max_label_sets: usize,
    /// `kSamplingForceGC`: V8 collects garbage before each read.
    pub force_gc: bool,
    /// Whether the session keeps group counters (its keys are the group table's).
    pub grouped: bool,
    pub max_groups: usize,
}

impl SessionOptions {
    pub fn to_ffi(self) -> ffi::StartOptions {
        ffi::StartOptions {
            sample_interval: self.sample_interval,
            stack_depth: self.stack_depth as i32,
            include_objects_collected_by_major_gc: self.include_objects_collected_by_major_gc,
            include_objects_collected_by_minor_gc: self.include_objects_collected_by_minor_gc,
            track_allocations: self.track_allocations,
            force_gc: self.force_gc,
        }
    }
}

/// The running session of an isolate.
#[derive(Debug, Clone, Copy)]
pub struct Session {
    pub id: u32,
    pub options: SessionOptions,
    /// When the allocation window started (the session's start, or the last read that reset
    /// it): the header time of the profiles read in it, whose allocated figures it covers.
    pub window_started_at: SystemTime,
    pub window_started: Instant,
    /// When the session started: the header time of reads of the figures since the start.
    pub started_at: SystemTime,
    pub started: Instant,
}

impl Session {
    /// pprof header times: the window's start and how long it has run.
    pub fn encode_options(&self) -> EncodeOptions {
        encode_times(self.window_started_at, self.window_started)
    }

    /// pprof header times of a read since the start: the session's start and how long it has run.
    pub fn since_start_encode_options(&self) -> EncodeOptions {
        encode_times(self.started_at, self.started)
    }
}

fn encode_times(at: SystemTime, started: Instant) -> EncodeOptions {
    let since_epoch = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    EncodeOptions {
        time_nanos: i64::try_from(since_epoch.as_nanos()).unwrap_or(0),
        duration_nanos: i64::try_from(started.elapsed().as_nanos()).unwrap_or(0),
        ..EncodeOptions::default()
    }
}

/// The state of the isolate `env` belongs to, created on first use.
/// Every napi call of the addon starts here: one instance-data lookup (about 250 instructions,
/// napi-rs checks the pointer's type in a registry) when the state exists.
pub fn isolate_state(env: &Env) -> Result<&'static mut IsolateAddon> {
    if let Some(state) = env.get_instance_data::<IsolateAddon>()? {
        return Ok(state);
    }
    env.set_instance_data(IsolateAddon::new(), (), |_| {})?;
    env.get_instance_data::<IsolateAddon>()?
        .ok_or_else(|| Error::Native("per-isolate state is missing".into()))
}
