//! f32 matrix products through the `gemm` crate, called directly.
//!
//! candle's `Tensor::matmul` calls the same `gemm`, but first asks how many threads to use, and
//! on Linux that reads and parses `/proc/cpuinfo` (`num_cpus::get_physical`) at every call
//! unless `RAYON_NUM_THREADS` is set: 0.1 ms or more per product, a dozen products per query
//! embedding (two per layer in attention), about 7 % of one. [`product`] makes the same
//! `gemm` call with the thread count rayon already knows.
//!
//! Why `unsafe` (see [`super`]): `gemm::gemm` takes raw pointers and strides. [`product`]
//! checks, before it calls it, that every element the strides reach lies inside its slice,
//! and the destination is a `&mut` slice that cannot alias the two `&` inputs. It runs on every
//! architecture (`gemm` picks its kernels at run time); this module is only where the
//! workspace keeps its `unsafe`.

/// A matrix inside a slice: element `(i, j)` is `data[i * row_stride + j * col_stride]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct View<'a> {
    pub(crate) data: &'a [f32],
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) row_stride: usize,
    pub(crate) col_stride: usize,
}

impl<'a> View<'a> {
    /// A contiguous row-major `rows × cols` matrix.
    pub(crate) fn rows(data: &'a [f32], rows: usize, cols: usize) -> View<'a> {
        View {
            data,
            rows,
            cols,
            row_stride: cols,
            col_stride: 1,
        }
    }

    /// The transpose, without moving anything.
    pub(crate) fn t(self) -> View<'a> {
        View {
            data: self.data,
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
        }
    }

    /// Whether every element the strides reach is inside `data`, and the strides fit the
    /// signed offsets `gemm` takes.
    fn in_bounds(&self) -> bool {
        if self.rows == 0 || self.cols == 0 {
            return true;
        }
        let last = (self.rows - 1)
            .checked_mul(self.row_stride)
            .zip((self.cols - 1).checked_mul(self.col_stride))
            .and_then(|(a, b)| a.checked_add(b));
        matches!(last, Some(l) if l < self.data.len())
            && isize::try_from(self.row_stride).is_ok()
            && isize::try_from(self.col_stride).is_ok()
    }
}

/// Why a product was refused: the shapes do not agree, or a view reaches past its slice.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ShapeError;

/// `dst = a · b`, `dst` contiguous row-major `a.rows × b.cols`, on rayon's threads when it has
/// more than one (the same `gemm` call candle makes, so the same sums in the same order).
pub(crate) fn product(a: View<'_>, b: View<'_>, dst: &mut [f32]) -> Result<(), ShapeError> {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    if b.rows != k || m.checked_mul(n) != Some(dst.len()) || !a.in_bounds() || !b.in_bounds() {
        return Err(ShapeError);
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        dst.fill(0.0);
        return Ok(());
    }
    let threads = rayon::current_num_threads();
    let parallelism = if threads > 1 {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    // The `as isize` casts cannot wrap: `in_bounds` checked each stride fits, and `n` is at
    // most `dst.len()`, which fits.
    // SAFETY: `dst` holds `m · n` elements and element (i, j) is at `i · n + j`; `a` and `b`
    // were checked to hold every element their strides reach for `i < m, j < k` and
    // `i < k, j < n`. `dst` is borrowed mutably, so it cannot overlap the shared `a` and `b`.
    // `read_dst` is false, so `dst`'s old values are never read (alpha is not used).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.data.as_ptr(),
            a.col_stride as isize,
            a.row_stride as isize,
            b.data.as_ptr(),
            b.col_stride as isize,
            b.row_stride as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            parallelism,
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_matrices::exact;

    fn values(n: usize, seed: u64) -> Vec<f32> {
        crate::test_matrices::values(n, seed, false)
    }

    #[test]
    fn products_match_a_plain_loop() {
        // Shapes of a query's and a passage's attention (d = 32), odd sizes, and transposes.
        for &(m, k, n) in &[
            (1, 1, 1),
            (7, 32, 7),
            (12, 32, 12),
            (37, 5, 19),
            (200, 32, 200),
        ] {
            let a = values(m * k, 1);
            let b = values(k * n, 2);
            let bt = values(n * k, 3);
            let mut dst = vec![f32::NAN; m * n];
            product(View::rows(&a, m, k), View::rows(&b, k, n), &mut dst).unwrap();
            let want = exact(&a, &b, m, k, n);
            for (x, y) in dst.iter().zip(&want) {
                assert!(
                    (x - y).abs() <= 1e-4 * (k as f32),
                    "{m}×{k}×{n}: {x} vs {y}"
                );
            }
            // `a · btᵀ`, the scores' product.
            product(View::rows(&a, m, k), View::rows(&bt, n, k).t(), &mut dst).unwrap();
            // The plain product of `a` and `bt` transposed into a row-major copy.
            let b_of_bt: Vec<f32> = (0..k * n).map(|i| bt[(i % n) * k + i / n]).collect();
            let want = exact(&a, &b_of_bt, m, k, n);
            for (x, y) in dst.iter().zip(&want) {
                assert!(
                    (x - y).abs() <= 1e-4 * (k as f32),
                    "{m}×{k}×{n}ᵀ: {x} vs {y}"
                );
            }
        }
    }

    #[test]
    fn products_match_candle_bit_for_bit() {
        use candle_core::{Device, Tensor};
        let (heads, len, d) = (3, 23, 32);
        let q = values(heads * len * d, 4);
        let k = values(heads * len * d, 5);
        let qt = Tensor::from_vec(q.clone(), (heads, len, d), &Device::Cpu).unwrap();
        let kt = Tensor::from_vec(k.clone(), (heads, len, d), &Device::Cpu).unwrap();
        let want: Vec<f32> = qt
            .matmul(&kt.t().unwrap())
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        let mut got = vec![0.0f32; heads * len * len];
        for (h, dst) in got.chunks_exact_mut(len * len).enumerate() {
            let a = View::rows(&q[h * len * d..(h + 1) * len * d], len, d);
            let b = View::rows(&k[h * len * d..(h + 1) * len * d], len, d).t();
            product(a, b, dst).unwrap();
        }
        assert_eq!(got, want);
    }

    #[test]
    fn views_past_their_slice_are_refused() {
        let a = values(12, 6);
        let mut dst = vec![0.0f32; 16];
        // 4 × 4 from 12 values: the last row is missing.
        assert_eq!(
            product(
                View::rows(&a, 4, 4),
                View::rows(&values(16, 7), 4, 4),
                &mut dst
            ),
            Err(ShapeError)
        );
        // Inner sizes that disagree.
        assert_eq!(
            product(View::rows(&a, 4, 3), View::rows(&a, 4, 3), &mut dst),
            Err(ShapeError)
        );
        // A destination of the wrong size.
        assert_eq!(
            product(View::rows(&a, 4, 3), View::rows(&a, 3, 4), &mut dst[..15]),
            Err(ShapeError)
        );
        // A stride that overflows.
        let huge = View {
            data: &a,
            rows: 2,
            cols: 2,
            row_stride: usize::MAX / 2 + 1,
            col_stride: 1,
        };
        assert_eq!(
            product(huge, View::rows(&a, 2, 2), &mut dst[..4]),
            Err(ShapeError)
        );
        // Empty shapes are fine; an empty inner size gives zeros.
        let mut out = vec![5.0f32; 4];
        product(View::rows(&[], 2, 0), View::rows(&[], 0, 2), &mut out).unwrap();
        assert_eq!(out, vec![0.0; 4]);
    }
}
