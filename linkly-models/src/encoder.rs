//! A BERT / XLM-RoBERTa encoder forward pass tuned for CPUs, on candle tensors.
//!
//! The f32 matrix products are `gemm`'s (with its AVX-512 kernels turned on), called through
//! [`matmul::product`] rather than candle's `Tensor::matmul`, which reads `/proc/cpuinfo` at
//! each call; the int16, int8 and bf16 ones have kernels of their own. Everything between
//! them is fused into a few in-place passes (bias + activation, bias + residual + LayerNorm,
//! softmax), vectorised for the CPU at hand and spread over the cores with rayon. The batch is
//! packed: the layers see only real tokens, one sequence after another, so padding costs
//! nothing, and attention runs one sequence per task (two products per head). Compared with
//! candle-transformers' `bert` (padding computed, one allocation and one scalar pass per
//! operation, `erf` and `exp` from libm, attention as two tiny two-thread gemm calls per head)
//! this makes embedding several times faster on a CPU; the result is the same to within float
//! rounding, which a test checks against candle-transformers on the real model.
//!
//! Shapes: a batch comes as `n` sequences padded on the right to `len` tokens and goes back
//! out that way; inside, `T` packed rows of `hidden` values; `H` heads of `d = hidden / H`.

use std::collections::{HashMap, HashSet};

use candle_core::{CpuStorage, CustomOp1, DType, InplaceOp1, InplaceOp2, Layout, Shape, Tensor};
use rayon::prelude::*;

use pulp::{Simd, WithSimd};

use crate::amx::AmxLinear;
use crate::bf16::Bf16Linear;
use crate::int8::QuantLinear;
use crate::int16::Int16Linear;
use crate::kernels::{self, Activation};
use crate::matmul;
use crate::prepared::{Array, Reader, Writer};
use crate::safetensors::{OnDisk, transpose};

type CResult<T> = candle_core::Result<T>;

/// What the encoder needs from `config.json`.
#[derive(Debug, Clone)]
pub(crate) struct EncoderConfig {
    pub(crate) hidden: usize,
    pub(crate) heads: usize,
    pub(crate) layers: usize,
    pub(crate) eps: f32,
    pub(crate) activation: Activation,
    /// Position of the first token: 0 for BERT, `pad_token_id + 1` for (XLM-)RoBERTa.
    pub(crate) position_offset: usize,
}

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
struct Linear {
    f32: Option<F32Weights>,
    int8: Option<QuantLinear>,
    int16: Option<Int16Linear>,
    bf16: Option<AmxLinear>,
    bf16_avx512: Option<Bf16Linear>,
}

impl Linear {
    fn new(w: Tensor) -> Linear {
        Linear {
            f32: Some(F32Weights::Tensor(w)),
            int8: None,
            int16: None,
            bf16: None,
            bf16_avx512: None,
        }
    }

