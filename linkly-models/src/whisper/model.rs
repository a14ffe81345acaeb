//! Whisper's network (openai-whisper's `model.py`), with the decoder's self-attention keys and
//! values kept between steps.
//!
//! candle-transformers' model recomputes the decoder over every token written so far at each
//! step (it caches only the audio's keys and values), so writing `n` tokens costs `n²/2` token
//! passes. Here a [`State`] holds, for one decoding, each layer's keys and values of the tokens
//! already seen and the audio's keys and values (computed once per 30-second window by
//! [`Decoder::cross`] and shared by the language detection and every temperature of the
//! fallback): a step passes only the new tokens. The weights are the same Hugging Face names as
//! candle's model (`model.encoder.*`, `model.decoder.*`), and the arithmetic the same, its
//! tanh-approximated GELU included, so transcripts do not change; `cached_decoding_matches_the_full_pass`
//! checks the two against each other.

use candle_core::{D, Device, Module as _, Result, Tensor};
use candle_nn::{Conv1d, Conv1dConfig, Embedding, LayerNorm, Linear, VarBuilder};

use crate::whisper::HfConfig;

fn linear(i: usize, o: usize, bias: bool, vb: VarBuilder) -> Result<Linear> {
    let w = vb.get((o, i), "weight")?;
    let b = if bias { Some(vb.get(o, "bias")?) } else { None };
    Ok(Linear::new(w, b))
}

fn layer_norm(size: usize, vb: VarBuilder) -> Result<LayerNorm> {
    Ok(LayerNorm::new(
        vb.get(size, "weight")?,
        vb.get(size, "bias")?,
        1e-5,
    ))
}

fn conv1d(i: usize, o: usize, stride: usize, vb: VarBuilder) -> Result<Conv1d> {
    let cfg = Conv1dConfig {
        padding: 1,
        stride,
        groups: 1,
        dilation: 1,
        cudnn_fwd_algo: None,
    };
    Ok(Conv1d::new(
        vb.get((o, i, 3), "weight")?,
        Some(vb.get(o, "bias")?),
        cfg,
    ))
}

/// Query, key, value and output projections of one attention.
#[derive(Debug, Clone)]
struct Attention {
    query: Linear,
    key: Linear,
    value: Linear,
    out: Linear,
    n_head: usize,
}

impl Attention {
    fn load(n_state: usize, n_head: usize, vb: VarBuilder) -> Result<Attention> {
        Ok(Attention {
            query: linear(n_state, n_state, true, vb.pp("q_proj"))?,
            key: linear(n_state, n_state, false, vb.pp("k_proj"))?,
            value: linear(n_state, n_state, true, vb.pp("v_proj"))?,
            out: linear(n_state, n_state, true, vb.pp("out_proj"))?,
            n_head,
        })
    }

    /// `(batch, ctx, state)` → `(batch, head, ctx, state / head)`.
    fn heads(&self, x: &Tensor) -> Result<Tensor> {
        let (b, n, s) = x.dims3()?;
        x.reshape((b, n, self.n_head, s / self.n_head))?
            .transpose(1, 2)?
            .contiguous()
    }

    /// `d^-1/4`: applied to the queries and to the keys, as openai-whisper does.
    fn scale(&self, x: &Tensor) -> f64 {
        let s = x.dim(D::Minus1).unwrap_or(1);
        ((s / self.n_head) as f64).powf(-0.25)
    }

    /// Keys (scaled, by head) and values (by head) of `x`.
    fn keys_values(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        let k = (self.heads(&self.key.forward(x)?)? * self.scale(x))?;
        let v = self.heads(&self.value.forward(x)?)?;
        Ok((k, v))
    }

    /// Attention of `x`'s queries over the keys `k` and values `v` (by head), with an additive
    /// mask `(n_q, n_k)` when given.
    fn attend(&self, x: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>) -> Result<Tensor> {
        let q = (self.heads(&self.query.forward(x)?)? * self.scale(x))?;
        let mut qk = q.matmul(&k.transpose(2, 3)?)?;
        if let Some(mask) = mask {
            qk = qk.broadcast_add(mask)?;
        }
        let w = candle_nn::ops::softmax_last_dim(&qk)?;
        let wv = w.matmul(v)?.transpose(1, 2)?.flatten_from(2)?;
        self.out.forward(&wv)
    }
}

