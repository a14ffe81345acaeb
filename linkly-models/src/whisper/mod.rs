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

mod attention;
mod calibrate;
mod ct2;
mod decode;
mod linear;
mod mel;
mod model;
mod weights;
mod wer;

use std::path::{Path, PathBuf};
use std::time::Instant;

use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use candle_transformers::models::whisper as m;
use serde::{Deserialize, Serialize};

use crate::encoder::Precision;
use crate::prepared::Cache;
use crate::whisper::calibrate::Engine;
use crate::whisper::weights::Source;

pub use crate::whisper::calibrate::{SpeechCalibration, SpeechPath, read as calibration};
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
    precision: Precision,
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
            .field("precision", &self.precision.name())
            .finish()
    }
}

impl Whisper {
    /// Loads a model folder in Hugging Face layout (what [`import`] writes), its matrix
    /// products in the precision the calibration chose for this CPU (measured at the first
    /// load here, `calibrate.rs`; `LINKLY_WHISPER_ENGINE` overrides it), from the prepared
    /// file of that precision (`<dir>/.linkly/whisper-<precision>.bin`, mapped), which is
    /// written first when it is missing, was made from other weights, by another version or for
    /// another CPU, or does not read whole.
    pub fn load(dir: &Path) -> Result<Whisper, WhisperError> {
        require_imported(dir)?;
        let config = read_config(dir)?;
        let weights = dir.join("model.safetensors");
        let precision = match Engine::from_env() {
            Engine::Forced(p) => p,
            Engine::Calibrate(candidates) => match calibrate::cached(dir, &weights, &candidates) {
                Some(p) => p,
                None => {
                    let checkpoint = Checkpoint::read(&weights)?;
                    let model = checkpoint.model(&config, Precision::F32)?;
                    let mut w = Whisper::with(dir, config.clone(), model, Precision::F32)?;
                    let c = calibrate::measure(&mut w, dir, &weights, &candidates, |p| {
                        checkpoint.model(&config, p)
                    })?;
                    tracing::info!(
                        chosen = %c.chosen,
                        paths = ?c.paths,
                        "speech model's precision calibrated on this CPU"
                    );
                    Precision::from_name(&c.chosen).unwrap_or(Precision::F32)
                }
            },
        };
        let model = prepared(dir, &weights, &config, precision)?;
        Whisper::with(dir, config, model, precision)
    }

    /// [`Whisper::load`] in the precision `precision` names (one of [`precisions`]), whatever
    /// the calibration chose: for tests and benchmarks that compare them.
    pub fn load_as(dir: &Path, precision: &str) -> Result<Whisper, WhisperError> {
        let Some(p) = Precision::from_name(precision).filter(|p| linear::supported().contains(p))
        else {
            return Err(WhisperError::Model(format!(
                "this CPU runs the speech model in {}, not {precision}",
                precisions().join(", ")
            )));
        };
        require_imported(dir)?;
        let config = read_config(dir)?;
        let model = prepared(dir, &dir.join("model.safetensors"), &config, p)?;
        Whisper::with(dir, config, model, p)
    }

    /// The model `model` of the folder `dir` with its tokenizer.
    fn with(
        dir: &Path,
        config: HfConfig,
        model: model::Model,
        precision: Precision,
    ) -> Result<Whisper, WhisperError> {
        let device = Device::Cpu;
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
            precision,
            tokenizer,
            config,
            filters,
            tokens,
            device,
        })
    }

    /// The precision of the matrix products (`f32`, `int8`, `int16`, `bf16-avx512`, `bf16`:
    /// AMX).
    pub fn precision(&self) -> &'static str {
        self.precision.name()
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

/// `Ok` when `dir` holds a model in Hugging Face layout, what [`import`] writes.
fn require_imported(dir: &Path) -> Result<(), WhisperError> {
    match recognise(dir)? {
        Layout::HuggingFace => Ok(()),
        Layout::CTranslate2 => Err(WhisperError::BadModel {
            path: dir.to_path_buf(),
            what: "a CTranslate2 model: import it first (`linkly model import`)".into(),
        }),
    }
}

