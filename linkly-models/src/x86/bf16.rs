//! bf16 matrix products for the encoder's linear layers on AVX-512 BF16 (`vdpbf16ps`): the
//! bf16 path of CPUs that have the instruction but no AMX tiles (AMD Zen 4 and later, Intel
//! Cooper Lake).
//!
//! A layer's weights are rounded to bf16 once, at load, and packed in panels of 64 columns,
//! each pair of inputs as four registers of 16 lanes holding the column's two weights; the
//! activations are rounded to bf16 at each call. One `vdpbf16ps` does 32 multiply-adds (two per
//! f32 lane), twice what one f32 FMA does, and the weights take half the memory. Sums are kept
//! in f32, so the only error is the rounding of each input to 8 significant bits, as on AMX
//! ([`super::amx`]): the vectors stay within a cosine of 0.9999 of the f32 ones on the real
//! model (a test in `embedder/mod.rs` checks it).
//!
//! Why `unsafe` (see [`super`]): the AVX-512 loads and stores take raw pointers, and functions
//! compiled for AVX-512 BF16 may only be called where the CPU has it. Both are confined here,
//! behind [`Bf16Linear`], which can only be built on a CPU that has the instructions
//! ([`Bf16Linear::new`] returns `None` elsewhere) and checks every slice length before a kernel
//! runs. Tests hold the kernel to a scalar reference of the same arithmetic and to the exact
//! f32 product.

use rayon::prelude::*;

use crate::linear::{by_rows_or_panels, pack_panels};
use crate::prepared::{Array, Reader, Writer, check};

/// Columns per panel: four AVX-512 registers of 16 f32 sums.
const PANEL: usize = 64;
/// Rows per kernel call: 6 rows × 4 registers = 24 accumulators of the 32 registers.
const MR: usize = 6;

/// A linear layer's weights `[k, n]`, rounded to bf16 and laid out for the kernel.
pub(crate) struct Bf16Linear {
    k: usize,
    n: usize,
    /// `k` rounded up to even (one `vdpbf16ps` pair).
    kp: usize,
    /// `[panel][k / 2][register (4)][column (16)][2]`: for each pair of inputs, the panel's 64
    /// columns as four registers of 16 lanes, each lane the column's two weights.
    packed: Array<u16>,
}

crate::linear::linear_shape!(Bf16Linear);

/// Whether this CPU has the instructions the kernel needs.
pub(crate) fn supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `x` rounded to the nearest bf16, ties to even (a NaN stays a NaN).
fn bf16(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) | 0x40) as u16;
    }
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

/// The bf16 value `b` as f32.
#[cfg(test)]
fn f32_of(b: u16) -> f32 {
    f32::from_bits(u32::from(b) << 16)
}

impl Bf16Linear {
    /// Rounds and packs `w`, `[k, n]` row-major (input-major, as `x · w`); `None` when the CPU
    /// lacks AVX-512 BF16 or the shape is empty.
    pub(crate) fn new(w: &[f32], k: usize, n: usize) -> Option<Bf16Linear> {
        if !supported() || k == 0 || n == 0 || w.len() != k * n {
            return None;
        }
        let kp = k.div_ceil(2) * 2;
        let pairs = kp / 2;
        let panels = n.div_ceil(PANEL);
        let mut packed = vec![0u16; panels * pairs * PANEL * 2];
        let pack = |panel: usize, dst: &mut [u16]| {
            for r in 0..k {
                let (pair, half) = (r / 2, r % 2);
                let cols = panel * PANEL..((panel + 1) * PANEL).min(n);
                for (lane, &v) in w[r * n + cols.start..r * n + cols.end].iter().enumerate() {
                    dst[(pair * PANEL + lane) * 2 + half] = bf16(v);
                }
            }
        };
        pack_panels(&mut packed, pairs * PANEL * 2, k * n, pack);
        Some(Bf16Linear {
            k,
            n,
            kp,
            packed: packed.into(),
        })
    }

    /// Writes the packed weights ([`crate::prepared`]).
    pub(crate) fn save(&self, w: &mut Writer) -> std::io::Result<()> {
        w.u64(self.k as u64)?;
        w.u64(self.n as u64)?;
        w.slice(&self.packed)
    }