    fn apply(&self, x: &Tensor, precision: Precision) -> CResult<Tensor> {
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
    fn quantize(&mut self, precision: Precision) -> CResult<bool> {
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
    fn dims(&self) -> CResult<(usize, usize)> {
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
    fn save(&self, precision: Precision, w: &mut Writer) -> std::io::Result<()> {
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
    fn forget(&mut self, precision: Precision) {
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
    fn keep(&mut self, precision: Precision) {
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
/// in [`FastEncoder::layer_bf16`]).
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

struct Layer {
    /// `[hidden, 3·hidden]`: query, key and value side by side.
    qkv: Linear,
    qkv_bias: Vec<f32>,
    out: Linear,
    out_bias: Vec<f32>,
    norm1: (Vec<f32>, Vec<f32>),
    up: Linear,
    up_bias: Vec<f32>,
    down: Linear,
    down_bias: Vec<f32>,
    norm2: (Vec<f32>, Vec<f32>),
}

impl Layer {
    fn linears(&mut self) -> [&mut Linear; 4] {
        [&mut self.qkv, &mut self.out, &mut self.up, &mut self.down]
    }
}

/// The linear layers' weights in one precision (f32 included), as a file of
/// [`crate::prepared`] held them: four per layer (attention's query, key and value
/// side by side, its output, the feed-forward's two).
pub(crate) struct PreparedLinears {
    precision: Precision,
    linears: Vec<Linear>,
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

/// The encoder's weights, laid out for the forward pass.
pub(crate) struct FastEncoder {
    cfg: EncoderConfig,
    words: Words,
    vocab: usize,
    positions: Vec<f32>,
    max_positions: usize,
    /// Token type 0's embedding (the only type sentence embeddings use).
    token_type: Vec<f32>,
    norm: (Vec<f32>, Vec<f32>),
    layers: Vec<Layer>,
    precision: Precision,
    arch: pulp::Arch,
}

fn err(msg: impl std::fmt::Display) -> candle_core::Error {
    candle_core::Error::Msg(msg.to_string())
}

/// Finds a tensor under any of the usual prefixes (`bert.`, `roberta.`, none).
struct Weights {
    tensors: HashMap<String, Tensor>,
    on_disk: HashMap<String, OnDisk>,
    /// The linear weights read already transposed to `[in, out]`.
    transposed: HashSet<String>,
    prefix: &'static str,
}

/// The word embeddings, `[vocab, hidden]`.
enum Words {
    /// Loaded (read through the storage, never copied).
    Memory(Tensor),
    /// Left in the model file; each batch reads the rows it uses.
    Disk(OnDisk),
}

const WORDS: &str = "embeddings.word_embeddings.weight";

impl Weights {
    fn new(
        tensors: HashMap<String, Tensor>,
        on_disk: HashMap<String, OnDisk>,
        transposed: HashSet<String>,
    ) -> CResult<Weights> {
        let prefix = ["", "bert.", "roberta.", "model."]
            .into_iter()
            .find(|p| {
                let key = format!("{p}{WORDS}");
                tensors.contains_key(&key) || on_disk.contains_key(&key)
            })
            .ok_or_else(|| err(format!("no {WORDS} tensor")))?;
        Ok(Weights {
            tensors,
            on_disk,
            transposed,
            prefix,
        })
    }

    fn words(&mut self) -> CResult<Words> {
        let key = format!("{}{WORDS}", self.prefix);
        match self.on_disk.remove(&key) {
            Some(d) => Ok(Words::Disk(d)),
            None => Ok(Words::Memory(self.get(WORDS)?.contiguous()?)),
        }
    }

    fn get(&self, name: &str) -> CResult<Tensor> {
        let key = format!("{}{name}", self.prefix);
        let t = self
            .tensors
            .get(&key)
            .ok_or_else(|| err(format!("tensor {key} is missing")))?;
        t.to_dtype(DType::F32)
    }

    fn vec(&self, name: &str, len: usize) -> CResult<Vec<f32>> {
        let v = self.get(name)?.flatten_all()?.to_vec1::<f32>()?;
        if v.len() != len {
            return Err(err(format!("{name}: {} values, expected {len}", v.len())));
        }
        Ok(v)
    }

    /// A LayerNorm's scale and shift (`weight`/`bias`, or the old `gamma`/`beta`).
    fn norm(&self, name: &str, len: usize) -> CResult<(Vec<f32>, Vec<f32>)> {
        match self.vec(&format!("{name}.weight"), len) {
            Ok(w) => Ok((w, self.vec(&format!("{name}.bias"), len)?)),
            Err(_) => Ok((
                self.vec(&format!("{name}.gamma"), len)?,
                self.vec(&format!("{name}.beta"), len)?,
            )),
        }
    }

    /// The weights of the linear layers `names` (each stored `[output, input]`) as `[input,
    /// output]`, set side by side: `[input, names.len() · output]`, contiguous. Weights the
    /// loader read transposed are used as they are; others (a file candle loaded) are
    /// transposed here.
    fn linears(&self, names: &[&str], input: usize, output: usize) -> CResult<Tensor> {
        let mut parts = Vec::with_capacity(names.len());
        for name in names {
            let key = format!("{}{name}.weight", self.prefix);
            let ready = self.transposed.contains(&key);
            let w = self.get(&format!("{name}.weight"))?.contiguous()?;
            let stored = if ready {
                [input, output]
            } else {
                [output, input]
            };
            if w.dims() != stored {
                return Err(err(format!(
                    "{name}.weight has shape {:?}, expected {stored:?}",
                    w.dims()
                )));
            }
            parts.push(if ready {
                w
            } else {
                let values = w.flatten_all()?.to_vec1::<f32>()?;
                Tensor::from_vec(
                    transpose(&values, output, input),
                    (input, output),
                    &candle_core::Device::Cpu,
                )?
            });
        }
        match parts.len() {
            1 => Ok(parts.remove(0)),
            _ => Tensor::cat(&parts, 1)?.contiguous(),
        }
    }
}

impl FastEncoder {
    /// Lays out the weights of a BERT or (XLM-)RoBERTa checkpoint.
    /// `on_disk` may hold the word embeddings left in the model file; `transposed` names the
    /// linear weights read as `[in, out]`; `prepared`, when given, holds the linear layers
    /// (their f32 weights need not have been read), and the encoder runs in its precision.
    pub(crate) fn new(
        tensors: HashMap<String, Tensor>,
        on_disk: HashMap<String, OnDisk>,
        transposed: HashSet<String>,
        cfg: EncoderConfig,
        prepared: Option<PreparedLinears>,
    ) -> CResult<Self> {
        let mut w = Weights::new(tensors, on_disk, transposed)?;
        let h = cfg.hidden;
        if cfg.heads == 0 || !h.is_multiple_of(cfg.heads) {
            return Err(err(format!(
                "hidden size {h} is not a multiple of {} heads",
                cfg.heads
            )));
        }
        let words = w.words()?;
        let (vocab, wh) = match &words {
            Words::Memory(t) => t.dims2()?,
            Words::Disk(d) => d.dims(),
        };
        let positions_t = w.get("embeddings.position_embeddings.weight")?;
        let (max_positions, ph) = positions_t.dims2()?;
        if wh != h || ph != h {
            return Err(err("embedding width differs from hidden_size"));
        }
        let token_type = w
            .get("embeddings.token_type_embeddings.weight")?
            .get(0)?
            .to_vec1::<f32>()?;
        let norm = w.norm("embeddings.LayerNorm", h)?;
        let precision = prepared.as_ref().map_or(Precision::F32, |p| p.precision);
        let mut ready = prepared.map(|p| p.linears.into_iter());
        let mut layers = Vec::with_capacity(cfg.layers);
        for i in 0..cfg.layers {
            let p = format!("encoder.layer.{i}");
            let inter = w.get(&format!("{p}.intermediate.dense.bias"))?.dims1()?;
            // The prepared layer, or the f32 weights read from the checkpoint.
            let mut linear = |names: &[&str], input: usize, output: usize| -> CResult<Linear> {
                let l = match ready.as_mut() {
                    Some(it) => it.next().ok_or_else(|| err("too few prepared layers"))?,
                    None => {
                        let names: Vec<String> = names.iter().map(|n| format!("{p}.{n}")).collect();
                        let names: Vec<&str> = names.iter().map(String::as_str).collect();
                        // Side by side: each of `names` gives its share of the outputs.
                        Linear::new(w.linears(&names, input, output / names.len())?)
                    }
                };
                if l.dims()? != (input, output) {
                    return Err(err(format!(
                        "{p}.{}: weights of shape {:?}, expected {:?}",
                        names[0],
                        l.dims()?,
                        (input, output)
                    )));
                }
                Ok(l)
            };
            let qkv = linear(
                &[
                    "attention.self.query",
                    "attention.self.key",
                    "attention.self.value",
                ],
                h,
                3 * h,
            )?;
            let out = linear(&["attention.output.dense"], h, h)?;
            let up = linear(&["intermediate.dense"], h, inter)?;
            let down = linear(&["output.dense"], inter, h)?;
            let mut qkv_bias = w.vec(&format!("{p}.attention.self.query.bias"), h)?;
            qkv_bias.extend(w.vec(&format!("{p}.attention.self.key.bias"), h)?);
            qkv_bias.extend(w.vec(&format!("{p}.attention.self.value.bias"), h)?);
            layers.push(Layer {
                qkv,
                qkv_bias,
                out,
                out_bias: w.vec(&format!("{p}.attention.output.dense.bias"), h)?,
                norm1: w.norm(&format!("{p}.attention.output.LayerNorm"), h)?,
                up,
                up_bias: w.vec(&format!("{p}.intermediate.dense.bias"), inter)?,
                down,
                down_bias: w.vec(&format!("{p}.output.dense.bias"), h)?,
                norm2: w.norm(&format!("{p}.output.LayerNorm"), h)?,
            });
        }
        Ok(FastEncoder {
            words,
            vocab,
            positions: positions_t.flatten_all()?.to_vec1::<f32>()?,
            max_positions,
            token_type,
            norm,
            layers,
            precision,
            arch: pulp::Arch::new(),
            cfg,
        })
    }

    /// Quantizes the linear layers to `precision` beside their f32 weights; false when this
    /// CPU cannot run its kernels (then the layers keep what they had).
    pub(crate) fn add_precision(&mut self, precision: Precision) -> CResult<bool> {
        for layer in &mut self.layers {
            for linear in layer.linears() {
                if !linear.quantize(precision)? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// The precision the linear layers run in; one other than f32 only after
    /// [`FastEncoder::add_precision`] succeeded for it.
    pub(crate) fn set_precision(&mut self, precision: Precision) {
        self.precision = precision;
    }

    /// The precision the linear layers run in.
    pub(crate) fn precision(&self) -> Precision {
        self.precision
    }

    /// Writes the linear layers in the precision they run in ([`PreparedLinears::read`]
    /// reads them back).
    pub(crate) fn save_prepared(&self, w: &mut Writer) -> std::io::Result<()> {
        w.u64(self.layers.len() as u64 * 4)?;
        for layer in &self.layers {
            for linear in [&layer.qkv, &layer.out, &layer.up, &layer.down] {
                linear.save(self.precision, w)?;
            }
        }
        Ok(())
    }

    /// Frees the weights of `precision` (the f32 ones kept), after a calibration measured it.
    pub(crate) fn forget_precision(&mut self, precision: Precision) {
        for layer in &mut self.layers {
            for linear in layer.linears() {
                linear.forget(precision);
            }
        }
    }

    /// Multiply-adds of the linear layers per token: the work a batch's size is measured in.
    pub(crate) fn macs_per_token(&self) -> usize {
        self.layers
            .iter()
            .map(|l| {
                [&l.qkv, &l.out, &l.up, &l.down]
                    .iter()
                    .map(|x| x.dims().map_or(0, |(k, n)| k * n))
                    .sum::<usize>()
            })
            .sum()
    }

    /// Frees the weights of the precision not in use.
    pub(crate) fn drop_unused(&mut self) {
        let precision = self.precision;
        for layer in &mut self.layers {
            for linear in layer.linears() {
                linear.keep(precision);
            }
        }
    }

    /// The last hidden state, `[n, len, hidden]`, for `n` right-padded sequences of `len` ids
    /// whose attention masks are `mask` (1 = token, 0 = padding).
    pub(crate) fn forward(
        &self,
        ids: &[u32],
        mask: &[u32],
        n: usize,
        len: usize,
    ) -> CResult<Tensor> {
        let h = self.cfg.hidden;
        if ids.len() != n * len || mask.len() != n * len {
            return Err(err("ids and mask must hold n × len values"));
        }
        if len + self.cfg.position_offset > self.max_positions {
            return Err(err(format!(
                "sequence of {len} tokens is longer than the model's {} positions",
                self.max_positions - self.cfg.position_offset
            )));
        }
        // Right padding: each sequence's tokens are its first `valid` positions. The layers
        // run on the real tokens only, packed one sequence after another (`T` rows).
        let valid: Vec<usize> = mask
            .chunks(len.max(1))
            .map(|m| m.iter().take_while(|&&x| x != 0).count())
            .collect();
        let mut offsets = Vec::with_capacity(n);
        let mut packed_ids = Vec::with_capacity(ids.len());
        let mut positions = Vec::with_capacity(ids.len());
        for (seq, &v) in valid.iter().enumerate() {
            offsets.push(packed_ids.len());
            packed_ids.extend_from_slice(&ids[seq * len..seq * len + v]);
            positions.extend(0..v);
        }
        let rows = packed_ids.len();
        let mut x = vec![0.0f32; rows * h];
        let arch = self.arch;
        let per = rows_per_task(rows);
        // The word rows: the table itself, or the rows this batch uses read from the file
        // (`word_ids` then index those rows).
        let guard;
        let gathered;
        let (words, word_ids): (&[f32], &[u32]) = match &self.words {
            Words::Memory(t) => {
                guard = t.storage_and_layout();
                let candle_core::Storage::Cpu(storage) = &*guard.0 else {
                    return Err(err("word embeddings are not in CPU memory"));
                };
                (
                    contiguous_f32(storage, guard.1, "word embeddings")?,
                    &packed_ids,
                )
            }
            Words::Disk(d) => {
                gathered = gather_rows(d, &packed_ids, self.vocab, h)?;
                (&gathered.0, &gathered.1)
            }
        };
        x.par_chunks_mut(h * per)
            .enumerate()
            .for_each(|(task, block)| {
                arch.dispatch(EmbedRows {
                    enc: self,
                    words,
                    ids: &word_ids[task * per..],
                    positions: &positions[task * per..],
                    block,
                });
            });
        let mut x = Tensor::from_vec(x, (rows, h), &candle_core::Device::Cpu)?;
        let seqs = Sequences {
            offsets: &offsets,
            lens: &valid,
        };
        for layer in &self.layers {
            x = self.layer(layer, &x, seqs)?;
        }
        // Back to `[n, len, hidden]`, padding rows zero.
        let packed = x.flatten_all()?.to_vec1::<f32>()?;
        let mut out = vec![0.0f32; n * len * h];
        for (seq, (&o, &v)) in offsets.iter().zip(&valid).enumerate() {
            out[seq * len * h..][..v * h].copy_from_slice(&packed[o * h..(o + v) * h]);
        }
        Tensor::from_vec(out, (n, len, h), &candle_core::Device::Cpu)
    }

    fn layer(&self, l: &Layer, x: &Tensor, seqs: Sequences<'_>) -> CResult<Tensor> {
        if let (Precision::Bf16, Some(qkv), Some(out), Some(up), Some(down)) = (
            self.precision,
            &l.qkv.bf16,
            &l.out.bf16,
            &l.up.bf16,
            &l.down.bf16,
        ) {
            return self.layer_bf16(l, [qkv, out, up, down], x, seqs);
        }
        let (h, heads) = (self.cfg.hidden, self.cfg.heads);
        let d = h / heads;
        let arch = self.arch;
        let p = self.precision;
        let qkv = l.qkv.apply(x, p)?;
        let context = qkv.apply_op1_no_bwd(&Attention {
            bias: &l.qkv_bias,
            seqs,
            heads,
            d,
            arch,
            bf16: false,
        })?;
        let attended = l.out.apply(&context, p)?;
        attended.inplace_op2(
            x,
            &AddNorm {
                bias: &l.out_bias,
                norm: &l.norm1,
                eps: self.cfg.eps,
                arch,
            },
        )?;
        let up = l.up.apply(&attended, p)?;
        up.inplace_op1(&BiasActivation {
            bias: &l.up_bias,
            activation: self.cfg.activation,
            arch,
        })?;
        let down = l.down.apply(&up, p)?;
        down.inplace_op2(
            &attended,
            &AddNorm {
                bias: &l.down_bias,
                norm: &l.norm2,
                eps: self.cfg.eps,
                arch,
            },
        )?;
        Ok(down)
    }
}

impl FastEncoder {
    /// [`FastEncoder::layer`] on AMX tiles, with each product's bias, activation, residual
    /// and LayerNorm applied to its rows as soon as a strip of them is computed (still in
    /// cache), instead of in a pass of their own over the whole batch.
    fn layer_bf16(
        &self,
        l: &Layer,
        [qkv, out, up, down]: [&AmxLinear; 4],
        x: &Tensor,
        seqs: Sequences<'_>,
    ) -> CResult<Tensor> {
        let (h, heads) = (self.cfg.hidden, self.cfg.heads);
        let arch = self.arch;
        let (guard, layout) = x.storage_and_layout();
        let candle_core::Storage::Cpu(storage) = &*guard else {
            return Err(err("hidden states are not in CPU memory"));
        };
        let x = contiguous_f32(storage, layout, "hidden states")?;
        let rows = x.len() / h;
        let attention = Attention {
            bias: &l.qkv_bias,
            seqs,
            heads,
            d: h / heads,
            arch,
            bf16: true,
        };
        let context = attention.run(&qkv.forward(x, rows))?;
        let eps = self.cfg.eps;
        fn add_norm<'a>(
            op: AddNorm<'a>,
            residual: &'a [f32],
            h: usize,
        ) -> impl Fn(usize, &mut [f32]) + Sync + 'a {
            move |first, block| {
                op.arch.dispatch(NormRows {
                    op: &op,
                    block,
                    residual: &residual[first * h..],
                });
            }
        }
        let op1 = AddNorm {
            bias: &l.out_bias,
            norm: &l.norm1,
            eps,
            arch,
        };
        let attended = out.forward_then(&context, rows, &add_norm(op1, x, h));
        let act = BiasActivation {
            bias: &l.up_bias,
            activation: self.cfg.activation,
            arch,
        };
        let up = up.forward_then(&attended, rows, &|_, block: &mut [f32]| {
            arch.dispatch(ActRows { op: &act, block });
        });
        let op2 = AddNorm {
            bias: &l.down_bias,
            norm: &l.norm2,
            eps,
            arch,
        };
        let down = down.forward_then(&up, rows, &add_norm(op2, &attended, h));
        Tensor::from_vec(down, (rows, h), &candle_core::Device::Cpu)
    }
}

/// The rows of `ids` (clamped to the vocabulary), each read once: the rows side by side, and
/// each id's index among them.
fn gather_rows(d: &OnDisk, ids: &[u32], vocab: usize, h: usize) -> CResult<(Vec<f32>, Vec<u32>)> {
    let mut slot: rustc_hash::FxHashMap<u32, u32> = Default::default();
    let mut table = Vec::new();
    let mut local = Vec::with_capacity(ids.len());
    for &id in ids {
        let id = id.min(vocab.saturating_sub(1) as u32);
        let next = slot.len() as u32;
        let s = *slot.entry(id).or_insert(next);
        if s == next {
            table.resize(table.len() + h, 0.0);
            d.read_row(id as usize, &mut table[s as usize * h..])
                .map_err(|e| err(format!("reading word embeddings from the model file: {e}")))?;
        }
        local.push(s);
    }
    Ok((table, local))
}

/// Rows handed to one rayon task: enough work to amortise the hand-off.
fn rows_per_task(rows: usize) -> usize {
    (rows / (rayon::current_num_threads() * 8)).max(1)
}

fn contiguous_f32<'a>(s: &'a CpuStorage, l: &Layout, what: &str) -> CResult<&'a [f32]> {
    let CpuStorage::F32(v) = s else {
        return Err(err(format!("{what}: expected f32")));
    };
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&v[a..b]),
        None => Err(err(format!("{what}: expected a contiguous tensor"))),
    }
}

fn contiguous_f32_mut<'a>(s: &'a mut CpuStorage, l: &Layout, what: &str) -> CResult<&'a mut [f32]> {
    let CpuStorage::F32(v) = s else {
        return Err(err(format!("{what}: expected f32")));
    };
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&mut v[a..b]),
        None => Err(err(format!("{what}: expected a contiguous tensor"))),
    }
}

// Each kernel runs as a `WithSimd` whose body pulp compiles for the CPU's instruction set: the
// kernels are `#[inline(always)]`, so they are inlined into it (a closure would not be).

/// Word + position + token-type embeddings, then LayerNorm, for a block of rows.
struct EmbedRows<'a> {
    enc: &'a FastEncoder,
    /// `[rows, hidden]`: the rows `ids` index.
    words: &'a [f32],
    ids: &'a [u32],
    positions: &'a [usize],
    block: &'a mut [f32],
}

