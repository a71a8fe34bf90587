//! Per-label counter rows: the native half of `labelCounters()`, read without a profile.

use std::sync::atomic::Ordering;

use super::LabelRegistry;

/// The caller's buffers for [`LabelRegistry::fill_counter_rows`]: row `i` is the set with id
/// `ids[i]` and generation `generations[i]` (see [`LabelSet::generation`](super::LabelSet::generation)).
#[derive(Debug)]
pub struct CounterColumns<'a> {
    pub ids: &'a mut [u32],
    /// Exact in an f64 (generations stay far below 2^53).
    pub generations: &'a mut [f64],
    /// Live samples (captured by V8 and not yet released).
    pub samples: &'a mut [f64],
    /// External bytes charged now.
    pub external_bytes: &'a mut [f64],
    /// Highest external bytes since the previous read (at least `external_bytes`).
    pub external_peak_bytes: &'a mut [f64],
}

impl CounterColumns<'_> {
    /// Rows that fit in all the buffers.
    pub fn capacity(&self) -> usize {
        self.ids
            .len()
            .min(self.generations.len())
            .min(self.samples.len())
            .min(self.external_bytes.len())
            .min(self.external_peak_bytes.len())
    }
}

impl LabelRegistry {
    /// Writes one row per set (the overflow set first, then by id) with a live sample, external
    /// bytes or an external peak since the previous read into `out`, and returns how many: the
    /// native half of `labelCounters()`, one scan of the dense counter table (see `set_counters`)
    /// into the caller's buffers, allocating nothing. Starts a new external-peak period for every
    /// set it reports. `Err(rows)` without reading anything (no peak is taken) when `out` may be
    /// too short: it needs room for [`counter_rows_bound`](Self::counter_rows_bound) rows. Not from
    /// a V8 callback (takes the table's lock).
    pub fn fill_counter_rows(&self, out: CounterColumns<'_>) -> std::result::Result<usize, usize> {
        let bound = self.counter_rows_bound();
        if out.capacity() < bound {
            return Err(bound);
        }
        let mut rows = 0;
        self.counters.for_each_nonzero(|index, counters| {
            // Only the sets alive now have non-zero slots (a dropped set zeroes its own), and only
            // this thread interns, so the bound holds; a row past it would be a bug, never data.
            assert!(rows < bound, "more counter rows than label sets");
            out.ids[rows] = self.id_at(index);
            out.generations[rows] = counters.generation.load(Ordering::Relaxed) as f64;
            out.samples[rows] = counters.live_samples.load(Ordering::Relaxed) as f64;
            out.external_bytes[rows] = counters.external.load(Ordering::Relaxed) as f64;
            out.external_peak_bytes[rows] = counters.take_external_peak() as f64;
            rows += 1;
        });
        Ok(rows)
    }

