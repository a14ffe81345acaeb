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
pub(crate) mod person;
pub(crate) mod store;
pub(crate) mod tags;
pub(crate) mod versions;
pub(crate) mod whitelist;

use std::path::{Path, PathBuf};

use linkly_core::{Config, DataDir};
use linkly_index::SyncOptions;

use crate::notes::store::{NoteFile, NoteStore};
use crate::{Linkly, Result, ToolError};

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
        follow_symlinks: config.follow_symlinks,
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
    pub(crate) fn indexed_doc(&self, note: &NoteFile) -> Result<Option<(linkly_core::DocId, i64)>> {
        let Some(path) = note.path.to_str() else {
            return Ok(None);
        };
        Ok(self.corpus().doc_by_path(path)?.and_then(|rec| {
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

pub(crate) fn has_all(note: &NoteFile, wanted: &[String]) -> bool {
    wanted.iter().all(|t| note.tags.contains(t))
}

/// The restriction `search` applies for `scope="notes"` or a `tags` filter: only note files
/// (that carry every tag asked for). `None` when neither applies.
pub(crate) fn search_restriction(
    linkly: &Linkly,
    notes_only: bool,
    library: Option<&str>,
    tags: Option<&[String]>,
) -> Result<Option<Vec<String>>> {
    let wanted = tag_filter(tags)?;
    if !notes_only && wanted.is_none() {
        return Ok(None);
    }
    if notes_only
        && let Some(lib) = library
        && lib.starts_with("cloud://")
    {
        return Err(ToolError::invalid(format!(
            "scope \"notes\" cannot be combined with the cloud library {lib:?}: notes live on this machine only"
        )));
    }
    Ok(Some(tagged_paths(linkly, &wanted.unwrap_or_default())?))
}

/// The paths of the notes that carry every tag of `tags` (normalised here), as the index
/// stores them: the notes of a library's note-tag filter, or of `scope="notes"` (every note,
/// with no tags).
///
/// The tags come from the index (`doc_tags`), not from the notes folder: only the notes indexed
/// since their tags were last stored are read (after a `note_save`, the note it wrote; after
/// an upgrade from an index without tags, every note once). A note changed on disk keeps its
/// indexed tags until the watcher or a sync indexes it again, as its text does.
pub(crate) fn tagged_paths(linkly: &Linkly, tags: &[String]) -> Result<Vec<String>> {
    let wanted = linkly_core::normalise_tags(tags);
    // Over another store (a gateway's library) there are no local notes.
    let Ok(index) = linkly.local_index() else {
        return Ok(Vec::new());
    };
    let dir = crate::library::path_key(&linkly.notes_dir());
    index.catch_up_tags(&dir, |path| {
        let path = Path::new(path);
        is_note_file(path)
            .then(|| store::read_note(path).ok().map(|n| n.tags))
            .flatten()
    })?;
    let mut paths = index.tagged_paths(&dir, &wanted)?;
    paths.retain(|p| is_note_file(Path::new(p)));
    Ok(paths)
}

/// Whether a path names a note file as the note store's scan takes it (`*.md`, any case).
fn is_note_file(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("md"))
}
