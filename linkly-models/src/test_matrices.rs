//! Matrices for the tests of the kernels (`x86/int8.rs`, `x86/amx.rs`, `x86/matmul.rs`, `int16.rs`): made-up values
//! with outliers, and the exact product to hold the kernels to.

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
