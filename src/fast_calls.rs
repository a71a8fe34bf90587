//! The two addon calls every labeled request makes (late binding, docs/architecture.md): a request
//! holder at its start (`createRequestHolder`) and its binding to the route at routing
//! (`bindRequestHolder`), and the one call of a label set's first use (`createLabelHolder`), as
//! plain N-API callbacks.
//!
//! Why not `#[napi]` functions. napi-rs's generated wrapper of a function with arguments opens,
//! defers and releases a borrow scope on every call (about 1,000 instructions), and
//! `isolate_state` finds the per-isolate state through napi-rs's instance data (about 350): more
//! than the work itself, about 2,700 instructions per request on a request of 130,000
//! (benchmark/http/instructions.js, callgrind). These callbacks take the state as their callback
//! data and read their arguments with one `napi_get_cb_info`. The `#[napi]` functions of the
//! same names in src/lib.rs stay: they give the exports their TypeScript declarations
//! (lib/native-addon.d.ts) and share the work (`create_request_holder_in`,
//! `labels::bind_request`); the module's export hook below replaces them with these callbacks.

use std::ffi::c_void;
use std::ptr;

use napi::bindgen_prelude::{JsObjectValue, Object, Unknown};
use napi::{check_status, sys, Env};
use napi_derive::napi;

use crate::error;
use crate::labels;
use crate::state::{isolate_state, IsolateAddon};

/// A new request holder whose cell is bound to `bucket`'s set and whose labels object is
/// `labels` (napi_values of the current call): the holder, a napi_value of this call.
pub fn create_request_holder_in(
    state: &mut IsolateAddon,
    bucket: usize,
    labels: usize,
) -> error::Result<usize> {
    let word = labels::new_request_word(state, bucket)?;
    // SAFETY: inside a napi callback on the isolate thread (every caller is one); the holder
    // takes the cell's word over, also on failure.
    let made = unsafe { state.v8_mut().create_request_holder(word, labels)? };
    Ok(made.holder)
}

/// Reads up to N arguments (missing ones are `undefined`) and the callback data of a call.
///
/// # Safety
/// `env` and `info` must be the ones N-API passed to the running callback.
unsafe fn call_args<const N: usize>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> Option<([sys::napi_value; N], *mut c_void)> {
    let mut argc = N;
    let mut argv = [ptr::null_mut(); N];
    let mut data = ptr::null_mut();
    // SAFETY: the caller's contract; argv has room for argc values.
    let status = unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.as_mut_ptr(),
            ptr::null_mut(),
            &mut data,
        )
    };
    (status == sys::Status::napi_ok && !data.is_null()).then_some((argv, data))
}

/// Throws `error` into `env` and returns what a callback that threw returns.
fn thrown(env: sys::napi_env, error: error::Error) -> sys::napi_value {
    // The pending exception is the result; the napi::Error only reports it.
    let _ = error.throw(&Env::from_raw(env));
    ptr::null_mut()
}

/// `createRequestHolder(bucket, labels)`.
unsafe extern "C" fn create_request_holder_cb(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: N-API calls this with its env and callback info.
    let Some(([bucket, labels], data)) = (unsafe { call_args::<2>(env, info) }) else {
        return thrown(
            env,
            error::Error::Native("createRequestHolder: no call info".into()),
        );
    };
    // SAFETY: `data` is this env's IsolateAddon (install_fast_calls), which lives in napi-rs's
    // instance data until the env is torn down, after its last call; on the isolate thread, no
    // other reference to it is live during a call (as for `isolate_state`).
    let state = unsafe { &mut *(data as *mut IsolateAddon) };
    match create_request_holder_in(state, bucket as usize, labels as usize) {
        Ok(holder) => holder as sys::napi_value,
        Err(error) => thrown(env, error),
    }
}

/// `bindRequestHolder(request, route, labels)`.
unsafe extern "C" fn bind_request_holder_cb(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: N-API calls this with its env and callback info.
    let Some(([request, route, labels], data)) = (unsafe { call_args::<3>(env, info) }) else {
        return thrown(
            env,
            error::Error::Native("bindRequestHolder: no call info".into()),
        );
    };
    // SAFETY: as in create_request_holder_cb.
    let state = unsafe { &mut *(data as *mut IsolateAddon) };
    match labels::bind_request(state, request as usize, route as usize, labels as usize) {
        Ok(changed) => {
            let mut result = ptr::null_mut();
            // SAFETY: a live env of this callback; `result` receives the boolean.
            let status = unsafe { sys::napi_get_boolean(env, changed, &mut result) };
            if status == sys::Status::napi_ok {
                result
            } else {
                thrown(
                    env,
                    error::Error::Native("bindRequestHolder: no boolean".into()),
                )
            }
        }
        Err(error) => thrown(env, error),
    }
}

/// A label set's canonical key as the callback reads it: from a buffer on the stack when it fits
/// (label sets usually do), otherwise from the heap. One `napi_get_value_string_utf8` for a short
/// key, instead of napi-rs's two (its length, then its bytes) and an allocation.
const STACK_KEY_BYTES: usize = 512;

