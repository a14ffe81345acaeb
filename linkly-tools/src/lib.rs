//! Linkly's tools — `search`, `outline`, `grep` and `read` — as a typed Rust API and as
//! name + JSON calls: parameter types with JSON schemas, validation into strict values, execution
//! against a [`linkly_index::Index`], and Markdown/JSON rendering with the `[meta] now=` footer.
//!
//! This is the only crate that knows tool names, parameter schemas and the response format.
//! It knows nothing of JSON-RPC, MCP or command lines: `linkly-mcp` and `linkly-cli` call
//! [`Linkly::call`] (or the typed methods) and print what comes back.
//!
//! ```no_run
//! use linkly_tools::{Linkly, SearchParams};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let linkly = Linkly::open(linkly_core::DataDir::from_env())?;
//! let found = linkly.search(SearchParams { query: "budget 2024".into(), ..Default::default() })?;
//! for hit in &found.results {
//!     println!("{} {} {}", hit.doc_id, hit.relevance, hit.path);
//! }
//! # Ok(()) }
//! ```

mod engine;
mod error;
mod glob;
mod library;
mod notes;
mod render;
mod snippet;
mod tools;

pub use crate::engine::{Linkly, ToolOutput, UnknownTool};
pub use crate::error::{Result, ToolError};
pub use crate::glob::PathGlob;
pub use crate::notes::sync_options;
pub use crate::render::{OutputFormat, meta_footer};
pub use crate::tools::explore::{ExploreParams, ExploreResponse};
pub use crate::tools::find_paths::{FindPathsParams, FindPathsResponse, FoundDirectory};
pub use crate::tools::grep::{GrepMatch, GrepParams, GrepResponse};
pub use crate::tools::list::{FileItem, FileList, ListParams, ReadmePointer};
pub use crate::tools::list_libraries::{LibrariesResponse, LibraryInfo, ListLibrariesParams};
pub use crate::tools::note_save::{NoteSaveParams, NoteSaveResponse};
pub use crate::tools::outline::{OutlineDoc, OutlineParams, OutlineResponse};
pub use crate::tools::read::{ReadParams, ReadResponse};
pub use crate::tools::search::{SearchHit, SearchParams, SearchResponse};
pub use crate::tools::{TOOLS, ToolSpec};
