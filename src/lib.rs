//! heap-labels: the native addon behind the `heap-labels` package (label-aware heap profiling for
//! Node.js). lib/ is its only caller, through lib/native.js; the exports' TypeScript declarations,
//! lib/native-addon.d.ts, are generated from the `#[napi]` items here by napi-rs's type generation
//! (scripts/build.js), so the Rust signatures are the only ones written.
//!
//! Layout, from the bottom up (a module imports only those before it): `allocations` (dead-sample
//! totals for allocation figures), `v8_callbacks` (everything V8 calls into Rust, with its
//! contract), `bridge` (the one cxx bridge to cpp/), `ops` (the operations features' per-isolate state),
//! `model` (raw V8 profile -> core model), `state` (per-isolate state, the running session's facts
//! included), `labels` (binding label holders to sets), `session` (profiler lifecycle), `otlp`
//! (OTLP options, pprof files), `js_profile` and `js_types` (values exchanged with lib/),
//! `counters` (per-label counters), `dump` (signal/HTTP dumps, pushes), `near_heap_limit`,
//! `retainers` (a heap snapshot's retaining chains per label), `labeled_snapshot` (heap snapshot
//! files with a node per label), `fast_calls` (the per-request calls as plain N-API callbacks);
//! `error`
//! (the error enum and its JS mapping) serves all.

mod allocations;
mod bridge;
// The modules below that export napi functions themselves are public, so that the exports are
// reachable from the crate root in every build (a test build included).
pub mod checksum;
pub mod counters;
pub mod dump;
mod error;
pub mod fast_calls;
mod js_profile;
mod js_types;
pub mod labeled_snapshot;
mod labels;
mod model;
pub mod near_heap_limit;
mod ops;
pub mod otlp;
pub mod retainers;
mod session;
mod state;
mod v8_callbacks;

use napi::bindgen_prelude::{Either, Float64ArraySlice, Object, Undefined, Unknown};
use napi::{Env, JsValue};
use napi_derive::napi;

use crate::bridge::ffi;
use crate::error::Error;
use crate::js_profile::NativeProfile;
use crate::js_types::{NativeCapabilities, NativeSessionLimits, NativeStartOptions, NativeStats};
use crate::state::isolate_state;
use crate::state::SessionOptions;

/// Registers lib/'s AsyncLocalStorage as the labels key, unless one is registered already, and
/// returns the registered one: every lib/ instance sharing this addon instance (one per vm context,
/// as Jest loads it) uses the same storage.
#[napi(
    ts_generic_types = "Key extends object",
    ts_args_type = "key: Key",
    ts_return_type = "Key"
)]
pub fn register_labels_key<'env>(env: &'env Env, key: Object<'env>) -> napi::Result<Object<'env>> {
    let run = || -> error::Result<Object<'env>> {
        let state = isolate_state(env)?;
        // SAFETY: `key` is a live napi_value of this callback, on the isolate thread.
        let registered = unsafe { state.v8_mut().register_labels_key(key.raw() as usize)? };
        Ok(Object::from_raw(
            env.raw(),
            registered as napi::sys::napi_value,
        ))
    };
    run().map_err(|e| e.throw(env))
}

/// The rules of a label set, defined once in the core (`heap_labels_core::labels` and its
/// `LabelRule`s): lib/ checks user labels against these up front, in this order, throwing each
/// rule's error class, and names the limits in its errors.
#[napi(object)]
pub struct NativeLabelRules {
    pub max_labels: u32,
    pub max_key_bytes: u32,
    pub max_value_bytes: u32,
    /// The keys user labels may not have.
    pub reserved_keys: Vec<NativeReservedKey>,
    /// Every rule, in the order a set is checked against them.
    pub checks: Vec<NativeLabelCheck>,
}

/// A reserved key (`heap_labels_core::ReservedKey`).
#[napi(object)]
pub struct NativeReservedKey {
    pub text: String,
    /// Whether every key starting with `text` is reserved (else `text` alone).
    pub prefix: bool,
    /// Why, as the error says after "is reserved: ".
    pub reason: String,
}

/// One rule of a label set (`heap_labels_core::LabelRule`).
#[napi(object)]
pub struct NativeLabelCheck {
    pub name: String,
    /// Whether the rule is checked pair by pair (pairs in key order, each against every such
    /// rule in turn), else on the whole set.
    pub per_pair: bool,
    /// The class of the error that says the rule was broken.
    #[napi(ts_type = "'TypeError' | 'RangeError'")]
    pub error_class: String,
}