/// The UTF-8 text of the JS string `value`, into `stack` when it fits, else into `heap`.
///
/// # Safety
/// `env` must be the env of the running callback and `value` one of its napi_values.
unsafe fn read_string<'a>(
    env: sys::napi_env,
    value: sys::napi_value,
    stack: &'a mut [u8; STACK_KEY_BYTES],
    heap: &'a mut Vec<u8>,
) -> error::Result<&'a str> {
    let not_a_string = || error::Error::Native("createLabelHolder: pairs must be a string".into());
    let mut written = 0usize;
    // SAFETY: the caller's contract; `stack` has room for its length, a terminating NUL included.
    let status = unsafe {
        sys::napi_get_value_string_utf8(
            env,
            value,
            stack.as_mut_ptr().cast(),
            STACK_KEY_BYTES,
            &mut written,
        )
    };
    if status != sys::Status::napi_ok {
        return Err(not_a_string());
    }
    // Room for a character (at most 4 bytes of UTF-8) left after it: the whole string. V8 cuts a
    // string before the first character that does not fit, so a cut one leaves less.
    let bytes: &'a [u8] = if STACK_KEY_BYTES - 1 - written >= 4 {
        &stack[..written]
    } else {
        let mut length = 0usize;
        // SAFETY: as above; a null buffer asks for the length in bytes.
        let status =
            unsafe { sys::napi_get_value_string_utf8(env, value, ptr::null_mut(), 0, &mut length) };
        if status != sys::Status::napi_ok {
            return Err(not_a_string());
        }
        heap.resize(length + 1, 0);
        // SAFETY: as above; `heap` has room for the string and its NUL.
        let status = unsafe {
            sys::napi_get_value_string_utf8(
                env,
                value,
                heap.as_mut_ptr().cast(),
                length + 1,
                &mut written,
            )
        };
        if status != sys::Status::napi_ok {
            return Err(not_a_string());
        }
        &heap[..written]
    };
    // V8 writes well-formed UTF-8 (a lone surrogate becomes U+FFFD; lib/ rejects those first).
    std::str::from_utf8(bytes).map_err(|_| not_a_string())
}

/// The elements of the Float64Array `value`.
///
/// # Safety
/// As for [`read_string`]; the slice is valid until the callback returns and no JS runs meanwhile
/// (lib/ makes the array on a plain, not shared, ArrayBuffer).
unsafe fn float64_elements<'a>(
    env: sys::napi_env,
    value: sys::napi_value,
) -> error::Result<&'a mut [f64]> {
    let mut kind = 0;
    let mut length = 0usize;
    let mut data = ptr::null_mut();
    // SAFETY: the caller's contract; the out-pointers are valid.
    let status = unsafe {
        sys::napi_get_typedarray_info(
            env,
            value,
            &mut kind,
            &mut length,
            &mut data,
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    if status != sys::Status::napi_ok
        || kind != sys::TypedarrayType::float64_array
        || data.is_null()
    {
        return Err(error::Error::Native(
            "createLabelHolder: setKey must be a Float64Array".into(),
        ));
    }
    // SAFETY: N-API gave the array's data pointer (aligned for its element type) and length.
    Ok(unsafe { std::slice::from_raw_parts_mut(data.cast::<f64>(), length) })
}

/// `createLabelHolder(pairs, labels, setKey)`.
unsafe extern "C" fn create_label_holder_cb(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: N-API calls this with its env and callback info.
    let Some(([pairs, labels, set_key], data)) = (unsafe { call_args::<3>(env, info) }) else {
        return thrown(
            env,
            error::Error::Native("createLabelHolder: no call info".into()),
        );
    };
    // SAFETY: as in create_request_holder_cb.
    let state = unsafe { &mut *(data as *mut IsolateAddon) };
    let mut stack = [0u8; STACK_KEY_BYTES];
    let mut heap = Vec::new();
    // SAFETY: inside this callback on the isolate thread; the three are its napi_values.
    let made = unsafe {
        read_string(env, pairs, &mut stack, &mut heap).and_then(|pairs| {
            let out = float64_elements(env, set_key)?;
            let (holder, bound, serial) =
                crate::create_label_holder_in(state, pairs, labels as usize)?;
            crate::write_set_key_into(out, bound, serial)?;
            Ok(holder)
        })
    };
    match made {
        Ok(holder) => holder as sys::napi_value,
        Err(error) => thrown(env, error),
    }
}

/// Defines `name` on `exports` as the N-API function `cb` with `state` as its data.
fn define(
    env: &Env,
    exports: &mut Object<'_>,
    name: &str,
    cb: sys::napi_callback,
    state: *mut IsolateAddon,
) -> napi::Result<()> {
    let mut function = ptr::null_mut();
    // SAFETY: a live env of the module's registration; `name` is valid for its length; the data
    // pointer outlives the function (see create_request_holder_cb).
    check_status!(
        unsafe {
            sys::napi_create_function(
                env.raw(),
                name.as_ptr().cast(),
                name.len() as isize,
                cb,
                state.cast(),
                &mut function,
            )
        },
        "napi_create_function({name}) failed"
    )?;
    // SAFETY: `function` was just made in this env.
    exports.set_named_property(name, unsafe {
        Unknown::from_raw_unchecked(env.raw(), function)
    })
}

/// The module's export hook (after the `#[napi]` exports are registered): replaces the three
/// exports with the callbacks above, bound to this env's state.
#[napi(module_exports)]
pub fn install_fast_calls(mut exports: Object<'_>, env: Env) -> napi::Result<()> {
    let state: *mut IsolateAddon = isolate_state(&env).map_err(|e| e.throw(&env))?;
    define(
        &env,
        &mut exports,
        "createRequestHolder",
        Some(create_request_holder_cb),
        state,
    )?;
    define(
        &env,
        &mut exports,
        "bindRequestHolder",
        Some(bind_request_holder_cb),
        state,
    )?;
    define(
        &env,
        &mut exports,
        "createLabelHolder",
        Some(create_label_holder_cb),
        state,
    )?;
    Ok(())
}
