//! Notes: Markdown files in the notes folder, the one thing Linkly writes.
//!
//! - `store`: the files, their front matter, and the compare-and-swap writes (its module doc
//!   states the concurrency contract).
//! - `whitelist`: the Markdown a note body may contain, checked on the pulldown-cmark AST.
//! - `tags`: `#tag` tokens, normalisation, appending missing tokens.
//! - `versions`: SHA-256 versions.
//! - `front_matter`: a small YAML front-matter reader and writer.
//!
//! This module also serves `list scope="notes"` (file system first: a note written a moment
//! ago is listed before it is indexed) and the notes restriction of `search`.

pub(crate) mod front_matter;
pub(crate) mod store;
pub(crate) mod tags;
pub(crate) mod versions;
pub(crate) mod whitelist;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use linkly_core::{Config, DataDir, format_rfc3339};
use linkly_index::{DocFilter, PathPredicate, SyncOptions};
use schemars::JsonSchema;
use serde::Serialize;

use crate::error::{check_choice, check_range};
use crate::notes::store::{NoteFile, NoteStore};
use crate::render::one_line;
use crate::tools::Rendered;
use crate::tools::list::ListParams;
use crate::{Linkly, OutputFormat, Result, ToolError};

/// Characters of a note snippet.
const SNIPPET_CHARS: usize = 200;
/// Tags in `available_tags`.
const AVAILABLE_TAGS: usize = 50;

/// The sync options of a configuration: the watched folders plus the notes folder (when it
/// exists), so that notes are indexed like any Markdown document. The notes folder is a root
/// of its own, so it is walked even when it lies in a hidden folder such as `~/.linkly`.
pub fn sync_options(config: &Config, data_dir: &DataDir) -> SyncOptions {
    let mut roots = config.folders.clone();
    let notes = config.notes_dir(data_dir);
    // A notes folder inside a watched folder is walked with it, unless a hidden folder on the
    // way would make the walker skip it; a second root would list its files twice.
    let covered = roots.iter().any(|r| {
        notes.strip_prefix(r).is_ok_and(|rel| {
            !rel.components()
                .any(|c| c.as_os_str().to_string_lossy().starts_with('.'))
        })
    });
    if notes.is_dir() && !covered {
        roots.push(notes);
    }
    SyncOptions {
        roots,
        exclude: config.exclude.clone(),
        ..SyncOptions::default()
    }
}

impl Linkly {
    /// The notes folder in effect.
    pub fn notes_dir(&self) -> PathBuf {
        self.config().notes_dir(self.data_dir())
    }

    pub(crate) fn note_store(&self) -> NoteStore {
        NoteStore::new(self.notes_dir())
    }

    /// The index record of a note when it is indexed at its current bytes (same size and
    /// modification time); a stale record is "not indexed yet", so that nobody reads old text
    /// next to a new version.
    fn indexed_doc(&self, note: &NoteFile) -> Result<Option<(linkly_core::DocId, i64)>> {
        let Some(path) = note.path.to_str() else {
            return Ok(None);
        };
        Ok(self.index().doc_by_path(path)?.and_then(|rec| {
            (rec.size == note.size && rec.modified_at == note.modified_at)
                .then_some((rec.id, rec.indexed_at))
        }))
    }
}

/// What `read` shows of a Markdown file's front matter and, for a note, what `note_save`
/// needs to edit it.
pub(crate) struct MarkdownMeta {
    /// Every top-level key of the front matter, in the block's order.
    pub(crate) fields: Vec<(String, front_matter::Value)>,
    /// Lines the block takes in the file (0 without one).
    pub(crate) lines: u32,
    /// The note, when the file is one (a Markdown file in the notes folder).
    pub(crate) note: Option<NoteFile>,
}

/// The most bytes `read` looks at for the front matter of a Markdown file that is not a note.
const FRONT_MATTER_PEEK: u64 = 256 * 1024;