/// The label rules, read by lib/ once at load.
#[napi]
pub fn label_rules() -> NativeLabelRules {
    use heap_labels_core::{
        LabelRule, MAX_KEY_BYTES, MAX_LABELS, MAX_VALUE_BYTES, PAIR_CHECKS, RESERVED_KEYS,
    };
    NativeLabelRules {
        max_labels: MAX_LABELS as u32,
        max_key_bytes: MAX_KEY_BYTES as u32,
        max_value_bytes: MAX_VALUE_BYTES as u32,
        reserved_keys: RESERVED_KEYS
            .iter()
            .map(|r| NativeReservedKey {
                text: r.text.to_owned(),
                prefix: r.prefix,
                reason: r.reason.to_owned(),
            })
            .collect(),
        checks: LabelRule::ALL
            .iter()
            .map(|rule| NativeLabelCheck {
                name: rule.name().to_owned(),
                per_pair: PAIR_CHECKS.contains(rule),
                error_class: rule.error_class().name().to_owned(),
            })
            .collect(),
    }
}

/// Writes a holder's binding into lib/'s `setKey` array: `[id, generation]` of its own set,
/// `[-1, 0]` for no labels, `[-2, 0]` for the overflow set (its pairs pending); then its serial.
fn write_set_key(
    set_key: &mut Float64ArraySlice<'_>,
    bound: labels::Bound,
    serial: u64,
) -> error::Result<()> {
    // SAFETY: no JS runs until the napi call that passed `set_key` returns, and lib/ makes it on a
    // plain (not shared) ArrayBuffer, so nothing else touches it while this slice lives.
    write_set_key_into(unsafe { set_key.as_mut() }, bound, serial)
}

/// [`write_set_key`] into the elements of the array.
pub fn write_set_key_into(out: &mut [f64], bound: labels::Bound, serial: u64) -> error::Result<()> {
    let [id, generation, holder_serial, ..] = out else {
        return Err(Error::Native("setKey must have three elements".into()));
    };
    (*id, *generation) = match bound {
        labels::Bound::Set(k) => (f64::from(k.id), k.generation as f64),
        labels::Bound::NoLabels => (-1.0, 0.0),
        labels::Bound::Overflow => (-2.0, 0.0),
    };
    *holder_serial = serial as f64;
    Ok(())
}

/// The session options' ranges and default caps.
#[napi]
pub fn session_limits() -> NativeSessionLimits {
    NativeSessionLimits {
        max_sample_interval: f64::from(js_types::MAX_SAMPLE_INTERVAL),
        max_stack_depth: js_types::MAX_STACK_DEPTH,
        max_label_sets: f64::from(js_types::MAX_LABEL_SETS),
        default_max_label_sets: heap_labels_core::DEFAULT_MAX_SETS as u32,
        max_group_by_keys: heap_labels_core::MAX_GROUP_BY_KEYS as u32,
        max_group_key_bytes: heap_labels_core::MAX_GROUP_KEY_BYTES as u32,
        max_group_value_bytes: heap_labels_core::MAX_GROUP_VALUE_BYTES as u32,
        max_groups: heap_labels_core::MAX_GROUPS as u32,
        default_max_groups: heap_labels_core::DEFAULT_MAX_GROUP_COUNT as u32,
    }
}

/// A new label holder of the frozen label object `labels`, whose pairs `pairs` are in lib/'s
/// canonical key (`labels::parse_pairs`): interns them and binds the holder to their set (to the
/// overflow set when the registry is full; see `bindLabelHolder`; the empty set binds to no
/// labels), makes `labels` its read-only property, freezes it, and writes its binding and serial
/// number into `setKey` as `bindLabelHolder` does. One call per new label set: the pairs cross as
/// one string.
#[napi]
pub fn create_label_holder<'env>(
    env: &'env Env,
    pairs: String,
    labels: Object<'env>,
    mut set_key: Float64ArraySlice<'_>,
) -> napi::Result<Object<'env>> {
    let mut run = || -> error::Result<Object<'env>> {
        let state = isolate_state(env)?;
        // SAFETY: inside this napi callback on the isolate thread; `labels` is one of its values.
        let (holder, bound, serial) =
            unsafe { create_label_holder_in(state, &pairs, labels.raw() as usize)? };
        write_set_key(&mut set_key, bound, serial)?;
        Ok(Object::from_raw(env.raw(), holder as napi::sys::napi_value))
    };
    run().map_err(|e| e.throw(env))
}

