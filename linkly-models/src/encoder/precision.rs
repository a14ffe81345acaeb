//! How the linear layers multiply: the precisions, a layer's weights in each of them (read
//! from the checkpoint, quantized here or read from a prepared file), and the product that
//! runs them.

use candle_core::{CpuStorage, CustomOp1, Layout, Shape, Tensor};

use super::{CResult, contiguous_f32, err};
use crate::amx::AmxLinear;
use crate::bf16::Bf16Linear;
use crate::int8::QuantLinear;
use crate::int16::Int16Linear;
use crate::matmul;
use crate::prepared::{Array, Reader, Writer};

/// How the linear layers multiply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Precision {
    /// f32 weights and activations (candle's `gemm`).
    F32,
    /// int8 weights and activations, 32-bit sums (AVX-512 VNNI, [`QuantLinear`]).
    Int8,
    /// 16-bit integer weights and activations (about 11 bits each), exact 32-bit sums
    /// (AVX2, [`Int16Linear`]).
    Int16,
    /// bf16 weights and activations, f32 sums (AMX tiles, [`AmxLinear`]).
    Bf16,
    /// bf16 weights and activations, f32 sums (AVX-512 BF16, [`Bf16Linear`]): the linear
    /// layers only, attention in f32.
    Bf16Avx512,
}

impl Precision {
    /// Its name in file names and logs.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Int8 => "int8",
            Precision::Int16 => "int16",
            Precision::Bf16 => "bf16",
            Precision::Bf16Avx512 => "bf16-avx512",
        }
    }

    /// The precision [`Precision::name`] names.
    pub(crate) fn from_name(name: &str) -> Option<Precision> {
        [
            Precision::F32,
            Precision::Int8,
            Precision::Int16,
            Precision::Bf16,
            Precision::Bf16Avx512,
        ]
        .into_iter()
        .find(|p| p.name() == name)
    }
}

/// A linear layer's f32 weights, `[in, out]`, contiguous: as read from the checkpoint, or a
/// view into a prepared file ([`crate::prepared`]).
enum F32Weights {
    Tensor(Tensor),
    Prepared { k: usize, n: usize, w: Array<f32> },
}

impl F32Weights {
    fn dims(&self) -> CResult<(usize, usize)> {
        match self {
            F32Weights::Tensor(t) => t.dims2(),
            F32Weights::Prepared { k, n, .. } => Ok((*k, *n)),
        }
    }

    /// Runs `f` on the weights, `k × n` values, wherever they lie.
    fn with<R>(&self, f: impl FnOnce(&[f32]) -> R) -> CResult<R> {
        match self {
            F32Weights::Tensor(t) => {
                let guard = t.storage_and_layout();
                let candle_core::Storage::Cpu(storage) = &*guard.0 else {
                    return Err(err("f32 weights are not in CPU memory"));
                };
                Ok(f(contiguous_f32(storage, guard.1, "f32 weights")?))
            }
            F32Weights::Prepared { w, .. } => Ok(f(w)),
        }
    }

    fn save(&self, w: &mut Writer) -> std::io::Result<()> {
        let (k, n) = self.dims().map_err(std::io::Error::other)?;
        w.u64(k as u64)?;
        w.u64(n as u64)?;
        self.with(|values| w.slice(values))
            .map_err(std::io::Error::other)?
    }

    fn load(r: &mut Reader) -> std::io::Result<F32Weights> {
        let (k, n) = (r.usize()?, r.usize()?);
        let w: Array<f32> = r.array()?;
        crate::prepared::check(
            k > 0 && n > 0 && k.checked_mul(n) == Some(w.len()),
            "f32 weights",
        )?;
        Ok(F32Weights::Prepared { k, n, w })
    }
}

/// A linear layer's weights (bias apart), in one precision or both.
pub(super) struct Linear {
    f32: Option<F32Weights>,
    int8: Option<QuantLinear>,
    int16: Option<Int16Linear>,
    pub(super) bf16: Option<AmxLinear>,
    bf16_avx512: Option<Bf16Linear>,
}

impl Linear {
    pub(super) fn new(w: Tensor) -> Linear {
        Linear {
            f32: Some(F32Weights::Tensor(w)),
            int8: None,
            int16: None,
            bf16: None,
            bf16_avx512: None,
        }
    }

