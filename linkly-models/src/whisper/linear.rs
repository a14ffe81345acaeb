//! Whisper's linear layers in the precision the calibration chose (`calibrate.rs`): f32
//! (`gemm`), int8 (AVX-512 VNNI), int16 (AVX2), bf16 (AVX-512 BF16, or AMX tiles), through the
//! same kernels as the embedding encoder (`crate::x86`, `crate::int16`), with the bias added in
//! the same pass. A layer's weights come from the checkpoint (rounded and packed at load) or
//! from a prepared file, where they lie mapped ([`crate::prepared`]).

use candle_core::{CpuStorage, CustomOp1, Layout, Result, Shape, Tensor};

use crate::amx::AmxLinear;
use crate::bf16::Bf16Linear;
use crate::encoder::Precision;
use crate::int8::QuantLinear;
use crate::int16::Int16Linear;
use crate::matmul;
use crate::prepared::{Array, Reader, Writer, check};

/// A layer's weights in one precision.
enum Weights {
    /// `[n, k]`, as the checkpoint stores them (one row per output), multiplied transposed.
    F32(Array<f32>),
    Int8(QuantLinear),
    Int16(Int16Linear),
    Bf16Amx(AmxLinear),
    Bf16Avx512(Bf16Linear),
}

/// `y = x · wᵀ + b` for `x` of `k` values a row.
pub(crate) struct Linear {
    k: usize,
    n: usize,
    weights: Weights,
    bias: Option<Array<f32>>,
}

impl std::fmt::Debug for Linear {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Linear")
            .field("k", &self.k)
            .field("n", &self.n)
            .field("precision", &self.precision().name())
            .finish()
    }
}

/// The precisions this CPU runs, f32 first.
pub(crate) fn supported() -> Vec<Precision> {
    let mut out = vec![Precision::F32];
    if crate::int16::supported() {
        out.push(Precision::Int16);
    }
    if crate::int8::supported() {
        out.push(Precision::Int8);
    }
    if crate::bf16::supported() {
        out.push(Precision::Bf16Avx512);
    }
    if crate::amx::supported() {
        out.push(Precision::Bf16);
    }
    out
}

impl Linear {
    /// The layer of weights `w` (`[n, k]`, one row per output) and `bias` (`n`) in
    /// `precision`; `None` when this CPU cannot run that precision's kernels.
    pub(crate) fn new(
        w: Vec<f32>,
        bias: Option<Vec<f32>>,
        k: usize,
        n: usize,
        precision: Precision,
    ) -> Option<Linear> {
        assert_eq!(w.len(), k * n, "weights of {n} × {k}");
        let input_major = || {
            let mut t = vec![0.0f32; k * n];
            for (o, row) in w.chunks_exact(k).enumerate() {
                for (i, &v) in row.iter().enumerate() {
                    t[i * n + o] = v;
                }
            }
            t
        };
        let weights = match precision {
            Precision::F32 => Weights::F32(w.into()),
            Precision::Int8 => Weights::Int8(QuantLinear::new(&input_major(), k, n)?),
            Precision::Int16 => Weights::Int16(Int16Linear::new(&input_major(), k, n)?),
            Precision::Bf16 => Weights::Bf16Amx(AmxLinear::new_transposed(&w, k, n)?),
            Precision::Bf16Avx512 => Weights::Bf16Avx512(Bf16Linear::new(&input_major(), k, n)?),
        };
        Some(Linear {
            k,
            n,
            weights,
            bias: bias.map(Array::from),
        })
    }

    /// The input width.
    pub(crate) fn inputs(&self) -> usize {
        self.k
    }

    /// The precision of the weights.
    pub(crate) fn precision(&self) -> Precision {
        match self.weights {
            Weights::F32(_) => Precision::F32,
            Weights::Int8(_) => Precision::Int8,
            Weights::Int16(_) => Precision::Int16,
            Weights::Bf16Amx(_) => Precision::Bf16,
            Weights::Bf16Avx512(_) => Precision::Bf16Avx512,
        }
    }

    /// `x · wᵀ + b` for `rows` rows of `k` values: `rows × n` values.
    pub(crate) fn product(&self, x: &[f32], rows: usize) -> Vec<f32> {
        let (k, n) = (self.k, self.n);
        let mut out = match &self.weights {
            Weights::F32(w) => {
                let mut out = vec![0.0f32; rows * n];
                matmul::product(
                    matmul::View::rows(x, rows, k),
                    matmul::View::rows(w, n, k).t(),
                    &mut out,
                )
                .expect("shapes checked when the layer was made");
                out
            }
            Weights::Int8(q) => q.forward(x, rows),
            Weights::Int16(q) => q.forward(x, rows),
            Weights::Bf16Amx(q) => q.forward(x, rows),
            Weights::Bf16Avx512(q) => q.forward(x, rows),
        };
        if let Some(b) = &self.bias {
            for row in out.chunks_exact_mut(n) {
                for (y, b) in row.iter_mut().zip(b.iter()) {
                    *y += b;
                }
            }
        }
        out
    }

