//! The lifecycle of a heap profile session (start, read, stop): one per isolate, because V8 keeps
//! one sampling heap profiler per isolate. The session's facts (`Session`) are part of the
//! isolate state.

use std::time::{Instant, SystemTime};

use heap_labels_core::pprof::EncodeOptions;
use heap_labels_core::GroupRead;

use crate::bridge::ffi;
use crate::error::{Error, Result};
use crate::labels;
use crate::model::{self, ReadProfile};
use crate::state::{IsolateAddon, Session, SessionOptions};

/// Starts the isolate's sampling heap profiler and returns the new session's id. `group_by`: the
/// label keys of the session's group counters (validated by `js_types`), if any.
///
/// A session whose sampler was stopped outside heap-labels (the inspector's
/// `HeapProfiler.stopSampling`) is superseded: V8 accepts the new start, and the old session ends
/// here. A session that still samples makes this fail with `ProfilerBusy`.
pub fn start(
    state: &mut IsolateAddon,
    options: SessionOptions,
    group_by: Option<Vec<String>>,
) -> Result<u32> {
    let superseding = state.session.is_some();
    if superseding && !state.v8.sampling() {
        // A read already found the sampler stopped: the session is over.
        end(state);
    }
    let superseding = state.session.is_some();
    if !superseding {
        state.registry.set_max_sets(options.max_label_sets);
        // A higher cap makes room: holders that got the overflow set get their own sets back now.
        labels::rebind_overflowed(state)?;
        // Before V8 can report the first death of the new session.
        crate::allocations::restart(&state.dead_samples, options.sample_interval);
        start_grouping(state, group_by.clone(), options.max_groups);
    }
    // On the patched runtime this starts a labeled session and installs the counting allocator.
    if !state.v8_mut().start_sampling(&options.to_ffi()) {
        if !superseding {
            state.registry.groups().stop();
        }
        return Err(Error::ProfilerBusy);
    }
    if superseding {
        // V8 was not sampling any more: the old session ended underneath its handle. What the
        // steps above do for a new session is done now, before the first sample is read.
        end(state);
        state.registry.set_max_sets(options.max_label_sets);
        labels::rebind_overflowed(state)?;
        crate::allocations::restart(&state.dead_samples, options.sample_interval);
        start_grouping(state, group_by, options.max_groups);
    }
    // Per-label external bytes are reported from the first tracked session on: blocks charged
    // then are subtracted when freed, also after the session.
    if state.v8.external_tracking() {
        state.counters.mark_counting_per_set();
    }
    let id = state.next_session_id;
    state.next_session_id += 1;
    state.session = Some(Session {
        id,
        options,
        window_started_at: SystemTime::now(),
        window_started: Instant::now(),
        started_at: SystemTime::now(),
        started: Instant::now(),
    });
    Ok(id)
}

/// Starts the group counters of a session with `group_by`, putting every set (and unlabeled memory)
/// in its group before the first sample.
fn start_grouping(state: &mut IsolateAddon, group_by: Option<Vec<String>>, max_groups: usize) {
    let Some(keys) = group_by else {
        state.registry.groups().stop();
        return;
    };
    state
        .registry
        .start_grouping(keys, max_groups, &[&state.ops.unlabeled]);
    state.counters.assign_unlabeled_group();
}

/// Ends the session's native state (after V8 stopped sampling, by us or by somebody else).
fn end(state: &mut IsolateAddon) {
    state.session = None;
    state.registry.groups().stop();
    // The allocation window's groups hold their label sets: they go with the session.
    crate::allocations::clear(&state.dead_samples);
}

/// V8's profile of the running session; a session whose sampler was stopped elsewhere ends.
fn read_v8(
    state: &mut IsolateAddon,
    id: u32,
    read: ffi::AllocationsRead,
) -> Result<ffi::RawProfile> {
    let read = state.v8_mut().read_profile(read);
    ended_if_stopped_elsewhere(state, id, read)
}

/// A native read's result. A read that failed because the sampler was stopped elsewhere (the
/// inspector's HeapProfiler.stopSampling) ends the session.
fn ended_if_stopped_elsewhere<T, E: Into<Error>>(
    state: &mut IsolateAddon,
    id: u32,
    read: std::result::Result<T, E>,
) -> Result<T> {
    match read {
        Ok(raw) => Ok(raw),
        Err(_) if !state.v8.sampling() => {
            state.disarm_near_heap_limit();
            end(state);
            Err(Error::SessionStoppedElsewhere(id))
        }
        Err(e) => Err(e.into()),
    }
}

/// Reads the allocation profile of the running session `id`, with the allocated figures `read`
/// asks for.
pub fn read(state: &mut IsolateAddon, id: u32, read: ffi::AllocationsRead) -> Result<ReadProfile> {
    let session = running(state, id)?;
    // Released sets make room: the holders of long-lived contexts leave the overflow set.
    labels::rebind_overflowed(state)?;
    let raw = read_v8(state, id, read)?;
    let external = state.external_input();
    let mut profile = model::build_profile(raw, session.options.sample_interval, external);
    profile.encode_options = encode_options(&session, read);
    if restarts_window(read) {
        start_window(state);
    }
    Ok(profile)
}

