//! The model's prepared file: where it is kept (beside the model or in the cache folder), what
//! it holds (the linear layers in one precision, the Unigram vocabulary) and whether it is
//! ready on this CPU.

use std::path::{Path, PathBuf};

use super::Engine;
use super::precision::wanted_precision;
use crate::calibration::{self, Fingerprint};
use crate::encoder::{Precision, PreparedLinears};
use crate::prepared::{Array, Cache, Reader, Writer};
use crate::tokenizer_file::MappedTokenizer;
use crate::unigram::MappedUnigram;

/// What the prepared file of a precision holds: the linear layers, then the tokenizer's
/// vocabulary when it is a Unigram one.
pub(super) struct Prepared {
    pub(super) linears: PreparedLinears,
    pub(super) tokenizer: Option<MappedTokenizer>,
}

impl Prepared {
    /// `None` when this CPU cannot run the layers' kernels.
    pub(super) fn read(
        r: &mut Reader,
        precision: Precision,
        layers: usize,
    ) -> std::io::Result<Option<Prepared>> {
        let Some(linears) = PreparedLinears::read(r, precision, layers)? else {
            return Ok(None);
        };
        let tokenizer = match r.u64()? {
            0 => None,
            _ => {
                let rest: Array<u8> = r.array()?;
                let rest = std::str::from_utf8(&rest).map_err(std::io::Error::other)?;
                let vocabulary = MappedUnigram::read(r)?;
                Some(
                    crate::tokenizer_file::assemble(rest, vocabulary)
                        .map_err(std::io::Error::other)?,
                )
            }
        };
        Ok(Some(Prepared { linears, tokenizer }))
    }

    /// Writes the tokenizer's part: its settings and its vocabulary, or a 0 for none.
    pub(super) fn save_tokenizer(
        w: &mut Writer,
        vocabulary: Option<&(&str, MappedUnigram)>,
    ) -> std::io::Result<()> {
        match vocabulary {
            None => w.u64(0),
            Some((rest, unigram)) => {
                w.u64(1)?;
                w.slice(rest.as_bytes())?;
                unigram.save(w)
            }
        }
    }
}

/// The prepared file of `precision` for the model in `model_dir`, kept in `place` (the model's
/// folder or its cache folder): made from its weights and tokenizer files (sizes and
/// modification times) on this CPU. `None` when the model's files cannot be looked at.
pub(super) fn prepared_cache(
    place: &Path,
    model_dir: &Path,
    precision: Precision,
) -> Option<Cache> {
    let weights = calibration::weights_key(&model_dir.join("model.safetensors"));
    let tokenizer = calibration::weights_key(&model_dir.join("tokenizer.json"));
    if weights.is_empty() || tokenizer.is_empty() {
        return None;
    }
    let cpu = Fingerprint::here();
    Some(Cache::at(
        place
            .join(".linkly")
            .join(format!("prepared-{}.bin", precision.name())),
        format!(
            "{} weights {weights} tokenizer {tokenizer} cpu {} {} {} linkly {}",
            precision.name(),
            cpu.vendor,
            cpu.model,
            cpu.features.join(","),
            cpu.version
        ),
    ))
}

/// Where a model's prepared file stands on this CPU (`linkly model status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedState {
    /// The precision a load here would run and read prepared: the calibration's choice, or
    /// the one `LINKLY_EMBED_ENGINE` forces; `None` before the first calibration.
    pub precision: Option<String>,
    /// The file a load would read: beside the model, or in the data directory's cache.
    pub path: Option<PathBuf>,
    /// `None` when that file is whole (both checksums) and made for these model files on this
    /// CPU by this version; else why the next load prepares it (again).
    pub problem: Option<String>,
}

/// The state of the prepared file of the model in `dir` (`cache`: where it goes when `dir`
/// is read-only), its checksums checked whole.
pub(crate) fn prepared_state(dir: &Path, cache: Option<&Path>) -> PreparedState {
    let places: Vec<&Path> = std::iter::once(dir).chain(cache).collect();
    let engine = Engine::from_env();
    let precision = match engine {
        Engine::Reference => {
            return PreparedState {
                precision: None,
                path: None,
                problem: Some("candle-transformers' engine reads no prepared file".into()),
            };
        }
        Engine::Fast => {
            let here = Fingerprint::here();
            let weights = dir.join("model.safetensors");
            match places
                .iter()
                .find_map(|p| calibration::cached(p, &weights, &here))
            {
                Some(p) => p,
                None => {
                    return PreparedState {
                        precision: None,
                        path: None,
                        problem: Some(
                            "not measured on this CPU yet: the next load measures the paths and prepares the fastest"
                                .into(),
                        ),
                    };
                }
            }
        }
        forced => wanted_precision(forced),
    };
    let mut first: Option<(PathBuf, String)> = None;
    for place in &places {
        let Some(cache) = prepared_cache(place, dir, precision) else {
            continue;
        };
        match cache.verify() {
            Ok(()) => {
                return PreparedState {
                    precision: Some(precision.name().into()),
                    path: Some(cache.path().to_path_buf()),
                    problem: None,
                };
            }
            Err(why) => {
                if first.is_none()
                    || (cache.path().exists() && !first.as_ref().is_some_and(|f| f.0.exists()))
                {
                    first = Some((cache.path().to_path_buf(), why));
                }
            }
        }
    }
    PreparedState {
        precision: Some(precision.name().into()),
        path: first.as_ref().map(|f| f.0.clone()),
        problem: Some(first.map_or_else(|| "the model's files cannot be read".into(), |f| f.1)),
    }
}

/// Writes the prepared file beside the model, or, where its folder is read-only, in the cache
/// folder (`places[1]`), saying so.
pub(super) fn save_prepared(
    places: &[&Path],
    model_dir: &Path,
    precision: Precision,
    write: impl Fn(&mut Writer) -> std::io::Result<()>,
) {
    for (i, place) in places.iter().enumerate() {
        let Some(cache) = prepared_cache(place, model_dir, precision) else {
            return;
        };
        match cache.try_save(&write) {
            Ok(()) => {
                if i > 0 {
                    tracing::warn!(
                        model = %model_dir.display(),
                        prepared = %cache.path().display(),
                        "the model's folder is read-only: its prepared weights are kept in the data directory's cache"
                    );
                } else {
                    tracing::debug!(path = %cache.path().display(), "prepared file saved");
                }
                return;
            }
            Err(e) => {
                tracing::debug!(path = %cache.path().display(), error = %e, "prepared file not saved here")
            }
        }
    }
}
