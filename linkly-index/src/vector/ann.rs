//! The in-memory vector index: every live chunk vector in one flat array (unit length, so the
//! dot product is the cosine), plus an `hnsw_rs` graph over them once there are enough.
//!
//! Search is exact (a scan) while the collection is small, while the graph is being built, for
//! the chunks added since the graph was built, and under a filter (the filter's documents are
//! scanned, so filtered-out chunks never starve the result list). Deletions are tombstones: the
//! slot is marked dead and skipped; when dead slots outnumber a quarter of the live ones the
//! arrays are compacted and the graph is rebuilt.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use hnsw_rs::prelude::{Distance, Hnsw};

use rayon::prelude::*;

use crate::vector::kernels;
use crate::vector::store::{ChunkRows, StoredChunk};

/// Live chunks from which a graph is built (below, a scan is fast and exact). Measured on two
/// cores, 384 dimensions, the 300 nearest chunks a hybrid query asks for: the scan takes
/// 0.9 / 2.2 / 7.8 ms at 20,000 / 50,000 / 100,000 chunks, a graph search 6.3 / 15.9 /
/// 15.7 ms (and its build 23 s / 101 s / 229 s of CPU), so the graph only pays beyond that.
pub(crate) const GRAPH_MIN: usize = 100_000;
/// Graph parameters: neighbours per node, construction and search beam widths.
const MAX_CONNECTIONS: usize = 24;
const EF_CONSTRUCTION: usize = 200;
const EF_SEARCH_MIN: usize = 128;
const MAX_LAYERS: usize = 16;

/// Slots per task of the exact scan.
const SCAN_BLOCK: usize = 1024;

/// Scores a block of slots against the query: the dot product, or −∞ for a dead slot or one
/// the filter leaves out.
struct ScanBlock<'a> {
    query: &'a [f32],
    data: &'a [f32],
    slots: &'a [Slot],
    allowed: Option<&'a HashSet<u64>>,
    scores: &'a mut [f32],
}

impl pulp::WithSimd for ScanBlock<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        let dim = self.query.len();
        for ((score, slot), v) in self
            .scores
            .iter_mut()
            .zip(self.slots)
            .zip(self.data.chunks_exact(dim))
        {
            if slot.live && self.allowed.is_none_or(|a| a.contains(&slot.doc_id)) {
                *score = kernels::dot(self.query, v);
            }
        }
    }
}

/// `1 - a·b` for unit vectors, never negative (rounding can push a·b just above 1).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct UnitDot;

impl Distance<f32> for UnitDot {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - simd_dot(a, b)).max(0.0)
    }
}

/// The CPU's widest SIMD, detected once.
fn arch() -> pulp::Arch {
    static ARCH: std::sync::OnceLock<pulp::Arch> = std::sync::OnceLock::new();
    *ARCH.get_or_init(pulp::Arch::new)
}

/// `a · b` compiled for the widest SIMD the CPU has (the graph's distance: most of a graph
/// search and of a graph build).
pub(crate) fn simd_dot(a: &[f32], b: &[f32]) -> f32 {
    arch().dispatch(Dot(a, b))
}

struct Dot<'a>(&'a [f32], &'a [f32]);

impl pulp::WithSimd for Dot<'_> {
    type Output = f32;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) -> f32 {
        kernels::dot(self.0, self.1)
    }
}

pub(crate) fn normalise(v: &mut [f32]) {
    let n = simd_dot(v, v).sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// Where a chunk came from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    pub(crate) chunk_id: u64,
    pub(crate) doc_id: u64,
    pub(crate) start_line: u32,
    pub(crate) end_line: u32,
    live: bool,
}

/// The HNSW graph over slots `0..covered`.
pub(crate) struct Graph {
    hnsw: Hnsw<'static, f32, UnitDot>,
    covered: usize,
}

pub(crate) struct Ann {
    dim: usize,
    slots: Vec<Slot>,
    data: Vec<f32>,
    by_chunk: HashMap<u64, usize>,
    dead: usize,
    /// The highest chunk id loaded (chunk ids only grow).
    pub(crate) max_chunk_id: u64,
    /// Bumped by every compaction, so a graph built for older slots is not installed.
    generation: u64,
    graph: Option<Arc<Graph>>,
    /// Live chunks from which a graph is built.
    pub(crate) graph_min: usize,
}

impl Ann {
    pub(crate) fn new(dim: usize) -> Ann {
        Ann {
            dim,
            slots: Vec::new(),
            data: Vec::new(),
            by_chunk: HashMap::new(),
            dead: 0,
            max_chunk_id: 0,
            generation: 0,
            graph: None,
            graph_min: GRAPH_MIN,
        }
    }

