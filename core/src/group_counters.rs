//! Group counters: the live heap samples and ArrayBuffer bytes of a session, summed per group of
//! label sets, kept current as V8 takes and drops samples and as blocks come and go. A session
//! started with `groupBy` (1 to [`MAX_GROUP_BY_KEYS`] label keys) projects every label set onto
//! those keys once: sets with the same values share a group. Reads copy at most
//! `maxGroups + 2` rows, whatever the number of label sets.
//!
//! Groups by index: [`UNKNOWN_GROUP`] (no groupBy key, or only empty values), [`OVERFLOW_GROUP`] (a
//! value longer than [`MAX_GROUP_VALUE_BYTES`], `maxGroups` groups already made, or the registry's
//! own overflow set), then one per distinct projection in the order they appeared. A group's labels
//! are its projection in groupBy's key order, empty values left out.
//!
//! Who touches what (the rules of `set_counters`):
//! - V8's callbacks (sample capture and release, ArrayBuffer allocation and free, on the isolate
//!   thread, in GC callbacks and on sweeper threads) charge and credit through a set's
//!   [`SetGroup`] word and [`GroupTable::counters`]: relaxed atomics only, never a lock, never an
//!   allocation.
//! - The isolate thread, outside V8's callbacks, starts and stops grouping, assigns sets to groups
//!   (session start, intern) and reads; these take the table's `grouping` lock.
//!
//! Exactness across threads: a set's external bytes and its group tag share one atomic word
//! ([`SetGroup`]), so a free on a sweeper thread subtracts its bytes and learns the group they
//! were charged to in one step; the session start swaps the tag in and reads the bytes it seeds
//! the group with in one step too. A block is never credited to a group it was not counted in.
//! Tags carry the session's generation: a tag of an earlier session is ignored.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

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

/// Groups per chunk of the table.
const CHUNK: usize = 256;
/// Chunks for every group index a session can have (projections, unknown and overflow).
const CHUNKS: usize = (MAX_GROUPS + 2).div_ceil(CHUNK);

// A set's group word: the tag in the high bits, the set's live external bytes in the low ones.
const BYTES_BITS: u32 = 44;
const BYTES_MASK: u64 = (1 << BYTES_BITS) - 1;
// The tag: the session generation (3 bits, 1..=7; 0 = no group) over the group index (17 bits).
const INDEX_BITS: u32 = 17;
const INDEX_MASK: u32 = (1 << INDEX_BITS) - 1;
const GENERATIONS: u32 = 7;

fn tag(generation: u32, index: u32) -> u64 {
    u64::from(generation << INDEX_BITS | index) << BYTES_BITS
}

fn tag_of(word: u64) -> (u32, u32) {
    let tag = (word >> BYTES_BITS) as u32;
    (tag >> INDEX_BITS, tag & INDEX_MASK)
}

/// The counters of one group.
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
}

