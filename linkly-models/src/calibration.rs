//! The fast encoder's precision chosen by measurement on the machine it runs on, not from a
//! table: at a model's first load (and again when the CPU, the model file or Linkly's version
//! changes), the precisions this CPU runs (f32, int16, int8, bf16 on AVX-512 BF16, bf16 on
//! AMX) each embed a short fixed batch; those whose every vector keeps a cosine of at least
//! [`LEAST_COSINE`] to the f32 one are kept, and the fastest of them is used. The choice and
//! the figures behind it are kept in `<model>/.linkly/calibration.json` with the CPU's
//! fingerprint ([`Fingerprint`]), and read back by later loads (a CLI search reads one small
//! file). `LINKLY_EMBED_ENGINE` bypasses it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::encoder::Precision;

/// The least cosine a precision's vectors must keep to the f32 ones, each of them.
pub const LEAST_COSINE: f32 = 0.999;

/// Bumped when the batch or the rule changes: older files are measured again.
const FORMAT: u32 = 1;

/// What a choice was made on: a file measured on another CPU, or another version of the
/// encoder, is not used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// The CPU's vendor (`/proc/cpuinfo`'s `vendor_id`; empty where unknown).
    pub vendor: String,
    /// The CPU's model name (`/proc/cpuinfo`'s `model name`; empty where unknown).
    pub model: String,
    /// The instruction sets the kernels use that this CPU has.
    pub features: Vec<String>,
    /// Threads the encoder runs on.
    pub threads: usize,
    /// Linkly's version.
    pub version: String,
}

