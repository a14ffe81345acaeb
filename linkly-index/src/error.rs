use std::path::PathBuf;

/// Errors of the index.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Another process holds the index writer (a running `linkly serve`, or another
    /// `linkly index`).
    #[error(
        "the index at {0} is being written by another Linkly process; stop it or use it instead"
    )]
    Locked(PathBuf),
    /// The metadata store failed.
    #[error("metadata store: {0}")]
    Store(#[from] rusqlite::Error),
    /// The lexical index failed.
    #[error("lexical index: {0}")]
    Lexical(#[from] tantivy::TantivyError),
    /// The lexical index directory could not be opened.
    #[error("lexical index directory: {0}")]
    Directory(#[from] tantivy::directory::error::OpenDirectoryError),
    /// A stored record could not be decoded.
    #[error("corrupt stored record: {0}")]
    Corrupt(String),
    /// A stored JSON column could not be decoded.
    #[error("corrupt stored JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The embedding model is missing, does not load or failed.
    #[error("embedding model: {0}")]
    Model(String),
    /// A file-system failure; the message names the path.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
