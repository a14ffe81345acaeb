//! 16-bit integer matrix products for the encoder's linear layers, in safe Rust (AVX2 through
//! `pulp`).
//!
//! A layer's weights are quantized once, per output column; the activations per row at each
//! call. Both take about 11 bits (the bounds are chosen per layer so that no 32-bit sum can
//! overflow: `k · max|a| · max|w| < 2^31`), and `vpmaddwd` multiplies 16 pairs and adds them
//! pairwise into 8 exact 32-bit sums. On a CPU with two integer multiply pipes and no
//! AVX-512 (AMD Zen 2 and 3, Intel before AVX-512), that is up to twice the multiply-adds per
//! cycle of the f32 FMAs `gemm` runs there (1.3–1.5× measured on Zen 3). The vectors stay
//! within a cosine of 0.9999 of the f32 ones on the real model (int8's 7 bits gave 0.996),
//! which is why this is the default there (see [`supported`] and `embedder/mod.rs`).
//!
//! Layout: the columns are cut into panels of [`NR`] (three AVX2 registers of eight 32-bit
//! sums); a panel's weights are stored pair of inputs by pair of inputs, each register's eight
//! columns with their two weights side by side, as `vpmaddwd` takes them. An activation row is
//! stored as 32-bit words, each holding two consecutive 16-bit values (one broadcast feeds a
//! register's eight columns).

use pulp::x86::V3;

use crate::prepared::{Array, Reader, Writer, check};
use pulp::{f32x8, i16x16, i32x8};
use rayon::prelude::*;

/// Columns per panel: three registers of eight sums.
const NR: usize = 24;
/// Rows per kernel call: 3 rows × 3 registers = 9 accumulators, with the three weight
/// registers, the broadcast row value and a product, 14 of the 16 registers (four rows needed
/// 17, and the compiler spilled accumulators to the stack).
const MR: usize = 3;

/// A linear layer's weights `[k, n]`, quantized and laid out for the kernel.
pub(crate) struct Int16Linear {
    k: usize,
    n: usize,
    /// Pairs of inputs (`k` rounded up to even, halved).
    pairs: usize,
    /// `[panel][pair][register (3)]`: each register the pair's weights of eight columns.
    packed: Array<i16x16>,
    /// Per column (padded to whole panels): the weight scale.
    scale: Array<f32>,
    /// The largest quantized activation.
    a_max: f32,
    simd: V3,
}

crate::linear::linear_shape!(Int16Linear);

/// Whether this CPU runs the kernels (AVX2 and FMA).
pub(crate) fn supported() -> bool {
    V3::try_new().is_some()
}

/// The largest magnitudes of quantized weights and activations for `k` inputs: the product of
/// the two, times `k` (rounded up to even), stays below 2^31, so every sum is exact.
fn bounds(k: usize) -> (i32, i32) {
    let pairs_k = (k.div_ceil(2) * 2).max(2) as f64;
    let both = (f64::from(i32::MAX) / pairs_k).sqrt().floor().min(32767.0) as i32;
    (both, both)
}

impl Int16Linear {
    /// Quantizes `w`, `[k, n]` row-major (input-major, as `x · w`); `None` when the CPU lacks
    /// AVX2 or the shape is empty.
    pub(crate) fn new(w: &[f32], k: usize, n: usize) -> Option<Int16Linear> {
        let simd = V3::try_new()?;
        if k == 0 || n == 0 || w.len() != k * n {
            return None;
        }
        let (w_max, a_max) = bounds(k);
        let pairs = k.div_ceil(2);
        let panels = n.div_ceil(NR);
        let mut scale = vec![0.0f32; panels * NR];
        let mut inv = vec![0.0f32; n];
        simd.vectorize(ColumnScales {
            w,
            n,
            w_max: w_max as f32,
            scale: &mut scale,
            inv: &mut inv,
        });
        // Panel by panel on all cores (a model's 24 matrices in a few milliseconds: the CLI
        // loads the model for each search it runs without a server).
        let mut packed = vec![bytemuck::cast::<[i16; 16], i16x16>([0; 16]); panels * pairs * 3];
        packed
            .par_chunks_mut(pairs * 3)
            .enumerate()
            .for_each(|(panel, out)| {
                simd.vectorize(PackPanel {
                    w,
                    k,
                    n,
                    inv: &inv,
                    w_max: w_max as f32,
                    first_col: panel * NR,
                    out,
                })
            });
        Some(Int16Linear {
            k,
            n,
            pairs,
            packed: packed.into(),
            scale: scale.into(),
            a_max: a_max as f32,
            simd,
        })
    }