/// Whether `read` restarts the allocation window.
fn restarts_window(read: ffi::AllocationsRead) -> bool {
    matches!(
        read,
        ffi::AllocationsRead::RestartWindow | ffi::AllocationsRead::SinceStartRestartWindow
    )
}

/// The header times of a read: the window's, or the session's for a read since the start.
fn encode_options(session: &Session, read: ffi::AllocationsRead) -> EncodeOptions {
    if matches!(
        read,
        ffi::AllocationsRead::SinceStart | ffi::AllocationsRead::SinceStartRestartWindow
    ) {
        session.since_start_encode_options()
    } else {
        session.encode_options()
    }
}

/// A new allocation window starts now (after a read that reset it).
fn start_window(state: &mut IsolateAddon) {
    if let Some(session) = state.session.as_mut() {
        session.window_started_at = SystemTime::now();
        session.window_started = Instant::now();
    }
}

/// What a dump takes on the isolate thread: V8's profile copied into plain structs and the
/// external bytes; the model is built (and encoded) later, off the isolate thread.
pub struct RawRead {
    pub raw: ffi::RawProfile,
    pub external: model::ExternalInput,
    pub sample_interval: u64,
    pub encode_options: EncodeOptions,
}

/// Copies the allocation profile of the running session `id` for a dump, a served profile or a
/// push, with the allocated figures `read` asks for: pushes end the allocation window with their
/// read (`RestartWindow`), the agent's endpoint and dumps read since the start (`SinceStart`).
pub fn read_raw(state: &mut IsolateAddon, id: u32, read: ffi::AllocationsRead) -> Result<RawRead> {
    let session = running(state, id)?;
    let raw = read_v8(state, id, read)?;
    let copy = RawRead {
        raw,
        external: state.external_input(),
        sample_interval: session.options.sample_interval,
        encode_options: encode_options(&session, read),
    };
    if restarts_window(read) {
        start_window(state);
    }
    Ok(copy)
}

/// A heap snapshot joined to the samples of the running session `id` (`ffi::read_retainers`); a
/// session whose sampler was stopped elsewhere ends, as in a read.
pub fn read_retainers(state: &mut IsolateAddon, id: u32) -> Result<ffi::RawRetainers> {
    running(state, id)?;
    let read = state.v8_mut().read_retainers();
    ended_if_stopped_elsewhere(state, id, read)
}

/// A heap snapshot written to `path` (`ffi::write_snapshot_file`); with `labels` joined to the
/// samples of the running session `id`, which ends, as in a read, when its sampler was stopped
/// elsewhere. Without labels no session is needed.
pub fn write_snapshot_file(
    state: &mut IsolateAddon,
    id: u32,
    labels: bool,
    path: &str,
) -> Result<ffi::RawSnapshotFile> {
    if !labels {
        return Ok(state.v8_mut().write_snapshot_file(false, path)?);
    }
    running(state, id)?;
    let written = state.v8_mut().write_snapshot_file(true, path);
    ended_if_stopped_elsewhere(state, id, written)
}

/// The running session (for the operations modules).
pub fn running_session(state: &IsolateAddon, id: u32) -> Result<Session> {
    running(state, id)
}

/// Reads the last profile of session `id`, then stops the profiler.
pub fn stop(state: &mut IsolateAddon, id: u32) -> Result<ReadProfile> {
    // A near-heap-limit dump describes this session: it goes with it.
    if running(state, id).is_ok() {
        state.disarm_near_heap_limit();
    }
    let profile = read(state, id, ffi::AllocationsRead::Window);
    if running(state, id).is_ok() {
        state.v8_mut().stop_sampling();
        end(state);
    }
    state.registry.prune();
    profile
}

/// The group counters of the running session `id` (`getHeapStats()`; 0: whichever session runs,
/// for the metrics adapters): rows into `out`; `None` when the session has no groupBy (or, for 0,
/// none runs), `Err(rows)` when `out` is too short.
pub fn group_stats(
    state: &mut IsolateAddon,
    id: u32,
    advance_peak_window: bool,
    out: &mut [i64],
) -> Result<std::result::Result<Option<GroupRead>, usize>> {
    let id = match (id, state.session) {
        (0, Some(session)) => session.id,
        (0, None) => return Ok(Ok(None)),
        (id, _) => id,
    };
    let session = running(state, id)?;
    if !state.v8.sampling() {
        end(state);
        return Err(Error::SessionStoppedElsewhere(id));
    }
    if !session.options.grouped {
        return Ok(Ok(None));
    }
    Ok(state
        .registry
        .groups()
        .read(advance_peak_window, session.options.sample_interval, out))
}

fn running(state: &IsolateAddon, id: u32) -> Result<Session> {
    match state.session {
        Some(session) if session.id == id => Ok(session),
        _ => Err(Error::SessionNotRunning(id)),
    }
}