impl GroupCounters {
    fn reset(&self) {
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
    pub(crate) const fn new() -> Self {
        SetGroup(AtomicU64::new(0))
    }

    pub(crate) fn reset(&self) {
        self.0.store(0, Ordering::Relaxed);
    }

    /// The set's current tag, for a sample it takes or drops (a sample lives within one session,
    /// whose tag the set keeps meanwhile).
    #[inline]
    fn tag(&self) -> (u32, u32) {
        tag_of(self.0.load(Ordering::Relaxed))
    }

    /// Gives the set the tag (generation, index) and returns the bytes it holds at that instant.
    fn assign(&self, generation: u32, index: u32) -> i64 {
        let new_tag = tag(generation, index);
        let previous = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |word| {
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
    max_groups: usize,
    /// Projection -> group index.
    by_projection: HashMap<GroupProjection, u32>,
    /// Labels of the groups from index 2 on.
    labels: Vec<GroupProjection>,
    overflow_count: u64,
    peak_window_id: u64,
}

/// The group counters of one isolate, shared by its registry (every set reaches them through its
/// counter slot) and its external counters (unlabeled blocks). Chunks of counters are made on the
/// isolate thread when a group first needs one and are never freed before the table, so V8's
/// callbacks reach them without a lock.
pub struct GroupTable {
    /// One bank of chunks per generation: a callback that read a tag just before its session
    /// ended can only ever touch its own session's bank, which the next sessions leave alone (a
    /// bank is reset when its generation comes round again, six sessions later).
    banks: [[OnceLock<Box<[GroupCounters; CHUNK]>>; CHUNKS]; GENERATIONS as usize],
    /// The generation of the grouping session, 0 when none runs: charges with another generation
    /// in their tag are ignored.
    active: AtomicU32,
    /// Groups in use by the running session (unknown and overflow included).
    groups: AtomicU32,
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
            .field("groups", &self.groups.load(Ordering::Relaxed))
            .finish()
    }
}

/// One read of the counters (the rows went into the caller's buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupRead {
    pub groups: usize,
    pub peak_window_id: u64,
    pub overflow_count: u64,
}

impl GroupTable {
    pub fn new() -> Self {
        GroupTable {
            banks: [const { [const { OnceLock::new() }; CHUNKS] }; GENERATIONS as usize],
            active: AtomicU32::new(0),
            groups: AtomicU32::new(0),
            grouping: Mutex::new(None),
            last_generation: AtomicU32::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Grouping>> {
        // Sessions start, sets are assigned and reads run on the isolate thread, never in a V8
        // callback (those reach the counters through the chunks, lock-free).
        crate::callback_guard::assert_outside_v8_callback("the group table's lock");
        self.grouping.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The counters of group `index` of the running session, if that group exists.
    #[inline]
    fn counters(&self, generation: u32, index: u32) -> Option<&GroupCounters> {
        if generation == 0 || generation != self.active.load(Ordering::Acquire) {
            return None;
        }
        let index = index as usize;
        self.banks[generation as usize - 1][index / CHUNK]
            .get()
            .map(|chunk| &chunk[index % CHUNK])
    }

    /// The counters of group `index` of generation `generation` (1..=7), made (zeroed) if needed.
    /// Isolate thread, under `grouping`.
    fn make(&self, generation: u32, index: u32) -> &GroupCounters {
        let index = index as usize;
        let chunk = self.banks[generation as usize - 1][index / CHUNK]
            .get_or_init(|| Box::new(std::array::from_fn(|_| GroupCounters::default())));
        &chunk[index % CHUNK]
    }

    /// Starts grouping by `keys` (validated by the caller: 1..=8 distinct non-empty keys of at most
    /// 255 bytes) into at most `max_groups` groups of projections, ending any earlier grouping.
    /// The caller then [`assign`](Self::assign)s every live set.
    pub fn start(&self, keys: Vec<String>, max_groups: usize) {
        let mut grouping = self.lock();
        self.active.store(0, Ordering::Release);
        let generation = self.last_generation.load(Ordering::Relaxed) % GENERATIONS + 1;
        self.last_generation.store(generation, Ordering::Relaxed);
        // Groups are zeroed as they are made (unknown and overflow now, the others in group_of).
        self.make(generation, UNKNOWN_GROUP).reset();
        self.make(generation, OVERFLOW_GROUP).reset();
        self.groups.store(2, Ordering::Relaxed);
        *grouping = Some(Grouping {
            generation,
            keys,
            max_groups: max_groups.clamp(1, MAX_GROUPS),
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

    /// Puts a set in its group (session start for every live set, intern for a new one): `pairs`
    /// are its labels, `overflow` whether it is the registry's overflow set. Seeds the group with
    /// the set's live external bytes. No-op when no session groups.
    pub(crate) fn assign(&self, set: &SetGroup, pairs: &[(Box<str>, Box<str>)], overflow: bool) {
        let mut guard = self.lock();
        let Some(grouping) = guard.as_mut() else {
            return;
        };
        let index = self.group_of(grouping, pairs, overflow);
        let bytes = set.assign(grouping.generation, index);
        if bytes != 0 {
            self.make(grouping.generation, index)
                .add_current_external(bytes);
        }
    }

    /// [`assign`](Self::assign) for memory without labels (the unknown group).
    pub(crate) fn assign_unlabeled(&self, set: &SetGroup) {
        let guard = self.lock();
        let Some(grouping) = guard.as_ref() else {
            return;
        };
        let bytes = set.assign(grouping.generation, UNKNOWN_GROUP);
        if bytes != 0 {
            self.make(grouping.generation, UNKNOWN_GROUP)
                .add_current_external(bytes);
        }
    }

    fn group_of(
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
        if grouping.labels.len() >= grouping.max_groups {
            grouping.overflow_count += 1;
            return OVERFLOW_GROUP;
        }
        let index = grouping.labels.len() as u32 + 2;
        self.make(grouping.generation, index).reset();
        grouping.labels.push(projection.clone());
        grouping.by_projection.insert(projection, index);
        self.groups.store(index + 1, Ordering::Release);
        index
    }

    /// A sample of a set with this group word was taken. Inside V8's `SampleObject`: atomics only.
    #[inline]
    pub(crate) fn sample_taken(&self, set: &SetGroup) {
        let (generation, index) = set.tag();
        if let Some(c) = self.counters(generation, index) {
            c.allocated_samples.fetch_add(1, Ordering::Relaxed);
            c.current_samples.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A sample of this set was dropped (GC weak callback, profiler stop): atomics only.
    #[inline]
    pub(crate) fn sample_dropped(&self, set: &SetGroup) {
        let (generation, index) = set.tag();
        if let Some(c) = self.counters(generation, index) {
            c.current_samples.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// A block of `bytes` was charged to this set: its bytes grow, and its group (if any) counts the
    /// allocation. Any thread: atomics only.
    #[inline]
    pub(crate) fn external_allocated(&self, set: &SetGroup, bytes: u64) {
        let bytes = bytes & BYTES_MASK;
        let (generation, index) = tag_of(set.0.fetch_add(bytes, Ordering::Relaxed));
        if let Some(c) = self.counters(generation, index) {
            c.allocated_external_bytes
                .fetch_add(bytes, Ordering::Relaxed);
            c.allocated_external_count.fetch_add(1, Ordering::Relaxed);
            c.add_current_external(bytes as i64);
        }
    }

    /// A block of `bytes` charged to this set was freed: credited to the group the bytes were
    /// counted in (the tag read with the subtraction). Any thread (sweepers): atomics only.
    #[inline]
    pub(crate) fn external_freed(&self, set: &SetGroup, bytes: u64) {
        let bytes = bytes & BYTES_MASK;
        let (generation, index) = tag_of(set.0.fetch_sub(bytes, Ordering::Relaxed));
        if let Some(c) = self.counters(generation, index) {
            c.freed_external_bytes.fetch_add(bytes, Ordering::Relaxed);
            c.freed_external_count.fetch_add(1, Ordering::Relaxed);
            c.current_external
                .fetch_sub(bytes as i64, Ordering::Relaxed);
        }
    }

    /// A request cell's binding moved `delta` live samples to (> 0) or from (< 0) this set: its
    /// group's current samples follow; the allocated count stays where each sample was taken.
    /// Isolate thread, inside a napi call.
    pub(crate) fn samples_moved(&self, set: &SetGroup, delta: i64) {
        let (generation, index) = set.tag();
        if let Some(c) = self.counters(generation, index) {
            c.current_samples.fetch_add(delta, Ordering::Relaxed);
        }
    }

    /// A request cell's binding moved `delta` live external bytes to (> 0) or from (< 0) this set:
    /// the set's bytes under its tag and its group's current bytes follow; the allocated and freed
    /// totals stay where each block was counted. Isolate thread; frees of the same bytes may run on
    /// other threads meanwhile (atomics only, as they do).
    pub(crate) fn external_moved(&self, set: &SetGroup, delta: i64) {
        let bytes = delta.unsigned_abs() & BYTES_MASK;
        let word = if delta >= 0 {
            set.0.fetch_add(bytes, Ordering::Relaxed)
        } else {
            set.0.fetch_sub(bytes, Ordering::Relaxed)
        };
        let (generation, index) = tag_of(word);
        if let Some(c) = self.counters(generation, index) {
            c.add_current_external(delta.signum() * bytes as i64);
        }
    }

    /// Rows a read needs room for now.
    pub fn rows_needed(&self) -> usize {
        self.groups.load(Ordering::Acquire) as usize
    }

    /// Writes one row of [`GROUP_ROW_WIDTH`] counters per group into `out` (allocatedHeapSampleCount,
    /// currentHeapSampleCount, currentHeapBytes, allocatedExternalBytes, allocatedExternalCount,
    /// freedExternalBytes, freedExternalCount, currentExternalBytes, publishedPeakExternalBytes),
    /// `sample_interval` giving currentHeapBytes. With `advance_peak_window` the open peak window
    /// closes: its peak is published and a new window starts at the current bytes. `Ok(None)`
    /// when no session groups; `Err(rows)` (nothing read, no window closed) when `out` is too
    /// short for `rows` rows. Isolate thread.
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
        let groups = self.groups.load(Ordering::Acquire) as usize;
        if out.len() < groups * GROUP_ROW_WIDTH {
            return Err(groups);
        }
        if advance_peak_window {
            grouping.peak_window_id += 1;
        }
        let interval = i64::try_from(sample_interval).unwrap_or(i64::MAX);
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed) as i64;
        for (index, row) in out
            .chunks_exact_mut(GROUP_ROW_WIDTH)
            .take(groups)
            .enumerate()
        {
            let c = self.make(grouping.generation, index as u32);
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
            overflow_count: grouping.overflow_count,
        }))
    }

    /// The labels of the running session's groups from index `from` on (unknown and overflow have
    /// none), or `None` when no session groups.
    pub fn labels_from(&self, from: usize) -> Option<Vec<GroupProjection>> {
        let guard = self.lock();
        let grouping = guard.as_ref()?;
        let mut out = Vec::new();
        for index in from..grouping.labels.len() + 2 {
            out.push(if index < 2 {
                Vec::new()
            } else {
                grouping.labels[index - 2].clone()
            });
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(p: &[(&str, &str)]) -> Vec<(Box<str>, Box<str>)> {
        p.iter()
            .map(|(k, v)| (Box::from(*k), Box::from(*v)))
            .collect()
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

    #[test]
    fn sets_are_projected_onto_the_keys_in_their_order() {
        let table = GroupTable::new();
        table.start(vec!["route".into(), "tenant".into()], 256);
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
        let labels = table.labels_from(0).unwrap();
        assert_eq!(labels[0], Vec::<(String, String)>::new());
        assert_eq!(
            labels[2],
            vec![
                ("route".to_owned(), "/a".to_owned()),
                ("tenant".to_owned(), "t1".to_owned())
            ]
        );
        assert_eq!(labels[3], vec![("route".to_owned(), "/b".to_owned())]);
        assert_eq!(table.labels_from(3).unwrap().len(), 1);
    }

    #[test]
    fn overflow_takes_long_values_extra_groups_and_the_overflow_set() {
        let table = GroupTable::new();
        table.start(vec!["k".into()], 2);
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
        assert_eq!(tags, [2, 3, OVERFLOW_GROUP, OVERFLOW_GROUP]);
        assert_eq!(overflow_set.tag().1, OVERFLOW_GROUP);
        let (read, _) = rows(&table, false);
        assert_eq!(read.overflow_count, 2);
        assert_eq!(read.groups, 4);
    }

    #[test]
    fn samples_and_blocks_are_charged_and_credited_to_the_group() {
        let table = GroupTable::new();
        let set = SetGroup::default();
        // Bytes from before the session seed its group's current bytes.
        table.external_allocated(&set, 1000);
        table.start(vec!["k".into()], 8);
        table.assign(&set, &pairs(&[("k", "a")]), false);
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
        table.start(vec!["k".into()], 8);
        table.assign(&set, &pairs(&[("k", "a")]), false);
        table.external_allocated(&set, 10);
        table.stop();
        assert_eq!(table.read(false, 1, &mut [0; 64]), Ok(None));
        // Charges while no session groups count nowhere, but the set's bytes still count.
        table.external_allocated(&set, 5);
        table.start(vec!["other".into()], 8);
        let (_, r) = rows(&table, false);
        assert_eq!(r[2..], [] as [[i64; GROUP_ROW_WIDTH]; 0]);
        // Not yet assigned in this session: its old tag is ignored.
        table.external_freed(&set, 5);
        let (_, r) = rows(&table, false);
        assert!(r.iter().all(|row| row.iter().all(|&v| v == 0)));
        table.assign(&set, &pairs(&[("k", "a")]), false);
        let (_, r) = rows(&table, false);
        assert_eq!(r[UNKNOWN_GROUP as usize][7], 10);
    }

    #[test]
    fn too_short_buffers_are_refused_before_any_window_closes() {
        let table = GroupTable::new();
        table.start(vec!["k".into()], 8);
        let set = SetGroup::default();
        table.assign(&set, &pairs(&[("k", "a")]), false);
        assert_eq!(table.read(true, 1, &mut [0; GROUP_ROW_WIDTH * 2]), Err(3));
        assert_eq!(rows(&table, false).0.peak_window_id, 0);
    }

    #[test]
    fn frees_on_other_threads_balance_to_zero() {
        let table = std::sync::Arc::new(GroupTable::new());
        let set = std::sync::Arc::new(SetGroup::default());
        table.start(vec!["k".into()], 8);
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
        let (read, r) = rows(reg.groups(), false);
        assert_eq!(read.groups, 4);
        assert_eq!(
            reg.groups().labels_from(2).unwrap()[0],
            vec![("task.type".to_owned(), "a".to_owned())]
        );
        // unknown: 7 unlabeled bytes seeded, one unlabeled sample taken and dropped
        assert_eq!(r[0], [1, 0, 0, 0, 0, 0, 0, 7, 0]);
        // task.type=a: two sets, one live sample, the 100 seeded bytes freed on another thread
        assert_eq!(r[2], [1, 1, 100, 0, 0, 100, 1, 0, 0]);
        assert_eq!(r[3], [0, 0, 0, 50, 1, 0, 0, 50, 0]);
    }
}