    /// Reads what [`Bf16Linear::save`] wrote; `None` when the CPU lacks AVX-512 BF16. The
    /// kernel's pointer arithmetic relies on `packed`'s length: it is checked here against the
    /// one [`Bf16Linear::new`] makes for the same shape.
    pub(crate) fn load(r: &mut Reader) -> std::io::Result<Option<Bf16Linear>> {
        let (k, n) = (r.usize()?, r.usize()?);
        let packed: Array<u16> = r.array()?;
        let kp = k.div_ceil(2) * 2;
        check(
            k > 0 && n > 0 && packed.len() == n.div_ceil(PANEL) * (kp / 2) * PANEL * 2,
            "bf16 weights",
        )?;
        if !supported() {
            return Ok(None);
        }
        Ok(Some(Bf16Linear { k, n, kp, packed }))
    }

    /// `x · w` for `x` of `rows` rows of `k` values: `[rows, n]`, rows spread over rayon.
    pub(crate) fn forward(&self, x: &[f32], rows: usize) -> Vec<f32> {
        assert_eq!(x.len(), rows * self.k, "x must hold rows × k values");
        let (k, kp, n) = (self.k, self.kp, self.n);
        // The rows in bf16, `kp` values each (a zero past `k`).
        let mut xb = vec![0u16; rows * kp];
        let per = (rows / (rayon::current_num_threads() * 4)).max(16);
        xb.par_chunks_mut(kp * per)
            .zip(x.par_chunks(k * per))
            .for_each(|(b, x)| {
                for (b, x) in b.chunks_exact_mut(kp).zip(x.chunks_exact(k)) {
                    for (b, &v) in b.iter_mut().zip(x) {
                        *b = bf16(v);
                    }
                }
            });
        by_rows_or_panels(
            rows,
            n,
            PANEL,
            MR,
            |out, first_row, panels, width, first_col| {
                let rows = out.len() / width;
                let xb = &xb[first_row * kp..(first_row + rows) * kp];
                self.block(xb, panels, out, width, first_col)
            },
        )
    }

    /// Some rows × some panels, panel by panel (a panel's weights stay in cache across its
    /// rows), into `out`, rows of `width` values whose first is column `first_col`.
    fn block(
        &self,
        xb: &[u16],
        panels: std::ops::Range<usize>,
        out: &mut [f32],
        width: usize,
        first_col: usize,
    ) {
        let (kp, n) = (self.kp, self.n);
        let rows = xb.len() / kp;
        let panel_len = kp / 2 * PANEL * 2;
        for p in panels {
            let w = &self.packed[p * panel_len..(p + 1) * panel_len];
            let col = p * PANEL;
            let cols = (n - col).min(PANEL);
            let at = col - first_col;
            let mut r = 0;
            while r < rows {
                let m = (rows - r).min(MR);
                let a = &xb[r * kp..(r + m) * kp];
                let o = &mut out[r * width..(r + m) * width];
                // SAFETY: built only where `supported()` holds; `tile` asserts the lengths its
                // pointer arithmetic relies on.
                unsafe {
                    super::call_with_rows!(m, avx512::tile, (a, kp, w, o, width, at, cols));
                }
                r += m;
            }
        }
    }

