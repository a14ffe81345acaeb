//! Which forward pass and precision run the model: the engine `LINKLY_EMBED_ENGINE` asks for,
//! the precision it forces, or the one a calibration measures fastest among those that keep
//! the vectors.

use std::path::Path;

use super::{Embedder, Encoder, TextKind};
use crate::calibration::{self, Calibration, Fingerprint, PathFigures};
use crate::encoder::Precision;
use crate::{Error, ModelError, Result};

/// Which forward pass runs the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Engine {
    /// [`FastEncoder`](crate::encoder::FastEncoder): fused, vectorised, multi-threaded; its
    /// linear layers in the precision a calibration measured fastest on this machine among
    /// those that keep the vectors (`calibration.rs`; the default).
    Fast,
    /// `FastEncoder` in f32 whatever the CPU (`LINKLY_EMBED_ENGINE=f32`).
    FastF32,
    /// `FastEncoder` with int16 linear layers wherever the CPU has AVX2
    /// (`LINKLY_EMBED_ENGINE=int16`).
    FastInt16,
    /// `FastEncoder` with int8 linear layers where the CPU has AVX-512 VNNI
    /// (`LINKLY_EMBED_ENGINE=int8`): about 2.5× faster products, vectors within a cosine of
    /// about 0.996 of the f32 ones on all-MiniLM-L6-v2, so not the default (see
    /// docs/benchmarks.md).
    FastInt8,
    /// `FastEncoder` with bf16 linear layers on AMX tiles where the CPU has them, else with
    /// AVX-512 BF16 where it has that (`LINKLY_EMBED_ENGINE=bf16`).
    FastBf16,
    /// `FastEncoder` with bf16 linear layers on AMX tiles (`LINKLY_EMBED_ENGINE=bf16-amx`).
    FastBf16Amx,
    /// `FastEncoder` with bf16 linear layers on AVX-512 BF16 (`vdpbf16ps`) even where AMX
    /// runs (`LINKLY_EMBED_ENGINE=bf16-avx512`).
    FastBf16Avx512,
    /// candle-transformers' `bert` / `xlm_roberta` as they are
    /// (`LINKLY_EMBED_ENGINE=candle-transformers`): for comparison and as a fallback.
    Reference,
}

impl Engine {
    /// The engine `LINKLY_EMBED_ENGINE` asks for; the fast one unless it says
    /// `candle-transformers`.
    pub(crate) fn from_env() -> Engine {
        match std::env::var(linkly_core::env::LINKLY_EMBED_ENGINE).as_deref() {
            Ok("candle-transformers" | "reference") => Engine::Reference,
            Ok("int8") => Engine::FastInt8,
            Ok("bf16") => Engine::FastBf16,
            Ok("bf16-amx") => Engine::FastBf16Amx,
            Ok("bf16-avx512") => Engine::FastBf16Avx512,
            Ok("int16") => Engine::FastInt16,
            Ok("f32") => Engine::FastF32,
            _ => Engine::Fast,
        }
    }
}

/// The precision `engine` forces on the fast encoder's linear layers ([`Engine::Fast`]'s is
/// measured: `calibration.rs`).
pub(super) fn wanted_precision(engine: Engine) -> Precision {
    match engine {
        Engine::FastInt8 => Precision::Int8,
        Engine::FastInt16 => Precision::Int16,
        Engine::FastBf16 if !crate::amx::supported() && crate::bf16::supported() => {
            Precision::Bf16Avx512
        }
        Engine::FastBf16 | Engine::FastBf16Amx => Precision::Bf16,
        Engine::FastBf16Avx512 => Precision::Bf16Avx512,
        Engine::Fast | Engine::FastF32 | Engine::Reference => Precision::F32,
    }
}

/// The precisions a calibration measures against f32, where this CPU runs them.
const CANDIDATES: [Precision; 4] = [
    Precision::Int16,
    Precision::Int8,
    Precision::Bf16Avx512,
    Precision::Bf16,
];

/// A precision whose vectors a test changes before the calibration compares them.
type Spoil<'a> = (Precision, &'a dyn Fn(&mut Vec<Vec<f32>>));

