//! The precision of the speech model's matrix products, chosen by measurement on the machine it
//! runs on, by the embedding encoder's rule (`crate::calibration`): each precision this CPU
//! runs (f32; int16 on AVX2; int8 on AVX-512 VNNI; bf16 on AVX-512 BF16; bf16 on AMX)
//! transcribes a known recording; those with no more word errors than f32 are kept, and the
//! fastest of them is used. The choice and the figures behind it are kept in
//! `<model>/.linkly/whisper-calibration.json` with the CPU's fingerprint and the weights file's
//! identity, and read back by later loads; a load on another CPU, another version or other
//! weights measures again. [`Engine`] (`LINKLY_WHISPER_ENGINE`) forces a precision or narrows
//! the choice.
//!
//! The recording is `beckett.wav` (10 s of a person reading Samuel Beckett, from the MIT-licensed
//! `useful-moonshine-onnx` 20251121 package's assets), kept as 16 kHz G.711 μ-law
//! (`calibration.ulaw`, 160 kB).

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::calibration::Fingerprint;
use crate::encoder::Precision;
use crate::whisper::{TranscribeOptions, Whisper, WhisperError, linear, word_error_rate};

/// Bumped when the recording or the rule changes: older files are measured again.
const FORMAT: u32 = 1;

/// What the recording says.
pub(crate) const TEXT: &str =
    "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better.";

/// The recording, 16 kHz mono, G.711 μ-law.
const CLIP: &[u8] = include_bytes!("calibration.ulaw");

/// The recording as samples in `[-1, 1]`.
pub(crate) fn recording() -> Vec<f32> {
    CLIP.iter().map(|&b| mu_law(b)).collect()
}

/// One G.711 μ-law byte as a sample in `[-1, 1]`.
fn mu_law(b: u8) -> f32 {
    let u = !b;
    let exponent = u32::from((u >> 4) & 7);
    let mantissa = i32::from(u & 0x0f);
    let magnitude = (((mantissa << 3) + 0x84) << exponent) - 0x84;
    let v = if u & 0x80 != 0 { -magnitude } else { magnitude };
    v as f32 / 32768.0
}

/// One precision's measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeechPath {
    /// The precision (`f32`, `int16`, `int8`, `bf16-avx512`, `bf16`: AMX).
    pub precision: String,
    /// The recording's transcription time, in milliseconds (after one run to warm up).
    pub ms: f64,
    /// Its word error rate against the recording's text.
    pub wer: f64,
    /// Whether it met the rule (no more word errors than f32).
    pub kept: bool,
}

/// A calibration's outcome, as the file keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeechCalibration {
    format: u32,
    /// What it was measured on.
    pub fingerprint: Fingerprint,
    /// The weights file it was measured with (size and modification time).
    pub weights: String,
    /// The precisions it chose among.
    pub candidates: Vec<String>,
    /// The precision chosen: the fastest of those kept.
    pub chosen: String,
    /// Each precision measured.
    pub paths: Vec<SpeechPath>,
}

/// What `LINKLY_WHISPER_ENGINE` asks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Engine {
    /// Measure among these (the ones this CPU runs, f32 first).
    Calibrate(Vec<Precision>),
    /// Use this one.
    Forced(Precision),
}

impl Engine {
    /// The engine the environment asks for; a precision this CPU cannot run is refused with
    /// a warning and the calibration runs instead.
    pub(crate) fn from_env() -> Engine {
        let wanted = std::env::var(linkly_core::env::LINKLY_WHISPER_ENGINE).unwrap_or_default();
        Engine::named(wanted.trim())
    }

    fn named(wanted: &str) -> Engine {
        let here = linear::supported();
        let forced = match wanted {
            "" => return Engine::Calibrate(here),
            "avx2" => {
                return Engine::Calibrate(
                    here.into_iter()
                        .filter(|p| matches!(p, Precision::F32 | Precision::Int16))
                        .collect(),
                );
            }
            "bf16" if here.contains(&Precision::Bf16) => Precision::Bf16,
            "bf16" => Precision::Bf16Avx512,
            "bf16-amx" => Precision::Bf16,
            other => match Precision::from_name(other) {
                Some(p) => p,
                None => {
                    tracing::warn!(
                        engine = other,
                        "LINKLY_WHISPER_ENGINE is not one of f32, int8, int16, bf16, bf16-amx, bf16-avx512, avx2: calibrating"
                    );
                    return Engine::Calibrate(here);
                }
            },
        };
        if here.contains(&forced) {
            Engine::Forced(forced)
        } else {
            tracing::warn!(
                engine = forced.name(),
                "this CPU cannot run the speech model in the precision LINKLY_WHISPER_ENGINE asks for: calibrating"
            );
            Engine::Calibrate(here)
        }
    }
}

fn file(dir: &Path) -> PathBuf {
    dir.join(".linkly").join("whisper-calibration.json")
}

/// The calibration kept for the model in `dir`, whatever it was measured on.
pub fn read(dir: &Path) -> Option<SpeechCalibration> {
    serde_json::from_slice(&std::fs::read(file(dir)).ok()?).ok()
}

