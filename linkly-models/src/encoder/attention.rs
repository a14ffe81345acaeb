//! Self-attention over packed sequences: one sequence per rayon task, two products per head
//! (f32 through `gemm`, or bf16 on AMX tiles), the softmax in place between them.

use candle_core::{CpuStorage, CustomOp1, Layout, Shape};
use pulp::{Simd, WithSimd};
use rayon::prelude::*;

use super::{CResult, contiguous_f32, err};
use crate::amx::AmxLinear;
use crate::kernels;
use crate::matmul;

/// Self-attention from the fused query/key/value projection `[T, 3·hidden]` of packed
/// sequences (bias not yet added) to the heads' contexts side by side, `[T, hidden]`: one
/// sequence per rayon task.
pub(super) struct Attention<'a> {
    pub(super) bias: &'a [f32],
    pub(super) seqs: Sequences<'a>,
    pub(super) heads: usize,
    pub(super) d: usize,
    pub(super) arch: pulp::Arch,
    /// Both products in bf16 on AMX tiles, head by head (the linear layers run there too).
    pub(super) bf16: bool,
}

impl CustomOp1 for Attention<'_> {
    fn name(&self) -> &'static str {
        "linkly-attention"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> CResult<(CpuStorage, Shape)> {
        let qkv = contiguous_f32(s, l, self.name())?;
        let h = self.heads * self.d;
        let out = self.run(qkv)?;
        let rows = out.len() / h;
        Ok((CpuStorage::F32(out), Shape::from((rows, h))))
    }
}