impl WithSimd for EmbedRows<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        let e = self.enc;
        let h = e.cfg.hidden;
        let rows = self.block.chunks_exact_mut(h);
        for ((out, &id), &t) in rows.zip(self.ids).zip(self.positions) {
            let id = (id as usize).min(self.words.len() / h - 1);
            let pos = t + e.cfg.position_offset;
            let word = &self.words[id * h..(id + 1) * h];
            let position = &e.positions[pos * h..(pos + 1) * h];
            for (((o, a), b), c) in out.iter_mut().zip(word).zip(position).zip(&e.token_type) {
                *o = a + b + c;
            }
            kernels::layer_norm(out, &e.norm.0, &e.norm.1, e.cfg.eps);
        }
    }
}

/// Self-attention from the fused query/key/value projection `[T, 3·hidden]` of packed
/// sequences (bias not yet added) to the heads' contexts side by side, `[T, hidden]`: one
/// sequence per rayon task.
struct Attention<'a> {
    bias: &'a [f32],
    seqs: Sequences<'a>,
    heads: usize,
    d: usize,
    arch: pulp::Arch,
    /// Both products in bf16 on AMX tiles, head by head (the linear layers run there too).
    bf16: bool,
}

impl CustomOp1 for Attention<'_> {
    fn name(&self) -> &'static str {
        "linkly-attention"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> CResult<(CpuStorage, Shape)> {
        let qkv = contiguous_f32(s, l, self.name())?;
        let h = self.heads * self.d;
        let out = self.run(qkv)?;
        let rows = out.len() / h;
        Ok((CpuStorage::F32(out), Shape::from((rows, h))))
    }
}

