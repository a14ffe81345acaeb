use linkly_core::ErrorCode;
use serde_json::{Value, json};

/// A tool failure the caller can act on: a stable code, a message saying what to do, and
/// optional details (a note conflict's actual version, say).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("[{code}] {message}")]
pub struct ToolError {
    /// The stable code.
    pub code: ErrorCode,
    /// What went wrong and what to do.
    pub message: String,
    /// Machine-readable details.
    pub details: Option<Value>,
}

impl ToolError {
    /// An error with a code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ToolError {
        ToolError {
            code,
            message: message.into(),
            details: None,
        }
    }

    /// `INVALID_ARGUMENT`.
    pub fn invalid(message: impl Into<String>) -> ToolError {
        ToolError::new(ErrorCode::InvalidArgument, message)
    }

    /// `INTERNAL`, logged.
    pub fn internal(err: impl std::fmt::Display) -> ToolError {
        tracing::error!(error = %err, "internal tool failure");
        ToolError::new(ErrorCode::Internal, format!("internal error: {err}"))
    }

    /// `DOC_NOT_FOUND` for an id.
    pub fn doc_not_found(id: &str) -> ToolError {
        ToolError::new(
            ErrorCode::DocNotFound,
            format!(
                "document {id} not found; the id may be stale (file moved or deleted): search again"
            ),
        )
    }

    /// The error as JSON: `{"error":{"code","message","details"}}`.
    pub fn to_json(&self) -> Value {
        let mut e = json!({"code": self.code.as_str(), "message": self.message});
        if let Some(d) = &self.details {
            e["details"] = d.clone();
        }
        json!({ "error": e })
    }
}

impl From<linkly_index::Error> for ToolError {
    fn from(e: linkly_index::Error) -> ToolError {
        match e {
            // Actionable: the caller can wait, or use the process that writes.
            linkly_index::Error::Locked(_) => {
                ToolError::new(ErrorCode::IndexBusy, format!("{e}; try again in a moment"))
            }
            e => ToolError::internal(e),
        }
    }
}

/// The result type of this crate.
pub type Result<T, E = ToolError> = std::result::Result<T, E>;

/// Checks an integer parameter's range.
pub(crate) fn check_range(name: &str, value: i64, min: i64, max: i64) -> Result<i64> {
    if value < min || value > max {
        return Err(ToolError::invalid(format!(
            "{name} must be between {min} and {max} (got {value})"
        )));
    }
    Ok(value)
}

/// Checks an enum-like string parameter.
pub(crate) fn check_choice<'a>(name: &str, value: &'a str, allowed: &[&str]) -> Result<&'a str> {
    if allowed.contains(&value) {
        Ok(value)
    } else {
        Err(ToolError::invalid(format!(
            "{name} must be one of {} (got {value:?})",
            allowed
                .iter()
                .map(|a| format!("\"{a}\""))
                .collect::<Vec<_>>()
                .join(", ")
        )))
    }
}
