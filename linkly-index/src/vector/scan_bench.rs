//! The scan on its own, reachable from outside the crate for `cargo xtask bench scan`, and the
//! made-up vectors it and the index's own tests search.

#[cfg(feature = "testing")]
use crate::vector::{ann::Ann, store::StoredChunk};

/// The scan on its own, for `cargo xtask bench scan`: chunks held in memory, searched in f32
/// or, after [`ScanBench::build_codes`], by their 8-bit copies. Not API.
#[cfg(feature = "testing")]
pub struct ScanBench(Ann);

#[cfg(feature = "testing")]
impl ScanBench {
    /// Chunk `i` holds `vectors[i]` (all of the first one's length).
    pub fn new(vectors: Vec<Vec<f32>>) -> ScanBench {
        let mut ann = Ann::new(vectors.first().map_or(0, Vec::len));
        ann.add(
            vectors
                .into_iter()
                .enumerate()
                .map(|(i, vector)| StoredChunk {
                    id: i as u64 + 1,
                    doc_id: i as u64,
                    start_line: 1,
                    end_line: 1,
                    vector,
                })
                .collect(),
        );
        ScanBench(ann)
    }

    /// Makes the 8-bit copies the scan then reads.
    pub fn build_codes(&mut self) {
        self.0.build_codes();
    }

    /// The `k` nearest chunks to `query`: how many were found.
    pub fn search(&self, query: &[f32], k: usize) -> usize {
        self.0.search(query, k, None).len()
    }
}

/// `n` made-up vectors of `dim` values in [-1, 1), the same for the same `seed` (xorshift):
/// what the scan's bench and tests search. Not API.
pub fn random_vectors(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            (0..dim)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % 2000) as f32 / 1000.0 - 1.0
                })
                .collect()
        })
        .collect()
}
