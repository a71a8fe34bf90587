//! Plain objects exchanged with lib/ (besides the profile, see `js_profile`).

use napi_derive::napi;

use crate::error::{Error, Result};
use crate::state::SessionOptions;

/// Options of `startProfile`, already validated and defaulted by lib/ under the same names. The
/// integers cross as f64, so that the range check sees the caller's number (napi's u32 conversion
/// would wrap 2^32 + 5 to 5).
#[napi(object)]
pub struct NativeStartOptions {
    pub sample_interval: f64,
    pub stack_depth: f64,
    #[napi(js_name = "includeObjectsCollectedByMajorGC")]
    pub include_objects_collected_by_major_gc: bool,
    #[napi(js_name = "includeObjectsCollectedByMinorGC")]
    pub include_objects_collected_by_minor_gc: bool,
    pub track_allocations: bool,
    pub max_label_sets: f64,
    /// `kSamplingForceGC`: a full GC before each read.
    #[napi(js_name = "forceGc")]
    pub force_gc: bool,
    /// Label keys of the group counters (`getHeapStats()`), none when absent.
    pub group_by: Option<Vec<String>>,
    pub max_groups: f64,
}

/// The deepest stack a session records.
pub const MAX_STACK_DEPTH: u32 = 1024;
/// V8 takes the sampling interval as a uint64_t; the JS side keeps it to a u32 so it is exact in
/// an f64 and in every counter derived from it.
pub const MAX_SAMPLE_INTERVAL: u32 = u32::MAX;
/// The label-set cap is a count, kept to a u32 like the registry's ids.
pub const MAX_LABEL_SETS: u32 = u32::MAX;

/// `value` as an integer in `min..=max`, or the error that names the option.
fn integer_option(name: &'static str, value: f64, min: u32, max: u32) -> Result<u32> {
    if value.fract() == 0.0 && value >= f64::from(min) && value <= f64::from(max) {
        // The range check above makes the cast exact.
        Ok(value as u32)
    } else {
        Err(Error::InvalidOption {
            name,
            reason: format!("must be an integer in {min}..={max}, got {value}"),
        })
    }
}

/// The ranges of the session options that have one, and the label-set cap a registry has before
/// any session sets it: defined here once; lib/ checks user options against them (and
/// `startAgent`'s, and the `HEAP_LABELS_*` variables') and names them in its errors.
#[napi(object)]
pub struct NativeSessionLimits {
    pub max_sample_interval: f64,
    pub max_stack_depth: u32,
    pub max_label_sets: f64,
    pub default_max_label_sets: u32,
    pub max_group_by_keys: u32,
    pub max_group_key_bytes: u32,
    /// A projection with a longer value goes to the overflow group.
    pub max_group_value_bytes: u32,
    pub max_groups: u32,
    pub default_max_groups: u32,
}

impl TryFrom<NativeStartOptions> for SessionOptions {
    type Error = Error;

    /// lib/ has checked these already; this guards the native surface, so that no value it did
    /// not mean reaches V8.
    fn try_from(options: NativeStartOptions) -> Result<Self> {
        use heap_labels_core::{MAX_GROUPS, MAX_GROUP_BY_KEYS, MAX_GROUP_KEY_BYTES};
        let sample_interval = integer_option(
            "sampleInterval",
            options.sample_interval,
            1,
            MAX_SAMPLE_INTERVAL,
        )?;
        let stack_depth = integer_option("stackDepth", options.stack_depth, 1, MAX_STACK_DEPTH)?;
        let max_label_sets =
            integer_option("maxLabelSets", options.max_label_sets, 1, MAX_LABEL_SETS)?;
        let max_groups = integer_option("maxGroups", options.max_groups, 1, MAX_GROUPS as u32)?;
        if let Some(keys) = &options.group_by {
            let mut seen = std::collections::HashSet::new();
            let bad = keys.is_empty()
                || keys.len() > MAX_GROUP_BY_KEYS
                || keys
                    .iter()
                    .any(|k| k.is_empty() || k.len() > MAX_GROUP_KEY_BYTES || !seen.insert(k));
            if bad {
                return Err(Error::InvalidOption {
                    name: "groupBy",
                    reason: format!(
                        "must hold 1..={MAX_GROUP_BY_KEYS} distinct non-empty keys of at most \
                         {MAX_GROUP_KEY_BYTES} bytes"
                    ),
                });
            }
        }
        Ok(SessionOptions {
            sample_interval: u64::from(sample_interval),
            stack_depth,
            include_objects_collected_by_major_gc: options.include_objects_collected_by_major_gc,
            include_objects_collected_by_minor_gc: options.include_objects_collected_by_minor_gc,
            track_allocations: options.track_allocations,
            max_label_sets: max_label_sets as usize,
            force_gc: options.force_gc,
            max_groups: max_groups as usize,
            grouped: options.group_by.is_some(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> NativeStartOptions {
        NativeStartOptions {
            sample_interval: 524_288.0,
            stack_depth: 64.0,
            include_objects_collected_by_major_gc: false,
            include_objects_collected_by_minor_gc: true,
            track_allocations: true,
            max_label_sets: 10_000.0,
            force_gc: false,
            group_by: Some(vec!["route".into()]),
            max_groups: 256.0,
        }
    }

    #[test]
    fn valid_options_convert_field_by_field() {
        let o = SessionOptions::try_from(options()).unwrap();
        assert_eq!(o.sample_interval, 524_288);
        assert_eq!(o.stack_depth, 64);
        assert!(!o.include_objects_collected_by_major_gc);
        assert!(o.include_objects_collected_by_minor_gc);
        assert!(o.track_allocations);
        assert_eq!(o.max_label_sets, 10_000);
    }

    #[test]
    fn out_of_range_options_name_the_option() {
        let bad = |f: fn(&mut NativeStartOptions)| {
            let mut o = options();
            f(&mut o);
            SessionOptions::try_from(o).unwrap_err().to_string()
        };
        assert!(bad(|o| o.sample_interval = 0.0).contains("sampleInterval"));
        assert!(bad(|o| o.sample_interval = 1.5).contains("sampleInterval"));
        assert!(bad(|o| o.stack_depth = 0.0).contains("stackDepth"));
        assert!(bad(|o| o.stack_depth = 1025.0).contains("stackDepth"));
        assert!(bad(|o| o.max_label_sets = 0.0).contains("maxLabelSets"));
        // Past u32: refused, not wrapped.
        assert!(bad(|o| o.max_label_sets = 4_294_967_297.0).contains("maxLabelSets"));
        assert!(bad(|o| o.sample_interval = 4_294_967_296.0).contains("sampleInterval"));
        assert!(bad(|o| o.max_groups = 0.0).contains("maxGroups"));
        assert!(bad(|o| o.max_groups = 65_537.0).contains("maxGroups"));
        assert!(bad(|o| o.max_groups = f64::NAN).contains("maxGroups"));
        assert!(bad(|o| o.group_by = Some(vec![])).contains("groupBy"));
        assert!(bad(|o| o.group_by = Some(vec!["a".into(), "a".into()])).contains("groupBy"));
        assert!(bad(|o| o.group_by = Some(vec!["k".repeat(256)])).contains("groupBy"));
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
    /// Samples carry their objects' heap snapshot ids (API version 3): retainers per label.
    pub retainers: bool,
    /// Empty when `retainers` is true.
    pub retainers_reason: String,
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
