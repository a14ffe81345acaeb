//! Matrices for the tests of the quantized kernels (`x86/int8.rs`, `x86/amx.rs`, `int16.rs`): made-up values
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
