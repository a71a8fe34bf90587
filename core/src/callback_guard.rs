//! The rule that V8's callbacks take no lock of a [`LabelRegistry`](crate::LabelRegistry), checked
//! in debug builds.
//!
//! The addon's callbacks (src/v8_callbacks.rs: sample capture and release, dead samples, ArrayBuffer
//! allocation and free) run inside V8's allocation path, GC processing and on sweeper threads, where
//! a lock that the isolate thread may hold across a GC would deadlock. Each callback marks its
//! thread with [`InV8Callback::enter`] for its duration, and every registry operation that locks
//! (its intern maps, its free ids, its counter table) first calls [`assert_outside_v8_callback`],
//! which panics in debug builds (cargo test, `npm run build:debug`) when the thread is so marked:
//! a test that makes a callback reach a lock fails instead of deadlocking one day. Release builds
//! compile both to nothing.

#[cfg(debug_assertions)]
use std::cell::Cell;

#[cfg(debug_assertions)]
thread_local! {
    /// Nesting depth of [`InV8Callback`] scopes on this thread. A `const` thread-local without a
    /// destructor: reaching it never allocates, also inside V8's allocation path.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Marks the current thread as running a V8 callback until dropped (debug builds only).
#[derive(Debug)]
#[must_use = "the thread counts as inside a V8 callback only while the guard lives"]
pub struct InV8Callback {
    _private: (),
}

impl InV8Callback {
    /// Enters the scope of one V8 callback on this thread.
    #[inline]
    pub fn enter() -> Self {
        #[cfg(debug_assertions)]
        DEPTH.with(|depth| depth.set(depth.get() + 1));
        InV8Callback { _private: () }
    }
}

impl Drop for InV8Callback {
    #[inline]
    fn drop(&mut self) {
        #[cfg(debug_assertions)]
        DEPTH.with(|depth| depth.set(depth.get() - 1));
    }
}

/// Panics in debug builds when called inside a V8 callback: `what` names the lock about to be
/// taken. Release builds: nothing.
#[inline]
#[track_caller]
pub fn assert_outside_v8_callback(what: &str) {
    #[cfg(debug_assertions)]
    if DEPTH.with(Cell::get) > 0 {
        panic!("{what} taken inside a V8 callback (allocation path, GC or sweeper thread): see src/v8_callbacks.rs");
    }
    #[cfg(not(debug_assertions))]
    let _ = what;
}
