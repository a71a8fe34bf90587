//! Fixtures shared by the unit tests of the profile encoders (pprof, its delta, OTLP) and of the
//! reports (summary, retainers): label sets, call frames and samples of a hand-built
//! [`Profile`](crate::Profile).

use crate::labels::{LabelRegistry, LabelSet};
use crate::profile::{CallFrame, Sample};
use std::sync::Arc;

/// The script every fixture frame is in, unless one says otherwise ([`frame_in`]).
pub const APP: &str = "file:///app.js";

/// A frame of function `name` at `line` of [`APP`].
pub fn frame(name: &str, line: i32) -> CallFrame {
    frame_in(name, APP, line)
}

/// A frame of function `name` at `line` of `url`.
pub fn frame_in(name: &str, url: &str, line: i32) -> CallFrame {
    CallFrame {
        function_name: name.into(),
        script_id: 1,
        url: url.into(),
        line_number: line,
        column_number: 1,
    }
}

/// One sampled object of `size` bytes at node `node_id`, with `labels` (None: unlabeled).
pub fn sample(node_id: u32, size: u64, labels: Option<&Arc<LabelSet>>, sample_id: u64) -> Sample {
    Sample {
        node_id,
        size,
        count: 1,
        sample_id,
        labels: labels.cloned(),
    }
}

/// The label set of `pairs`, interned in `reg`.
pub fn labels(reg: &LabelRegistry, pairs: &[(&str, &str)]) -> Arc<LabelSet> {
    let pairs = pairs.iter().map(|&(k, v)| (k.into(), v.into())).collect();
    reg.intern(pairs).unwrap()
}
