//! The in-memory vector index: every live chunk vector in one flat array (unit length, so the
//! dot product is the cosine), plus an `hnsw_rs` graph over them once there are enough.
//!
//! Search is exact (a scan) while the collection is small, while the graph is being built, for
//! the chunks added since the graph was built, and under a filter (the filter's documents are
//! scanned, so filtered-out chunks never starve the result list). Deletions are tombstones: the
//! slot is marked dead and skipped; when dead slots outnumber a quarter of the live ones the
//! arrays are compacted and the graph is rebuilt.
//!
//! From a collection's second search on ([`Ann::build_codes`]; a one-shot CLI search does not
//! pay for it), or from the first when the collection was mapped from a snapshot
//! ([`Ann::load_snapshot`], which holds the copies), the scan reads each vector's 8-bit copy:
//! a quarter of the bytes. At ten thousand chunks the f32 vectors are 17 MB, and reading them
//! all pushed the embedding model's weights out of the CPU's cache before the next query's
//! embedding. The best
//! [`rescored`] chunks by their copies are then ranked with the f32 vectors, so the answers are
//! the exact ones unless 8-bit rounding (about 10⁻³ of a cosine) moves a chunk across that
//! margin.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use hnsw_rs::prelude::{Distance, Hnsw};

use rayon::prelude::*;

use linkly_models::prepared::{Array, Reader, Writer, check};

use crate::filter::IdSet;
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

/// How many of the scan's best chunks by their 8-bit copies are ranked again with the f32
/// vectors, for `k` wanted: twice as many, and 64 more (a few hundred vectors: a fraction of a
/// millisecond).
fn rescored(k: usize) -> usize {
    k.saturating_mul(2).saturating_add(64)
}

/// A vector's 8-bit copy: `codes[i] ≈ v[i] / scale`, `scale = max|v| / 127` (0 for a vector of
/// zeros). Written to vectorise (lane-wise maximum, rounding to even): run it inside
/// [`pulp::Arch::dispatch`].
#[inline(always)]
fn quantize_codes(v: &[f32], codes: &mut [i8]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let chunks = v.chunks_exact(8);
    let mut max = chunks
        .remainder()
        .iter()
        .fold(0.0f32, |m, x| m.max(x.abs()));
    for c in chunks {
        for (m, x) in lanes.iter_mut().zip(c) {
            let a = x.abs();
            *m = if a > *m { a } else { *m };
        }
    }
    max = lanes.iter().fold(max, |m, &x| m.max(x));
    if max <= 0.0 || !max.is_finite() {
        codes.fill(0);
        return 0.0;
    }
    let inv = 127.0 / max;
    for (c, x) in codes.iter_mut().zip(v) {
        *c = (x * inv).round_ties_even().clamp(-127.0, 127.0) as i8;
    }
    max / 127.0
}

/// The 8-bit copies of a block of vectors, compiled for the widest SIMD the CPU has.
struct Quantize<'a> {
    data: &'a [f32],
    codes: &'a mut [i8],
    scales: &'a mut [f32],
}

impl pulp::WithSimd for Quantize<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        let dim = self.data.len() / self.scales.len().max(1);
        for ((v, c), s) in self
            .data
            .chunks_exact(dim)
            .zip(self.codes.chunks_exact_mut(dim))
            .zip(self.scales.iter_mut())
        {
            *s = quantize_codes(v, c);
        }
    }
}

/// The query in 16 bits for [`linkly_models::dot_i8_i16`], with its scale: as many levels as keep
/// every sum below 2^31.
fn quantize_query(q: &[f32]) -> (Vec<i16>, f32) {
    let levels = (i32::MAX as usize / (q.len().max(1) * 127)).min(i16::MAX as usize) as f32;
    let max = q.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max <= 0.0 || !max.is_finite() {
        return (vec![0; q.len()], 0.0);
    }
    let inv = levels / max;
    let codes = q
        .iter()
        .map(|x| (x * inv).round().clamp(-levels, levels) as i16)
        .collect();
    (codes, max / levels)
}

