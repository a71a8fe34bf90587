//! The one error enum of the crate.
//!
//! Every fallible operation in `heap-labels-core` is label validation; the encoders cannot fail
//! (they write to memory). The addon maps each variant to a JS `TypeError`/`RangeError` at the napi
//! boundary; the messages name the offending key so that they are useful on their own. These
//! messages are the label rules' one wording: lib/labels.js checks the same rules up front (so
//! that a fresh label object costs no native call) and words them the same, which
//! tests/validation.test.js holds it to against this crate's own checks.

use thiserror::Error;

/// Why a list of label pairs was rejected by [`LabelRegistry::intern`](crate::LabelRegistry::intern).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LabelError {
    /// More pairs than [`MAX_LABELS`](crate::MAX_LABELS).
    #[error("{count} labels, more than the limit of {max}")]
    TooManyLabels { count: usize, max: usize },
    /// A key is the empty string.
    #[error("label keys must not be empty")]
    EmptyKey,
    /// A key is longer than [`MAX_KEY_BYTES`](crate::MAX_KEY_BYTES) bytes of UTF-8.
    /// `key` is the key shortened to at most the limit, followed by `...`.
    #[error("label key {} is {len} bytes long, more than the limit of {max} bytes", json(.key))]
    KeyTooLong { key: String, len: usize, max: usize },
    /// A value is longer than [`MAX_VALUE_BYTES`](crate::MAX_VALUE_BYTES) bytes of UTF-8.
    #[error(
        "the value of label {} is {len} bytes long, more than the limit of {max} bytes",
        json(.key)
    )]
    ValueTooLong { key: String, len: usize, max: usize },
    /// The key is reserved ([`is_reserved_key`](crate::labels::is_reserved_key)).
    #[error("label key {} is reserved: {}", json(.key), reserved_reason(.key))]
    ReservedKey { key: String },
    /// The same key appears twice in one set.
    #[error("label key {} appears more than once", json(.key))]
    DuplicateKey { key: String },
}

/// `Result` with [`LabelError`] as the default error.
pub type Result<T, E = LabelError> = std::result::Result<T, E>;

/// A key as a JSON string (what JavaScript's `JSON.stringify` writes).
fn json(key: &str) -> String {
    // Serializing a str cannot fail.
    serde_json::to_string(key).unwrap_or_default()
}

fn reserved_reason(key: &str) -> &'static str {
    if key == "__proto__" {
        "assigning it to an object sets the prototype instead of a label"
    } else {
        "keys starting with \"heap_labels.\" are heap-labels' own (the overflow set's key)"
    }
}