    pub(crate) fn live(&self) -> usize {
        self.slots.len() - self.dead
    }

    /// Whether a graph exists (for tests and status).
    pub(crate) fn has_graph(&self) -> bool {
        self.graph.is_some()
    }

    /// Adds chunks (their vectors are normalised here). Chunks of another dimension are ignored.
    pub(crate) fn add(&mut self, chunks: Vec<StoredChunk>) {
        let dim = match chunks.first() {
            Some(c) if self.dim == 0 && self.slots.is_empty() => c.vector.len(),
            _ => self.dim,
        };
        let mut rows = ChunkRows {
            dim,
            ..ChunkRows::default()
        };
        for c in chunks {
            self.max_chunk_id = self.max_chunk_id.max(c.id);
            if c.vector.len() == dim {
                rows.meta.push((c.id, c.doc_id, c.start_line, c.end_line));
                rows.data.extend_from_slice(&c.vector);
            }
        }
        self.add_rows(rows);
    }

    /// Adds chunks read in bulk (normalised here); none when their dimension is not this one's.
    pub(crate) fn add_rows(&mut self, rows: ChunkRows) {
        if self.dim == 0 && self.slots.is_empty() {
            self.dim = rows.dim;
        }
        if rows.dim != self.dim || rows.dim == 0 || rows.meta.is_empty() {
            return;
        }
        if self.slots.is_empty() {
            // The first load: the vectors are taken as read, normalised where they are.
            let ChunkRows {
                meta,
                mut data,
                dim,
            } = rows;
            data.par_chunks_exact_mut(dim).for_each(normalise);
            self.by_chunk.reserve(meta.len());
            self.slots = meta
                .iter()
                .enumerate()
                .map(|(i, &(chunk_id, doc_id, start_line, end_line))| {
                    self.by_chunk.insert(chunk_id, i);
                    Slot {
                        chunk_id,
                        doc_id,
                        start_line,
                        end_line,
                        live: true,
                    }
                })
                .collect();
            self.max_chunk_id = meta
                .last()
                .map_or(self.max_chunk_id, |m| m.0.max(self.max_chunk_id));
            self.data = data;
            return;
        }
        self.slots.reserve(rows.meta.len());
        self.data.reserve(rows.data.len());
        self.by_chunk.reserve(rows.meta.len());
        for (&(id, doc_id, start_line, end_line), v) in
            rows.meta.iter().zip(rows.data.chunks_exact(rows.dim))
        {
            self.max_chunk_id = self.max_chunk_id.max(id);
            if self.by_chunk.contains_key(&id) {
                continue;
            }
            self.by_chunk.insert(id, self.slots.len());
            self.slots.push(Slot {
                chunk_id: id,
                doc_id,
                start_line,
                end_line,
                live: true,
            });
            let at = self.data.len();
            self.data.extend_from_slice(v);
            normalise(&mut self.data[at..]);
        }
    }

    /// Tombstones chunks; compacts when dead slots are many.
    pub(crate) fn remove(&mut self, chunk_ids: &[u64]) {
        for id in chunk_ids {
            if let Some(slot) = self.by_chunk.remove(id) {
                self.slots[slot].live = false;
                self.dead += 1;
            }
        }
        if self.dead > 64 && self.dead * 4 > self.live() {
            self.compact();
        }
    }

    /// Keeps only the chunks whose ids are in `ids` (after another process deleted some).
    pub(crate) fn retain(&mut self, ids: &HashSet<u64>) {
        let gone: Vec<u64> = self
            .by_chunk
            .keys()
            .filter(|id| !ids.contains(id))
            .copied()
            .collect();
        self.remove(&gone);
    }

    fn compact(&mut self) {
        let mut slots = Vec::with_capacity(self.live());
        let mut data = Vec::with_capacity(self.live() * self.dim);
        for (i, s) in self.slots.iter().enumerate() {
            if s.live {
                slots.push(*s);
                data.extend_from_slice(&self.data[i * self.dim..(i + 1) * self.dim]);
            }
        }
        self.by_chunk = slots
            .iter()
            .enumerate()
            .map(|(i, s)| (s.chunk_id, i))
            .collect();
        self.slots = slots;
        self.data = data;
        self.dead = 0;
        self.graph = None;
        self.generation += 1;
        tracing::debug!(live = self.slots.len(), "compacted the vector index");
    }

    fn vector(&self, slot: usize) -> &[f32] {
        &self.data[slot * self.dim..(slot + 1) * self.dim]
    }

