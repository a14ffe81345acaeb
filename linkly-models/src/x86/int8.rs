//! int8 matrix products for the encoder's linear layers on AVX-512 VNNI.
//!
//! A linear layer's weights are quantized once, per output column (symmetric, ±127); the
//! activations per row at each call (symmetric, ±127, then shifted by 128 into the unsigned
//! bytes `vpdpbusd` takes; the shift is taken back with each column's sum). One `vpdpbusd`
//! does 64 byte multiply-adds into exact 32-bit sums, four times what one f32 FMA does, so the
//! products that are two thirds of an embedding's time run up to four times faster. The
//! quantization error is what it costs: [`crate::embedder`] checks each model's
//! vectors against the f32 path when it loads and keeps f32 where they differ by more than
//! its threshold.
//!
//! Why `unsafe` (see [`super`]): the AVX-512 loads and stores take raw pointers, and the functions compiled
//! for AVX-512 may only be called where the CPU has it. Both are confined here, behind
//! [`QuantLinear`], which can only be built on a CPU that has the instructions
//! ([`QuantLinear::new`] returns `None` elsewhere) and checks every slice length before a
//! kernel runs. Tests compare the kernels bit for bit with the scalar reference
//! [`QuantLinear::forward_reference`], and the quantized product with the f32 one.

use rayon::prelude::*;

use crate::linear::by_rows_or_panels;
use crate::prepared::{Array, Reader, Writer, check};

/// Columns per panel: four AVX-512 registers of 16 `i32` sums.
const PANEL: usize = 64;
/// Rows per kernel call: 6 rows × 4 registers = 24 accumulators of the 32 registers.
const MR: usize = 6;

/// A linear layer's weights `[k, n]`, quantized and laid out for the kernel.
pub(crate) struct QuantLinear {
    k: usize,
    n: usize,
    /// `k` rounded up to a multiple of 4 (one `vpdpbusd` group).
    kp: usize,
    /// `[panel][k / 4][register (4)][column (16)][4 bytes]`: for each group of four inputs, the
    /// panel's 64 columns as four registers of 16 lanes, each lane the column's four weights.
    packed: Array<i8>,
    /// Per column (padded to whole panels): the weight scale.
    scale: Array<f32>,
    /// Per column: 128 × the sum of its quantized weights (the unsigned shift to take back).
    shift: Array<i32>,
}

crate::linear::linear_shape!(QuantLinear);

/// Whether this CPU has the instructions the kernels need.
pub(crate) fn supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

impl QuantLinear {
    /// Quantizes `w`, `[k, n]` row-major (input-major, as `x · w`); `None` when the CPU lacks
    /// AVX-512 VNNI or the shape is empty.
    pub(crate) fn new(w: &[f32], k: usize, n: usize) -> Option<QuantLinear> {
        if !supported() || k == 0 || n == 0 || w.len() != k * n {
            return None;
        }
        Some(Self::quantize(w, k, n))
    }

    fn quantize(w: &[f32], k: usize, n: usize) -> QuantLinear {
        let kp = k.div_ceil(4) * 4;
        let groups = kp / 4;
        let panels = n.div_ceil(PANEL);
        let mut scale = vec![0.0f32; panels * PANEL];
        let mut inv = vec![0.0f32; n];
        for col in 0..n {
            let max = (0..k).map(|r| w[r * n + col].abs()).fold(0.0f32, f32::max);
            if max > 0.0 {
                scale[col] = max / 127.0;
                inv[col] = 127.0 / max;
            }
        }
        let mut packed = vec![0i8; panels * groups * PANEL * 4];
        let mut shift = vec![0i32; panels * PANEL];
        for col in 0..n {
            let (panel, lane) = (col / PANEL, col % PANEL);
            let (reg, c) = (lane / 16, lane % 16);
            for r in 0..k {
                let q = (w[r * n + col] * inv[col])
                    .round_ties_even()
                    .clamp(-127.0, 127.0) as i8;
                let (g, i) = (r / 4, r % 4);
                packed[((panel * groups + g) * 4 + reg) * 64 + c * 4 + i] = q;
                shift[col] += i32::from(q);
            }
            shift[col] *= 128;
        }
        QuantLinear {
            k,
            n,
            kp,
            packed: packed.into(),
            scale: scale.into(),
            shift: shift.into(),
        }
    }

