use std::path::PathBuf;

use linkly_core::{CodedError, ErrorCode};

/// Errors of the model runtime.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The model is missing, does not load or failed.
    #[error("embedding model: {0}")]
    Model(#[from] ModelError),
    /// A file-system failure; the message names the path.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl CodedError for Error {
    fn error_code(&self) -> ErrorCode {
        match self {
            Error::Model(e) => e.error_code(),
            Error::Io(_) => ErrorCode::Internal,
        }
    }
}

/// Why the embedding model cannot be used or fetched.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// No model is loaded (missing, downloading, loading or broken); the status says which.
    #[error("no embedding model is loaded ({status})")]
    NotLoaded {
        /// The model manager's account of the model, e.g. `not downloaded`.
        status: String,
    },
    /// A name that cannot be a hub model id.
    #[error("{0:?} is not a model name (expected <org>/<name>, as on the Hugging Face hub)")]
    InvalidName(String),
    /// A required file of the model is not on the hub.
    #[error(
        "{url} is not on the hub (is {model} a model id? see `linkly model status` for known ones)"
    )]
    NotOnHub {
        /// The model's name.
        model: String,
        /// The file's address.
        url: String,
    },
    /// A downloaded file does not have the hub's checksum (it was removed).
    #[error(
        "{file} is corrupt (SHA-256 {actual}, the hub says {expected}); it was removed, run the download again"
    )]
    Checksum {
        /// `<repo>/<file>`.
        file: String,
        /// The checksum of the bytes received.
        actual: String,
        /// The hub's checksum.
        expected: String,
    },
    /// The hub refused the file (a private or gated model).
    #[error(
        "{url}: HTTP {status} (a private or gated model? set HF_TOKEN to a hub token that may read it)"
    )]
    Denied {
        /// The file's address.
        url: String,
        /// The HTTP status (401 or 403).
        status: u16,
    },
    /// The download failed (the bytes fetched so far are kept).
    #[error("downloading {url}: {reason}")]
    Download {
        /// The file's address.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The model's files are there but do not load.
    #[error("{}: {reason}", dir.display())]
    Load {
        /// The model's folder.
        dir: PathBuf,
        /// Why it does not load.
        reason: String,
    },
    /// Running the model failed.
    #[error("{stage}: {reason}")]
    Inference {
        /// `tokenizing` or `embedding`.
        stage: &'static str,
        /// What went wrong.
        reason: String,
    },
}

impl CodedError for ModelError {
    fn error_code(&self) -> ErrorCode {
        match self {
            ModelError::NotLoaded { .. } | ModelError::Load { .. } => ErrorCode::ModelUnavailable,
            ModelError::InvalidName(_) | ModelError::NotOnHub { .. } => ErrorCode::InvalidArgument,
            ModelError::Checksum { .. }
            | ModelError::Denied { .. }
            | ModelError::Download { .. } => ErrorCode::ModelUnavailable,
            ModelError::Inference { .. } => ErrorCode::Internal,
        }
    }
}

impl ModelError {
    /// What the caller can do about it, when there is something.
    pub fn advice(&self) -> Option<&'static str> {
        match self {
            ModelError::NotLoaded { .. } | ModelError::Load { .. } => Some(
                "keyword search still works; `linkly model download` fetches the embedding model",
            ),
            ModelError::Checksum { .. } | ModelError::Download { .. } => {
                Some("run `linkly model download` again: it resumes")
            }
            _ => None,
        }
    }
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