impl Embedder {
    /// Turns the fast encoder's linear layers of precision `wanted` on when the CPU can run
    /// them, and frees the f32 weights they replace.
    pub(super) fn choose_precision(&mut self, wanted: Precision) -> candle_core::Result<()> {
        let Encoder::Fast(fast) = &mut self.encoder else {
            return Ok(());
        };
        if wanted != Precision::F32 {
            if fast.add_precision(wanted)? {
                fast.set_precision(wanted);
            } else {
                tracing::info!(
                    ?wanted,
                    "this CPU cannot run these kernels: embedding in f32"
                );
            }
        }
        fast.drop_unused();
        Ok(())
    }

    /// The precision of the fast encoder's linear layers (`None` for candle-transformers').
    #[cfg(test)]
    pub(crate) fn precision(&self) -> Option<Precision> {
        self.precision_in_use()
    }

    pub(super) fn precision_in_use(&self) -> Option<Precision> {
        match &self.encoder {
            Encoder::Fast(f) => Some(f.precision()),
            _ => None,
        }
    }

    /// Measures every precision this CPU runs on [`calibration::batch`] (the fast encoder
    /// loaded in f32, its f32 weights still there), keeps those whose every vector is within
    /// [`calibration::LEAST_COSINE`] of the f32 one, and leaves the encoder in the fastest.
    pub(super) fn calibrate(&mut self, weights: &Path, here: Fingerprint) -> Result<Calibration> {
        self.calibrate_among(weights, here, &CANDIDATES, None)
    }

    /// [`Embedder::calibrate`] among `candidates`; `spoil`, in tests, changes a candidate's
    /// vectors before they are compared (a path that breaks the quality rule).
    pub(super) fn calibrate_among(
        &mut self,
        weights: &Path,
        here: Fingerprint,
        candidates: &[Precision],
        spoil: Option<Spoil<'_>>,
    ) -> Result<Calibration> {
        let started = std::time::Instant::now();
        let failed = |e: candle_core::Error| {
            Error::from(ModelError::Inference {
                stage: "calibrating",
                reason: e.to_string(),
            })
        };
        let Encoder::Fast(fast) = &self.encoder else {
            return Err(ModelError::Inference {
                stage: "calibrating",
                reason: "only the fast encoder is calibrated".into(),
            }
            .into());
        };
        let macs = fast.macs_per_token();
        let tokens_per_round: usize = calibration::batch(usize::MAX, 1)
            .iter()
            .map(|t| {
                self.tokenizer
                    .ids(vec![t.to_string()])
                    .map_or(1, |e| e.first().map_or(1, Vec::len))
            })
            .sum();
        let texts = calibration::batch(macs, tokens_per_round);
        let tokens = tokens_per_round * texts.len() / calibration::batch(usize::MAX, 1).len();
        let (f32_ms, expected) = calibration::time(2, || self.embed(&texts, TextKind::Passage))?;
        let mut paths = vec![PathFigures {
            precision: Precision::F32.name().into(),
            ms: f32_ms,
            least_cosine: 1.0,
            kept: true,
        }];
        for &p in candidates {
            let Encoder::Fast(fast) = &mut self.encoder else {
                unreachable!("checked above")
            };
            if p == Precision::F32 || !fast.add_precision(p).map_err(failed)? {
                continue;
            }
            fast.set_precision(p);
            let measured = calibration::time(2, || self.embed(&texts, TextKind::Passage));
            let Encoder::Fast(fast) = &mut self.encoder else {
                unreachable!("checked above")
            };
            fast.set_precision(Precision::F32);
            fast.forget_precision(p);
            let (ms, mut vectors) = measured?;
            if let Some((spoilt, change)) = &spoil
                && *spoilt == p
            {
                change(&mut vectors);
            }
            let least_cosine = calibration::least_cosine(&expected, &vectors);
            paths.push(PathFigures {
                precision: p.name().into(),
                ms,
                least_cosine,
                kept: least_cosine >= calibration::LEAST_COSINE,
            });
        }
        let c = calibration::made(weights, texts.len(), tokens, paths, here);
        let chosen = c.precision().unwrap_or(Precision::F32);
        self.choose_precision(chosen).map_err(failed)?;
        tracing::info!(
            chosen = chosen.name(),
            ms = started.elapsed().as_secs_f64() * 1e3,
            paths = ?c
                .paths
                .iter()
                .map(|p| format!("{} {:.1} ms cos {:.5}", p.precision, p.ms, p.least_cosine))
                .collect::<Vec<_>>(),
            "embedding precision calibrated on this CPU"
        );
        Ok(c)
    }
}
