//! Loom models of [`BlockWords`]: the inserter (the isolate thread) against removers on other
//! threads (V8's sweepers), on tables of 4 and 8 slots (`FIRST_CAPACITY` under loom) so that
//! growth and cleaning happen within three inserts. Run by `scripts/test.d/35-loom.sh`; see
//! "Model checks of the lock-free tables" in docs/architecture.md for what they cover and what
//! they do not.
//!
//! In every model the blocks a thread removes were inserted before that thread was spawned (as
//! V8 hands a block to its sweeper only after the allocation returned), except in
//! `a_remover_that_finds_a_block_being_inserted_sees_its_word`, which checks the table's own
//! publication without any such edge. Each model runs in both spawn orders (`race`).

use super::*;
use crate::sync::models::{model, race, Seen, SMALL};
use loom::sync::Arc;

/// `N` distinct block addresses, 16-byte aligned like the allocator's, whose home slot in the
/// first table is `home`. Inside a model (it makes a scratch table to hash with).
fn blocks_at<const N: usize>(home: usize) -> [usize; N] {
    let scratch = Table::new(FIRST_CAPACITY.trailing_zeros()).expect("a tiny table");
    let blocks: Vec<usize> = (1..)
        .map(|i| 0x7f00_0000_0000 + i * 16)
        .filter(|&block| scratch.home(block) == home)
        .take(N)
        .collect();
    blocks.try_into().unwrap()
}

/// The (table, slot) holding `block`, if any.
fn slot_of(words: &BlockWords, block: usize) -> Option<(usize, usize)> {
    (0..words.count.load(Ordering::Acquire)).find_map(|g| {
        let table = words.table(g)?;
        let i = table
            .slots
            .iter()
            .position(|slot| slot.block.load(Ordering::Acquire) == block)?;
        Some((g, i))
    })
}

/// (a) The inserter inserts `y` while a remover removes `x`, inserted earlier on the same probe
/// chain: the remover gets `x`'s word, `y` lands either in `x`'s tombstone (reused) or after it,
/// `len()` is 1 or 2 meanwhile, and afterwards every lookup gives the right answer and `len()`
/// counts exactly.
#[test]
fn insert_races_the_remove_of_an_earlier_block() {
    let seen = Seen::default();
    let outcomes = seen.clone();
    model(SMALL, move |b_first| {
        let [x, y] = blocks_at(0);
        let words = Arc::new(BlockWords::new());
        assert!(words.insert(x, 0x10));
        let (inserter, remover) = (Arc::clone(&words), Arc::clone(&words));
        let (during, removed) = race(
            b_first,
            move || {
                assert!(inserter.insert(y, 0x20));
                inserter.len()
            },
            move || remover.remove(x),
        );
        assert!(during == 1 || during == 2, "len {during} while removing");
        assert_eq!(removed, Some(0x10));
        outcomes.saw(match slot_of(&words, y) {
            Some((0, 0)) => "y reused x's tombstone",
            Some((0, 1)) => "y went after x",
            other => panic!("y at {other:?}"),
        });
        assert_eq!(words.len(), 1);
        assert_eq!(words.remove(x), None, "x was removed once");
        assert_eq!(words.remove(y), Some(0x20));
        assert!(words.is_empty());
        assert_eq!(words.capacity(), FIRST_CAPACITY, "no growth for two blocks");
    });
    seen.assert_saw(&["y reused x's tombstone", "y went after x"]);
}

/// (b) Two removers race on one block (a double free, which the allocator never does, or a
/// remove racing another of the same address): exactly one gets the word.
#[test]
fn two_removers_of_one_block_get_its_word_once() {
    model(SMALL, |b_first| {
        let [x] = blocks_at(1);
        let words = Arc::new(BlockWords::new());
        assert!(words.insert(x, 0x10));
        let (first, second) = (Arc::clone(&words), Arc::clone(&words));
        let results = race(b_first, move || first.remove(x), move || second.remove(x));
        assert!(
            results == (Some(0x10), None) || results == (None, Some(0x10)),
            "{results:?}"
        );
        assert!(words.is_empty());
    });
}

/// (c) The inserter's third insert finds the first table full and makes a second one while a
/// remover looks, through both tables, for a block of the first (behind another on its probe
/// chain): the remover finds it whatever it saw of the growth, nothing moves, nothing is lost
/// or counted twice.
#[test]
fn growth_races_a_remove_in_the_old_table() {
    let seen = Seen::default();
    let outcomes = seen.clone();
    model(SMALL, move |b_first| {
        let [x, z] = blocks_at(2);
        let [y] = blocks_at(0);
        let words = Arc::new(BlockWords::new());
        assert!(words.insert(x, 0x10));
        assert!(words.insert(z, 0x30));
        let (inserter, remover) = (Arc::clone(&words), Arc::clone(&words));
        let (inserted, (tables_seen, removed)) = race(
            b_first,
            move || inserter.insert(y, 0x20),
            move || (remover.count.load(Ordering::Acquire), remover.remove(z)),
        );
        assert!(inserted);
        assert_eq!(
            removed,
            Some(0x30),
            "the remover saw {tables_seen} table(s)"
        );
        outcomes.saw(if tables_seen == 2 {
            "remover saw the new table"
        } else {
            "remover saw the old table only"
        });
        assert_eq!(
            words.capacity(),
            FIRST_CAPACITY * 3,
            "a table of 8 was added"
        );
        assert_eq!(
            slot_of(&words, y).map(|(g, _)| g),
            Some(1),
            "y is in the new table"
        );
        assert_eq!(words.len(), 2);
        assert_eq!(words.remove(z), None);
        assert_eq!(words.remove(x), Some(0x10));
        assert_eq!(words.remove(y), Some(0x20));
        assert!(words.is_empty());
    });
    seen.assert_saw(&[
        "remover saw the new table",
        "remover saw the old table only",
    ]);
}

