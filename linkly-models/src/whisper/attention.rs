//! Scaled dot-product attention over rows laid side by side by head (`[rows, heads · d]`, the
//! linear layers' output as it comes), without moving them into a head-major copy: per head, the
//! scores are one `gemm` product of strided views ([`crate::matmul::product`]: candle's matmul
//! reads `/proc/cpuinfo` at every call unless `RAYON_NUM_THREADS` is set, a dozen times per
//! token in the decoder), the softmax is vectorised for the CPU at hand (`pulp`) and spread
//! over the cores, and the weighted values a second product.

use pulp::{Simd, WithSimd};
use rayon::prelude::*;

use crate::kernels;
use crate::matmul::{self, View};

/// One head's columns of `rows` rows of `width` values.
fn head<'a>(data: &'a [f32], rows: usize, width: usize, first: usize, d: usize) -> View<'a> {
    View {
        data: &data[first..],
        rows,
        cols: d,
        row_stride: width,
        col_stride: 1,
    }
}

/// The attention of the queries `q` (`n_q` rows of `width = heads · d`) over the keys `k` and
/// values `v` (`n_k` rows of `width` each): `n_q` rows of `width`. Query `i` sees every key, or
/// with `causal = Some(past)` the first `past + i + 1` (the decoder's new tokens, after `past`
/// seen before).
pub(crate) fn attend(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    heads: usize,
    width: usize,
    causal: Option<usize>,
) -> Vec<f32> {
    let d = width / heads;
    let (n_q, n_k) = (q.len() / width, k.len() / width);
    assert!(d * heads == width && v.len() == k.len(), "attention shapes");
    let scale = (d as f32).powf(-0.5);
    let mut out = vec![0.0f32; n_q * width];
    let mut scores = vec![0.0f32; n_q * n_k];
    let mut context = vec![0.0f32; n_q * d];
    let arch = pulp::Arch::new();
    for h in 0..heads {
        let first = h * d;
        matmul::product(
            head(q, n_q, width, first, d),
            head(k, n_k, width, first, d).t(),
            &mut scores,
        )
        .expect("attention shapes checked above");
        let per = (n_q / (rayon::current_num_threads() * 4)).max(16);
        scores
            .par_chunks_mut(per * n_k)
            .enumerate()
            .for_each(|(block, rows)| {
                arch.dispatch(Softmax {
                    rows,
                    width: n_k,
                    scale,
                    first_row: block * per,
                    causal,
                })
            });
        matmul::product(
            View::rows(&scores, n_q, n_k),
            head(v, n_k, width, first, d),
            &mut context,
        )
        .expect("attention shapes checked above");
        for (dst, src) in out.chunks_exact_mut(width).zip(context.chunks_exact(d)) {
            dst[first..first + d].copy_from_slice(src);
        }
    }
    out
}

/// Softmax of each row of scores, scaled, past the causal limit zero.
struct Softmax<'a> {
    rows: &'a mut [f32],
    width: usize,
    scale: f32,
    first_row: usize,
    causal: Option<usize>,
}

impl WithSimd for Softmax<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        for (i, row) in self.rows.chunks_exact_mut(self.width).enumerate() {
            let valid = self
                .causal
                .map_or(self.width, |past| past + self.first_row + i + 1);
            for x in row.iter_mut() {
                *x *= self.scale;
            }
            kernels::masked_softmax(row, valid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain definition, head by head.
    fn reference(
        q: &[f32],
        k: &[f32],
        v: &[f32],
        heads: usize,
        width: usize,
        causal: Option<usize>,
    ) -> Vec<f32> {
        let d = width / heads;
        let (n_q, n_k) = (q.len() / width, k.len() / width);
        let mut out = vec![0.0f32; n_q * width];
        for h in 0..heads {
            for i in 0..n_q {
                let visible = causal.map_or(n_k, |p| p + i + 1);
                let s: Vec<f64> = (0..visible)
                    .map(|j| {
                        (0..d)
                            .map(|c| {
                                f64::from(q[i * width + h * d + c])
                                    * f64::from(k[j * width + h * d + c])
                            })
                            .sum::<f64>()
                            / (d as f64).sqrt()
                    })
                    .collect();
                let m = s.iter().copied().fold(f64::MIN, f64::max);
                let z: f64 = s.iter().map(|x| (x - m).exp()).sum();
                for c in 0..d {
                    out[i * width + h * d + c] = s
                        .iter()
                        .enumerate()
                        .map(|(j, x)| (x - m).exp() / z * f64::from(v[j * width + h * d + c]))
                        .sum::<f64>() as f32;
                }
            }
        }
        out
    }

    #[test]
    fn matches_the_definition_with_and_without_the_causal_mask() {
        let (heads, width) = (3, 24);
        for (n_q, n_k, causal) in [
            (5, 5, None),
            (40, 70, None),
            (1, 9, Some(8)),
            (4, 10, Some(6)),
        ] {
            let q = crate::test_matrices::values(n_q * width, 1, false);
            let k = crate::test_matrices::values(n_k * width, 2, false);
            let v = crate::test_matrices::values(n_k * width, 3, false);
            let got = attend(&q, &k, &v, heads, width, causal);
            let want = reference(&q, &k, &v, heads, width, causal);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-4, "{n_q}×{n_k} {causal:?}: {g} vs {w}");
            }
        }
    }
}