    /// Writes the quantized weights ([`crate::prepared`]).
    pub(crate) fn save(&self, w: &mut Writer) -> std::io::Result<()> {
        w.u64(self.k as u64)?;
        w.u64(self.n as u64)?;
        w.slice(&self.packed)?;
        w.slice(&self.scale)?;
        w.slice(&self.shift)
    }

    /// Reads what [`QuantLinear::save`] wrote; `None` when the CPU lacks AVX-512 VNNI. The
    /// kernels' pointer arithmetic relies on the arrays' lengths: they are checked here
    /// against the ones [`QuantLinear::new`] makes for the same shape.
    pub(crate) fn load(r: &mut Reader) -> std::io::Result<Option<QuantLinear>> {
        let (k, n) = (r.usize()?, r.usize()?);
        let packed: Array<i8> = r.array()?;
        let scale: Array<f32> = r.array()?;
        let shift: Array<i32> = r.array()?;
        let kp = k.div_ceil(4) * 4;
        let panels = n.div_ceil(PANEL);
        check(
            k > 0
                && n > 0
                && packed.len() == panels * (kp / 4) * PANEL * 4
                && scale.len() == panels * PANEL
                && shift.len() == panels * PANEL,
            "int8 weights",
        )?;
        if !supported() {
            return Ok(None);
        }
        Ok(Some(QuantLinear {
            k,
            n,
            kp,
            packed,
            scale,
            shift,
        }))
    }

    /// `x · w` for `x` of `rows` rows of `k` values: `[rows, n]`, rows spread over rayon.
    pub(crate) fn forward(&self, x: &[f32], rows: usize) -> Vec<f32> {
        assert_eq!(x.len(), rows * self.k, "x must hold rows × k values");
        let (k, kp, n) = (self.k, self.kp, self.n);
        // Quantize the rows: `kp` bytes and one scale each.
        let mut xq = vec![128u8; rows * kp];
        let mut xs = vec![0.0f32; rows];
        let per = (rows / (rayon::current_num_threads() * 4)).max(16);
        xq.par_chunks_mut(kp * per)
            .zip(xs.par_chunks_mut(per))
            .zip(x.par_chunks(k * per))
            .for_each(|((q, s), x)| {
                for ((q, s), x) in q.chunks_exact_mut(kp).zip(s).zip(x.chunks_exact(k)) {
                    // SAFETY: `self` exists, so `supported()` held when it was built; the
                    // lengths are those `quantize_row` asserts.
                    *s = unsafe { avx512::quantize_row(x, q) };
                }
            });
        by_rows_or_panels(
            rows,
            n,
            PANEL,
            MR,
            |out, first_row, panels, width, first_col| {
                let r = first_row..first_row + out.len() / width;
                self.block(
                    &xq[r.start * kp..r.end * kp],
                    &xs[r],
                    panels,
                    out,
                    width,
                    first_col,
                )
            },
        )
    }

    /// Some rows × some panels, panel by panel (a panel's weights stay in cache across its
    /// rows), into `out`, rows of `width` values whose first is column `first_col`.
    fn block(
        &self,
        xq: &[u8],
        xs: &[f32],
        panels: std::ops::Range<usize>,
        out: &mut [f32],
        width: usize,
        first_col: usize,
    ) {
        let (kp, n) = (self.kp, self.n);
        let groups = kp / 4;
        let panel_len = groups * PANEL * 4;
        for p in panels {
            let w = &self.packed[p * panel_len..(p + 1) * panel_len];
            let col = p * PANEL;
            let cols = (n - col).min(PANEL);
            let scale = &self.scale[col..col + PANEL];
            let shift = &self.shift[col..col + PANEL];
            let mut r = 0;
            while r < xs.len() {
                let m = (xs.len() - r).min(MR);
                let a = &xq[r * kp..(r + m) * kp];
                let o = &mut out[r * width..(r + m) * width];
                let s = &xs[r..r + m];
                let at = col - first_col;
                // SAFETY: built only where `supported()` holds; `tile` asserts the lengths
                // its pointer arithmetic relies on.
                unsafe {
                    super::call_with_rows!(
                        m,
                        avx512::tile,
                        (a, kp, s, w, scale, shift, o, width, at, cols)
                    );
                }
                r += m;
            }
        }
    }