impl Attention<'_> {
    /// The heads' contexts `[T, hidden]` of the projection `qkv` (`[T, 3·hidden]`).
    fn run(&self, qkv: &[f32]) -> CResult<Vec<f32>> {
        let h = self.heads * self.d;
        let rows = qkv.len() / (3 * h);
        if rows * 3 * h != qkv.len() || self.seqs.lens.iter().sum::<usize>() != rows {
            return Err(err("linkly-attention: unexpected input shape"));
        }
        let mut out = vec![0.0f32; rows * h];
        // Each sequence's rows, as disjoint blocks of `out`.
        let mut blocks = Vec::with_capacity(self.seqs.lens.len());
        let mut rest = out.as_mut_slice();
        for &len in self.seqs.lens {
            let (block, tail) = rest.split_at_mut(len * h);
            blocks.push(block);
            rest = tail;
        }
        blocks
            .into_par_iter()
            .enumerate()
            .try_for_each(|(seq, dst)| self.sequence(qkv, seq, dst))?;
        Ok(out)
    }

    /// One sequence, all heads: `softmax(Q·Kᵀ/√d)·V` as two `gemm` products per head (called
    /// from a rayon task), the softmax in place between them, the heads written side by side
    /// into the sequence's rows `dst`.
    fn sequence(&self, qkv: &[f32], seq: usize, dst: &mut [f32]) -> CResult<()> {
        let (heads, d) = (self.heads, self.d);
        let h = heads * d;
        let (first, len) = (self.seqs.offsets[seq], self.seqs.lens[seq]);
        if len == 0 {
            return Ok(());
        }
        let scale = 1.0 / (d as f32).sqrt();
        if self.bf16 {
            return self.sequence_bf16(&qkv[first * 3 * h..(first + len) * 3 * h], scale, dst);
        }
        // `[heads, len, d]`, bias added (and the queries scaled).
        let gather = |part: usize, factor: f32| {
            let mut m = Vec::with_capacity(heads * len * d);
            for head in 0..heads {
                let bias = &self.bias[part * h + head * d..][..d];
                for t in 0..len {
                    let from = (first + t) * 3 * h + part * h + head * d;
                    m.extend(
                        qkv[from..from + d]
                            .iter()
                            .zip(bias)
                            .map(|(x, b)| (x + b) * factor),
                    );
                }
            }
            m
        };
        let (q, k, v) = (gather(0, scale), gather(1, 1.0), gather(2, 1.0));
        let shape = |_| err("linkly-attention: unexpected product shape");
        let mut scores = vec![0.0f32; heads * len * len];
        for (head, s) in scores.chunks_exact_mut(len * len).enumerate() {
            let rows = head * len * d..(head + 1) * len * d;
            let q = matmul::View::rows(&q[rows.clone()], len, d);
            let k = matmul::View::rows(&k[rows], len, d).t();
            matmul::product(q, k, s).map_err(shape)?;
        }
        self.arch.dispatch(SoftmaxRows {
            scores: &mut scores,
            width: len,
            valid: len,
        });
        let mut context = vec![0.0f32; len * d];
        for (head, s) in scores.chunks_exact(len * len).enumerate() {
            let v = matmul::View::rows(&v[head * len * d..(head + 1) * len * d], len, d);
            matmul::product(matmul::View::rows(s, len, len), v, &mut context).map_err(shape)?;
            for (t, row) in context.chunks_exact(d).enumerate() {
                dst[t * h + head * d..][..d].copy_from_slice(row);
            }
        }
        Ok(())
    }

    /// [`Attention::sequence`] with both products on AMX tiles, one head at a time: the keys
    /// (transposed) and the values are packed as the weights of an [`AmxLinear`], the scores
    /// and the weights of the softmax rounded to bf16 as its inputs; sums in f32.
    /// `rows` are the sequence's rows of `qkv` (`len ≥ 1` of them), `scale` the queries'.
    fn sequence_bf16(&self, rows: &[f32], scale: f32, dst: &mut [f32]) -> CResult<()> {
        let (heads, d) = (self.heads, self.d);
        let h = heads * d;
        let len = rows.len() / (3 * h);
        let unavailable = || err("AMX tiles are not available");
        // The keys' width, rounded up to whole blocks: the scores' rows are that wide (zeros
        // past `len`), and so many value rows (zeros past `len`) take them.
        let wide = len.div_ceil(32) * 32;
        let mut q = vec![0.0f32; len * d];
        let mut k = vec![0.0f32; len * d];
        let mut v = vec![0.0f32; wide * d];
        for head in 0..heads {
            let at = head * d;
            let bias = |part: usize| &self.bias[part * h + at..part * h + at + d];
            let (qb, kb, vb) = (bias(0), bias(1), bias(2));
            for (t, row) in rows.chunks_exact(3 * h).enumerate() {
                let part = |p: usize| &row[p * h + at..p * h + at + d];
                let out = t * d..(t + 1) * d;
                for ((o, x), b) in q[out.clone()].iter_mut().zip(part(0)).zip(qb) {
                    *o = (x + b) * scale;
                }
                for ((o, x), b) in k[out.clone()].iter_mut().zip(part(1)).zip(kb) {
                    *o = x + b;
                }
                for ((o, x), b) in v[out].iter_mut().zip(part(2)).zip(vb) {
                    *o = x + b;
                }
            }
            let keys = AmxLinear::new_transposed(&k, d, len).ok_or_else(unavailable)?;
            debug_assert_eq!(keys.padded_outputs(), wide);
            let mut scores = keys.forward_padded(&q, len);
            self.arch.dispatch(SoftmaxRows {
                scores: &mut scores,
                width: wide,
                valid: len,
            });
            let values = AmxLinear::new(&v, wide, d).ok_or_else(unavailable)?;
            let context = values.forward(&scores, len);
            for (t, row) in context.chunks_exact(d).enumerate() {
                dst[t * h + at..][..d].copy_from_slice(row);
            }
        }
        Ok(())
    }
}

