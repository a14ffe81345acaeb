/// Errors of this crate outside a single file's extraction (a file's own problems are
/// [`crate::SkipReason`]s, not errors).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file-system failure; the message names the path.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