impl Fingerprint {
    /// This machine's.
    pub fn here() -> Fingerprint {
        let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| {
            info.lines()
                .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
                .unwrap_or_default()
        };
        Fingerprint {
            vendor: field("vendor_id"),
            model: field("model name"),
            features: features(),
            threads: rayon::current_num_threads(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

/// The instruction sets the encoder's kernels choose between, as this CPU has them.
fn features() -> Vec<String> {
    let mut out = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        for (name, has) in [
            ("avx2+fma", crate::int16::supported()),
            ("avx512f", std::arch::is_x86_feature_detected!("avx512f")),
            ("avx512bw", std::arch::is_x86_feature_detected!("avx512bw")),
            (
                "avx512vnni",
                std::arch::is_x86_feature_detected!("avx512vnni"),
            ),
            (
                "avx512bf16",
                std::arch::is_x86_feature_detected!("avx512bf16"),
            ),
            ("amx-bf16", crate::amx::supported()),
        ] {
            if has {
                out.push(name.to_string());
            }
        }
    }
    #[cfg(target_arch = "aarch64")]
    out.push("neon".to_string());
    out
}

/// One precision's measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathFigures {
    /// The precision (`f32`, `int16`, `int8`, `bf16-avx512`, `bf16`: AMX).
    pub precision: String,
    /// The best time of the batch, in milliseconds.
    pub ms: f64,
    /// The least cosine of its vectors to the f32 ones.
    pub least_cosine: f32,
    /// Whether it met the quality rule ([`LEAST_COSINE`]).
    pub kept: bool,
}

/// A calibration's outcome, as `calibration.json` keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    format: u32,
    /// What it was measured on.
    pub fingerprint: Fingerprint,
    /// The model file it was measured with (size and modification time).
    pub weights: String,
    /// The precision chosen: the fastest of those kept.
    pub chosen: String,
    /// Texts and tokens of the batch timed.
    pub texts: usize,
    /// Tokens of the batch.
    pub tokens: usize,
    /// Each precision measured.
    pub paths: Vec<PathFigures>,
}

impl Calibration {
    /// The chosen precision.
    pub(crate) fn precision(&self) -> Option<Precision> {
        Precision::from_name(&self.chosen)
    }
}

/// Where a model folder's calibration lives.
pub(crate) fn file(dir: &Path) -> PathBuf {
    dir.join(".linkly").join("calibration.json")
}

/// The model file's identity: its size and modification time.
pub(crate) fn weights_key(weights: &Path) -> String {
    let Ok(meta) = std::fs::metadata(weights) else {
        return String::new();
    };
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("{} {modified}", meta.len())
}

/// The calibration kept for the model in `dir`, whatever it was measured on.
pub fn read(dir: &Path) -> Option<Calibration> {
    let text = std::fs::read_to_string(file(dir)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Removes the calibration of the model in `dir`, so that its next load measures again.
pub fn forget(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(file(dir)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The precision kept for the model in `dir` when it was measured here, on these weights, by
/// this version.
pub(crate) fn cached(dir: &Path, weights: &Path, here: &Fingerprint) -> Option<Precision> {
    let c = read(dir)?;
    if c.format != FORMAT || c.fingerprint != *here || c.weights != weights_key(weights) {
        tracing::debug!(dir = %dir.display(), "calibration made elsewhere: measuring again");
        return None;
    }
    c.precision()
}

/// Writes the calibration (to a temporary name, then renamed) into `dir/.linkly/`; a failure
/// (a read-only folder) leaves nothing behind, and the next load measures again.
pub(crate) fn save(dir: &Path, c: &Calibration) -> std::io::Result<()> {
    let path = file(dir);
    std::fs::create_dir_all(path.parent().unwrap_or(dir))?;
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let written = std::fs::write(
        &tmp,
        serde_json::to_vec_pretty(c).map_err(std::io::Error::other)?,
    )
    .and_then(|()| std::fs::rename(&tmp, &path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Sentences of several lengths and languages: the batch each precision embeds.
const TEXTS: [&str; 8] = [
    "The cat sits on the mat.",
    "Quarterly revenue grew by 12 percent, driven by subscriptions in Europe and Asia, while \
     hardware sales fell for the third quarter in a row.",
    "La réunion du conseil d'administration est reportée à jeudi prochain en raison des grèves.",
    "El informe anual describe la jerarquía de componentes del sistema y sus dependencias.",
    "本研究比较了两种治疗方法对老年患者骨折风险的影响。",
    "新しいコンポーネントの設計レビューは来週の月曜日に行われます。",
    "Serum 25-hydroxyvitamin D concentrations were measured in 1,204 adults; fracture \
     incidence fell by 18% (95% CI 4–30%) over five years of follow-up in the treated group.",
    "x",
];

/// The batch: [`TEXTS`] repeated until the encoder's work is about `budget` multiply-adds
/// (a few hundred tokens for a small model, fewer for a large one; at least the eight texts).
pub(crate) fn batch(macs_per_token: usize, tokens_per_round: usize) -> Vec<&'static str> {
    const BUDGET: usize = 4_000_000_000;
    let rounds = (BUDGET / (macs_per_token.max(1) * tokens_per_round.max(1))).clamp(1, 8);
    TEXTS
        .iter()
        .copied()
        .cycle()
        .take(TEXTS.len() * rounds)
        .collect()
}

/// Times `run` (best of `times` runs after one to warm up), in milliseconds; the warm-up's
/// result is returned beside it.
pub(crate) fn time<T, E>(
    times: usize,
    mut run: impl FnMut() -> Result<T, E>,
) -> Result<(f64, T), E> {
    let first = run()?;
    let mut best = f64::INFINITY;
    for _ in 0..times {
        let started = Instant::now();
        run()?;
        best = best.min(started.elapsed().as_secs_f64() * 1e3);
    }
    Ok((best, first))
}

/// The least cosine between paired vectors.
pub(crate) fn least_cosine(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            let dot: f32 = x.iter().zip(y).map(|(p, q)| p * q).sum();
            let nx = x.iter().map(|v| v * v).sum::<f32>().sqrt();
            let ny = y.iter().map(|v| v * v).sum::<f32>().sqrt();
            dot / (nx * ny).max(f32::MIN_POSITIVE)
        })
        .fold(1.0f32, f32::min)
}

/// The fastest of the precisions that met the rule (f32 always does).
pub(crate) fn choose(paths: &[PathFigures]) -> String {
    paths
        .iter()
        .filter(|p| p.kept)
        .min_by(|a, b| a.ms.total_cmp(&b.ms))
        .map_or_else(|| "f32".to_string(), |p| p.precision.clone())
}

/// Assembles a calibration measured here.
pub(crate) fn made(
    weights: &Path,
    texts: usize,
    tokens: usize,
    paths: Vec<PathFigures>,
    here: Fingerprint,
) -> Calibration {
    Calibration {
        format: FORMAT,
        fingerprint: here,
        weights: weights_key(weights),
        chosen: choose(&paths),
        texts,
        tokens,
        paths,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(precision: &str, ms: f64, least_cosine: f32) -> PathFigures {
        PathFigures {
            precision: precision.into(),
            ms,
            least_cosine,
            kept: least_cosine >= LEAST_COSINE,
        }
    }

    #[test]
    fn the_fastest_path_that_keeps_the_vectors_is_chosen() {
        // int8 is the fastest but loses too much: never chosen.
        let paths = [
            figures("f32", 100.0, 1.0),
            figures("int16", 60.0, 0.9999),
            figures("int8", 30.0, 0.996),
            figures("bf16-avx512", 45.0, 0.99995),
        ];
        assert_eq!(choose(&paths), "bf16-avx512");
        assert_eq!(choose(&paths[..3]), "int16");
        // Nothing faster than f32 kept: f32.
        assert_eq!(
            choose(&[figures("f32", 100.0, 1.0), figures("int8", 10.0, 0.99)]),
            "f32"
        );
    }

    #[test]
    fn cosines_are_measured_per_vector() {
        let a = vec![vec![1.0, 0.0], vec![0.0, 1.0]];
        let b = vec![vec![1.0, 0.0], vec![0.6, 0.8]];
        assert!((least_cosine(&a, &b) - 0.8).abs() < 1e-6);
        assert_eq!(least_cosine(&a, &a), 1.0);
    }

    #[test]
    fn the_fingerprint_names_this_cpu() {
        let here = Fingerprint::here();
        assert_eq!(here, Fingerprint::here());
        assert!(here.threads >= 1);
        assert_eq!(here.version, env!("CARGO_PKG_VERSION"));
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        assert!(!here.model.is_empty() || !here.vendor.is_empty());
    }
}