/// Where each sequence's rows are in a packed batch.
#[derive(Clone, Copy)]
struct Sequences<'a> {
    offsets: &'a [usize],
    lens: &'a [usize],
}

/// Softmax over each row of `width` scores, of which the first `valid` count.
struct SoftmaxRows<'a> {
    scores: &'a mut [f32],
    width: usize,
    /// The scores of each row that count (zeros after them).
    valid: usize,
}

impl WithSimd for SoftmaxRows<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        for row in self.scores.chunks_exact_mut(self.width) {
            kernels::masked_softmax(row, self.valid);
        }
    }
}

/// `x = act(x + bias)` on each row.
struct BiasActivation<'a> {
    bias: &'a [f32],
    activation: Activation,
    arch: pulp::Arch,
}

struct ActRows<'a> {
    op: &'a BiasActivation<'a>,
    block: &'a mut [f32],
}

impl WithSimd for ActRows<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        let width = self.op.bias.len();
        for row in self.block.chunks_exact_mut(width) {
            kernels::bias_activation(row, self.op.bias, self.op.activation);
        }
    }
}

impl InplaceOp1 for BiasActivation<'_> {
    fn name(&self) -> &'static str {
        "linkly-bias-activation"
    }

    fn cpu_fwd(&self, s: &mut CpuStorage, l: &Layout) -> CResult<()> {
        let x = contiguous_f32_mut(s, l, self.name())?;
        let width = self.bias.len();
        let per = rows_per_task(x.len() / width.max(1));
        x.par_chunks_mut(width * per).for_each(|block| {
            self.arch.dispatch(ActRows { op: self, block });
        });
        Ok(())
    }
}

