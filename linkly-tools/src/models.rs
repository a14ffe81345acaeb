//! The models on disk, for the person's window: the embedding models (the selected one and
//! the others downloaded or imported) and the speech model, with the engine the calibration
//! chose for it and its timings; importing a model from a path (a Whisper folder becomes the
//! speech model, anything an embedding import takes becomes an embedding model; anything else
//! is refused saying what was expected) and removing one.
//!
//! The `linkly model` commands stay the CLI's; both read the same folders
//! (`<data dir>/models/…`, `<data dir>/models/speech`).

use std::path::{Path, PathBuf};

use linkly_index::vector::{ImportOptions, ModelManager};
use linkly_models::whisper;

use crate::{Linkly, Result, ToolError};

/// An embedding model folder on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingModelOnDisk {
    /// Its name (`intfloat/multilingual-e5-small`, an imported name).
    pub name: String,
    /// Its folder.
    pub dir: PathBuf,
    /// The bytes its files take.
    pub bytes: u64,
    /// Whether it is the selected model.
    pub selected: bool,
}

/// The speech model on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeechModelOnDisk {
    /// What it is (`Whisper base (multilingual)`).
    pub about: String,
    /// Its folder.
    pub dir: PathBuf,
    /// The bytes its files take.
    pub bytes: u64,
    /// The precision the calibration chose for this CPU, with each candidate's time (ms).
    pub engine: Option<(String, Vec<(String, f64)>)>,
}

/// The models on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelsOnDisk {
    /// The selected embedding model's name (on disk or not).
    pub selected: String,
    /// The embedding models on disk.
    pub embedding: Vec<EmbeddingModelOnDisk>,
    /// The speech model, when one is installed.
    pub speech: Option<SpeechModelOnDisk>,
}

/// What an import installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelImported {
    /// An embedding model, by name.
    Embedding(String),
    /// The speech model (`Whisper base (multilingual)`).
    Speech(String),
}

/// The bytes under a folder.
fn size_of(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs_err::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(_) => total += e.metadata().map(|m| m.len()).unwrap_or(0),
                Err(_) => {}
            }
        }
    }
    total
}

impl Linkly {
    fn model_manager(&self) -> ModelManager {
        ModelManager::new(self.data_dir().root())
    }

    /// The models on disk.
    pub fn models_on_disk(&self) -> ModelsOnDisk {
        let manager = self.model_manager();
        let selected = manager.selected();
        let speech_dir = self.data_dir().speech_model_dir();
        let mut embedding = Vec::new();
        if let Ok(entries) = fs_err::read_dir(manager.models_dir()) {
            for e in entries.flatten() {
                let dir = e.path();
                if !dir.is_dir() || dir == speech_dir || !dir.join("config.json").is_file() {
                    continue;
                }
                let name = e.file_name().to_string_lossy().replace("--", "/");
                embedding.push(EmbeddingModelOnDisk {
                    selected: name == selected,
                    bytes: size_of(&dir),
                    name,
                    dir,
                });
            }
        }
        embedding.sort_by(|a, b| a.name.cmp(&b.name));
        let speech = whisper::recognise(&speech_dir)
            .ok()
            .map(|_| SpeechModelOnDisk {
                about: whisper::describe(&speech_dir).unwrap_or_else(|_| "Whisper".into()),
                bytes: size_of(&speech_dir),
                engine: whisper::calibration(&speech_dir).map(|c| {
                    (
                        c.chosen.clone(),
                        c.paths
                            .iter()
                            .map(|p| (p.precision.clone(), p.ms))
                            .collect(),
                    )
                }),
                dir: speech_dir,
            });
        ModelsOnDisk {
            selected,
            embedding,
            speech,
        }
    }

    /// Imports a model from a folder (or file) on this machine: a Whisper model becomes the
    /// speech model (calibrated now), anything else is tried as an embedding model. A path
    /// that is neither is refused with what each side expected.
    pub fn import_model(&self, path: &Path) -> Result<ModelImported> {
        if !path.is_absolute() {
            return Err(ToolError::invalid(format!(
                "{} is not an absolute path: give the full path of the model's folder",
                path.display()
            )));
        }
        if !path.exists() {
            return Err(ToolError::invalid(format!(
                "{} does not exist",
                path.display()
            )));
        }
        if whisper::recognise(path).is_ok() {
            let dest = self.data_dir().speech_model_dir();
            whisper::import(path, &dest).map_err(|e| ToolError::invalid(e.to_string()))?;
            // Calibrated now, so that the first transcription only maps the weights.
            if let Err(e) = whisper::Whisper::load(&dest) {
                tracing::warn!(error = %e, "the imported speech model could not be loaded");
            }
            let about = whisper::describe(&dest).unwrap_or_else(|_| "Whisper".into());
            return Ok(ModelImported::Speech(about));
        }
        let manager = self.model_manager();
        match manager.import(path, &ImportOptions::default()) {
            Ok(imported) => Ok(ModelImported::Embedding(imported.name)),
            Err(e) => {
                let whisper_side = match whisper::recognise(path) {
                    Ok(_) => String::new(),
                    Err(w) => w.to_string(),
                };
                Err(ToolError::invalid(format!(
                    "{e}; nor is it a Whisper speech model: {whisper_side}"
                )))
            }
        }
    }

    /// Removes the speech model, or an embedding model by name (not the one in use by a
    /// running search: the selected model stays until another is selected).
    pub fn remove_model(&self, speech: bool, name: &str) -> Result<()> {
        if speech {
            let dir = self.data_dir().speech_model_dir();
            if dir.is_dir() {
                fs_err::remove_dir_all(&dir).map_err(ToolError::internal)?;
            }
            return Ok(());
        }
        let on_disk = self.models_on_disk();
        let Some(model) = on_disk.embedding.iter().find(|m| m.name == name) else {
            return Err(ToolError::invalid(format!(
                "no embedding model {name:?} is on disk"
            )));
        };
        if model.selected {
            return Err(ToolError::invalid(format!(
                "{name} is the selected embedding model: select another first (`linkly model use <name>`)"
            )));
        }
        fs_err::remove_dir_all(&model.dir).map_err(ToolError::internal)?;
        Ok(())
    }
}
