//! Cost of label interning and of the per-sample word path.
//!
//! - `intern/hit`: interning a set that exists (what every `withHeapLabels` call with known labels
//!   pays); the caller's `Vec<(String, String)>` is built outside the timed region.
//! - `intern/miss`: interning new sets into a fresh registry.
//! - `intern/miss_at_cap_churn`: the core's part of a first use of a new set in a process that
//!   makes new sets for good (issue 28 item 2: a million distinct sets): a registry at its cap
//!   (10k, the default) whose sets are let go right after use, pruned when full as src/labels.rs
//!   `make_room` does after a GC; per new set, the intern, its share of the prunes and the drop.
//! - `intern/overflow_when_full`: `try_intern` of a new set into a full registry of held sets
//!   (the overflow path: validated pairs come back pending).
//! - `intern/concurrent_hit_4_threads/*`: 4 threads interning at once (one hot set, or 64 sets).
//! - `prune/*`: a full prune walk over 10k live sets vs `prune_if_due` when not due.
//! - `word/retain_release`: what V8's `SampleObject` capture plus the sample's release cost.
//! - `counters/rows/*`: the native pass of `labelCounters()` over 10k sets, every one with a live
//!   sample (the patched runtime's case: a row each) or none (stock: no rows).

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use heap_labels_core::{CounterColumns, LabelRegistry, LabelSet};

fn pairs(route: &str, tenant: usize) -> Vec<(String, String)> {
    vec![
        ("tenant".into(), format!("tenant-{tenant}")),
        ("route".into(), route.into()),
        ("method".into(), "GET".into()),
    ]
}

fn intern(c: &mut Criterion) {
    let mut g = c.benchmark_group("intern");
    g.throughput(Throughput::Elements(1));

    let reg = LabelRegistry::new(1_000_000);
    let known = pairs("/api/users/:id", 7);
    reg.intern(known.clone()).unwrap();
    g.bench_function("hit", |b| {
        b.iter_batched(
            || known.clone(),
            |p| reg.intern(p).unwrap(),
            BatchSize::SmallInput,
        )
    });

    g.bench_function("miss", |b| {
        b.iter_custom(|iters| {
            let reg = LabelRegistry::new(usize::MAX);
            let inputs: Vec<_> = (0..iters as usize).map(|i| pairs("/miss", i)).collect();
            let start = Instant::now();
            for p in inputs {
                black_box(reg.intern(p).unwrap());
            }
            start.elapsed()
        })
    });

    g.bench_function("miss_at_cap_churn", |b| {
        b.iter_custom(|iters| {
            let reg = LabelRegistry::new(10_000);
            let inputs: Vec<_> = (0..iters as usize).map(|i| pairs("/churn", i)).collect();
            let start = Instant::now();
            for p in inputs {
                if reg.len() >= reg.max_sets() {
                    reg.prune();
                }
                reg.prune_if_due();
                // Dropped at once: its holder died.
                black_box(reg.intern(p).unwrap());
            }
            start.elapsed()
        })
    });

    let full = LabelRegistry::new(1_000);
    let _held: Vec<_> = (0..1_000)
        .map(|i| full.intern(pairs("/held", i)).unwrap())
        .collect();
    let mut next = 0usize;
    g.bench_function("overflow_when_full", |b| {
        b.iter_batched(
            || {
                next += 1;
                pairs("/overflow", next)
            },
            |p| full.try_intern(p).unwrap(),
            BatchSize::SmallInput,
        )
    });

    for (name, distinct) in [("one_set", 1usize), ("64_sets", 64)] {
        let reg = Arc::new(LabelRegistry::new(1_000_000));
        for t in 0..distinct {
            reg.intern(pairs("/concurrent", t)).unwrap();
        }
        g.bench_function(format!("concurrent_hit_4_threads/{name}"), |b| {
            b.iter_custom(|iters| concurrent(&reg, iters, distinct))
        });
    }
    g.finish();
}

