//! Speech to text with OpenAI's Whisper on candle (`model.rs`: the network, its decoder's
//! keys and values kept between steps; candle-transformers' `models::whisper` for the audio
//! constants and the spectrogram).
//!
//! A model is a folder in Hugging Face layout (`config.json`, `model.safetensors`,
//! `tokenizer.json`). [`import`] makes one from a CTranslate2 folder (`model.bin`,
//! `config.json`, `tokenizer.json`: how faster-whisper's models are published), converted once
//! ([`recognise`] says which layout a folder holds, or what it found instead), or copies a
//! Hugging Face one. [`Whisper::load`] reads it; [`Whisper::transcribe`] turns 16 kHz mono
//! samples into timestamped segments and the detected language (`decode.rs`: 30-second
//! windows, greedy decoding with Whisper's timestamp rules, the temperature fallback, and the
//! no-speech, log-probability and compression-ratio guards that keep silence and music free
//! of invented words). The mel filters are computed (`mel.rs`), not shipped.

mod ct2;
mod decode;
mod mel;
mod model;
mod wer;

use std::path::{Path, PathBuf};
use std::time::Instant;

use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use candle_transformers::models::whisper as m;
use serde::{Deserialize, Serialize};

pub use crate::whisper::wer::{normalised_words, word_error_rate};

/// The sample rate Whisper listens at: callers resample to it.
pub const SAMPLE_RATE: u32 = 16_000;

/// What can go wrong with a Whisper model.
#[derive(Debug, thiserror::Error)]
pub enum WhisperError {
    /// A file could not be read or written (the path is in the message).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The folder holds no Whisper model: what it found, and what was expected.
    #[error("{path} is not a Whisper model: {found}; expected {EXPECTED}")]
    NotWhisper {
        /// The folder.
        path: PathBuf,
        /// What is there instead.
        found: String,
    },
    /// A model file that does not read as it should.
    #[error("{path}: {what}")]
    BadModel {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// The model failed while loading or running.
    #[error("the Whisper model failed: {0}")]
    Model(String),
}

/// The two layouts a Whisper model folder is accepted in, named in error messages.
pub const EXPECTED: &str = "a CTranslate2 folder (model.bin of a WhisperSpec, config.json, tokenizer.json) \
or a Hugging Face folder (model.safetensors, config.json of model_type whisper, tokenizer.json)";

impl From<candle_core::Error> for WhisperError {
    fn from(e: candle_core::Error) -> Self {
        WhisperError::Model(e.to_string())
    }
}

/// The layout of a Whisper model folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// CTranslate2: `model.bin` (a `WhisperSpec`), `config.json`, `tokenizer.json`.
    CTranslate2,
    /// Hugging Face: `model.safetensors`, `config.json` (`model_type: whisper`),
    /// `tokenizer.json`.
    HuggingFace,
}

/// The Hugging Face `config.json` fields a Whisper model is loaded with (candle's
/// `whisper::Config`, plus the tokens the decoder suppresses).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct HfConfig {
    #[serde(default)]
    pub(crate) model_type: String,
    pub(crate) num_mel_bins: usize,
    pub(crate) max_source_positions: usize,
    pub(crate) d_model: usize,
    pub(crate) encoder_attention_heads: usize,
    pub(crate) encoder_layers: usize,
    pub(crate) vocab_size: usize,
    pub(crate) max_target_positions: usize,
    pub(crate) decoder_attention_heads: usize,
    pub(crate) decoder_layers: usize,
    #[serde(default)]
    pub(crate) suppress_tokens: Vec<u32>,
    #[serde(default)]
    pub(crate) begin_suppress_tokens: Vec<u32>,
}

impl HfConfig {
    fn candle(&self) -> m::Config {
        m::Config {
            num_mel_bins: self.num_mel_bins,
            max_source_positions: self.max_source_positions,
            d_model: self.d_model,
            encoder_attention_heads: self.encoder_attention_heads,
            encoder_layers: self.encoder_layers,
            vocab_size: self.vocab_size,
            max_target_positions: self.max_target_positions,
            decoder_attention_heads: self.decoder_attention_heads,
            decoder_layers: self.decoder_layers,
            suppress_tokens: self.suppress_tokens.clone(),
        }
    }

    /// A short name for the model's size, from its shape (`tiny`, `base`, `small`, ...).
    fn size_name(&self) -> &'static str {
        match (self.d_model, self.encoder_layers) {
            (384, 4) => "tiny",
            (512, 6) => "base",
            (768, 12) => "small",
            (1024, 24) => "medium",
            (1280, 32) => "large",
            _ => "custom",
        }
    }
}

