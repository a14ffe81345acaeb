//! `list`: enumerate a container — the indexed files under a directory (`folder`), a library's
//! files (`library`), or the notes (`notes`) — with filters, stable sorts and paging. No
//! full-text matching.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::error::check_choice;
use crate::tools::{Rendered, ToolSpec, parse_args, schema_of};
use crate::{Linkly, Result, ToolError};

pub(crate) const SPEC: ToolSpec = ToolSpec {
    name: "list",
    title: "List files or notes",
    description: "Enumerate a container without full-text matching: scope `folder` (indexed \
        files under `path`, or all watched folders), `library` (a library's files) or `notes` \
        (the user's notes, with tags and versions for note_save). Filters, sort (recent, oldest, \
        name) and paging with total/has_more. File items with a non-null skip_reason cannot be \
        read or grepped.",
    read_only: true,
    input_schema: schema_of::<ListParams>,
    run,
};

/// Parameters of `list`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// `folder` (indexed files under a directory; no `path` = all watched folders), `library`
    /// (requires `library`) or `notes`.
    pub scope: String,
    /// A library name or `local://<id>` (scope `library`).
    #[serde(default)]
    pub library: Option<String>,
    /// An absolute directory inside the watched folders (or the library's folders); not a
    /// pattern.
    #[serde(default)]
    pub path: Option<String>,
    /// Only these document types (folder and library scopes).
    #[serde(default)]
    pub doc_types: Option<Vec<String>>,
    /// AND filter on note tags (notes scope only).
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// Modified at or after (ISO 8601 UTC; folder and library scopes).
    #[serde(default)]
    pub modified_after: Option<String>,
    /// Modified at or before (ISO 8601 UTC; folder and library scopes).
    #[serde(default)]
    pub modified_before: Option<String>,
    /// `recent` (default), `oldest` (notes: by created time; files: by modification time) or
    /// `name` (file name A→Z by code point); ties broken by full path.
    #[serde(default)]
    pub sort: Option<String>,
    /// Include snippets (notes: default true, the first ~200 characters of the body; files:
    /// default false, from the indexed abstract). While on, `limit` is at most 50.
    #[serde(default)]
    pub snippet: Option<bool>,
    /// Items per page, 1–200. Default 50.
    #[serde(default)]
    pub limit: Option<i64>,
    /// Items skipped. Default 0.
    #[serde(default)]
    pub offset: Option<i64>,
    /// `markdown` or `json` (default: json for notes, markdown otherwise).
    #[serde(default)]
    pub output_format: Option<String>,
}

fn run(linkly: &Linkly, args: Value) -> Result<Rendered> {
    let params: ListParams = parse_args(args)?;
    let scope = check_choice("scope", &params.scope, &["folder", "library", "notes"])?;
    match scope {
        "notes" => crate::notes::list_tool(linkly, &params),
        _ => list_files(linkly, &params),
    }
}

/// The `folder` and `library` scopes.
fn list_files(_linkly: &Linkly, _params: &ListParams) -> Result<Rendered> {
    Err(ToolError::invalid(
        "list of folders and libraries is not available in this build yet",
    ))
}