    /// Writes the quantized weights ([`crate::prepared`]).
    pub(crate) fn save(&self, w: &mut Writer) -> std::io::Result<()> {
        w.u64(self.k as u64)?;
        w.u64(self.n as u64)?;
        w.slice(&self.scale)?;
        w.slice(&self.packed)
    }

    /// Reads what [`Int16Linear::save`] wrote; `None` when the CPU lacks AVX2.
    pub(crate) fn load(r: &mut Reader) -> std::io::Result<Option<Int16Linear>> {
        let (k, n) = (r.usize()?, r.usize()?);
        let scale: Array<f32> = r.array()?;
        let packed: Array<i16x16> = r.array()?;
        let (pairs, panels) = (k.div_ceil(2), n.div_ceil(NR));
        check(
            k > 0 && n > 0 && scale.len() == panels * NR && packed.len() == panels * pairs * 3,
            "int16 weights",
        )?;
        let Some(simd) = V3::try_new() else {
            return Ok(None);
        };
        Ok(Some(Int16Linear {
            k,
            n,
            pairs,
            packed,
            scale,
            a_max: bounds(k).1 as f32,
            simd,
        }))
    }

    /// `x · w` for `x` of `rows` rows of `k` values: `[rows, n]`, spread over rayon (by rows
    /// for a batch, by panels for a query's few rows).
    pub(crate) fn forward(&self, x: &[f32], rows: usize) -> Vec<f32> {
        assert_eq!(x.len(), rows * self.k, "x must hold rows × k values");
        let (k, pairs, n) = (self.k, self.pairs, self.n);
        let mut xq = vec![0i32; rows * pairs];
        let mut xs = vec![0.0f32; rows];
        let threads = rayon::current_num_threads();
        let per = (rows / (threads * 4)).max(8);
        xq.par_chunks_mut(pairs * per)
            .zip(xs.par_chunks_mut(per))
            .zip(x.par_chunks(k * per))
            .for_each(|((q, s), x)| {
                self.simd.vectorize(Quantize {
                    x,
                    k,
                    q,
                    s,
                    a_max: self.a_max,
                })
            });
        let panels = n.div_ceil(NR);
        let row_tiles = rows.div_ceil(MR);
        // By rows only when every task gets a whole block of rows: a task streams all the
        // weights past its rows, so a query's few dozen rows split by rows would read the
        // weights once per three rows instead of once.
        if row_tiles >= threads * 2 && rows >= ROW_BLOCK * threads {
            let mut out = vec![0.0f32; rows * n];
            let per = (row_tiles / (threads * 4)).max(1) * MR;
            out.par_chunks_mut(n * per)
                .zip(xq.par_chunks(pairs * per))
                .zip(xs.par_chunks(per))
                .for_each(|((out, xq), xs)| {
                    self.simd.vectorize(Block {
                        w: self,
                        xq,
                        xs,
                        panels: 0..panels,
                        out,
                        width: n,
                        first_col: 0,
                    })
                });
            return out;
        }
        // Few rows: each task takes some panels of every row, into a buffer of its own.
        crate::linear::by_panels(rows, n, NR, |out, _, panels, width, first_col| {
            self.simd.vectorize(Block {
                w: self,
                xq: &xq,
                xs: &xs,
                panels,
                out,
                width,
                first_col,
            })
        })
    }