/// The work of `createLabelHolder` (also its fast callback, src/fast_calls.rs): the new holder (a
/// napi_value of the current call), its binding and its serial number.
///
/// # Safety
/// Must run inside a napi callback on the isolate thread; `labels` is one of its napi_values.
pub unsafe fn create_label_holder_in(
    state: &mut state::IsolateAddon,
    pairs: &str,
    labels: usize,
) -> error::Result<(usize, labels::Bound, u64)> {
    labels::make_room(state);
    let binding = labels::bind_new_holder(&state.registry, labels::parse_pairs(pairs)?)?;
    // Read before the holder takes the binding; its word stays alive with the holder, a
    // napi_value of this call.
    let bound = labels::bound_to(&binding);
    // SAFETY: the caller's contract; the binding was just made by `bind_new_holder` (the holder
    // takes it over, also on failure).
    let made = unsafe { state.v8_mut().create_label_holder(binding, labels)? };
    Ok((made.holder, bound, made.serial))
}

/// Whether the holder is bound to its own label set or to no labels, after binding it to its set
/// if it was bound to the overflow set and the registry has room now; its binding and serial number
/// (see `liveLabelHolder`) go into `setKey`: `[id, generation, serial]`, id -1 for no labels, -2
/// for the overflow set.
#[napi]
pub fn bind_label_holder(
    env: Env,
    holder: Object<'_>,
    mut set_key: Float64ArraySlice<'_>,
) -> napi::Result<bool> {
    let mut run = || -> error::Result<bool> {
        let state = isolate_state(&env)?;
        // SAFETY: inside this napi callback on the isolate thread; `holder` is one of its values.
        let serial = unsafe { state.v8.label_holder_serial(holder.raw() as usize)? };
        let Some(binding) = labels::bind_holder(state, holder.raw() as usize)? else {
            write_set_key(&mut set_key, labels::Bound::Overflow, serial)?;
            return Ok(false);
        };
        // `holder`, a napi_value of this call, keeps the binding's word alive.
        write_set_key(&mut set_key, labels::bound_to(&binding), serial)?;
        Ok(true)
    };
    run().map_err(|e| e.throw(&env))
}

/// A request holder (late binding, docs/architecture.md): a label holder whose word is a new
/// request cell bound to the set of `bucket` (a label holder with labels of its own: the request's
/// unrouted bucket), and whose labels are `labels` (`bucket`'s labels object; what
/// `requestHolderLabels` returns). What runs under it is resolved at read time to the set the cell
/// is bound to then (`bindRequestHolder`). The export is src/fast_calls.rs's plain N-API callback,
/// which does the same work (this declaration gives it its type).
#[napi]
pub fn create_request_holder<'env>(
    env: &'env Env,
    bucket: Object<'env>,
    labels: Object<'env>,
) -> napi::Result<Object<'env>> {
    let run = || -> error::Result<Object<'env>> {
        let state = isolate_state(env)?;
        let holder = fast_calls::create_request_holder_in(
            state,
            bucket.raw() as usize,
            labels.raw() as usize,
        )?;
        Ok(Object::from_raw(env.raw(), holder as napi::sys::napi_value))
    };
    run().map_err(|e| e.throw(env))
}

/// Binds the cell of `request` (from `createRequestHolder`) to the set of `route` (a label holder
/// with labels of its own) and makes `labels` (`route`'s labels object) its labels: the request's
/// samples and external bytes so far move to that set, and later ones are taken under it. False
/// when it was bound to that set already or has used its bindings (8). The export is
/// src/fast_calls.rs's plain N-API callback, as for `createRequestHolder`.
#[napi]
pub fn bind_request_holder(
    env: Env,
    request: Object<'_>,
    route: Object<'_>,
    labels: Object<'_>,
) -> napi::Result<bool> {
    let run = || -> error::Result<bool> {
        let state = isolate_state(&env)?;
        labels::bind_request(
            state,
            request.raw() as usize,
            route.raw() as usize,
            labels.raw() as usize,
        )
    };
    run().map_err(|e| e.throw(&env))
}

/// The labels object of the request holder `holder`: the labels it was made or last bound with
/// (what getHeapProfileLabels() returns under it). A request holder has no `labels` property: it
/// keeps them in a field of its own, which keeps the object at 48 bytes.
#[napi]
pub fn request_holder_labels<'env>(
    env: &'env Env,
    holder: Object<'env>,
) -> napi::Result<Unknown<'env>> {
    let run = || -> error::Result<Unknown<'env>> {
        let state = isolate_state(env)?;
        // SAFETY: inside this napi callback on the isolate thread; `holder` is one of its values.
        let labels = unsafe { state.v8.request_labels(holder.raw() as usize)? };
        // SAFETY: a napi_value of this call (the holder's field, a handle in its scope).
        Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), labels as napi::sys::napi_value) })
    };
    run().map_err(|e| e.throw(env))
}