/// The precision kept for the model in `dir` when it was measured here, on these weights, by
/// this version, among these candidates.
pub(crate) fn cached(dir: &Path, weights: &Path, candidates: &[Precision]) -> Option<Precision> {
    let c = read(dir)?;
    let names: Vec<String> = candidates.iter().map(|p| p.name().to_string()).collect();
    if c.format != FORMAT
        || c.fingerprint != Fingerprint::here()
        || c.weights != crate::calibration::weights_key(weights)
        || c.candidates != names
    {
        tracing::debug!(dir = %dir.display(), "speech calibration made elsewhere: measuring again");
        return None;
    }
    Precision::from_name(&c.chosen)
}

/// Measures each of `candidates` with `w` (whose model is replaced by `model_in` for each)
/// and keeps the result beside the model; returns the chosen precision.
pub(crate) fn measure(
    w: &mut Whisper,
    dir: &Path,
    weights: &Path,
    candidates: &[Precision],
    mut model_in: impl FnMut(Precision) -> Result<crate::whisper::model::Model, WhisperError>,
) -> Result<SpeechCalibration, WhisperError> {
    let pcm = recording();
    let options = TranscribeOptions {
        language: Some("en".into()),
        deadline: None,
    };
    let mut paths = Vec::new();
    for &p in candidates {
        w.model = model_in(p)?;
        w.precision = p;
        let text = |t: &crate::whisper::Transcript| {
            t.segments
                .iter()
                .map(|s| s.text.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let first = w.transcribe(&pcm, &options)?;
        let started = Instant::now();
        w.transcribe(&pcm, &options)?;
        let ms = started.elapsed().as_secs_f64() * 1e3;
        let wer = word_error_rate(TEXT, &text(&first));
        tracing::debug!(precision = p.name(), ms, wer, "speech precision measured");
        paths.push(SpeechPath {
            precision: p.name().to_string(),
            ms,
            wer,
            kept: false,
        });
    }
    let reference = paths.first().map_or(0.0, |p| p.wer);
    for p in &mut paths {
        p.kept = p.wer <= reference;
    }
    let chosen = paths
        .iter()
        .filter(|p| p.kept)
        .min_by(|a, b| a.ms.total_cmp(&b.ms))
        .map_or_else(|| "f32".to_string(), |p| p.precision.clone());
    let c = SpeechCalibration {
        format: FORMAT,
        fingerprint: Fingerprint::here(),
        weights: crate::calibration::weights_key(weights),
        candidates: candidates.iter().map(|p| p.name().to_string()).collect(),
        chosen,
        paths,
    };
    save(dir, &c);
    Ok(c)
}

/// Writes the calibration (to a temporary name, then renamed); failures are logged: the next
/// load measures again.
fn save(dir: &Path, c: &SpeechCalibration) {
    let path = file(dir);
    let result = (|| {
        std::fs::create_dir_all(path.parent().unwrap_or(dir))?;
        let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
        std::fs::write(
            &tmp,
            serde_json::to_vec_pretty(c).map_err(std::io::Error::other)?,
        )?;
        std::fs::rename(&tmp, &path)
    })();
    if let Err(e) = result {
        tracing::warn!(path = %path.display(), error = %e, "speech calibration not saved: the next load measures again");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mu_law_decodes_the_g711_table() {
        // 0xff and 0x7f are the two zeros; 0x80 and 0x00 the loudest of each sign.
        assert_eq!(mu_law(0xff), 0.0);
        assert_eq!(mu_law(0x7f), 0.0);
        assert_eq!(mu_law(0x80), 32124.0 / 32768.0);
        assert_eq!(mu_law(0x00), -32124.0 / 32768.0);
        // Monotonic within a sign.
        let positive: Vec<f32> = (0x80..=0xffu8).map(mu_law).collect();
        assert!(positive.windows(2).all(|w| w[0] > w[1]));
        // The recording is 10 s of sound, not silence.
        let pcm = recording();
        assert_eq!(pcm.len(), CLIP.len());
        assert!(pcm.len() >= 9 * 16_000);
        let rms = (pcm.iter().map(|x| x * x).sum::<f32>() / pcm.len() as f32).sqrt();
        assert!(rms > 0.01, "{rms}");
    }

    #[test]
    fn the_engine_variable_forces_or_narrows() {
        let here = linear::supported();
        assert_eq!(Engine::named(""), Engine::Calibrate(here.clone()));
        assert_eq!(Engine::named("f32"), Engine::Forced(Precision::F32));
        assert_eq!(Engine::named("nonsense"), Engine::Calibrate(here.clone()));
        let Engine::Calibrate(avx2) = Engine::named("avx2") else {
            panic!("avx2 calibrates");
        };
        assert!(
            avx2.iter()
                .all(|p| matches!(p, Precision::F32 | Precision::Int16))
        );
        assert_eq!(avx2[0], Precision::F32);
        // int8 where the CPU has VNNI, else the calibration.
        let int8 = Engine::named("int8");
        if here.contains(&Precision::Int8) {
            assert_eq!(int8, Engine::Forced(Precision::Int8));
        } else {
            assert_eq!(int8, Engine::Calibrate(here));
        }
    }
}