/// The table's own publication, with no happens-before edge from the insert to the remover: a
/// remover that looks for `y` while the insert puts it in a new table either misses it or finds
/// it with its word (the block's release store covers the word, the table pointer's and the
/// count's cover the table), never with a stale word.
#[test]
fn a_remover_that_finds_a_block_being_inserted_sees_its_word() {
    let seen = Seen::default();
    let outcomes = seen.clone();
    model(SMALL, move |b_first| {
        let [x, z] = blocks_at(3);
        let [y] = blocks_at(1);
        let words = Arc::new(BlockWords::new());
        assert!(words.insert(x, 0x10));
        assert!(words.insert(z, 0x30));
        let (inserter, remover) = (Arc::clone(&words), Arc::clone(&words));
        let (inserted, removed) = race(
            b_first,
            move || inserter.insert(y, 0x20),
            move || remover.remove(y),
        );
        assert!(inserted);
        match removed {
            Some(word) => {
                assert_eq!(word, 0x20, "a stale word");
                assert_eq!(words.remove(y), None);
                outcomes.saw("found");
            }
            None => {
                assert_eq!(words.remove(y), Some(0x20));
                outcomes.saw("missed");
            }
        }
        assert_eq!(words.len(), 2);
    });
    seen.assert_saw(&["found", "missed"]);
}

/// (d) Tombstone cleaning by the inserter races a remover. `b` sits behind `a`'s tombstone on
/// its probe chain in a full table; the inserter's next insert cleans the table while `b` is
/// removed: cleaning never empties a slot in front of a live block (the remover always finds
/// `b`), and it gives back `b`'s slot too when the remove came first (then the table is reused
/// instead of grown).
#[test]
fn cleaning_races_a_remover() {
    let seen = Seen::default();
    let outcomes = seen.clone();
    model(SMALL, move |b_first| {
        let [a, b] = blocks_at(1);
        let [c] = blocks_at(2);
        let words = Arc::new(BlockWords::new());
        assert!(words.insert(a, 0x10));
        assert!(words.insert(b, 0x20));
        assert_eq!(words.remove(a), Some(0x10));
        let (inserter, remover) = (Arc::clone(&words), Arc::clone(&words));
        let (inserted, removed) = race(
            b_first,
            move || inserter.insert(c, 0x30),
            move || remover.remove(b),
        );
        assert!(inserted);
        assert_eq!(removed, Some(0x20));
        outcomes.saw(match words.capacity() {
            FIRST_CAPACITY => "cleaned both tombstones, table reused",
            capacity if capacity == FIRST_CAPACITY * 3 => "b still live when cleaned, grew",
            capacity => panic!("capacity {capacity}"),
        });
        assert_eq!(words.len(), 1);
        assert_eq!(words.remove(a), None);
        assert_eq!(words.remove(b), None);
        assert_eq!(words.remove(c), Some(0x30));
        assert!(words.is_empty());
    });
    seen.assert_saw(&[
        "cleaned both tombstones, table reused",
        "b still live when cleaned, grew",
    ]);
}

/// Two threads insert at once (the try-flag): one may be refused, never both, and whatever was
/// inserted is found with its word and counted once, also when the second insert grows the
/// tables.
#[test]
fn a_second_concurrent_inserter_is_refused_or_serialized() {
    let seen = Seen::default();
    let outcomes = seen.clone();
    model(SMALL, move |b_first| {
        let [x, y, z] = blocks_at(0);
        let words = Arc::new(BlockWords::new());
        assert!(words.insert(x, 0x10));
        let (one, other) = (Arc::clone(&words), Arc::clone(&words));
        let (y_in, z_in) = race(
            b_first,
            move || one.insert(y, 0x20),
            move || other.insert(z, 0x30),
        );
        assert!(y_in || z_in, "both refused");
        outcomes.saw(if y_in && z_in {
            "both inserted"
        } else {
            "one refused"
        });
        assert_eq!(words.len(), 1 + usize::from(y_in) + usize::from(z_in));
        assert_eq!(words.remove(y), y_in.then_some(0x20));
        assert_eq!(words.remove(z), z_in.then_some(0x30));
        assert_eq!(words.remove(x), Some(0x10));
        assert!(words.is_empty());
    });
    seen.assert_saw(&["both inserted", "one refused"]);
}