    pub(super) fn apply(&self, x: &Tensor, precision: Precision) -> CResult<Tensor> {
        match (precision, &self.int8, &self.int16, &self.f32) {
            (Precision::Int8, Some(q), _, _) => x.apply_op1_no_bwd(&LinearProduct::Int8(q)),
            (Precision::Int16, _, Some(q), _) => x.apply_op1_no_bwd(&LinearProduct::Int16(q)),
            (Precision::Bf16Avx512, ..) if self.bf16_avx512.is_some() => {
                let q = self.bf16_avx512.as_ref().expect("checked");
                x.apply_op1_no_bwd(&LinearProduct::Bf16(q))
            }
            (_, _, _, Some(w)) => x.apply_op1_no_bwd(&LinearProduct::F32(w)),
            _ => Err(err(
                "the linear layer's weights of this precision were dropped",
            )),
        }
    }

    /// Adds the weights of `precision` beside the f32 ones; false when this CPU cannot run
    /// that precision's kernels.
    pub(super) fn quantize(&mut self, precision: Precision) -> CResult<bool> {
        if self.has(precision) {
            return Ok(true);
        }
        let Some(w) = &self.f32 else {
            return Ok(false);
        };
        let (k, n) = w.dims()?;
        let (mut int8, mut int16, mut bf16, mut bf16_avx512) = (None, None, None, None);
        w.with(|values| match precision {
            Precision::F32 => {}
            Precision::Int8 => int8 = QuantLinear::new(values, k, n),
            Precision::Int16 => int16 = Int16Linear::new(values, k, n),
            Precision::Bf16 => bf16 = AmxLinear::new(values, k, n),
            Precision::Bf16Avx512 => bf16_avx512 = Bf16Linear::new(values, k, n),
        })?;
        self.int8 = self.int8.take().or(int8);
        self.int16 = self.int16.take().or(int16);
        self.bf16 = self.bf16.take().or(bf16);
        self.bf16_avx512 = self.bf16_avx512.take().or(bf16_avx512);
        Ok(self.has(precision))
    }

    /// `(inputs, outputs)` of whichever weights are there.
    pub(super) fn dims(&self) -> CResult<(usize, usize)> {
        match (&self.f32, &self.int8, &self.int16, &self.bf16) {
            (Some(w), ..) => w.dims(),
            (_, Some(q), ..) => Ok((q.inputs(), q.outputs())),
            (_, _, Some(q), _) => Ok((q.inputs(), q.outputs())),
            (.., Some(q)) => Ok((q.inputs(), q.outputs())),
            _ => match &self.bf16_avx512 {
                Some(q) => Ok((q.inputs(), q.outputs())),
                None => Err(err("a linear layer without weights")),
            },
        }
    }

    /// Writes the weights of `precision` ([`crate::prepared`]).
    pub(super) fn save(&self, precision: Precision, w: &mut Writer) -> std::io::Result<()> {
        let missing = || std::io::Error::other("the weights of this precision are not there");
        match precision {
            Precision::Int8 => self.int8.as_ref().ok_or_else(missing)?.save(w),
            Precision::Int16 => self.int16.as_ref().ok_or_else(missing)?.save(w),
            Precision::Bf16 => self.bf16.as_ref().ok_or_else(missing)?.save(w),
            Precision::Bf16Avx512 => self.bf16_avx512.as_ref().ok_or_else(missing)?.save(w),
            Precision::F32 => self.f32.as_ref().ok_or_else(missing)?.save(w),
        }
    }

    /// Reads what [`Linear::save`] wrote; `None` when this CPU cannot run the kernels.
    fn load(precision: Precision, r: &mut Reader) -> std::io::Result<Option<Linear>> {
        let mut l = Linear {
            f32: None,
            int8: None,
            int16: None,
            bf16: None,
            bf16_avx512: None,
        };
        match precision {
            Precision::Int8 => l.int8 = QuantLinear::load(r)?,
            Precision::Int16 => l.int16 = Int16Linear::load(r)?,
            Precision::Bf16 => l.bf16 = AmxLinear::load(r)?,
            Precision::Bf16Avx512 => l.bf16_avx512 = Bf16Linear::load(r)?,
            Precision::F32 => l.f32 = Some(F32Weights::load(r)?),
        }
        Ok(l.has(precision).then_some(l))
    }

