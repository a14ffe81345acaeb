use std::fmt;
use std::path::PathBuf;

use linkly_core::{CodedError, ErrorCode};
use linkly_models::ModelError;

/// Errors of the index.
///
/// Opaque over the storage crates: a SQLite or tantivy failure is a [`StorageError`], which
/// says which storage failed and how ([`StorageKind`]) and keeps the original error as its
/// `source()`, so no type of those crates is part of this crate's API.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Another process holds the index writer (a running `linkly serve`, or another
    /// `linkly index`).
    #[error("the index at {} is being written by another Linkly process", .0.display())]
    Locked(PathBuf),
    /// The metadata store, the vector store or the full-text index failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A stored record could not be decoded.
    #[error("corrupt stored record: {0}")]
    Corrupt(String),
    /// A stored JSON column could not be decoded.
    #[error("corrupt stored JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The embedding model is missing, does not load or failed.
    #[error("embedding model: {0}")]
    Model(#[from] ModelError),
    /// A file-system failure; the message names the path.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A path glob does not compile; the message says why and names the parameter.
    #[error("{0}")]
    InvalidGlob(String),
    /// A store of documents outside this index failed (a gateway's database, read through
    /// [`crate::Corpus`]): its message and the code a tool answer carries.
    #[error("{message}")]
    External {
        /// The code of the tool answer.
        code: ErrorCode,
        /// What failed, in the store's words.
        message: String,
    },
}

impl CodedError for Error {
    fn error_code(&self) -> ErrorCode {
        match self {
            Error::Locked(_) => ErrorCode::IndexBusy,
            Error::Storage(e) => e.error_code(),
            Error::Model(e) => e.error_code(),
            Error::Corrupt(_) | Error::Json(_) | Error::Io(_) => ErrorCode::Internal,
            Error::InvalidGlob(_) => ErrorCode::InvalidArgument,
            Error::External { code, .. } => *code,
        }
    }
}

impl Error {
    /// What the caller (a person or an agent) can do about it, when there is something.
    pub fn advice(&self) -> Option<&'static str> {
        match self {
            Error::Locked(_) => Some(
                "try again in a moment, or stop that process (a `linkly serve`, or a `linkly index`) or use it instead",
            ),
            Error::Storage(e) if e.kind() == StorageKind::Busy => {
                Some("try again in a moment; another Linkly process is writing the index")
            }
            Error::Storage(e) if e.kind() == StorageKind::Corrupt => {
                Some("`linkly doctor --fix` rebuilds the index from the files")
            }
            Error::Corrupt(_) | Error::Json(_) => {
                Some("`linkly doctor --fix` rebuilds the index from the files")
            }
            Error::Model(e) => e.advice(),
            _ => None,
        }
    }
}

/// Which storage of the index failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Storage {
    /// The SQLite databases: the metadata store (`meta.sqlite`) and the vectors
    /// (`vectors.sqlite`).
    Metadata,
    /// The full-text index (the `lexical` folder).
    FullText,
}

impl fmt::Display for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Storage::Metadata => "metadata store",
            Storage::FullText => "lexical index",
        })
    }
}

/// How a storage failed, as far as the caller can act on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StorageKind {
    /// Another process holds a lock on it: retry in a moment.
    Busy,
    /// Its files are damaged or not of the expected format: the index can be rebuilt from the
    /// files (`linkly doctor --fix`).
    Corrupt,
    /// The disk is full, or the files cannot be written.
    Unwritable,
    /// Any other failure.
    Other,
}

/// A failure of one of the index's storages; the storage crate's own error is its `source()`.
#[derive(Debug)]
pub struct StorageError {
    storage: Storage,
    kind: StorageKind,
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl StorageError {
    /// Which storage failed.
    pub fn storage(&self) -> Storage {
        self.storage
    }

    /// How it failed.
    pub fn kind(&self) -> StorageKind {
        self.kind
    }
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.storage, self.source)
    }
}

impl std::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

impl CodedError for StorageError {
    fn error_code(&self) -> ErrorCode {
        match self.kind {
            StorageKind::Busy => ErrorCode::IndexBusy,
            StorageKind::Corrupt | StorageKind::Unwritable | StorageKind::Other => {
                ErrorCode::Internal
            }
        }
    }
}

// The conversions below let `?` wrap the storage crates' errors inside this crate; they are
// hidden from the documentation, and no variant or signature names those crates' types.