    /// The same arithmetic in plain scalar code: what the kernels must reproduce exactly.
    #[cfg(test)]
    fn forward_reference(&self, x: &[f32], rows: usize) -> Vec<f32> {
        let (k, pairs, n) = (self.k, self.pairs, self.n);
        let mut out = vec![0.0f32; rows * n];
        for r in 0..rows {
            let row = &x[r * k..(r + 1) * k];
            let max = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let (s, inv) = if max > 0.0 {
                (max / self.a_max, self.a_max / max)
            } else {
                (0.0, 0.0)
            };
            let q: Vec<i64> = (0..pairs * 2)
                .map(|i| row.get(i).map_or(0.0, |v| (v * inv).round_ties_even()) as i64)
                .collect();
            for col in 0..n {
                let (panel, lane) = (col / NR, col % NR);
                let (reg, c) = (lane / 8, lane % 8);
                let mut acc = 0i64;
                for (i, &qi) in q.iter().enumerate() {
                    let v: [i16; 16] =
                        bytemuck::cast(self.packed[(panel * pairs + i / 2) * 3 + reg]);
                    acc += qi * i64::from(v[c * 2 + i % 2]);
                }
                assert!(acc.unsigned_abs() < 1 << 31, "a sum overflows 32 bits");
                out[r * n + col] = acc as f32 * (self.scale[col] * s);
            }
        }
        out
    }
}

/// Each column's weight scale (`max|w| / w_max`) and its inverse (0 for a column of zeros).
struct ColumnScales<'a> {
    w: &'a [f32],
    n: usize,
    w_max: f32,
    scale: &'a mut [f32],
    inv: &'a mut [f32],
}

impl pulp::NullaryFnOnce for ColumnScales<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        let mut max = vec![0.0f32; self.n];
        for row in self.w.chunks_exact(self.n) {
            for (m, &v) in max.iter_mut().zip(row) {
                let a = v.abs();
                *m = if a > *m { a } else { *m };
            }
        }
        for ((m, s), i) in max
            .iter()
            .zip(self.scale.iter_mut())
            .zip(self.inv.iter_mut())
        {
            if *m > 0.0 {
                *s = m / self.w_max;
                *i = self.w_max / m;
            }
        }
    }
}

/// One panel's quantized weights: for each pair of inputs, three registers of eight columns,
/// each column's two weights side by side (columns past `n` and the input past an odd `k` are
/// zero).
struct PackPanel<'a> {
    w: &'a [f32],
    k: usize,
    n: usize,
    inv: &'a [f32],
    w_max: f32,
    first_col: usize,
    out: &'a mut [i16x16],
}

impl pulp::NullaryFnOnce for PackPanel<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        let (k, n, w_max) = (self.k, self.n, self.w_max);
        let level = |v: f32, inv: f32| (v * inv).round_ties_even().clamp(-w_max, w_max) as i16;
        let cols = (n - self.first_col).min(NR);
        for (pair, regs) in self.out.chunks_exact_mut(3).enumerate() {
            let r0 = &self.w[2 * pair * n..][..n];
            let r1 = (2 * pair + 1 < k).then(|| &self.w[(2 * pair + 1) * n..][..n]);
            for (reg, dst) in regs.iter_mut().enumerate() {
                let mut lanes = [0i16; 16];
                for c in 0..8 {
                    let lane = reg * 8 + c;
                    if lane >= cols {
                        break;
                    }
                    let col = self.first_col + lane;
                    let inv = self.inv[col];
                    lanes[2 * c] = level(r0[col], inv);
                    lanes[2 * c + 1] = r1.map_or(0, |r1| level(r1[col], inv));
                }
                *dst = bytemuck::cast(lanes);
            }
        }
    }
}

/// Quantizes rows: `q` gets each row's values as pairs of 16-bit integers in 32-bit words,
/// `s` its scale (`max|x| / a_max`, 0 for a row of zeros).
struct Quantize<'a> {
    x: &'a [f32],
    k: usize,
    q: &'a mut [i32],
    s: &'a mut [f32],
    a_max: f32,
}

