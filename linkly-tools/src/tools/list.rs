//! `list`: enumerate a container — the indexed files under a directory (`folder`), a library's
//! files (`library`), or the notes (`notes`) — with filters, stable sorts and paging. No
//! full-text matching.

use std::collections::HashMap;
use std::path::Path;

use linkly_core::{DocType, format_rfc3339};
use linkly_index::{CatalogSort, DocFilter, DocRecord};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::error::{check_choice, check_range};
use crate::library::{allowed_dir, resolve};
use crate::notes::{has_all, tag_filter};
use crate::render::{one_line, shown, thousands};
use crate::tools::kit::{
    Reach, Rendered, ToolSpec, check_window, doc_type_items, parse_args, parse_bound, render,
    schema_of,
};
use crate::{Linkly, OutputFormat, Result, ToolError};

pub(crate) const SPEC: ToolSpec = ToolSpec {
    name: "list",
    title: "List files or notes",
    description: "Enumerate a container without full-text matching (to find content by words or \
        meaning, use search): scope `folder` (indexed files under `path`, or all watched folders; \
        flat and recursive), `library` (a library's files) or `notes` (the user's notes, JSON by \
        default). explore gives the overview, find_paths a directory, list the files of a known \
        container, outline/read the content. Filters, sort (recent, oldest, name) and paging with \
        total/has_more. With an explicit `path` whose folder holds a README, a `readme` pointer \
        is returned: read it to learn what the folder is for. File items with a non-null \
        skip_reason cannot be read or grepped; total_lines and has_outline tell outline from \
        read. Notes carry note_id and version for note_save, and `available_tags` (the 50 most \
        used) to pass as tags; a note just written is listed at once, its doc_id null until it is \
        indexed.",
    read_only: true,
    input_schema: schema_of::<ListParams>,
    output_schema: Some(output_schema),
    reach: Reach::Libraries,
    idempotent: true,
    run,
};

crate::choice::choice! {
    /// What `list` enumerates (`scope`).
    #[derive(Default)]
    pub enum ListScope {
        /// The indexed files under a directory (all watched folders without `path`).
        #[default]
        Folder = "folder",
        /// A library's files.
        Library = "library",
        /// The user's notes.
        Notes = "notes",
    }
}

crate::choice::choice! {
    /// The order of `list` (`sort`); ties are broken by the full path.
    pub enum ListSort {
        /// Newest first (notes: by creation, files: by modification).
        Recent = "recent",
        /// Oldest first.
        Oldest = "oldest",
        /// File name A→Z by code point.
        Name = "name",
    }
}

crate::tools::kit::tool_params! {
    /// Parameters of `list`.
    pub struct ListParams {
        /// `folder` (indexed files under a directory; no `path` = all watched folders), `library`
        /// (requires `library`) or `notes`.
        #[cfg_attr(feature = "clap", arg(long))]
        pub scope: ListScope,
        /// A library name or `local://<id>` (scope `library`).
        pub library: Option<String>,
        /// An absolute directory inside the watched folders (or the library's folders, and the
        /// notes folder for a library with a note-tag filter): an address, not a pattern. From
        /// find_paths, copy `path`, not `path_glob`.
        pub path: Option<String>,
        /// Only these document types (folder and library scopes).
        #[serde(deserialize_with = "crate::tools::kit::doc_types_param")]
        #[schemars(with = "Option<Vec<String>>", transform = doc_type_items)]
        pub doc_types: Option<Vec<DocType>>,
        /// AND filter on note tags (notes scope only).
        pub tags: Option<Vec<String>>,
        /// Modified at or after (ISO 8601 UTC; folder and library scopes).
        pub modified_after: Option<String>,
        /// Modified at or before (ISO 8601 UTC; folder and library scopes).
        pub modified_before: Option<String>,
        /// `recent`, `oldest` (notes: by created time; files: by modification time) or `name` (file
        /// name A→Z by code point); ties broken by full path.
        #[schemars(extend("default" = "recent"))]
        pub sort: Option<ListSort>,
        /// Include snippets (notes: default true, the first ~200 characters of the body; files:
        /// default false, from the indexed abstract). While on, `limit` is at most 50.
        pub snippet: Option<bool>,
        /// Items per page.
        #[schemars(range(min = 1, max = 200), extend("default" = 50))]
        pub limit: Option<i64>,
        /// Items skipped.
        #[schemars(range(min = 0), extend("default" = 0))]
        pub offset: Option<i64>,
        /// The answer's format (default: json for notes, markdown otherwise).
        pub output_format: Option<OutputFormat>,
    }
}

