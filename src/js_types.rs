//! Plain objects exchanged with lib/ (besides the profile, see `js_profile`).

use napi_derive::napi;

use crate::error::{Error, Result};
use crate::session::SessionOptions;

/// Options of `startProfile`, already validated and defaulted by lib/.
#[napi(object)]
pub struct NativeStartOptions {
    pub sample_interval: f64,
    pub stack_depth: u32,
    pub include_objects_collected_by_major_gc: bool,
    pub include_objects_collected_by_minor_gc: bool,
    pub track_allocations: bool,
    pub max_label_sets: u32,
}

impl TryFrom<NativeStartOptions> for SessionOptions {
    type Error = Error;

    fn try_from(options: NativeStartOptions) -> Result<Self> {
        let interval = options.sample_interval;
        if !(interval.fract() == 0.0 && interval >= 1.0 && interval <= f64::from(u32::MAX)) {
            return Err(Error::InvalidOption {
                name: "sampleInterval",
                reason: format!("must be an integer in 1..={}, got {interval}", u32::MAX),
            });
        }
        Ok(SessionOptions {
            sample_interval: interval as u64,
            stack_depth: options.stack_depth,
            include_major_gc: options.include_objects_collected_by_major_gc,
            include_minor_gc: options.include_objects_collected_by_minor_gc,
            track_allocations: options.track_allocations,
            max_label_sets: options.max_label_sets as usize,
        })
    }
}

/// What the native side can do in this process (lib/ adds the AsyncContextFrame probe).
#[napi(object)]
pub struct NativeCapabilities {
    pub sample_labels: bool,
    pub external_bytes: bool,
    /// Empty when `sample_labels` is true.
    pub sample_labels_reason: String,
    /// Empty when `external_bytes` is true.
    pub external_bytes_reason: String,
    /// Labeled sessions report dead samples: allocation figures per label.
    pub allocations: bool,
    /// Empty when `allocations` is true.
    pub allocations_reason: String,
    pub v8: String,
}

/// Counters for tests and diagnostics.
#[napi(object)]
pub struct NativeStats {
    /// Label holders created and not yet collected.
    pub live_holders: u32,
    /// Of those, the ones bound to the overflow set (rebound once the registry has room).
    pub overflow_label_holders: u32,
    /// Distinct label sets interned (overflow set excluded).
    pub label_sets: u32,
    /// Whether this isolate's heap-labels session is sampling.
    pub sampling: bool,
}