    /// Whether the weights of `precision` are there.
    fn has(&self, precision: Precision) -> bool {
        match precision {
            Precision::F32 => self.f32.is_some(),
            Precision::Int8 => self.int8.is_some(),
            Precision::Int16 => self.int16.is_some(),
            Precision::Bf16 => self.bf16.is_some(),
            Precision::Bf16Avx512 => self.bf16_avx512.is_some(),
        }
    }

    /// Frees the weights of `precision` when it is not f32 and the f32 ones are there.
    pub(super) fn forget(&mut self, precision: Precision) {
        if self.f32.is_none() {
            return;
        }
        match precision {
            Precision::F32 => {}
            Precision::Int8 => self.int8 = None,
            Precision::Int16 => self.int16 = None,
            Precision::Bf16 => self.bf16 = None,
            Precision::Bf16Avx512 => self.bf16_avx512 = None,
        }
    }

    /// Frees the weights of the precisions not in use.
    pub(super) fn keep(&mut self, precision: Precision) {
        if !self.has(precision) {
            return;
        }
        if precision != Precision::F32 {
            self.f32 = None;
        }
        if precision != Precision::Int8 {
            self.int8 = None;
        }
        if precision != Precision::Int16 {
            self.int16 = None;
        }
        if precision != Precision::Bf16 {
            self.bf16 = None;
        }
        if precision != Precision::Bf16Avx512 {
            self.bf16_avx512 = None;
        }
    }
}

/// `x · w` through the int8, int16, AVX-512 bf16 or f32 (`gemm`) kernels (bf16 on AMX runs
/// in [`super::FastEncoder::layer_bf16`]).
enum LinearProduct<'a> {
    Int8(&'a QuantLinear),
    Int16(&'a Int16Linear),
    Bf16(&'a Bf16Linear),
    F32(&'a F32Weights),
}

impl CustomOp1 for LinearProduct<'_> {
    fn name(&self) -> &'static str {
        match self {
            LinearProduct::Int8(_) => "linkly-int8-matmul",
            LinearProduct::Int16(_) => "linkly-int16-matmul",
            LinearProduct::Bf16(_) => "linkly-bf16-matmul",
            LinearProduct::F32(_) => "linkly-f32-matmul",
        }
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> CResult<(CpuStorage, Shape)> {
        let x = contiguous_f32(s, l, self.name())?;
        let (k, n) = match self {
            LinearProduct::Int8(q) => (q.inputs(), q.outputs()),
            LinearProduct::Int16(q) => (q.inputs(), q.outputs()),
            LinearProduct::Bf16(q) => (q.inputs(), q.outputs()),
            LinearProduct::F32(w) => w.dims()?,
        };
        let rows = x.len() / k.max(1);
        if rows * k != x.len() {
            return Err(err(format!(
                "{}: input width differs from the weights'",
                self.name()
            )));
        }
        let out = match self {
            LinearProduct::Int8(q) => q.forward(x, rows),
            LinearProduct::Int16(q) => q.forward(x, rows),
            LinearProduct::Bf16(q) => q.forward(x, rows),
            LinearProduct::F32(w) => {
                let mut out = vec![0.0f32; rows * n];
                w.with(|w| {
                    matmul::product(
                        matmul::View::rows(x, rows, k),
                        matmul::View::rows(w, k, n),
                        &mut out,
                    )
                })?
                .map_err(|_| err(format!("{}: unexpected weights' shape", self.name())))?;
                out
            }
        };
        Ok((CpuStorage::F32(out), Shape::from((rows, n))))
    }
}

/// The linear layers' weights in one precision (f32 included), as a file of
/// [`crate::prepared`] held them: four per layer (attention's query, key and value
/// side by side, its output, the feed-forward's two).
pub(crate) struct PreparedLinears {
    pub(super) precision: Precision,
    pub(super) linears: Vec<Linear>,
}

impl PreparedLinears {
    /// Reads the linear layers of a `layers`-layer encoder in `precision`; `None` when this
    /// CPU cannot run its kernels.
    pub(crate) fn read(
        r: &mut Reader,
        precision: Precision,
        layers: usize,
    ) -> std::io::Result<Option<PreparedLinears>> {
        let count = r.usize()?;
        crate::prepared::check(count == layers * 4, "layer count")?;
        let mut linears = Vec::with_capacity(count);
        for _ in 0..count {
            match Linear::load(precision, r)? {
                Some(l) => linears.push(l),
                None => return Ok(None),
            }
        }
        Ok(Some(PreparedLinears { precision, linears }))
    }
}