    pub(crate) fn slot(&self, slot: usize) -> &Slot {
        &self.slots[slot]
    }

    /// The `k` nearest live chunks to a unit query vector, as (slot, cosine), best first.
    /// `allowed` restricts to documents (then the scan is exact).
    pub(crate) fn search(
        &self,
        query: &[f32],
        k: usize,
        allowed: Option<&HashSet<u64>>,
    ) -> Vec<(usize, f32)> {
        if query.len() != self.dim || k == 0 {
            return Vec::new();
        }
        let mut out: Vec<(usize, f32)> = Vec::new();
        let scan_from = match (&self.graph, allowed) {
            (Some(g), None) => {
                let ef = EF_SEARCH_MIN.max(k * 2);
                for n in g.hnsw.search(query, k, ef) {
                    let slot = n.d_id;
                    if slot < self.slots.len() && self.slots[slot].live {
                        out.push((slot, 1.0 - n.distance));
                    }
                }
                g.covered
            }
            _ => 0,
        };
        // The exact part: blocks of slots scored in parallel, each block compiled for the
        // widest SIMD the CPU has (the scan reads every vector: it is most of a hybrid query
        // at ten thousand chunks).
        let dim = self.dim;
        let arch = arch();
        let slots = &self.slots[scan_from.min(self.slots.len())..];
        let mut scores = vec![f32::NEG_INFINITY; slots.len()];
        scores
            .par_chunks_mut(SCAN_BLOCK)
            .zip(slots.par_chunks(SCAN_BLOCK))
            .enumerate()
            .for_each(|(b, (scores, slots))| {
                let first = scan_from + b * SCAN_BLOCK;
                let data = &self.data[first * dim..(first + slots.len()) * dim];
                arch.dispatch(ScanBlock {
                    query,
                    data,
                    slots,
                    allowed,
                    scores,
                });
            });
        out.extend(
            scores
                .iter()
                .enumerate()
                .filter(|(_, s)| s.is_finite())
                .map(|(i, &s)| (scan_from + i, s)),
        );
        // The best `k`, best first, without sorting the rest.
        let by_score = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if out.len() > k {
            out.select_nth_unstable_by(k - 1, by_score);
            out.truncate(k);
        }
        out.sort_by(by_score);
        out
    }

    /// What a graph build needs, when one is due: no graph yet, or the chunks added since the
    /// last build (which are scanned) outnumber a quarter of those it covers.
    pub(crate) fn graph_work(&self) -> Option<GraphWork> {
        let covered = self.graph.as_ref().map_or(0, |g| g.covered);
        let tail = self.slots.len() - covered;
        if self.live() < self.graph_min || tail == 0 || (covered > 0 && tail * 4 < covered) {
            return None;
        }
        let vectors: Vec<(usize, Vec<f32>)> = (0..self.slots.len())
            .filter(|s| self.slots[*s].live)
            .map(|s| (s, self.vector(s).to_vec()))
            .collect();
        Some(GraphWork {
            covered_to: self.slots.len(),
            vectors,
            generation: self.generation,
        })
    }

    /// Installs a graph built from [`Ann::graph_work`], unless the slots were compacted since.
    pub(crate) fn install_graph(&mut self, built: BuiltGraph) {
        if built.generation == self.generation {
            self.graph = Some(built.graph);
        }
    }
}

/// A graph build to do outside the lock: every live vector of the slots `0..covered_to`.
pub(crate) struct GraphWork {
    covered_to: usize,
    vectors: Vec<(usize, Vec<f32>)>,
    generation: u64,
}

/// A graph built by [`GraphWork::build`].
pub(crate) struct BuiltGraph {
    graph: Arc<Graph>,
    generation: u64,
}

