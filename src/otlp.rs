//! OTLP profiles across the napi boundary: the options lib/ passes (the resource it describes,
//! validated there) and the translation of a pprof file's bytes (`heap-labels export --otlp`).
//! A read's `toOtlp()` is in `js_profile`, the agent's pushes in `dump`.

use heap_labels_core::otlp::{self, AttributeValue, OtlpOptions, FRAME_TYPE_V8JS};
use napi::bindgen_prelude::Buffer;
use napi::Env;
use napi_derive::napi;

use crate::error::Error;

/// One resource attribute: `stringValue` or `intValue`.
#[napi(object)]
pub struct NativeOtlpAttribute {
    pub key: String,
    pub string_value: Option<String>,
    pub int_value: Option<i64>,
}

/// What lib/ adds to an OTLP profile: the resource's attributes and heap-labels' version (the
/// instrumentation scope's).
#[napi(object)]
pub struct NativeOtlpOptions {
    pub resource: Vec<NativeOtlpAttribute>,
    pub scope_version: String,
}

impl NativeOtlpOptions {
    /// The core's options: locations are V8's JavaScript frames.
    pub fn to_core(&self) -> OtlpOptions {
        OtlpOptions {
            resource: self
                .resource
                .iter()
                .map(|a| {
                    let value = match (&a.string_value, a.int_value) {
                        (Some(s), _) => AttributeValue::String(s.clone()),
                        (None, Some(i)) => AttributeValue::Int(i),
                        (None, None) => AttributeValue::String(String::new()),
                    };
                    (a.key.clone(), value)
                })
                .collect(),
            scope_name: "heap-labels".to_owned(),
            scope_version: self.scope_version.clone(),
            frame_type: Some(FRAME_TYPE_V8JS.to_owned()),
        }
    }
}

/// A pprof profile (gzip-compressed or not) as an encoded OTLP `ProfilesData` message; throws on
/// input that is not a pprof profile.
#[napi]
pub fn pprof_to_otlp(env: Env, pprof: Buffer, options: NativeOtlpOptions) -> napi::Result<Buffer> {
    otlp::from_pprof_bytes(&pprof, &options.to_core())
        .map(Buffer::from)
        .map_err(|e| Error::Native(e.to_string()).throw(&env))
}