/// The feed-forward part of a block.
#[derive(Debug, Clone)]
struct Mlp {
    ln: LayerNorm,
    fc1: Linear,
    fc2: Linear,
}

impl Mlp {
    fn load(n_state: usize, vb: &VarBuilder) -> Result<Mlp> {
        Ok(Mlp {
            ln: layer_norm(n_state, vb.pp("final_layer_norm"))?,
            fc1: linear(n_state, 4 * n_state, true, vb.pp("fc1"))?,
            fc2: linear(4 * n_state, n_state, true, vb.pp("fc2"))?,
        })
    }

    /// `x + mlp(x)`.
    fn residual(&self, x: &Tensor) -> Result<Tensor> {
        let h = self
            .fc2
            .forward(&self.fc1.forward(&self.ln.forward(x)?)?.gelu()?)?;
        x + h
    }
}

fn sinusoids(length: usize, channels: usize, device: &Device) -> Result<Tensor> {
    let increment = 10000f32.ln() / (channels / 2 - 1) as f32;
    let mut data = Vec::with_capacity(length * channels);
    for t in 0..length {
        let scaled = (0..channels / 2).map(|i| t as f32 * (-(i as f32) * increment).exp());
        let scaled: Vec<f32> = scaled.collect();
        data.extend(scaled.iter().map(|x| x.sin()));
        data.extend(scaled.iter().map(|x| x.cos()));
    }
    Tensor::from_vec(data, (length, channels), device)
}

/// The audio encoder: two convolutions, then blocks of self-attention.
#[derive(Debug, Clone)]
pub(crate) struct Encoder {
    conv1: Conv1d,
    conv2: Conv1d,
    positions: Tensor,
    blocks: Vec<(LayerNorm, Attention, Mlp)>,
    ln_post: LayerNorm,
}