/// The answer's schema: a [`FileList`] for the `folder` and `library` scopes, the notes list
/// for `notes`.
fn output_schema() -> Value {
    serde_json::json!({
        "oneOf": [schema_of::<FileList>(), schema_of::<NotesList>()],
    })
}

fn run(linkly: &Linkly, args: Value) -> Result<Rendered> {
    let params: ListParams = parse_args(args)?;
    let scope = params.scope;
    check_dates(&params)?;
    match scope {
        ListScope::Notes => list_notes(linkly, &params),
        _ => list_files(linkly, &params),
    }
}

/// Parses the time bounds and refuses a reversed window, in every scope.
fn check_dates(p: &ListParams) -> Result<(Option<i64>, Option<i64>)> {
    let after = parse_bound("modified_after", p.modified_after.as_deref())?;
    let before = parse_bound("modified_before", p.modified_before.as_deref())?;
    check_window(&p.modified_after, after, &p.modified_before, before)?;
    Ok((after, before))
}

/// A snippet's length in characters (files: from the indexed abstract).
const SNIPPET_CHARS: usize = 200;

/// One file of a `folder` or `library` listing.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FileItem {
    /// `local://<n>`.
    pub doc_id: String,
    /// The declared title, else the file name.
    pub title: String,
    /// The absolute path.
    pub path: String,
    /// The doc-type token.
    pub doc_type: String,
    /// Words (a CJK character is one word).
    pub word_count: u64,
    /// Characters of the extracted text.
    pub char_count: u64,
    /// Lines of the extracted text.
    pub total_lines: u32,
    /// Whether `outline` has something to show.
    pub has_outline: bool,
    /// Modification time, Unix milliseconds.
    pub modified_at: i64,
    /// When the index last read this file (RFC 3339 UTC): how fresh this entry is.
    pub indexed_at: String,
    /// The document's keywords.
    pub keywords: Vec<String>,
    /// The start of the text (from the index; null while snippets are off).
    pub snippet: Option<String>,
    /// Non-null: the content is unreadable (indexed by name only); do not read or grep it.
    pub skip_reason: Option<String>,
}

/// The README found directly in a listed directory.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ReadmePointer {
    /// `local://<n>`.
    pub doc_id: String,
    /// The absolute path.
    pub path: String,
}

/// The response of `list` for the `folder` and `library` scopes.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FileList {
    /// `folder` or `library`.
    pub scope: String,
    /// What was listed: the directory, `library <name>`, or `all watched folders`.
    pub target: String,
    /// Files in the whole filtered set.
    pub total: u64,
    /// Whether items remain after this page.
    pub has_more: bool,
    /// Items skipped.
    pub offset: u64,
    /// `recent`, `oldest` or `name`.
    pub sort: String,
    /// The page.
    pub items: Vec<FileItem>,
    /// The README directly in the listed `path`, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readme: Option<ReadmePointer>,
    /// The filters in force (as given), when the listing is empty.
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub filters: serde_json::Map<String, Value>,
    /// With no file under filters: how many files the target holds without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unfiltered_total: Option<u64>,
    /// With no file: why, and what to try next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// The `folder` and `library` scopes.
fn list_files(linkly: &Linkly, params: &ListParams) -> Result<Rendered> {
    let format = params.output_format.unwrap_or_default();
    let response = linkly.list_files(params)?;
    Ok(render(format, &response, FileList::to_markdown)?.counting(response.total))
}

