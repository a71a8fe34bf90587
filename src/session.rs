//! The lifecycle of a heap profile session: one per isolate, because V8 keeps one sampling heap
//! profiler per isolate.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use heap_labels_core::pprof::EncodeOptions;
use heap_labels_core::DEFAULT_MAX_SETS;

use crate::bridge::ffi;
use crate::error::{Error, Result};
use crate::labels;
use crate::model::{self, ReadProfile};
use crate::state::IsolateAddon;

/// Default mean bytes between samples (V8's default).
pub const DEFAULT_SAMPLE_INTERVAL: u64 = 512 * 1024;
/// Default and limits of the recorded stack depth.
pub const DEFAULT_STACK_DEPTH: u32 = 64;
pub const MAX_STACK_DEPTH: u32 = 1024;

/// Validated options of `startHeapProfile`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SessionOptions {
    pub sample_interval: u64,
    pub stack_depth: u32,
    pub include_major_gc: bool,
    pub include_minor_gc: bool,
    pub track_allocations: bool,
    pub max_label_sets: usize,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            sample_interval: DEFAULT_SAMPLE_INTERVAL,
            stack_depth: DEFAULT_STACK_DEPTH,
            include_major_gc: false,
            include_minor_gc: false,
            track_allocations: false,
            max_label_sets: DEFAULT_MAX_SETS,
        }
    }
}

impl SessionOptions {
    /// Checks the ranges lib/ documents (lib/ checks first; this guards the native surface).
    pub fn validate(&self) -> Result<()> {
        if self.sample_interval == 0 || self.sample_interval > u64::from(u32::MAX) {
            return Err(Error::InvalidOption {
                name: "sampleInterval",
                reason: format!("must be an integer in 1..={}", u32::MAX),
            });
        }
        if !(1..=MAX_STACK_DEPTH).contains(&self.stack_depth) {
            return Err(Error::InvalidOption {
                name: "stackDepth",
                reason: format!("must be an integer in 1..={MAX_STACK_DEPTH}"),
            });
        }
        if self.max_label_sets == 0 {
            return Err(Error::InvalidOption {
                name: "maxLabelSets",
                reason: "must be a positive integer".into(),
            });
        }
        Ok(())
    }

    fn to_ffi(self) -> ffi::StartOptions {
        ffi::StartOptions {
            sample_interval: self.sample_interval,
            stack_depth: self.stack_depth as i32,
            include_major_gc: self.include_major_gc,
            include_minor_gc: self.include_minor_gc,
            track_allocations: self.track_allocations,
        }
    }
}

/// The running session of an isolate.
#[derive(Debug, Clone, Copy)]
pub struct Session {
    pub id: u32,
    pub options: SessionOptions,
    /// When the profiler started, for the pprof header.
    pub started_at: SystemTime,
    pub started: Instant,
}

impl Session {
    /// pprof header times: the session start and how long it has run.
    pub fn encode_options(&self) -> EncodeOptions {
        let since_epoch = self
            .started_at
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        EncodeOptions {
            time_nanos: i64::try_from(since_epoch.as_nanos()).unwrap_or(0),
            duration_nanos: i64::try_from(self.started.elapsed().as_nanos()).unwrap_or(0),
        }
    }
}

/// Starts the isolate's sampling heap profiler and returns the new session's id.
pub fn start(state: &mut IsolateAddon, options: SessionOptions) -> Result<u32> {
    options.validate()?;
    if state.session.is_some() {
        return Err(Error::ProfilerBusy);
    }
    state.registry.set_max_sets(options.max_label_sets);
    // A higher cap makes room: holders that got the overflow set get their own sets back now.
    labels::rebind_overflowed(state)?;
    // Before V8 can report the first death of the new session.
    crate::allocations::restart(&state.dead_samples, options.sample_interval);
    // On the patched runtime this starts a labeled session and installs the counting allocator.
    if !state.v8_mut().start_sampling(&options.to_ffi()) {
        return Err(Error::ProfilerBusy);
    }
    // Per-label external bytes are reported from the first tracked session on: blocks charged
    // then are subtracted when freed, also after the session.
    if state.v8.external_tracking() {
        state.counters.set_enabled(true);
    }
    let id = state.next_session_id;
    state.next_session_id += 1;
    state.session = Some(Session {
        id,
        options,
        started_at: SystemTime::now(),
        started: Instant::now(),
    });
    Ok(id)
}

/// Reads the allocation profile of the running session `id`.
pub fn read(state: &mut IsolateAddon, id: u32, reset_allocations: bool) -> Result<ReadProfile> {
    let session = running(state, id)?;
    // Released sets make room: the holders of long-lived contexts leave the overflow set.
    labels::rebind_overflowed(state)?;
    let raw = state.v8_mut().read_profile(reset_allocations)?;
    let external = model::ExternalInput::read(state);
    let mut read = model::build_profile(raw, session.options.sample_interval, external);
    read.encode_options = session.encode_options();
    Ok(read)
}

/// What a dump takes on the isolate thread: V8's profile copied into plain structs and the
/// external bytes; the model is built (and encoded) later, off the isolate thread.
pub struct RawRead {
    pub raw: ffi::RawProfile,
    pub external: model::ExternalInput,
    pub sample_interval: u64,
    pub encode_options: EncodeOptions,
}

/// Copies the allocation profile of the running session `id` for a dump.
pub fn read_raw(state: &mut IsolateAddon, id: u32) -> Result<RawRead> {
    let session = running(state, id)?;
    // Dumps report allocations since the session's start (or the last resetting read), as Go's
    // heap profiles report them since the program's start.
    let raw = state.v8_mut().read_profile(false)?;
    Ok(RawRead {
        raw,
        external: model::ExternalInput::read(state),
        sample_interval: session.options.sample_interval,
        encode_options: session.encode_options(),
    })
}

/// The running session (for the operations modules).
pub fn running_session(state: &IsolateAddon, id: u32) -> Result<Session> {
    running(state, id)
}

/// Reads the last profile of session `id`, then stops the profiler.
pub fn stop(state: &mut IsolateAddon, id: u32) -> Result<ReadProfile> {
    // A near-heap-limit dumper describes this session: it goes with it.
    if running(state, id).is_ok() {
        crate::near_heap_limit::disarm(state);
    }
    let profile = read(state, id, false);
    state.v8_mut().stop_sampling();
    state.session = None;
    // The allocation window's groups hold their label sets: they go with the session.
    crate::allocations::clear(&state.dead_samples);
    state.registry.prune();
    profile
}

fn running(state: &IsolateAddon, id: u32) -> Result<Session> {
    match state.session {
        Some(session) if session.id == id => Ok(session),
        _ => Err(Error::SessionNotRunning(id)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_match_the_docs() {
        let options = SessionOptions::default();
        options.validate().unwrap();
        assert_eq!(options.sample_interval, 512 * 1024);
        assert_eq!(options.stack_depth, 64);
        assert_eq!(options.max_label_sets, 10_000);
    }

    #[test]
    fn out_of_range_options_name_the_option() {
        let bad = |f: fn(&mut SessionOptions)| {
            let mut options = SessionOptions::default();
            f(&mut options);
            options.validate().unwrap_err().to_string()
        };
        assert!(bad(|o| o.sample_interval = 0).contains("sampleInterval"));
        assert!(bad(|o| o.stack_depth = 0).contains("stackDepth"));
        assert!(bad(|o| o.stack_depth = 1025).contains("stackDepth"));
        assert!(bad(|o| o.max_label_sets = 0).contains("maxLabelSets"));
    }
}