/// The precisions this CPU runs the speech model in (`f32`, `int16`, `int8`, `bf16-avx512`,
/// `bf16`: AMX), f32 first.
pub fn precisions() -> Vec<&'static str> {
    linear::supported()
        .into_iter()
        .map(Precision::name)
        .collect()
}

/// The checkpoint's tensors (`model.safetensors`), from which the network is built in any
/// precision.
struct Checkpoint {
    vb: VarBuilder<'static>,
}

impl Checkpoint {
    fn read(weights: &Path) -> Result<Checkpoint, WhisperError> {
        let device = Device::Cpu;
        let tensors = candle_core::safetensors::load(weights, &device)?;
        Ok(Checkpoint {
            vb: VarBuilder::from_tensors(tensors, DType::F32, &device),
        })
    }

    fn model(&self, config: &HfConfig, precision: Precision) -> Result<model::Model, WhisperError> {
        let mut src = Source::Checkpoint {
            vb: self.vb.clone(),
            precision,
            record: None,
        };
        Ok(model::Model::load(&mut src, config)?)
    }
}

/// The prepared file of `precision` for the weights `weights`: valid only for this file (size
/// and time), this CPU's instruction sets and this version.
fn prepared_cache(dir: &Path, weights: &Path, precision: Precision) -> Cache {
    let here = crate::calibration::Fingerprint::here();
    Cache::at(
        dir.join(".linkly")
            .join(format!("whisper-{}.bin", precision.name())),
        format!(
            "whisper {} {} [{}] {}",
            precision.name(),
            crate::calibration::weights_key(weights),
            here.features.join(" "),
            here.version
        ),
    )
}