fn file_item(linkly: &Linkly, rec: DocRecord, with_snippet: bool) -> FileItem {
    let snippet = with_snippet.then(|| {
        let cut = linkly_core::stdx::truncate_chars(&rec.abstract_text, SNIPPET_CHARS);
        if cut.len() < rec.abstract_text.len() && !cut.ends_with('…') {
            format!("{cut}…")
        } else {
            cut.to_string()
        }
    });
    FileItem {
        doc_id: linkly.doc_address(rec.id),
        title: rec.display_title(),
        doc_type: rec.doc_type.as_str().to_string(),
        word_count: rec.word_count,
        char_count: rec.char_count,
        total_lines: rec.total_lines,
        has_outline: !rec.outline.is_empty(),
        modified_at: rec.modified_at,
        indexed_at: linkly_core::format_rfc3339(rec.indexed_at),
        keywords: rec.keywords,
        snippet,
        skip_reason: rec.skip_reason,
        path: rec.path,
    }
}

/// `list`'s `limit` (default 50): 1–200, or 1–50 while snippets are on.
pub(crate) fn check_list_limit(limit: Option<i64>, snippet: bool) -> Result<i64> {
    let limit = check_range("limit", limit.unwrap_or(50), 1, 200)?;
    if snippet && limit > 50 {
        return Err(ToolError::out_of_range(
            "limit",
            limit,
            1,
            50,
            format!(
                "limit must be between 1 and 50 while snippet is on (got {limit}); pass snippet=false to list up to 200"
            ),
        ));
    }
    Ok(limit)
}

impl Linkly {
    /// Runs `list` for the `folder` and `library` scopes.
    pub fn list_files(&self, p: &ListParams) -> Result<FileList> {
        let scope = check_choice("scope", p.scope.as_str(), &["folder", "library"])?;
        if p.tags.is_some() {
            return Err(ToolError::invalid(format!(
                "tags filters notes and is only valid with scope \"notes\" (got scope {scope:?}); omit tags or list scope \"notes\""
            )));
        }
        let library = match (scope, p.library.as_deref()) {
            ("library", Some(l)) => Some(resolve(self, l)?),
            ("library", None) => {
                return Err(ToolError::invalid(
                    "library is required with scope \"library\" (a name or local://<id> from list_libraries)",
                ));
            }
            (_, Some(_)) => {
                return Err(ToolError::invalid(
                    "library is only valid with scope \"library\" (or \"notes\"); use scope \"library\" or omit library",
                ));
            }
            // A visitor lists a shared library, never the watched folders as such.
            (_, None) => crate::library::walked_library(None)?
                .map(|l| resolve(self, &l))
                .transpose()?,
        };
        let sort_name = p.sort.unwrap_or(ListSort::Recent);
        let sort = match sort_name {
            ListSort::Oldest => CatalogSort::Oldest,
            ListSort::Name => CatalogSort::Name,
            ListSort::Recent => CatalogSort::Recent,
        };
        let with_snippet = p.snippet.unwrap_or(false);
        let limit = check_list_limit(p.limit, with_snippet)?;
        let offset = check_range("offset", p.offset.unwrap_or(0), 0, i64::MAX)?;
        let doc_types = p.doc_types.clone();
        let (modified_after, modified_before) = check_dates(p)?;

        let (dirs, paths, target, listed_dir) = match (library.as_ref(), p.path.as_deref()) {
            (Some(lib), Some(path)) => {
                let (dirs, notes, dir) = crate::library::dir_in_library(self, lib, path)?;
                (Some(dirs), notes, dir.clone(), Some(dir))
            }
            (Some(lib), None) => {
                let scope = crate::library::LibraryScope::of(self, lib)?;
                (
                    Some(scope.dirs),
                    scope.notes,
                    format!("library {} ({})", lib.name, lib.address()),
                    None,
                )
            }
            (None, Some(path)) => {
                let dir = allowed_dir(self, path, &self.config().folders, "watched folders")?;
                (Some(vec![dir.clone()]), Vec::new(), dir.clone(), Some(dir))
            }
            (None, None) if self.config().folders.is_empty() => {
                (None, Vec::new(), "all indexed folders".to_string(), None)
            }
            (None, None) => (
                Some(crate::library::top_level_dirs(&self.config().folders)),
                Vec::new(),
                "all watched folders".to_string(),
                None,
            ),
        };
        let filter = DocFilter {
            dirs,
            paths,
            doc_types,
            modified_after,
            modified_before,
            ..DocFilter::default()
        };
        let page = self
            .corpus()
            .catalog_page(&filter, sort, limit as usize, offset as usize)?;
        let mut filters = serde_json::Map::new();
        let (mut unfiltered_total, mut hint) = (None, None);
        if page.total == 0 {
            if let Some(t) = &p.doc_types {
                filters.insert("doc_types".into(), serde_json::json!(t));
            }
            for (k, v) in [
                ("modified_after", &p.modified_after),
                ("modified_before", &p.modified_before),
            ] {
                if let Some(v) = v {
                    filters.insert(k.into(), Value::from(v.clone()));
                }
            }
            if !filters.is_empty() {
                let all = DocFilter {
                    dirs: filter.dirs.clone(),
                    ..DocFilter::default()
                };
                unfiltered_total = Some(self.corpus().catalog_page(&all, sort, 1, 0)?.total);
            }
            hint =
                Some(self.empty_list_hint(&target, &filters, unfiltered_total, library.as_ref()));
        }
        let readme = match &listed_dir {
            Some(dir) => self
                .corpus()
                .readme_in(dir)?
                .map(|(id, path)| ReadmePointer {
                    doc_id: self.doc_address(id),
                    path,
                }),
            None => None,
        };
        let items: Vec<FileItem> = page
            .docs
            .into_iter()
            .map(|r| file_item(self, r, with_snippet))
            .collect();
        Ok(FileList {
            scope: scope.to_string(),
            target,
            total: page.total,
            has_more: (offset as u64).saturating_add(items.len() as u64) < page.total,
            offset: offset as u64,
            sort: sort_name.as_str().to_string(),
            items,
            readme,
            filters,
            unfiltered_total,
            hint,
        })
    }

