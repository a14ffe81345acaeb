//! What only the person may do with notes, from their own window (never an MCP tool): read a
//! note by its id for the editor, delete it into the trash, and restore it from there.
//!
//! **The trash:** a deleted note is moved, bytes unchanged, to `<data dir>/trash/notes/` as
//! `<UTC time>_<file name>`; it leaves the index at once and comes back (to the notes folder,
//! under its old file name) with [`Linkly::note_restore`]. Nothing empties the trash but the
//! person, by removing its files.

use std::path::PathBuf;

use linkly_core::ErrorCode;
use serde::Serialize;

use crate::notes::store::{self, NoteStore, is_trash_name};
use crate::notes::versions;
use crate::{Linkly, Result, ToolError};

/// A note as the person's editor shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NoteView {
    /// The note's UUID.
    pub note_id: String,
    /// The version (SHA-256 of the file's bytes) the body was read at.
    pub version: String,
    /// The title, when the note has one.
    pub title: Option<String>,
    /// The absolute path.
    pub path: String,
    /// The `#tag`s of the body (and legacy front-matter tags).
    pub tags: Vec<String>,
    /// The body, front matter removed: what `note_save` takes back.
    pub body: String,
    /// The file's modification time, Unix ms.
    pub modified_at: i64,
}

/// A note in the trash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrashedNote {
    /// Its file name in the trash (what [`Linkly::note_restore`] takes).
    pub name: String,
    /// The note's title (its front matter's, else its old file stem).
    pub title: String,
    /// When it was deleted, Unix ms.
    pub deleted_at: i64,
    /// Its size in bytes.
    pub size: u64,
}

/// Where a deletion put a note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NoteDeleted {
    /// The note's old path.
    pub from: String,
    /// Its file name in the trash.
    pub trash_name: String,
}

impl Linkly {
    /// The trash folder of deleted notes: `<data dir>/trash/notes`.
    pub fn notes_trash_dir(&self) -> PathBuf {
        self.data_dir().root().join("trash").join("notes")
    }

    /// Reads a note by its id (from the notes folder, not the index: a note saved a moment ago
    /// is there).
    pub fn note(&self, note_id: &str) -> Result<NoteView> {
        let id = store::parse_note_id(note_id)?;
        let note = self
            .note_store()
            .scan()?
            .into_iter()
            .find(|n| n.note_id.as_deref() == Some(id.as_str()))
            .ok_or_else(|| {
                ToolError::new(ErrorCode::NoteNotFound, format!("no note has note_id {id}"))
            })?;
        Ok(NoteView {
            note_id: id,
            version: note.version,
            title: note.title,
            path: note.path.to_string_lossy().into_owned(),
            tags: note.tags,
            body: note.body,
            modified_at: note.modified_at,
        })
    }

    /// Deletes a note the person saw at `base_version`: moved to the trash (see the module
    /// doc) and out of the index. A note changed since is not deleted
    /// (`NOTE_VERSION_CONFLICT`). The person's action only: no MCP tool calls it.
    pub fn note_delete(&self, note_id: &str, base_version: &str) -> Result<NoteDeleted> {
        let id = store::parse_note_id(note_id)?;
        let base = versions::parse(base_version).ok_or_else(|| {
            ToolError::new(
                ErrorCode::NoteInvalidInput,
                "base_version must be a note version (64 hexadecimal characters)",
            )
        })?;
        let trashed =
            NoteStore::new(self.notes_dir()).trash(&id, &base, &self.notes_trash_dir())?;
        if let Err(e) = self.refresh_paths(std::slice::from_ref(&trashed.from)) {
            tracing::warn!(path = %trashed.from.display(), error = %e.message, "the note was deleted but is still in the index until the next sync");
        }
        Ok(NoteDeleted {
            from: trashed.from.to_string_lossy().into_owned(),
            trash_name: trashed.name,
        })
    }

    /// Puts a trashed note back in the notes folder and indexes it; returns its view.
    pub fn note_restore(&self, trash_name: &str) -> Result<NoteView> {
        let path = self
            .note_store()
            .restore(&self.notes_trash_dir(), trash_name)?;
        if let Err(e) = self.refresh_paths(std::slice::from_ref(&path)) {
            tracing::warn!(path = %path.display(), error = %e.message, "the note was restored but not indexed now");
        }
        let note = store::read_note(&path).map_err(ToolError::internal)?;
        Ok(NoteView {
            note_id: note.note_id.unwrap_or_default(),
            version: note.version,
            title: note.title,
            path: path.to_string_lossy().into_owned(),
            tags: note.tags,
            body: note.body,
            modified_at: note.modified_at,
        })
    }

    /// The notes in the trash, the most recently deleted first.
    pub fn trashed_notes(&self) -> Result<Vec<TrashedNote>> {
        let dir = self.notes_trash_dir();
        let mut out = Vec::new();
        let Ok(entries) = fs_err::read_dir(&dir) else {
            return Ok(out);
        };
        for entry in entries.flatten() {
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if !is_trash_name(&name) || !entry.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let (stamp, original) = name.split_once('_').unwrap_or(("", name.as_str()));
            let deleted_at = chrono::NaiveDateTime::parse_from_str(
                stamp.get(..19).unwrap_or(stamp),
                "%Y%m%d-%H%M%S%.3f",
            )
            .map(|t| t.and_utc().timestamp_millis())
            .unwrap_or(0);
            let path = entry.path();
            let title = store::read_note(&path)
                .ok()
                .and_then(|n| n.title)
                .unwrap_or_else(|| original.trim_end_matches(".md").to_string());
            out.push(TrashedNote {
                size: entry.metadata().map(|m| m.len()).unwrap_or(0),
                name,
                title,
                deleted_at,
            });
        }
        out.sort_by(|a, b| b.deleted_at.cmp(&a.deleted_at).then(a.name.cmp(&b.name)));
        Ok(out)
    }
}
