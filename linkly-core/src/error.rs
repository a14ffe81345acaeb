use std::path::PathBuf;

/// Errors of the shared vocabulary: bad ids, bad times, an unreadable or invalid config file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A document id that is neither `local://<integer>` nor a bare integer.
    #[error("invalid doc_id {0:?}: expected local://<integer> or a bare integer")]
    InvalidDocId(String),
    /// A time that is neither a bare ISO date nor RFC 3339.
    #[error(
        "invalid time {0:?}: expected an ISO 8601 date (2024-01-31) or RFC 3339 time (2024-01-31T12:00:00Z)"
    )]
    InvalidTime(String),
    /// An unknown doc-type token.
    #[error("unknown document type {0:?}; supported: {supported}", supported = crate::DocType::supported_list())]
    UnknownDocType(String),
    /// The config file exists but is not valid TOML of the expected shape.
    #[error("config file {path} is invalid: {message}")]
    Config {
        /// The config file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A library that cannot be defined, changed or found as asked.
    #[error("{0}")]
    Library(String),
    /// A file-system failure; the message names the path.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
