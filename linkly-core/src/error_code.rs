use std::fmt;

/// The stable error codes of the tool contract; every user-facing error maps to exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// A parameter is missing, of the wrong type, or out of range.
    InvalidArgument,
    /// A document id that does not (or no longer) resolve: search again.
    DocNotFound,
    /// An unknown library name or id.
    LibraryNotFound,
    /// A path outside the watched folders.
    PathNotAllowed,
    /// The document has a skip reason; its content cannot be read.
    ContentUnreadable,
    /// A note body or parameter the notes store refuses.
    NoteInvalidInput,
    /// A note edit from a stale base version.
    NoteVersionConflict,
    /// A note id that already exists.
    NoteDuplicateId,
    /// An unknown note id.
    NoteNotFound,
    /// Another process is writing the index right now: try again in a moment, or use the
    /// server that holds it.
    IndexBusy,
    /// The embedding model is not there (not downloaded, not loaded, or broken): keyword search
    /// still works; `linkly model download` fetches it.
    ModelUnavailable,
    /// A failure on our side.
    Internal,
}

impl ErrorCode {
    /// The code as it appears in brackets at the start of an error text.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::DocNotFound => "DOC_NOT_FOUND",
            ErrorCode::LibraryNotFound => "LIBRARY_NOT_FOUND",
            ErrorCode::PathNotAllowed => "PATH_NOT_ALLOWED",
            ErrorCode::ContentUnreadable => "CONTENT_UNREADABLE",
            ErrorCode::NoteInvalidInput => "NOTE_INVALID_INPUT",
            ErrorCode::NoteVersionConflict => "NOTE_VERSION_CONFLICT",
            ErrorCode::NoteDuplicateId => "NOTE_DUPLICATE_ID",
            ErrorCode::NoteNotFound => "NOTE_NOT_FOUND",
            ErrorCode::IndexBusy => "INDEX_BUSY",
            ErrorCode::ModelUnavailable => "MODEL_UNAVAILABLE",
            ErrorCode::Internal => "INTERNAL",
        }
    }

    /// What the code means and what the caller does about it, as the tool reference
    /// (`docs/tools.md`) states it.
    pub fn meaning(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => {
                "A parameter is missing, of the wrong type, out of range or not one of its allowed values; the message names it and what is allowed (JSON `details`: `parameter` with `minimum`/`maximum`, `allowed` or `min_items`/`max_items`, and `received`)."
            }
            ErrorCode::DocNotFound => {
                "A document id that does not (or no longer) resolve: the file moved or was deleted. Search again."
            }
            ErrorCode::LibraryNotFound => "An unknown library name or id: see `list_libraries`.",
            ErrorCode::PathNotAllowed => {
                "A path outside the watched folders (or outside the library's folders)."
            }
            ErrorCode::ContentUnreadable => {
                "The document has a `skip_reason`: it is indexed by name only and its content cannot be read or grepped."
            }
            ErrorCode::NoteInvalidInput => {
                "A note body or parameter the notes store refuses (a construct outside the whitelist, a blank body, a missing `note_id` or `base_version` on edit); the message names each offence and its line."
            }
            ErrorCode::NoteVersionConflict => {
                "A note edit from a stale `base_version`: nothing was written; `details.actual_version` is the current version. Read the note again, then edit from it."
            }
            ErrorCode::NoteDuplicateId => "A `note_id` given on create that already exists.",
            ErrorCode::NoteNotFound => "An unknown note id.",
            ErrorCode::IndexBusy => {
                "Another process is writing the index right now: try again in a moment, or use the server that holds it."
            }
            ErrorCode::ModelUnavailable => {
                "The embedding model is not there (not downloaded, not loaded, or broken): keyword search still works; `linkly model download` fetches it."
            }
            ErrorCode::Internal => "A failure on Linkly's side; the message says what failed.",
        }
    }

    /// Every code, in the order of the table.
    pub const ALL: [ErrorCode; 12] = [
        ErrorCode::InvalidArgument,
        ErrorCode::DocNotFound,
        ErrorCode::LibraryNotFound,
        ErrorCode::PathNotAllowed,
        ErrorCode::ContentUnreadable,
        ErrorCode::NoteInvalidInput,
        ErrorCode::NoteVersionConflict,
        ErrorCode::NoteDuplicateId,
        ErrorCode::NoteNotFound,
        ErrorCode::IndexBusy,
        ErrorCode::ModelUnavailable,
        ErrorCode::Internal,
    ];

    /// Whose the error is: the caller's (the request can be changed, retried later or
    /// followed by another call) or ours.
    pub fn kind(self) -> ErrorKind {
        match self {
            ErrorCode::InvalidArgument
            | ErrorCode::PathNotAllowed
            | ErrorCode::NoteInvalidInput
            | ErrorCode::NoteDuplicateId => ErrorKind::Invalid,
            ErrorCode::DocNotFound | ErrorCode::LibraryNotFound | ErrorCode::NoteNotFound => {
                ErrorKind::NotFound
            }
            ErrorCode::NoteVersionConflict => ErrorKind::Conflict,
            ErrorCode::ContentUnreadable | ErrorCode::ModelUnavailable => ErrorKind::Unavailable,
            ErrorCode::IndexBusy => ErrorKind::Busy,
            ErrorCode::Internal => ErrorKind::Internal,
        }
    }

    /// True for a failure on our side (logged as an error); false for the caller's errors
    /// (logged at debug level: the answer tells the caller what to do).
    pub fn is_internal(self) -> bool {
        self.kind() == ErrorKind::Internal
    }
}

/// The kinds of [`ErrorCode`]s: every kind but [`ErrorKind::Internal`] is the caller's to act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The request is wrong: change an argument.
    Invalid,
    /// What the request names does not exist (or no longer): look it up again.
    NotFound,
    /// The request was made against a state that changed since: read again, then retry.
    Conflict,
    /// Another process is writing: retry in a moment.
    Busy,
    /// What the request needs is not there (an unreadable document, a missing model).
    Unavailable,
    /// A failure on our side.
    Internal,
}

/// An error that carries its stable [`ErrorCode`]; implemented by every Linkly error type, so
/// the tools, the logs and the front ends treat the caller's errors and internal ones apart.
pub trait CodedError: std::error::Error {
    /// The stable code of this error.
    fn error_code(&self) -> ErrorCode;

    /// True for a failure on our side (see [`ErrorCode::is_internal`]).
    fn is_internal(&self) -> bool {
        self.error_code().is_internal()
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_screaming_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            let s = code.as_str();
            assert!(seen.insert(s), "{s} twice");
            assert!(s.chars().all(|c| c.is_ascii_uppercase() || c == '_'), "{s}");
        }
    }

    #[test]
    fn only_internal_is_ours() {
        let internal: Vec<_> = ErrorCode::ALL.iter().filter(|c| c.is_internal()).collect();
        assert_eq!(internal, [&ErrorCode::Internal]);
        assert_eq!(ErrorCode::IndexBusy.kind(), ErrorKind::Busy);
        assert_eq!(ErrorCode::NoteVersionConflict.kind(), ErrorKind::Conflict);
        assert_eq!(ErrorCode::DocNotFound.kind(), ErrorKind::NotFound);
    }
}
