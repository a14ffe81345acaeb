//! The notes store: one Markdown file per note in the notes folder, with a server-owned YAML
//! front matter (`note_id`, `created_at`, `updated_at`, `source`).
//!
//! # Concurrency contract
//!
//! - **Who writes:** only `note_save` (through [`NoteStore::create`] and [`NoteStore::edit`]),
//!   from any thread of any process, and people in their editors. Readers (`list`, `search`,
//!   the indexer) never lock.
//! - **What is atomic:** every write runs under an exclusive lock on `.linkly-notes.lock` in
//!   the notes folder (`File::lock`, an OS lock held per open file, so it excludes other
//!   threads and other processes alike, and is released if the holder dies). Under the lock the
//!   store reads the note, compares versions, writes the new bytes to a hidden temporary file
//!   in the same folder, fsyncs it, renames it over the note (atomic on one file system) and
//!   fsyncs the folder. A reader sees the old bytes or the new ones, never a mix.
//! - **How versions compare:** a version is the lowercase hex SHA-256 of the file's bytes, read
//!   under the lock. An edit whose `base_version` differs writes nothing and reports the actual
//!   version (`NOTE_VERSION_CONFLICT`), so two editors can never both succeed from the same
//!   base. A person's edit in a text editor changes the bytes, hence the version, so an agent
//!   working from an older read is refused too (editors do not take the lock; their write is
//!   one more version the next compare sees).
//!
//! Paths: file names are derived from the body's first line and sanitised (no separators, no
//! leading dot, bounded length), and note ids are only ever compared with front-matter values,
//! never joined to a path, so nothing a caller sends can reach outside the folder.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use chrono::{DateTime, SecondsFormat, Utc};
use linkly_core::ErrorCode;
use serde_json::json;

use crate::notes::front_matter::{self, FrontMatter, quote};
use crate::notes::{tags, versions, whitelist};
use crate::{Result, ToolError};

/// The largest body `note_save` accepts, in bytes (10 MiB).
pub(crate) const MAX_CONTENT_BYTES: usize = 10 * 1024 * 1024;
/// The longest `app_name`, in characters.
pub(crate) const MAX_APP_NAME_CHARS: usize = 64;
/// The lock file every writer holds.
const LOCK_FILE: &str = ".linkly-notes.lock";
/// How deep the store looks into sub-folders of the notes folder.
const MAX_DEPTH: usize = 8;
/// The longest file stem derived from a first line, in characters.
const MAX_STEM_CHARS: usize = 80;
/// The prefix of generated file names (`note-20260508-144314-1a2b3c4d.md`).
const GENERATED_PREFIX: &str = "note-";

/// A note as read from disk.
#[derive(Debug, Clone)]
pub(crate) struct NoteFile {
    /// The absolute path.
    pub(crate) path: PathBuf,
    /// The UUID from the front matter (`None` for a Markdown file without one).
    pub(crate) note_id: Option<String>,
    /// SHA-256 of the bytes.
    pub(crate) version: String,
    /// The title: the front matter's `title`, else the file stem; `None` when neither (the
    /// name was generated).
    pub(crate) title: Option<String>,
    /// Creation time, Unix ms (front matter, else the file's modification time).
    pub(crate) created_at: i64,
    /// The file's modification time, Unix ms.
    pub(crate) modified_at: i64,
    /// The file's size in bytes.
    pub(crate) size: u64,
    /// The `source` badge.
    pub(crate) source: Option<String>,
    /// Body tags, plus legacy front-matter tags not yet moved into the body.
    pub(crate) tags: Vec<String>,
    /// The body, front matter removed.
    pub(crate) body: String,
}

/// What a successful save wrote.
#[derive(Debug, Clone)]
pub(crate) struct Saved {
    pub(crate) note_id: String,
    pub(crate) version: String,
    pub(crate) path: PathBuf,
    pub(crate) body: String,
    pub(crate) tags: Vec<String>,
}

