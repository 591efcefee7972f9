//! A hasher for the tracer's own small keys (switch ids, ports, lookup keys, field
//! keys): a lookup is made at every hop of every trace, and the standard SipHash cost
//! more there than the table lookups it served. The keys come from the tables the
//! verifier was given; a switch that chose its metadata values to collide could only
//! slow its own lookups down, never change a result.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Multiply-rotate over words (the FxHash scheme of rustc).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FastHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        for &byte in chunks.remainder() {
            self.add(u64::from(byte));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u16(&mut self, n: u16) {
        self.add(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_u128(&mut self, n: u128) {
        // Truncation intended: the two halves are each hashed.
        self.add(n as u64);
        self.add((n >> 64) as u64);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map hashed with [`FastHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, BuildHasherDefault};

    use super::FastHasher;

    #[test]
    fn keys_that_differ_in_any_part_hash_apart() {
        let build = BuildHasherDefault::<FastHasher>::default();
        let keys = [
            (Some(1u32), 0u64, 0u64),
            (None, 0, 0),
            (Some(2), 0, 0),
            (Some(1), 0xff, 0),
            (Some(1), 0xff, 1),
        ];
        let hashes: std::collections::BTreeSet<u64> =
            keys.iter().map(|k| build.hash_one(k)).collect();
        assert_eq!(hashes.len(), keys.len());
    }
}
