//! CTranslate2's `model.bin` (binary format version 6, as faster-whisper's models are published)
//! read and re-laid into the Hugging Face names candle's Whisper loads.
//!
//! The file is: `u32` version, the spec's name (`u16` length with its NUL, bytes, NUL), a
//! `u32` revision, a `u32` variable count, then per variable its name, a `u8` rank, one `u32`
//! per dimension, a `u8` data type, a `u32` byte count and the bytes; then a `u32` alias count
//! and the alias pairs. All integers are little-endian.
//!
//! CTranslate2 fuses the self-attention's query, key and value into one `linear_0` (rows
//! `[q; k; v]`) and the cross-attention's key and value into `linear_1` (rows `[k; v]`); the
//! key has no bias in Whisper (CTranslate2 stores zeros), so the split drops it.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};

use crate::whisper::{HfConfig, WhisperError};

/// One variable of a `model.bin`: its shape, type and raw little-endian bytes.
#[derive(Debug)]
pub(crate) struct Variable {
    pub(crate) shape: Vec<usize>,
    pub(crate) dtype: u8,
    pub(crate) bytes: Vec<u8>,
}

/// A parsed `model.bin`: the spec's name and its variables by name (aliases resolved).
#[derive(Debug)]
pub(crate) struct Ct2Model {
    pub(crate) spec: String,
    pub(crate) variables: HashMap<String, Variable>,
}

/// CTranslate2's data type codes (`ctranslate2::DataType`).
const FLOAT32: u8 = 0;
const INT8: u8 = 1;
const INT16: u8 = 2;
const INT32: u8 = 3;
const FLOAT16: u8 = 4;
const BFLOAT16: u8 = 5;

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.bytes.len())
            .ok_or_else(|| format!("truncated at byte {} (wanted {n} more)", self.at))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn string(&mut self) -> Result<String, String> {
        let n = self.u16()? as usize;
        let b = self.take(n)?;
        let b = b.strip_suffix(&[0]).unwrap_or(b);
        String::from_utf8(b.to_vec()).map_err(|_| "a name is not UTF-8".to_string())
    }
}

/// The spec name of a `model.bin` (`WhisperSpec`, `TransformerSpec`, ...), read from its first
/// bytes, or `None` when the head is not a CTranslate2 model of a known version.
pub(crate) fn spec_name(head: &[u8]) -> Option<String> {
    let mut r = Reader { bytes: head, at: 0 };
    let version = r.u32().ok()?;
    if !(1..=6).contains(&version) {
        return None;
    }
    r.string().ok()
}

/// Parses a whole `model.bin`.
pub(crate) fn parse(bytes: &[u8]) -> Result<Ct2Model, String> {
    let mut r = Reader { bytes, at: 0 };
    let version = r.u32()?;
    if version != 6 {
        return Err(format!(
            "binary version {version}; this reader knows version 6 (CTranslate2 3.x and 4.x)"
        ));
    }
    let spec = r.string()?;
    let _revision = r.u32()?;
    let count = r.u32()? as usize;
    let mut variables = HashMap::with_capacity(count);
    for _ in 0..count {
        let name = r.string()?;
        let rank = r.u8()? as usize;
        let mut shape = Vec::with_capacity(rank);
        for _ in 0..rank {
            shape.push(r.u32()? as usize);
        }
        let dtype = r.u8()?;
        let len = r.u32()? as usize;
        let data = r.take(len)?.to_vec();
        let width = match dtype {
            FLOAT32 | INT32 => 4,
            INT16 | FLOAT16 | BFLOAT16 => 2,
            INT8 => 1,
            other => return Err(format!("{name}: unknown data type {other}")),
        };
        if shape.iter().product::<usize>() * width != len {
            return Err(format!(
                "{name}: {len} bytes do not hold a {shape:?} array of {width}-byte values"
            ));
        }
        variables.insert(
            name,
            Variable {
                shape,
                dtype,
                bytes: data,
            },
        );
    }
    // Aliases (the output projection is the token embedding): nothing to copy, candle ties them.
    Ok(Ct2Model { spec, variables })
}

impl Ct2Model {
    fn get(&self, name: &str) -> Result<&Variable, String> {
        self.variables
            .get(name)
            .ok_or_else(|| format!("the variable {name} is missing"))
    }

    fn tensor(&self, name: &str, dev: &Device) -> Result<Tensor, String> {
        let v = self.get(name)?;
        let dtype = match v.dtype {
            FLOAT32 => DType::F32,
            FLOAT16 => DType::F16,
            BFLOAT16 => DType::BF16,
            other => {
                return Err(format!(
                    "{name} is quantized (type {other}); convert the model with float16 or float32 weights"
                ));
            }
        };
        Tensor::from_raw_buffer(&v.bytes, dtype, &v.shape, dev).map_err(|e| e.to_string())
    }

    fn scalar(&self, name: &str) -> Result<usize, String> {
        let v = self.get(name)?;
        match (v.dtype, v.bytes.as_slice()) {
            (INT8, [a]) => Ok(*a as usize),
            (INT16, [a, b]) => Ok(u16::from_le_bytes([*a, *b]) as usize),
            (INT32, [a, b, c, d]) => Ok(u32::from_le_bytes([*a, *b, *c, *d]) as usize),
            _ => Err(format!("{name} is not an integer scalar")),
        }
    }

