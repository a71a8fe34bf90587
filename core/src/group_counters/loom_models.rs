//! Loom models of the group counters' first charges: a projection's row takes one of the
//! session's `maxGroups` group slots at its first charge, on whichever thread that charge runs
//! (`Bank::claim`). Banks have 4 chunks of 2 rows under loom. Run by `scripts/test.d/35-loom.sh`;
//! see "Model checks of the lock-free tables" in docs/architecture.md.

use super::*;
use crate::sync::models::{model, race, Seen, SMALL};
use std::sync::Arc;

fn pairs(value: &str) -> Vec<(Box<str>, Box<str>)> {
    vec![(Box::from("k"), Box::from(value))]
}

/// A session grouping by `k` into at most `max_groups` groups, with one set per value in
/// `values`, projected (the sets of equal values share a row) and nothing charged yet.
fn session(max_groups: usize, values: &[&str]) -> (Arc<GroupTable>, Vec<Arc<SetGroup>>) {
    let table = Arc::new(GroupTable::new());
    table.start(vec!["k".into()], max_groups, 8);
    let sets = values
        .iter()
        .map(|value| {
            let set = Arc::new(SetGroup::new());
            table.assign(&set, &pairs(value), false);
            set
        })
        .collect();
    (table, sets)
}

/// The projection of a set whose only label is `k`: `value`.
fn projection(value: &str) -> GroupProjection {
    vec![("k".to_owned(), value.to_owned())]
}

/// The session's rows as a read lists them, with its overflow count.
fn read(table: &GroupTable) -> (Vec<[i64; GROUP_ROW_WIDTH]>, u64) {
    let mut out = [0i64; GROUP_ROW_WIDTH * 8];
    let read = table.read(false, 1, &mut out).unwrap().unwrap();
    let rows = out
        .chunks_exact(GROUP_ROW_WIDTH)
        .take(read.groups)
        .map(|r| r.try_into().unwrap())
        .collect();
    (rows, read.overflow_count)
}

/// The counters of row `index` of the running session, listed or not.
fn row(table: &GroupTable, index: u32) -> [i64; 7] {
    let generation = table.active.load(Ordering::Relaxed);
    let c = table.bank_of(generation).row(index).unwrap();
    [
        c.allocated_samples.load(Ordering::Relaxed) as i64,
        c.current_samples.load(Ordering::Relaxed),
        c.allocated_external_bytes.load(Ordering::Relaxed) as i64,
        c.allocated_external_count.load(Ordering::Relaxed) as i64,
        c.freed_external_bytes.load(Ordering::Relaxed) as i64,
        c.freed_external_count.load(Ordering::Relaxed) as i64,
        c.current_external.load(Ordering::Relaxed),
    ]
}

/// (a) Two threads make the first charges of one new row, through two sets with the same
/// projection (a sample on one, a block of 5 bytes on the other): the row takes exactly one
/// group slot, whichever thread claims it, and both charges are in it.
#[test]
fn two_first_charges_of_one_row_take_one_slot() {
    let seen = Seen::default();
    let outcomes = seen.clone();
    model(SMALL, move |b_first| {
        let (table, sets) = session(2, &["x", "x"]);
        let (a, b) = (Arc::clone(&sets[0]), Arc::clone(&sets[1]));
        let (ta, tb) = (Arc::clone(&table), Arc::clone(&table));
        race(
            b_first,
            move || ta.sample_taken(&a),
            move || tb.external_allocated(&b, 5),
        );
        let (rows, overflow_count) = read(&table);
        assert_eq!(rows.len(), 3, "unknown, overflow and the one group");
        assert_eq!(overflow_count, 0);
        assert_eq!(rows[2], [1, 1, 1, 5, 1, 0, 0, 5, 0]);
        assert_eq!(rows[1], [0; GROUP_ROW_WIDTH], "nothing in overflow");
        let generation = table.active.load(Ordering::Relaxed);
        assert_eq!(table.bank_of(generation).charged.load(Ordering::Relaxed), 1);
        outcomes.saw_reached();
    });
    seen.assert_saw(&["a charge met the row claiming, then saw it charged"]);
}

