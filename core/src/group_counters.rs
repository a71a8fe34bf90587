//! Group counters: the live heap samples and ArrayBuffer bytes of a session, summed per group of
//! label sets, kept current as V8 takes and drops samples and as blocks come and go. A session
//! started with `groupBy` (1 to [`MAX_GROUP_BY_KEYS`] label keys) projects every label set onto
//! those keys once: sets with the same values share a group. Reads copy at most
//! `maxGroups + 2` rows, whatever the number of label sets.
//!
//! Groups, in the order reads list them: [`UNKNOWN_GROUP`] (no groupBy key, or only empty
//! values), [`OVERFLOW_GROUP`] (a value longer than [`MAX_GROUP_VALUE_BYTES`], a projection first
//! charged when `maxGroups` groups already were, or the registry's own overflow set), then one per
//! distinct projection in the order they were first charged. A group's labels are its projection
//! in groupBy's key order, empty values left out.
//!
//! A group exists once something has been charged to it in the session. Projecting a set (at the
//! session start for every live set, at intern for a new one) only reserves a row of counters for
//! its projection, on the isolate thread; the row takes one of the session's `maxGroups` group
//! slots at its first charge (a sample, a block, a free, bytes moved to it, or live bytes its sets
//! held at the start), on whichever thread that charge runs, with atomics only ([`Bank::claim`]):
//! the row goes from reserved to claiming by one compare-and-swap (one thread wins), the winner
//! takes a slot with a bounded `fetch_update` on the session's count (so two rows racing for the
//! last slot get exactly one), and the row becomes charged, or refused when no slot was left: a
//! refused row's charges go to the overflow group. Charges that meet a row while it is being
//! claimed land in the row and re-read its state with a read-modify-write; whoever sees it
//! refused moves what is in the row to the overflow group ([`Bank::sweep`]), so nothing is lost
//! or counted twice. Reserved rows are bounded by `maxGroups + maxLabelSets` (and
//! [`MAX_GROUPS`]); a projection past that goes to the overflow group at once.
//!
//! Who touches what (the rules of `set_counters`):
//! - V8's callbacks (sample capture and release, ArrayBuffer allocation and free, on the isolate
//!   thread, in GC callbacks and on sweeper threads) charge and credit through a set's
//!   [`SetGroup`] word and the bank of the running session: atomics only, never a lock, never an
//!   allocation (rows and group slots are made before any set can reach them).
//! - The isolate thread, outside V8's callbacks, starts and stops grouping, assigns sets to
//!   projections (session start, intern) and reads; these take the table's `grouping` lock.
//!
//! Exactness across threads: a set's external bytes and its group tag share one atomic word
//! ([`SetGroup`]), so a free on a sweeper thread subtracts its bytes and learns the row they
//! were charged to in one step; the session start swaps the tag in and reads the bytes it seeds
//! the row with in one step too. A block is never credited to a group it was not counted in.
//! Tags carry the session's generation: a tag of an earlier session is ignored.
//!
//! The atomics are [`crate::sync`]'s: loom's under `--cfg loom`, where the models beside this
//! file (`group_counters/loom_models.rs`) check the first-charge races.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};

use crate::sync::{const_fn_unless_loom, AtomicI64, AtomicU32, AtomicU64, Ordering};

/// Most keys in `groupBy`.
pub const MAX_GROUP_BY_KEYS: usize = 8;
/// Longest groupBy key, in bytes of UTF-8.
pub const MAX_GROUP_KEY_BYTES: usize = 255;
/// Longest value a group keeps; a set with a longer value under a groupBy key goes to the
/// overflow group.
pub const MAX_GROUP_VALUE_BYTES: usize = 255;
/// Most groups of distinct projections a session may make (`maxGroups` range).
pub const MAX_GROUPS: usize = 65_536;
/// `maxGroups` when not given.
pub const DEFAULT_MAX_GROUPS: usize = 256;
/// The group of sets without any groupBy key (or only empty values), and of unlabeled memory.
pub const UNKNOWN_GROUP: u32 = 0;
/// The group of sets that could not have one of their own.
pub const OVERFLOW_GROUP: u32 = 1;
/// Counters per row of a read, in [`GroupTable::read`]'s order.
pub const GROUP_ROW_WIDTH: usize = 9;

/// Rows (and group slots) per chunk of a bank.
#[cfg(not(loom))]
const CHUNK: usize = 256;
/// Chunks for every row a session can reserve (projections, unknown and overflow).
#[cfg(not(loom))]
const CHUNKS: usize = (MAX_GROUPS + 2).div_ceil(CHUNK);
/// Under loom: 4 chunks of 2 rows, so that a bank is a few atomics (the models use 6 rows).
#[cfg(loom)]
const CHUNK: usize = 2;
#[cfg(loom)]
const CHUNKS: usize = 4;
/// Rows a session can reserve, unknown and overflow included.
const ROWS: usize = CHUNK * CHUNKS;

// A set's group word: the tag in the high bits, the set's live external bytes in the low ones.
const BYTES_BITS: u32 = 44;
const BYTES_MASK: u64 = (1 << BYTES_BITS) - 1;
// The tag: the session generation (3 bits, 1..=7; 0 = no group) over the row index (17 bits).
const INDEX_BITS: u32 = 17;
const INDEX_MASK: u32 = (1 << INDEX_BITS) - 1;
const GENERATIONS: u32 = 7;

// The states of a projection's row (`GroupCounters::state`); unknown and overflow are always
// charged. Reserved -> claiming -> charged or refused, each step once per session.
/// Reserved for a projection; nothing charged yet, no group slot taken.
const RESERVED: u32 = 0;
/// Its first charge is taking a group slot.
const CLAIMING: u32 = 1;
/// A group of its own, listed in the slot it took.
const CHARGED: u32 = 2;
/// No slot was left at its first charge: its charges go to the overflow group.
const REFUSED: u32 = 3;

