//! The shared vocabulary of Linkly: document ids, doc-type tokens, outline nodes, skip reasons,
//! stable error codes, the data directory and its config file (watched folders, libraries), the
//! word and character counting rules, and ISO 8601 time bounds.
//!
//! Every other Linkly crate depends on this one; it depends on no other Linkly crate and knows no
//! file format, search engine, embedding model or transport.

mod config;
mod counting;
mod doc_type;
mod error;
mod error_code;
mod ids;
mod library;
mod outline;
mod settings;
mod skip;
mod tag;
mod time;

pub mod env;
pub mod stdx;

pub use crate::config::{Config, DataDir, OcrConfig, TranscriptionConfig, private_database};
pub use crate::counting::{char_count, is_cjk, word_count};
pub use crate::doc_type::DocType;
pub use crate::error::{Error, LibraryError, Result};
pub use crate::error_code::{CodedError, ErrorCode, ErrorKind};
pub use crate::ids::DocId;
pub use crate::library::{Library, LibraryEdit, LibraryRef};
pub use crate::outline::{Heading, OutlineNode};
pub use crate::settings::{SETTINGS, Setting, SettingError, SettingKind, SettingOp};
pub use crate::skip::SkipReason;
pub use crate::tag::{normalise_tag, normalise_tags};
pub use crate::time::{TimeBound, format_rfc3339, now_millis, parse_time};
