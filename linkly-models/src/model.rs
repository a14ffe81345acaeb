//! The model manager: which embedding model is selected, where its files are, and (with the
//! `download` feature) fetching it from the Hugging Face hub into the data directory.
//!
//! Layout: `<data dir>/models/selected` names the model (default [`DEFAULT_MODEL`]); a model's
//! files live in `<data dir>/models/<org>--<name>/`. The download (`hub.rs`: the hub's
//! `resolve` URLs under `HF_ENDPOINT`, resumed with HTTP `Range`, checked against the hub's size
//! and SHA-256) fills a `<org>--<name>.partial` folder, each file arriving as `<file>.part`; the
//! folder is renamed into place once complete, so a model folder is complete or absent, and an
//! interrupted download continues where it stopped. `LINKLY_MODEL_DIR` points at a local folder
//! instead (offline machines).

use std::path::{Path, PathBuf};

use crate::embedder::MODEL_FILES;
use crate::{ModelError, Result};

#[cfg(feature = "download")]
mod hub;

/// The model used unless another is selected: multilingual (FR/ZH/JA/ES/EN and ~95 more), 384
/// dimensions, BERT architecture with an XLM-R SentencePiece vocabulary (see docs/models.md).
pub const DEFAULT_MODEL: &str = "intfloat/multilingual-e5-small";

/// Models Linkly knows; any other hub id of the BERT or XLM-R family works too.
pub const KNOWN_MODELS: &[(&str, &str)] = &[
    (
        "intfloat/multilingual-e5-small",
        "default; multilingual, 384 dims, 118M parameters (470 MB)",
    ),
    (
        "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2",
        "multilingual, 384 dims, trained for paraphrase rather than retrieval (470 MB)",
    ),
    (
        "sentence-transformers/all-MiniLM-L6-v2",
        "English only, 384 dims, 23M parameters, fastest (90 MB)",
    ),
    (
        "intfloat/multilingual-e5-base",
        "multilingual, 768 dims, XLM-R architecture, slower and better (1.1 GB)",
    ),
];

/// Files fetched when the hub has them (pooling and normalisation settings, sequence length).
#[cfg(feature = "download")]
const OPTIONAL_FILES: [&str; 3] = [
    "modules.json",
    "1_Pooling/config.json",
    "sentence_bert_config.json",
];

/// Where the model to use is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoice {
    /// The model's name (a hub id, or the folder's name for `LINKLY_MODEL_DIR`).
    pub name: String,
    /// The folder holding (or to hold) its files.
    pub dir: PathBuf,
    /// True when `LINKLY_MODEL_DIR` chose it.
    pub from_env: bool,
    /// Where its prepared weights go when its folder is read-only
    /// (`<data dir>/cache/models/<org>--<name>`); `None`: only beside the model.
    pub cache: Option<PathBuf>,
}

impl ModelChoice {
    /// Whether the folder holds the model's files.
    pub fn is_present(&self) -> bool {
        MODEL_FILES.iter().all(|f| self.dir.join(f).is_file())
    }
}

/// Progress of a download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadProgress {
    /// The file being fetched.
    pub file: String,
    /// Bytes of that file on disk.
    pub done: u64,
    /// Its size (0 when the server does not say).
    pub total: u64,
    /// Bytes of that file already on disk when this attempt started (an interrupted download
    /// resumed); `done - resumed_from` is what this attempt fetched.
    pub resumed_from: u64,
}

/// The models of one data directory.
#[derive(Debug, Clone)]
pub struct ModelManager {
    models_dir: PathBuf,
}

/// The full hub id of a short name (`all-MiniLM-L6-v2` → `sentence-transformers/all-MiniLM-L6-v2`).
pub fn canonical_name(name: &str) -> String {
    let name = name.trim();
    if name.contains('/') {
        return name.to_string();
    }
    KNOWN_MODELS
        .iter()
        .find(|(full, _)| full.rsplit('/').next() == Some(name))
        .map_or_else(|| name.to_string(), |(full, _)| full.to_string())
}

impl ModelManager {
    /// The models of the data directory `data_root`.
    pub fn new(data_root: &Path) -> ModelManager {
        ModelManager {
            models_dir: data_root.join("models"),
        }
    }

    /// The folder of downloaded models.
    pub fn models_dir(&self) -> &Path {
        &self.models_dir
    }

