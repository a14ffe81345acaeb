//! A BERT / XLM-RoBERTa encoder forward pass tuned for CPUs, on candle tensors.
//!
//! The f32 matrix products are `gemm`'s (with its AVX-512 kernels turned on), called through
//! [`crate::matmul::product`] rather than candle's `Tensor::matmul`, which reads `/proc/cpuinfo` at
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

mod attention;
mod checkpoint;
mod layer;
mod precision;

use std::collections::{HashMap, HashSet};

use candle_core::{CpuStorage, Layout, Tensor};
use pulp::{Simd, WithSimd};
use rayon::prelude::*;

pub(crate) use self::precision::{Precision, PreparedLinears};

use self::attention::Sequences;
use self::checkpoint::{Weights, Words, gather_rows};
use self::layer::Layer;
use self::precision::Linear;
use crate::kernels::{self, Activation};
use crate::prepared::Writer;
use crate::safetensors::OnDisk;

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