    fn layers(&self, side: &str) -> usize {
        (0..)
            .take_while(|i| {
                self.variables
                    .contains_key(&format!("{side}/layer_{i}/ffn/linear_0/weight"))
            })
            .count()
    }

    fn dims(&self, name: &str) -> Result<&[usize], String> {
        Ok(&self.get(name)?.shape)
    }
}

/// The Hugging Face configuration of a CTranslate2 Whisper model, from its variables' shapes.
fn config_of(
    m: &Ct2Model,
    suppress: Vec<u32>,
    begin_suppress: Vec<u32>,
) -> Result<HfConfig, String> {
    let conv1 = m.dims("encoder/conv1/weight")?;
    let emb = m.dims("decoder/embeddings/weight")?;
    let enc_pos = m.dims("encoder/position_encodings/encodings")?;
    let dec_pos = m.dims("decoder/position_encodings/encodings")?;
    let (&[d_model, n_mels, _], &[vocab, _]) = (conv1, emb) else {
        return Err("conv1 or the embeddings have an unexpected shape".into());
    };
    Ok(HfConfig {
        model_type: "whisper".into(),
        num_mel_bins: n_mels,
        max_source_positions: enc_pos[0],
        d_model,
        encoder_attention_heads: m.scalar("encoder/num_heads")?,
        encoder_layers: m.layers("encoder"),
        vocab_size: vocab,
        max_target_positions: dec_pos[0],
        decoder_attention_heads: m.scalar("decoder/num_heads")?,
        decoder_layers: m.layers("decoder"),
        suppress_tokens: suppress,
        begin_suppress_tokens: begin_suppress,
    })
}

/// The CTranslate2 `config.json` fields the decoder needs: the tokens always suppressed and
/// those suppressed at the first step.
#[derive(Debug, serde::Deserialize, Default)]
struct Ct2Config {
    #[serde(default)]
    suppress_ids: Vec<u32>,
    #[serde(default)]
    suppress_ids_begin: Vec<u32>,
}

/// Converts a CTranslate2 Whisper folder (`model.bin`, `config.json`, `tokenizer.json`) into
/// `out` in Hugging Face layout: `model.safetensors` (the weights as stored, f16 or f32),
/// `config.json`, `tokenizer.json`.
pub(crate) fn convert(src: &Path, out: &Path) -> Result<HfConfig, WhisperError> {
    let bad = |what: String| WhisperError::BadModel {
        path: src.join("model.bin"),
        what,
    };
    let bytes = fs_err::read(src.join("model.bin"))?;
    let model = parse(&bytes).map_err(bad)?;
    drop(bytes);
    if model.spec != "WhisperSpec" {
        return Err(bad(format!("its spec is {}, not WhisperSpec", model.spec)));
    }
    let ct2_config: Ct2Config = match fs_err::read(src.join("config.json")) {
        Ok(b) => serde_json::from_slice(&b).map_err(|e| WhisperError::BadModel {
            path: src.join("config.json"),
            what: e.to_string(),
        })?,
        Err(_) => Ct2Config::default(),
    };
    let config = config_of(
        &model,
        ct2_config.suppress_ids,
        ct2_config.suppress_ids_begin,
    )
    .map_err(bad)?;
    let tensors = relay(&model, &config).map_err(bad)?;
    candle_core::safetensors::save(&tensors, out.join("model.safetensors"))
        .map_err(|e| WhisperError::Model(e.to_string()))?;
    fs_err::write(
        out.join("config.json"),
        serde_json::to_vec_pretty(&config).unwrap_or_default(),
    )?;
    fs_err::copy(src.join("tokenizer.json"), out.join("tokenizer.json"))?;
    Ok(config)
}

