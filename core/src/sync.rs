//! The atomics (and the `Arc`) of the lock-free tables, [`block_words`](crate::block_words),
//! `set_counters` and [`group_counters`](crate::group_counters): std's in every normal build,
//! loom's when the crate is built with `--cfg loom` for the model checks
//! (`scripts/test.d/35-loom.sh`, the `loom_models` tests beside each table).
//! Loom's types have the same methods as std's; what they lack (`const` constructors,
//! `AtomicPtr::get_mut`) is handled where it is used, under `cfg(loom)`, so that the normal build's
//! code is the code the models check.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize,
};
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize,
};
#[cfg(loom)]
pub(crate) use loom::sync::Arc;

pub(crate) use std::sync::atomic::Ordering;

/// `const fn` in the normal build, a plain `fn` under loom (whose atomics have no `const`
/// constructor): for the constructors of types that hold the atomics above.
macro_rules! const_fn_unless_loom {
    ($(#[$attr:meta])* $vis:vis fn $name:ident() -> $ret:ty $body:block) => {
        #[cfg(not(loom))]
        $(#[$attr])*
        $vis const fn $name() -> $ret $body
        #[cfg(loom)]
        $(#[$attr])*
        $vis fn $name() -> $ret $body
    };
}
pub(crate) use const_fn_unless_loom;

/// What the loom models (`loom_models` beside each table) share.
#[cfg(all(test, loom))]
pub(crate) mod models {
    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    /// The preemption bound of the small models: they never need more (raising it to 30 adds no
    /// execution). A bound rather than none because loom's bounded search adds conservative
    /// backtracking points that its unbounded one leaves out, so it explores more.
    pub(crate) const SMALL: Option<usize> = Some(10);

    /// Runs a loom model: the interleavings of its threads (and the values each load may read
    /// under the C11 memory model) that loom's partial-order reduction finds, with at most
    /// `preemptions` preemptions of a thread that could have gone on (`None`: no bound), unless
    /// `LOOM_MAX_PREEMPTIONS` sets the bound. `f` runs twice, with `false` and `true`: see
    /// [`race`].
    pub(crate) fn model(preemptions: Option<usize>, f: impl Fn(bool) + Sync + Send + 'static) {
        let f = Arc::new(f);
        for b_first in [false, true] {
            let mut builder = loom::model::Builder::new();
            if std::env::var_os("LOOM_MAX_PREEMPTIONS").is_none() {
                builder.preemption_bound = preemptions;
            }
            let executions = Arc::new(AtomicUsize::new(0));
            let (counted, f) = (Arc::clone(&executions), Arc::clone(&f));
            builder.check(move || {
                counted.fetch_add(1, Ordering::Relaxed);
                f(b_first);
            });
            // Shown with --nocapture (and with a failure): how much of the model was explored.
            println!(
                "loom: {} executions (b_first {b_first}, preemption bound {:?})",
                executions.load(Ordering::Relaxed),
                builder.preemption_bound
            );
        }
    }

    /// Runs `a` and `b` on two new threads, `b`'s spawned first when `b_first`, and returns
    /// their results.
    ///
    /// The spawn order is loom's first schedule (each thread runs to its end, in spawn order),
    /// from which its partial-order reduction works back to the other interleavings. Loom 0.7's
    /// reduction remembers only the last access to each atomic, so a thread that loads a slot and
    /// then swaps it hides the race of that swap with another thread's earlier load of the slot
    /// (tokio-rs/loom#166, #392): [`model`] runs each model in both spawn orders, so that each
    /// side's writes meet the other side's loads in one of the two first schedules.
    pub(crate) fn race<A: Send + 'static, B: Send + 'static>(
        b_first: bool,
        a: impl FnOnce() -> A + Send + 'static,
        b: impl FnOnce() -> B + Send + 'static,
    ) -> (A, B) {
        if b_first {
            let b = loom::thread::spawn(b);
            let a = loom::thread::spawn(a);
            let b = b.join().unwrap();
            (a.join().unwrap(), b)
        } else {
            let a = loom::thread::spawn(a);
            let b = loom::thread::spawn(b);
            (a.join().unwrap(), b.join().unwrap())
        }
    }

    thread_local! {
        static REACHED: std::cell::RefCell<BTreeSet<&'static str>> =
            const { std::cell::RefCell::new(BTreeSet::new()) };
    }

    /// Notes that a branch of a race ran (the code under test calls it, under the models only),
    /// for [`Seen::saw_reached`]: some branches leave no trace in the results.
    pub(crate) fn reached(what: &'static str) {
        REACHED.with(|r| r.borrow_mut().insert(what));
    }

    /// Outcomes seen over all the executions of one model, so that a model can check it reached
    /// the interleavings it is about (an assertion that never ran proves nothing).
    #[derive(Clone, Default)]
    pub(crate) struct Seen(Arc<Mutex<BTreeSet<&'static str>>>);

    impl Seen {
        /// Records `what` for the running execution (std's lock, not a loom object: it adds no
        /// interleaving).
        pub(crate) fn saw(&self, what: &'static str) {
            self.0.lock().unwrap().insert(what);
        }

        /// Records the branches the code under test noted with [`reached`] since the last call
        /// (in this model's executions: loom runs a model's threads on the test's own thread).
        pub(crate) fn saw_reached(&self) {
            let reached = REACHED.with(|r| std::mem::take(&mut *r.borrow_mut()));
            self.0.lock().unwrap().extend(reached);
        }

        /// After the model: every outcome in `wanted` happened in some execution.
        pub(crate) fn assert_saw(&self, wanted: &[&'static str]) {
            let seen = self.0.lock().unwrap();
            for what in wanted {
                assert!(
                    seen.contains(what),
                    "no execution reached: {what} (saw {seen:?})"
                );
            }
        }
    }
}
