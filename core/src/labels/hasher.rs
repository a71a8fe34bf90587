//! The hasher of the registry's two maps, whose keys already are hashes or small ids.

use std::hash::{BuildHasherDefault, Hasher};

/// Hasher for keys that already are hashes (content hashes) or small ids: no second SipHash on the
/// lookup path. Ids are spread with a Fibonacci multiply so that DashMap, which picks shards by the
/// high bits, does not put every sequential id into one shard.
#[derive(Default)]
pub(super) struct PrehashedHasher(u64);

impl Hasher for PrehashedHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Not used by the two key types (u64, u32); kept correct anyway.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

pub(super) type Prehashed = BuildHasherDefault<PrehashedHasher>;