impl pulp::NullaryFnOnce for Quantize<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        let pairs = self.k.div_ceil(2);
        for ((x, q), s) in self
            .x
            .chunks_exact(self.k)
            .zip(self.q.chunks_exact_mut(pairs))
            .zip(self.s.iter_mut())
        {
            let max = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            if max <= 0.0 || !max.is_finite() {
                q.fill(0);
                *s = 0.0;
                continue;
            }
            let inv = self.a_max / max;
            let a_max = self.a_max;
            let level = |v: f32| (v * inv).round_ties_even().clamp(-a_max, a_max) as i16 as u16;
            for (q, two) in q.iter_mut().zip(x.chunks(2)) {
                let lo = level(two[0]);
                let hi = two.get(1).map_or(0, |&v| level(v));
                *q = (u32::from(lo) | u32::from(hi) << 16) as i32;
            }
            *s = max / self.a_max;
        }
    }
}

/// Some panels of some rows: `out` holds `xs.len()` rows of `width` values, the first of which
/// is column `first_col`.
struct Block<'a> {
    w: &'a Int16Linear,
    xq: &'a [i32],
    xs: &'a [f32],
    panels: std::ops::Range<usize>,
    out: &'a mut [f32],
    width: usize,
    first_col: usize,
}

/// Rows a block takes through every panel before the next rows: their quantized values (at
/// most 48 × 3 KiB) stay in the core's cache while the panels' weights stream past them.
const ROW_BLOCK: usize = 16 * MR;

impl pulp::NullaryFnOnce for Block<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        let w = self.w;
        let pairs = w.pairs;
        let rows = self.xs.len();
        for first in (0..rows).step_by(ROW_BLOCK) {
            let last = (first + ROW_BLOCK).min(rows);
            for panel in self.panels.clone() {
                let weights = &w.packed[panel * pairs * 3..(panel + 1) * pairs * 3];
                let col = panel * NR;
                let cols = (w.n - col).min(NR);
                let scale = &w.scale[col..col + NR];
                let mut r = first;
                while r < last {
                    let m = (last - r).min(MR);
                    let tile = Tile {
                        simd: w.simd,
                        a: &self.xq[r * pairs..(r + m) * pairs],
                        pairs,
                        weights,
                        xs: &self.xs[r..r + m],
                        scale,
                        cols,
                    };
                    let out = &mut self.out[r * self.width..(r + m) * self.width];
                    let at = col - self.first_col;
                    match m {
                        3 => tile.run::<3>(out, self.width, at),
                        2 => tile.run::<2>(out, self.width, at),
                        _ => tile.run::<1>(out, self.width, at),
                    }
                    r += m;
                }
            }
        }
    }
}

/// One kernel call: `M` rows × one panel.
struct Tile<'a> {
    simd: V3,
    a: &'a [i32],
    pairs: usize,
    weights: &'a [i16x16],
    xs: &'a [f32],
    scale: &'a [f32],
    cols: usize,
}