impl Linkly {
    /// The front matter of a Markdown file read from disk (for a note: the whole note, whose
    /// version is that of the bytes read). `None` when the file cannot be read.
    pub(crate) fn markdown_meta(&self, path: &str) -> Option<MarkdownMeta> {
        use std::io::Read as _;
        let path = Path::new(path);
        let in_notes = path.starts_with(self.notes_dir());
        let bytes = if in_notes {
            fs_err::read(path).ok()?
        } else {
            let mut head = Vec::new();
            fs_err::File::open(path)
                .ok()?
                .take(FRONT_MATTER_PEEK)
                .read_to_end(&mut head)
                .ok()?;
            head
        };
        let text = String::from_utf8_lossy(&bytes);
        let lines = linkly_extract::formats::split_front_matter(&text).map_or(0, |b| b.lines);
        let (fm, _) = front_matter::split(&text);
        let note = if in_notes {
            store::note_from_bytes(path, &bytes).ok()
        } else {
            None
        };
        Some(MarkdownMeta {
            fields: fm.map(|fm| fm.fields()).unwrap_or_default(),
            lines,
            note,
        })
    }
}

/// Normalises a `tags` filter: empties dropped; given but with nothing usable is an error.
pub(crate) fn tag_filter(tags: Option<&[String]>) -> Result<Option<Vec<String>>> {
    let Some(raw) = tags else { return Ok(None) };
    let normalised = linkly_core::normalise_tags(raw);
    if normalised.is_empty() && !raw.is_empty() {
        return Err(ToolError::invalid(
            "tags has no usable tag (after stripping `#` and blanks); give tags like [\"work\"] or omit tags",
        ));
    }
    Ok((!normalised.is_empty()).then_some(normalised))
}

fn has_all(note: &NoteFile, wanted: &[String]) -> bool {
    wanted.iter().all(|t| note.tags.contains(t))
}

/// The restriction `search` applies for `scope="notes"` or a `tags` filter: only note files
/// (that carry every tag asked for). `None` when neither applies.
pub(crate) fn search_restriction(
    linkly: &Linkly,
    scope: &str,
    library: Option<&str>,
    tags: Option<&[String]>,
) -> Result<Option<HashSet<String>>> {
    let wanted = tag_filter(tags)?;
    if scope != "notes" && wanted.is_none() {
        return Ok(None);
    }
    if scope == "notes"
        && let Some(lib) = library
        && lib.starts_with("cloud://")
    {
        return Err(ToolError::invalid(format!(
            "scope \"notes\" cannot be combined with the cloud library {lib:?}: notes live on this machine only"
        )));
    }
    Ok(Some(
        tagged_paths(linkly, &wanted.unwrap_or_default())?
            .into_iter()
            .collect(),
    ))
}

/// The paths of the notes that carry every tag of `tags` (normalised here), as the index
/// stores them: the notes of a library's note-tag filter.
pub(crate) fn tagged_paths(linkly: &Linkly, tags: &[String]) -> Result<Vec<String>> {
    let wanted = linkly_core::normalise_tags(tags);
    let mut paths: Vec<String> = linkly
        .note_store()
        .scan()?
        .into_iter()
        .filter(|n| has_all(n, &wanted))
        .filter_map(|n| n.path.to_str().map(str::to_string))
        .collect();
    paths.sort();
    Ok(paths)
}

/// Narrows a search filter to a set of note paths.
pub(crate) fn restrict(filter: &mut DocFilter, notes: HashSet<String>) {
    let notes = Arc::new(notes);
    let previous = filter.path.take();
    filter.path = Some(Arc::new(move |path: &str| {
        notes.contains(path) && previous.as_ref().is_none_or(|p| p(path))
    }) as PathPredicate);
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

fn snippet_of(body: &str) -> String {
    let flat = one_line(body);
    let cut = linkly_core::stdx::truncate_chars(&flat, SNIPPET_CHARS);
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

/// `list` with `scope="notes"`.
pub(crate) fn list_tool(linkly: &Linkly, params: &ListParams) -> Result<Rendered> {
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
    let format = OutputFormat::parse(Some(params.output_format.as_deref().unwrap_or("json")))?;
    let sort = check_choice(
        "sort",
        params.sort.as_deref().unwrap_or("recent"),
        &["recent", "oldest", "name"],
    )?;
    let snippet = params.snippet.unwrap_or(true);
    let limit = crate::tools::list::check_list_limit(params.limit, snippet)?;
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
        "oldest" => notes.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.path.cmp(&b.path))),
        "name" => notes.sort_by(|a, b| {
            file_name(&a.path)
                .cmp(&file_name(&b.path))
                .then(a.path.cmp(&b.path))
        }),
        _ => notes.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.path.cmp(&b.path))),
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
    crate::tools::render(format, &response, NotesList::to_markdown)
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
            out.push_str(&format!("- path: {}\n", crate::render::shown(&n.path)));
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