/// Under the loom models: notes which branch of a first-charge race ran (`sync::models`).
#[cfg(all(test, loom))]
use crate::sync::models::reached;
#[cfg(not(all(test, loom)))]
#[inline(always)]
fn reached(_: &'static str) {}

fn tag(generation: u32, index: u32) -> u64 {
    u64::from(generation << INDEX_BITS | index) << BYTES_BITS
}

fn tag_of(word: u64) -> (u32, u32) {
    let tag = (word >> BYTES_BITS) as u32;
    (tag >> INDEX_BITS, tag & INDEX_MASK)
}

/// The counters of one row: a projection's (or the unknown or overflow group's).
#[derive(Debug, Default)]
pub(crate) struct GroupCounters {
    allocated_samples: AtomicU64,
    current_samples: AtomicI64,
    allocated_external_bytes: AtomicU64,
    allocated_external_count: AtomicU64,
    freed_external_bytes: AtomicU64,
    freed_external_count: AtomicU64,
    current_external: AtomicI64,
    /// Highest `current_external` of the open peak window.
    window_peak: AtomicI64,
    /// The peak of the window the last advancing read closed.
    published_peak: AtomicI64,
    /// [`RESERVED`], [`CLAIMING`], [`CHARGED`] or [`REFUSED`].
    state: AtomicU32,
}

impl GroupCounters {
    /// Zeroes the row for a new session, in `state`. Isolate thread, before any set has its tag.
    fn reset(&self, state: u32) {
        for counter in [
            &self.allocated_samples,
            &self.allocated_external_bytes,
            &self.allocated_external_count,
            &self.freed_external_bytes,
            &self.freed_external_count,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
        for counter in [
            &self.current_samples,
            &self.current_external,
            &self.window_peak,
            &self.published_peak,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
        self.state.store(state, Ordering::Relaxed);
    }

    fn add_current_external(&self, bytes: i64) {
        let now = self.current_external.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.window_peak.fetch_max(now, Ordering::Relaxed);
    }
}

/// A set's group tag and live external bytes in one atomic word (see the module comment). The
/// bytes count here whether or not a session groups, so a session start can seed a group with
/// them; 44 bits hold 16 TiB per set.
#[derive(Debug, Default)]
pub(crate) struct SetGroup(AtomicU64);

impl SetGroup {
    const_fn_unless_loom! {
        pub(crate) fn new() -> Self {
            SetGroup(AtomicU64::new(0))
        }
    }

    pub(crate) fn reset(&self) {
        self.0.store(0, Ordering::Relaxed);
    }

    /// The set's current tag, for a sample it takes or drops (a sample lives within one session,
    /// whose tag the set keeps meanwhile). Acquire, as every read of the word that charges the
    /// tag's row: see [`assign`](Self::assign).
    #[inline]
    fn tag(&self) -> (u32, u32) {
        tag_of(self.0.load(Ordering::Acquire))
    }

    /// Gives the set the tag (generation, index) and returns the bytes it holds at that instant.
    /// Release: the row was reserved (zeroed, its state reset) on this thread just before, and a
    /// thread that reads the tag with acquire (a free on a sweeper, any charge) sees the row as
    /// reserved, not as an earlier session of the bank left it. The adds and subtractions of
    /// bytes in between are read-modify-writes, which carry the release on.
    fn assign(&self, generation: u32, index: u32) -> i64 {
        let new_tag = tag(generation, index);
        let previous = self
            .0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
                Some(new_tag | (word & BYTES_MASK))
            })
            .unwrap_or_else(|word| word);
        (previous & BYTES_MASK) as i64
    }
}

/// The projection of one group: its (key, value) pairs in groupBy's order.
pub type GroupProjection = Vec<(String, String)>;

/// What a grouping session keeps on the isolate thread.
struct Grouping {
    generation: u32,
    keys: Vec<String>,
    /// Most projections it reserves rows for.
    max_reserved: usize,
    /// Projection -> row index.
    by_projection: HashMap<GroupProjection, u32>,
    /// Projections of the rows from index 2 on.
    labels: Vec<GroupProjection>,
    /// Sets put in the overflow group when projected (a value too long, no row left to reserve);
    /// the bank counts the rows refused at their first charge.
    overflow_count: u64,
    peak_window_id: u64,
}

/// The counters of one session generation. A callback that read a tag just before its session
/// ended can only ever touch its own generation's bank, which the next sessions leave alone (a
/// bank is reset when its generation comes round again, six sessions later: only a callback
/// stalled that long between reading its tag and charging could miscount the new session, and
/// reads stay safe if its claim takes a slot for a row that session never made). Chunks are made
/// on the isolate thread before any set can reach them and never freed before the table, so V8's
/// callbacks reach them without a lock.
struct Bank {
    rows: [OnceLock<Box<[GroupCounters; CHUNK]>>; CHUNKS],
    /// Group slot -> the index of the row that took it (0: not written yet); made at the start for
    /// the session's `maxGroups` slots.
    slots: [OnceLock<Box<[AtomicU32; CHUNK]>>; CHUNKS],
    /// Group slots taken.
    charged: AtomicU32,
    /// The session's `maxGroups`.
    max_groups: AtomicU32,
    /// Rows refused a group slot at their first charge.
    refused: AtomicU64,
}

impl Bank {
    fn new() -> Self {
        Bank {
            rows: std::array::from_fn(|_| OnceLock::new()),
            slots: std::array::from_fn(|_| OnceLock::new()),
            charged: AtomicU32::new(0),
            max_groups: AtomicU32::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// Row `index`, if it was made.
    #[inline]
    fn row(&self, index: u32) -> Option<&GroupCounters> {
        let index = index as usize;
        self.rows
            .get(index / CHUNK)?
            .get()
            .map(|chunk| &chunk[index % CHUNK])
    }

    /// Row `index`, made (zeroed) if needed. Isolate thread, under `grouping`.
    fn make_row(&self, index: u32) -> &GroupCounters {
        let index = index as usize;
        let chunk = self.rows[index / CHUNK]
            .get_or_init(|| Box::new(std::array::from_fn(|_| GroupCounters::default())));
        &chunk[index % CHUNK]
    }

    #[inline]
    fn slot(&self, slot: u32) -> Option<&AtomicU32> {
        let slot = slot as usize;
        self.slots
            .get(slot / CHUNK)?
            .get()
            .map(|chunk| &chunk[slot % CHUNK])
    }

    /// Readies the bank for a new session of at most `max_groups` groups: unknown and overflow
    /// zeroed and charged, every slot made and empty, no slot taken. Isolate thread, under
    /// `grouping`, while no session is active.
    fn start(&self, max_groups: u32) {
        self.make_row(UNKNOWN_GROUP).reset(CHARGED);
        self.make_row(OVERFLOW_GROUP).reset(CHARGED);
        for slot in 0..max_groups as usize {
            let chunk = self.slots[slot / CHUNK]
                .get_or_init(|| Box::new(std::array::from_fn(|_| AtomicU32::new(0))));
            chunk[slot % CHUNK].store(0, Ordering::Relaxed);
        }
        self.charged.store(0, Ordering::Relaxed);
        self.refused.store(0, Ordering::Relaxed);
        self.max_groups.store(max_groups, Ordering::Relaxed);
    }

    /// Charges row `index` with `charge`: the row itself, or the overflow group once the row was
    /// refused a group slot; the first charge of a reserved row claims one. Any thread: atomics
    /// only.
    #[inline]
    fn charge(&self, index: u32, charge: impl Fn(&GroupCounters)) {
        let Some(row) = self.row(index) else {
            return;
        };
        if index <= OVERFLOW_GROUP {
            return charge(row);
        }
        let mut state = row.state.load(Ordering::Acquire);
        if state == RESERVED {
            state = self.claim(index, row);
        }
        match state {
            CHARGED => charge(row),
            REFUSED => {
                if let Some(overflow) = self.row(OVERFLOW_GROUP) {
                    charge(overflow);
                }
            }
            _ => {
                // Another thread is claiming the row: charge it, then read its state with a
                // read-modify-write, which comes before or after the claimer's in the row's
                // order of states. Before: the claimer's swap acquires this charge and its sweep
                // moves it if the row is refused. After: this thread sees the outcome, and sweeps
                // if refused.
                charge(row);
                match row.state.fetch_or(0, Ordering::AcqRel) {
                    REFUSED => {
                        reached("a charge met the row claiming, then saw it refused and swept");
                        self.sweep(row);
                    }
                    CLAIMING => reached("a charge met the row claiming, the claimer sweeps after"),
                    _ => reached("a charge met the row claiming, then saw it charged"),
                }
            }
        }
    }

    /// The first charge of reserved row `index`: one thread wins the compare-and-swap to
    /// claiming and takes a group slot if one is left (charged) or none (refused); the others
    /// get the state it is in. Any thread: atomics only.
    fn claim(&self, index: u32, row: &GroupCounters) -> u32 {
        if let Err(state) =
            row.state
                .compare_exchange(RESERVED, CLAIMING, Ordering::Acquire, Ordering::Acquire)
        {
            return state;
        }
        let max_groups = self.max_groups.load(Ordering::Relaxed);
        let taken = self
            .charged
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < max_groups).then_some(n + 1)
            });
        // Every slot below maxGroups was made at the start.
        match taken.ok().and_then(|slot| self.slot(slot)) {
            Some(slot) => {
                slot.store(index, Ordering::Release);
                row.state.swap(CHARGED, Ordering::AcqRel);
                CHARGED
            }
            None => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                row.state.swap(REFUSED, Ordering::AcqRel);
                self.sweep(row);
                REFUSED
            }
        }
    }

    /// Moves what was charged to a refused row (while it was being claimed) to the overflow
    /// group. Each counter is swapped out, so concurrent sweeps move each charge once.
    fn sweep(&self, row: &GroupCounters) {
        let Some(overflow) = self.row(OVERFLOW_GROUP) else {
            return;
        };
        for (from, to) in [
            (&row.allocated_samples, &overflow.allocated_samples),
            (
                &row.allocated_external_bytes,
                &overflow.allocated_external_bytes,
            ),
            (
                &row.allocated_external_count,
                &overflow.allocated_external_count,
            ),
            (&row.freed_external_bytes, &overflow.freed_external_bytes),
            (&row.freed_external_count, &overflow.freed_external_count),
        ] {
            let moved = from.swap(0, Ordering::Relaxed);
            if moved != 0 {
                to.fetch_add(moved, Ordering::Relaxed);
            }
        }
        let samples = row.current_samples.swap(0, Ordering::Relaxed);
        if samples != 0 {
            overflow
                .current_samples
                .fetch_add(samples, Ordering::Relaxed);
        }
        let bytes = row.current_external.swap(0, Ordering::Relaxed);
        if bytes != 0 {
            overflow.add_current_external(bytes);
        }
    }

    /// The rows a read lists, in order: unknown, overflow, then the rows of the group slots taken,
    /// as far as their indexes are written (a claim between its slot and its index is listed by
    /// the next read).
    fn listed(&self) -> impl Iterator<Item = u32> + '_ {
        let taken = self.charged.load(Ordering::Acquire);
        let slots = (0..taken)
            .map(|slot| self.slot(slot).map_or(0, |s| s.load(Ordering::Acquire)))
            .take_while(|&index| {
                if index == 0 {
                    reached("a read found a slot taken, its index not written yet");
                }
                index != 0
            });
        [UNKNOWN_GROUP, OVERFLOW_GROUP].into_iter().chain(slots)
    }
}

