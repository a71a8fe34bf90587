//! Heap snapshot files (`writeHeapSnapshot(session, path, labels, key)`): one call on the isolate
//! thread that refuses when a snapshot would not fit or another one is held (as `retainers`),
//! writes V8's serialization of a snapshot to a temporary file in the target's directory
//! (cpp/labeled_snapshot.cc), and with labels rewrites it with one node per label group
//! (`heap_labels_core::labeled_snapshot`: two streamed passes over the file); the result is renamed
//! into place, so the target is a whole snapshot or absent. The app is paused for the whole call;
//! the disk needs the file twice for its duration (with labels).

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use heap_labels_core::labeled_snapshot::{self, FileFacts};
use napi::Env;
use napi_derive::napi;

use crate::bridge::ffi;
use crate::dump::{next_sequence, now_nanos};
use crate::error::{self, Error};
use crate::js_profile::NativeLabelSet;
use crate::model::{self, ExternalInput};
use crate::retainers::check_snapshot_fits;
use crate::session;
use crate::state::isolate_state;

const OP: &str = "writeHeapSnapshot";

/// The answer: the facts as JSON (groups name their label set by id, `labelSet`), and the pairs of
/// those sets.
#[napi(object)]
pub struct NativeSnapshotFile {
    pub json: String,
    pub label_sets: Vec<NativeLabelSet>,
}

/// Signature: `(session: number, path: string | undefined, labels: boolean, key?: string) =>
/// NativeSnapshotFile` - writes a heap snapshot to `path` (default: `heap-labels-<time>-<pid>-<seq>
/// .heapsnapshot` in the working directory); with `labels`, with a node per label group of the
/// running session `session` (by full set, or by `key`'s value).
#[napi]
pub fn write_heap_snapshot(
    env: Env,
    session: u32,
    path: Option<String>,
    labels: bool,
    key: Option<String>,
) -> napi::Result<NativeSnapshotFile> {
    let run = || -> error::Result<NativeSnapshotFile> {
        let started = Instant::now();
        let state = isolate_state(&env)?;
        let sample_interval = if labels {
            let status = ffi::patched_api_status();
            if !status.retainers {
                return Err(Error::Unsupported(format!(
                    "{OP}: labels: {}",
                    status.retainers_reason
                )));
            }
            Some(
                session::running_session(state, session)?
                    .options
                    .sample_interval,
            )
        } else {
            None
        };
        check_snapshot_fits(state, OP, false)?;
        let target = match path {
            Some(path) => PathBuf::from(path),
            None => default_path(),
        };
        let temporaries = Temporaries::for_target(&target)?;
        let plain = temporaries.plain.to_string_lossy().into_owned();
        let raw = session::write_snapshot_file(state, session, labels, &plain)?;
        let mut facts = FileFacts {
            path: target.to_string_lossy().into_owned(),
            bytes: 0,
            nodes: raw.snapshot_nodes,
            snapshot_ms: raw.snapshot_ms,
            serialize_ms: raw.serialize_ms,
            label_ms: 0.0,
            pause_ms: 0.0,
            key: None,
            groups: None,
        };
        let mut label_sets = Vec::new();
        let written = match sample_interval {
            None => &temporaries.plain,
            Some(interval) => {
                let rewrite = Instant::now();
                let read = model::build_profile(raw.profile, interval, ExternalInput::default());
                let (nodes, groups) = labeled_snapshot::label_nodes(
                    &read.profile,
                    &raw.sample_nodes,
                    raw.snapshot_nodes,
                    key.as_deref(),
                );
                add_labels(&temporaries.plain, &temporaries.labeled, &nodes)?;
                label_sets = groups
                    .iter()
                    .filter_map(|group| match &group.labels {
                        heap_labels_core::GroupLabels::Set(set) => Some(NativeLabelSet::of(set)),
                        _ => None,
                    })
                    .collect();
                facts.key = key;
                facts.groups = Some(groups);
                facts.label_ms = rewrite.elapsed().as_secs_f64() * 1000.0;
                &temporaries.labeled
            }
        };
        fs::rename(written, &target).map_err(|e| {
            Error::Native(format!("{OP}: cannot rename to {}: {e}", target.display()))
        })?;
        facts.bytes = fs::metadata(&target).map(|m| m.len()).unwrap_or(0);
        facts.pause_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(NativeSnapshotFile {
            json: facts.to_json(),
            label_sets,
        })
    };
    run().map_err(|e| e.throw(&env))
}

/// `heap-labels-<time>-<pid>-<seq>.heapsnapshot` in the working directory (the dumps' naming).
fn default_path() -> PathBuf {
    let stem = heap_labels_core::dump::stem(now_nanos(), std::process::id(), next_sequence(), None);
    PathBuf::from(format!("{stem}.heapsnapshot"))
}

/// The hidden temporary files beside the target (`.<name>.<pid>.plain.tmp`, `.<name>.<pid>.tmp`),
/// removed when dropped (after a rename, the removal finds nothing).
struct Temporaries {
    plain: PathBuf,
    labeled: PathBuf,
}

impl Temporaries {
    fn for_target(target: &Path) -> error::Result<Self> {
        let Some(name) = target.file_name() else {
            return Err(Error::Native(format!(
                "{OP}: {} names no file",
                target.display()
            )));
        };
        let name = name.to_string_lossy();
        let dir = target.parent().unwrap_or(Path::new(""));
        let pid = std::process::id();
        Ok(Temporaries {
            plain: dir.join(format!(".{name}.{pid}.plain.tmp")),
            labeled: dir.join(format!(".{name}.{pid}.tmp")),
        })
    }
}

impl Drop for Temporaries {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.plain);
        let _ = fs::remove_file(&self.labeled);
    }
}

/// Both passes of the core's rewrite, from the plain file to the labeled one.
fn add_labels(
    plain: &Path,
    labeled: &Path,
    nodes: &[labeled_snapshot::LabelNode],
) -> error::Result<()> {
    let failed = |e: labeled_snapshot::SnapshotError| Error::Native(format!("{OP}: {e}"));
    let open = |path: &Path| {
        File::open(path).map_err(|e| Error::Native(format!("{OP}: {}: {e}", path.display())))
    };
    let layout = labeled_snapshot::scan(open(plain)?).map_err(failed)?;
    let out = File::create(labeled)
        .map_err(|e| Error::Native(format!("{OP}: cannot create {}: {e}", labeled.display())))?;
    let mut out = BufWriter::with_capacity(1 << 20, out);
    labeled_snapshot::rewrite(open(plain)?, &layout, nodes, &mut out).map_err(failed)?;
    out.flush()
        .map_err(|e| Error::Native(format!("{OP}: cannot write {}: {e}", labeled.display())))?;
    Ok(())
}
