//! The element-wise kernels of the encoder, written so the compiler vectorises them: branch-free
//! polynomial `exp` and `erf`, reductions over independent lanes (a plain `f32` sum is never
//! reordered, so it would stay scalar). Callers run them inside [`pulp::Arch::dispatch`], which
//! compiles them for the widest instruction set the CPU has (AVX-512, AVX2+FMA, or SSE2).

/// Lanes of the partial sums: 16 `f32` = one AVX-512 register, two AVX2 ones.
const LANES: usize = 16;

const LOG2_E: f32 = std::f32::consts::LOG2_E;
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;

/// `e^x`, relative error below 2e-7 on the range where `f32` has normal results; clamped
/// below (→ ~0) and above (→ ~f32::MAX).
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    // Round x·log2(e) to the nearest integer without a call to `floor` (SSE2 has no rounding
    // instruction): adding 1.5·2^23 leaves the integer in the low mantissa bits.
    const MAGIC: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let shifted = x * LOG2_E + MAGIC;
    let n = shifted - MAGIC;
    let ni = shifted.to_bits() as i32 - MAGIC.to_bits() as i32;
    let r = x - n * LN2_HI - n * LN2_LO;
    // Taylor to degree 7 on |r| ≤ ln2/2.
    let p = 1.0f32 / 5040.0;
    let p = p.mul_add(r, 1.0 / 720.0);
    let p = p.mul_add(r, 1.0 / 120.0);
    let p = p.mul_add(r, 1.0 / 24.0);
    let p = p.mul_add(r, 1.0 / 6.0);
    let p = p.mul_add(r, 0.5);
    let p = p.mul_add(r, 1.0);
    let p = p.mul_add(r, 1.0);
    let scale = f32::from_bits(((ni + 127) as u32) << 23);
    p * scale
}

/// `erf(x)` by Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7 in exact arithmetic).
#[inline(always)]
fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152 + t * 1.061_405_4))));
    let y = 1.0 - poly * exp(-a * a);
    y.copysign(x)
}

/// `tanh(x)` through `exp`, for the tanh-approximated GELU.
#[inline(always)]
fn tanh(x: f32) -> f32 {
    let e = exp(-2.0 * x.abs());
    ((1.0 - e) / (1.0 + e)).copysign(x)
}

/// The activation between the two feed-forward matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activation {
    /// GELU with the exact `erf` (`"gelu"`, what BERT and XLM-R use).
    GeluErf,
    /// GELU with the tanh approximation (`"gelu_new"`, `"gelu_pytorch_tanh"`).
    GeluTanh,
    /// `max(0, x)`.
    Relu,
}

impl Activation {
    /// The activation a `config.json` `hidden_act` names, if it is one of these.
    pub(crate) fn from_config(name: &str) -> Option<Activation> {
        match name {
            "gelu" => Some(Activation::GeluErf),
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Some(Activation::GeluTanh),
            "relu" => Some(Activation::Relu),
            _ => None,
        }
    }
}

/// `row[i] = act(row[i] + bias[i])`.
#[inline(always)]
pub(crate) fn bias_activation(row: &mut [f32], bias: &[f32], act: Activation) {
    match act {
        Activation::GeluErf => {
            for (x, b) in row.iter_mut().zip(bias) {
                let v = *x + b;
                *x = 0.5 * v * (1.0 + erf(v * std::f32::consts::FRAC_1_SQRT_2));
            }
        }
        Activation::GeluTanh => {
            const C: f32 = 0.797_884_6; // sqrt(2/pi)
            for (x, b) in row.iter_mut().zip(bias) {
                let v = *x + b;
                *x = 0.5 * v * (1.0 + tanh(C * (v + 0.044_715 * v * v * v)));
            }
        }
        Activation::Relu => {
            for (x, b) in row.iter_mut().zip(bias) {
                *x = (*x + b).max(0.0);
            }
        }
    }
}

/// `a · b` over independent lanes (so the compiler vectorises it).
#[inline(always)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for ((s, p), q) in acc.iter_mut().zip(x).zip(y) {
            *s = p.mul_add(*q, *s);
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// `a · b` for 8-bit codes and a 16-bit query, exact in 32 bits while `a.len() · 127 ·
/// max|b| < 2^31` (integer sums may be reordered, so the compiler vectorises it: on AVX2, a
/// sign extension and `vpmaddwd` per 16 values).
#[inline(always)]
pub fn dot_i8_i16(a: &[i8], b: &[i16]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .fold(0i32, i32::wrapping_add)
}

#[inline(always)]
fn sum(xs: &[f32]) -> f32 {
    let mut acc = [0.0f32; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, x) in acc.iter_mut().zip(c) {
            *a += x;
        }
    }
    acc.iter().sum::<f32>() + tail.iter().sum::<f32>()
}

#[inline(always)]
fn max(xs: &[f32]) -> f32 {
    let mut acc = [f32::MIN; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, x) in acc.iter_mut().zip(c) {
            *a = if *x > *a { *x } else { *a };
        }
    }
    let m = acc.iter().fold(f32::MIN, |m, &x| if x > m { x } else { m });
    tail.iter().fold(m, |m, &x| if x > m { x } else { m })
}

