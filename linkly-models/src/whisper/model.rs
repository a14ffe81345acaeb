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

use std::sync::Arc;

use candle_core::{Device, Module as _, Result, Tensor};
use candle_nn::{Conv1d, Conv1dConfig, LayerNorm};

use crate::whisper::HfConfig;
use crate::whisper::attention;
use crate::whisper::linear::Linear;
use crate::whisper::weights::{Source, Table};

fn layer_norm(size: usize, name: &str, src: &mut Source) -> Result<LayerNorm> {
    Ok(LayerNorm::new(
        src.tensor(&format!("{name}.weight"), &[size])?,
        src.tensor(&format!("{name}.bias"), &[size])?,
        1e-5,
    ))
}

fn conv1d(i: usize, o: usize, stride: usize, name: &str, src: &mut Source) -> Result<Conv1d> {
    let cfg = Conv1dConfig {
        padding: 1,
        stride,
        groups: 1,
        dilation: 1,
        cudnn_fwd_algo: None,
    };
    Ok(Conv1d::new(
        src.tensor(&format!("{name}.weight"), &[o, i, 3])?,
        Some(src.tensor(&format!("{name}.bias"), &[o])?),
        cfg,
    ))
}

/// Query, key, value and output projections of one attention.
#[derive(Debug)]
struct Attention {
    query: Linear,
    key: Linear,
    value: Linear,
    out: Linear,
    n_head: usize,
}

impl Attention {
    fn load(n_state: usize, n_head: usize, name: &str, src: &mut Source) -> Result<Attention> {
        Ok(Attention {
            query: src.linear(&format!("{name}.q_proj"), n_state, n_state, true)?,
            key: src.linear(&format!("{name}.k_proj"), n_state, n_state, false)?,
            value: src.linear(&format!("{name}.v_proj"), n_state, n_state, true)?,
            out: src.linear(&format!("{name}.out_proj"), n_state, n_state, true)?,
            n_head,
        })
    }
    /// Keys and values of the rows `x` (rows of `state` values each, heads side by side).
    fn keys_values(&self, x: &[f32]) -> (Vec<f32>, Vec<f32>) {
        let rows = x.len() / self.key.inputs();
        (self.key.product(x, rows), self.value.product(x, rows))
    }

    /// Attention of the rows `x`'s queries over the keys `k` and values `v` (causal after
    /// `past` tokens when given), through the output projection: as many rows as `x`.
    fn attend(&self, x: &[f32], k: &[f32], v: &[f32], causal: Option<usize>) -> Vec<f32> {
        let width = self.query.inputs();
        let rows = x.len() / width;
        let q = self.query.product(x, rows);
        let context = attention::attend(&q, k, v, self.n_head, width, causal);
        self.out.product(&context, rows)
    }
}

/// The values of a tensor, row-major.
fn values(x: &Tensor) -> Result<Vec<f32>> {
    x.flatten_all()?.to_vec1::<f32>()
}

/// `x + rows`, `rows` laid out as `x`.
fn add(x: &Tensor, rows: Vec<f32>) -> Result<Tensor> {
    x + Tensor::from_vec(rows, x.shape(), x.device())?
}

/// The feed-forward part of a block.
#[derive(Debug)]
struct Mlp {
    ln: LayerNorm,
    fc1: Linear,
    fc2: Linear,
}