    /// Why a `folder` or `library` listing is empty, and what to try next.
    fn empty_list_hint(
        &self,
        target: &str,
        filters: &serde_json::Map<String, Value>,
        unfiltered: Option<u64>,
        library: Option<&linkly_core::Library>,
    ) -> String {
        let mut out = Vec::new();
        match unfiltered {
            Some(n) if n > 0 => out.push(format!(
                "{target} holds {n} indexed file{} without the filters ({}): widen or drop them \
                 (dates are compared with each file's modification time; see [meta] now).",
                if n == 1 { "" } else { "s" },
                filters.keys().cloned().collect::<Vec<_>>().join(", ")
            )),
            _ if library.is_some() => out.push(format!(
                "No indexed file lies in {target}: its folders may be empty, excluded or not \
                 indexed yet; list_libraries shows its folders and document count."
            )),
            _ if self.config().folders.is_empty() => out.push(
                "No folder is watched: `linkly index <folder>` adds one and indexes it.".into(),
            ),
            _ => out.push(format!(
                "No indexed file lies under {target}: its files may be hidden, excluded by \
                 .gitignore or the configuration, of a format Linkly does not read, or not \
                 indexed yet. find_paths finds a folder by name; list scope=\"notes\" lists \
                 the notes."
            )),
        }
        let state = self.index_state();
        if matches!(
            state,
            crate::IndexState::Scanning | crate::IndexState::Indexing
        ) {
            out.push(format!(
                "Indexing is under way ({}): files not indexed yet are not listed; list again \
                 shortly.",
                state.as_str()
            ));
        }
        out.join(" ")
    }
}

impl FileList {
    /// The Markdown form: `# Files`, the `Showing N of M files` line, then one block per file.
    pub fn to_markdown(&self) -> String {
        let mut out = String::from("# Files\n\n");
        out.push_str(&format!(
            "Showing {} of {} files (sort: {}, offset: {}) — target: {}\n",
            self.items.len(),
            self.total,
            self.sort,
            self.offset,
            self.target
        ));
        if let Some(r) = &self.readme {
            out.push_str(&format!(
                "README: {} ({}) — read it first for an overview of this folder\n",
                r.doc_id,
                crate::render::shown(&r.path)
            ));
        }
        if self.items.is_empty() {
            out.push_str(if self.total == 0 {
                "\nNo files match.\n"
            } else {
                "\nNo files at this offset.\n"
            });
            out.push_str(&crate::render::filters_and_hint(
                &self.filters,
                self.hint.as_deref(),
            ));
        }
        for (i, f) in self.items.iter().enumerate() {
            out.push_str(&format!(
                "\n{}. **{}** — {}\n",
                self.offset as usize + i + 1,
                one_line(&f.title),
                crate::render::shown(&f.path)
            ));
            out.push_str(&format!(
                "   {} · {} · {} words · {} lines · outline: {} · modified {}\n",
                f.doc_id,
                f.doc_type,
                thousands(f.word_count),
                thousands(f.total_lines as u64),
                if f.has_outline { "yes" } else { "no" },
                format_rfc3339(f.modified_at)
            ));
            if !f.keywords.is_empty() {
                out.push_str(&format!("   keywords: {}\n", f.keywords.join(", ")));
            }
            if let Some(reason) = &f.skip_reason {
                out.push_str(&format!(
                    "   skip_reason: {reason} (content unreadable: do not read or grep)\n"
                ));
            }
            if let Some(s) = f.snippet.as_deref().filter(|s| !s.is_empty()) {
                out.push_str(&format!("   > {}\n", one_line(s)));
            }
        }
        if self.has_more {
            out.push_str(&format!(
                "\nMore files: continue with offset={}\n",
                self.offset as usize + self.items.len()
            ));
        }
        out
    }
}