/// The variables under their Hugging Face names, fused projections split.
fn relay(m: &Ct2Model, c: &HfConfig) -> Result<HashMap<String, Tensor>, String> {
    let dev = Device::Cpu;
    let d = c.d_model;
    let mut out: HashMap<String, Tensor> = HashMap::new();
    let mut put = |name: String, t: Tensor| {
        out.insert(name, t);
    };
    let t = |name: &str| m.tensor(name, &dev);
    let rows = |t: &Tensor, from: usize, n: usize| -> Result<Tensor, String> {
        t.narrow(0, from, n)
            .and_then(|x| x.contiguous())
            .map_err(|e| e.to_string())
    };
    let norm = |put: &mut dyn FnMut(String, Tensor), from: &str, to: &str| -> Result<(), String> {
        put(format!("{to}.weight"), t(&format!("{from}/gamma"))?);
        put(format!("{to}.bias"), t(&format!("{from}/beta"))?);
        Ok(())
    };
    let linear =
        |put: &mut dyn FnMut(String, Tensor), from: &str, to: &str| -> Result<(), String> {
            put(format!("{to}.weight"), t(&format!("{from}/weight"))?);
            put(format!("{to}.bias"), t(&format!("{from}/bias"))?);
            Ok(())
        };
    for conv in ["conv1", "conv2"] {
        linear(
            &mut put,
            &format!("encoder/{conv}"),
            &format!("model.encoder.{conv}"),
        )?;
    }
    norm(&mut put, "encoder/layer_norm", "model.encoder.layer_norm")?;
    norm(&mut put, "decoder/layer_norm", "model.decoder.layer_norm")?;
    put(
        "model.decoder.embed_tokens.weight".into(),
        t("decoder/embeddings/weight")?,
    );
    put(
        "model.decoder.embed_positions.weight".into(),
        t("decoder/position_encodings/encodings")?,
    );
    for (side, layers) in [("encoder", c.encoder_layers), ("decoder", c.decoder_layers)] {
        for i in 0..layers {
            let from = format!("{side}/layer_{i}");
            let to = format!("model.{side}.layers.{i}");
            // Self-attention: [q; k; v] in one projection.
            let w = t(&format!("{from}/self_attention/linear_0/weight"))?;
            let b = t(&format!("{from}/self_attention/linear_0/bias"))?;
            put(format!("{to}.self_attn.q_proj.weight"), rows(&w, 0, d)?);
            put(format!("{to}.self_attn.q_proj.bias"), rows(&b, 0, d)?);
            put(format!("{to}.self_attn.k_proj.weight"), rows(&w, d, d)?);
            put(format!("{to}.self_attn.v_proj.weight"), rows(&w, 2 * d, d)?);
            put(format!("{to}.self_attn.v_proj.bias"), rows(&b, 2 * d, d)?);
            linear(
                &mut put,
                &format!("{from}/self_attention/linear_1"),
                &format!("{to}.self_attn.out_proj"),
            )?;
            norm(
                &mut put,
                &format!("{from}/self_attention/layer_norm"),
                &format!("{to}.self_attn_layer_norm"),
            )?;
            if side == "decoder" {
                // Cross-attention: the query alone, then [k; v] in one projection.
                linear(
                    &mut put,
                    &format!("{from}/attention/linear_0"),
                    &format!("{to}.encoder_attn.q_proj"),
                )?;
                let w = t(&format!("{from}/attention/linear_1/weight"))?;
                let b = t(&format!("{from}/attention/linear_1/bias"))?;
                put(format!("{to}.encoder_attn.k_proj.weight"), rows(&w, 0, d)?);
                put(format!("{to}.encoder_attn.v_proj.weight"), rows(&w, d, d)?);
                put(format!("{to}.encoder_attn.v_proj.bias"), rows(&b, d, d)?);
                linear(
                    &mut put,
                    &format!("{from}/attention/linear_2"),
                    &format!("{to}.encoder_attn.out_proj"),
                )?;
                norm(
                    &mut put,
                    &format!("{from}/attention/layer_norm"),
                    &format!("{to}.encoder_attn_layer_norm"),
                )?;
            }
            linear(
                &mut put,
                &format!("{from}/ffn/linear_0"),
                &format!("{to}.fc1"),
            )?;
            linear(
                &mut put,
                &format!("{from}/ffn/linear_1"),
                &format!("{to}.fc2"),
            )?;
            norm(
                &mut put,
                &format!("{from}/ffn/layer_norm"),
                &format!("{to}.final_layer_norm"),
            )?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&((s.len() + 1) as u16).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
        out.push(0);
    }

    fn variable(out: &mut Vec<u8>, name: &str, shape: &[u32], dtype: u8, data: &[u8]) {
        string(out, name);
        out.push(shape.len() as u8);
        for d in shape {
            out.extend_from_slice(&d.to_le_bytes());
        }
        out.push(dtype);
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(data);
    }

    /// A made-up `model.bin`: the reader parses names, shapes, types and bytes, and refuses a
    /// variable whose byte count does not match its shape, or a cut file.
    #[test]
    fn reads_a_synthetic_model_bin() {
        let mut b = Vec::new();
        b.extend_from_slice(&6u32.to_le_bytes());
        string(&mut b, "WhisperSpec");
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&2u32.to_le_bytes());
        let floats: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        variable(&mut b, "encoder/x/weight", &[3, 2], FLOAT32, &floats);
        variable(&mut b, "encoder/num_heads", &[], INT16, &6u16.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        assert_eq!(spec_name(&b).as_deref(), Some("WhisperSpec"));
        let m = parse(&b).unwrap();
        assert_eq!(m.spec, "WhisperSpec");
        assert_eq!(m.scalar("encoder/num_heads").unwrap(), 6);
        let t = m.tensor("encoder/x/weight", &Device::Cpu).unwrap();
        assert_eq!(t.dims(), &[3, 2]);
        let second_row = t.narrow(0, 1, 1).unwrap().flatten_all().unwrap();
        assert_eq!(second_row.to_vec1::<f32>().unwrap(), vec![3.0, 4.0]);
        assert!(parse(&b[..b.len() - 10]).unwrap_err().contains("truncated"));
        let mut wrong = b.clone();
        wrong[0] = 5;
        assert!(parse(&wrong).unwrap_err().contains("version 5"));
        assert_eq!(spec_name(b"not a model"), None);
    }
}