/// (b) The same race on a row that finds no group slot left (maxGroups 1, spent by another row
/// first charged before): the row is refused once, and every charge ends in the overflow group,
/// also a charge that landed in the row while it was being claimed (moved by the claimer's sweep
/// or by its own thread's); the row is left empty and is not listed. Preemption bound 3 (about
/// 800 executions; 10 makes 200,000, and every planted bug (docs/architecture.md) fails at 3 already).
#[test]
fn first_charges_of_a_refused_row_all_reach_the_overflow_group() {
    let seen = Seen::default();
    let outcomes = seen.clone();
    model(Some(3), move |b_first| {
        let (table, sets) = session(1, &["w", "x", "x"]);
        table.sample_taken(&sets[0]);
        let (a, b) = (Arc::clone(&sets[1]), Arc::clone(&sets[2]));
        let (ta, tb) = (Arc::clone(&table), Arc::clone(&table));
        race(
            b_first,
            move || ta.sample_taken(&a),
            move || tb.external_allocated(&b, 5),
        );
        let (rows, overflow_count) = read(&table);
        assert_eq!(rows.len(), 3, "unknown, overflow and w's group");
        assert_eq!(overflow_count, 1, "x refused once");
        assert_eq!(rows[1], [1, 1, 1, 5, 1, 0, 0, 5, 0]);
        assert_eq!(rows[2][..2], [1, 1], "w");
        assert_eq!(row(&table, 3), [0; 7], "swept");
        outcomes.saw_reached();
    });
    seen.assert_saw(&[
        "a charge met the row claiming, then saw it refused and swept",
        "a charge met the row claiming, the claimer sweeps after",
    ]);
}

/// (c) Two new rows race for the last group slot: exactly one gets it (either can), the other is
/// refused and charged to the overflow group; the group listed is the winner's.
#[test]
fn two_rows_racing_for_the_last_slot_get_exactly_one() {
    let seen = Seen::default();
    let outcomes = seen.clone();
    model(SMALL, move |b_first| {
        let (table, sets) = session(1, &["x", "y"]);
        let (x, y) = (Arc::clone(&sets[0]), Arc::clone(&sets[1]));
        let (tx, ty) = (Arc::clone(&table), Arc::clone(&table));
        race(
            b_first,
            move || tx.sample_taken(&x),
            move || ty.external_allocated(&y, 5),
        );
        let (rows, overflow_count) = read(&table);
        assert_eq!(rows.len(), 3);
        assert_eq!(overflow_count, 1);
        let labels = table.labels_from(2).unwrap();
        let winner = labels[0][0].1.as_str();
        let (listed, overflow) = if winner == "x" {
            ([1, 1, 1, 0, 0, 0, 0, 0, 0], [0, 0, 0, 5, 1, 0, 0, 5, 0])
        } else {
            ([0, 0, 0, 5, 1, 0, 0, 5, 0], [1, 1, 1, 0, 0, 0, 0, 0, 0])
        };
        assert_eq!(rows[2], listed, "{winner}'s group");
        assert_eq!(rows[1], overflow, "the other's charge");
        outcomes.saw(if winner == "x" {
            "x got the slot"
        } else {
            "y got the slot"
        });
    });
    seen.assert_saw(&["x got the slot", "y got the slot"]);
}