    /// The same arithmetic in plain scalar code: what the kernels must reproduce exactly.
    #[cfg(test)]
    fn forward_reference(&self, x: &[f32], rows: usize) -> Vec<f32> {
        let (k, kp, n) = (self.k, self.kp, self.n);
        let groups = kp / 4;
        let mut out = vec![0.0f32; rows * n];
        for r in 0..rows {
            let row = &x[r * k..(r + 1) * k];
            let max = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let (s, inv) = if max > 0.0 {
                (max / 127.0, 127.0 / max)
            } else {
                (0.0, 0.0)
            };
            let q: Vec<i32> = (0..kp)
                .map(|i| {
                    let v = row.get(i).map_or(0.0, |v| (v * inv).round_ties_even());
                    v as i32 + 128
                })
                .collect();
            for col in 0..n {
                let (panel, lane) = (col / PANEL, col % PANEL);
                let (reg, c) = (lane / 16, lane % 16);
                let mut acc = 0i32;
                for (i, &qi) in q.iter().enumerate() {
                    let (g, j) = (i / 4, i % 4);
                    let wq = self.packed[((panel * groups + g) * 4 + reg) * 64 + c * 4 + j];
                    acc += qi * i32::from(wq);
                }
                out[r * n + col] = (acc - self.shift[col]) as f32 * (self.scale[col] * s);
            }
        }
        out
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::super::first_lanes;

    /// Quantizes one row: `q[i] = round(x[i] · 127 / max|x|) + 128`, `q[k..] = 128` (zero);
    /// returns the row's scale, `max|x| / 127` (0 for a row of zeros).
    ///
    /// # Safety
    /// The CPU must have AVX-512F and AVX-512BW.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn quantize_row(x: &[f32], q: &mut [u8]) -> f32 {
        let k = x.len();
        assert!(q.len() >= k, "the quantized row is shorter than the row");
        let mut max = _mm512_setzero_ps();
        let mut i = 0;
        while i < k {
            let mask = first_lanes(k - i);
            // SAFETY: the mask covers only `x[i..k]`.
            let v = unsafe { _mm512_maskz_loadu_ps(mask, x.as_ptr().add(i)) };
            max = _mm512_max_ps(max, _mm512_abs_ps(v));
            i += 16;
        }
        let max = _mm512_reduce_max_ps(max);
        q[k..].fill(128);
        if max <= 0.0 || !max.is_finite() {
            q[..k].fill(128);
            return 0.0;
        }
        let inv = _mm512_set1_ps(127.0 / max);
        let offset = _mm512_set1_epi32(128);
        let mut i = 0;
        while i < k {
            let mask = first_lanes(k - i);
            // SAFETY: the mask covers only `x[i..k]` and `q[i..k]` (`q.len() >= k`).
            unsafe {
                let v = _mm512_maskz_loadu_ps(mask, x.as_ptr().add(i));
                // Rounds to nearest, ties to even (the default MXCSR mode); |v · inv| ≤ 127.
                let r = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(v, inv)), offset);
                _mm512_mask_cvtepi32_storeu_epi8(q.as_mut_ptr().add(i).cast(), mask, r);
            }
            i += 16;
        }
        max / 127.0
    }

    /// `M` rows × one panel of up to 64 columns: `out[r][col..col + cols]`.
    ///
    /// `a`: `M` quantized rows of `kp` bytes; `xs`: their scales; `w`: the panel's packed
    /// weights (`kp / 4` groups of 256 bytes); `scale`, `shift`: the panel's 64 columns;
    /// `out`: `M` rows of `n` values.
    ///
    /// # Safety
    /// The CPU must have AVX-512F, AVX-512BW and AVX-512 VNNI.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn tile<const M: usize>(
        a: &[u8],
        kp: usize,
        xs: &[f32],
        w: &[i8],
        scale: &[f32],
        shift: &[i32],
        out: &mut [f32],
        n: usize,
        col: usize,
        cols: usize,
    ) {
        let groups = kp / 4;
        assert!(kp.is_multiple_of(4) && a.len() >= M * kp && xs.len() >= M);
        assert!(w.len() >= groups * 256 && scale.len() >= 64 && shift.len() >= 64);
        assert!(cols <= 64 && col + cols <= n && out.len() >= (M - 1) * n + col + cols);
        let mut acc = [[_mm512_setzero_si512(); 4]; M];
        let (ap, wp) = (a.as_ptr(), w.as_ptr());
        for g in 0..groups {
            // SAFETY: `g < groups`, so the 256 bytes at `g · 256` are inside `w`, and the four
            // bytes at `r · kp + 4g` inside `a` (`a.len() >= M · kp`).
            unsafe {
                let wg = wp.add(g * 256);
                let w0 = _mm512_loadu_si512(wg.cast());
                let w1 = _mm512_loadu_si512(wg.add(64).cast());
                let w2 = _mm512_loadu_si512(wg.add(128).cast());
                let w3 = _mm512_loadu_si512(wg.add(192).cast());
                for (r, acc) in acc.iter_mut().enumerate() {
                    let four = ap.add(r * kp + 4 * g).cast::<i32>().read_unaligned();
                    let b = _mm512_set1_epi32(four);
                    acc[0] = _mm512_dpbusd_epi32(acc[0], b, w0);
                    acc[1] = _mm512_dpbusd_epi32(acc[1], b, w1);
                    acc[2] = _mm512_dpbusd_epi32(acc[2], b, w2);
                    acc[3] = _mm512_dpbusd_epi32(acc[3], b, w3);
                }
            }
        }
        for reg in 0..4 {
            let first = reg * 16;
            if first >= cols {
                break;
            }
            let live = (cols - first).min(16);
            let mask = first_lanes(live);
            // SAFETY: `scale` and `shift` hold 64 values; the masked store writes only
            // `out[r · n + col + first ..][..live]`, inside `out` by the asserts above.
            unsafe {
                let s = _mm512_loadu_ps(scale.as_ptr().add(first));
                let c = _mm512_loadu_si512(shift.as_ptr().add(first).cast());
                for (r, acc) in acc.iter().enumerate() {
                    let v = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[reg], c));
                    let y = _mm512_mul_ps(v, _mm512_mul_ps(s, _mm512_set1_ps(xs[r])));
                    _mm512_mask_storeu_ps(out.as_mut_ptr().add(r * n + col + first), mask, y);
                }
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod avx512 {
    //! Never called: [`super::supported`] is false off x86-64, so no `QuantLinear` exists.

    pub(super) unsafe fn quantize_row(_: &[f32], _: &mut [u8]) -> f32 {
        unreachable!("int8 kernels need x86-64")
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn tile<const M: usize>(
        _: &[u8],
        _: usize,
        _: &[f32],
        _: &[i8],
        _: &[f32],
        _: &[i32],
        _: &mut [f32],
        _: usize,
        _: usize,
        _: usize,
    ) {
        unreachable!("int8 kernels need x86-64")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_matrices::Agreement;

    // The same integer sums as the reference, scaled in another order: equal to float
    // rounding; each row within the error of 8-bit quantization of the exact product (about
    // 3 % of its norm with these outliers). Every tail of the 6-row kernel, one group of four.
    crate::test_matrices::kernel_tests!(
        QuantLinear,
        reference: |q, x, rows, _| q.forward_reference(x, rows),
        agreement: Agreement::Value,
        exact: |_| 0.06,
        more_shapes: [[6, 4, 16]],
    );
}