/// The group counters of one isolate, shared by its registry (every set reaches them through its
/// counter slot) and its external counters (unlabeled blocks).
pub struct GroupTable {
    /// One bank per session generation.
    banks: [Bank; GENERATIONS as usize],
    /// The generation of the grouping session, 0 when none runs: charges with another generation
    /// in their tag are ignored.
    active: AtomicU32,
    grouping: Mutex<Option<Grouping>>,
    /// The generation of the last session (1..=7, then round again).
    last_generation: AtomicU32,
}

impl Default for GroupTable {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for GroupTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupTable")
            .field("active", &self.active.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// One read of the counters (the rows went into the caller's buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupRead {
    pub groups: usize,
    pub peak_window_id: u64,
    /// What the session put in the overflow group: sets with a value too long (or past the rows a
    /// session reserves), and projections refused a group slot at their first charge.
    pub overflow_count: u64,
}

impl GroupTable {
    pub fn new() -> Self {
        GroupTable {
            banks: std::array::from_fn(|_| Bank::new()),
            active: AtomicU32::new(0),
            grouping: Mutex::new(None),
            last_generation: AtomicU32::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Grouping>> {
        // Sessions start, sets are assigned and reads run on the isolate thread, never in a V8
        // callback (those reach the counters through the banks, lock-free).
        crate::callback_guard::assert_outside_v8_callback("the group table's lock");
        self.grouping.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn bank_of(&self, generation: u32) -> &Bank {
        &self.banks[generation as usize - 1]
    }

    /// The bank of generation `generation` if that is the running session's.
    #[inline]
    fn active_bank(&self, generation: u32) -> Option<&Bank> {
        (generation != 0 && generation == self.active.load(Ordering::Acquire))
            .then(|| self.bank_of(generation))
    }

    /// Charges `charge` to the group of the set tag (generation, index), if its session runs.
    #[inline]
    fn charge(&self, (generation, index): (u32, u32), charge: impl Fn(&GroupCounters)) {
        if let Some(bank) = self.active_bank(generation) {
            bank.charge(index, charge);
        }
    }

    /// Starts grouping by `keys` (validated by the caller: 1..=8 distinct non-empty keys of at most
    /// 255 bytes) into at most `max_groups` groups of projections, ending any earlier grouping.
    /// Rows are reserved for at most `max_groups + label_sets` projections (`label_sets`: the
    /// registry's `maxLabelSets`). The caller then [`assign`](Self::assign)s every live set.
    pub fn start(&self, keys: Vec<String>, max_groups: usize, label_sets: usize) {
        let mut grouping = self.lock();
        self.active.store(0, Ordering::Release);
        let generation = self.last_generation.load(Ordering::Relaxed) % GENERATIONS + 1;
        self.last_generation.store(generation, Ordering::Relaxed);
        let max_groups = max_groups.clamp(1, MAX_GROUPS.min(ROWS - 2));
        // Rows are zeroed as they are reserved (unknown and overflow now, the others in
        // group_of).
        self.bank_of(generation).start(max_groups as u32);
        *grouping = Some(Grouping {
            generation,
            keys,
            max_reserved: max_groups.saturating_add(label_sets).min(ROWS - 2),
            by_projection: HashMap::new(),
            labels: Vec::new(),
            overflow_count: 0,
            peak_window_id: 0,
        });
        self.active.store(generation, Ordering::Release);
    }

    /// Ends the grouping: charges stop, reads answer `None`.
    pub fn stop(&self) {
        let mut grouping = self.lock();
        self.active.store(0, Ordering::Release);
        *grouping = None;
    }

    /// Whether a session groups now.
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire) != 0
    }

    /// Puts a set in its projection's row (session start for every live set, intern for a new
    /// one): `pairs` are its labels, `overflow` whether it is the registry's overflow set. Live
    /// external bytes of the set are charged to the row (its first charge, if so). No-op when no
    /// session groups.
    pub(crate) fn assign(&self, set: &SetGroup, pairs: &[(Box<str>, Box<str>)], overflow: bool) {
        let mut guard = self.lock();
        let Some(grouping) = guard.as_mut() else {
            return;
        };
        let index = self.row_of(grouping, pairs, overflow);
        self.seed(set, grouping.generation, index);
    }

    /// [`assign`](Self::assign) for memory without labels (the unknown group).
    pub(crate) fn assign_unlabeled(&self, set: &SetGroup) {
        let guard = self.lock();
        let Some(grouping) = guard.as_ref() else {
            return;
        };
        self.seed(set, grouping.generation, UNKNOWN_GROUP);
    }

    /// Gives the set its tag and charges the bytes it holds to its row. Under `grouping`.
    fn seed(&self, set: &SetGroup, generation: u32, index: u32) {
        let bytes = set.assign(generation, index);
        if bytes != 0 {
            self.bank_of(generation)
                .charge(index, |c| c.add_current_external(bytes));
        }
    }

    /// The row of a set's projection, reserved (zeroed) if new. Under `grouping`.
    fn row_of(
        &self,
        grouping: &mut Grouping,
        pairs: &[(Box<str>, Box<str>)],
        overflow: bool,
    ) -> u32 {
        // The registry's overflow set: its sets' labels are unknown, but they did not fit.
        // (overflowCount counts sets put there by this grouping, not the registry's.)
        if overflow {
            return OVERFLOW_GROUP;
        }
        let mut projection = GroupProjection::new();
        for key in &grouping.keys {
            let value = pairs
                .iter()
                .find(|(k, _)| **k == **key)
                .map(|(_, v)| &**v)
                .filter(|v| !v.is_empty());
            if let Some(value) = value {
                if value.len() > MAX_GROUP_VALUE_BYTES {
                    grouping.overflow_count += 1;
                    return OVERFLOW_GROUP;
                }
                projection.push((key.clone(), value.to_owned()));
            }
        }
        if projection.is_empty() {
            return UNKNOWN_GROUP;
        }
        if let Some(&index) = grouping.by_projection.get(&projection) {
            return index;
        }
        if grouping.labels.len() >= grouping.max_reserved {
            grouping.overflow_count += 1;
            return OVERFLOW_GROUP;
        }
        let index = grouping.labels.len() as u32 + 2;
        // No set has this row's tag yet: nothing charges it before its first assign.
        self.bank_of(grouping.generation)
            .make_row(index)
            .reset(RESERVED);
        grouping.labels.push(projection.clone());
        grouping.by_projection.insert(projection, index);
        index
    }

    /// A sample of a set with this group word was taken. Inside V8's `SampleObject`: atomics only.
    #[inline]
    pub(crate) fn sample_taken(&self, set: &SetGroup) {
        self.charge(set.tag(), |c| {
            c.allocated_samples.fetch_add(1, Ordering::Relaxed);
            c.current_samples.fetch_add(1, Ordering::Relaxed);
        });
    }

    /// A sample of this set was dropped (GC weak callback, profiler stop): atomics only.
    #[inline]
    pub(crate) fn sample_dropped(&self, set: &SetGroup) {
        self.charge(set.tag(), |c| {
            c.current_samples.fetch_sub(1, Ordering::Relaxed);
        });
    }

    /// A block of `bytes` was charged to this set: its bytes grow, and its group (if any) counts the
    /// allocation. Any thread: atomics only.
    #[inline]
    pub(crate) fn external_allocated(&self, set: &SetGroup, bytes: u64) {
        let bytes = bytes & BYTES_MASK;
        let word = set.0.fetch_add(bytes, Ordering::Acquire);
        self.charge(tag_of(word), |c| {
            c.allocated_external_bytes
                .fetch_add(bytes, Ordering::Relaxed);
            c.allocated_external_count.fetch_add(1, Ordering::Relaxed);
            c.add_current_external(bytes as i64);
        });
    }

    /// A block of `bytes` charged to this set was freed: credited to the group the bytes were
    /// counted in (the tag read with the subtraction). Any thread (sweepers): atomics only.
    #[inline]
    pub(crate) fn external_freed(&self, set: &SetGroup, bytes: u64) {
        let bytes = bytes & BYTES_MASK;
        let word = set.0.fetch_sub(bytes, Ordering::Acquire);
        self.charge(tag_of(word), |c| {
            c.freed_external_bytes.fetch_add(bytes, Ordering::Relaxed);
            c.freed_external_count.fetch_add(1, Ordering::Relaxed);
            c.current_external
                .fetch_sub(bytes as i64, Ordering::Relaxed);
        });
    }

    /// A request cell's binding moved `delta` live samples to (> 0) or from (< 0) this set: its
    /// group's current samples follow; the allocated count stays where each sample was taken.
    /// Isolate thread, inside a napi call.
    pub(crate) fn samples_moved(&self, set: &SetGroup, delta: i64) {
        self.charge(set.tag(), |c| {
            c.current_samples.fetch_add(delta, Ordering::Relaxed);
        });
    }

    /// A request cell's binding moved `delta` live external bytes to (> 0) or from (< 0) this set:
    /// the set's bytes under its tag and its group's current bytes follow; the allocated and freed
    /// totals stay where each block was counted. Isolate thread; frees of the same bytes may run on
    /// other threads meanwhile (atomics only, as they do).
    pub(crate) fn external_moved(&self, set: &SetGroup, delta: i64) {
        let bytes = delta.unsigned_abs() & BYTES_MASK;
        let word = if delta >= 0 {
            set.0.fetch_add(bytes, Ordering::Acquire)
        } else {
            set.0.fetch_sub(bytes, Ordering::Acquire)
        };
        self.charge(tag_of(word), |c| {
            c.add_current_external(delta.signum() * bytes as i64);
        });
    }

    /// Rows a read needs room for now (at most `maxGroups + 2`).
    pub fn rows_needed(&self) -> usize {
        let generation = self.active.load(Ordering::Acquire);
        if generation == 0 {
            return 0;
        }
        2 + self.bank_of(generation).charged.load(Ordering::Acquire) as usize
    }

    /// Writes one row of [`GROUP_ROW_WIDTH`] counters per group into `out` (allocatedHeapSampleCount,
    /// currentHeapSampleCount, currentHeapBytes, allocatedExternalBytes, allocatedExternalCount,
    /// freedExternalBytes, freedExternalCount, currentExternalBytes, publishedPeakExternalBytes),
    /// `sample_interval` giving currentHeapBytes: unknown, overflow, then the groups in the order
    /// they were first charged. With `advance_peak_window` the open peak window closes: its peak
    /// is published and a new window starts at the current bytes. `Ok(None)` when no session
    /// groups; `Err(rows)` (nothing read, no window closed) when `out` is too short for `rows`
    /// rows. Isolate thread.
    pub fn read(
        &self,
        advance_peak_window: bool,
        sample_interval: u64,
        out: &mut [i64],
    ) -> std::result::Result<Option<GroupRead>, usize> {
        let mut guard = self.lock();
        let Some(grouping) = guard.as_mut() else {
            return Ok(None);
        };
        let bank = self.bank_of(grouping.generation);
        let groups = bank.listed().count();
        if out.len() < groups * GROUP_ROW_WIDTH {
            return Err(groups);
        }
        if advance_peak_window {
            grouping.peak_window_id += 1;
        }
        let interval = i64::try_from(sample_interval).unwrap_or(i64::MAX);
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed) as i64;
        // The slots are written once a session: the second walk lists the same rows (and maybe
        // more, claimed meanwhile, which the next read lists).
        for (index, row) in bank
            .listed()
            .take(groups)
            .zip(out.chunks_exact_mut(GROUP_ROW_WIDTH))
        {
            let Some(c) = bank.row(index) else {
                // Only a claim stalled since this bank's generation last ran could name a row
                // that was not made (see Bank): an empty row rather than a panic.
                row.fill(0);
                continue;
            };
            let current = c.current_external.load(Ordering::Relaxed);
            if advance_peak_window {
                let peak = c.window_peak.swap(current, Ordering::Relaxed).max(current);
                c.published_peak.store(peak, Ordering::Relaxed);
            }
            let samples = c.current_samples.load(Ordering::Relaxed);
            row.copy_from_slice(&[
                load(&c.allocated_samples),
                samples,
                samples.saturating_mul(interval),
                load(&c.allocated_external_bytes),
                load(&c.allocated_external_count),
                load(&c.freed_external_bytes),
                load(&c.freed_external_count),
                current,
                c.published_peak.load(Ordering::Relaxed),
            ]);
        }
        Ok(Some(GroupRead {
            groups,
            peak_window_id: grouping.peak_window_id,
            overflow_count: grouping.overflow_count + bank.refused.load(Ordering::Relaxed),
        }))
    }