/// (d) A read (the isolate thread) races the first charge of a new row on another thread: the
/// read lists the row or not yet, never a slot taken whose index is not written yet (that ends
/// the list: read as row 0 it would list the unknown group twice), and a listed row has its
/// labels and at most the charge; the next read lists it with the whole charge.
#[test]
fn a_read_racing_a_first_charge_lists_the_row_or_not_yet() {
    let seen = Seen::default();
    let outcomes = seen.clone();
    model(SMALL, move |b_first| {
        let (table, sets) = session(2, &["x"]);
        let x = Arc::clone(&sets[0]);
        let (reader, charger) = (Arc::clone(&table), Arc::clone(&table));
        let ((during, labels), ()) = race(
            b_first,
            move || {
                let (rows, overflow_count) = read(&reader);
                assert_eq!(overflow_count, 0);
                (rows, reader.labels_from(2).unwrap())
            },
            move || charger.external_allocated(&x, 5),
        );
        let charged = [0, 0, 0, 5, 1, 0, 0, 5, 0];
        assert_eq!(
            during[..2],
            [[0; GROUP_ROW_WIDTH]; 2],
            "unknown and overflow, once each"
        );
        match during.len() {
            2 => outcomes.saw("the read did not list the row yet"),
            3 => {
                assert_eq!(labels[0], projection("x"));
                for (got, whole) in during[2].iter().zip(charged) {
                    assert!(*got == 0 || *got == whole, "{:?}", during[2]);
                }
                outcomes.saw("the read listed the row");
            }
            n => panic!("{n} rows"),
        }
        let (after, _) = read(&table);
        assert_eq!(after.len(), 3);
        assert_eq!(after[2], charged);
        outcomes.saw_reached();
    });
    seen.assert_saw(&[
        "the read did not list the row yet",
        "the read listed the row",
        "a read found a slot taken, its index not written yet",
    ]);
}

/// (e) A bank comes round again (generation 1, seven sessions later) with the row a projection
/// gets left refused by its earlier session. The new session reserves that row for x, whose set
/// holds 5 bytes from before, and seeds it with them, while a free of those bytes runs on another
/// thread (a sweeper): the free comes first (the set had no tag of this session: nothing
/// charged, no group) or is credited to the row the bytes were seeded in, never to the overflow
/// group the row's stale state would send it to. The tag is given with release after the row is
/// reset and read with acquire by every charge.
#[test]
fn a_free_racing_the_seed_of_a_reused_row_is_credited_where_its_bytes_were() {
    let seen = Seen::default();
    let outcomes = seen.clone();
    model(SMALL, move |b_first| {
        let table = Arc::new(GroupTable::new());
        // Generation 1: maxGroups 1; w takes the slot, v's row (2) is refused.
        let (v, w) = (SetGroup::new(), SetGroup::new());
        table.start(vec!["k".into()], 1, 8);
        table.assign(&v, &pairs("v"), false);
        table.assign(&w, &pairs("w"), false);
        table.sample_taken(&w);
        table.sample_taken(&v);
        // Generations 2 to 7, then 1 again.
        for _ in 0..GENERATIONS {
            table.start(vec!["k".into()], 1, 8);
        }
        assert_eq!(table.active.load(Ordering::Relaxed), 1);
        let x = Arc::new(SetGroup::new());
        table.external_allocated(&x, 5);
        let (assigner, freer) = (Arc::clone(&table), Arc::clone(&table));
        let (x_assigned, x_freed) = (Arc::clone(&x), Arc::clone(&x));
        race(
            b_first,
            move || assigner.assign(&x_assigned, &pairs("x"), false),
            move || freer.external_freed(&x_freed, 5),
        );
        let (rows, overflow_count) = read(&table);
        assert_eq!(overflow_count, 0);
        assert_eq!(rows[1], [0; GROUP_ROW_WIDTH], "nothing in overflow");
        if rows.len() == 2 {
            outcomes.saw("the free came before the tag");
        } else {
            assert_eq!(rows.len(), 3);
            assert_eq!(table.labels_from(2).unwrap(), [projection("x")]);
            assert_eq!(rows[2], [0, 0, 0, 0, 0, 5, 1, 0, 0], "seeded 5, freed 5");
            outcomes.saw("the free was credited to x's row");
        }
    });
    seen.assert_saw(&[
        "the free came before the tag",
        "the free was credited to x's row",
    ]);
}
