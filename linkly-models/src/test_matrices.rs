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

/// A kernel under timing: its product `x · w` for `rows` rows, with `w` prepared once.
pub(crate) type Product = Box<dyn Fn(&[f32], usize) -> Vec<f32> + Send + Sync>;

/// Times `prepare`'s product against gemm's f32 one on all-MiniLM-L6-v2's shapes (a batch's
/// 4,000 rows, a query's 12), on all cores and on one: a line per shape, for the timing tests
/// to print (`cargo test --release -p linkly-index --lib NAME::timing -- --ignored
/// --nocapture`).
pub(crate) fn time_against_gemm(
    name: &str,
    prepare: impl Fn(&[f32], usize, usize) -> Product,
) -> Vec<String> {
    let mut lines = Vec::new();
    for &(rows, k, n) in &[
        (4000, 384, 1152),
        (4000, 384, 1536),
        (4000, 1536, 384),
        (12, 384, 1152),
        (12, 1536, 384),
    ] {
        let w: Vec<f32> = (0..k * n)
            .map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5)
            .collect();
        let x: Vec<f32> = (0..rows * k)
            .map(|i| ((i * 104729) % 1000) as f32 / 1000.0 - 0.5)
            .collect();
        let product = prepare(&w, k, n);
        let wt = candle_core::Tensor::from_vec(w, (k, n), &candle_core::Device::Cpu).unwrap();
        let xt =
            candle_core::Tensor::from_vec(x.clone(), (rows, k), &candle_core::Device::Cpu).unwrap();
        let reps = if rows > 100 { 10 } else { 500 };
        let time = |f: &dyn Fn()| {
            f();
            let t = std::time::Instant::now();
            for _ in 0..reps {
                f();
            }
            t.elapsed().as_secs_f64() / reps as f64
        };
        let ours = time(&|| {
            std::hint::black_box(product(&x, rows));
        });
        let gemm = time(&|| {
            std::hint::black_box(xt.matmul(&wt).unwrap());
        });
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| {
                time(&|| {
                    std::hint::black_box(product(&x, rows));
                })
            });
        let macs = (rows * k * n) as f64;
        lines.push(format!(
            "{rows}×{k}×{n}: {name} {:.3} ms ({:.0} GMAC/s; one thread {:.0}), gemm f32 {:.3} ms ({:.0} GMAC/s): {:.2}×",
            ours * 1e3,
            macs / ours / 1e9,
            macs / one / 1e9,
            gemm * 1e3,
            macs / gemm / 1e9,
            gemm / ours
        ));
    }
    lines
}
