//! Which label word each live ArrayBuffer block was charged to, kept *beside* the blocks.
//!
//! The counting allocator in cpp/ used to prefix every block with a 16-byte header holding its
//! word. The header sat inside the memory it asked Node's allocator for, so Node counted it in
//! `process.memoryUsage().arrayBuffers` (a 1-byte Buffer counted 17 bytes). The words now live in
//! this table, keyed by the block's address, and the allocator hands Node's allocator the exact
//! length: Node's bookkeeping, `--zero-fill-buffers` and the `Buffer.allocUnsafe` zero-fill toggle
//! see exactly what they would see without heap-labels.
//!
//! Constraints, from where the calls come from:
//! - [`insert`](BlockWords::insert) runs on V8's ArrayBuffer allocation path of the isolate thread:
//!   no JS heap, no lock, no waiting. One thread inserts at a time (a try-flag turns a concurrent
//!   second inserter into a refused insert rather than a wait; the block is then just unlabeled).
//! - [`remove`](BlockWords::remove) runs on any thread, mostly V8's ArrayBuffer sweeper threads,
//!   concurrently with each other and with the inserter: atomics only, never a wait.
//!
//! Design: open-addressing hash tables with linear probing. A slot's block address goes
//! EMPTY -> block -> TOMBSTONE (the remover's compare-and-swap) -> block or EMPTY (inserter only).
//! Entries never move, so a remover always finds its block along the probe chain. Tombstones are
//! given back in place by the inserter: a run of tombstones followed by an empty slot lies on no
//! live block's probe chain (such a chain has no empty slot before its block), so it can become
//! empty. When a table stays over half full, inserts move to another table with room or to a new
//! one twice as large; tables are never freed while the owner lives (removers may be reading them),
//! so memory stays within a small multiple of the peak number of labeled blocks.

use std::ptr;

use crate::sync::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

/// A slot never used since the table was made (or given back by cleaning).
const EMPTY: usize = 0;
/// A slot whose block was removed. Block addresses are aligned, so 1 is never one.
const TOMBSTONE: usize = 1;
/// Slots of the first table (16 KiB); table `g` has `FIRST_CAPACITY << g`.
#[cfg(not(loom))]
const FIRST_CAPACITY: usize = 1024;
/// Under loom: tables of 4, 8, ... slots, so that the models reach growth and cleaning in a few
/// inserts.
#[cfg(loom)]
const FIRST_CAPACITY: usize = 4;
/// Enough tables for 2^41 slots: more than any address space holds blocks for.
const MAX_TABLES: usize = 32;

struct Slot {
    block: AtomicUsize,
    word: AtomicUsize,
}

struct Table {
    slots: Box<[Slot]>,
    /// log2 of the capacity.
    bits: u32,
    /// Non-empty slots (live blocks and tombstones). Written by the inserter only.
    used: AtomicUsize,
    /// Live blocks.
    live: AtomicUsize,
}

impl Table {
    /// A table of `1 << bits` empty slots, or `None` when the memory cannot be had.
    fn new(bits: u32) -> Option<Box<Table>> {
        let capacity = 1usize.checked_shl(bits)?;
        let mut slots = Vec::new();
        slots.try_reserve_exact(capacity).ok()?;
        slots.extend((0..capacity).map(|_| Slot {
            block: AtomicUsize::new(EMPTY),
            word: AtomicUsize::new(0),
        }));
        Some(Box::new(Table {
            slots: slots.into_boxed_slice(),
            bits,
            used: AtomicUsize::new(0),
            live: AtomicUsize::new(0),
        }))
    }

    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// Inserts stop at half the capacity, so probe chains stay short and an empty slot always
    /// ends a search.
    fn has_room(&self) -> bool {
        self.used.load(Ordering::Relaxed) < self.slots.len() / 2
    }