/// What a scan reads: the f32 vectors, or their 8-bit copies against a 16-bit query.
#[derive(Clone, Copy)]
enum Scan<'a> {
    F32 {
        query: &'a [f32],
        data: &'a [f32],
    },
    Codes {
        query: &'a [i16],
        query_scale: f32,
        codes: &'a [i8],
        scales: &'a [f32],
    },
}

impl<'a> Scan<'a> {
    /// The same, for slots `from..from + n` only.
    fn slots(self, dim: usize, from: usize, n: usize) -> Scan<'a> {
        match self {
            Scan::F32 { query, data } => Scan::F32 {
                query,
                data: &data[from * dim..(from + n) * dim],
            },
            Scan::Codes {
                query,
                query_scale,
                codes,
                scales,
            } => Scan::Codes {
                query,
                query_scale,
                codes: &codes[from * dim..(from + n) * dim],
                scales: &scales[from..from + n],
            },
        }
    }

    /// The `i`-th vector's score: the dot product, or about it from the copies.
    #[inline(always)]
    fn score(&self, dim: usize, i: usize) -> f32 {
        match *self {
            Scan::F32 { query, data } => linkly_models::dot(query, &data[i * dim..(i + 1) * dim]),
            Scan::Codes {
                query,
                query_scale,
                codes,
                scales,
            } => {
                linkly_models::dot_i8_i16(&codes[i * dim..(i + 1) * dim], query) as f32
                    * (scales[i] * query_scale)
            }
        }
    }
}

/// Scores a block of slots against the query, or −∞ for a dead slot or one the filter leaves
/// out.
struct ScanBlock<'a> {
    scan: Scan<'a>,
    dim: usize,
    slots: &'a [Slot],
    allowed: Option<&'a IdSet>,
    scores: &'a mut [f32],
}

impl pulp::WithSimd for ScanBlock<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        for (i, (score, slot)) in self.scores.iter_mut().zip(self.slots).enumerate() {
            if slot.live && self.allowed.is_none_or(|a| a.contains(slot.doc_id)) {
                *score = self.scan.score(self.dim, i);
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
        linkly_models::dot(self.0, self.1)
    }
}

