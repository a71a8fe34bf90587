//! The near-heap-limit profile: cpp/near_heap_limit.cc registers V8's near-heap-limit callback and,
//! when V8 calls it, copies the allocation profile and runs the armed `NearHeapLimitHook`, which
//! calls [`write_dump`] with this session's [`HeapLimitDumper`]. `write_dump` runs inside that
//! callback on the isolate thread: it builds the model, encodes the pprof and the summary and writes
//! both files with `std::fs` (native memory and system calls only; nothing touches the JS heap or
//! calls into JS).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use heap_labels_core::pprof::{self, EncodeOptions};
use heap_labels_core::summary::{self, SummaryInfo};
use heap_labels_core::{dump, ExternalCounters, LabelRegistry};
use napi::Env;
use napi_derive::napi;

use crate::bridge::{ffi, NearHeapLimitHook};
use crate::dump::{next_sequence, now_nanos};
use crate::error::{self, Error};
use crate::model;
use crate::session;
use crate::state::isolate_state;

/// Everything a near-heap-limit dump needs, fixed when it is armed (for one session).
pub struct HeapLimitDumper {
    dir: PathBuf,
    keep: usize,
    labeled: bool,
    sample_interval: u64,
    started_at: SystemTime,
    started: Instant,
    registry: Arc<LabelRegistry>,
    counters: &'static ExternalCounters,
}

/// Options of `armNearHeapLimit` (validated by lib/).
#[napi(object)]
pub struct NativeNearHeapLimitOptions {
    pub dir: String,
    /// Dumps to write at most (>= 1).
    pub count: u32,
    /// Dumps kept in `dir`; 0 keeps all.
    pub keep: u32,
    /// Whether samples can carry labels here (the summary says so when not).
    pub labeled: bool,
}

/// Arms the near-heap-limit dump for the running session `session` (replacing an armed one).
#[napi]
pub fn arm_near_heap_limit(
    env: Env,
    session: u32,
    options: NativeNearHeapLimitOptions,
) -> napi::Result<()> {
    let run = || -> error::Result<()> {
        let state = isolate_state(&env)?;
        let running = session::running_session(state, session)?;
        if options.count == 0 {
            return Err(Error::InvalidOption {
                name: "nearHeapLimit",
                reason: "must be at least 1 to arm".into(),
            });
        }
        state.disarm_near_heap_limit();
        let dumper = HeapLimitDumper {
            dir: PathBuf::from(options.dir),
            keep: options.keep as usize,
            labeled: options.labeled,
            sample_interval: running.options.sample_interval,
            started_at: running.window_started_at,
            started: running.window_started,
            registry: Arc::clone(&state.registry),
            counters: state.counters,
        };
        let hook = Box::new(NearHeapLimitHook(Box::new(move |raw, external_memory| {
            write_dump(&dumper, raw, external_memory)
        })));
        let address = hook.address();
        state.ops.near_heap_limit = Some(hook);
        state.v8_mut().arm_near_heap_limit(address, options.count);
        Ok(())
    };
    run().map_err(|e| e.throw(&env))
}

/// Disarms the near-heap-limit dump, if one is armed.
#[napi]
pub fn disarm_near_heap_limit(env: Env) -> napi::Result<()> {
    let run = || -> error::Result<()> {
        isolate_state(&env)?.disarm_near_heap_limit();
        Ok(())
    };
    run().map_err(|e| e.throw(&env))
}

/// The dump, from the near-heap-limit callback. Reports on stderr what it wrote (or why it could
/// not): the process is about to die and this line is the operator's pointer to the file.
fn write_dump(dumper: &HeapLimitDumper, raw: ffi::RawProfile, external_memory: u64) {
    let external =
        model::ExternalInput::from_parts(&dumper.registry, dumper.counters, || external_memory);
    let built = model::build_profile(raw, dumper.sample_interval, external);
    let time_nanos = now_nanos();
    let since_epoch = dumper
        .started_at
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let encode = EncodeOptions {
        time_nanos: i64::try_from(since_epoch.as_nanos()).unwrap_or(0),
        duration_nanos: i64::try_from(dumper.started.elapsed().as_nanos()).unwrap_or(0),
        ..EncodeOptions::default()
    };
    let info = SummaryInfo {
        reason: "near-heap-limit",
        pid: std::process::id(),
        time_nanos,
        labeled: dumper.labeled,
    };
    let bytes = pprof::encode_with(&built.profile, &encode);
    let text = summary::render(&built.profile, &info);
    drop(built);
    let stem = dump::stem(time_nanos, info.pid, next_sequence(), Some("oom"));
    match dump::write(&dumper.dir, &stem, &bytes, &text) {
        Ok(paths) => {
            if dumper.keep > 0 {
                let _ = dump::prune(&dumper.dir, dumper.keep);
            }
            eprintln!(
                "heap-labels: near the heap limit: wrote {} and {}",
                paths.pprof.display(),
                paths.summary.display()
            );
        }
        Err(err) => eprintln!(
            "heap-labels: near the heap limit: could not write the profile into {}: {err}",
            dumper.dir.display()
        ),
    }
}