    /// The same arithmetic in plain scalar code (bf16 inputs, f32 sums): what the kernel must
    /// reproduce to f32 rounding.
    #[cfg(test)]
    fn forward_reference(&self, x: &[f32], rows: usize) -> Vec<f32> {
        let (k, kp, n) = (self.k, self.kp, self.n);
        let pairs = kp / 2;
        let mut out = vec![0.0f32; rows * n];
        for r in 0..rows {
            for col in 0..n {
                let (panel, lane) = (col / PANEL, col % PANEL);
                let mut acc = 0.0f32;
                for i in 0..k {
                    let (pair, half) = (i / 2, i % 2);
                    let wv = self.packed[((panel * pairs + pair) * PANEL + lane) * 2 + half];
                    acc += f32_of(bf16(x[r * k + i])) * f32_of(wv);
                }
                out[r * n + col] = acc;
            }
        }
        out
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::super::first_lanes;

    /// `M` rows × one panel of up to 64 columns: `out[r][col..col + cols]`.
    ///
    /// `a`: `M` rows of `kp` bf16 values; `w`: the panel's packed weights (`kp / 2` pairs of
    /// 128 values); `out`: `M` rows of `n` values.
    ///
    /// # Safety
    /// The CPU must have AVX-512F and AVX-512 BF16.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn tile<const M: usize>(
        a: &[u16],
        kp: usize,
        w: &[u16],
        out: &mut [f32],
        n: usize,
        col: usize,
        cols: usize,
    ) {
        let pairs = kp / 2;
        assert!(kp.is_multiple_of(2) && a.len() >= M * kp && w.len() >= pairs * 128);
        assert!(cols <= 64 && col + cols <= n && out.len() >= (M - 1) * n + col + cols);
        let mut acc = [[_mm512_setzero_ps(); 4]; M];
        let (ap, wp) = (a.as_ptr(), w.as_ptr());
        for p in 0..pairs {
            // SAFETY: `p < pairs`, so the 128 values at `p · 128` are inside `w`, and the two
            // at `r · kp + 2p` inside `a` (`a.len() >= M · kp`). `__m512bh` is 32 bf16 values,
            // the same 64 bytes as `__m512i`.
            unsafe {
                let wg = wp.add(p * 128);
                let w0: __m512bh = std::mem::transmute(_mm512_loadu_si512(wg.cast()));
                let w1: __m512bh = std::mem::transmute(_mm512_loadu_si512(wg.add(32).cast()));
                let w2: __m512bh = std::mem::transmute(_mm512_loadu_si512(wg.add(64).cast()));
                let w3: __m512bh = std::mem::transmute(_mm512_loadu_si512(wg.add(96).cast()));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let two = ap.add(r * kp + 2 * p).cast::<i32>().read_unaligned();
                    let b: __m512bh = std::mem::transmute(_mm512_set1_epi32(two));
                    acc[0] = _mm512_dpbf16_ps(acc[0], b, w0);
                    acc[1] = _mm512_dpbf16_ps(acc[1], b, w1);
                    acc[2] = _mm512_dpbf16_ps(acc[2], b, w2);
                    acc[3] = _mm512_dpbf16_ps(acc[3], b, w3);
                }
            }
        }
        for reg in 0..4 {
            let first = reg * 16;
            if first >= cols {
                break;
            }
            let mask = first_lanes(cols - first);
            for (r, acc) in acc.iter().enumerate() {
                // SAFETY: the masked store writes only `out[r · n + col + first ..][..live]`,
                // inside `out` by the asserts above.
                unsafe {
                    _mm512_mask_storeu_ps(
                        out.as_mut_ptr().add(r * n + col + first),
                        mask,
                        acc[reg],
                    );
                }
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod avx512 {
    //! Never called: [`super::supported`] is false off x86-64, so no `Bf16Linear` exists.

    pub(super) unsafe fn tile<const M: usize>(
        _: &[u16],
        _: usize,
        _: &[u16],
        _: &mut [f32],
        _: usize,
        _: usize,
        _: usize,
    ) {
        unreachable!("bf16 kernels need x86-64")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_matrices::Agreement;

    #[test]
    fn rounding_is_to_nearest_even() {
        assert_eq!(bf16(1.0), 0x3f80);
        // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: to the even one, 1.
        assert_eq!(bf16(1.0 + 1.0 / 256.0), 0x3f80);
        assert_eq!(bf16(1.0 + 3.0 / 256.0), 0x3f82);
        assert_eq!(f32_of(bf16(-2.5)), -2.5);
        assert!(f32_of(bf16(f32::NAN)).is_nan());
    }

    // The same exact products of bf16 values as the reference, summed in another order; each
    // row within the rounding of 8-bit significands of the exact product (about 0.4 % of its
    // norm). An odd k and a 6-row call of one pair.
    crate::test_matrices::kernel_tests!(
        Bf16Linear,
        reference: |q, x, rows, _| q.forward_reference(x, rows),
        agreement: Agreement::Products,
        exact: |_| 0.01,
        more_shapes: [[6, 2, 16]],
    );
}
