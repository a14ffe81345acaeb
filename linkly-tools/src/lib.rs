//! Linkly's tools — search, outline, grep, read, list_libraries, explore, find_paths, list and
//! note_save — as a typed Rust API and as name + JSON calls: parameter types with JSON schemas,
//! validation, execution against a [`linkly_index::Index`], and Markdown/JSON rendering with
//! the `[meta] now=` footer; and the notes store, the one writer of user-visible files.
//!
//! This is the only crate that knows tool names, parameter schemas and the response format.
//! It knows nothing of JSON-RPC, MCP or command lines: `linkly-mcp` and `linkly-cli` call
//! [`Linkly::call`] (or the typed methods) and print what comes back.
//!
//! ```
//! use linkly_core::{Config, DataDir};
//! use linkly_tools::{Linkly, SearchParams};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let tmp = tempfile::tempdir()?;
//! # let docs = tmp.path().join("docs");
//! # fs_err::create_dir_all(&docs)?;
//! # fs_err::write(docs.join("plan.md"), "# Plan\n\nThe budget for 2024 is set.\n")?;
//! // A data directory (index, config, notes) and a watched folder.
//! let data = DataDir::new(tmp.path().join("home"));
//! let mut config = Config::default();
//! config.add_folder(&docs)?;
//! config.save(&data)?;
//!
//! // Index the folder, then search it as an agent would.
//! let linkly = Linkly::open(data)?;
//! linkly.index_now(&mut |_| {})?;
//! let found = linkly.search(SearchParams { query: "budget 2024".into(), ..Default::default() })?;
//! assert_eq!(found.results[0].title, "Plan");
//!
//! // The same through the name + JSON entry point that MCP and the CLI use.
//! let out = linkly.call("read", serde_json::json!({"doc_id": found.results[0].doc_id, "limit": 3}))?;
//! assert!(out.text.contains("     3\tThe budget for 2024 is set."));
//! # Ok(()) }
//! ```

mod audience;
mod choice;
mod engine;
mod error;
mod library;
mod models;
mod notes;
mod overview;
mod render;
mod snippet;
mod tools;
mod upkeep;

pub use crate::audience::Audience;
pub use crate::engine::{Behind, Linkly, ToolOutput, UnknownTool, check_setting};
pub use crate::error::{Result, ToolError, check_range, choice_error};
pub use crate::models::{EmbeddingModelOnDisk, ModelImported, ModelsOnDisk, SpeechModelOnDisk};
pub use crate::notes::person::{NoteDeleted, NoteView, TrashedNote};
pub use crate::notes::sync_options;
pub use crate::overview::{Overview, SKIPPED_PER_CODE, SkippedFile};
pub use crate::render::{OutputFormat, meta_footer};
pub use crate::snippet::SnippetKind;
pub use crate::tools::explore::{ExploreParams, ExploreResponse};
pub use crate::tools::find_paths::{FindPathsParams, FindPathsResponse, FoundDirectory};
pub use crate::tools::grep::{GrepMatch, GrepMode, GrepParams, GrepResponse};
pub use crate::tools::kit::{
    Reach, Rendered, Runner, ToolParams, error_format, finish, lenient_int, parse_doc_types,
    parse_params, schema_of,
};
#[cfg(feature = "example-tool")]
pub use crate::tools::line_count::{LineCountParams, LineCountResponse};
pub use crate::tools::list::{FileItem, FileList, ListParams, ListScope, ListSort, ReadmePointer};
pub use crate::tools::list_libraries::{LibrariesResponse, LibraryInfo, ListLibrariesParams};
pub use crate::tools::note_save::{NoteMode, NoteSaveParams, NoteSaveResponse};
pub use crate::tools::outline::{OutlineDoc, OutlineParams, OutlineResponse};
pub use crate::tools::read::{ImageText, ReadParams, ReadResponse};
pub use crate::tools::search::{SearchHit, SearchParams, SearchResponse, SearchScope, TimeSort};
pub use crate::tools::{TOOLS, ToolSpec};
pub use crate::upkeep::{
    Coverage, FreshEvent, IndexNowReport, IndexState, KeepFresh, KeepFreshOptions, WORKER_ARG,
    extraction_worker_hook, sandbox_for,
};
pub use linkly_index::PathGlob;
