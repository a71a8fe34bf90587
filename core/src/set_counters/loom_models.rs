//! Loom models of the set counters: V8's callbacks counting into one slot from several threads
//! while the counters read takes the external peak, and the chunks' reference counting against
//! the order in which the table and its sets go. Chunks have 2 slots under loom. Run by
//! `scripts/test.d/35-loom.sh`; see "Model checks of the lock-free tables" in
//! docs/architecture.md.

use super::*;
use crate::sync::models::{model, Seen, SMALL};
use loom::thread;

/// The group counters the models' tables count into (no session groups here, so they stay
/// untouched): made in each execution, as loom's atomics must be.
fn groups() -> Arc<GroupTable> {
    Arc::new(GroupTable::default())
}

/// (e) Two threads count into one set (+3 then -3 bytes; a sample and +5 bytes) while the
/// counters read (`for_each_nonzero` + `take_external_peak`, as `fill_counter_rows` does) runs
/// on a third; then two more reads. The sums are exact, and the peak is what the module
/// promises: a read never reports a value the bytes did not hold, and the highest value they
/// reached (8 when the +5 came between the +3 and the -3, else 5) is reported by the read that
/// ran with the changes or, at the latest, by the next one: the two together report exactly the
/// true maximum, never less. The read after that reports the current bytes (a new period).
/// Preemption bound 3 (about 200,000 executions, most of the run's time).
#[test]
fn concurrent_counting_keeps_sums_exact_and_the_peak_reported() {
    let seen = Seen::default();
    let outcomes = seen.clone();
    model(Some(3), move |reader_first| {
        let table = loom::sync::Arc::new(CounterTable::with_groups(groups()));
        let set = loom::sync::Arc::new(table.claim(1));
        let read = {
            let table = loom::sync::Arc::clone(&table);
            move || {
                let mut peak = None;
                table.for_each_nonzero(|index, counters| {
                    assert_eq!(index, 1);
                    peak = Some(counters.take_external_peak());
                });
                peak
            }
        };
        // Spawned first or last: see `race` (the reader loads what the writers change and
        // then swaps the peak).
        let reader = reader_first.then(|| thread::spawn(read.clone()));
        let a = {
            let set = loom::sync::Arc::clone(&set);
            thread::spawn(move || {
                let up = set.external_changed(3);
                let down = set.external_changed(-3);
                (up, down)
            })
        };
        let b = {
            let set = loom::sync::Arc::clone(&set);
            thread::spawn(move || {
                set.sample_taken();
                set.external_changed(5)
            })
        };
        let reader = reader.unwrap_or_else(|| thread::spawn(read));
        let (a_up, a_down) = a.join().unwrap();
        let b_up = b.join().unwrap();
        let during = reader.join().unwrap();
        // Every value the bytes held: 0, then the results of the three changes.
        let states = [0, a_up, a_down, b_up];
        let true_max = a_up.max(b_up);
        let after = set.get().take_external_peak();
        let next = set.get().take_external_peak();

        assert_eq!(set.get().external.load(Ordering::Relaxed), 5);
        assert_eq!(set.get().live_samples.load(Ordering::Relaxed), 1);
        if let Some(during) = during {
            assert!(
                states.contains(&during),
                "reported {during}, held {states:?}"
            );
        }
        assert!(states.contains(&after), "reported {after}, held {states:?}");
        assert_eq!(
            during.unwrap_or(0).max(after),
            true_max,
            "held {states:?}, reported {during:?} then {after}"
        );
        assert_eq!(
            next, 5,
            "a read starts the next period at the current bytes"
        );
        outcomes.saw(match (true_max, during) {
            (8, Some(8)) => "the concurrent read reported the peak of 8",
            (8, _) => "the next read reported the peak of 8",
            (5, _) => "the bytes never held 8",
            _ => "other",
        });
    });
    seen.assert_saw(&[
        "the concurrent read reported the peak of 8",
        "the next read reported the peak of 8",
        "the bytes never held 8",
    ]);
}

/// A chunk lives as long as its table or any set with a slot in it: the table goes (registry
/// teardown) on one thread while a set counts and goes on another and a third set counts on the
/// main thread. Whatever the order, the counts land, the gone set's slot is zeroed, the
/// surviving set holds the last reference, and dropping it frees the chunk (loom fails a model
/// that ends with an `Arc` leaked).
#[test]
fn a_chunk_outlives_its_table_while_a_set_holds_it() {
    model(SMALL, move |counting_first| {
        let table = CounterTable::with_groups(groups());
        let kept = table.claim(0);
        let gone = table.claim(1);
        assert_eq!(loom::sync::Arc::strong_count(&kept.chunk), 3);
        let teardown = move || drop(table);
        let counting = move || {
            gone.sample_taken();
            assert_eq!(gone.external_changed(7), 7);
            drop(gone);
        };
        let (teardown, counting) = if counting_first {
            let counting = thread::spawn(counting);
            (thread::spawn(teardown), counting)
        } else {
            (thread::spawn(teardown), thread::spawn(counting))
        };
        assert_eq!(kept.external_changed(4), 4);
        kept.sample_taken();
        teardown.join().unwrap();
        counting.join().unwrap();
        assert_eq!(loom::sync::Arc::strong_count(&kept.chunk), 1);
        let counters = kept.get();
        assert_eq!(counters.external.load(Ordering::Relaxed), 4);
        assert_eq!(counters.live_samples.load(Ordering::Relaxed), 1);
        let neighbour = &kept.chunk[1];
        assert_eq!(neighbour.external.load(Ordering::Relaxed), 0, "zeroed");
        assert_eq!(neighbour.live_samples.load(Ordering::Relaxed), 0, "zeroed");
    });
}