    /// The labels of the running session's groups from position `from` on, in a read's order
    /// (unknown and overflow, positions 0 and 1, have none), or `None` when no session groups.
    pub fn labels_from(&self, from: usize) -> Option<Vec<GroupProjection>> {
        let guard = self.lock();
        let grouping = guard.as_ref()?;
        let bank = self.bank_of(grouping.generation);
        Some(
            bank.listed()
                .skip(from)
                .map(|index| match index {
                    UNKNOWN_GROUP | OVERFLOW_GROUP => Vec::new(),
                    // (An index past the reserved rows: see read.)
                    index => grouping
                        .labels
                        .get(index as usize - 2)
                        .cloned()
                        .unwrap_or_default(),
                })
                .collect(),
        )
    }
}

#[cfg(all(test, loom))]
mod loom_models;

// Under loom the atomics work inside `loom::model` only: these run in the normal build.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn pairs(p: &[(&str, &str)]) -> Vec<(Box<str>, Box<str>)> {
        p.iter()
            .map(|(k, v)| (Box::from(*k), Box::from(*v)))
            .collect()
    }

    fn start(table: &GroupTable, keys: &[&str], max_groups: usize) {
        table.start(
            keys.iter().map(|&k| k.to_owned()).collect(),
            max_groups,
            100,
        );
    }

    fn rows(table: &GroupTable, advance: bool) -> (GroupRead, Vec<[i64; GROUP_ROW_WIDTH]>) {
        let mut out = vec![0i64; GROUP_ROW_WIDTH * 64];
        let read = table.read(advance, 100, &mut out).unwrap().unwrap();
        let rows = out
            .chunks_exact(GROUP_ROW_WIDTH)
            .take(read.groups)
            .map(|r| r.try_into().unwrap())
            .collect();
        (read, rows)
    }

    fn labels(table: &GroupTable) -> Vec<GroupProjection> {
        table.labels_from(0).unwrap()
    }

    fn projection(p: &[(&str, &str)]) -> GroupProjection {
        p.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn sets_are_projected_onto_the_keys_in_their_order() {
        let table = GroupTable::new();
        start(&table, &["route", "tenant"], 256);
        let a = SetGroup::default();
        let b = SetGroup::default();
        let c = SetGroup::default();
        let none = SetGroup::default();
        table.assign(
            &a,
            &pairs(&[("tenant", "t1"), ("route", "/a"), ("x", "1")]),
            false,
        );
        table.assign(&b, &pairs(&[("route", "/a"), ("tenant", "t1")]), false);
        table.assign(&c, &pairs(&[("route", "/b"), ("tenant", "")]), false);
        table.assign(&none, &pairs(&[("x", "1"), ("route", "")]), false);
        assert_eq!(a.tag().1, 2);
        assert_eq!(b.tag().1, 2);
        assert_eq!(c.tag().1, 3);
        assert_eq!(none.tag().1, UNKNOWN_GROUP);
        // Listed in the order of their first charge.
        table.sample_taken(&c);
        table.sample_taken(&b);
        table.sample_taken(&a);
        let labels = labels(&table);
        assert_eq!(labels.len(), 4);
        assert_eq!(labels[0], GroupProjection::new());
        assert_eq!(labels[2], projection(&[("route", "/b")]));
        assert_eq!(labels[3], projection(&[("route", "/a"), ("tenant", "t1")]));
        assert_eq!(table.labels_from(3).unwrap().len(), 1);
        let (read, r) = rows(&table, false);
        assert_eq!(read.groups, 4);
        assert_eq!(r[2][0], 1);
        assert_eq!(r[3][0], 2);
    }

    #[test]
    fn a_group_is_made_at_its_first_charge_not_when_its_sets_are_projected() {
        let table = GroupTable::new();
        start(&table, &["k"], 2);
        // Four projections alive, nothing charged: no group listed, no slot spent.
        let sets: Vec<SetGroup> = (0..4).map(|_| SetGroup::default()).collect();
        for (set, v) in sets.iter().zip(["a", "b", "c", "d"]) {
            table.assign(set, &pairs(&[("k", v)]), false);
        }
        let (read, r) = rows(&table, false);
        assert_eq!((read.groups, read.overflow_count), (2, 0));
        assert!(r.iter().flatten().all(|&v| v == 0));
        assert_eq!(table.rows_needed(), 2);
        // The last two charged get the two groups; the next is refused.
        table.sample_taken(&sets[3]);
        table.external_allocated(&sets[2], 64);
        table.sample_taken(&sets[0]);
        table.sample_taken(&sets[3]);
        let (read, r) = rows(&table, false);
        assert_eq!((read.groups, read.overflow_count), (4, 1));
        assert_eq!(
            labels(&table)[2..],
            [projection(&[("k", "d")]), projection(&[("k", "c")])]
        );
        assert_eq!(r[2][..2], [2, 2]);
        assert_eq!(r[3][3..5], [64, 1]);
        assert_eq!(r[OVERFLOW_GROUP as usize][..2], [1, 1], "a's sample");
        // A refused projection stays in overflow, frees and drops included; b never counts.
        table.sample_dropped(&sets[0]);
        table.external_allocated(&sets[0], 10);
        table.external_freed(&sets[0], 10);
        let (read, r) = rows(&table, false);
        assert_eq!((read.groups, read.overflow_count), (4, 1));
        assert_eq!(r[1], [1, 0, 0, 10, 1, 10, 1, 0, 0]);
    }

    #[test]
    fn overflow_takes_long_values_refused_projections_and_the_overflow_set() {
        let table = GroupTable::new();
        start(&table, &["k"], 2);
        let sets: Vec<SetGroup> = (0..4).map(|_| SetGroup::default()).collect();
        table.assign(&sets[0], &pairs(&[("k", "a")]), false);
        table.assign(&sets[1], &pairs(&[("k", "b")]), false);
        table.assign(&sets[2], &pairs(&[("k", "c")]), false);
        table.assign(&sets[3], &pairs(&[("k", &"v".repeat(256))]), false);
        let overflow_set = SetGroup::default();
        table.assign(
            &overflow_set,
            &pairs(&[("heap_labels.overflow", "true")]),
            true,
        );
        let tags: Vec<u32> = sets.iter().map(|s| s.tag().1).collect();
        assert_eq!(tags, [2, 3, 4, OVERFLOW_GROUP]);
        assert_eq!(overflow_set.tag().1, OVERFLOW_GROUP);
        for set in &sets {
            table.sample_taken(set);
        }
        table.sample_taken(&overflow_set);
        let (read, r) = rows(&table, false);
        assert_eq!(read.overflow_count, 2, "c past maxGroups, the long value");
        assert_eq!(read.groups, 4);
        assert_eq!(r[1][0], 3);
    }

    #[test]
    fn reserved_rows_are_bounded_by_max_groups_and_label_sets() {
        let table = GroupTable::new();
        table.start(vec!["k".into()], 2, 3);
        let sets: Vec<SetGroup> = (0..7).map(|_| SetGroup::default()).collect();
        for (i, set) in sets.iter().enumerate() {
            table.assign(set, &pairs(&[("k", &i.to_string())]), false);
        }
        let tags: Vec<u32> = sets.iter().map(|s| s.tag().1).collect();
        assert_eq!(tags, [2, 3, 4, 5, 6, OVERFLOW_GROUP, OVERFLOW_GROUP]);
        let (read, _) = rows(&table, false);
        assert_eq!(read.overflow_count, 2);
    }

    #[test]
    fn samples_and_blocks_are_charged_and_credited_to_the_group() {
        let table = GroupTable::new();
        let set = SetGroup::default();
        // Bytes from before the session seed its group's current bytes: a charge.
        table.external_allocated(&set, 1000);
        start(&table, &["k"], 8);
        table.assign(&set, &pairs(&[("k", "a")]), false);
        assert_eq!(rows(&table, false).0.groups, 3);
        table.sample_taken(&set);
        table.sample_taken(&set);
        table.sample_dropped(&set);
        table.external_allocated(&set, 500);
        table.external_freed(&set, 1000);
        let (read, r) = rows(&table, false);
        assert_eq!(read.peak_window_id, 0);
        assert_eq!(r[2], [2, 1, 100, 500, 1, 1000, 1, 500, 0]);
        // Closing the window publishes its peak (1500) and starts the next at the current bytes.
        let (read, r) = rows(&table, true);
        assert_eq!(read.peak_window_id, 1);
        assert_eq!(r[2][8], 1500);
        let (_, r) = rows(&table, true);
        assert_eq!(r[2][8], 500);
    }

    #[test]
    fn a_new_session_ignores_the_tags_of_the_last_and_stopped_tables_read_none() {
        let table = GroupTable::new();
        let set = SetGroup::default();
        start(&table, &["k"], 8);
        table.assign(&set, &pairs(&[("k", "a")]), false);
        table.external_allocated(&set, 10);
        table.stop();
        assert_eq!(table.read(false, 1, &mut [0; 64]), Ok(None));
        assert_eq!(table.rows_needed(), 0);
        // Charges while no session groups count nowhere, but the set's bytes still count.
        table.external_allocated(&set, 5);
        start(&table, &["other"], 8);
        let (_, r) = rows(&table, false);
        assert_eq!(r.len(), 2);
        // Not yet assigned in this session: its old tag is ignored.
        table.external_freed(&set, 5);
        let (_, r) = rows(&table, false);
        assert!(r.iter().all(|row| row.iter().all(|&v| v == 0)));
        table.assign(&set, &pairs(&[("k", "a")]), false);
        let (_, r) = rows(&table, false);
        assert_eq!(r[UNKNOWN_GROUP as usize][7], 10);
    }

    #[test]
    fn sets_alive_across_sessions_take_no_group_until_charged_in_the_new_one() {
        let table = GroupTable::new();
        let old: Vec<SetGroup> = (0..5).map(|_| SetGroup::default()).collect();
        start(&table, &["k"], 3);
        for (i, set) in old.iter().enumerate() {
            table.assign(set, &pairs(&[("k", &format!("old{i}"))]), false);
            table.sample_taken(set);
        }
        assert_eq!(rows(&table, false).0.groups, 5);
        table.stop();
        // The next session: the five sets are projected again, but none is charged.
        start(&table, &["k"], 3);
        for (i, set) in old.iter().enumerate() {
            table.assign(set, &pairs(&[("k", &format!("old{i}"))]), false);
        }
        let fresh: Vec<SetGroup> = (0..3).map(|_| SetGroup::default()).collect();
        for (i, set) in fresh.iter().enumerate() {
            table.assign(set, &pairs(&[("k", &format!("new{i}"))]), false);
            table.sample_taken(set);
        }
        let (read, _) = rows(&table, false);
        assert_eq!((read.groups, read.overflow_count), (5, 0));
        let names: Vec<_> = labels(&table)[2..].iter().map(|p| p[0].1.clone()).collect();
        assert_eq!(names, ["new0", "new1", "new2"]);
        // An old set charged now: maxGroups is spent, so it is refused.
        table.sample_taken(&old[0]);
        assert_eq!(rows(&table, false).0.overflow_count, 1);
    }

    #[test]
    fn a_bank_comes_round_again_with_its_rows_slots_and_counts_reset() {
        let table = GroupTable::new();
        let (a, b) = (SetGroup::default(), SetGroup::default());
        // Generation 1: a takes the only group, b is refused.
        start(&table, &["k"], 1);
        table.assign(&a, &pairs(&[("k", "a")]), false);
        table.assign(&b, &pairs(&[("k", "b")]), false);
        table.sample_taken(&a);
        table.sample_taken(&b);
        assert_eq!(rows(&table, false).0.overflow_count, 1);
        // Generations 2 to 7, then 1 again: b gets the row a had, a the row b had.
        for _ in 0..GENERATIONS {
            start(&table, &["k"], 2);
        }
        assert_eq!(table.active.load(Ordering::Relaxed), 1);
        table.assign(&b, &pairs(&[("k", "b")]), false);
        table.assign(&a, &pairs(&[("k", "a")]), false);
        let (read, r) = rows(&table, false);
        assert_eq!((read.groups, read.overflow_count), (2, 0));
        assert!(r.iter().flatten().all(|&v| v == 0));
        table.external_allocated(&b, 8);
        table.sample_taken(&a);
        let (read, r) = rows(&table, false);
        assert_eq!((read.groups, read.overflow_count), (4, 0));
        assert_eq!(
            labels(&table)[2..],
            [projection(&[("k", "b")]), projection(&[("k", "a")])]
        );
        assert_eq!(r[2], [0, 0, 0, 8, 1, 0, 0, 8, 0]);
        assert_eq!(r[3], [1, 1, 100, 0, 0, 0, 0, 0, 0]);
        assert_eq!(r[1], [0; GROUP_ROW_WIDTH]);
    }

    #[test]
    fn too_short_buffers_are_refused_before_any_window_closes() {
        let table = GroupTable::new();
        start(&table, &["k"], 8);
        let set = SetGroup::default();
        table.assign(&set, &pairs(&[("k", "a")]), false);
        table.sample_taken(&set);
        assert_eq!(table.read(true, 1, &mut [0; GROUP_ROW_WIDTH * 2]), Err(3));
        assert_eq!(rows(&table, false).0.peak_window_id, 0);
    }

    #[test]
    fn frees_on_other_threads_balance_to_zero() {
        let table = std::sync::Arc::new(GroupTable::new());
        let set = std::sync::Arc::new(SetGroup::default());
        start(&table, &["k"], 8);
        table.assign(&set, &pairs(&[("k", "a")]), false);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (table, set) = (table.clone(), set.clone());
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        table.external_allocated(&set, 64);
                        table.external_freed(&set, 64);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let (_, r) = rows(&table, false);
        assert_eq!(r[2][3], 40_000 * 64);
        assert_eq!(r[2][5], 40_000 * 64);
        assert_eq!(r[2][7], 0);
    }

    #[test]
    fn first_charges_racing_on_threads_spend_each_slot_once_and_lose_nothing() {
        // 8 projections, 4 groups, 4 threads charging every set in a different order: exactly 4
        // groups, 4 refused, and every charge counted once in the listed rows.
        for round in 0..50 {
            let table = std::sync::Arc::new(GroupTable::new());
            let sets: std::sync::Arc<Vec<SetGroup>> =
                std::sync::Arc::new((0..8).map(|_| SetGroup::default()).collect());
            start(&table, &["k"], 4);
            for (i, set) in sets.iter().enumerate() {
                table.assign(set, &pairs(&[("k", &i.to_string())]), false);
            }
            let threads: Vec<_> = (0..4)
                .map(|t| {
                    let (table, sets) = (table.clone(), sets.clone());
                    std::thread::spawn(move || {
                        for i in 0..8 {
                            let set = &sets[(i * (t + 1) + round) % 8];
                            table.external_allocated(set, 8);
                            table.sample_taken(set);
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            let (read, r) = rows(&table, false);
            assert_eq!((read.groups, read.overflow_count), (6, 4));
            let samples: i64 = r.iter().map(|row| row[0]).sum();
            let bytes: i64 = r.iter().map(|row| row[7]).sum();
            assert_eq!((samples, bytes), (32, 32 * 8));
        }
    }

    #[test]
    fn a_registry_groups_its_sets_before_and_after_the_start_and_frees_on_sweepers_credit_them() {
        use crate::{ExternalCounters, LabelRegistry, LabelSet};
        let reg = LabelRegistry::new(100);
        let external = ExternalCounters::new();
        external.attach_groups(std::sync::Arc::clone(reg.groups()));
        let p = |v: &str| {
            vec![
                ("task.type".to_owned(), v.to_owned()),
                ("id".to_owned(), "1".to_owned()),
            ]
        };
        let before = reg.intern(p("a")).unwrap();
        let idle = reg.intern(p("idle")).unwrap();
        external.on_alloc(Some(&before), 100);
        external.on_alloc(None, 7);
        let unlabeled = LabelRegistry::with_groups(1, std::sync::Arc::clone(reg.groups()))
            .intern(Vec::new())
            .unwrap();
        reg.start_grouping(vec!["task.type".into()], 256, &[&unlabeled]);
        external.assign_unlabeled_group();
        let after = reg.intern(p("b")).unwrap();
        let same = reg
            .intern(vec![("task.type".to_owned(), "a".to_owned())])
            .unwrap();
        // SAFETY: each word is made from a live set and handed back exactly once.
        unsafe {
            let word = LabelSet::into_word(std::sync::Arc::clone(&same));
            LabelSet::capture_sample_word(word);
            let unlabeled_word = LabelSet::into_word(std::sync::Arc::clone(&unlabeled));
            LabelSet::capture_sample_word(unlabeled_word);
            LabelSet::release_sample_word(unlabeled_word);
            LabelSet::release_word(word);
        }
        external.on_alloc(Some(&after), 50);
        std::thread::scope(|s| {
            s.spawn(|| external.on_free(Some(&before), 100));
        });
        // task.type=idle: alive, never charged, not listed.
        assert_eq!(idle.external_bytes(), 0);
        let (read, r) = rows(reg.groups(), false);
        assert_eq!(read.groups, 4);
        assert_eq!(
            reg.groups().labels_from(2).unwrap(),
            [
                projection(&[("task.type", "a")]),
                projection(&[("task.type", "b")])
            ]
        );
        // unknown: 7 unlabeled bytes seeded, one unlabeled sample taken and dropped
        assert_eq!(r[0], [1, 0, 0, 0, 0, 0, 0, 7, 0]);
        // task.type=a: two sets, one live sample, the 100 seeded bytes freed on another thread
        assert_eq!(r[2], [1, 1, 100, 0, 0, 100, 1, 0, 0]);
        assert_eq!(r[3], [0, 0, 0, 50, 1, 0, 0, 50, 0]);
    }
}