impl Attention<'_> {
    /// The heads' contexts `[T, hidden]` of the projection `qkv` (`[T, 3·hidden]`).
    pub(super) fn run(&self, qkv: &[f32]) -> CResult<Vec<f32>> {
        let h = self.heads * self.d;
        let rows = qkv.len() / (3 * h);
        if rows * 3 * h != qkv.len() || self.seqs.lens.iter().sum::<usize>() != rows {
            return Err(err("linkly-attention: unexpected input shape"));
        }
        let mut out = vec![0.0f32; rows * h];
        // Each sequence's rows, as disjoint blocks of `out`.
        let mut blocks = Vec::with_capacity(self.seqs.lens.len());
        let mut rest = out.as_mut_slice();
        for &len in self.seqs.lens {
            let (block, tail) = rest.split_at_mut(len * h);
            blocks.push(block);
            rest = tail;
        }
        blocks
            .into_par_iter()
            .enumerate()
            .try_for_each(|(seq, dst)| self.sequence(qkv, seq, dst))?;
        Ok(out)
    }

    /// One sequence, all heads: `softmax(Q·Kᵀ/√d)·V` as two `gemm` products per head (called
    /// from a rayon task), the softmax in place between them, the heads written side by side
    /// into the sequence's rows `dst`.
    fn sequence(&self, qkv: &[f32], seq: usize, dst: &mut [f32]) -> CResult<()> {
        let (heads, d) = (self.heads, self.d);
        let h = heads * d;
        let (first, len) = (self.seqs.offsets[seq], self.seqs.lens[seq]);
        if len == 0 {
            return Ok(());
        }
        let scale = 1.0 / (d as f32).sqrt();
        if self.bf16 {
            return self.sequence_bf16(&qkv[first * 3 * h..(first + len) * 3 * h], scale, dst);
        }
        // `[heads, len, d]`, bias added (and the queries scaled).
        let gather = |part: usize, factor: f32| {
            let mut m = Vec::with_capacity(heads * len * d);
            for head in 0..heads {
                let bias = &self.bias[part * h + head * d..][..d];
                for t in 0..len {
                    let from = (first + t) * 3 * h + part * h + head * d;
                    m.extend(
                        qkv[from..from + d]
                            .iter()
                            .zip(bias)
                            .map(|(x, b)| (x + b) * factor),
                    );
                }
            }
            m
        };
        let (q, k, v) = (gather(0, scale), gather(1, 1.0), gather(2, 1.0));
        let shape = |_| err("linkly-attention: unexpected product shape");
        let mut scores = vec![0.0f32; heads * len * len];
        for (head, s) in scores.chunks_exact_mut(len * len).enumerate() {
            let rows = head * len * d..(head + 1) * len * d;
            let q = matmul::View::rows(&q[rows.clone()], len, d);
            let k = matmul::View::rows(&k[rows], len, d).t();
            matmul::product(q, k, s).map_err(shape)?;
        }
        self.arch.dispatch(SoftmaxRows {
            scores: &mut scores,
            width: len,
            valid: len,
        });
        let mut context = vec![0.0f32; len * d];
        for (head, s) in scores.chunks_exact(len * len).enumerate() {
            let v = matmul::View::rows(&v[head * len * d..(head + 1) * len * d], len, d);
            matmul::product(matmul::View::rows(s, len, len), v, &mut context).map_err(shape)?;
            for (t, row) in context.chunks_exact(d).enumerate() {
                dst[t * h + head * d..][..d].copy_from_slice(row);
            }
        }
        Ok(())
    }

    /// [`Attention::sequence`] with both products on AMX tiles, one head at a time: the keys
    /// (transposed) and the values are packed as the weights of an [`AmxLinear`], the scores
    /// and the weights of the softmax rounded to bf16 as its inputs; sums in f32.
    /// `rows` are the sequence's rows of `qkv` (`len ≥ 1` of them), `scale` the queries'.
    fn sequence_bf16(&self, rows: &[f32], scale: f32, dst: &mut [f32]) -> CResult<()> {
        let (heads, d) = (self.heads, self.d);
        let h = heads * d;
        let len = rows.len() / (3 * h);
        let unavailable = || err("AMX tiles are not available");
        // The keys' width, rounded up to whole blocks: the scores' rows are that wide (zeros
        // past `len`), and so many value rows (zeros past `len`) take them.
        let wide = len.div_ceil(32) * 32;
        let mut q = vec![0.0f32; len * d];
        let mut k = vec![0.0f32; len * d];
        let mut v = vec![0.0f32; wide * d];
        for head in 0..heads {
            let at = head * d;
            let bias = |part: usize| &self.bias[part * h + at..part * h + at + d];
            let (qb, kb, vb) = (bias(0), bias(1), bias(2));
            for (t, row) in rows.chunks_exact(3 * h).enumerate() {
                let part = |p: usize| &row[p * h + at..p * h + at + d];
                let out = t * d..(t + 1) * d;
                for ((o, x), b) in q[out.clone()].iter_mut().zip(part(0)).zip(qb) {
                    *o = (x + b) * scale;
                }
                for ((o, x), b) in k[out.clone()].iter_mut().zip(part(1)).zip(kb) {
                    *o = x + b;
                }
                for ((o, x), b) in v[out].iter_mut().zip(part(2)).zip(vb) {
                    *o = x + b;
                }
            }
            let keys = AmxLinear::new_transposed(&k, d, len).ok_or_else(unavailable)?;
            debug_assert_eq!(keys.padded_outputs(), wide);
            let mut scores = keys.forward_padded(&q, len);
            self.arch.dispatch(SoftmaxRows {
                scores: &mut scores,
                width: wide,
                valid: len,
            });
            let values = AmxLinear::new(&v, wide, d).ok_or_else(unavailable)?;
            let context = values.forward(&scores, len);
            for (t, row) in context.chunks_exact(d).enumerate() {
                dst[t * h + at..][..d].copy_from_slice(row);
            }
        }
        Ok(())
    }
}

/// Where each sequence's rows are in a packed batch.
#[derive(Clone, Copy)]
pub(super) struct Sequences<'a> {
    pub(super) offsets: &'a [usize],
    pub(super) lens: &'a [usize],
}

/// Softmax over each row of `width` scores, of which the first `valid` count.
struct SoftmaxRows<'a> {
    scores: &'a mut [f32],
    width: usize,
    /// The scores of each row that count (zeros after them).
    valid: usize,
}

impl WithSimd for SoftmaxRows<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        for row in self.scores.chunks_exact_mut(self.width) {
            kernels::masked_softmax(row, self.valid);
        }
    }
}