impl Encoder {
    fn load(vb: VarBuilder, c: &HfConfig) -> Result<Encoder> {
        let n = c.d_model;
        let blocks = (0..c.encoder_layers)
            .map(|i| {
                let vb = vb.pp(format!("layers.{i}"));
                Ok((
                    layer_norm(n, vb.pp("self_attn_layer_norm"))?,
                    Attention::load(n, c.encoder_attention_heads, vb.pp("self_attn"))?,
                    Mlp::load(n, &vb)?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Encoder {
            conv1: conv1d(c.num_mel_bins, n, 1, vb.pp("conv1"))?,
            conv2: conv1d(n, n, 2, vb.pp("conv2"))?,
            positions: sinusoids(c.max_source_positions, n, vb.device())?,
            blocks,
            ln_post: layer_norm(n, vb.pp("layer_norm"))?,
        })
    }

    /// `(1, n_mels, 3000)` mel frames → `(1, 1500, d_model)` audio features.
    pub(crate) fn forward(&self, mel: &Tensor) -> Result<Tensor> {
        let x = self.conv1.forward(mel)?.gelu()?;
        let x = self.conv2.forward(&x)?.gelu()?.transpose(1, 2)?;
        let (_, len, _) = x.dims3()?;
        let mut x = x.broadcast_add(&self.positions.narrow(0, 0, len)?)?;
        for (ln, attn, mlp) in &self.blocks {
            let h = ln.forward(&x)?;
            let (k, v) = attn.keys_values(&h)?;
            x = (&x + attn.attend(&h, &k, &v, None)?)?;
            x = mlp.residual(&x)?;
        }
        self.ln_post.forward(&x)
    }
}

#[derive(Debug, Clone)]
struct DecoderBlock {
    self_ln: LayerNorm,
    self_attn: Attention,
    cross_ln: LayerNorm,
    cross_attn: Attention,
    mlp: Mlp,
}

/// The text decoder.
#[derive(Debug, Clone)]
pub(crate) struct Decoder {
    embedding: Embedding,
    positions: Tensor,
    blocks: Vec<DecoderBlock>,
    ln: LayerNorm,
    max_positions: usize,
}

/// The audio's keys and values for every decoder layer: one 30-second window's.
#[derive(Debug, Clone)]
pub(crate) struct Cross(Vec<(Tensor, Tensor)>);

/// One decoding in progress: the keys and values of the tokens seen so far, per layer.
#[derive(Debug, Clone)]
pub(crate) struct State {
    cross: Cross,
    seen: Vec<Option<(Tensor, Tensor)>>,
    len: usize,
}

impl State {
    /// How many tokens the decoder has seen.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Decoder {
    fn load(vb: VarBuilder, c: &HfConfig) -> Result<Decoder> {
        let n = c.d_model;
        let heads = c.decoder_attention_heads;
        let blocks = (0..c.decoder_layers)
            .map(|i| {
                let vb = vb.pp(format!("layers.{i}"));
                Ok(DecoderBlock {
                    self_ln: layer_norm(n, vb.pp("self_attn_layer_norm"))?,
                    self_attn: Attention::load(n, heads, vb.pp("self_attn"))?,
                    cross_ln: layer_norm(n, vb.pp("encoder_attn_layer_norm"))?,
                    cross_attn: Attention::load(n, heads, vb.pp("encoder_attn"))?,
                    mlp: Mlp::load(n, &vb)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Decoder {
            embedding: Embedding::new(vb.pp("embed_tokens").get((c.vocab_size, n), "weight")?, n),
            positions: vb.get((c.max_target_positions, n), "embed_positions.weight")?,
            blocks,
            ln: layer_norm(n, vb.pp("layer_norm"))?,
            max_positions: c.max_target_positions,
        })
    }

    /// The audio's keys and values, once per window.
    pub(crate) fn cross(&self, audio: &Tensor) -> Result<Cross> {
        self.blocks
            .iter()
            .map(|b| b.cross_attn.keys_values(audio))
            .collect::<Result<Vec<_>>>()
            .map(Cross)
    }

    /// A decoding that has seen no token yet.
    pub(crate) fn start(&self, cross: &Cross) -> State {
        State {
            cross: cross.clone(),
            seen: vec![None; self.blocks.len()],
            len: 0,
        }
    }

    /// Passes `tokens` (the ones after those `state` has seen) and returns their hidden states
    /// `(1, tokens.len(), d_model)`, final LayerNorm applied.
    pub(crate) fn forward(&self, state: &mut State, tokens: &[u32]) -> Result<Tensor> {
        let n = tokens.len();
        let past = state.len;
        if past + n > self.max_positions {
            candle_core::bail!(
                "the decoder takes {} tokens, not {}",
                self.max_positions,
                past + n
            );
        }
        let device = self.positions.device();
        let ids = Tensor::new(tokens, device)?.unsqueeze(0)?;
        let mut x = self
            .embedding
            .forward(&ids)?
            .broadcast_add(&self.positions.narrow(0, past, n)?)?;
        // New token i sees the past and the new tokens up to itself.
        let mask = (n > 1)
            .then(|| {
                let m: Vec<f32> = (0..n)
                    .flat_map(|i| {
                        (0..past + n).map(
                            move |j| {
                                if j > past + i { f32::NEG_INFINITY } else { 0.0 }
                            },
                        )
                    })
                    .collect();
                Tensor::from_vec(m, (n, past + n), device)
            })
            .transpose()?;
        for (i, b) in self.blocks.iter().enumerate() {
            let h = b.self_ln.forward(&x)?;
            let (k, v) = b.self_attn.keys_values(&h)?;
            let (k, v) = match &state.seen[i] {
                Some((pk, pv)) => (Tensor::cat(&[pk, &k], 2)?, Tensor::cat(&[pv, &v], 2)?),
                None => (k, v),
            };
            x = (&x + b.self_attn.attend(&h, &k, &v, mask.as_ref())?)?;
            state.seen[i] = Some((k, v));
            let (ck, cv) = &state.cross.0[i];
            x = (&x
                + b.cross_attn
                    .attend(&b.cross_ln.forward(&x)?, ck, cv, None)?)?;
            x = b.mlp.residual(&x)?;
        }
        state.len += n;
        self.ln.forward(&x)
    }

    /// The logits of one position's hidden state `(1, 1, d_model)`: the output projection is
    /// the token embedding, transposed.
    pub(crate) fn logits(&self, hidden: &Tensor) -> Result<Vec<f32>> {
        hidden
            .flatten_all()?
            .unsqueeze(0)?
            .matmul(&self.embedding.embeddings().t()?)?
            .squeeze(0)?
            .to_vec1::<f32>()
    }
}

/// Encoder and decoder.
#[derive(Debug, Clone)]
pub(crate) struct Model {
    pub(crate) encoder: Encoder,
    pub(crate) decoder: Decoder,
}

impl Model {
    pub(crate) fn load(vb: &VarBuilder, c: &HfConfig) -> Result<Model> {
        Ok(Model {
            encoder: Encoder::load(vb.pp("model.encoder"), c)?,
            decoder: Decoder::load(vb.pp("model.decoder"), c)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use candle_core::{DType, IndexOp};
    use candle_transformers::models::whisper::model::Whisper as CandleWhisper;

    use super::*;

    /// A tiny Whisper with random weights, in both implementations.
    fn tiny() -> (Model, CandleWhisper, HfConfig) {
        let c = HfConfig {
            model_type: "whisper".into(),
            num_mel_bins: 8,
            max_source_positions: 16,
            d_model: 16,
            encoder_attention_heads: 2,
            encoder_layers: 2,
            vocab_size: 40,
            max_target_positions: 12,
            decoder_attention_heads: 2,
            decoder_layers: 2,
            suppress_tokens: Vec::new(),
            begin_suppress_tokens: Vec::new(),
        };
        let varmap = candle_nn::VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
        // candle's model creates every weight through the VarMap; ours reads the same ones.
        CandleWhisper::load(&vb, c.candle()).unwrap();
        // Random values everywhere (LayerNorms and positions start as constants).
        for var in varmap.all_vars() {
            let t = Tensor::randn(0f32, 0.5, var.shape(), &Device::Cpu).unwrap();
            var.set(&t).unwrap();
        }
        let theirs = CandleWhisper::load(&vb, c.candle()).unwrap();
        let ours = Model::load(&vb, &c).unwrap();
        (ours, theirs, c)
    }

    fn close(a: &[f32], b: &[f32]) -> f32 {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }

    #[test]
    fn cached_decoding_matches_the_full_pass() {
        let (ours, mut theirs, c) = tiny();
        let mel = Tensor::randn(0f32, 1.0, (1, c.num_mel_bins, 32), &Device::Cpu).unwrap();
        let audio = ours.encoder.forward(&mel).unwrap();
        let expected = theirs.encoder.forward(&mel, true).unwrap();
        let d = close(
            &audio.flatten_all().unwrap().to_vec1().unwrap(),
            &expected.flatten_all().unwrap().to_vec1().unwrap(),
        );
        assert!(d < 1e-4, "encoder differs by {d}");

        let tokens = [3u32, 7, 1, 30, 12, 5, 9];
        let cross = ours.decoder.cross(&audio).unwrap();
        let mut state = ours.decoder.start(&cross);
        // The prompt at once, then one token at a time.
        let mut rows = Vec::new();
        let h = ours.decoder.forward(&mut state, &tokens[..3]).unwrap();
        for p in 0..3 {
            rows.push(ours.decoder.logits(&h.i((.., p..p + 1)).unwrap()).unwrap());
        }
        for t in &tokens[3..] {
            let h = ours.decoder.forward(&mut state, &[*t]).unwrap();
            rows.push(ours.decoder.logits(&h).unwrap());
        }
        assert_eq!(state.len(), tokens.len());
        let input = Tensor::new(&tokens[..], &Device::Cpu)
            .unwrap()
            .unsqueeze(0)
            .unwrap();
        let full = theirs.decoder.forward(&input, &audio, true).unwrap();
        for (p, row) in rows.iter().enumerate() {
            let want = theirs
                .decoder
                .final_linear(&full.i((..1, p..p + 1)).unwrap())
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1::<f32>()
                .unwrap();
            let d = close(row, &want);
            assert!(d < 1e-4, "position {p}: logits differ by {d}");
        }
        // Past the decoder's context: an error, not a panic.
        let mut state = ours.decoder.start(&cross);
        assert!(ours.decoder.forward(&mut state, &[1; 13]).is_err());
    }
}
