//! The one error enum of the crate.
//!
//! Every fallible operation in `heap-labels-core` is label validation; the encoders cannot fail
//! (they write to memory). Each variant breaks one [`LabelRule`], whose [`ErrorClass`] the addon
//! throws it as at the napi boundary; the messages name the offending key so that they are useful
//! on their own. These messages and classes are the label rules' one wording: lib/labels.js checks
//! the same rules up front (so that a fresh label object costs no native call), takes each rule's
//! class from here (the addon's `labelRules()`) and words them the same, which
//! tests/validation.test.js holds it to against this crate's own checks.

use thiserror::Error;

use crate::labels::RESERVED_KEYS;

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
    RESERVED_KEYS
        .iter()
        .find(|r| {
            if r.prefix {
                key.starts_with(r.text)
            } else {
                key == r.text
            }
        })
        .map_or("", |r| r.reason)
}

/// The JavaScript error class a broken label rule is thrown as: `TypeError` for what a key or a
/// value may not be, `RangeError` for a size past a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    TypeError,
    RangeError,
}

impl ErrorClass {
    /// The class's JavaScript name.
    pub const fn name(self) -> &'static str {
        match self {
            ErrorClass::TypeError => "TypeError",
            ErrorClass::RangeError => "RangeError",
        }
    }
}

/// The rules a label set is checked against, one per [`LabelError`] variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelRule {
    TooManyLabels,
    EmptyKey,
    ReservedKey,
    KeyTooLong,
    ValueTooLong,
    DuplicateKey,
}

impl LabelRule {
    /// Every rule, in the order a set is checked against them (the pairs' checks in the order of
    /// [`PAIR_CHECKS`](crate::labels::PAIR_CHECKS)).
    pub const ALL: [LabelRule; 6] = [
        LabelRule::TooManyLabels,
        LabelRule::EmptyKey,
        LabelRule::ReservedKey,
        LabelRule::KeyTooLong,
        LabelRule::ValueTooLong,
        LabelRule::DuplicateKey,
    ];

    /// The rule's name where lib/ reads it (camelCase, as the variant).
    pub const fn name(self) -> &'static str {
        match self {
            LabelRule::TooManyLabels => "tooManyLabels",
            LabelRule::EmptyKey => "emptyKey",
            LabelRule::ReservedKey => "reservedKey",
            LabelRule::KeyTooLong => "keyTooLong",
            LabelRule::ValueTooLong => "valueTooLong",
            LabelRule::DuplicateKey => "duplicateKey",
        }
    }

    /// The class of the error that says the rule was broken.
    pub const fn error_class(self) -> ErrorClass {
        match self {
            LabelRule::ReservedKey | LabelRule::DuplicateKey => ErrorClass::TypeError,
            LabelRule::TooManyLabels
            | LabelRule::EmptyKey
            | LabelRule::KeyTooLong
            | LabelRule::ValueTooLong => ErrorClass::RangeError,
        }
    }
}

impl LabelError {
    /// The rule this error says was broken.
    pub fn rule(&self) -> LabelRule {
        match self {
            LabelError::TooManyLabels { .. } => LabelRule::TooManyLabels,
            LabelError::EmptyKey => LabelRule::EmptyKey,
            LabelError::KeyTooLong { .. } => LabelRule::KeyTooLong,
            LabelError::ValueTooLong { .. } => LabelRule::ValueTooLong,
            LabelError::ReservedKey { .. } => LabelRule::ReservedKey,
            LabelError::DuplicateKey { .. } => LabelRule::DuplicateKey,
        }
    }
}