pub(crate) fn normalise(v: &mut [f32]) {
    let n = simd_dot(v, v).sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// The key of a snapshot of `count` chunks of `owner`, the highest id `max`, the ids summing to
/// `sum` (wrapping).
pub(crate) fn snapshot_key(owner: &str, count: u64, max: u64, sum: u64) -> String {
    format!("{count} {max} {sum} {owner}")
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
    /// Read from the store, or a view into a snapshot file ([`Ann::load_snapshot`]), copied
    /// into the process at the first change.
    data: Array<f32>,
    /// Per slot, once [`Ann::build_codes`] ran (`coded`): its vector's 8-bit copy (`dim`
    /// codes) and scale ([`quantize_codes`]).
    codes: Array<i8>,
    scales: Array<f32>,
    coded: bool,
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
            data: Array::default(),
            codes: Array::default(),
            scales: Array::default(),
            coded: false,
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

    /// Whether the vectors lie in a mapped snapshot.
    #[cfg(test)]
    pub(crate) fn is_mapped(&self) -> bool {
        self.data.is_mapped()
    }

    /// Whether the scan reads the vectors' 8-bit copies.
    pub(crate) fn coded(&self) -> bool {
        self.coded
    }

    /// Makes the vectors' 8-bit copies, which the scan reads from then on (and which chunks
    /// added later get at once).
    pub(crate) fn build_codes(&mut self) {
        if self.coded {
            return;
        }
        self.coded = true;
        let dim = self.dim;
        if dim == 0 {
            return;
        }
        let arch = arch();
        let mut codes = vec![0i8; self.data.len()];
        let mut scales = vec![0.0f32; self.slots.len()];
        self.data
            .par_chunks(dim * SCAN_BLOCK)
            .zip(codes.par_chunks_mut(dim * SCAN_BLOCK))
            .zip(scales.par_chunks_mut(SCAN_BLOCK))
            .for_each(|((data, codes), scales)| {
                arch.dispatch(Quantize {
                    data,
                    codes,
                    scales,
                })
            });
        self.codes = codes.into();
        self.scales = scales.into();
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
            self.data = data.into();
            if self.coded {
                // Copies were asked for when there were no vectors (or after a compaction
                // emptied the arrays): these get theirs now.
                self.coded = false;
                self.build_codes();
            }
            return;
        }
        self.slots.reserve(rows.meta.len());
        self.data.to_mut().reserve(rows.data.len());
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
            let data = self.data.to_mut();
            data.extend_from_slice(v);
            normalise(&mut data[at..]);
            if self.coded {
                let codes = self.codes.to_mut();
                codes.resize(at + self.dim, 0);
                let scale = quantize_codes(&data[at..], &mut codes[at..]);
                self.scales.to_mut().push(scale);
            }
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
        let mut codes = Vec::with_capacity(self.live() * self.dim);
        let mut scales = Vec::with_capacity(self.live());
        for (i, s) in self.slots.iter().enumerate() {
            if s.live {
                slots.push(*s);
                data.extend_from_slice(&self.data[i * self.dim..(i + 1) * self.dim]);
                if self.coded {
                    codes.extend_from_slice(&self.codes[i * self.dim..(i + 1) * self.dim]);
                    scales.push(self.scales[i]);
                }
            }
        }
        self.by_chunk = slots
            .iter()
            .enumerate()
            .map(|(i, s)| (s.chunk_id, i))
            .collect();
        self.slots = slots;
        self.data = data.into();
        self.codes = codes.into();
        self.scales = scales.into();
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
        allowed: Option<&IdSet>,
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
        // The scanned part: blocks of slots scored in parallel (by their 8-bit copies once
        // there are some), each block compiled for the widest SIMD the CPU has.
        let dim = self.dim;
        let arch = arch();
        let slots = &self.slots[scan_from.min(self.slots.len())..];
        let by_score = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        let query_codes = self.coded.then(|| quantize_query(query));
        let scan = match &query_codes {
            Some((codes, scale)) => Scan::Codes {
                query: codes,
                query_scale: *scale,
                codes: &self.codes,
                scales: &self.scales,
            },
            None => Scan::F32 {
                query,
                data: &self.data,
            },
        };
        let mut scores = vec![f32::NEG_INFINITY; slots.len()];
        scores
            .par_chunks_mut(SCAN_BLOCK)
            .zip(slots.par_chunks(SCAN_BLOCK))
            .enumerate()
            .for_each(|(b, (scores, slots))| {
                arch.dispatch(ScanBlock {
                    scan: scan.slots(dim, scan_from + b * SCAN_BLOCK, slots.len()),
                    dim,
                    slots,
                    allowed,
                    scores,
                });
            });
        let mut near: Vec<(usize, f32)> = scores
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_finite())
            .map(|(i, &s)| (scan_from + i, s))
            .collect();
        if self.coded {
            // The best by their copies, scored again by their f32 vectors.
            let wide = rescored(k);
            if near.len() > wide {
                near.select_nth_unstable_by(wide - 1, by_score);
                near.truncate(wide);
            }
            for (slot, score) in &mut near {
                *score = simd_dot(query, self.vector(*slot));
            }
        }
        out.extend(near);
        // The best `k`, best first, without sorting the rest.
        if out.len() > k {
            out.select_nth_unstable_by(k - 1, by_score);
            out.truncate(k);
        }
        out.sort_by(by_score);
        out
    }

    /// What a snapshot of this collection is made from: whose vectors they are (`owner`: the
    /// store and the model) and the set of chunks (their count, highest id and id sum; chunk
    /// ids only grow within a store, so another set with the same three is all but
    /// impossible). [`crate::vector::store::VectorStore::snapshot_key`] computes the same
    /// from the store.
    pub(crate) fn snapshot_key(&self, owner: &str) -> String {
        let live = self.slots.iter().filter(|s| s.live);
        let sum = live.clone().fold(0u64, |a, s| a.wrapping_add(s.chunk_id));
        let max = live.clone().map(|s| s.chunk_id).max().unwrap_or(0);
        snapshot_key(owner, live.count() as u64, max, sum)
    }

    /// Writes the collection for [`Ann::load_snapshot`]: the slots, the unit vectors and their
    /// 8-bit copies (made first if need be). `Err` while dead slots remain (a snapshot is taken
    /// right after a load, when there are none).
    pub(crate) fn save_snapshot(&mut self, w: &mut Writer) -> std::io::Result<()> {
        if self.dead != 0 || self.dim == 0 {
            return Err(std::io::Error::other("only a compact collection is saved"));
        }
        self.build_codes();
        let column = |f: fn(&Slot) -> u64| self.slots.iter().map(f).collect::<Vec<u64>>();
        w.u64(self.dim as u64)?;
        w.slice(&column(|s| s.chunk_id))?;
        w.slice(&column(|s| s.doc_id))?;
        w.slice(&column(|s| {
            u64::from(s.start_line) << 32 | u64::from(s.end_line)
        }))?;
        // The vectors are read where a search needs them, not checksummed at every open.
        w.lookup_from_here();
        w.slice(&self.data)?;
        w.slice(&self.codes)?;
        w.slice(&self.scales)
    }

    /// Reads what [`Ann::save_snapshot`] wrote: the vectors and their copies stay in the
    /// mapped file, and are scanned there.
    pub(crate) fn load_snapshot(r: &mut Reader) -> std::io::Result<Ann> {
        let dim = r.usize()?;
        let chunk_ids: Array<u64> = r.array()?;
        let doc_ids: Array<u64> = r.array()?;
        let lines: Array<u64> = r.array()?;
        let data: Array<f32> = r.array()?;
        let codes: Array<i8> = r.array()?;
        let scales: Array<f32> = r.array()?;
        let n = chunk_ids.len();
        check(
            dim > 0
                && doc_ids.len() == n
                && lines.len() == n
                && scales.len() == n
                && Some(data.len()) == n.checked_mul(dim)
                && codes.len() == data.len(),
            "vector snapshot",
        )?;
        let mut ann = Ann::new(dim);
        ann.by_chunk.reserve(n);
        ann.slots = (0..n)
            .map(|i| {
                ann.by_chunk.insert(chunk_ids[i], i);
                Slot {
                    chunk_id: chunk_ids[i],
                    doc_id: doc_ids[i],
                    start_line: (lines[i] >> 32) as u32,
                    end_line: lines[i] as u32,
                    live: true,
                }
            })
            .collect();
        check(ann.by_chunk.len() == n, "vector snapshot chunk ids")?;
        ann.max_chunk_id = chunk_ids.iter().copied().max().unwrap_or(0);
        ann.data = data;
        ann.codes = codes;
        ann.scales = scales;
        ann.coded = true;
        Ok(ann)
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
    use linkly_models::prepared::Cache;

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
        crate::vector::random_vectors(n, dim, 12345)
    }

    /// A snapshot reads back as the collection it was taken of: the same slots, vectors and
    /// copies, left in the mapped file, and the same answers; the mapped collection then takes
    /// changes like any other (copied out at the first one), and a file cut short is refused.
    #[test]
    fn a_snapshot_maps_back_the_collection_and_takes_changes() {
        let dim = 48;
        let vectors = random_vectors(700, dim);
        let mut ann = Ann::new(0);
        ann.add(
            vectors
                .iter()
                .enumerate()
                .map(|(i, v)| StoredChunk {
                    id: 3 * i as u64 + 1,
                    doc_id: i as u64 / 4,
                    start_line: i as u32,
                    end_line: i as u32 + 7,
                    vector: v.clone(),
                })
                .collect(),
        );
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("vectors.snapshot");
        let key = ann.snapshot_key("m");
        Cache::at(path.clone(), key.clone()).save(|w| ann.save_snapshot(w));
        assert!(ann.coded(), "saving makes the 8-bit copies");

        let mut mapped = Cache::at(path.clone(), key.clone())
            .load(Ann::load_snapshot)
            .expect("the snapshot reads back");
        assert!(mapped.data.is_mapped() && mapped.codes.is_mapped() && mapped.coded());
        assert_eq!(mapped.dim, dim);
        assert_eq!(mapped.snapshot_key("m"), key);
        assert_eq!(mapped.max_chunk_id, ann.max_chunk_id);
        assert_eq!(*mapped.data, *ann.data);
        assert_eq!(*mapped.codes, *ann.codes);
        assert_eq!(*mapped.scales, *ann.scales);
        for (a, b) in mapped.slots.iter().zip(&ann.slots) {
            assert_eq!(
                (a.chunk_id, a.doc_id, a.start_line, a.end_line, a.live),
                (b.chunk_id, b.doc_id, b.start_line, b.end_line, b.live)
            );
        }
        for q in random_vectors(5, dim).iter_mut() {
            normalise(q);
            assert_eq!(mapped.search(q, 10, None), ann.search(q, 10, None));
        }

        // Changes: a chunk added (the arrays are copied out of the file), some removed.
        let extra = random_vectors(701, dim).pop().unwrap();
        mapped.add(vec![chunk(5000, 99, extra.clone())]);
        assert!(!mapped.data.is_mapped());
        let mut q = extra;
        normalise(&mut q);
        let hits = mapped.search(&q, 1, None);
        assert_eq!(mapped.slot(hits[0].0).chunk_id, 5000);
        mapped.remove(&(0..300).map(|i| 3 * i + 1).collect::<Vec<u64>>());
        assert_eq!(mapped.live(), 401);
        assert_ne!(mapped.snapshot_key("m"), key);

        // Another set of chunks, or another model: another key, the file not used.
        assert!(
            Cache::at(path.clone(), mapped.snapshot_key("m"))
                .load(Ann::load_snapshot)
                .is_none()
        );
        assert!(
            Cache::at(path.clone(), ann.snapshot_key("other"))
                .load(Ann::load_snapshot)
                .is_none()
        );
        // Cut short: refused.
        let bytes = fs_err::read(&path).unwrap();
        fs_err::write(&path, &bytes[..bytes.len() - 4]).unwrap();
        assert!(Cache::at(path, key).load(Ann::load_snapshot).is_none());
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
        let allowed: IdSet = [11].into_iter().collect();
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
        let allowed: IdSet = [3, 7, 49].into_iter().collect();
        // f32 first, then by the 8-bit copies, then with chunks added and removed since.
        for round in 0..3 {
            match round {
                1 => {
                    ann.build_codes();
                    assert!(ann.coded());
                }
                2 => {
                    let n = vectors.len() as u64;
                    ann.add(
                        vectors[..40]
                            .iter()
                            .enumerate()
                            .map(|(i, v)| {
                                let v = v.iter().map(|x| -x).collect();
                                chunk(n + 1 + i as u64, (i % 50) as u64, v)
                            })
                            .collect(),
                    );
                    let gone: Vec<u64> = (100..1200).collect();
                    ann.remove(&gone);
                    assert_eq!(ann.dead, 0, "compacted");
                    assert!(ann.coded());
                    assert_eq!(ann.codes.len(), ann.data.len());
                    assert_eq!(ann.scales.len(), ann.slots.len());
                }
                _ => assert!(!ann.coded()),
            }
            for filter in [None, Some(&allowed)] {
                for q in &vectors[..5] {
                    let mut q = q.clone();
                    normalise(&mut q);
                    let got = ann.search(&q, 10, filter);
                    let mut want: Vec<(usize, f32)> = (0..ann.slots.len())
                        .filter(|&i| ann.slots[i].live)
                        .filter(|&i| filter.is_none_or(|a| a.contains(ann.slots[i].doc_id)))
                        .map(|i| (i, simd_dot(&q, ann.vector(i))))
                        .collect();
                    want.sort_by(|a, b| b.1.total_cmp(&a.1));
                    want.truncate(10);
                    assert_eq!(got.len(), want.len());
                    for (g, w) in got.iter().zip(&want) {
                        assert_eq!(g.0, w.0, "round {round}");
                        assert!((g.1 - w.1).abs() < 1e-5, "{} against {}", g.1, w.1);
                    }
                }
            }
        }
    }

    /// At a real model's width, among thousands of near-equal cosines (random vectors are
    /// nearly orthogonal: the hardest case for the 8-bit pass), the scan gives the exact
    /// ranking and the f32 cosines.
    #[test]
    fn the_8_bit_pass_keeps_the_exact_ranking() {
        let dim = 384;
        let vectors = random_vectors(6000, dim);
        let mut ann = Ann::new(dim);
        ann.add(
            vectors
                .iter()
                .enumerate()
                .map(|(i, v)| chunk(i as u64 + 1, i as u64, v.clone()))
                .collect(),
        );
        ann.build_codes();
        for (n, q) in vectors[..40].iter().enumerate() {
            // A query near a stored vector, and one far from all.
            let mut q: Vec<f32> = if n % 2 == 0 {
                q.iter()
                    .zip(&vectors[n + 100])
                    .map(|(a, b)| a + b)
                    .collect()
            } else {
                q.iter().rev().copied().collect()
            };
            normalise(&mut q);
            for k in [1, 10, 300] {
                let got = ann.search(&q, k, None);
                let mut want: Vec<(usize, f32)> = (0..ann.slots.len())
                    .map(|i| (i, simd_dot(&q, ann.vector(i))))
                    .collect();
                want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                want.truncate(k);
                let ids = |h: &[(usize, f32)]| h.iter().map(|h| h.0).collect::<Vec<_>>();
                assert_eq!(ids(&got), ids(&want), "query {n}, k {k}");
                assert!(got.iter().zip(&want).all(|(g, w)| g.1 == w.1));
            }
        }
    }

    /// Copies asked for while empty, and kept through a compaction that empties the arrays:
    /// the vectors loaded next get theirs.
    #[test]
    fn copies_follow_an_emptied_collection() {
        let vectors = random_vectors(200, 8);
        let chunks = |from: u64| -> Vec<StoredChunk> {
            vectors
                .iter()
                .enumerate()
                .map(|(i, v)| chunk(from + i as u64, i as u64, v.clone()))
                .collect()
        };
        let mut ann = Ann::new(0);
        ann.build_codes();
        ann.add(chunks(1));
        let ids: Vec<u64> = (1..=200).collect();
        ann.remove(&ids);
        assert_eq!((ann.live(), ann.dead), (0, 0), "compacted to nothing");
        ann.add(chunks(1000));
        assert!(ann.coded());
        assert_eq!(ann.codes.len(), ann.data.len());
        let mut q = vectors[3].clone();
        normalise(&mut q);
        let hit = ann.search(&q, 1, None);
        assert_eq!(ann.slot(hit[0].0).chunk_id, 1003);
    }

    #[test]
    fn codes_and_query_levels_stay_in_range() {
        let mut codes = [0i8; 4];
        assert_eq!(quantize_codes(&[0.0; 4], &mut codes), 0.0);
        let scale = quantize_codes(&[0.5, -1.0, 0.25, 0.0], &mut codes);
        assert_eq!(codes, [64, -127, 32, 0]);
        assert!((scale - 1.0 / 127.0).abs() < 1e-9);
        // The widest sums stay exact: every code and query level at its largest.
        for dim in [1, 384, 1024, 4096] {
            let (q, _) = quantize_query(&vec![1.0; dim]);
            let top = q[0];
            assert!(
                i64::from(top) * 127 * dim as i64 <= i64::from(i32::MAX),
                "{dim}"
            );
            assert_eq!(
                i64::from(linkly_models::dot_i8_i16(&vec![127; dim], &q)),
                i64::from(top) * 127 * dim as i64
            );
        }
        assert_eq!(quantize_query(&[0.0, 0.0]), (vec![0, 0], 0.0));
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
