//! V8's sample scaling: what one sample of the sampling heap profiler stands for.
//!
//! Poisson sampling with mean interval r picks an object of size s with probability
//! 1 - exp(-s/r), so each sampled object stands for 1/(1 - exp(-s/r)) objects (V8's
//! `ScaleSample`). An interval of 0 means every allocation was sampled: no scaling. Live samples
//! (the profile model) and dead ones (the allocation totals) are scaled here alike.

/// Unsampled estimate of the objects a sample stands for: `count / (1 - exp(-size / interval))`
/// (`count` when the interval or the size is 0).
pub fn objects(size: u64, count: u32, interval: u64) -> f64 {
    let count = f64::from(count);
    if interval == 0 || size == 0 {
        return count;
    }
    let p = -(-(size as f64) / interval as f64).exp_m1(); // 1 - exp(-s/r), precise for small s/r
    count / p
}

/// Unsampled estimate of the bytes a sample stands for: `size * count / (1 - exp(-size /
/// interval))`.
pub fn bytes(size: u64, count: u32, interval: u64) -> f64 {
    objects(size, count, interval) * size as f64
}