/// The label holder with that serial number (from `bindLabelHolder`) while it is alive. How lib/
/// finds a label object's holder again: a JS WeakRef would keep every holder it dereferenced alive
/// until the end of the job, and with it its label set, so a synchronous batch of items with labels
/// of their own would fill `maxLabelSets` with sets nothing uses. `undefined` when it is gone,
/// never `null` (what napi-rs makes of `None`): lib/ tells "gone" by `=== undefined`.
#[napi]
pub fn live_label_holder(env: &Env, serial: f64) -> napi::Result<Either<Object<'_>, Undefined>> {
    let run = || -> error::Result<Either<Object<'_>, Undefined>> {
        let state = isolate_state(env)?;
        if !(1.0..=MAX_SAFE_INTEGER).contains(&serial) || serial.fract() != 0.0 {
            return Ok(Either::B(()));
        }
        // SAFETY: inside this napi callback on the isolate thread.
        let holder = unsafe { state.v8.live_label_holder(serial as u64) };
        Ok(if holder == 0 {
            Either::B(())
        } else {
            Either::A(Object::from_raw(env.raw(), holder as napi::sys::napi_value))
        })
    };
    run().map_err(|e| e.throw(env))
}

/// 2^53 - 1: the largest integer a JS number holds exactly (serial numbers stay below it).
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// The value stored under `key` in the current AsyncContextFrame, or `undefined` when the
/// continuation data is not a frame (ACF off).
#[napi]
pub fn frame_value<'env>(
    env: &'env Env,
    key: Object<'env>,
) -> napi::Result<Either<Unknown<'env>, Undefined>> {
    let run = || -> error::Result<Either<Unknown<'env>, Undefined>> {
        let state = isolate_state(env)?;
        // SAFETY: inside this napi callback on the isolate thread; `key` is live.
        let value = unsafe { state.v8_mut().frame_value(key.raw() as usize) };
        if value == 0 {
            return Ok(Either::B(()));
        }
        // SAFETY: a napi_value made by cpp/ in this callback's handle scope.
        Ok(Either::A(unsafe {
            Unknown::from_raw_unchecked(env.raw(), value as napi::sys::napi_value)
        }))
    };
    run().map_err(|e| e.throw(env))
}

/// Run-time probe of the patched-V8 API.
#[napi]
pub fn native_capabilities() -> NativeCapabilities {
    let status = ffi::patched_api_status();
    NativeCapabilities {
        sample_labels: status.sample_labels,
        external_bytes: status.external_bytes,
        sample_labels_reason: status.sample_labels_reason,
        external_bytes_reason: status.external_bytes_reason,
        allocations: status.allocations,
        allocations_reason: status.allocations_reason,
        retainers: status.retainers,
        retainers_reason: status.retainers_reason,
        v8: ffi::v8_version(),
    }
}

/// Starts the isolate's sampling heap profiler; returns the session id.
#[napi]
pub fn start_profile(env: Env, options: NativeStartOptions) -> napi::Result<u32> {
    let run = || -> error::Result<u32> {
        let group_by = options.group_by.clone();
        let options = SessionOptions::try_from(options)?;
        session::start(isolate_state(&env)?, options, group_by)
    };
    run().map_err(|e| e.throw(&env))
}

/// Reads the running session's profile; `resetAllocations` starts a new allocation window after
/// this read.
#[napi]
pub fn read_profile(
    env: Env,
    session: u32,
    reset_allocations: bool,
) -> napi::Result<NativeProfile> {
    let run = || -> error::Result<NativeProfile> {
        let read = if reset_allocations {
            ffi::AllocationsRead::RestartWindow
        } else {
            ffi::AllocationsRead::Window
        };
        let read = session::read(isolate_state(&env)?, session, read)?;
        NativeProfile::new(&env, read)
    };
    run().map_err(|e| e.throw(&env))
}

/// Reads the last profile, then stops.
#[napi]
pub fn stop_profile(env: Env, session: u32) -> napi::Result<NativeProfile> {
    let run = || -> error::Result<NativeProfile> {
        NativeProfile::new(&env, session::stop(isolate_state(&env)?, session)?)
    };
    run().map_err(|e| e.throw(&env))
}

/// Counters of the label machinery (tests, `stats()`); prunes the registry first.
#[napi]
pub fn stats(env: Env) -> napi::Result<NativeStats> {
    let run = || -> error::Result<NativeStats> {
        let state = isolate_state(&env)?;
        labels::rebind_overflowed(state)?;
        state.registry.prune();
        Ok(NativeStats {
            live_holders: u32::try_from(state.v8.live_holders()).unwrap_or(u32::MAX),
            overflow_label_holders: u32::try_from(state.v8.overflowed_holder_count())
                .unwrap_or(u32::MAX),
            label_sets: u32::try_from(state.registry.len()).unwrap_or(u32::MAX),
            sampling: state.session.is_some(),
        })
    };
    run().map_err(|e: Error| e.throw(&env))
}
