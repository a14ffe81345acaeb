//! Loading a model folder: the configuration, the tokenizer, the weights (read straight into
//! the fast encoder's layout, or through candle for candle-transformers' models), the prepared
//! file when there is one, then pooling, normalisation and prefixes.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use candle_transformers::models::{bert, xlm_roberta};

use super::precision::wanted_precision;
use super::prepared_cache::{Prepared, prepared_cache, save_prepared};
use super::tokenizer::TextTokenizer;
use super::{Embedder, Encoder, Engine, Pooling, model_error};
use crate::Result;
use crate::calibration::{self, Fingerprint};
use crate::encoder::{EncoderConfig, FastEncoder, Precision};
use crate::kernels::Activation;
use crate::safetensors::Placement;
use crate::unigram::MappedUnigram;

/// The files a model folder must hold.
pub(crate) const MODEL_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The fast encoder's settings from `config.json`, when it covers the architecture.
pub(super) fn fast_config(config: &serde_json::Value, model_type: &str) -> Option<EncoderConfig> {
    let get = |k: &str| config[k].as_u64().map(|v| v as usize);
    let position_offset = match model_type {
        "bert" => 0,
        "xlm-roberta" | "roberta" => get("pad_token_id").unwrap_or(1) + 1,
        _ => return None,
    };
    if config["position_embedding_type"]
        .as_str()
        .is_some_and(|t| t != "absolute")
    {
        return None;
    }
    Some(EncoderConfig {
        hidden: get("hidden_size")?,
        heads: get("num_attention_heads")?,
        layers: get("num_hidden_layers")?,
        eps: config["layer_norm_eps"].as_f64().unwrap_or(1e-12) as f32,
        activation: Activation::from_config(config["hidden_act"].as_str().unwrap_or("gelu"))?,
        position_offset,
    })
}

/// Where the fast encoder wants each matrix of the file: the word embeddings left in the file
/// (a batch reads the rows it uses), the linear layers' weights read as `[in, out]`, the rest
/// as stored.
pub(super) fn fast_placement(name: &str) -> Placement {
    if name.ends_with("embeddings.word_embeddings.weight") {
        Placement::Disk
    } else if name.contains("encoder.layer.") {
        Placement::Transposed
    } else {
        Placement::Memory
    }
}

/// [`fast_placement`] when the linear layers come prepared: their f32 weights are not read.
fn prepared_placement(name: &str) -> Placement {
    match fast_placement(name) {
        Placement::Transposed => Placement::Skip,
        other => other,
    }
}