#[doc(hidden)]
impl From<rusqlite::Error> for StorageError {
    fn from(e: rusqlite::Error) -> StorageError {
        use rusqlite::ErrorCode as Sql;
        let kind = match e.sqlite_error_code() {
            Some(Sql::DatabaseBusy | Sql::DatabaseLocked) => StorageKind::Busy,
            Some(Sql::DatabaseCorrupt | Sql::NotADatabase) => StorageKind::Corrupt,
            Some(Sql::DiskFull | Sql::ReadOnly | Sql::CannotOpen | Sql::PermissionDenied) => {
                StorageKind::Unwritable
            }
            _ => StorageKind::Other,
        };
        StorageError {
            storage: Storage::Metadata,
            kind,
            source: Box::new(e),
        }
    }
}

#[doc(hidden)]
impl From<tantivy::TantivyError> for StorageError {
    fn from(e: tantivy::TantivyError) -> StorageError {
        use tantivy::TantivyError as T;
        let kind = match &e {
            T::LockFailure(..) => StorageKind::Busy,
            T::DataCorruption(_) | T::IncompatibleIndex(_) | T::SchemaError(_) => {
                StorageKind::Corrupt
            }
            _ => StorageKind::Other,
        };
        StorageError {
            storage: Storage::FullText,
            kind,
            source: Box::new(e),
        }
    }
}

/// `From<$store_error> for Error`: a store's error, classified as its [`StorageError`].
macro_rules! storage_errors {
    ($($store_error:ty),*) => {$(
        #[doc(hidden)]
        impl From<$store_error> for Error {
            fn from(e: $store_error) -> Error {
                Error::Storage(e.into())
            }
        }
    )*};
}
storage_errors!(rusqlite::Error, tantivy::TantivyError);

#[doc(hidden)]
impl From<tantivy::directory::error::OpenDirectoryError> for Error {
    fn from(e: tantivy::directory::error::OpenDirectoryError) -> Error {
        Error::Storage(StorageError {
            storage: Storage::FullText,
            kind: StorageKind::Other,
            source: Box::new(e),
        })
    }
}

#[doc(hidden)]
impl From<linkly_models::Error> for Error {
    fn from(e: linkly_models::Error) -> Error {
        match e {
            linkly_models::Error::Model(e) => Error::Model(e),
            linkly_models::Error::Io(e) => Error::Io(e),
        }
    }
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locked_is_busy_with_advice() {
        let e = Error::Locked(PathBuf::from("/x"));
        assert_eq!(e.error_code(), ErrorCode::IndexBusy);
        assert!(!e.is_internal());
        assert!(e.advice().unwrap().contains("try again"));
    }

    #[test]
    fn sqlite_busy_is_busy_and_corruption_is_internal_with_advice() {
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            None,
        );
        let e = Error::from(busy);
        assert_eq!(e.error_code(), ErrorCode::IndexBusy);
        assert!(e.to_string().starts_with("metadata store: "), "{e}");
        let Error::Storage(s) = &e else { panic!() };
        assert_eq!(s.kind(), StorageKind::Busy);
        assert!(std::error::Error::source(s).is_some());

        let corrupt = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
            None,
        );
        let e = Error::from(corrupt);
        assert_eq!(e.error_code(), ErrorCode::Internal);
        assert!(e.advice().unwrap().contains("doctor --fix"));
    }

    #[test]
    fn tantivy_lock_failure_is_busy() {
        let e = Error::from(tantivy::TantivyError::LockFailure(
            tantivy::directory::error::LockError::LockBusy,
            None,
        ));
        assert_eq!(e.error_code(), ErrorCode::IndexBusy);
        let Error::Storage(s) = &e else { panic!() };
        assert_eq!(s.storage(), Storage::FullText);
    }

    #[test]
    fn model_errors_carry_their_code() {
        let missing = Error::from(ModelError::NotLoaded {
            status: "not downloaded".into(),
        });
        assert_eq!(missing.error_code(), ErrorCode::ModelUnavailable);
        assert!(missing.advice().unwrap().contains("linkly model download"));
        assert_eq!(
            ModelError::InvalidName("..".into()).error_code(),
            ErrorCode::InvalidArgument
        );
        assert!(
            ModelError::Inference {
                stage: "embedding",
                reason: "x".into()
            }
            .is_internal()
        );
    }
}