    /// Fibonacci hashing of the address (its low 4 bits are alignment, always zero).
    fn home(&self, block: usize) -> usize {
        let hashed = ((block as u64) >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (hashed >> (64 - self.bits)) as usize
    }

    /// Inserter only, with room.
    fn insert(&self, block: usize, word: usize) {
        let mask = self.mask();
        let mut i = self.home(block);
        loop {
            let slot = &self.slots[i];
            // Acquire: a remover's word read happened before its tombstone, so it is done with
            // the slot before we write the word.
            let current = slot.block.load(Ordering::Acquire);
            if current == EMPTY || current == TOMBSTONE {
                slot.word.store(word, Ordering::Relaxed);
                self.live.fetch_add(1, Ordering::Relaxed);
                if current == EMPTY {
                    self.used.fetch_add(1, Ordering::Relaxed);
                }
                // Release: whoever sees the block sees its word and the live count.
                slot.block.store(block, Ordering::Release);
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// Any thread.
    fn remove(&self, block: usize) -> Option<usize> {
        let mask = self.mask();
        let mut i = self.home(block);
        for _ in 0..self.slots.len() {
            let slot = &self.slots[i];
            let current = slot.block.load(Ordering::Acquire);
            if current == EMPTY {
                return None;
            }
            if current == block {
                let word = slot.word.load(Ordering::Relaxed);
                // Only this block's (single) free removes it; the exchange cannot lose a race
                // unless a block is freed twice.
                if slot
                    .block
                    .compare_exchange(block, TOMBSTONE, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    self.live.fetch_sub(1, Ordering::Relaxed);
                    return Some(word);
                }
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// Inserter only: turns every run of tombstones that ends at an empty slot back into empty
    /// slots. Such a run lies on no live block's probe chain. A block removed while this runs
    /// simply stays a tombstone until the next cleaning.
    fn clean(&self) {
        let mask = self.mask();
        // Start right after an empty slot so that every run is seen whole; a table with room
        // always has one.
        let Some(start) = self
            .slots
            .iter()
            .position(|s| s.block.load(Ordering::Acquire) == EMPTY)
        else {
            return;
        };
        let (mut run_start, mut run_len, mut freed) = (0usize, 0usize, 0usize);
        for k in 1..=self.slots.len() {
            let i = (start + k) & mask;
            match self.slots[i].block.load(Ordering::Acquire) {
                EMPTY => {
                    for r in 0..run_len {
                        self.slots[(run_start + r) & mask]
                            .block
                            .store(EMPTY, Ordering::Relaxed);
                    }
                    freed += run_len;
                    run_len = 0;
                }
                TOMBSTONE => {
                    if run_len == 0 {
                        run_start = i;
                    }
                    run_len += 1;
                }
                _ => run_len = 0,
            }
        }
        self.used.fetch_sub(freed, Ordering::Relaxed);
    }
}

/// Block address -> label word, for blocks charged to a label set. See the module docs.
pub struct BlockWords {
    tables: [AtomicPtr<Table>; MAX_TABLES],
    /// Tables made so far: `tables[..count]` are set.
    count: AtomicUsize,
    /// The table inserts go to. Inserter only.
    current: AtomicUsize,
    /// Set while an insert runs.
    inserting: AtomicBool,
}

impl Default for BlockWords {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for BlockWords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockWords")
            .field("len", &self.len())
            .field("tables", &self.count.load(Ordering::Relaxed))
            .finish()
    }
}

impl BlockWords {
    /// An empty table set; no memory until the first insert.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        #[allow(clippy::declare_interior_mutable_const)]
        const NONE: AtomicPtr<Table> = AtomicPtr::new(ptr::null_mut());
        BlockWords {
            tables: [NONE; MAX_TABLES],
            count: AtomicUsize::new(0),
            current: AtomicUsize::new(0),
            inserting: AtomicBool::new(false),
        }
    }

    /// An empty table set (loom's atomics have no `const` constructor).
    #[cfg(loom)]
    pub fn new() -> Self {
        BlockWords {
            tables: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            count: AtomicUsize::new(0),
            current: AtomicUsize::new(0),
            inserting: AtomicBool::new(false),
        }
    }

    fn table(&self, index: usize) -> Option<&Table> {
        let table = self.tables[index].load(Ordering::Acquire);
        // SAFETY: a non-null pointer was made by `Box::into_raw` in `add_table` and is freed only
        // by `drop`, which has `&mut self`, so it is valid for as long as `self` is borrowed.
        (!table.is_null()).then(|| unsafe { &*table })
    }

    /// Records that `block` (an address, never 0 or 1) carries `word`. Returns false, recording
    /// nothing, when another insert is running on another thread or no memory could be had for
    /// the table: the caller then charges the block as unlabeled.
    ///
    /// Runs on V8's ArrayBuffer allocation path: no lock, no wait; it allocates (plain heap, not
    /// the JS heap) only when the tables grow.
    pub fn insert(&self, block: usize, word: usize) -> bool {
        if block == EMPTY || block == TOMBSTONE {
            return false;
        }
        if self.inserting.swap(true, Ordering::Acquire) {
            return false;
        }
        let inserted = match self.table_with_room() {
            Some(table) => {
                table.insert(block, word);
                true
            }
            None => false,
        };
        self.inserting.store(false, Ordering::Release);
        inserted
    }

    /// The word recorded for `block`, removing it; `None` for a block never inserted (or already
    /// removed). Any thread, concurrently with inserts and other removes: atomics only.
    pub fn remove(&self, block: usize) -> Option<usize> {
        if block == EMPTY || block == TOMBSTONE {
            return None;
        }
        let count = self.count.load(Ordering::Acquire);
        // Newest (largest) first: that is where most blocks are.
        (0..count)
            .rev()
            .filter_map(|g| self.table(g))
            .find_map(|table| table.remove(block))
    }

    /// Blocks currently recorded.
    pub fn len(&self) -> usize {
        (0..self.count.load(Ordering::Acquire))
            .filter_map(|g| self.table(g))
            .map(|t| t.live.load(Ordering::Relaxed))
            .sum()
    }

    /// Whether no block is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slots allocated over all tables (memory is 16 bytes a slot).
    pub fn capacity(&self) -> usize {
        (0..self.count.load(Ordering::Acquire))
            .filter_map(|g| self.table(g))
            .map(|t| t.slots.len())
            .sum()
    }

    /// Inserter only (the `inserting` flag is held).
    fn table_with_room(&self) -> Option<&Table> {
        let count = self.count.load(Ordering::Relaxed);
        let current = self.current.load(Ordering::Relaxed);
        if let Some(table) = self.table(current).filter(|t| t.has_room()) {
            return Some(table);
        }
        // The current table is full: give its tombstones back, then try the others, largest
        // first, then a new table.
        let candidates = std::iter::once(current).chain((0..count).rev().filter(|&g| g != current));
        for g in candidates {
            let Some(table) = self.table(g) else { continue };
            table.clean();
            // Keep some room so that a table is not cleaned again after a handful of inserts.
            if table.used.load(Ordering::Relaxed) < table.slots.len() * 3 / 8 {
                self.current.store(g, Ordering::Relaxed);
                return Some(table);
            }
        }
        self.add_table(count)
    }

    /// Inserter only.
    fn add_table(&self, index: usize) -> Option<&Table> {
        if index >= MAX_TABLES {
            return None;
        }
        let bits = FIRST_CAPACITY.trailing_zeros() + index as u32;
        let table = Table::new(bits)?;
        self.tables[index].store(Box::into_raw(table), Ordering::Release);
        self.count.store(index + 1, Ordering::Release);
        self.current.store(index, Ordering::Relaxed);
        self.table(index)
    }
}

impl Drop for BlockWords {
    fn drop(&mut self) {
        for table in &mut self.tables {
            #[cfg(not(loom))]
            let table = std::mem::replace(table.get_mut(), ptr::null_mut());
            #[cfg(loom)]
            let table = table.with_mut(|table| std::mem::replace(table, ptr::null_mut()));
            if !table.is_null() {
                // SAFETY: made by `Box::into_raw` in `add_table`; `&mut self` means no other
                // thread can be reading it.
                drop(unsafe { Box::from_raw(table) });
            }
        }
    }
}

#[cfg(all(test, loom))]
mod loom_models;

// Under loom the atomics work inside `loom::model` only: these run in the normal build.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    // Addresses shaped like allocator results: 16-byte aligned.
    fn addr(i: usize) -> usize {
        0x7f00_0000_0000 + i * 16
    }

    #[test]
    fn insert_then_remove_gives_the_word_back_once() {
        let words = BlockWords::new();
        assert_eq!(words.capacity(), 0, "no memory before the first insert");
        assert!(words.insert(addr(1), 0xAB0));
        assert!(words.insert(addr(2), 0xCD0));
        assert_eq!(words.len(), 2);
        assert_eq!(words.remove(addr(1)), Some(0xAB0));
        assert_eq!(words.remove(addr(1)), None, "removed once");
        assert_eq!(words.remove(addr(3)), None, "never inserted");
        assert_eq!(words.remove(addr(2)), Some(0xCD0));
        assert!(words.is_empty());
    }

    #[test]
    fn addresses_0_and_1_are_refused() {
        let words = BlockWords::new();
        assert!(!words.insert(0, 5));
        assert!(!words.insert(1, 5));
        assert_eq!(words.remove(0), None);
        assert_eq!(words.remove(1), None);
    }

    #[test]
    fn a_reused_address_carries_its_new_word() {
        let words = BlockWords::new();
        for round in 0..10_000usize {
            assert!(words.insert(addr(7), round + 16));
            assert_eq!(words.remove(addr(7)), Some(round + 16));
        }
        assert!(words.is_empty());
    }

    #[test]
    fn steady_churn_keeps_memory_bounded() {
        // Tombstones are given back, so a steady population does not grow the tables.
        let words = BlockWords::new();
        let live = 300;
        for i in 0..live {
            assert!(words.insert(addr(i), i + 16));
        }
        for i in live..600_000 {
            assert!(words.insert(addr(i), i + 16));
            assert_eq!(words.remove(addr(i - live)), Some(i - live + 16));
        }
        assert_eq!(words.len(), live);
        assert_eq!(
            words.capacity(),
            FIRST_CAPACITY,
            "one table is enough for 300 live blocks"
        );
    }

    #[test]
    fn growth_keeps_old_entries_findable() {
        let words = BlockWords::new();
        let n = 100_000;
        for i in 0..n {
            assert!(words.insert(addr(i), i + 16));
        }
        assert_eq!(words.len(), n);
        assert!(words.capacity() >= 2 * n);
        assert!(
            words.capacity() <= 16 * n,
            "capacity {} for {n}",
            words.capacity()
        );
        for i in (0..n).rev() {
            assert_eq!(words.remove(addr(i)), Some(i + 16), "block {i}");
        }
        assert!(words.is_empty());
        // Emptied tables serve new inserts: no new table.
        let capacity = words.capacity();
        for i in 0..n {
            assert!(words.insert(addr(n + i), 1));
        }
        assert_eq!(words.capacity(), capacity);
    }

    #[test]
    fn long_lived_blocks_in_every_table_do_not_pin_growth() {
        // One survivor per table generation, then churn: tables with room are reused.
        let words = BlockWords::new();
        let mut next = 0usize;
        for _ in 0..6 {
            for _ in 0..20_000 {
                assert!(words.insert(addr(next), next + 16));
                next += 1;
            }
            for i in (next - 20_000 + 1)..next {
                assert_eq!(words.remove(addr(i)), Some(i + 16));
            }
        }
        let capacity = words.capacity();
        for _ in 0..200_000 {
            assert!(words.insert(addr(next), 16));
            assert_eq!(words.remove(addr(next)), Some(16));
            next += 1;
        }
        assert_eq!(words.capacity(), capacity);
        assert_eq!(words.len(), 6);
    }

    #[test]
    fn a_concurrent_second_inserter_is_refused_not_blocked() {
        let words = BlockWords::new();
        words.inserting.store(true, Ordering::Relaxed);
        assert!(!words.insert(addr(1), 16));
        words.inserting.store(false, Ordering::Relaxed);
        assert!(words.insert(addr(1), 16));
    }

    #[test]
    fn removes_on_many_threads_while_one_thread_inserts() {
        // The allocator's pattern: the isolate thread inserts, sweeper threads remove, and the
        // allocator hands freed addresses out again. Every block must be removed exactly once
        // with the word it was inserted with, and nothing may be left.
        use std::sync::mpsc::channel;
        let words = Arc::new(BlockWords::new());
        let (to_removers, batches) = channel::<Vec<(usize, usize)>>();
        let (freed_sender, freed) = channel::<usize>();
        let batches = Arc::new(std::sync::Mutex::new(batches));
        let removers: Vec<_> = (0..3)
            .map(|_| {
                let words = Arc::clone(&words);
                let batches = Arc::clone(&batches);
                let freed_sender = freed_sender.clone();
                std::thread::spawn(move || {
                    let mut removed = 0usize;
                    loop {
                        let batch = batches.lock().unwrap().recv();
                        let Ok(batch) = batch else { return removed };
                        for (block, word) in batch {
                            assert_eq!(words.remove(block), Some(word), "block {block:#x}");
                            removed += 1;
                            // Like free(): the address may be handed out again from now on.
                            let _ = freed_sender.send(block);
                        }
                    }
                })
            })
            .collect();
        drop(freed_sender);
        let mut fresh = 0usize;
        let mut batch = Vec::new();
        let total = 400_000usize;
        let mut reused = 0usize;
        for n in 0..total {
            let block = match freed.try_recv() {
                Ok(block) => {
                    reused += 1;
                    block
                }
                Err(_) => {
                    fresh += 1;
                    addr(fresh)
                }
            };
            let word = (n + 1) * 16;
            assert!(words.insert(block, word));
            batch.push((block, word));
            if batch.len() == 500 {
                to_removers.send(std::mem::take(&mut batch)).unwrap();
            }
        }
        to_removers.send(batch).unwrap();
        drop(to_removers);
        let removed: usize = removers.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(removed, total);
        assert!(reused > 0, "addresses were reused while removes ran");
        assert!(words.is_empty());
    }
}
