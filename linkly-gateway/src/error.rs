//! The gateway's errors.

use linkly_core::{CodedError, ErrorCode};

/// A gateway failure: a caller's mistake (with the code a tool answer carries) or storage.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// A bad argument, name or request.
    #[error("{0}")]
    Invalid(String),
    /// Something named does not exist (or is not visible to the caller).
    #[error("{0}")]
    NotFound(String),
    /// It exists already.
    #[error("{0}")]
    Conflict(String),
    /// No or a wrong token.
    #[error("{0}")]
    Unauthorized(String),
    /// A per-user limit was reached (open MCP sessions, bytes published per day): the message
    /// says the limit, the use and what to do (HTTP 429).
    #[error("{0}")]
    Limit(String),
    /// The database failed.
    #[error("database: {0}")]
    Database(String),
    /// A database server cannot be reached (down, restarting, refusing connections); the
    /// message names it.
    #[error("database: {0}")]
    Unavailable(String),
    /// A local index failed.
    #[error(transparent)]
    Index(#[from] linkly_index::Error),
    /// A file could not be read or written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl GatewayError {
    /// An invalid argument.
    pub fn invalid(message: impl Into<String>) -> GatewayError {
        GatewayError::Invalid(message.into())
    }

    /// Something not found.
    pub fn not_found(message: impl Into<String>) -> GatewayError {
        GatewayError::NotFound(message.into())
    }
}

#[cfg(feature = "server")]
impl From<rusqlite::Error> for GatewayError {
    fn from(e: rusqlite::Error) -> GatewayError {
        GatewayError::Database(e.to_string())
    }
}

#[cfg(feature = "server")]
impl From<postgres::Error> for GatewayError {
    fn from(e: postgres::Error) -> GatewayError {
        GatewayError::Database(e.to_string())
    }
}

impl CodedError for GatewayError {
    fn error_code(&self) -> ErrorCode {
        match self {
            GatewayError::Invalid(_) => ErrorCode::InvalidArgument,
            GatewayError::NotFound(_) => ErrorCode::LibraryNotFound,
            GatewayError::Conflict(_) => ErrorCode::InvalidArgument,
            GatewayError::Unauthorized(_) | GatewayError::Limit(_) => ErrorCode::InvalidArgument,
            GatewayError::Database(_) | GatewayError::Unavailable(_) | GatewayError::Io(_) => {
                ErrorCode::Internal
            }
            GatewayError::Index(e) => e.error_code(),
        }
    }
}

/// A gateway result.
pub type Result<T, E = GatewayError> = std::result::Result<T, E>;