/// Wall time for 4 threads to intern `iters` sets in total (inputs prepared before the clock).
fn concurrent(reg: &Arc<LabelRegistry>, iters: u64, distinct: usize) -> Duration {
    const THREADS: usize = 4;
    let per_thread = (iters as usize).div_ceil(THREADS);
    let barrier = Barrier::new(THREADS + 1);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (reg, barrier) = (reg, &barrier);
            s.spawn(move || {
                let inputs: Vec<_> = (0..per_thread)
                    .map(|i| pairs("/concurrent", (i + t) % distinct))
                    .collect();
                barrier.wait();
                for p in inputs {
                    black_box(reg.intern(p).unwrap());
                }
            });
        }
        barrier.wait();
        let start = Instant::now();
        // The scope joins every thread before returning.
        start
    })
    .elapsed()
}

/// What pruning costs when called before every intern (as a per-intern housekeeping step).
fn prune(c: &mut Criterion) {
    let mut g = c.benchmark_group("prune");
    let reg = LabelRegistry::new(100_000);
    let held: Vec<_> = (0..10_000)
        .map(|i| reg.intern(pairs("/held", i)).unwrap())
        .collect();
    g.bench_function("full_walk/10k_held_sets", |b| b.iter(|| reg.prune()));
    g.bench_function("if_due/10k_held_sets_not_due", |b| {
        b.iter(|| reg.prune_if_due())
    });
    drop(held);
    g.finish();
}

fn words(c: &mut Criterion) {
    let mut g = c.benchmark_group("word");
    g.throughput(Throughput::Elements(1));
    let reg = LabelRegistry::new(10);
    let set = reg.intern(pairs("/w", 1)).unwrap();
    let word = LabelSet::as_word(&set);
    g.bench_function("retain_release", |b| {
        b.iter(|| {
            // SAFETY: `set` keeps the set alive; each retain is matched by one release.
            unsafe {
                LabelSet::retain_word(black_box(word));
                LabelSet::release_word(black_box(word));
            }
        })
    });
    g.bench_function("word_as_ref_get", |b| {
        // SAFETY: `set` keeps the set alive for the whole benchmark.
        b.iter(|| {
            unsafe { LabelSet::word_as_ref(black_box(word)) }
                .get("route")
                .is_some()
        })
    });
    g.finish();
}

/// `labelCounters()`'s native pass. The sets are interned with other allocations in between (as
/// in a process, where they come one request at a time), so they do not sit in one tidy block.
fn counters(c: &mut Criterion) {
    let mut g = c.benchmark_group("counters");
    let reg = LabelRegistry::new(100_000);
    let mut ballast = Vec::new();
    let held: Vec<_> = (0..10_000)
        .map(|i| {
            ballast.push(vec![0u8; 64 + (i % 7) * 48]);
            reg.intern(pairs("/held", i)).unwrap()
        })
        .collect();
    // Buffers reused from read to read, as lib/counters.js keeps them.
    let n = reg.counter_rows_bound();
    let (mut ids, mut generations, mut samples, mut external, mut peak) = (
        vec![0u32; n],
        vec![0.0; n],
        vec![0.0; n],
        vec![0.0; n],
        vec![0.0; n],
    );
    let mut read = || {
        reg.fill_counter_rows(CounterColumns {
            ids: &mut ids,
            generations: &mut generations,
            samples: &mut samples,
            external_bytes: &mut external,
            external_peak_bytes: &mut peak,
        })
    };
    g.bench_function("rows/10k_sets_none_live", |b| b.iter(|| black_box(read())));
    for set in &held {
        // SAFETY: `held` keeps every set alive; each capture is matched by a release below.
        unsafe { LabelSet::capture_sample_word(LabelSet::as_word(set)) };
    }
    g.bench_function("rows/10k_sets_all_live", |b| b.iter(|| black_box(read())));
    for set in &held {
        // SAFETY: releases the reference the capture above took.
        unsafe { LabelSet::release_sample_word(LabelSet::as_word(set)) };
    }
    drop((held, ballast));
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = intern, prune, words, counters
}
criterion_main!(benches);