impl GraphWork {
    /// Builds a new graph over the vectors, inserting in parallel.
    pub(crate) fn build(self) -> BuiltGraph {
        let hnsw = Hnsw::new(
            MAX_CONNECTIONS,
            self.vectors.len().max(1024),
            MAX_LAYERS,
            EF_CONSTRUCTION,
            UnitDot,
        );
        let items: Vec<(&[f32], usize)> = self
            .vectors
            .iter()
            .map(|(s, v)| (v.as_slice(), *s))
            .collect();
        hnsw.parallel_insert_slice(&items);
        BuiltGraph {
            graph: Arc::new(Graph {
                hnsw,
                covered: self.covered_to,
            }),
            generation: self.generation,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: u64, doc: u64, v: Vec<f32>) -> StoredChunk {
        StoredChunk {
            id,
            doc_id: doc,
            start_line: 1,
            end_line: 1,
            vector: v,
        }
    }

    fn random_vectors(n: usize, dim: usize) -> Vec<Vec<f32>> {
        let mut x: u64 = 12345;
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

    #[test]
    fn exact_search_tombstones_and_compaction() {
        let mut ann = Ann::new(2);
        ann.add(vec![
            chunk(1, 10, vec![1.0, 0.0]),
            chunk(2, 11, vec![0.0, 1.0]),
            chunk(3, 12, vec![0.7, 0.7]),
        ]);
        let hits = ann.search(&[1.0, 0.0], 2, None);
        assert_eq!(ann.slot(hits[0].0).doc_id, 10);
        assert_eq!(ann.slot(hits[1].0).doc_id, 12);
        ann.remove(&[1]);
        let hits = ann.search(&[1.0, 0.0], 3, None);
        assert_eq!(hits.len(), 2);
        assert_eq!(ann.slot(hits[0].0).doc_id, 12);
        let allowed: HashSet<u64> = [11].into();
        let hits = ann.search(&[1.0, 0.0], 3, Some(&allowed));
        assert_eq!(hits.len(), 1);
        assert_eq!(ann.slot(hits[0].0).doc_id, 11);
    }

    /// The parallel SIMD scan ranks as a plain loop does, across several blocks, with
    /// tombstones and a filter, for a width that is not a multiple of the lanes.
    #[test]
    fn scan_matches_a_plain_ranking() {
        let dim = 37;
        let vectors = random_vectors(3 * SCAN_BLOCK + 17, dim);
        let mut ann = Ann::new(dim);
        ann.add(
            vectors
                .iter()
                .enumerate()
                .map(|(i, v)| chunk(i as u64 + 1, (i % 50) as u64, v.clone()))
                .collect(),
        );
        ann.remove(&[5, 1500, 2048]);
        let allowed: HashSet<u64> = [3, 7, 49].into();
        for filter in [None, Some(&allowed)] {
            for q in &vectors[..5] {
                let mut q = q.clone();
                normalise(&mut q);
                let got = ann.search(&q, 10, filter);
                let mut want: Vec<(usize, f32)> = (0..ann.slots.len())
                    .filter(|&i| ann.slots[i].live)
                    .filter(|&i| filter.is_none_or(|a| a.contains(&ann.slots[i].doc_id)))
                    .map(|i| (i, simd_dot(&q, ann.vector(i))))
                    .collect();
                want.sort_by(|a, b| b.1.total_cmp(&a.1));
                want.truncate(10);
                assert_eq!(got.len(), want.len());
                for (g, w) in got.iter().zip(&want) {
                    assert_eq!(g.0, w.0);
                    assert!((g.1 - w.1).abs() < 1e-5, "{} against {}", g.1, w.1);
                }
            }
        }
    }

    #[test]
    fn graph_search_agrees_with_the_scan() {
        let dim = 16;
        let vectors = random_vectors(600, dim);
        let mut ann = Ann::new(dim);
        ann.graph_min = 100;
        ann.add(
            vectors
                .iter()
                .enumerate()
                .map(|(i, v)| chunk(i as u64 + 1, i as u64 + 1, v.clone()))
                .collect(),
        );
        let exact: Vec<Vec<usize>> = vectors[..20]
            .iter()
            .map(|q| {
                let mut q = q.clone();
                normalise(&mut q);
                ann.search(&q, 5, None).into_iter().map(|h| h.0).collect()
            })
            .collect();
        let work = ann.graph_work().expect("a graph is due");
        ann.install_graph(work.build());
        assert!(ann.has_graph());
        // More chunks after the graph: they are scanned.
        ann.add(vec![chunk(10_000, 10_000, vectors[0].clone())]);
        let mut agree = 0;
        for (i, (q, want)) in vectors[..20].iter().zip(&exact).enumerate() {
            let mut q = q.clone();
            normalise(&mut q);
            let got: Vec<usize> = ann.search(&q, 6, None).into_iter().map(|h| h.0).collect();
            if i == 0 {
                assert!(
                    got.contains(&600),
                    "the post-graph chunk is found by the scan"
                );
            }
            agree += want.iter().filter(|s| got.contains(s)).count();
        }
        assert!(agree >= 95, "recall@5 of the graph: {agree}/100");
        // Deleting most chunks compacts and drops the graph.
        let ids: Vec<u64> = (1..=500).collect();
        ann.remove(&ids);
        assert!(!ann.has_graph());
        assert_eq!(ann.live(), 101);
    }
}