/// The network in `precision`, from its prepared file, written first when it is not there or
/// not valid; from the checkpoint when the file cannot be written (a read-only folder).
fn prepared(
    dir: &Path,
    weights: &Path,
    config: &HfConfig,
    precision: Precision,
) -> Result<model::Model, WhisperError> {
    let cache = prepared_cache(dir, weights, precision);
    let read = |cache: &Cache| {
        cache.load(|r| {
            model::Model::load(&mut Source::Prepared(r), config).map_err(std::io::Error::other)
        })
    };
    if let Some(m) = read(&cache) {
        return Ok(m);
    }
    let checkpoint = Checkpoint::read(weights)?;
    let mut made: Option<Result<model::Model, WhisperError>> = None;
    cache.save(|w| {
        let mut src = Source::Checkpoint {
            vb: checkpoint.vb.clone(),
            precision,
            record: Some(w),
        };
        let m = model::Model::load(&mut src, config);
        let failed = m
            .as_ref()
            .err()
            .map(|e| std::io::Error::other(e.to_string()));
        made = Some(m.map_err(WhisperError::from));
        failed.map_or(Ok(()), Err)
    });
    // The mapped copy, so the weights are the page cache's, not this process's.
    drop(checkpoint);
    if let Some(m) = read(&cache) {
        return Ok(m);
    }
    tracing::warn!(
        dir = %dir.display(),
        "the speech model's prepared weights could not be written: using them from memory"
    );
    match made {
        Some(m) => m,
        None => Checkpoint::read(weights)?.model(config, precision),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_inputs::TestInput;

    fn words(w: &mut Whisper) -> String {
        let t = w
            .transcribe(&calibrate::recording(), &TranscribeOptions::default())
            .unwrap();
        let text: Vec<&str> = t.segments.iter().map(|s| s.text.as_str()).collect();
        text.join(" ")
    }

    /// `at` with the first `from` in it replaced by `to` (of the same length).
    fn replace(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
        assert_eq!(from.len(), to.len());
        let at = bytes
            .windows(from.len())
            .position(|w| w == from.as_bytes())
            .unwrap_or_else(|| panic!("{from} is in the header"));
        let mut out = bytes.to_vec();
        out[at..at + to.len()].copy_from_slice(to.as_bytes());
        out
    }

    /// A prepared file cut short, from another version, for another CPU or of another
    /// precision is not used: it is written again, the same as a fresh one.
    #[test]
    fn a_prepared_file_cut_short_or_made_elsewhere_is_made_again() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("tiny.en");
        import(&TestInput::Speech.path().join("tiny.en"), &dir).unwrap();
        // The widest precision this CPU runs, and f32.
        let widest = *linear::supported().last().unwrap();
        let file = |p: Precision| dir.join(format!(".linkly/whisper-{}.bin", p.name()));
        let mut w = Whisper::load_as(&dir, widest.name()).unwrap();
        let reference = words(&mut w);
        assert!(
            word_error_rate(calibrate::TEXT, &reference) <= 0.2,
            "{reference}"
        );
        drop(w);
        let good = fs_err::read(file(widest)).unwrap();
        let here = crate::calibration::Fingerprint::here();
        let feature = here.features.first().cloned().unwrap_or_default();
        let other_feature: String = feature.chars().rev().collect();
        let version = env!("CARGO_PKG_VERSION");
        let other_version = version.replacen(|c: char| c.is_ascii_digit(), "9", 1);
        let mut bad = vec![
            ("cut short", good[..good.len() / 2].to_vec()),
            (
                "from another version",
                replace(
                    &good,
                    &format!("] {version}"),
                    &format!("] {other_version}"),
                ),
            ),
        ];
        if !feature.is_empty() && feature != other_feature {
            bad.push(("for another CPU", replace(&good, &feature, &other_feature)));
        }
        for (what, bytes) in bad {
            fs_err::write(file(widest), &bytes).unwrap();
            let mut w = Whisper::load_as(&dir, widest.name()).unwrap();
            assert_eq!(words(&mut w), reference, "{what}");
            assert!(
                fs_err::read(file(widest)).unwrap() == good,
                "{what}: made again"
            );
        }
        // Another precision's file under this one's name.
        if widest != Precision::F32 {
            Whisper::load_as(&dir, "f32").unwrap();
            let f32_file = fs_err::read(file(Precision::F32)).unwrap();
            fs_err::write(file(widest), &f32_file).unwrap();
            let mut w = Whisper::load_as(&dir, widest.name()).unwrap();
            assert_eq!(words(&mut w), reference);
            assert!(fs_err::read(file(widest)).unwrap() == good);
        }
        // A precision this CPU does not run is refused, by name.
        let err = Whisper::load_as(&dir, "fp8").unwrap_err().to_string();
        assert!(err.contains("not fp8") && err.contains("f32"), "{err}");
    }

    /// The calibration is measured once, kept, and read back; one made on another CPU is
    /// measured again.
    #[test]
    fn the_calibration_is_kept_and_measured_again_elsewhere() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("tiny.en");
        import(&TestInput::Speech.path().join("tiny.en"), &dir).unwrap();
        let weights = dir.join("model.safetensors");
        let candidates = linear::supported();
        let config = read_config(&dir).unwrap();
        let checkpoint = Checkpoint::read(&weights).unwrap();
        let model = checkpoint.model(&config, Precision::F32).unwrap();
        let mut w = Whisper::with(&dir, config.clone(), model, Precision::F32).unwrap();
        let c = calibrate::measure(&mut w, &dir, &weights, &candidates, |p| {
            checkpoint.model(&config, p)
        })
        .unwrap();
        assert_eq!(c.paths.len(), candidates.len());
        assert_eq!(c.paths[0].precision, "f32");
        assert!(c.paths[0].kept && c.paths[0].wer <= 0.2, "{c:?}");
        let chosen = c.paths.iter().find(|p| p.precision == c.chosen).unwrap();
        assert!(chosen.kept);
        assert!(c.paths.iter().filter(|p| p.kept).all(|p| p.ms >= chosen.ms));
        assert_eq!(
            calibrate::cached(&dir, &weights, &candidates),
            Precision::from_name(&c.chosen)
        );
        // Other candidates (LINKLY_WHISPER_ENGINE=avx2), or another CPU: measured again.
        assert_eq!(calibrate::cached(&dir, &weights, &candidates[..1]), None);
        let path = dir.join(".linkly/whisper-calibration.json");
        let mut json: serde_json::Value =
            serde_json::from_slice(&fs_err::read(&path).unwrap()).unwrap();
        json["fingerprint"]["model"] = "another CPU".into();
        fs_err::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
        assert_eq!(calibrate::cached(&dir, &weights, &candidates), None);
    }
}
