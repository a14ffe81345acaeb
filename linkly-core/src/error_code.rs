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
            ErrorCode::Internal => "INTERNAL",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
