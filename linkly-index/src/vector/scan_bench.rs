//! The scan on its own, reachable from outside the crate for `cargo xtask bench scan`.

use crate::vector::ann::Ann;
use crate::vector::store::StoredChunk;

/// The scan on its own, for `cargo xtask bench scan`: chunks held in memory, searched in f32
/// or, after [`ScanBench::build_codes`], by their 8-bit copies. Not API.
#[doc(hidden)]
pub struct ScanBench(Ann);

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
