//! The addon's one error enum and its mapping to JS errors at the napi boundary.
//!
//! Label problems become `TypeError`/`RangeError` naming the key; lifecycle problems become `Error`.
//! lib/ validates first, with the same messages (core's `LabelError`); these are the native side's
//! last line.

use heap_labels_core::{ErrorClass, LabelError};
use napi::{Env, Status};

/// Everything the native side can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A label set broke the documented limits.
    #[error("heap-labels: {0}")]
    Label(#[from] LabelError),
    /// Label pairs arrived in a string that is not a canonical key of lib/labels.js.
    #[error("heap-labels: malformed label pairs at UTF-16 offset {at}")]
    MalformedPairs { at: usize },
    /// An option of `startHeapProfile` is out of range.
    #[error("heap-labels: option {name} {reason}")]
    InvalidOption { name: &'static str, reason: String },
    /// V8 refused to start: it keeps one sampling heap profiler per isolate.
    #[error(
        "heap-labels: a sampling heap profiler is already running in this isolate \
         (another heap-labels session, the inspector, or --heap-prof)"
    )]
    ProfilerBusy,
    /// The session a handle refers to is no longer the running one.
    #[error("heap-labels: heap profile session {0} is not running")]
    SessionNotRunning(u32),
    /// V8's sampler stopped underneath the session (the inspector's `HeapProfiler.stopSampling`).
    #[error(
        "heap-labels: heap profile session {0} ended: V8's sampling heap profiler was stopped \
         outside heap-labels (e.g. the inspector's HeapProfiler.stopSampling)"
    )]
    SessionStoppedElsewhere(u32),
    /// The profile read was disposed; its data is gone.
    #[error("heap-labels: this AllocationProfile was disposed; read the profile again")]
    ProfileDisposed,
    /// The runtime lacks the patched-V8 API a feature needs (the reason names the version).
    #[error("heap-labels: {0}")]
    Unsupported(String),
    /// V8 holds heap snapshots already: a second one at the same time would double the memory.
    /// `op` names the operation (`retainers`, `writeHeapSnapshot`).
    #[error(
        "heap-labels: {op}: another heap snapshot is in progress (V8 holds {held}: \
         v8.getHeapSnapshot() still streaming, or the inspector's); try again when it is done"
    )]
    SnapshotBusy { op: &'static str, held: i32 },
    /// Too little memory for a heap snapshot (see `retainers::check_room`).
    #[error("heap-labels: {op}: {reason}")]
    NoRoom { op: &'static str, reason: String },
    /// A V8-side operation failed (reported by cpp/).
    #[error("heap-labels: {0}")]
    Native(String),
    /// A napi call failed.
    #[error("heap-labels: {0}")]
    Napi(#[from] napi::Error),
}

/// The JS error class an [`Error`] maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsErrorClass {
    Error,
    TypeError,
    RangeError,
}

impl Error {
    /// Which JS error class this error becomes.
    pub fn js_class(&self) -> JsErrorClass {
        match self {
            // The core owns the label rules' classes.
            Error::Label(e) => match e.rule().error_class() {
                ErrorClass::TypeError => JsErrorClass::TypeError,
                ErrorClass::RangeError => JsErrorClass::RangeError,
            },
            Error::InvalidOption { .. } => JsErrorClass::RangeError,
            Error::MalformedPairs { .. } => JsErrorClass::TypeError,
            Error::ProfilerBusy
            | Error::Unsupported(_)
            | Error::SnapshotBusy { .. }
            | Error::NoRoom { .. }
            | Error::SessionNotRunning(_)
            | Error::SessionStoppedElsewhere(_)
            | Error::ProfileDisposed
            | Error::Native(_)
            | Error::Napi(_) => JsErrorClass::Error,
        }
    }

    /// The `code` of the JS error: Node.js' own where Node.js has one for the case (so that code
    /// written for node:v8 recognizes it), heap-labels' otherwise.
    pub fn code(&self) -> &'static str {
        match self {
            Error::ProfilerBusy => "ERR_HEAP_PROFILE_HAVE_BEEN_STARTED",
            Error::SessionNotRunning(_) | Error::SessionStoppedElsewhere(_) => {
                "ERR_HEAP_LABELS_SESSION_NOT_RUNNING"
            }
            Error::InvalidOption { .. } => "ERR_OUT_OF_RANGE",
            Error::Unsupported(_) => "ERR_HEAP_LABELS_UNSUPPORTED",
            Error::SnapshotBusy { .. } => "ERR_HEAP_LABELS_SNAPSHOT_BUSY",
            Error::NoRoom { .. } => "ERR_HEAP_LABELS_NO_ROOM",
            _ => "ERR_HEAP_LABELS",
        }
    }

    /// Throws this error into `env` as its JS class and returns the napi error that tells napi-rs
    /// the exception is already pending.
    pub fn throw(self, env: &Env) -> napi::Error {
        let message = self.to_string();
        let code = Some(self.code());
        let thrown = match self.js_class() {
            JsErrorClass::TypeError => env.throw_type_error(&message, code),
            JsErrorClass::RangeError => env.throw_range_error(&message, code),
            JsErrorClass::Error => env.throw_error(&message, code),
        };
        match thrown {
            Ok(()) => napi::Error::new(Status::PendingException, message),
            Err(err) => err,
        }
    }
}

impl From<cxx::Exception> for Error {
    fn from(exception: cxx::Exception) -> Self {
        Error::Native(exception.what().to_owned())
    }
}

/// `Result` with the addon's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_errors_name_the_key_and_pick_the_class() {
        let too_long = Error::from(LabelError::ValueTooLong {
            key: "route".into(),
            len: 2000,
            max: 1024,
        });
        assert_eq!(too_long.js_class(), JsErrorClass::RangeError);
        assert!(too_long.to_string().contains("\"route\""));
        let dup = Error::from(LabelError::DuplicateKey { key: "k".into() });
        assert_eq!(dup.js_class(), JsErrorClass::TypeError);
    }

    #[test]
    fn lifecycle_errors_are_plain_errors() {
        assert_eq!(Error::ProfilerBusy.js_class(), JsErrorClass::Error);
        assert!(Error::ProfilerBusy.to_string().contains("--heap-prof"));
        assert_eq!(Error::SessionNotRunning(3).js_class(), JsErrorClass::Error);
    }
}