/// One note in `list scope="notes"`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct NoteItem {
    /// `local://<n>`; null until the note is indexed.
    doc_id: Option<String>,
    /// The note's UUID (from its front matter), to pass to note_save; null for a Markdown file
    /// without one.
    note_id: Option<String>,
    /// Lowercase hex SHA-256 of the note file's bytes: note_save's `base_version`.
    version: String,
    /// Whether the index holds the note yet.
    indexed: bool,
    /// When the index last read the note (RFC 3339 UTC); null while it is not indexed.
    indexed_at: Option<String>,
    /// The note's title; null when its file name was generated.
    title: Option<String>,
    /// The absolute path of the note file.
    path: String,
    /// Creation time, Unix milliseconds.
    created_at: i64,
    /// Modification time, Unix milliseconds.
    modified_at: i64,
    /// The note's tags (its `#tag` tokens).
    tags: Vec<String>,
    /// The app that wrote it (note_save's `app_name`).
    source: Option<String>,
    /// The first ~200 characters of the body (with `snippet`).
    snippet: Option<String>,
}

/// The response of `list scope="notes"`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct NotesList {
    /// `notes`.
    scope: &'static str,
    /// How many notes the filters select (the whole set, not the page).
    total: usize,
    /// Whether more notes follow this page.
    has_more: bool,
    /// The notes of this page.
    items: Vec<NoteItem>,
    /// The 50 most used tags, most used first: values for `tags`.
    available_tags: Vec<String>,
    #[serde(skip)]
    tag_counts: Vec<(String, usize)>,
    #[serde(skip)]
    sort: String,
    #[serde(skip)]
    offset: usize,
}