    /// `x · wᵀ + b` over the last dimension of `x`.
    pub(crate) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.apply_op1_no_bwd(self)
    }

    /// Writes the layer ([`crate::prepared`]): its precision, shape, weights and bias.
    pub(crate) fn save(&self, w: &mut Writer) -> std::io::Result<()> {
        w.u64(precision_code(self.precision()))?;
        w.u64(self.k as u64)?;
        w.u64(self.n as u64)?;
        match &self.weights {
            Weights::F32(a) => w.slice(a)?,
            Weights::Int8(q) => q.save(w)?,
            Weights::Int16(q) => q.save(w)?,
            Weights::Bf16Amx(q) => q.save(w)?,
            Weights::Bf16Avx512(q) => q.save(w)?,
        }
        w.slice(self.bias.as_deref().unwrap_or(&[]))
    }

    /// Reads what [`Linear::save`] wrote; `None` when this CPU cannot run its kernels.
    pub(crate) fn load(r: &mut Reader) -> std::io::Result<Option<Linear>> {
        let code = r.u64()?;
        let (k, n) = (r.usize()?, r.usize()?);
        let precision = PRECISIONS
            .iter()
            .copied()
            .find(|&p| precision_code(p) == code)
            .ok_or_else(|| std::io::Error::other("unknown precision"))?;
        let weights = match precision {
            Precision::F32 => {
                let a: Array<f32> = r.array()?;
                check(k.checked_mul(n) == Some(a.len()), "f32 weights")?;
                Some(Weights::F32(a))
            }
            Precision::Int8 => QuantLinear::load(r)?.map(Weights::Int8),
            Precision::Int16 => Int16Linear::load(r)?.map(Weights::Int16),
            Precision::Bf16 => AmxLinear::load(r)?.map(Weights::Bf16Amx),
            Precision::Bf16Avx512 => Bf16Linear::load(r)?.map(Weights::Bf16Avx512),
        };
        let bias: Array<f32> = r.array()?;
        check(bias.is_empty() || bias.len() == n, "bias")?;
        let Some(weights) = weights else {
            return Ok(None);
        };
        let shape_ok = match &weights {
            Weights::F32(_) => true,
            Weights::Int8(q) => (q.inputs(), q.outputs()) == (k, n),
            Weights::Int16(q) => (q.inputs(), q.outputs()) == (k, n),
            Weights::Bf16Amx(q) => (q.inputs(), q.outputs()) == (k, n),
            Weights::Bf16Avx512(q) => (q.inputs(), q.outputs()) == (k, n),
        };
        check(shape_ok, "linear layer")?;
        Ok(Some(Linear {
            k,
            n,
            weights,
            bias: (!bias.is_empty()).then_some(bias),
        }))
    }
}

const PRECISIONS: [Precision; 5] = [
    Precision::F32,
    Precision::Int8,
    Precision::Int16,
    Precision::Bf16,
    Precision::Bf16Avx512,
];

fn precision_code(p: Precision) -> u64 {
    match p {
        Precision::F32 => 0,
        Precision::Int8 => 1,
        Precision::Int16 => 2,
        Precision::Bf16 => 3,
        Precision::Bf16Avx512 => 4,
    }
}

impl CustomOp1 for Linear {
    fn name(&self) -> &'static str {
        "linkly-whisper-linear"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(data) = s else {
            candle_core::bail!("the Whisper linear layers take f32");
        };
        let Some((from, to)) = l.contiguous_offsets() else {
            candle_core::bail!("the Whisper linear layers take contiguous input");
        };
        let x = &data[from..to];
        let dims = l.shape().dims();
        if dims.last() != Some(&self.k) {
            candle_core::bail!("a linear layer of {} inputs got {:?}", self.k, dims);
        }
        let rows = x.len() / self.k;
        let mut out_dims = dims.to_vec();
        *out_dims.last_mut().expect("checked") = self.n;
        Ok((
            CpuStorage::F32(self.product(x, rows)),
            Shape::from(out_dims),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every precision this CPU runs against the f32 product, within its rounding, and the
    /// same after a save and a load (the prepared file's path).
    #[test]
    fn each_precision_matches_f32_and_survives_a_prepared_file() {
        let (k, n, rows) = (70, 130, 9);
        let w = crate::test_matrices::values(k * n, 11, false);
        let b = crate::test_matrices::values(n, 12, false);
        let x = crate::test_matrices::values(rows * k, 13, false);
        let reference = Linear::new(w.clone(), Some(b.clone()), k, n, Precision::F32).unwrap();
        let want = reference.product(&x, rows);
        // The plain sum, to check the f32 path itself.
        for r in 0..rows {
            for o in 0..n {
                let s: f32 = (0..k).map(|i| x[r * k + i] * w[o * k + i]).sum::<f32>() + b[o];
                assert!((s - want[r * n + o]).abs() < 1e-3, "f32 {r} {o}");
            }
        }
        let tmp = tempfile::tempdir().unwrap();
        for p in supported() {
            let layer = Linear::new(w.clone(), Some(b.clone()), k, n, p).unwrap();
            let got = layer.product(&x, rows);
            // Each row within a few percent of its norm (8-bit inputs at worst).
            for (g, e) in got.chunks_exact(n).zip(want.chunks_exact(n)) {
                let norm = e.iter().map(|v| v * v).sum::<f32>().sqrt();
                let err = g
                    .iter()
                    .zip(e)
                    .map(|(a, b)| (a - b) * (a - b))
                    .sum::<f32>()
                    .sqrt();
                assert!(err <= 0.05 * norm, "{}: {err} against {norm}", p.name());
            }
            let cache = crate::prepared::Cache::at(tmp.path().join(p.name()), "k".into());
            cache.save(|w| layer.save(w));
            let back = cache
                .load(Linear::load)
                .flatten()
                .expect("the layer reads back");
            assert_eq!(back.precision(), p);
            assert_eq!(back.product(&x, rows), got, "{}", p.name());
        }
    }
}