/// `x = LayerNorm(x + bias + residual)` on each row.
struct AddNorm<'a> {
    bias: &'a [f32],
    norm: &'a (Vec<f32>, Vec<f32>),
    eps: f32,
    arch: pulp::Arch,
}

struct NormRows<'a> {
    op: &'a AddNorm<'a>,
    block: &'a mut [f32],
    residual: &'a [f32],
}

impl WithSimd for NormRows<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        let op = self.op;
        let width = op.bias.len();
        let rows = self.block.chunks_exact_mut(width);
        for (row, r) in rows.zip(self.residual.chunks_exact(width)) {
            kernels::add_layer_norm(row, op.bias, r, &op.norm.0, &op.norm.1, op.eps);
        }
    }
}

impl InplaceOp2 for AddNorm<'_> {
    fn name(&self) -> &'static str {
        "linkly-add-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &mut CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> CResult<()> {
        let x = contiguous_f32_mut(s1, l1, self.name())?;
        let residual = contiguous_f32(s2, l2, self.name())?;
        if x.len() != residual.len() {
            return Err(err("linkly-add-norm: residual of another shape"));
        }
        let width = self.bias.len();
        let per = rows_per_task(x.len() / width.max(1));
        x.par_chunks_mut(width * per)
            .zip(residual.par_chunks(width * per))
            .for_each(|(block, residual)| {
                self.arch.dispatch(NormRows {
                    op: self,
                    block,
                    residual,
                });
            });
        Ok(())
    }
}