impl Tile<'_> {
    /// Writes `out[r · width + at ..][..cols]` for the `M` rows.
    #[inline(always)]
    fn run<const M: usize>(&self, out: &mut [f32], width: usize, at: usize) {
        let sums = if M == MR {
            self.sums_full()
        } else {
            self.sums::<M>()
        };
        let simd = self.simd;
        for (r, acc) in sums.iter().take(M).enumerate() {
            let s = simd.splat_f32x8(self.xs[r]);
            let mut values = [0.0f32; NR];
            for (reg, &sum) in acc.iter().enumerate() {
                let scale: f32x8 = bytemuck::cast::<[f32; 8], f32x8>(
                    self.scale[reg * 8..reg * 8 + 8]
                        .try_into()
                        .unwrap_or([0.0; 8]),
                );
                let v = simd.mul_f32x8(simd.convert_i32x8_to_f32x8(sum), simd.mul_f32x8(scale, s));
                values[reg * 8..reg * 8 + 8].copy_from_slice(&bytemuck::cast::<f32x8, [f32; 8]>(v));
            }
            out[r * width + at..r * width + at + self.cols].copy_from_slice(&values[..self.cols]);
        }
    }

    /// The sums of [`MR`] rows, each accumulator a variable of its own (an array of them,
    /// walked by iterators, made the compiler spill them to the stack).
    #[inline(always)]
    fn sums_full(&self) -> [[i32x8; 3]; MR] {
        let simd = self.simd;
        let pairs = self.pairs;
        let (r0, rest) = self.a.split_at(pairs);
        let (r1, r2) = rest.split_at(pairs);
        let z = simd.splat_i32x8(0);
        let (mut a00, mut a01, mut a02) = (z, z, z);
        let (mut a10, mut a11, mut a12) = (z, z, z);
        let (mut a20, mut a21, mut a22) = (z, z, z);
        let madd = |acc: i32x8, a: i16x16, w: i16x16| {
            simd.wrapping_add_i32x8(acc, simd.multiply_wrapping_add_adjacent_i16x16(a, w))
        };
        let splat = |v: i32| -> i16x16 { bytemuck::cast(simd.splat_i32x8(v)) };
        let rows = r0.iter().zip(r1).zip(&r2[..pairs]);
        for (w, ((&x0, &x1), &x2)) in self.weights.chunks_exact(3).zip(rows) {
            let (w0, w1, w2) = (w[0], w[1], w[2]);
            let a = splat(x0);
            a00 = madd(a00, a, w0);
            a01 = madd(a01, a, w1);
            a02 = madd(a02, a, w2);
            let a = splat(x1);
            a10 = madd(a10, a, w0);
            a11 = madd(a11, a, w1);
            a12 = madd(a12, a, w2);
            let a = splat(x2);
            a20 = madd(a20, a, w0);
            a21 = madd(a21, a, w1);
            a22 = madd(a22, a, w2);
        }
        [[a00, a01, a02], [a10, a11, a12], [a20, a21, a22]]
    }

    /// The sums of fewer rows (a batch's last ones).
    #[inline(always)]
    fn sums<const M: usize>(&self) -> [[i32x8; 3]; MR] {
        let simd = self.simd;
        let pairs = self.pairs;
        let zero = simd.splat_i32x8(0);
        let mut acc = [[zero; 3]; MR];
        let weights = &self.weights[..pairs * 3];
        for (r, acc) in acc.iter_mut().enumerate().take(M) {
            let row = &self.a[r * pairs..(r + 1) * pairs];
            for (p, w) in weights.chunks_exact(3).enumerate() {
                let a: i16x16 = bytemuck::cast(simd.splat_i32x8(row[p]));
                for (acc, &w) in acc.iter_mut().zip(w) {
                    *acc = simd
                        .wrapping_add_i32x8(*acc, simd.multiply_wrapping_add_adjacent_i16x16(a, w));
                }
            }
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_matrices::Agreement;

    // Against the exact product: each row within six quantisation steps of its norm (0.25 %
    // at k = 384, 0.7 % at k = 3,072, where the bounds are 836; int8: 3 %). Every row tail
    // of the 3-row kernel, the row and the panel split, the widest input of the models.
    crate::test_matrices::kernel_tests!(
        Int16Linear,
        reference: |q, x, rows, _| q.forward_reference(x, rows),
        agreement: Agreement::Value,
        exact: |k| {
            let (w, a) = bounds(k);
            6.0 / w.min(a) as f32
        },
        more_shapes: [[4, 2, 24], [2, 3072, 30], [70, 9, 50]],
    );

    #[test]
    fn no_sum_can_overflow() {
        for k in [1, 2, 3, 384, 1536, 3072, 4096, 1 << 20] {
            let (w, a) = bounds(k);
            let worst = (k.div_ceil(2) * 2) as i128 * i128::from(w) * i128::from(a);
            assert!(worst <= i128::from(i32::MAX), "k {k}");
            assert!(w >= 1 && a >= 1);
        }
        // Every weight and activation at its largest: the sums are still exact.
        if let Some(q) = Int16Linear::new(&vec![1.0; 1536 * 24], 1536, 24) {
            let out = q.forward(&vec![1.0; 1536], 1);
            assert!(
                out.iter().all(|&v| (v - 1536.0).abs() < 1e-2),
                "{:?}",
                &out[..3]
            );
        }
    }
}