/// A validated save request.
#[derive(Debug, Clone)]
pub(crate) struct SaveRequest {
    /// The body, line ends normalised.
    pub(crate) body: String,
    /// Tags to add, normalised and writable.
    pub(crate) add_tags: Vec<String>,
    /// The sanitised app name.
    pub(crate) source: Option<String>,
    /// Written by the person in their window: any Markdown (the agents' whitelist does not
    /// apply to what the person writes).
    pub(crate) person: bool,
}

/// The notes folder.
#[derive(Debug, Clone)]
pub(crate) struct NoteStore {
    dir: PathBuf,
}

/// The exclusive writer lock; released when dropped (or when the process dies).
struct WriteLock {
    _file: std::fs::File,
}

fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::new(ErrorCode::NoteInvalidInput, message)
}

/// Reads a note file's bytes if they are at `base_version`; otherwise `NOTE_VERSION_CONFLICT`
/// with both versions in its details and the message `conflict` writes from the current one.
fn read_at_version(
    path: &Path,
    base_version: &str,
    conflict: impl FnOnce(&str) -> String,
) -> Result<Vec<u8>> {
    let bytes = fs_err::read(path).map_err(ToolError::internal)?;
    let actual = versions::version_of(&bytes);
    if actual != base_version {
        let mut err = ToolError::new(ErrorCode::NoteVersionConflict, conflict(&actual));
        err.details = Some(json!({"actual_version": actual, "expected_version": base_version}));
        return Err(err);
    }
    Ok(bytes)
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> ToolError {
    ToolError::internal(format!("{what} {}: {e}", path.display()))
}

fn millis_of(t: std::io::Result<std::time::SystemTime>) -> i64 {
    t.ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as i64)
}

/// RFC 3339 UTC with milliseconds, as the front matter stores times.
pub(crate) fn format_time(millis: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(millis)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Normalises and checks a note id: a UUID in any standard form becomes its lowercase
/// hyphenated form; anything else is refused.
pub(crate) fn parse_note_id(raw: &str) -> Result<String> {
    let shown: String = linkly_core::stdx::truncate_chars(raw, 80)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    uuid::Uuid::try_parse(raw.trim())
        .map(|u| u.hyphenated().to_string())
        .map_err(|_| {
            invalid(format!(
                "note_id must be a UUID like \"3f2c8e1a-5b6d-4c7e-9f80-123456789abc\" (got {shown:?}); take it from list scope=\"notes\""
            ))
        })
}

/// Sanitises `app_name`: control characters removed, trimmed, at most 64 characters;
/// blank is no name.
pub(crate) fn sanitise_app_name(raw: &str) -> Result<Option<String>> {
    let cleaned: String = raw.chars().filter(|c| !c.is_control()).collect();
    let cleaned = cleaned.trim();
    if cleaned.is_empty() {
        return Ok(None);
    }
    let n = cleaned.chars().count();
    if n > MAX_APP_NAME_CHARS {
        return Err(invalid(format!(
            "app_name must be at most {MAX_APP_NAME_CHARS} characters (got {n}): give the host app's display name, e.g. \"Cursor\""
        )));
    }
    Ok(Some(cleaned.to_string()))
}

/// Checks a body's size and characters and normalises its line ends.
pub(crate) fn prepare_body(content: &str) -> Result<String> {
    if content.len() > MAX_CONTENT_BYTES {
        return Err(invalid(format!(
            "content is {} bytes; a note holds at most {MAX_CONTENT_BYTES} bytes (10 MiB)",
            content.len()
        )));
    }
    if content.trim().is_empty() {
        return Err(invalid(
            "content must not be blank: send the note's Markdown body",
        ));
    }
    if let Some(line) = content
        .split('\n')
        .position(|l| l.chars().any(|c| c.is_control() && c != '\t' && c != '\r'))
    {
        return Err(invalid(format!(
            "content has a control character (NUL or similar) on line {}: notes are plain text",
            line + 1
        )));
    }
    Ok(content.replace("\r\n", "\n").replace('\r', "\n"))
}

/// A file stem from the first line of a body, when it has usable words.
fn stem_from_first_line(body: &str) -> Option<String> {
    let line = body.lines().find(|l| !l.trim().is_empty())?.trim();
    // Drop list markers, emphasis marks, escapes and tag tokens.
    let line = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))
        .or_else(|| line.strip_prefix("+ "))
        .unwrap_or(line);
    let line = match line.split_once(['.', ')']) {
        Some((n, rest))
            if !n.is_empty()
                && n.len() <= 9
                && n.bytes().all(|b| b.is_ascii_digit())
                && rest.starts_with(' ') =>
        {
            rest
        }
        _ => line,
    };
    let words: Vec<&str> = line
        .split_whitespace()
        .filter(|w| !(w.starts_with('#') && tags::is_writable(&linkly_core::normalise_tag(w))))
        .collect();
    let mut stem = String::new();
    for c in words.join(" ").chars() {
        let c = match c {
            '*' | '~' | '\\' => continue,
            '/' | ':' | '?' | '"' | '<' | '>' | '|' => ' ',
            c if c.is_control() => ' ',
            c => c,
        };
        stem.push(c);
    }
    let stem = stem.split_whitespace().collect::<Vec<_>>().join(" ");
    let stem = linkly_core::stdx::truncate_chars(&stem, MAX_STEM_CHARS);
    let stem = stem.trim_matches(|c: char| c == '.' || c.is_whitespace());
    let reserved = {
        let upper = stem.to_ascii_uppercase();
        let base = upper.split('.').next().unwrap_or("");
        matches!(base, "CON" | "PRN" | "AUX" | "NUL")
            || ((base.starts_with("COM") || base.starts_with("LPT"))
                && base.len() == 4
                && base.as_bytes()[3].is_ascii_digit())
    };
    let usable = stem.chars().any(char::is_alphanumeric) && !reserved && !is_generated_stem(stem);
    usable.then(|| stem.to_string())
}

