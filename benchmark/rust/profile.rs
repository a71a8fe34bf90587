//! Cost of reading a profile: aggregation by label, pprof encoding (+ gzip) and DevTools JSON.
//!
//! Synthetic profiles with a realistic call tree (2,000 nodes, depth up to ~40, a few hot leaves)
//! and 10k / 100k live samples spread over 1, 100 and 10k label sets (10% unlabeled), sizes mostly
//! small objects with some large ones, at V8's default 512 KiB interval. Throughput is samples/s.

use std::sync::Arc;
use std::time::Duration;

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use heap_labels_core::{heapprofile, pprof, CallFrame, LabelRegistry, LabelSet, Profile, Sample};

const NODES: usize = 2_000;

/// Deterministic xorshift generator (no `rand` dependency, same profile every run).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A call tree built in pre-order: each new node hangs under a recent node (deep, narrow stacks
/// like real programs), sometimes under a shallow one (new request handlers).
fn tree(rng: &mut Rng) -> Profile {
    let mut parents = vec![None];
    let mut depth = vec![0usize];
    for i in 1..NODES {
        let parent = if rng.below(10) < 7 && depth[i - 1] < 40 {
            i - 1
        } else {
            rng.below(i.min(50))
        };
        parents.push(Some(parent));
        depth.push(depth[parent] + 1);
    }
    let mut children = vec![Vec::new(); NODES];
    for (i, p) in parents.iter().enumerate() {
        if let Some(p) = p {
            children[*p].push(i);
        }
    }
    // Re-number in pre-order so `nodes` is pre-order with ids != indices (as from V8).
    let mut profile = Profile::new(512 * 1024);
    let mut stack = vec![(0usize, None)];
    while let Some((n, parent)) = stack.pop() {
        let files = [
            "node:internal/streams",
            "file:///srv/app/server.js",
            "file:///srv/app/db.js",
        ];
        let frame = CallFrame {
            function_name: if n == 0 {
                "(root)".into()
            } else if n % 7 == 0 {
                String::new()
            } else {
                format!("fn{n}")
            },
            script_id: (n % 40) as i32,
            url: files[n % 3].into(),
            line_number: (n % 900) as i32 + 1,
            column_number: (n % 80) as i32 + 1,
        };
        let index = profile.add_node(parent, 1000 + n as u32, frame);
        for &c in children[n].iter().rev() {
            stack.push((c, Some(index)));
        }
    }
    profile
}

fn synthetic(samples: usize, label_sets: usize) -> (Profile, LabelRegistry) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let reg = LabelRegistry::new(label_sets + 1);
    let sets: Vec<Arc<LabelSet>> = (0..label_sets)
        .map(|i| {
            reg.intern(vec![
                ("route".into(), format!("/api/v1/resource{}/:id", i % 97)),
                ("tenant".into(), format!("tenant-{i}")),
                ("method".into(), ["GET", "POST", "PUT"][i % 3].into()),
            ])
            .unwrap()
        })
        .collect();
    let mut profile = tree(&mut rng);
    // Allocation sites: a skewed subset of nodes (hot leaves get most samples).
    let hot: Vec<u32> = (0..200)
        .map(|_| 1000 + 1 + rng.below(NODES - 1) as u32)
        .collect();
    for id in 0..samples {
        let node_id = if rng.below(4) == 0 {
            1000 + 1 + rng.below(NODES - 1) as u32
        } else {
            hot[rng.below(hot.len())]
        };
        let size = match rng.below(100) {
            0 => 1 << 20,
            1..=5 => 64 * 1024,
            _ => 16 + 8 * rng.below(32) as u64,
        };
        let labels = (rng.below(10) != 0).then(|| Arc::clone(&sets[rng.below(sets.len())]));
        profile.samples.push(Sample {
            node_id,
            size,
            count: 1,
            sample_id: id as u64,
            labels,
        });
    }
    profile.external = sets
        .iter()
        .take(50)
        .map(|s| (Arc::clone(s), 65_536))
        .collect();
    profile.unlabeled_external = 1 << 20;
    (profile, reg)
}

fn profile(c: &mut Criterion) {
    let mut g = c.benchmark_group("profile");
    g.sample_size(10);
    for samples in [10_000usize, 100_000] {
        for sets in [1usize, 100, 10_000] {
            let (p, _reg) = synthetic(samples, sets);
            let id = format!("{samples}_samples/{sets}_sets");
            g.throughput(Throughput::Elements(samples as u64));
            g.bench_with_input(BenchmarkId::new("by_label_set", &id), &p, |b, p| {
                b.iter(|| black_box(p.by_label(None)))
            });
            g.bench_with_input(BenchmarkId::new("by_label_key", &id), &p, |b, p| {
                b.iter(|| black_box(p.by_label(Some("route"))))
            });
            g.bench_with_input(BenchmarkId::new("pprof_message", &id), &p, |b, p| {
                b.iter(|| black_box(pprof::build(p, &pprof::EncodeOptions::default())))
            });
            g.bench_with_input(BenchmarkId::new("pprof_gzip", &id), &p, |b, p| {
                b.iter(|| black_box(pprof::encode(p)))
            });
            g.bench_with_input(BenchmarkId::new("heapprofile_json", &id), &p, |b, p| {
                b.iter(|| black_box(heapprofile::to_string(p)))
            });
        }
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = profile
}
criterion_main!(benches);
