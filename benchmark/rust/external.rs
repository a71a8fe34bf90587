//! Cost of external (ArrayBuffer) byte accounting on the allocator path.
//!
//! - `external/alloc_free/{labeled,unlabeled}`: charging and giving back one block, one thread.
//! - `external/alloc_free_4_threads/{same_set,own_set}`: 4 threads at once (contended vs not).
//! - `external/block_words/{insert_remove,remove_unrecorded}`: recording a labeled block's word
//!   beside it and taking it out (10,000 other blocks live), and the free of a block never
//!   recorded (unlabeled), which searches to an empty slot.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use heap_labels_core::{BlockWords, ExternalCounters, LabelRegistry, LabelSet};

fn external(c: &mut Criterion) {
    let mut g = c.benchmark_group("external");
    g.throughput(Throughput::Elements(1));

    // The counting allocator charges every block that reaches it (it is installed only while a
    // session tracks external bytes), so the alloc/free pair is the whole cost.
    let counters = ExternalCounters::new();
    let reg = LabelRegistry::new(16);
    let set = reg
        .intern(vec![("route".into(), "/upload".into())])
        .unwrap();
    g.bench_function("alloc_free/labeled", |b| {
        b.iter(|| {
            let c = black_box(&counters);
            c.on_alloc(Some(&set), black_box(65_536));
            c.on_free(Some(&set), black_box(65_536));
        })
    });
    g.bench_function("alloc_free/unlabeled", |b| {
        b.iter(|| {
            let c = black_box(&counters);
            c.on_alloc(None, black_box(65_536));
            c.on_free(None, black_box(65_536));
        })
    });

    let words = BlockWords::new();
    let address = |i: usize| 0x7f00_0000_0000usize + i * 48;
    for i in 0..10_000 {
        words.insert(address(i), 16);
    }
    let mut next = 10_000usize;
    g.bench_function("block_words/insert_remove", |b| {
        b.iter(|| {
            // A fresh address each time, like a busy allocator's.
            next += 1;
            let block = black_box(address(next));
            words.insert(block, 16);
            black_box(words.remove(block))
        })
    });
    g.bench_function("block_words/remove_unrecorded", |b| {
        b.iter(|| black_box(words.remove(black_box(address(1 << 30)))))
    });

    let sets: Vec<_> = (0..4)
        .map(|i| reg.intern(vec![("worker".into(), i.to_string())]).unwrap())
        .collect();
    for (name, shared) in [("same_set", true), ("own_set", false)] {
        g.bench_function(format!("alloc_free_4_threads/{name}"), |b| {
            b.iter_custom(|iters| {
                let per_thread = iters.div_ceil(4);
                let barrier = Barrier::new(5);
                std::thread::scope(|s| {
                    for t in 0..4 {
                        let set: &LabelSet = if shared { &sets[0] } else { &sets[t] };
                        let (counters, barrier) = (&counters, &barrier);
                        s.spawn(move || {
                            barrier.wait();
                            for _ in 0..per_thread {
                                counters.on_alloc(Some(set), black_box(4096));
                                counters.on_free(Some(set), black_box(4096));
                            }
                        });
                    }
                    barrier.wait();
                    Instant::now()
                })
                .elapsed()
            })
        });
    }
    g.finish();
    assert!(
        sets.iter().all(|set| set.external_bytes() == 0),
        "benchmarks leave the counters balanced"
    );
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
    targets = external
}
criterion_main!(benches);
