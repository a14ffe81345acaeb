use linkly_core::{CodedError, ErrorCode};
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

    /// The same error with machine-readable details.
    pub fn with_details(mut self, details: Value) -> ToolError {
        self.details = Some(details);
        self
    }

    /// The parameter the error is about, when its details name one.
    pub fn parameter(&self) -> Option<&str> {
        self.details.as_ref()?.get("parameter")?.as_str()
    }

    /// `INVALID_ARGUMENT` for an integer outside its bounds (which may depend on another
    /// parameter), with the details `{"parameter", "minimum", "maximum", "received"}`.
    pub(crate) fn out_of_range(
        name: &str,
        value: i64,
        min: i64,
        max: i64,
        message: impl Into<String>,
    ) -> ToolError {
        ToolError::invalid(message).with_details(json!({
            "parameter": name,
            "minimum": min,
            "maximum": max,
            "received": value,
        }))
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

impl CodedError for ToolError {
    fn error_code(&self) -> ErrorCode {
        self.code
    }
}

impl ToolError {
    /// An error from a lower crate, keeping its code; an actionable one says what to do, an
    /// internal one is logged as an error (the caller's errors are logged at debug level).
    fn coded(err: &(dyn CodedError + 'static), advice: Option<&str>) -> ToolError {
        let code = err.error_code();
        let message = match advice {
            Some(a) => format!("{err}; {a}"),
            None => err.to_string(),
        };
        if code.is_internal() {
            tracing::error!(error = %err, source = ?std::error::Error::source(err), "internal tool failure");
            ToolError::new(code, format!("internal error: {message}"))
        } else {
            tracing::debug!(error = %err, code = %code, "tool failure");
            ToolError::new(code, message)
        }
    }
}

/// Keeps the meaning: another process writing the index is `INDEX_BUSY` (retry in a
/// moment), a missing model `MODEL_UNAVAILABLE`, a damaged index `INTERNAL` with the repair.
impl From<linkly_index::Error> for ToolError {
    fn from(e: linkly_index::Error) -> ToolError {
        ToolError::coded(&e, e.advice())
    }
}

/// A bad id, time or doc type is `INVALID_ARGUMENT`, an unknown library
/// `LIBRARY_NOT_FOUND`, an unreadable config `INTERNAL`.
impl From<linkly_core::Error> for ToolError {
    fn from(e: linkly_core::Error) -> ToolError {
        ToolError::coded(&e, None)
    }
}

/// A file-system failure around extraction: `INTERNAL`.
impl From<linkly_extract::Error> for ToolError {
    fn from(e: linkly_extract::Error) -> ToolError {
        ToolError::coded(&e, None)
    }
}

/// The result type of this crate.
pub type Result<T, E = ToolError> = std::result::Result<T, E>;

/// Checks an integer parameter's range; the error's details name the parameter, its bounds
/// and the value received: `{"parameter", "minimum", "maximum", "received"}`.
pub fn check_range(name: &str, value: i64, min: i64, max: i64) -> Result<i64> {
    if value < min || value > max {
        return Err(ToolError::out_of_range(
            name,
            value,
            min,
            max,
            format!("{name} must be between {min} and {max} (got {value})"),
        ));
    }
    Ok(value)
}

/// Checks how many items a list parameter holds; the error's details name the parameter, its
/// bounds and the count received: `{"parameter", "min_items", "max_items", "received_items"}`.
pub(crate) fn check_count(
    name: &str,
    len: usize,
    min: usize,
    max: usize,
    items: &str,
) -> Result<()> {
    if len < min || len > max {
        return Err(ToolError::invalid(format!(
            "{name} must hold between {min} and {max} {items} (got {len})"
        ))
        .with_details(json!({
            "parameter": name,
            "min_items": min,
            "max_items": max,
            "received_items": len,
        })));
    }
    Ok(())
}

/// Checks an enum-like string parameter.
pub(crate) fn check_choice<'a>(name: &str, value: &'a str, allowed: &[&str]) -> Result<&'a str> {
    if allowed.contains(&value) {
        Ok(value)
    } else {
        Err(choice_error(name, value, allowed))
    }
}

/// The refusal of a value outside a parameter's fixed set: it names the parameter, the
/// allowed values and what was received (in the message and in `details`).
pub fn choice_error(name: &str, value: &str, allowed: &[&str]) -> ToolError {
    let mut err = ToolError::invalid(format!(
        "{name} must be one of {} (got {value:?})",
        allowed
            .iter()
            .map(|a| format!("\"{a}\""))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    err.details = Some(json!({
        "parameter": name,
        "allowed": allowed,
        "received": value,
    }));
    err
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn range_details_name_the_parameter_and_its_bounds() {
        let err = check_range("limit", 500, 1, 50).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument);
        assert_eq!(
            err.to_json(),
            json!({"error": {
                "code": "INVALID_ARGUMENT",
                "message": "limit must be between 1 and 50 (got 500)",
                "details": {"parameter": "limit", "minimum": 1, "maximum": 50, "received": 500},
            }})
        );
        assert_eq!(check_range("limit", 50, 1, 50), Ok(50));
    }

    #[test]
    fn choice_details_list_the_allowed_values() {
        let err = check_choice("scope", "everything", &["all", "notes"]).unwrap_err();
        assert_eq!(
            err.details,
            Some(
                json!({"parameter": "scope", "allowed": ["all", "notes"], "received": "everything"})
            )
        );
        assert_eq!(
            err.to_string(),
            r#"[INVALID_ARGUMENT] scope must be one of "all", "notes" (got "everything")"#
        );
    }

    #[test]
    fn locked_index_is_busy_with_advice_not_internal() {
        let err = ToolError::from(linkly_index::Error::Locked(PathBuf::from("/data/index")));
        assert_eq!(err.code, ErrorCode::IndexBusy);
        assert!(!err.is_internal());
        assert!(
            err.message.contains("try again in a moment"),
            "{}",
            err.message
        );
        assert!(
            err.message.contains("another Linkly process"),
            "{}",
            err.message
        );
        assert!(
            !err.message.starts_with("internal error"),
            "{}",
            err.message
        );
    }

    #[test]
    fn missing_model_is_model_unavailable_with_advice() {
        let err = ToolError::from(linkly_index::Error::from(
            linkly_index::ModelError::NotLoaded {
                status: "not downloaded".into(),
            },
        ));
        assert_eq!(err.code, ErrorCode::ModelUnavailable);
        assert!(
            err.message.contains("linkly model download"),
            "{}",
            err.message
        );
    }

    #[test]
    fn damaged_index_is_internal_with_the_repair() {
        let err = ToolError::from(linkly_index::Error::Corrupt("bad row".into()));
        assert_eq!(err.code, ErrorCode::Internal);
        assert!(err.is_internal());
        assert!(
            err.message.starts_with("internal error: "),
            "{}",
            err.message
        );
        assert!(err.message.contains("doctor --fix"), "{}", err.message);
    }

    #[test]
    fn core_errors_keep_their_code() {
        let not_found = linkly_core::Error::from(linkly_core::LibraryError::NotFound("x".into()));
        assert_eq!(ToolError::from(not_found).code, ErrorCode::LibraryNotFound);
        let bad_id = linkly_core::Error::InvalidDocId("abc".into());
        let err = ToolError::from(bad_id);
        assert_eq!(err.code, ErrorCode::InvalidArgument);
        assert!(err.message.contains("local://"), "{}", err.message);
        let io = linkly_core::Error::Io(std::io::Error::other("disk on fire"));
        assert_eq!(ToolError::from(io).code, ErrorCode::Internal);
    }
}