/// Whether a file stem has the shape of a generated name.
fn is_generated_stem(stem: &str) -> bool {
    let Some(rest) = stem.strip_prefix(GENERATED_PREFIX) else {
        return false;
    };
    let parts: Vec<&str> = rest.split('-').collect();
    matches!(parts.as_slice(), [d, t, h]
        if d.len() == 8 && t.len() == 6 && h.len() == 8
            && d.bytes().chain(t.bytes()).all(|b| b.is_ascii_digit())
            && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn generated_stem(note_id: &str, now: i64) -> String {
    let t = DateTime::<Utc>::from_timestamp_millis(now).unwrap_or_default();
    let hex: String = note_id.chars().filter(|c| *c != '-').take(8).collect();
    format!("{GENERATED_PREFIX}{}-{hex}", t.format("%Y%m%d-%H%M%S"))
}

impl NoteStore {
    /// The store of a notes folder (created on the first write).
    pub(crate) fn new(dir: PathBuf) -> NoteStore {
        NoteStore { dir }
    }

    fn lock(&self) -> Result<WriteLock> {
        fs_err::create_dir_all(&self.dir).map_err(ToolError::internal)?;
        let path = self.dir.join(LOCK_FILE);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| io_error("cannot open the notes lock", &path, e))?;
        file.lock()
            .map_err(|e| io_error("cannot lock the notes folder with", &path, e))?;
        Ok(WriteLock { _file: file })
    }

    /// Every note file (`*.md`, hidden files and folders skipped), in no particular order.
    pub(crate) fn scan(&self) -> Result<Vec<NoteFile>> {
        let mut out = Vec::new();
        if self.dir.is_dir() {
            self.scan_dir(&self.dir, 0, &mut out)?;
        }
        Ok(out)
    }

    fn scan_dir(&self, dir: &Path, depth: usize, out: &mut Vec<NoteFile>) -> Result<()> {
        let entries = match fs_err::read_dir(dir) {
            Ok(e) => e,
            Err(e) if depth > 0 => {
                tracing::debug!(path = %dir.display(), error = %e, "skipping unreadable folder");
                return Ok(());
            }
            Err(e) => return Err(ToolError::internal(e)),
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with('.') {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() && depth < MAX_DEPTH {
                self.scan_dir(&path, depth + 1, out)?;
            } else if kind.is_file()
                && Path::new(name)
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("md"))
            {
                match read_note(&path) {
                    Ok(note) => out.push(note),
                    Err(e) => {
                        tracing::debug!(path = %path.display(), error = %e, "skipping unreadable note")
                    }
                }
            }
        }
        Ok(())
    }

    /// The notes holding an id.
    fn find(&self, note_id: &str) -> Result<Vec<NoteFile>> {
        Ok(self
            .scan()?
            .into_iter()
            .filter(|n| n.note_id.as_deref() == Some(note_id))
            .collect())
    }

    /// Creates a note. `note_id` is a normalised UUID or `None` for a new one.
    pub(crate) fn create(&self, note_id: Option<String>, req: SaveRequest) -> Result<Saved> {
        let body = tags::append_missing(&req.body, &req.add_tags);
        if !req.person {
            whitelist::check(&body, &Default::default()).map_err(invalid)?;
        }
        let _lock = self.lock()?;
        let note_id = match note_id {
            Some(id) => {
                if let Some(existing) = self.find(&id)?.first() {
                    return Err(ToolError::new(
                        ErrorCode::NoteDuplicateId,
                        format!(
                            "a note with note_id {id} already exists ({}): edit it with mode=\"edit\", or omit note_id to create a new note",
                            existing.path.display()
                        ),
                    ));
                }
                id
            }
            None => uuid::Uuid::new_v4().hyphenated().to_string(),
        };
        let now = linkly_core::now_millis();
        let path = self.new_path(&body, &note_id, now);
        let mut fm = FrontMatter::default();
        fm.set("note_id", &note_id);
        // The note's one title (search, list and read show it): the file's stem, unless the
        // name was generated (then there is none).
        if let Some(title) = title_of_stem(&path) {
            fm.set("title", &quote(&title));
        }
        fm.set("created_at", &format_time(now));
        fm.set("updated_at", &format_time(now));
        if let Some(source) = &req.source {
            fm.set("source", &quote(source));
        }
        let bytes = format!("{}{body}", fm.render());
        write_atomic(&self.dir, &path, bytes.as_bytes())?;
        tracing::info!(path = %path.display(), note_id = %note_id, "note created");
        Ok(Saved {
            note_id,
            version: versions::version_of(bytes.as_bytes()),
            path,
            tags: tags::body_tags(&body),
            body,
        })
    }

    /// Edits a note if its current version is `base_version`.
    pub(crate) fn edit(
        &self,
        note_id: &str,
        base_version: &str,
        req: SaveRequest,
    ) -> Result<Saved> {
        let _lock = self.lock()?;
        let found = self.find(note_id)?;
        let note = match found.as_slice() {
            [] => {
                return Err(ToolError::new(
                    ErrorCode::NoteNotFound,
                    format!(
                        "no note has note_id {note_id}: list scope=\"notes\" gives the ids of the existing notes (mode=\"create\" makes a new one)"
                    ),
                ));
            }
            [one] => one,
            many => {
                return Err(ToolError::new(
                    ErrorCode::NoteDuplicateId,
                    format!(
                        "note_id {note_id} is held by {} files ({}); ask the user to keep one of them",
                        many.len(),
                        many.iter()
                            .map(|n| n.path.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        };
        // Read again under the lock: `scan` read it under the lock too, but be exact about
        // which bytes the version and the rewrite are based on.
        let bytes = read_at_version(&note.path, base_version, |actual| {
            format!(
                "note {note_id} has changed since base_version {base_version}: its current version is {actual}. Nothing was written. Re-read the note (list scope=\"notes\", then read), merge your change into its current content, and retry with base_version={actual}; never overwrite blindly"
            )
        })?;
        let text = String::from_utf8_lossy(&bytes);
        let (fm, old_body) = front_matter::split(&text);
        let mut fm = fm.unwrap_or_default();
        // Legacy notes keep tags in the front matter only: move the missing ones into the body.
        let old_body_tags = tags::body_tags(old_body);
        let legacy: Vec<String> = linkly_core::normalise_tags(&fm.list("tags"))
            .into_iter()
            .filter(|t| tags::is_writable(t) && !old_body_tags.contains(t))
            .collect();
        let mut wanted = legacy.clone();
        for t in &req.add_tags {
            if !wanted.contains(t) {
                wanted.push(t.clone());
            }
        }
        let body = tags::append_missing(&req.body, &wanted);
        if !req.person {
            whitelist::check(&body, &whitelist::kinds(old_body)).map_err(invalid)?;
        }
        let now = linkly_core::now_millis();
        if fm.scalar("note_id").is_none() {
            fm.set("note_id", note_id);
        }
        if fm.scalar("title").is_none()
            && let Some(title) = &note.title
        {
            fm.set("title", &quote(title));
        }
        if fm.scalar("created_at").is_none() {
            fm.set("created_at", &format_time(note.created_at));
        }
        fm.set("updated_at", &format_time(now));
        if let Some(source) = &req.source {
            fm.set("source", &quote(source));
        }
        if fm.get("tags").is_some() {
            fm.remove("tags");
        }
        let new_bytes = format!("{}{body}", fm.render());
        write_atomic(&self.dir, &note.path, new_bytes.as_bytes())?;
        tracing::info!(path = %note.path.display(), note_id = %note_id, "note edited");
        Ok(Saved {
            note_id: note_id.to_string(),
            version: versions::version_of(new_bytes.as_bytes()),
            path: note.path.clone(),
            tags: tags::body_tags(&body),
            body,
        })
    }

    /// Moves a note to the trash folder if its current version is `base_version` (a note
    /// changed since the person saw it is not deleted: `NOTE_VERSION_CONFLICT`). The trashed
    /// file keeps its bytes; its name is `<UTC time>_<file name>`, so the newest sort last.
    pub(crate) fn trash(&self, note_id: &str, base_version: &str, trash: &Path) -> Result<Trashed> {
        let _lock = self.lock()?;
        let note = self.only(note_id)?;
        read_at_version(&note.path, base_version, |actual| {
            format!(
                "note {note_id} has changed since version {base_version}: its current version is {actual}. Nothing was deleted; look at the note again before deleting it"
            )
        })?;
        fs_err::create_dir_all(trash).map_err(ToolError::internal)?;
        let file_name = note
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("note.md")
            .to_string();
        let stamp = chrono::Utc::now().format("%Y%m%d-%H%M%S%.3f");
        let mut target = trash.join(format!("{stamp}_{file_name}"));
        let mut n = 2;
        while target.symlink_metadata().is_ok() {
            target = trash.join(format!("{stamp}-{n}_{file_name}"));
            n += 1;
        }
        move_file(&note.path, &target)?;
        tracing::info!(from = %note.path.display(), to = %target.display(), note_id, "note moved to the trash");
        Ok(Trashed {
            from: note.path.clone(),
            name: target
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string(),
        })
    }

    /// Moves a trashed note back into the notes folder under its old file name (` 2`, ` 3`, …
    /// added while the name is taken). `name` is a file name of the trash folder, never a path.
    pub(crate) fn restore(&self, trash: &Path, name: &str) -> Result<PathBuf> {
        if !is_trash_name(name) {
            return Err(ToolError::new(
                ErrorCode::NoteNotFound,
                format!("{name:?} is not a note in the trash"),
            ));
        }
        let _lock = self.lock()?;
        let source = trash.join(name);
        if !source.is_file() {
            return Err(ToolError::new(
                ErrorCode::NoteNotFound,
                format!("{name:?} is not in the trash (any more)"),
            ));
        }
        let original = name.split_once('_').map_or(name, |(_, rest)| rest);
        let stem = original.strip_suffix(".md").unwrap_or(original);
        let mut target = self.dir.join(original);
        let mut n = 2;
        while target.symlink_metadata().is_ok() {
            target = self.dir.join(format!("{stem} {n}.md"));
            n += 1;
        }
        move_file(&source, &target)?;
        tracing::info!(from = %source.display(), to = %target.display(), "note restored from the trash");
        Ok(target)
    }

    /// The one note holding an id.
    fn only(&self, note_id: &str) -> Result<NoteFile> {
        let mut found = self.find(note_id)?;
        match found.len() {
            0 => Err(ToolError::new(
                ErrorCode::NoteNotFound,
                format!("no note has note_id {note_id}"),
            )),
            1 => Ok(found.remove(0)),
            n => Err(ToolError::new(
                ErrorCode::NoteDuplicateId,
                format!("note_id {note_id} is held by {n} files; keep one of them first"),
            )),
        }
    }

    /// A free path in the folder for a new note: the first line's words, else a generated
    /// name; ` 2`, ` 3`, … added while the name is taken.
    fn new_path(&self, body: &str, note_id: &str, now: i64) -> PathBuf {
        let generated = generated_stem(note_id, now);
        let stem = stem_from_first_line(body).unwrap_or_else(|| generated.clone());
        let taken = |p: &Path| p.exists() || p.symlink_metadata().is_ok();
        for n in 1..=1000 {
            let name = if n == 1 {
                format!("{stem}.md")
            } else {
                format!("{stem} {n}.md")
            };
            let path = self.dir.join(&name);
            if !taken(&path) {
                return path;
            }
        }
        self.dir.join(format!("{generated}.md"))
    }
}

/// A note moved to the trash.
#[derive(Debug, Clone)]
pub(crate) struct Trashed {
    /// Where it was.
    pub(crate) from: PathBuf,
    /// Its file name in the trash folder.
    pub(crate) name: String,
}

/// True for a plain file name of the trash: `<stamp>_<name>.md`, no separator, no leading dot.
pub(crate) fn is_trash_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && !name.contains(['/', '\\', '\0'])
        && name.contains('_')
        && name.ends_with(".md")
        && Path::new(name).file_name().and_then(|n| n.to_str()) == Some(name)
}

/// Renames a file, fsyncing both folders (a rename across file systems is refused, as the
/// trash lies in the data directory and the notes folder usually too).
fn move_file(from: &Path, to: &Path) -> Result<()> {
    fs_err::rename(from, to).map_err(ToolError::internal)?;
    for dir in [from.parent(), to.parent()].into_iter().flatten() {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// Reads one note file.
pub(crate) fn read_note(path: &Path) -> std::io::Result<NoteFile> {
    let bytes = fs_err::read(path)?;
    note_from_bytes(path, &bytes)
}

/// A note from the bytes just read from `path` (its version is theirs).
pub(crate) fn note_from_bytes(path: &Path, bytes: &[u8]) -> std::io::Result<NoteFile> {
    let meta = fs_err::metadata(path)?;
    let version = versions::version_of(bytes);
    let text = String::from_utf8_lossy(bytes);
    let (fm, body) = front_matter::split(&text);
    let modified_at = millis_of(meta.modified());
    let title = fm
        .as_ref()
        .and_then(|fm| fm.scalar("title"))
        .or_else(|| title_of_stem(path));
    let (note_id, created_at, source, legacy) = match &fm {
        Some(fm) => (
            fm.scalar("note_id")
                .and_then(|id| uuid::Uuid::try_parse(&id).ok())
                .map(|u| u.hyphenated().to_string()),
            fm.scalar("created_at")
                .and_then(|t| linkly_core::parse_time(&t).ok())
                .unwrap_or(modified_at),
            fm.scalar("source"),
            linkly_core::normalise_tags(&fm.list("tags")),
        ),
        None => (None, modified_at, None, Vec::new()),
    };
    let mut note_tags = tags::body_tags(body);
    for t in legacy {
        if !note_tags.contains(&t) {
            note_tags.push(t);
        }
    }
    Ok(NoteFile {
        path: path.to_path_buf(),
        note_id,
        version,
        title,
        created_at,
        modified_at,
        size: meta.len(),
        source,
        tags: note_tags,
        body: body.to_string(),
    })
}

/// The title a note's file name gives: its stem, unless the name was generated.
fn title_of_stem(path: &Path) -> Option<String> {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    (!stem.is_empty() && !is_generated_stem(stem)).then(|| stem.to_string())
}

/// Writes a file atomically: a hidden temporary file in the same folder, fsync, rename, then
/// fsync of the folder.
fn write_atomic(dir: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    debug_assert!(path.parent() == Some(dir) || path.starts_with(dir));
    let tmp = dir.join(format!(".note-{}.tmp", uuid::Uuid::new_v4().simple()));
    let result = (|| -> std::io::Result<()> {
        let mut f = fs_err::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs_err::rename(&tmp, path)?;
        Ok(())
    })();
    if let Err(e) = result {
        let _ = fs_err::remove_file(&tmp);
        return Err(io_error("cannot write the note", path, e));
    }
    // Make the rename durable. Not every platform can open a folder; the rename stands anyway.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_from_first_lines() {
        let s = |b: &str| stem_from_first_line(b);
        assert_eq!(s("Meeting with **Bob**\nmore").unwrap(), "Meeting with Bob");
        assert_eq!(s("\n\n- 1/2: plan?\n").unwrap(), "1 2 plan");
        assert_eq!(s("1. First step").unwrap(), "First step");
        assert_eq!(s("3.5 hours").unwrap(), "3.5 hours");
        assert_eq!(s("../../etc/passwd").unwrap(), "etc passwd");
        assert_eq!(s("/abs/path").unwrap(), "abs path");
        assert_eq!(s("#work #ideas Plan").unwrap(), "Plan");
        assert!(s("#work #ideas").is_none());
        assert!(s("... --- !!!").is_none());
        assert!(s("CON").is_none());
        assert!(s("note-20260101-000000-abcdef12").is_none());
        let long = "word ".repeat(100);
        assert!(s(&long).unwrap().chars().count() <= MAX_STEM_CHARS);
        assert_eq!(s(".hidden name").unwrap(), "hidden name");
        assert!(is_generated_stem("note-20260101-000000-abcdef12"));
        assert!(!is_generated_stem("note-about-cats"));
    }

    #[test]
    fn note_ids_must_be_uuids() {
        let id = "3F2C8E1A-5B6D-4C7E-9F80-123456789ABC";
        assert_eq!(
            parse_note_id(id).unwrap(),
            "3f2c8e1a-5b6d-4c7e-9f80-123456789abc"
        );
        for bad in [
            "../etc/passwd",
            "/etc/passwd",
            "3f2c8e1a-5b6d-4c7e-9f80-123456789abc/../x",
            "3f2c8e1a-5b6d-4c7e-9f80-123456789ab\0",
            "",
            &"a".repeat(5000),
        ] {
            let err = parse_note_id(bad).unwrap_err();
            assert_eq!(err.code, ErrorCode::NoteInvalidInput, "{bad}");
            assert!(err.message.len() < 400, "long ids are not echoed in full");
        }
    }

    #[test]
    fn app_names_and_bodies() {
        assert_eq!(
            sanitise_app_name(" Cur\u{7}sor\n").unwrap().as_deref(),
            Some("Cursor")
        );
        assert_eq!(sanitise_app_name(" \t").unwrap(), None);
        assert!(sanitise_app_name(&"x".repeat(65)).is_err());
        assert!(prepare_body("  \n\t").is_err());
        assert!(prepare_body("a\0b").is_err());
        assert_eq!(prepare_body("a\r\nb\rc").unwrap(), "a\nb\nc");
        assert!(prepare_body(&"a".repeat(MAX_CONTENT_BYTES + 1)).is_err());
    }
}