fn read_json(path: &Path) -> Option<serde_json::Value> {
    let text = fs_err::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// The query and passage prefixes a model expects: E5 models want `query: ` and `passage: `.
pub(crate) fn prefixes_for(name: &str) -> (&'static str, &'static str) {
    let lower = name.to_ascii_lowercase();
    if lower.contains("e5-") || lower.contains("/e5") {
        ("query: ", "passage: ")
    } else {
        ("", "")
    }
}

impl Embedder {
    /// Loads the model in `dir`. `name` (a hub id or folder name) decides the prefixes, unless the
    /// folder's `linkly.json` declares `query_prefix` / `passage_prefix`. `cache` is where its
    /// prepared files go when `dir` is read-only.
    pub(crate) fn load(dir: &Path, name: &str, cache: Option<&Path>) -> Result<Embedder> {
        Self::load_with(dir, name, Engine::from_env(), cache)
    }

    /// [`Embedder::load`] with the forward pass chosen.
    pub(crate) fn load_with(
        dir: &Path,
        name: &str,
        engine: Engine,
        cache: Option<&Path>,
    ) -> Result<Embedder> {
        for f in MODEL_FILES {
            if !dir.join(f).is_file() {
                return Err(model_error(dir, format!("{f} is missing")));
            }
        }
        Self::load_parts(dir, name, engine, cache)
    }

    fn load_parts(
        dir: &Path,
        name: &str,
        engine: Engine,
        cache_dir: Option<&Path>,
    ) -> Result<Embedder> {
        let device = Device::Cpu;
        let config_text = fs_err::read_to_string(dir.join("config.json"))?;
        let config: serde_json::Value = serde_json::from_str(&config_text)
            .map_err(|e| model_error(dir, format!("config.json: {e}")))?;
        let model_type = config["model_type"].as_str().unwrap_or("bert").to_string();
        let weights: PathBuf = dir.join("model.safetensors");
        let fast = match engine {
            Engine::Fast
            | Engine::FastF32
            | Engine::FastInt8
            | Engine::FastInt16
            | Engine::FastBf16
            | Engine::FastBf16Amx
            | Engine::FastBf16Avx512 => fast_config(&config, &model_type),
            Engine::Reference => None,
        };
        // Where prepared files are looked for: beside the model, then in the data directory's
        // cache (where they go when the model's folder is read-only).
        let places: Vec<&Path> = std::iter::once(dir).chain(cache_dir).collect();
        let started = std::time::Instant::now();
        // The default engine runs the precision measured fastest here (`calibration.rs`); when
        // nothing was measured on this CPU, the model loads in f32 and is measured below.
        let here = (engine == Engine::Fast && fast.is_some()).then(Fingerprint::here);
        let (wanted, calibrate) = match &here {
            Some(h) => match places
                .iter()
                .find_map(|p| calibration::cached(p, &weights, h))
            {
                Some(p) => (p, false),
                None => (Precision::F32, true),
            },
            None => (wanted_precision(engine), false),
        };
        // The linear layers already rounded and packed for this precision and the tokenizer's
        // vocabulary, when an earlier load left them (`prepared.rs`): nothing to read twice
        // or compute.
        let prepared = match &fast {
            Some(cfg) => places.iter().find_map(|p| {
                prepared_cache(p, dir, wanted)?
                    .load(|r| Prepared::read(r, wanted, cfg.layers))
                    .flatten()
            }),
            None => None,
        };
        let (prepared, mapped_tokenizer) = match prepared {
            Some(p) => (Some(p.linears), p.tokenizer),
            None => (None, None),
        };
        // The tokenizer: from the prepared file, else `tokenizer.json` (keeping what a
        // prepared file needs of it).
        let (tokenizer, unigram) = match mapped_tokenizer {
            Some(t) => (TextTokenizer::Mapped(Box::new(t)), None),
            None => {
                let (t, parts) =
                    crate::tokenizer_file::read_with_parts(&dir.join("tokenizer.json"))
                        .map_err(|e| model_error(dir, format!("tokenizer.json: {e}")))?;
                (TextTokenizer::Json(Box::new(t)), parts)
            }
        };
        let place = if prepared.is_some() {
            prepared_placement
        } else {
            fast_placement
        };
        // An all-f32 file is read straight into the layout the fast encoder uses; anything
        // else through candle, which reads the file whole and converts the types.
        let direct = match fast {
            Some(_) => crate::safetensors::load_f32(&weights, place)
                .map_err(|e| model_error(dir, format!("model.safetensors: {e}")))?,
            None => None,
        };
        let (tensors, on_disk, transposed) = match direct {
            Some(l) => (l.tensors, l.on_disk, l.transposed),
            None => (
                candle_core::safetensors::load(&weights, &device)
                    .map_err(|e| model_error(dir, format!("model.safetensors: {e}")))?,
                HashMap::new(),
                HashSet::new(),
            ),
        };
        if let Some(cfg) = fast {
            let dim = cfg.hidden;
            let usable = config["max_position_embeddings"]
                .as_u64()
                .map_or(512, |v| v as usize)
                .saturating_sub(cfg.position_offset);
            let from_cache = prepared.is_some();
            let encoder = FastEncoder::new(tensors, on_disk, transposed, cfg, prepared)
                .map_err(|e| model_error(dir, format!("loading weights: {e}")))?;
            let mut embedder = Self::finish(
                dir,
                name,
                &config,
                tokenizer,
                Encoder::Fast(encoder),
                dim,
                usable,
            )?;
            embedder
                .choose_precision(wanted)
                .map_err(|e| model_error(dir, format!("quantizing weights: {e}")))?;
            embedder.prepared = from_cache;
            let mut wanted = wanted;
            let mut from_cache = from_cache;
            if let (true, Some(here)) = (calibrate, here) {
                let c = embedder.calibrate(&weights, here)?;
                if let Err(e) = calibration::save(dir, &c) {
                    match cache_dir {
                        Some(other) => {
                            if let Err(e) = calibration::save(other, &c) {
                                tracing::debug!(error = %e, "calibration not saved");
                            }
                        }
                        None => tracing::debug!(error = %e, "calibration not saved"),
                    }
                }
                let chosen = embedder.precision_in_use().unwrap_or(Precision::F32);
                if chosen != wanted {
                    wanted = chosen;
                    from_cache = false;
                    embedder.prepared = false;
                }
            }
            tracing::debug!(
                ms = started.elapsed().as_secs_f64() * 1e3,
                precision = wanted.name(),
                prepared = from_cache,
                "model loaded"
            );
            if let (false, Encoder::Fast(fast)) = (from_cache, &embedder.encoder)
                && fast.precision() == wanted
            {
                let vocabulary = unigram
                    .as_ref()
                    .map(|u| (u.rest.as_str(), MappedUnigram::build(&u.pieces, u.unk_id)));
                save_prepared(&places, dir, wanted, |w| {
                    fast.save_prepared(w)?;
                    Prepared::save_tokenizer(w, vocabulary.as_ref())
                });
            }
            return Ok(embedder);
        }
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &device);
        let (encoder, dim, max_positions) = match model_type.as_str() {
            "bert" => {
                let cfg: bert::Config = serde_json::from_str(&config_text)
                    .map_err(|e| model_error(dir, format!("config.json: {e}")))?;
                let m = bert::BertModel::load(vb, &cfg)
                    .map_err(|e| model_error(dir, format!("loading BERT weights: {e}")))?;
                (
                    Encoder::Bert(m),
                    cfg.hidden_size,
                    cfg.max_position_embeddings,
                )
            }
            "xlm-roberta" | "roberta" => {
                let cfg: xlm_roberta::Config = serde_json::from_str(&config_text)
                    .map_err(|e| model_error(dir, format!("config.json: {e}")))?;
                let vb = if vb.contains_tensor("roberta.embeddings.word_embeddings.weight") {
                    vb.pp("roberta")
                } else {
                    vb
                };
                let m = xlm_roberta::XLMRobertaModel::new(&cfg, vb)
                    .map_err(|e| model_error(dir, format!("loading XLM-R weights: {e}")))?;
                // Positions start after the padding index.
                let usable = cfg
                    .max_position_embeddings
                    .saturating_sub(cfg.pad_token_id as usize + 1);
                (Encoder::XlmRoberta(m), cfg.hidden_size, usable)
            }
            other => {
                return Err(model_error(
                    dir,
                    format!("model_type {other:?} is not supported (bert or xlm-roberta)"),
                ));
            }
        };

        Self::finish(dir, name, &config, tokenizer, encoder, dim, max_positions)
    }

    /// Tokenizer, pooling, normalisation and prefixes: the same whatever runs the model.
    fn finish(
        dir: &Path,
        name: &str,
        config: &serde_json::Value,
        mut tokenizer: TextTokenizer,
        encoder: Encoder,
        dim: usize,
        max_positions: usize,
    ) -> Result<Embedder> {
        // What the encoders run on (`load_parts` reads the weights onto the same).
        let device = Device::Cpu;
        let max_seq = read_json(&dir.join("sentence_bert_config.json"))
            .and_then(|v| v["max_seq_length"].as_u64())
            .map_or(512, |n| n as usize)
            .min(max_positions)
            .max(8);
        let pad_id = ["[PAD]", "<pad>"]
            .iter()
            .find_map(|t| tokenizer.token_to_id(t))
            .unwrap_or(0);
        tokenizer
            .unpadded()
            .map_err(|e| model_error(dir, format!("tokenizer truncation: {e}")))?;

        let pooling = read_json(&dir.join("1_Pooling/config.json"))
            .map(|v| {
                if v["pooling_mode_cls_token"].as_bool() == Some(true)
                    && v["pooling_mode_mean_tokens"].as_bool() != Some(true)
                {
                    Pooling::Cls
                } else {
                    Pooling::Mean
                }
            })
            .unwrap_or(Pooling::Mean);
        let normalize = read_json(&dir.join("modules.json"))
            .and_then(|v| {
                v.as_array().map(|mods| {
                    mods.iter()
                        .any(|m| m["type"].as_str().is_some_and(|t| t.ends_with("Normalize")))
                })
            })
            .unwrap_or(true);
        let declared = read_json(&dir.join("linkly.json"));
        // E5 models need prefixes: known by the name, or by the config's `_name_or_path`.
        let origin = config["_name_or_path"].as_str().unwrap_or_default();
        let (q, p) = match prefixes_for(name) {
            ("", "") => prefixes_for(origin),
            known => known,
        };
        let query_prefix = declared
            .as_ref()
            .and_then(|v| v["query_prefix"].as_str())
            .unwrap_or(q)
            .to_string();
        let passage_prefix = declared
            .as_ref()
            .and_then(|v| v["passage_prefix"].as_str())
            .unwrap_or(p)
            .to_string();
        Ok(Embedder {
            encoder,
            tokenizer,
            pooling,
            normalize,
            query_prefix,
            passage_prefix,
            dim,
            max_seq,
            pad_id,
            device,
            prepared: false,
        })
    }
}
