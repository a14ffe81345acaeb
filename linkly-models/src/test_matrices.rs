//! Matrices for the tests of the kernels (`x86/int8.rs`, `x86/amx.rs`, `x86/bf16.rs`,
//! `x86/matmul.rs`, `int16.rs`): made-up values with outliers, the exact product to hold the
//! kernels to, and [`kernel_tests`], the tests every linear-layer kernel type runs.

/// Deterministic values in about [-1, 1]; with `outliers`, every 97th is eight times larger,
/// as in real activations.
pub(crate) fn values(len: usize, seed: u64, outliers: bool) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|i| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = ((s >> 33) as f32 / (1u64 << 31) as f32) * 2.0 - 1.0;
            if outliers && i % 97 == 0 { v * 8.0 } else { v }
        })
        .collect()
}

/// `x · w` in plain f32: `x` is `[rows, k]`, `w` is `[k, n]`, both row-major.
pub(crate) fn exact(x: &[f32], w: &[f32], rows: usize, k: usize, n: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; rows * n];
    for r in 0..rows {
        for i in 0..k {
            let xv = x[r * k + i];
            for c in 0..n {
                out[r * n + c] += xv * w[i * n + c];
            }
        }
    }
    out
}

/// One case of the kernels' tests: `x` (`rows × k`, with outliers, and its second row zero
/// from three rows on) and `w` (`k × n`), made from the shape.
pub(crate) fn case(rows: usize, k: usize, n: usize) -> (Vec<f32>, Vec<f32>) {
    let w = values(k * n, (rows * k + n) as u64, false);
    let mut x = values(rows * k, n as u64, true);
    if rows > 2 {
        x[k..2 * k].fill(0.0);
    }
    (x, w)
}

/// Each row of `got` (`rows × n`) within `tolerance` × its norm of the exact product `x · w`,
/// and a zero row of `x` exactly zero.
pub(crate) fn assert_rows_near_exact(
    x: &[f32],
    w: &[f32],
    got: &[f32],
    shape: [usize; 3],
    tolerance: f32,
) {
    let [rows, k, n] = shape;
    assert_eq!(got.len(), rows * n);
    let f = exact(x, w, rows, k, n);
    for (r, (got, want)) in got.chunks_exact(n).zip(f.chunks_exact(n)).enumerate() {
        let norm = want.iter().map(|v| v * v).sum::<f32>().sqrt();
        let err = got
            .iter()
            .zip(want)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f32>()
            .sqrt();
        assert!(
            err <= tolerance * norm,
            "{rows}×{k}×{n}: row {r}: error {err}, norm {norm}"
        );
        if x[r * k..(r + 1) * k].iter().all(|&v| v == 0.0) {
            assert!(
                got.iter().all(|&v| v == 0.0),
                "{rows}×{k}×{n}: row {r} of zeros"
            );
        }
    }
}

/// The shapes every linear-layer kernel is tested on, before its own: whole and partial
/// panels, an odd `k`, the models' widths (384, 1,152, 1,536), and a single output column.
pub(crate) const SHAPES: [[usize; 3]; 5] = [
    [1, 384, 384],
    [13, 384, 1152],
    [100, 1536, 384],
    [7, 37, 70],
    [3, 5, 1],
];

/// How close a kernel must come to its scalar reference, value by value.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Agreement {
    /// Within `1e-5` of the value (at least 1): the same integer sums, scaled in another order.
    Value,
    /// Within `1e-5 · max|x| · max|w| · k`: the same exact products, summed in another order.
    Products,
    /// Within `1e-5` of the reference row's norm (at least 1): f32 sums against f64 ones.
    RowNorm,
}

/// `got` (`rows × n`) agrees with `reference` as `agreement` says.
pub(crate) fn assert_near_reference(
    x: &[f32],
    w: &[f32],
    got: &[f32],
    reference: &[f32],
    shape: [usize; 3],
    agreement: Agreement,
) {
    let [rows, k, n] = shape;
    assert_eq!((got.len(), reference.len()), (rows * n, rows * n));
    let largest = |v: &[f32]| v.iter().map(|v| v.abs()).fold(0.0f32, f32::max);
    let products = 1e-5 * largest(x) * largest(w) * k as f32;
    for (r, (got, want)) in got
        .chunks_exact(n)
        .zip(reference.chunks_exact(n))
        .enumerate()
    {
        let norm = want.iter().map(|v| v * v).sum::<f32>().sqrt();
        for (c, (a, b)) in got.iter().zip(want).enumerate() {
            let bound = match agreement {
                Agreement::Value => 1e-5 * b.abs().max(1.0),
                Agreement::Products => products,
                Agreement::RowNorm => 1e-5 * norm.max(1.0),
            };
            assert!(
                (a - b).abs() <= bound,
                "{rows}×{k}×{n}: [{r}][{c}]: kernel {a}, reference {b}"
            );
        }
    }
}

/// The tests every linear-layer kernel type runs, in its `tests` module (where `supported`
/// and the type are in scope): on [`SHAPES`] and its own `more_shapes`, the kernel agrees with
/// its scalar reference (`reference(&kernel, x, rows, w)`) as `agreement` says, and each row
/// with the exact f32 product within `exact(k)` of its norm (a zero row exactly zero); where
/// the CPU lacks its instructions none can be built; an empty or inconsistent shape is refused.
macro_rules! kernel_tests {
    (
        $kernel:ident,
        reference: $reference:expr,
        agreement: $agreement:expr,
        exact: $exact:expr,
        more_shapes: [$([$rows:expr, $k:expr, $n:expr]),* $(,)?] $(,)?
    ) => {
        #[test]
        fn kernels_match_the_scalar_reference_and_the_f32_product() {
            use $crate::test_matrices::{SHAPES, assert_near_reference, assert_rows_near_exact, case};
            if !supported() {
                // Nothing to test: no kernel of this type can exist on this CPU.
                assert!($kernel::new(&[1.0; 16], 4, 4).is_none());
                return;
            }
            let reference: fn(&$kernel, &[f32], usize, &[f32]) -> Vec<f32> = $reference;
            let exact: fn(usize) -> f32 = $exact;
            for &[rows, k, n] in SHAPES.iter().chain(&[$([$rows, $k, $n]),*]) {
                let (x, w) = case(rows, k, n);
                let q = $kernel::new(&w, k, n).unwrap();
                assert_eq!((q.inputs(), q.outputs()), (k, n));
                let fast = q.forward(&x, rows);
                let want = reference(&q, &x, rows, &w);
                assert_near_reference(&x, &w, &fast, &want, [rows, k, n], $agreement);
                assert_rows_near_exact(&x, &w, &fast, [rows, k, n], exact(k));
            }
        }

        #[test]
        fn empty_shapes_are_refused() {
            assert!($kernel::new(&[], 0, 4).is_none());
            assert!($kernel::new(&[1.0; 3], 2, 2).is_none());
        }
    };
}
pub(crate) use kernel_tests;
