//! Dumps, served and pushed profiles: the profile is copied from V8 on the isolate thread (the
//! only part that must run there), then the model is built, encoded (pprof, OTLP, text summary)
//! and written on a libuv worker thread, so the event loop pauses only for the copy.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use heap_labels_core::summary::{self, SummaryInfo};
use heap_labels_core::{dump, otlp, pprof};
use napi::bindgen_prelude::{AsyncTask, Buffer};
use napi::{Env, Task};
use napi_derive::napi;

use crate::bridge::ffi::AllocationsRead;
use crate::error::{self, Error};
use crate::model;
use crate::otlp::NativeOtlpOptions;
use crate::session::{self, RawRead};
use crate::state::isolate_state;

/// Per-process dump counter: the `<seq>` of the file names (two dumps in one millisecond).
static SEQUENCE: AtomicU32 = AtomicU32::new(1);

/// The next dump sequence number.
pub fn next_sequence() -> u32 {
    SEQUENCE.fetch_add(1, Ordering::Relaxed)
}

/// Nanoseconds since the Unix epoch now.
pub fn now_nanos() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_nanos()).unwrap_or(i64::MAX)
}

/// Options of `dumpProfile` (validated by lib/).
#[napi(object)]
pub struct NativeDumpOptions {
    /// Why (`signal SIGUSR2`, `http`, `api`): the summary's header.
    pub reason: String,
    /// Whether samples can carry labels here (the summary says so when not).
    pub labeled: bool,
    /// Write files into this directory; absent: return the encodings instead.
    pub dir: Option<String>,
    /// Dumps kept in `dir` (older ones are removed); 0 keeps all.
    pub keep: Option<u32>,
    /// In-memory results: `pprof`, `summary` or both (default both).
    pub pprof: Option<bool>,
    pub summary: Option<bool>,
    /// Text appended to the summary, file or in memory (lib/'s growth-watch section).
    pub summary_appendix: Option<String>,
    /// End the allocation window with this read (pushes).
    pub reset_allocations: Option<bool>,
    /// Take the allocated figures since the session started instead of the window's (the agent's
    /// endpoint and dumps, Go's semantics); with `reset_allocations` the window restarts too.
    pub allocations_since_start: Option<bool>,
    /// In memory: also the allocs pprof, Go's allocs profile (the same data, `alloc_space` the
    /// default sample type when the profile has allocation figures).
    pub allocs: Option<bool>,
    /// In memory: also the OTLP `ProfilesData` of the same read, gzip-compressed (the body of an
    /// OTLP/HTTP push with `Content-Encoding: gzip`), with this resource.
    pub otlp: Option<NativeOtlpOptions>,
}

/// What a dump produced.
#[napi(object)]
pub struct NativeDumpResult {
    pub pprof_path: Option<String>,
    pub summary_path: Option<String>,
    /// Files removed by retention.
    pub removed: Vec<String>,
    pub pprof: Option<Buffer>,
    pub summary: Option<String>,
    /// gzip-compressed OTLP `ProfilesData` (asked with `otlp`).
    pub otlp: Option<Buffer>,
    /// The allocs pprof (asked with `allocs`).
    pub allocs: Option<Buffer>,
    /// Live samples in the profile.
    pub samples: u32,
}

enum Target {
    Files {
        dir: PathBuf,
        keep: usize,
    },
    Memory {
        pprof: bool,
        summary: bool,
        allocs: bool,
        otlp: Option<otlp::OtlpOptions>,
    },
}

/// The off-thread part of a dump.
pub struct DumpTask {
    read: Option<RawRead>,
    target: Target,
    reason: String,
    labeled: bool,
    time_nanos: i64,
    summary_appendix: String,
}

/// The result of `DumpTask::compute`, before it becomes JS values.
pub struct DumpOutput {
    paths: Option<dump::DumpPaths>,
    removed: Vec<PathBuf>,
    pprof: Option<Vec<u8>>,
    summary: Option<String>,
    otlp: Option<Vec<u8>>,
    allocs: Option<Vec<u8>>,
    samples: usize,
}

impl Task for DumpTask {
    type Output = DumpOutput;
    type JsValue = NativeDumpResult;