/// What a folder holds: a Whisper model in one of the two layouts, or an error saying what it
/// found and what was expected.
pub fn recognise(dir: &Path) -> Result<Layout, WhisperError> {
    let not = |found: String| WhisperError::NotWhisper {
        path: dir.to_path_buf(),
        found,
    };
    if !dir.is_dir() {
        return Err(not("no such folder".into()));
    }
    let has = |f: &str| dir.join(f).is_file();
    let tokenizer = has("tokenizer.json");
    if has("model.bin") {
        let mut head = [0u8; 64];
        let n = std::io::Read::read(&mut fs_err::File::open(dir.join("model.bin"))?, &mut head)?;
        return match ct2::spec_name(&head[..n]) {
            Some(spec) if spec == "WhisperSpec" && tokenizer && has("config.json") => {
                Ok(Layout::CTranslate2)
            }
            Some(spec) if spec == "WhisperSpec" => Err(not(
                "a CTranslate2 Whisper model.bin without its config.json or tokenizer.json".into(),
            )),
            Some(spec) => Err(not(format!("a CTranslate2 model of another kind ({spec})"))),
            None => Err(not("a model.bin that is not a CTranslate2 model".into())),
        };
    }
    if has("model.safetensors") && has("config.json") {
        let config: serde_json::Value =
            serde_json::from_slice(&fs_err::read(dir.join("config.json"))?)
                .map_err(|e| not(format!("a config.json that is not JSON ({e})")))?;
        let kind = config
            .get("model_type")
            .and_then(|v| v.as_str())
            .unwrap_or("none");
        return match (kind, tokenizer) {
            ("whisper", true) => Ok(Layout::HuggingFace),
            ("whisper", false) => Err(not(
                "a Hugging Face Whisper model without tokenizer.json".into()
            )),
            (other, _) => Err(not(format!("a Hugging Face model of model_type {other}"))),
        };
    }
    let mut names: Vec<String> = fs_err::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.truncate(8);
    Err(not(if names.is_empty() {
        "an empty folder".into()
    } else {
        format!("the files {}", names.join(", "))
    }))
}

/// What [`import`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    /// The layout the source folder was in.
    pub layout: Layout,
    /// The model's size (`tiny`, `base`, ...), from its shape.
    pub size: String,
    /// True for a multilingual model, false for an English-only one (`.en`).
    pub multilingual: bool,
}

/// Puts the Whisper model of `src` into `dest` in Hugging Face layout: a CTranslate2 model is
/// converted (once: `dest` is written to a temporary folder beside it, then renamed), a Hugging
/// Face one copied. `dest` is replaced when it exists.
pub fn import(src: &Path, dest: &Path) -> Result<Imported, WhisperError> {
    let layout = recognise(src)?;
    let parent = dest.parent().unwrap_or(Path::new("."));
    fs_err::create_dir_all(parent)?;
    let tmp = parent.join(format!(
        ".{}.importing-{}",
        dest.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("whisper"),
        std::process::id()
    ));
    let _ = fs_err::remove_dir_all(&tmp);
    fs_err::create_dir_all(&tmp)?;
    let config = match layout {
        Layout::CTranslate2 => ct2::convert(src, &tmp),
        Layout::HuggingFace => (|| {
            for f in ["model.safetensors", "config.json", "tokenizer.json"] {
                fs_err::copy(src.join(f), tmp.join(f))?;
            }
            read_config(&tmp)
        })(),
    };
    let config = match config {
        Ok(c) => c,
        Err(e) => {
            let _ = fs_err::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    if dest.exists() {
        fs_err::remove_dir_all(dest)?;
    }
    if let Err(e) = fs_err::rename(&tmp, dest) {
        // Another process imported into `dest` meanwhile: its copy stands.
        let _ = fs_err::remove_dir_all(&tmp);
        if !is_ready(dest) {
            return Err(e.into());
        }
    }
    Ok(Imported {
        layout,
        size: config.size_name().to_string(),
        multilingual: config.vocab_size >= 51865,
    })
}

fn read_config(dir: &Path) -> Result<HfConfig, WhisperError> {
    let path = dir.join("config.json");
    let mut config: HfConfig =
        serde_json::from_slice(&fs_err::read(&path)?).map_err(|e| WhisperError::BadModel {
            path: path.clone(),
            what: e.to_string(),
        })?;
    // Hugging Face keeps the suppressed tokens in generation_config.json in newer exports.
    if config.suppress_tokens.is_empty()
        && let Ok(b) = fs_err::read(dir.join("generation_config.json"))
        && let Ok(g) = serde_json::from_slice::<serde_json::Value>(&b)
    {
        let ids = |k: &str| -> Vec<u32> {
            g.get(k)
                .and_then(|v| v.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_u64())
                        .map(|x| x as u32)
                        .collect()
                })
                .unwrap_or_default()
        };
        config.suppress_tokens = ids("suppress_tokens");
        config.begin_suppress_tokens = ids("begin_suppress_tokens");
    }
    Ok(config)
}