    /// The folder a hub model is kept in.
    pub fn dir_of(&self, name: &str) -> PathBuf {
        self.models_dir.join(name.replace('/', "--"))
    }

    /// Where the prepared weights of model `name` go when its folder is read-only:
    /// `<data dir>/cache/models/<org>--<name>`.
    pub fn cache_of(&self, name: &str) -> PathBuf {
        let data_root = self.models_dir.parent().unwrap_or(Path::new("."));
        data_root
            .join("cache")
            .join("models")
            .join(name.replace('/', "--"))
    }

    /// The selected model's name.
    pub fn selected(&self) -> String {
        fs_err::read_to_string(self.models_dir.join("selected"))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| DEFAULT_MODEL.to_string())
    }

    /// Selects a model (by hub id or short name); returns its full name.
    pub fn select(&self, name: &str) -> Result<String> {
        let name = canonical_name(name);
        if name.is_empty() || name.contains("..") || name.split('/').count() > 2 {
            return Err(ModelError::InvalidName(name).into());
        }
        fs_err::create_dir_all(&self.models_dir)?;
        fs_err::write(self.models_dir.join("selected"), format!("{name}\n"))?;
        Ok(name)
    }

    /// The model to use: `LINKLY_MODEL_DIR` when set, else the selected one.
    pub fn choice(&self) -> ModelChoice {
        if let Some(dir) = std::env::var_os(linkly_core::env::LINKLY_MODEL_DIR)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
        {
            return ModelChoice {
                name: local_name(&dir),
                cache: Some(self.cache_of(&local_name(&dir))),
                dir,
                from_env: true,
            };
        }
        let name = self.selected();
        ModelChoice {
            dir: self.dir_of(&name),
            cache: Some(self.cache_of(&name)),
            name,
            from_env: false,
        }
    }

    /// Downloads a hub model into its folder, reporting progress. An interrupted download
    /// (this run's or an earlier one's) resumes from the files already fetched. Returns the
    /// folder.
    #[cfg(feature = "download")]
    pub fn download(
        &self,
        name: &str,
        progress: &mut dyn FnMut(&DownloadProgress),
    ) -> Result<PathBuf> {
        let name = canonical_name(name);
        let target = self.dir_of(&name);
        if MODEL_FILES.iter().all(|f| target.join(f).is_file()) {
            return Ok(target);
        }
        let hub = hub::Hub::from_env();
        let partial = self
            .models_dir
            .join(format!("{}.partial", name.replace('/', "--")));
        fs_err::create_dir_all(&partial)?;
        let files = MODEL_FILES
            .iter()
            .map(|f| (*f, true))
            .chain(OPTIONAL_FILES.iter().map(|f| (*f, false)));
        for (file, required) in files {
            let dest = partial.join(file);
            if dest.is_file() {
                continue;
            }
            match hub.fetch(&name, file, &dest, progress)? {
                hub::Fetched::Done => {}
                hub::Fetched::NotFound if required => {
                    return Err(ModelError::NotOnHub {
                        url: hub.url(&name, file),
                        model: name,
                    }
                    .into());
                }
                hub::Fetched::NotFound => {
                    tracing::debug!(file, "optional model file not on the hub")
                }
            }
        }
        if target.exists() {
            fs_err::remove_dir_all(&target)?;
        }
        fs_err::rename(&partial, &target)?;
        // The cache of earlier versions, which downloaded through hf-hub.
        let _ = fs_err::remove_dir_all(self.models_dir.join(".hub"));
        Ok(target)
    }
}

/// The name of a local model folder: the folder's name (its config's `_name_or_path` often
/// names the base model it was trained from, not the model).
fn local_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "local".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_selection() {
        assert_eq!(
            canonical_name("all-MiniLM-L6-v2"),
            "sentence-transformers/all-MiniLM-L6-v2"
        );
        let tmp = tempfile::tempdir().unwrap();
        let m = ModelManager::new(tmp.path());
        assert_eq!(m.selected(), DEFAULT_MODEL);
        assert_eq!(
            m.select("all-MiniLM-L6-v2").unwrap(),
            "sentence-transformers/all-MiniLM-L6-v2"
        );
        assert_eq!(m.selected(), "sentence-transformers/all-MiniLM-L6-v2");
        assert!(m.select("../x/y").is_err());
        assert!(
            m.dir_of(&m.selected())
                .ends_with("models/sentence-transformers--all-MiniLM-L6-v2")
        );
    }
}