/// `list` with `scope="notes"`.
fn list_notes(linkly: &Linkly, params: &ListParams) -> Result<Rendered> {
    crate::audience::person_only("the notes folder")?;
    for (name, given) in [
        ("library", params.library.is_some()),
        ("path", params.path.is_some()),
        ("doc_types", params.doc_types.is_some()),
        ("modified_after", params.modified_after.is_some()),
        ("modified_before", params.modified_before.is_some()),
    ] {
        if given {
            return Err(ToolError::invalid(format!(
                "{name} applies to scope \"folder\" and \"library\", not \"notes\"; omit it (filter notes with tags)"
            )));
        }
    }
    let format = params.output_format.unwrap_or(OutputFormat::Json);
    let sort = params.sort.unwrap_or(ListSort::Recent);
    let snippet = params.snippet.unwrap_or(true);
    let limit = check_list_limit(params.limit, snippet)?;
    let offset = check_range("offset", params.offset.unwrap_or(0), 0, i64::from(u32::MAX))?;
    let wanted = tag_filter(params.tags.as_deref())?.unwrap_or_default();

    let mut notes = linkly.note_store().scan()?;
    let mut counts: HashMap<String, usize> = HashMap::new();
    for n in &notes {
        for t in &n.tags {
            *counts.entry(t.clone()).or_default() += 1;
        }
    }
    let mut tag_counts: Vec<(String, usize)> = counts.into_iter().collect();
    tag_counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    tag_counts.truncate(AVAILABLE_TAGS);

    notes.retain(|n| has_all(n, &wanted));
    match sort {
        ListSort::Oldest => {
            notes.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.path.cmp(&b.path)))
        }
        ListSort::Name => notes.sort_by(|a, b| {
            file_name(&a.path)
                .cmp(&file_name(&b.path))
                .then(a.path.cmp(&b.path))
        }),
        ListSort::Recent => {
            notes.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.path.cmp(&b.path)))
        }
    }
    let total = notes.len();
    let offset = offset as usize;
    let mut items = Vec::new();
    for n in notes.into_iter().skip(offset).take(limit as usize) {
        let indexed = linkly.indexed_doc(&n)?;
        items.push(NoteItem {
            doc_id: indexed.map(|(d, _)| d.to_string()),
            note_id: n.note_id.clone(),
            version: n.version.clone(),
            indexed: indexed.is_some(),
            indexed_at: indexed.map(|(_, t)| linkly_core::format_rfc3339(t)),
            title: n.title.clone(),
            path: n.path.to_string_lossy().into_owned(),
            created_at: n.created_at,
            modified_at: n.modified_at,
            tags: n.tags.clone(),
            source: n.source.clone(),
            snippet: snippet.then(|| snippet_of(&n.body)),
        });
    }
    let response = NotesList {
        scope: "notes",
        total,
        has_more: offset + items.len() < total,
        available_tags: tag_counts.iter().map(|(t, _)| t.clone()).collect(),
        items,
        tag_counts,
        sort: sort.to_string(),
        offset,
    };
    Ok(render(format, &response, NotesList::to_markdown)?.counting(response.total as u64))
}

impl NotesList {
    fn to_markdown(&self) -> String {
        let mut out = String::from("# Notes\n\n");
        out.push_str(&format!(
            "Showing {} of {} notes (sort: {}, offset: {}) — target: notes\n",
            self.items.len(),
            self.total,
            self.sort,
            self.offset
        ));
        for (i, n) in self.items.iter().enumerate() {
            let title = n
                .title
                .as_deref()
                .map_or("(untitled)".to_string(), one_line);
            out.push_str(&format!("\n## {}. {title}\n", self.offset + i + 1));
            match &n.note_id {
                Some(id) => out.push_str(&format!("- note_id: {id}\n")),
                None => {
                    out.push_str("- note_id: none (no front matter: not editable with note_save)\n")
                }
            }
            out.push_str(&format!("- version: {}\n", n.version));
            match &n.doc_id {
                Some(d) => out.push_str(&format!("- doc_id: {d} (indexed)\n")),
                None => out.push_str("- doc_id: none (not indexed yet)\n"),
            }
            out.push_str(&format!("- path: {}\n", shown(&n.path)));
            out.push_str(&format!(
                "- created: {} · modified: {}\n",
                format_rfc3339(n.created_at),
                format_rfc3339(n.modified_at)
            ));
            if !n.tags.is_empty() {
                let tags: Vec<String> = n.tags.iter().map(|t| format!("#{t}")).collect();
                out.push_str(&format!("- tags: {}\n", tags.join(" ")));
            }
            if let Some(s) = &n.source {
                out.push_str(&format!("- source: {}\n", one_line(s)));
            }
            if let Some(s) = &n.snippet
                && !s.is_empty()
            {
                out.push_str(&format!("> {s}\n"));
            }
        }
        if self.has_more {
            out.push_str(&format!(
                "\nMore notes: continue with offset={}\n",
                self.offset + self.items.len()
            ));
        }
        if !self.tag_counts.is_empty() {
            let tags: Vec<String> = self
                .tag_counts
                .iter()
                .map(|(t, c)| format!("#{t} ({c})"))
                .collect();
            out.push_str(&format!("\nAvailable tags: {}\n", tags.join(", ")));
        }
        out
    }
}

/// Characters of a note snippet.
const NOTE_SNIPPET_CHARS: usize = 200;
/// Tags in `available_tags`.
const AVAILABLE_TAGS: usize = 50;

fn snippet_of(body: &str) -> String {
    let flat = one_line(body);
    let cut = linkly_core::stdx::truncate_chars(&flat, NOTE_SNIPPET_CHARS);
    if cut.len() < flat.len() {
        format!("{cut}…")
    } else {
        flat
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