/// A model folder in words: `Whisper base (multilingual)`.
pub fn describe(dir: &Path) -> Result<String, WhisperError> {
    let c = read_config(dir)?;
    Ok(format!(
        "Whisper {} ({})",
        c.size_name(),
        if c.vocab_size >= 51865 {
            "multilingual"
        } else {
            "English only"
        }
    ))
}

/// True when `dir` holds a loadable model in Hugging Face layout (what [`import`] makes).
pub fn is_ready(dir: &Path) -> bool {
    matches!(recognise(dir), Ok(Layout::HuggingFace))
}

/// One stretch of speech: its start and end in seconds from the start of the audio, and its
/// text.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Start, in seconds.
    pub start: f64,
    /// End, in seconds.
    pub end: f64,
    /// What was said, trimmed.
    pub text: String,
}

/// A transcription.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Transcript {
    /// The language spoken (Whisper's code: `en`, `fr`, `es`, `zh`, `ja`, ...): detected from
    /// the first 30 seconds by a multilingual model, `en` for an English-only one.
    pub language: Option<String>,
    /// The segments, in time order. Windows judged silent, music or hallucinated give none.
    pub segments: Vec<Segment>,
    /// How many seconds of the audio were listened to (all of it unless `cut_short`).
    pub covered: f64,
    /// Set when transcription stopped before the end (the deadline passed): says so.
    pub cut_short: Option<String>,
}

/// How to transcribe.
#[derive(Debug, Clone, Default)]
pub struct TranscribeOptions {
    /// The language to transcribe in (Whisper code); `None` detects it.
    pub language: Option<String>,
    /// Stop before starting a 30-second window after this instant: the transcript then covers
    /// what came before and says it was cut short.
    pub deadline: Option<Instant>,
}

/// A loaded Whisper model.
pub struct Whisper {
    model: model::Model,
    tokenizer: tokenizers::Tokenizer,
    config: HfConfig,
    filters: Vec<f32>,
    tokens: decode::SpecialTokens,
    device: Device,
}

impl std::fmt::Debug for Whisper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Whisper")
            .field("size", &self.config.size_name())
            .field("multilingual", &self.is_multilingual())
            .finish()
    }
}

impl Whisper {
    /// Loads a model folder in Hugging Face layout (what [`import`] writes).
    pub fn load(dir: &Path) -> Result<Whisper, WhisperError> {
        match recognise(dir)? {
            Layout::HuggingFace => {}
            Layout::CTranslate2 => {
                return Err(WhisperError::BadModel {
                    path: dir.to_path_buf(),
                    what: "a CTranslate2 model: import it first (`linkly model import`)".into(),
                });
            }
        }
        let config = read_config(dir)?;
        let device = Device::Cpu;
        let tensors = candle_core::safetensors::load(dir.join("model.safetensors"), &device)?;
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &device);
        let model = model::Model::load(&vb, &config)?;
        let tokenizer =
            tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")).map_err(|e| {
                WhisperError::BadModel {
                    path: dir.join("tokenizer.json"),
                    what: e.to_string(),
                }
            })?;
        let tokens = decode::SpecialTokens::of(&tokenizer, config.vocab_size).map_err(|what| {
            WhisperError::BadModel {
                path: dir.join("tokenizer.json"),
                what,
            }
        })?;
        let filters = mel::filters(SAMPLE_RATE as f64, m::N_FFT, config.num_mel_bins);
        Ok(Whisper {
            model,
            tokenizer,
            config,
            filters,
            tokens,
            device,
        })
    }

    /// True for a multilingual model.
    pub fn is_multilingual(&self) -> bool {
        self.tokens.multilingual
    }

    /// The model's size name (`tiny`, `base`, ...).
    pub fn size(&self) -> &'static str {
        self.config.size_name()
    }

    /// Transcribes 16 kHz mono samples in `[-1, 1]`.
    pub fn transcribe(
        &mut self,
        pcm: &[f32],
        options: &TranscribeOptions,
    ) -> Result<Transcript, WhisperError> {
        decode::transcribe(self, pcm, options)
    }
}
