//! One encoder layer: its weights and its pass (attention, output projection, feed-forward),
//! with the fused in-place steps between the products (bias + activation, bias + residual +
//! LayerNorm).

use candle_core::{CpuStorage, InplaceOp1, InplaceOp2, Layout, Tensor};
use pulp::{Simd, WithSimd};
use rayon::prelude::*;

use super::attention::{Attention, Sequences};
use super::precision::{Linear, Precision};
use super::{CResult, FastEncoder, contiguous_f32, contiguous_f32_mut, err, rows_per_task};
use crate::amx::AmxLinear;
use crate::kernels::{self, Activation};

pub(super) struct Layer {
    /// `[hidden, 3·hidden]`: query, key and value side by side.
    pub(super) qkv: Linear,
    pub(super) qkv_bias: Vec<f32>,
    pub(super) out: Linear,
    pub(super) out_bias: Vec<f32>,
    pub(super) norm1: (Vec<f32>, Vec<f32>),
    pub(super) up: Linear,
    pub(super) up_bias: Vec<f32>,
    pub(super) down: Linear,
    pub(super) down_bias: Vec<f32>,
    pub(super) norm2: (Vec<f32>, Vec<f32>),
}

impl Layer {
    pub(super) fn linears(&mut self) -> [&mut Linear; 4] {
        [&mut self.qkv, &mut self.out, &mut self.up, &mut self.down]
    }
}

impl FastEncoder {
    pub(super) fn layer(&self, l: &Layer, x: &Tensor, seqs: Sequences<'_>) -> CResult<Tensor> {
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