    /// Most rows [`fill_counter_rows`](Self::fill_counter_rows) can write now: a row per
    /// interned set and the overflow set's.
    pub fn counter_rows_bound(&self) -> usize {
        self.len() + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::*;
    use std::sync::Arc;

    /// `fill_counter_rows` into buffers of exactly the bound, trimmed to the rows written.
    #[derive(Debug)]
    struct Rows {
        ids: Vec<u32>,
        generations: Vec<f64>,
        samples: Vec<f64>,
        external_bytes: Vec<f64>,
        external_peak_bytes: Vec<f64>,
    }

    impl Rows {
        fn len(&self) -> usize {
            self.ids.len()
        }
        fn is_empty(&self) -> bool {
            self.ids.is_empty()
        }
    }

    fn counter_rows(reg: &LabelRegistry) -> Rows {
        let n = reg.counter_rows_bound();
        let (mut ids, mut generations, mut samples, mut external, mut peak) = (
            vec![0; n],
            vec![0.0; n],
            vec![0.0; n],
            vec![0.0; n],
            vec![0.0; n],
        );
        let rows = reg
            .fill_counter_rows(CounterColumns {
                ids: &mut ids,
                generations: &mut generations,
                samples: &mut samples,
                external_bytes: &mut external,
                external_peak_bytes: &mut peak,
            })
            .unwrap();
        for column in [&mut generations, &mut samples, &mut external, &mut peak] {
            column.truncate(rows);
        }
        ids.truncate(rows);
        Rows {
            ids,
            generations,
            samples,
            external_bytes: external,
            external_peak_bytes: peak,
        }
    }

    #[test]
    fn buffers_too_short_for_the_bound_are_refused_before_any_peak_is_taken() {
        let reg = LabelRegistry::new(10);
        let set = reg.intern(vec![("k".into(), "v".into())]).unwrap();
        set.add_external(10);
        set.add_external(-10);
        let (mut ids, mut f) = ([0u32; 1], [[0.0f64; 1]; 4]);
        let [g, a, b, c] = &mut f;
        let short = CounterColumns {
            ids: &mut ids,
            generations: g,
            samples: a,
            external_bytes: b,
            external_peak_bytes: c,
        };
        assert_eq!(reg.fill_counter_rows(short), Err(2));
        let rows = counter_rows(&reg);
        assert_eq!(
            (rows.ids.as_slice(), rows.external_peak_bytes[0]),
            ([set.id()].as_slice(), 10.0)
        );
    }

    #[test]
    fn counter_rows_report_each_set_with_counts_once_by_its_id() {
        let reg = LabelRegistry::new(10_000);
        // More sets than one chunk of the counter table; keep half, so that a prune leaves holes.
        let sets: Vec<_> = (0..2000)
            .map(|i| reg.intern(vec![("k".into(), format!("v{i}"))]).unwrap())
            .collect();
        assert!(
            counter_rows(&reg).is_empty(),
            "no set has anything to report yet"
        );
        for (i, set) in sets.iter().enumerate() {
            // SAFETY: `sets` keeps every set alive; the reference is released below.
            unsafe { LabelSet::capture_sample_word(LabelSet::as_word(set)) };
            if i % 3 == 0 {
                set.add_external(i as i64 + 1);
            }
        }
        reg.overflow().add_external(5);
        let rows = counter_rows(&reg);
        assert_eq!(rows.len(), 2001);
        assert_eq!((rows.ids[0], rows.external_bytes[0]), (OVERFLOW_ID, 5.0));
        for (row, set) in sets.iter().enumerate().map(|(i, s)| (i + 1, s)) {
            assert_eq!(rows.ids[row], set.id());
            assert_eq!(rows.generations[row], set.generation() as f64);
            assert_eq!(rows.samples[row], 1.0);
            let external = if (row - 1) % 3 == 0 { row as f64 } else { 0.0 };
            assert_eq!(
                (rows.external_bytes[row], rows.external_peak_bytes[row]),
                (external, external)
            );
        }
        reg.overflow().add_external(-5);
        for (i, set) in sets.iter().enumerate() {
            // SAFETY: gives back the reference the capture above took.
            unsafe { LabelSet::release_sample_word(LabelSet::as_word(set)) };
            if i % 3 == 0 {
                set.add_external(-(i as i64 + 1));
            }
        }
        // The external bytes are gone, but their peak is reported once more.
        assert_eq!(counter_rows(&reg).len(), 1 + 667);
        assert!(counter_rows(&reg).is_empty());
        let kept: Vec<_> = sets.into_iter().step_by(2).collect();
        assert_eq!(reg.prune(), 1000);
        for set in &kept {
            set.add_external(1);
        }
        let rows = counter_rows(&reg);
        let mut ids: Vec<_> = kept.iter().map(|s| s.id()).collect();
        ids.sort_unstable();
        assert_eq!(
            rows.ids, ids,
            "rows come in id order, pruned sets have none"
        );
    }

    #[test]
    fn counter_rows_name_ids_near_the_end_of_the_id_space() {
        let reg = LabelRegistry::with_first_id(10, MAX_ID - 2, Arc::default());
        let sets: Vec<_> = (0..3)
            .map(|i| reg.intern(vec![("k".into(), format!("v{i}"))]).unwrap())
            .collect();
        for set in &sets {
            set.add_external(1);
        }
        assert_eq!(counter_rows(&reg).ids, [MAX_ID - 2, MAX_ID - 1, MAX_ID]);
    }

    #[test]
    fn sample_and_external_peak_counters() {
        let reg = LabelRegistry::new(10);
        let set = reg.intern(p(&[("route", "/a")])).unwrap();
        let word = LabelSet::as_word(&set);
        // SAFETY: `set` holds a reference for the whole test.
        unsafe {
            LabelSet::capture_sample_word(word);
            LabelSet::capture_sample_word(word);
        }
        assert_eq!(set.live_samples(), 2);
        assert_eq!(Arc::strong_count(&set), 4); // registry, `set`, two samples
                                                // SAFETY: gives back one of the two references captured above.
        unsafe { LabelSet::release_sample_word(word) };
        assert_eq!((set.live_samples(), Arc::strong_count(&set)), (1, 3));
        // SAFETY: gives back the other one.
        unsafe { LabelSet::release_sample_word(word) };

        set.add_external(100);
        set.add_external(50);
        set.add_external(-120);
        assert_eq!(set.external_bytes(), 30);
        // The peak since the previous read, as a counters read reports it (0: no row).
        let take_peak = || {
            let rows = counter_rows(&reg);
            let row = rows.ids.iter().position(|&id| id == set.id());
            row.map_or(0.0, |i| rows.external_peak_bytes[i])
        };
        assert_eq!(take_peak(), 150.0);
        // A new period starts at the current value.
        assert_eq!(take_peak(), 30.0);
        set.add_external(-30);
        assert_eq!(take_peak(), 30.0);
        assert_eq!(take_peak(), 0.0);
    }
}