    fn compute(&mut self) -> napi::Result<DumpOutput> {
        let read = self
            .read
            .take()
            .ok_or_else(|| napi::Error::from_reason("heap-labels: dump computed twice"))?;
        let built = model::build_profile(read.raw, read.sample_interval, read.external);
        let profile = &built.profile;
        let info = SummaryInfo {
            reason: &self.reason,
            pid: std::process::id(),
            time_nanos: self.time_nanos,
            labeled: self.labeled,
        };
        let samples = profile.samples.len();
        let summary_text = || summary::render(profile, &info) + &self.summary_appendix;
        match &self.target {
            Target::Files { dir, keep } => {
                let pprof = pprof::encode_with(profile, &read.encode_options);
                let text = summary_text();
                let stem = dump::stem(self.time_nanos, info.pid, next_sequence(), None);
                let paths = dump::write(dir, &stem, &pprof, &text).map_err(|e| {
                    napi::Error::from_reason(format!(
                        "heap-labels: could not write the dump into {}: {e}",
                        dir.display()
                    ))
                })?;
                let removed = if *keep > 0 {
                    dump::prune(dir, *keep).unwrap_or_default()
                } else {
                    Vec::new()
                };
                Ok(DumpOutput {
                    paths: Some(paths),
                    removed,
                    pprof: None,
                    summary: None,
                    otlp: None,
                    allocs: None,
                    samples,
                })
            }
            Target::Memory {
                pprof: want_pprof,
                summary: want_summary,
                allocs: want_allocs,
                otlp: otlp_options,
            } => {
                let allocs_options = pprof::EncodeOptions {
                    alloc_space_default: true,
                    ..read.encode_options
                };
                let otlp = match otlp_options {
                    Some(options) => Some(otlp::gzip(
                        &otlp::encode(profile, &read.encode_options, options)
                            .map_err(|e| napi::Error::from_reason(format!("heap-labels: {e}")))?,
                    )),
                    None => None,
                };
                Ok(DumpOutput {
                    paths: None,
                    removed: Vec::new(),
                    pprof: want_pprof.then(|| pprof::encode_with(profile, &read.encode_options)),
                    summary: want_summary.then(summary_text),
                    otlp,
                    allocs: want_allocs.then(|| pprof::encode_with(profile, &allocs_options)),
                    samples,
                })
            }
        }
    }

    fn resolve(&mut self, _env: Env, output: DumpOutput) -> napi::Result<NativeDumpResult> {
        let text = |p: PathBuf| p.to_string_lossy().into_owned();
        Ok(NativeDumpResult {
            pprof_path: output.paths.as_ref().map(|p| text(p.pprof.clone())),
            summary_path: output.paths.map(|p| text(p.summary)),
            removed: output.removed.into_iter().map(text).collect(),
            pprof: output.pprof.map(Buffer::from),
            summary: output.summary,
            otlp: output.otlp.map(Buffer::from),
            allocs: output.allocs.map(Buffer::from),
            samples: u32::try_from(output.samples).unwrap_or(u32::MAX),
        })
    }
}

/// Copies the running session's profile now (the event-loop pause), then encodes and writes it on a
/// libuv worker thread.
#[napi(ts_return_type = "Promise<NativeDumpResult>")]
pub fn dump_profile(
    env: Env,
    session: u32,
    options: NativeDumpOptions,
) -> napi::Result<AsyncTask<DumpTask>> {
    let run = || -> error::Result<AsyncTask<DumpTask>> {
        let state = isolate_state(&env)?;
        let target = match options.dir {
            Some(dir) => Target::Files {
                dir: PathBuf::from(dir),
                keep: options.keep.unwrap_or(0) as usize,
            },
            None => Target::Memory {
                pprof: options.pprof.unwrap_or(true),
                summary: options.summary.unwrap_or(true),
                allocs: options.allocs == Some(true),
                otlp: options.otlp.as_ref().map(NativeOtlpOptions::to_core),
            },
        };
        let time_nanos = now_nanos();
        let read = match (options.reset_allocations, options.allocations_since_start) {
            (Some(true), Some(true)) => AllocationsRead::SinceStartRestartWindow,
            (Some(true), _) => AllocationsRead::RestartWindow,
            (_, Some(true)) => AllocationsRead::SinceStart,
            _ => AllocationsRead::Window,
        };
        let read = session::read_raw(state, session, read)?;
        Ok(AsyncTask::new(DumpTask {
            read: Some(read),
            target,
            reason: options.reason,
            labeled: options.labeled,
            time_nanos,
            summary_appendix: options.summary_appendix.unwrap_or_default(),
        }))
    };
    run().map_err(|e| e.throw(&env))
}

/// The difference of two gzip'd pprof profiles of one session (`?seconds=N`), computed on a libuv
/// worker thread (`core::pprof::delta`).
pub struct DeltaTask {
    base: Buffer,
    current: Buffer,
}

impl Task for DeltaTask {
    type Output = Vec<u8>;
    type JsValue = Buffer;

    fn compute(&mut self) -> napi::Result<Vec<u8>> {
        pprof::delta::delta(&self.base, &self.current)
            .map_err(|e| napi::Error::from_reason(format!("heap-labels: {e}")))
    }

    fn resolve(&mut self, _env: Env, output: Vec<u8>) -> napi::Result<Buffer> {
        Ok(output.into())
    }
}

/// `current - base`, two gzip'd pprof profiles of one session (samples matched by stack and labels,
/// as `go tool pprof -base` matches them), as a gzip'd pprof; the work runs off the main thread.
#[napi(ts_return_type = "Promise<Buffer>")]
pub fn pprof_delta(base: Buffer, current: Buffer) -> AsyncTask<DeltaTask> {
    AsyncTask::new(DeltaTask { base, current })
}

/// A full garbage collection (for `?gc=1`), without `--expose-gc`.
#[napi]
pub fn collect_garbage(env: Env) -> napi::Result<()> {
    let run = || -> error::Result<()> {
        isolate_state(&env)?.v8_mut().collect_garbage();
        Ok(())
    };
    run().map_err(|e: Error| e.throw(&env))
}