impl Mlp {
    fn load(n_state: usize, name: &str, src: &mut Source) -> Result<Mlp> {
        Ok(Mlp {
            ln: layer_norm(n_state, &format!("{name}.final_layer_norm"), src)?,
            fc1: src.linear(&format!("{name}.fc1"), n_state, 4 * n_state, true)?,
            fc2: src.linear(&format!("{name}.fc2"), 4 * n_state, n_state, true)?,
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
#[derive(Debug)]
pub(crate) struct Encoder {
    conv1: Conv1d,
    conv2: Conv1d,
    positions: Tensor,
    blocks: Vec<(LayerNorm, Attention, Mlp)>,
    ln_post: LayerNorm,
}

impl Encoder {
    fn load(name: &str, c: &HfConfig, src: &mut Source) -> Result<Encoder> {
        let n = c.d_model;
        let conv1 = conv1d(c.num_mel_bins, n, 1, &format!("{name}.conv1"), src)?;
        let conv2 = conv1d(n, n, 2, &format!("{name}.conv2"), src)?;
        let blocks = (0..c.encoder_layers)
            .map(|i| {
                let name = format!("{name}.layers.{i}");
                Ok((
                    layer_norm(n, &format!("{name}.self_attn_layer_norm"), src)?,
                    Attention::load(
                        n,
                        c.encoder_attention_heads,
                        &format!("{name}.self_attn"),
                        src,
                    )?,
                    Mlp::load(n, &name, src)?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Encoder {
            conv1,
            conv2,
            positions: sinusoids(c.max_source_positions, n, &src.device())?,
            blocks,
            ln_post: layer_norm(n, &format!("{name}.layer_norm"), src)?,
        })
    }

    /// `(1, n_mels, 3000)` mel frames → `(1, 1500, d_model)` audio features.
    pub(crate) fn forward(&self, mel: &Tensor) -> Result<Tensor> {
        let x = self.conv1.forward(mel)?.gelu()?;
        let x = self.conv2.forward(&x)?.gelu()?.transpose(1, 2)?;
        let (_, len, _) = x.dims3()?;
        let mut x = x.broadcast_add(&self.positions.narrow(0, 0, len)?)?;
        for (ln, attn, mlp) in &self.blocks {
            let h = values(&ln.forward(&x)?)?;
            let (k, v) = attn.keys_values(&h);
            x = add(&x, attn.attend(&h, &k, &v, None))?;
            x = mlp.residual(&x)?;
        }
        self.ln_post.forward(&x)
    }
}

#[derive(Debug)]
struct DecoderBlock {
    self_ln: LayerNorm,
    self_attn: Attention,
    cross_ln: LayerNorm,
    cross_attn: Attention,
    mlp: Mlp,
}

/// The text decoder.
pub(crate) struct Decoder {
    embedding: Table,
    /// The output projection: the token embedding, transposed.
    projection: Linear,
    positions: Tensor,
    blocks: Vec<DecoderBlock>,
    ln: LayerNorm,
    max_positions: usize,
}

/// The audio's keys and values for every decoder layer (rows of `d_model`): one 30-second
/// window's, shared by the decodings of the window.
#[derive(Debug, Clone)]
pub(crate) struct Cross(Arc<Vec<(Vec<f32>, Vec<f32>)>>);

/// One decoding in progress: the keys and values of the tokens seen so far, per layer.
#[derive(Debug, Clone)]
pub(crate) struct State {
    cross: Cross,
    seen: Vec<(Vec<f32>, Vec<f32>)>,
    len: usize,
}

impl State {
    /// How many tokens the decoder has seen.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Decoder {
    fn load(name: &str, c: &HfConfig, src: &mut Source) -> Result<Decoder> {
        let n = c.d_model;
        let heads = c.decoder_attention_heads;
        let (embedding, projection) =
            src.embedding(&format!("{name}.embed_tokens.weight"), c.vocab_size, n)?;
        let positions = src.tensor(
            &format!("{name}.embed_positions.weight"),
            &[c.max_target_positions, n],
        )?;
        let blocks = (0..c.decoder_layers)
            .map(|i| {
                let name = format!("{name}.layers.{i}");
                Ok(DecoderBlock {
                    self_ln: layer_norm(n, &format!("{name}.self_attn_layer_norm"), src)?,
                    self_attn: Attention::load(n, heads, &format!("{name}.self_attn"), src)?,
                    cross_ln: layer_norm(n, &format!("{name}.encoder_attn_layer_norm"), src)?,
                    cross_attn: Attention::load(n, heads, &format!("{name}.encoder_attn"), src)?,
                    mlp: Mlp::load(n, &name, src)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Decoder {
            embedding,
            projection,
            positions,
            blocks,
            ln: layer_norm(n, &format!("{name}.layer_norm"), src)?,
            max_positions: c.max_target_positions,
        })
    }

    /// The audio's keys and values, once per window.
    pub(crate) fn cross(&self, audio: &Tensor) -> Result<Cross> {
        let audio = values(audio)?;
        Ok(Cross(Arc::new(
            self.blocks
                .iter()
                .map(|b| b.cross_attn.keys_values(&audio))
                .collect(),
        )))
    }

    /// A decoding that has seen no token yet.
    pub(crate) fn start(&self, cross: &Cross) -> State {
        State {
            cross: cross.clone(),
            seen: vec![(Vec::new(), Vec::new()); self.blocks.len()],
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
        let mut x = self
            .embedding
            .rows(tokens, device)?
            .unsqueeze(0)?
            .broadcast_add(&self.positions.narrow(0, past, n)?)?;
        for (i, b) in self.blocks.iter().enumerate() {
            let h = values(&b.self_ln.forward(&x)?)?;
            let (k, v) = b.self_attn.keys_values(&h);
            let (seen_k, seen_v) = &mut state.seen[i];
            seen_k.extend_from_slice(&k);
            seen_v.extend_from_slice(&v);
            // New token i sees the past and the new tokens up to itself.
            x = add(&x, b.self_attn.attend(&h, seen_k, seen_v, Some(past)))?;
            let (ck, cv) = &state.cross.0[i];
            let h = values(&b.cross_ln.forward(&x)?)?;
            x = add(&x, b.cross_attn.attend(&h, ck, cv, None))?;
            x = b.mlp.residual(&x)?;
        }
        state.len += n;
        self.ln.forward(&x)
    }

    /// The logits of one position's hidden state `(1, 1, d_model)`: the output projection is
    /// the token embedding, transposed.
    pub(crate) fn logits(&self, hidden: &Tensor) -> Result<Vec<f32>> {
        let x = hidden.flatten_all()?.to_vec1::<f32>()?;
        Ok(self.projection.product(&x, 1))
    }
}

/// Encoder and decoder.
pub(crate) struct Model {
    pub(crate) encoder: Encoder,
    pub(crate) decoder: Decoder,
}

impl Model {
    /// Walks the network in one fixed order, taking each weight from `src`.
    pub(crate) fn load(src: &mut Source, c: &HfConfig) -> Result<Model> {
        Ok(Model {
            encoder: Encoder::load("model.encoder", c, src)?,
            decoder: Decoder::load("model.decoder", c, src)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use candle_core::{DType, IndexOp};
    use candle_nn::VarBuilder;
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
        let mut src = Source::Checkpoint {
            vb: vb.clone(),
            precision: crate::encoder::Precision::F32,
            record: None,
        };
        let ours = Model::load(&mut src, &c).unwrap();
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
