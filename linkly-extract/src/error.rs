/// Errors of this crate outside a single file's extraction (a file's own problems are
/// [`crate::SkipReason`]s, not errors).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file-system failure; the message names the path.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl linkly_core::CodedError for Error {
    fn error_code(&self) -> linkly_core::ErrorCode {
        match self {
            // A failing disk or a missing worker binary: not the caller's to fix.
            Error::Io(_) => linkly_core::ErrorCode::Internal,
        }
    }
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