/// Softmax over `row[..valid]`, zeros after it (the padding a query must not attend to).
#[inline(always)]
pub(crate) fn masked_softmax(row: &mut [f32], valid: usize) {
    let (live, padding) = row.split_at_mut(valid.min(row.len()));
    padding.fill(0.0);
    if live.is_empty() {
        return;
    }
    let m = max(live);
    for x in live.iter_mut() {
        *x = exp(*x - m);
    }
    let inv = 1.0 / sum(live);
    for x in live.iter_mut() {
        *x *= inv;
    }
}

/// `row = LayerNorm(row + bias + residual) * gamma + beta`.
#[inline(always)]
pub(crate) fn add_layer_norm(
    row: &mut [f32],
    bias: &[f32],
    residual: &[f32],
    gamma: &[f32],
    beta: &[f32],
    eps: f32,
) {
    for ((x, b), r) in row.iter_mut().zip(bias).zip(residual) {
        *x += b + r;
    }
    layer_norm(row, gamma, beta, eps);
}

/// `row = LayerNorm(row) * gamma + beta`.
#[inline(always)]
pub(crate) fn layer_norm(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = sum(row) / n;
    for x in row.iter_mut() {
        *x -= mean;
    }
    let mut acc = [0.0f32; LANES];
    let chunks = row.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, x) in acc.iter_mut().zip(c) {
            *a += x * x;
        }
    }
    let var = (acc.iter().sum::<f32>() + tail.iter().map(|x| x * x).sum::<f32>()) / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((x, g), b) in row.iter_mut().zip(gamma).zip(beta) {
        *x = *x * inv * g + b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_matches_std() {
        let mut worst = 0.0f32;
        let mut x = -80.0f32;
        while x < 80.0 {
            let rel = ((exp(x) - x.exp()) / x.exp()).abs();
            worst = worst.max(rel);
            x += 0.013;
        }
        assert!(worst < 5e-7, "worst relative error {worst}");
        assert!(exp(-1000.0) < 1e-37);
        assert!(exp(1000.0).is_finite());
    }

    #[test]
    fn gelu_matches_the_erf_definition() {
        let xs: Vec<f32> = (-800..800).map(|i| i as f32 / 100.0).collect();
        let mut got = xs.clone();
        bias_activation(&mut got, &vec![0.0; xs.len()], Activation::GeluErf);
        for (x, g) in xs.iter().zip(&got) {
            // erf in f64 via its series / continued fraction is not in std: compare with the
            // tanh form's tolerance-free identity at the points where both are known.
            let want = 0.5 * (*x as f64) * (1.0 + erf_f64(*x as f64 / std::f64::consts::SQRT_2));
            assert!(
                (*g as f64 - want).abs() < 2e-6,
                "gelu({x}) = {g}, want {want}"
            );
        }
    }

    /// erf in f64 by its Taylor series (|x| < 3) or its asymptotic complement: the reference.
    fn erf_f64(x: f64) -> f64 {
        let a = x.abs();
        let v = if a < 3.0 {
            let mut term = a;
            let mut s = a;
            for n in 1..200 {
                term *= -a * a / n as f64;
                s += term / (2 * n + 1) as f64;
            }
            s * 2.0 / std::f64::consts::PI.sqrt()
        } else {
            1.0 - (-a * a).exp() / (a * std::f64::consts::PI.sqrt())
                * (1.0 - 1.0 / (2.0 * a * a) + 3.0 / (4.0 * a.powi(4)))
        };
        v.copysign(x)
    }

    #[test]
    fn softmax_sums_to_one_and_ignores_padding() {
        let mut row = vec![1.0, 2.0, 3.0, 100.0, 100.0];
        masked_softmax(&mut row, 3);
        let want = [1.0f32, 2.0, 3.0].map(f32::exp);
        let total: f32 = want.iter().sum();
        for (g, w) in row.iter().zip(want) {
            assert!((g - w / total).abs() < 1e-6);
        }
        assert_eq!(&row[3..], &[0.0, 0.0]);
        let long: Vec<f32> = (0..100).map(|i| (i as f32).sin() * 5.0).collect();
        let mut r = long.clone();
        masked_softmax(&mut r, 100);
        assert!((r.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        let m = long.iter().cloned().fold(f32::MIN, f32::max);
        let z: f32 = long.iter().map(|x| (x - m).exp()).sum();
        for (g, x) in r.iter().zip(&long) {
            assert!((g - (x - m).exp() / z).abs() < 1e-6);
        }
    }

    #[test]
    fn layer_norm_normalises() {
        let mut row: Vec<f32> = (0..37).map(|i| i as f32 * 0.7 - 3.0).collect();
        let n = row.len();
        layer_norm(&mut row, &vec![1.0; n], &vec![0.0; n], 1e-12);
        let mean: f32 = row.iter().sum::<f32>() / n as f32;
        let var: f32 = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / n as f32;
        assert!(
            mean.abs() < 1e-5 && (var - 1.0).abs() < 1e-4,
            "{mean} {var}"
        );
    }
}
