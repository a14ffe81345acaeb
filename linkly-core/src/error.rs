use std::path::PathBuf;

use crate::{CodedError, ErrorCode};

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
    #[error(transparent)]
    Library(#[from] LibraryError),
    /// A setting that cannot be read or changed as asked.
    #[error(transparent)]
    Setting(#[from] crate::SettingError),
    /// A file-system failure; the message names the path.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Why a library cannot be defined, changed or found as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LibraryError {
    /// No library has this name or id.
    #[error("no library {0:?}; `linkly library list` shows them")]
    NotFound(String),
    /// A name that cannot be a library's (empty, or shaped like an address).
    #[error("invalid library name {0:?}: use a plain name like \"research\"")]
    InvalidName(String),
    /// Another library has this name (names compare ignoring ASCII case).
    #[error("a library named {0:?} exists already")]
    NameTaken(String),
    /// A library folder that is not a directory.
    #[error("{} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// A library without folders and without tags would hold nothing.
    #[error("a library needs at least one folder or one tag")]
    Empty,
    /// A folder to remove that the library does not have.
    #[error("{} is not a folder of library {library:?}", folder.display())]
    NotAFolder {
        /// The folder asked for.
        folder: PathBuf,
        /// The library's name.
        library: String,
    },
}

impl CodedError for LibraryError {
    fn error_code(&self) -> ErrorCode {
        match self {
            LibraryError::NotFound(_) => ErrorCode::LibraryNotFound,
            _ => ErrorCode::InvalidArgument,
        }
    }
}

impl CodedError for Error {
    fn error_code(&self) -> ErrorCode {
        match self {
            Error::InvalidDocId(_) | Error::InvalidTime(_) | Error::UnknownDocType(_) => {
                ErrorCode::InvalidArgument
            }
            Error::Library(e) => e.error_code(),
            Error::Setting(e) => e.error_code(),
            // A broken config file or a failing disk: nothing the caller's arguments can fix.
            Error::Config { .. } | Error::Io(_) => ErrorCode::Internal,
        }
    }
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_carries_its_code() {
        assert_eq!(
            Error::InvalidDocId("x".into()).error_code(),
            ErrorCode::InvalidArgument
        );
        assert_eq!(
            Error::from(LibraryError::NotFound("x".into())).error_code(),
            ErrorCode::LibraryNotFound
        );
        assert_eq!(
            Error::from(LibraryError::NameTaken("x".into())).error_code(),
            ErrorCode::InvalidArgument
        );
        let io = Error::Io(std::io::Error::other("disk"));
        assert_eq!(io.error_code(), ErrorCode::Internal);
        assert!(io.is_internal());
        assert!(!Error::InvalidTime("x".into()).is_internal());
    }
}
