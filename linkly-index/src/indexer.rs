//! The incremental sync of watched folders into the store and the lexical index.
//!
//! One writer at a time (the tantivy writer lock spans processes). Each batch is written to the
//! store as dirty rows, then committed to the lexical index, then marked clean; a sync killed at
//! any point leaves dirty or stale rows that the next sync redoes, so the index reopens and
//! catches up.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Instant, UNIX_EPOCH};

use globset::{Glob, GlobSet, GlobSetBuilder};
use linkly_core::{char_count, now_millis, word_count};
use linkly_extract::Detected;
use sha2::{Digest, Sha256};

use crate::lexical::LexicalDoc;
use crate::store::{FileState, NewDoc, StoredText};
use crate::{Index, Result, analysis, keywords, pipeline};

/// Documents per batch: one store transaction (commits of the full-text index follow
/// [`COMMIT_EVERY`] and [`COMMIT_TERMS`]).
const BATCH_DOCS: usize = 1000;
/// Text bytes per batch (text and analysed terms).
const BATCH_BYTES: usize = 8 * 1024 * 1024;
/// Documents per batch of slow formats (OCR): small, so their text becomes searchable as it
/// comes and progress moves.
const SLOW_BATCH_DOCS: usize = 16;
/// Appended to the stored hash of a file skipped as `ocr_unavailable`, so that the first sync
/// that can OCR extracts it again although its bytes did not change.
const OCR_PENDING: &str = "+ocr_unavailable";
/// Appended to the stored hash of an audio or video file skipped as
/// `transcription_unavailable`, so that the first sync with a speech model transcribes it.
const SPEECH_PENDING: &str = "+transcription_unavailable";
/// Appended to the stored hash of an audio or video file skipped as `transcription_off`, so
/// that the first sync after its switch is turned on transcribes it.
const SPEECH_OFF: &str = "+transcription_off";
/// Text of one document the full-text index holds: a document longer than this (a 60 MB log on
/// one line) is searchable by its first 8 MiB, while `read` and `grep` see all of it. Keeps the
/// indexing of one huge file within a memory budget.
pub(crate) const LEXICAL_TEXT_BYTES: usize = 8 * 1024 * 1024;

/// The start of a text, at most `max` bytes, cut at a character boundary.
pub(crate) fn searchable(text: &str, max: usize) -> &str {
    &text[..linkly_core::stdx::floor_char_boundary(text, max.min(text.len()))]
}

/// `meta` key: when the last full sync finished (Unix ms).
const LAST_RECONCILE: &str = "last_reconcile_at";
/// `meta` key: when the last sync of any kind finished (Unix ms).
const LAST_SYNC: &str = "last_sync_at";

/// What a sync is doing, for progress displays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Walking the folders.
    Scanning,
    /// Extracting and indexing changed files.
    Indexing,
    /// Removing deleted files.
    Removing,
    /// Rebuilding the full-text index from the store (it was lost or inconsistent).
    Rebuilding,
    /// Finished.
    Done,
}

/// A progress report.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// The phase.
    pub phase: Phase,
    /// Items done in this phase.
    pub done: u64,
    /// Items in this phase (files found while scanning).
    pub total: u64,
    /// Bytes of files processed so far.
    pub bytes: u64,
}

/// What a sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Files seen in the watched folders.
    pub seen: u64,
    /// New files indexed.
    pub added: u64,
    /// Changed files re-indexed.
    pub updated: u64,
    /// Files unchanged.
    pub unchanged: u64,
    /// Files removed from the index.
    pub removed: u64,
    /// Files indexed by name only (with a skip reason).
    pub skipped: u64,
    /// Bytes of the files (re)indexed.
    pub bytes: u64,
    /// Wall time in milliseconds.
    pub elapsed_ms: u64,
}

/// The folders to index and what to leave out.
#[derive(Debug, Clone, Default)]
pub struct SyncOptions {
    /// Watched folders (absolute).
    pub roots: Vec<PathBuf>,
    /// Exclusion globs (see `linkly_core::Config::exclude`).
    pub exclude: Vec<String>,
    /// How risky formats (PDF) are extracted: in a worker process with a time and memory
    /// budget when one is configured, else in-process behind `catch_unwind`.
    pub sandbox: linkly_extract::Sandbox,
    /// Follow symlinked folders out of the watched folders (the watcher, and the paths it
    /// names). Default: false: a link to `~/.ssh` committed into a watched repository is not
    /// followed.
    pub follow_symlinks: bool,
}

impl SyncOptions {
    /// The options of a sync of these folders, nothing excluded, PDFs extracted in-process.
    pub fn of_roots(roots: Vec<PathBuf>) -> SyncOptions {
        SyncOptions {
            roots,
            ..SyncOptions::default()
        }
    }
}

struct Candidate {
    /// The file; its key in the store is `path.to_string_lossy()` (see [`path_key`]).
    path: PathBuf,
    size: u64,
    modified_at: i64,
    previous: Option<FileState>,
    /// What the file is, decided by the walk and carried to its extraction.
    detected: Detected,
}

pub(crate) struct Prepared {
    pub(crate) doc: NewDoc,
    /// True when the store is known not to hold the path (a sync saw no row for it): the row
    /// is inserted without looking for one.
    pub(crate) known_new: bool,
    /// The fields of the full-text index, analysed.
    pub(crate) terms: FieldTerms,
    pub(crate) previous: Option<FileState>,
}

/// A document's full-text fields as analysed terms ([`analysis::index_terms_of`]).
pub(crate) struct FieldTerms {
    pub(crate) title: String,
    pub(crate) filename: String,
    pub(crate) dir: String,
    pub(crate) content: String,
}

impl FieldTerms {
    /// The fields of the document whose store key is `path` (split here into the folder and
    /// the file name), with its title and its analysed text.
    pub(crate) fn of(path: &str, title: Option<&str>, content: String) -> FieldTerms {
        let (dir, filename) = split_path(path);
        FieldTerms {
            title: title.map(analysis::index_terms_of).unwrap_or_default(),
            filename: analysis::index_terms_of(filename),
            dir: analysis::index_terms_of(dir),
            content,
        }
    }
}

impl Prepared {
    /// A document ready to write; `content` is its analysed text.
    pub(crate) fn new(doc: NewDoc, content: String, previous: Option<FileState>) -> Prepared {
        Prepared {
            terms: FieldTerms::of(&doc.path, doc.title.as_deref(), content),
            doc,
            known_new: false,
            previous,
        }
    }
}

/// A store key's folder and file name, split at its last separator (`/`, or `\` on
/// Windows).
pub(crate) fn split_path(path: &str) -> (&str, &str) {
    let sep = if cfg!(windows) {
        path.rfind(['/', '\\'])
    } else {
        path.rfind('/')
    };
    match sep {
        // The root folder itself: `/a.md` is in `/`.
        Some(0) => (&path[..1], &path[1..]),
        Some(at) => (&path[..at], &path[at + 1..]),
        None => ("", path),
    }
}

enum Work {
    Unchanged(u64, i64),
    Index(Box<Prepared>),
}

/// Whether an exclusion glob parses (the indexer leaves out, with a warning, one that does
/// not): `Err` says why not.
pub fn check_exclusion(pattern: &str) -> Result<(), String> {
    Glob::new(pattern)
        .map(|_| ())
        .map_err(|e| e.kind().to_string())
}

fn exclusion_set(patterns: &[String]) -> GlobSet {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        match Glob::new(p) {
            Ok(g) => {
                b.add(g);
            }
            Err(e) => tracing::warn!(pattern = %p, error = %e, "ignoring invalid exclusion glob"),
        }
    }
    b.build().unwrap_or_else(|_| GlobSet::empty())
}

/// What the walk hands on for each file it admits: the path, its metadata and what it is.
type Found<'a> = dyn FnMut(PathBuf, std::fs::Metadata, Detected) + 'a;

/// Walks the watched folders: files of known doc types, hidden files, `.gitignore`d paths and
/// exclusions left out.
pub(crate) fn walk(
    opts: &SyncOptions,
    mut found: impl FnMut(PathBuf, std::fs::Metadata, Detected),
) {
    let excluded = exclusion_set(&opts.exclude);
    for root in &opts.roots {
        walk_from(root, root, None, &excluded, &mut found);
    }
}

/// Walks `start` (a folder at or below `root`) as a walk of `root` would see it: exclusions
/// are matched relative to `root`, `.gitignore` files of the folders above are read.
fn walk_from(
    start: &Path,
    root: &Path,
    max_depth: Option<usize>,
    excluded: &GlobSet,
    found: &mut Found<'_>,
) {
    let root_for_filter = root.to_path_buf();
    let excluded = excluded.clone();
    let walker = ignore::WalkBuilder::new(start)
        .hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .ignore(true)
        .parents(true)
        .follow_links(false)
        .max_depth(max_depth)
        .filter_entry(move |entry| {
            if excluded.is_empty() {
                return true;
            }
            let rel = entry
                .path()
                .strip_prefix(&root_for_filter)
                .unwrap_or(entry.path());
            !(excluded.is_match(rel) || excluded.is_match(entry.file_name()))
        })
        .build();
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                tracing::debug!(error = %e, "skipping unreadable entry");
                continue;
            }
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.into_path();
        // Known by its extension, or (none) a document recognised by its content (a DOCX saved
        // as `report`): decided here, once.
        let Some(detected) = Detected::at_walk(&path) else {
            continue;
        };
        if let Ok(meta) = fs_err::metadata(&path) {
            found(path, meta, detected);
        }
    }
}

/// True when `path` (at or below `root`) could be indexed as far as its own name and the
/// folders between it and `root` go: none hidden, none excluded.
fn admitted(root: &Path, path: &Path, excluded: &GlobSet) -> bool {
    let Ok(rel) = path.strip_prefix(root) else {
        return false;
    };
    let mut prefix = PathBuf::new();
    for c in rel.components() {
        prefix.push(c);
        let name = c.as_os_str();
        if name
            .to_str()
            .is_some_and(|n| n.starts_with('.') && n.len() > 1)
        {
            return false;
        }
        if !excluded.is_empty() && (excluded.is_match(&prefix) || excluded.is_match(name)) {
            return false;
        }
    }
    true
}

/// Whether `path`'s folder resolves outside `root` (a symlinked folder on the way): `W/keys/x`
/// with `keys -> ~/.ssh`. A path that cannot be resolved (gone) does not escape.
fn escapes(root: &Path, path: &Path) -> bool {
    let Some(parent) = path.parent() else {
        return false;
    };
    match (std::fs::canonicalize(root), std::fs::canonicalize(parent)) {
        (Ok(root), Ok(parent)) => !parent.starts_with(&root),
        _ => false,
    }
}

/// Which files a scoped sync looks at, from the paths a watcher (or a tool) names.
#[derive(Default)]
struct Scope {
    /// Existing files, by folder: each folder is listed once (its ignore rules apply).
    files: std::collections::BTreeMap<PathBuf, (PathBuf, HashSet<PathBuf>)>,
    /// Existing folders (created, or moved in), walked whole, with their root.
    trees: Vec<(PathBuf, PathBuf)>,
    /// Paths that are gone (or may no longer be indexed): they and everything below.
    gone: Vec<PathBuf>,
}

impl Scope {
    fn of(opts: &SyncOptions, paths: &[PathBuf], excluded: &GlobSet) -> Scope {
        let mut scope = Scope::default();
        let mut seen = HashSet::new();
        for p in paths {
            if !seen.insert(p.clone()) {
                continue;
            }
            // The innermost watched folder holding the path; one that is not there right now
            // (an unmounted disk) is left alone, as the full sync does.
            let Some(root) = opts
                .roots
                .iter()
                .filter(|r| p.starts_with(r))
                .max_by_key(|r| r.as_os_str().len())
            else {
                continue;
            };
            if !root.is_dir() {
                continue;
            }
            if !admitted(root, p, excluded) || (!opts.follow_symlinks && escapes(root, p)) {
                scope.gone.push(p.clone());
                continue;
            }
            match std::fs::symlink_metadata(p) {
                Ok(m) if m.is_dir() => scope.trees.push((p.clone(), root.clone())),
                Ok(m) if m.is_file() => {
                    let dir = p.parent().unwrap_or(root).to_path_buf();
                    scope
                        .files
                        .entry(dir)
                        .or_insert_with(|| (root.clone(), HashSet::new()))
                        .1
                        .insert(p.clone());
                }
                _ => scope.gone.push(p.clone()),
            }
        }
        scope
    }
}

/// The store's key of a file: its path, lossily converted when it is not UTF-8 (such a file is
/// indexed by name only, see `SkipReason::NON_UTF8_PATH`).
fn path_key(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// A 128-bit digest of a path key (the first half of its SHA-256), for telling paths apart:
/// two keys collide with a chance of about 2^-128, even when names are made to collide.
fn key_digest(key: &str) -> u128 {
    let digest = Sha256::digest(key.as_bytes());
    let mut half = [0u8; 16];
    half.copy_from_slice(&digest[..16]);
    u128::from_le_bytes(half)
}

fn mtime_millis(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn prepare(c: Candidate, sandbox: &linkly_extract::Sandbox) -> Work {
    let doc_type = c.detected.doc_type();
    let stat_hash = || format!("stat:{}:{}", c.size, c.modified_at);
    let admitted = match c.path.to_str() {
        None => Err(linkly_core::SkipReason::new(
            linkly_core::SkipReason::NON_UTF8_PATH,
            "the file name is not valid UTF-8; rename the file to have it read",
        )),
        Some(_) => c.detected.admit(&c.path, c.size),
    };
    let (hash, result) = match admitted {
        Err(reason) => (stat_hash(), Err(reason)),
        Ok(()) => match c.detected.read(&c.path) {
            Ok(bytes) => {
                let hash = format!("{:x}", Sha256::digest(&bytes));
                if let Some(prev) = &c.previous
                    && prev.hash == hash
                    && !prev.dirty
                {
                    return Work::Unchanged(prev.id, c.modified_at);
                }
                (
                    hash,
                    linkly_extract::extract_detected(sandbox, &c.detected, &c.path, &bytes),
                )
            }
            Err(e) => (
                stat_hash(),
                Err(linkly_core::SkipReason::new(
                    linkly_core::SkipReason::CORRUPT,
                    format!("cannot read file: {e}"),
                )),
            ),
        },
    };
    let hash = match &result {
        Err(r) if r.code == linkly_core::SkipReason::OCR_UNAVAILABLE => {
            format!("{hash}{OCR_PENDING}")
        }
        Err(r) if r.code == linkly_core::SkipReason::TRANSCRIPTION_UNAVAILABLE => {
            format!("{hash}{SPEECH_PENDING}")
        }
        Err(r) if r.code == linkly_core::SkipReason::TRANSCRIPTION_OFF => {
            format!("{hash}{SPEECH_OFF}")
        }
        _ => hash,
    };
    let (doc, content) = match result {
        Ok(ex) => extracted_doc(path_key(&c.path), c.size, c.modified_at, hash, ex),
        Err(reason) => (
            NewDoc {
                id: None,
                path: path_key(&c.path),
                doc_type,
                size: c.size,
                modified_at: c.modified_at,
                hash,
                title: None,
                word_count: 0,
                char_count: 0,
                total_lines: 0,
                outline: Vec::new(),
                keywords: Vec::new(),
                abstract_text: String::new(),
                skip_reason: Some(reason.to_string()),
                encoding: None,
                text: StoredText::Plain(String::new()),
            },
            String::new(),
        ),
    };
    let known_new = c.previous.is_none();
    let mut prepared = Prepared::new(doc, content, c.previous);
    prepared.known_new = known_new;
    Work::Index(Box::new(prepared))
}

/// The record of an extracted document, its counts, keywords and abstract computed from the
/// text (a sync's files and a gateway's ingested documents alike), and its text analysed for
/// the full-text index.
pub(crate) fn extracted_doc(
    path: String,
    size: u64,
    modified_at: i64,
    hash: String,
    ex: linkly_extract::Extracted,
) -> (NewDoc, String) {
    let total_lines = ex.total_lines();
    let analysis = analysis::analyse_document(&ex.text, LEXICAL_TEXT_BYTES);
    let doc = NewDoc {
        id: None,
        path,
        doc_type: ex.doc_type,
        size,
        modified_at,
        hash,
        title: ex.title.filter(|t| !t.trim().is_empty()),
        word_count: word_count(&ex.text),
        char_count: char_count(&ex.text),
        total_lines,
        outline: ex.outline,
        keywords: analysis.keywords,
        abstract_text: keywords::abstract_of(&ex.text),
        skip_reason: None,
        encoding: ex.encoding.map(str::to_string),
        text: StoredText::of(ex.text),
    };
    (doc, analysis.terms)
}

impl Index {
    /// Brings the index up to date with the watched folders: new, changed (size, modification
    /// time, then content hash) and deleted files; files of folders no longer watched are
    /// removed. Takes the writer lock for its duration (syncs of this process wait for each
    /// other; another process's writer makes it fail with [`crate::Error::Locked`]).
    pub fn sync(
        &self,
        opts: &SyncOptions,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<SyncReport> {
        let report = self.with_sync_lock(|| {
            // A lost or damaged full-text index is rebuilt from the store first (no file is
            // extracted again); then the walk catches up with the folders as usual.
            if !self.lexical_consistent()? {
                tracing::warn!("the full-text index disagrees with the store: rebuilding it");
                self.rebuild_lexical_locked(progress)?;
            }
            let (report, _) = self.sync_locked(opts, None, progress)?;
            self.forget_stale_vectors()?;
            Ok(report)
        })?;
        // The instant `with_sync_lock` recorded as the last sync: a reconcile is a sync, so it
        // is never later than the last one (a clock read of its own could tick past it).
        let at = self
            .store
            .meta(LAST_SYNC)?
            .unwrap_or_else(|| now_millis().to_string());
        self.store.set_meta(LAST_RECONCILE, &at)?;
        Ok(report)
    }

    /// Brings only these paths up to date, as a full sync would see them: a file is indexed
    /// (or re-indexed, or removed when it is gone or no longer admitted), a folder is walked
    /// whole, a vanished folder takes everything below it out. Paths outside the watched
    /// folders are ignored. This is what a watcher burst or a tool that just wrote a file
    /// runs: it costs the paths named, never a walk of every root.
    pub fn sync_paths(&self, opts: &SyncOptions, paths: &[PathBuf]) -> Result<SyncReport> {
        self.with_sync_lock(|| {
            let (report, changed) = self.sync_locked(opts, Some(paths), &mut |_| {})?;
            self.forget_vectors_of(&changed)?;
            Ok(report)
        })
    }

    /// When the last full sync (a reconcile of every watched folder) finished, in Unix ms.
    pub fn last_reconcile(&self) -> Result<Option<i64>> {
        Ok(self
            .store
            .meta(LAST_RECONCILE)?
            .and_then(|v| v.parse().ok()))
    }

    /// When the last sync of any kind finished, in Unix ms.
    pub fn last_sync(&self) -> Result<Option<i64>> {
        Ok(self.store.meta(LAST_SYNC)?.and_then(|v| v.parse().ok()))
    }

    /// Documents indexed by name only, by skip-reason code (most first).
    pub fn skip_counts(&self) -> Result<Vec<(String, u64)>> {
        self.store.skip_counts()
    }

    pub(crate) fn with_sync_lock(
        &self,
        f: impl FnOnce() -> Result<SyncReport>,
    ) -> Result<SyncReport> {
        let _gate = self.sync_gate.lock().unwrap_or_else(|e| e.into_inner());
        let report = self.lexical.holding_writer(f)?;
        self.store.set_meta(LAST_SYNC, &now_millis().to_string())?;
        Ok(report)
    }

    fn sync_locked(
        &self,
        opts: &SyncOptions,
        paths: Option<&[PathBuf]>,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<(SyncReport, Vec<u64>)> {
        let started = Instant::now();
        let mut report = SyncReport::default();

        // Scan. Files that waited for OCR are redone once it can run. Asking whether it can
        // runs the OCR programs (some 40 ms each where Tesseract is installed), so only a sync
        // that meets such a file asks.
        let ocr_ready = std::cell::OnceCell::new();
        let ocr_ready = || {
            *ocr_ready.get_or_init(|| linkly_extract::ocr::ready(&opts.sandbox.options.ocr).is_ok())
        };
        // Files that waited for a speech model are redone once one is on disk.
        let speech_ready = std::cell::OnceCell::new();
        let speech_ready = || {
            *speech_ready
                .get_or_init(|| linkly_extract::formats::speech_ready(&opts.sandbox.options))
        };
        let mut candidates = Vec::new();
        // Paths already considered (roots may nest, named paths overlap), by a 128-bit digest
        // of the key: a sixth of the memory of the keys themselves, on 100,000 files.
        let mut seen: HashSet<u128> = HashSet::new();
        let mut states;
        let mut consider = |states: &mut HashMap<String, FileState>,
                            path: PathBuf,
                            meta: std::fs::Metadata,
                            detected: Detected| {
            // A name that is not UTF-8 is listed under a lossy key, by name only (see
            // `SkipReason::NON_UTF8_PATH`).
            let key = path_key(&path);
            if !seen.insert(key_digest(&key)) {
                return;
            }
            let size = meta.len();
            let modified_at = mtime_millis(&meta);
            let previous = states.remove(&key);
            if let Some(prev) = &previous
                && !prev.dirty
                && prev.size == size
                && prev.modified_at == modified_at
                && !(prev.hash.ends_with(OCR_PENDING) && ocr_ready())
                && !(prev.hash.ends_with(SPEECH_PENDING) && speech_ready())
                && !(prev.hash.ends_with(SPEECH_OFF)
                    && opts.sandbox.options.speech.allows(detected.doc_type()))
            {
                report.unchanged += 1;
                return;
            }
            candidates.push(Candidate {
                path,
                size,
                modified_at,
                previous,
                detected,
            });
            if candidates.len() % 1000 == 0 {
                progress(&Progress {
                    phase: Phase::Scanning,
                    done: seen.len() as u64,
                    total: seen.len() as u64,
                    bytes: 0,
                });
            }
        };
        let deleted: Vec<u64> = match paths {
            None => {
                states = self.store.file_states()?;
                walk(opts, |path, meta, detected| {
                    consider(&mut states, path, meta, detected)
                });
                // Whatever is left in `states` was not seen: deleted, or under a folder no
                // longer watched. Files under a watched folder that is missing right now (an
                // unmounted disk) are kept.
                let missing_roots: Vec<&PathBuf> =
                    opts.roots.iter().filter(|r| !r.is_dir()).collect();
                states
                    .iter()
                    .filter(|(path, _)| {
                        !missing_roots.iter().any(|r| Path::new(path).starts_with(r))
                    })
                    .map(|(_, s)| s.id)
                    .collect()
            }
            Some(paths) => {
                let excluded = exclusion_set(&opts.exclude);
                let scope = Scope::of(opts, paths, &excluded);
                let key = |p: &Path| p.to_string_lossy().into_owned();
                let exact: Vec<String> = scope
                    .files
                    .values()
                    .flat_map(|(_, files)| files.iter().map(|p| key(p)))
                    .chain(scope.gone.iter().map(|p| key(p)))
                    .collect();
                let dirs: Vec<String> = scope
                    .trees
                    .iter()
                    .map(|(d, _)| key(d))
                    .chain(scope.gone.iter().map(|p| key(p)))
                    .collect();
                states = self.store.file_states_in(&exact, &dirs)?;
                for (dir, (root, files)) in &scope.files {
                    walk_from(
                        dir,
                        root,
                        Some(1),
                        &excluded,
                        &mut |path, meta, detected| {
                            if files.contains(&path) {
                                consider(&mut states, path, meta, detected);
                            }
                        },
                    );
                }
                for (dir, root) in &scope.trees {
                    walk_from(dir, root, None, &excluded, &mut |path, meta, detected| {
                        consider(&mut states, path, meta, detected);
                    });
                }
                // What was named or lay below a named folder and was not seen is gone (or is
                // no longer admitted: hidden, excluded, ignored).
                states.values().map(|s| s.id).collect()
            }
        };
        report.seen = seen.len() as u64;
        let mut changed: Vec<u64> = candidates
            .iter()
            .filter_map(|c| c.previous.as_ref().map(|p| p.id))
            .collect();
        changed.extend(&deleted);
        // Many files to write: the WAL's checkpoints run beside the writer, and a first index
        // builds the catalog's indexes once, at its end (see `catalog::drop_indexes`).
        let _checkpoints =
            (candidates.len() >= MANY_FILES).then(|| self.store.background_checkpoints());
        let first_bulk = candidates.len() >= MANY_FILES && self.store.count()? == 0;
        if first_bulk {
            crate::catalog::drop_indexes(&self.store)?;
        }
        let indexed = self.index_candidates(opts, candidates, &mut report, progress);
        if first_bulk {
            crate::catalog::ensure_indexes(&self.store)?;
        }
        indexed?;

        if !deleted.is_empty() {
            progress(&Progress {
                phase: Phase::Removing,
                done: 0,
                total: deleted.len() as u64,
                bytes: report.bytes,
            });
            self.lexical.stage(&[], &deleted)?;
            self.lexical.commit()?;
            self.store.delete(&deleted)?;
            report.removed = deleted.len() as u64;
        }
        report.elapsed_ms = started.elapsed().as_millis() as u64;
        progress(&Progress {
            phase: Phase::Done,
            done: report.added + report.updated,
            total: report.added + report.updated,
            bytes: report.bytes,
        });
        Ok((report, changed))
    }

    /// Extracts and writes the candidates: prepared on all cores (read once, hash, extract,
    /// analyse, count), written in order by this thread (store, full-text index) in batches,
    /// and committed every [`COMMIT_EVERY`] or [`COMMIT_TERMS`], whichever comes first.
    fn index_candidates(
        &self,
        opts: &SyncOptions,
        mut candidates: Vec<Candidate>,
        report: &mut SyncReport,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<()> {
        // Slow formats (OCR) last: keyword search of everything else never waits for them.
        // The sort is stable, so walk order stays within each group.
        candidates.sort_by_key(|c| c.detected.slow());
        let total = candidates.len() as u64;
        progress(&Progress {
            phase: Phase::Indexing,
            done: 0,
            total,
            bytes: 0,
        });
        // The writer and the progress, shared by the two callbacks of the pipeline (both run
        // on this thread).
        let written = std::cell::RefCell::new((BatchWriter::new(self), 0u64, report, progress));
        let flush = |now: bool| -> Result<()> {
            let mut guard = written.borrow_mut();
            let (writer, done, report, progress) = &mut *guard;
            writer.write(now)?;
            progress(&Progress {
                phase: Phase::Indexing,
                done: *done,
                total,
                bytes: report.bytes,
            });
            Ok(())
        };
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let sandbox = &opts.sandbox;
        pipeline::ordered(
            candidates,
            workers,
            WINDOW_BYTES,
            // Every file costs a little, so a folder of empty files is bounded too.
            |c| c.size + 4096,
            |c| {
                let slow = c.detected.slow();
                (prepare(c, sandbox), slow)
            },
            |(work, slow)| {
                let full = {
                    let mut guard = written.borrow_mut();
                    let (writer, done, report, _) = &mut *guard;
                    writer.push(work, report);
                    *done += 1;
                    let limit = if slow { SLOW_BATCH_DOCS } else { BATCH_DOCS };
                    writer.len() >= limit || writer.bytes >= BATCH_BYTES
                };
                // A batch goes when it is full; OCR results go in small batches, committed at
                // once, so their text becomes searchable as it comes and progress moves.
                if full { flush(slow) } else { Ok(()) }
            },
            // The next file keeps the workers busy (a large PDF, an image): what is gathered
            // goes now, so nothing waits behind it.
            || {
                if written.borrow().0.len() > 0 {
                    flush(false)?;
                }
                Ok(())
            },
        )?;
        let (writer, ..) = written.into_inner();
        writer.finish()
    }

    /// Writes a batch to the store (rows marked dirty) and stages it in the full-text index;
    /// returns the ids written. Nothing of it is searchable, nor marked clean, before
    /// [`Index::commit_staged`].
    pub(crate) fn stage_batch(&self, prepared: &[Prepared]) -> Result<Vec<u64>> {
        if prepared.is_empty() {
            return Ok(Vec::new());
        }
        let docs: Vec<(&NewDoc, bool)> = prepared.iter().map(|p| (&p.doc, p.known_new)).collect();
        let written = self.store.upsert_batch_marked(&docs, now_millis())?;
        let lexical: Vec<LexicalDoc<'_>> = prepared
            .iter()
            .zip(&written)
            .map(|(p, &(id, new))| LexicalDoc {
                id,
                fresh: new,
                title: &p.terms.title,
                filename: &p.terms.filename,
                dir: &p.terms.dir,
                content: &p.terms.content,
            })
            .collect();
        self.lexical.stage(&lexical, &[])?;
        Ok(written.iter().map(|(id, _)| *id).collect())
    }

    /// Commits the full-text index and marks the rows staged since the last commit clean.
    pub(crate) fn commit_staged(&self, ids: &[u64]) -> Result<()> {
        let started = Instant::now();
        self.lexical.commit()?;
        let committed = started.elapsed();
        self.store.mark_clean(ids)?;
        tracing::debug!(
            docs = ids.len(),
            commit_ms = committed.as_millis() as u64,
            clean_ms = (started.elapsed() - committed).as_millis() as u64,
            "full-text index committed"
        );
        Ok(())
    }

    /// Writes and commits one batch.
    pub(crate) fn write_batch(&self, prepared: &[Prepared]) -> Result<()> {
        let ids = self.stage_batch(prepared)?;
        if !ids.is_empty() {
            self.commit_staged(&ids)?;
        }
        Ok(())
    }
}

/// A sync of this many files or more writes in bulk (see `sync_locked`).
const MANY_FILES: usize = 5000;

/// Text bytes of the files prepared ahead of the writer: what is read and extracted but not
/// yet written (twice that in memory at most: the text and its analysed terms).
const WINDOW_BYTES: u64 = 8 * 1024 * 1024;
/// How often the full-text index commits during a sync (and at its end): each commit makes a
/// segment per indexing thread, which later merges rewrite, so committing every batch cost
/// most of the indexing of a large folder in merges. Rows stay dirty until their commit, so a
/// crash redoes at most this much.
const COMMIT_EVERY: std::time::Duration = std::time::Duration::from_secs(2);
/// Analysed content staged in the full-text index that makes a commit before [`COMMIT_EVERY`]:
/// what tantivy holds in memory until a commit, and what the commit then sorts and writes, grows
/// with the text staged, so a fast machine (40,000 small files in 2 s) peaked 45 MB higher at
/// each commit. 64 MiB is about 18,000 such files, few enough segments that a sync of 100,000
/// files triggers no merge (docs/benchmarks-history.md, tenth pass).
const COMMIT_TERMS: usize = 64 * 1024 * 1024;

/// The writing end of a sync: prepared documents gathered into batches, written (store, then
/// the full-text index staged) batch by batch, committed every [`COMMIT_EVERY`] or
/// [`COMMIT_TERMS`].
struct BatchWriter<'a> {
    index: &'a Index,
    touched: Vec<(u64, i64)>,
    prepared: Vec<Prepared>,
    bytes: usize,
    /// Ids staged since the last commit.
    staged: Vec<u64>,
    /// Bytes of analysed content staged since the last commit.
    staged_terms: usize,
    /// [`COMMIT_TERMS`], smaller in tests.
    commit_terms: usize,
    last_commit: Instant,
}

impl<'a> BatchWriter<'a> {
    fn new(index: &'a Index) -> BatchWriter<'a> {
        BatchWriter {
            index,
            touched: Vec::new(),
            prepared: Vec::new(),
            bytes: 0,
            staged: Vec::new(),
            staged_terms: 0,
            commit_terms: COMMIT_TERMS,
            last_commit: Instant::now(),
        }
    }

    fn len(&self) -> usize {
        self.prepared.len() + self.touched.len()
    }

    fn push(&mut self, work: Work, report: &mut SyncReport) {
        match work {
            Work::Unchanged(id, mtime) => {
                self.touched.push((id, mtime));
                report.unchanged += 1;
            }
            Work::Index(p) => {
                report.bytes += p.doc.size;
                if p.doc.skip_reason.is_some() {
                    report.skipped += 1;
                }
                if p.previous.is_some() {
                    report.updated += 1;
                } else {
                    report.added += 1;
                }
                self.bytes += p.doc.text.stored_len() + p.terms.content.len();
                self.prepared.push(*p);
            }
        }
    }

    /// Writes what was gathered; commits when `now`, when the last commit is old enough or when
    /// enough text waits for one.
    fn write(&mut self, now: bool) -> Result<()> {
        self.index.store.touch(&self.touched)?;
        self.touched.clear();
        let ids = self.index.stage_batch(&self.prepared)?;
        self.staged_terms += self
            .prepared
            .iter()
            .map(|p| p.terms.content.len())
            .sum::<usize>();
        self.prepared.clear();
        self.bytes = 0;
        self.staged.extend(ids);
        let due = now
            || self.last_commit.elapsed() >= COMMIT_EVERY
            || self.staged_terms >= self.commit_terms;
        if !self.staged.is_empty() && due {
            self.commit()?;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        self.index.commit_staged(&self.staged)?;
        self.staged.clear();
        self.staged_terms = 0;
        self.last_commit = Instant::now();
        Ok(())
    }

    /// Writes and commits the rest.
    fn finish(mut self) -> Result<()> {
        self.write(true)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use linkly_core::{DocId, DocType};

    use super::*;

    struct Fixture {
        _tmp: tempfile::TempDir,
        docs: PathBuf,
        index: Index,
        opts: SyncOptions,
    }

    impl Fixture {
        fn new() -> Fixture {
            let tmp = tempfile::tempdir().unwrap();
            let docs = tmp.path().join("docs");
            fs_err::create_dir_all(docs.join("sub")).unwrap();
            fs_err::write(docs.join("a.md"), "# A\n\nalpha words\n").unwrap();
            fs_err::write(docs.join("sub/b.txt"), "bravo words\n").unwrap();
            fs_err::write(docs.join("main.rs"), "fn main() {}\n").unwrap();
            fs_err::write(docs.join("song.mp3"), b"ID3\x03\x00").unwrap();
            let index = Index::open(&tmp.path().join("index")).unwrap();
            let opts = SyncOptions::of_roots(vec![docs.clone()]);
            let f = Fixture {
                _tmp: tmp,
                docs,
                index,
                opts,
            };
            let r = f.sync();
            assert_eq!((r.seen, r.added, r.skipped), (3, 3, 1), "{r:?}");
            f
        }

        fn sync(&self) -> SyncReport {
            self.index.sync(&self.opts, &mut |_| {}).unwrap()
        }

        fn path(&self, rel: &str) -> String {
            self.docs.join(rel).to_string_lossy().into_owned()
        }

        fn id(&self, rel: &str) -> Option<DocId> {
            self.index
                .doc_by_path(&self.path(rel))
                .unwrap()
                .map(|d| d.id)
        }

        fn matches(&self, word: &str) -> usize {
            self.index.keyword_total(word).unwrap()
        }

        /// Sets a file's modification time `secs` seconds into the future (a later save).
        fn touch(&self, rel: &str, secs: u64) {
            let f = std::fs::File::options()
                .write(true)
                .open(self.docs.join(rel))
                .unwrap();
            f.set_modified(SystemTime::now() + Duration::from_secs(secs))
                .unwrap();
        }
    }

    #[test]
    fn the_one_extension_table_decides_what_is_indexed() {
        let f = Fixture::new();
        assert!(f.id("main.rs").is_none(), "no extractor, not a media file");
        let song = f.index.doc_by_path(&f.path("song.mp3")).unwrap().unwrap();
        assert_eq!(song.doc_type, DocType::Audio);
        assert!(song.skip_reason.is_some(), "indexed by name only");
        assert_eq!(
            f.index
                .doc_by_path(&f.path("sub/b.txt"))
                .unwrap()
                .unwrap()
                .doc_type,
            DocType::Txt
        );
    }

    #[test]
    fn an_unchanged_file_is_skipped() {
        let f = Fixture::new();
        let before = f.index.doc_by_path(&f.path("a.md")).unwrap().unwrap();
        let r = f.sync();
        assert_eq!(
            (r.seen, r.unchanged, r.added, r.updated, r.removed),
            (3, 3, 0, 0, 0),
            "{r:?}"
        );
        let after = f.index.doc_by_path(&f.path("a.md")).unwrap().unwrap();
        assert_eq!(after.indexed_at, before.indexed_at, "not written again");
    }

    #[test]
    fn a_touched_file_with_the_same_bytes_is_not_extracted_again() {
        let f = Fixture::new();
        let id = f.id("a.md");
        f.touch("a.md", 60);
        let r = f.sync();
        assert_eq!((r.unchanged, r.updated, r.bytes), (3, 0, 0), "{r:?}");
        let rec = f.index.doc_by_path(&f.path("a.md")).unwrap().unwrap();
        assert_eq!(Some(rec.id), id);
        let mtime = mtime_millis(&std::fs::metadata(f.docs.join("a.md")).unwrap());
        assert_eq!(rec.modified_at, mtime, "the new time is recorded");
        // Recorded: the next sync does not even hash it.
        assert_eq!(f.sync().unchanged, 3);
    }

    #[test]
    fn a_changed_file_is_extracted_again_under_its_id() {
        let f = Fixture::new();
        let id = f.id("a.md");
        assert_eq!(f.matches("alpha"), 1);
        fs_err::write(f.docs.join("a.md"), "# A\n\nzulu words, longer now\n").unwrap();
        f.touch("a.md", 60);
        let r = f.sync();
        assert_eq!((r.updated, r.unchanged, r.added), (1, 2, 0), "{r:?}");
        assert_eq!(f.id("a.md"), id, "a path keeps its id");
        assert_eq!((f.matches("alpha"), f.matches("zulu")), (0, 1));
        let text = f.index.content(id.unwrap()).unwrap().unwrap();
        assert!(text.contains("zulu"));
    }

    #[test]
    fn a_deleted_file_is_removed() {
        let f = Fixture::new();
        let id = f.id("sub/b.txt").unwrap();
        fs_err::remove_file(f.docs.join("sub/b.txt")).unwrap();
        let r = f.sync();
        assert_eq!((r.removed, r.seen), (1, 2), "{r:?}");
        assert!(f.index.doc(id).unwrap().is_none());
        assert_eq!(f.matches("bravo"), 0);
        assert_eq!(f.index.doc_count().unwrap(), 2);
    }

    #[test]
    fn a_renamed_file_is_a_new_document_and_its_old_id_is_gone() {
        let f = Fixture::new();
        let old = f.id("sub/b.txt").unwrap();
        fs_err::rename(f.docs.join("sub/b.txt"), f.docs.join("sub/b2.txt")).unwrap();
        let r = f.sync();
        assert_eq!((r.removed, r.added), (1, 1), "{r:?}");
        let new = f.id("sub/b2.txt").unwrap();
        assert!(new.0 > old.0, "ids are never recycled");
        assert!(f.index.doc(old).unwrap().is_none());
        assert_eq!(f.matches("bravo"), 1);
    }

    #[test]
    fn a_dirty_row_left_by_a_crash_is_redone() {
        let f = Fixture::new();
        let id = f.id("a.md").unwrap();
        f.index
            .store
            .conn()
            .execute("UPDATE docs SET dirty = 1 WHERE id = ?1", [id.0 as i64])
            .unwrap();
        let r = f.sync();
        assert_eq!((r.updated, r.unchanged), (1, 2), "{r:?}");
        assert!(f.index.store.dirty_ids().unwrap().is_empty());
        assert_eq!(f.id("a.md"), Some(id));
        assert_eq!(f.matches("alpha"), 1);
    }

    #[test]
    fn a_file_rewritten_after_the_walk_is_extracted_as_the_walk_decided() {
        let f = Fixture::new();
        let notes = f.docs.join("NOTES");
        fs_err::write(&notes, "Plain words about the harbour.\n").unwrap();
        let mut found = Vec::new();
        walk(&f.opts, |path, meta, detected| {
            if path == notes {
                found.push((path, meta, detected));
            }
        });
        let (path, meta, detected) = found.pop().expect("admitted by its content");
        assert_eq!(detected.doc_type(), DocType::Txt);
        // Its start now says PDF: a prepare that read the head again would decide again.
        fs_err::write(&notes, "%PDF-1.4\n").unwrap();
        let c = Candidate {
            path,
            size: meta.len(),
            modified_at: mtime_millis(&meta),
            previous: None,
            detected,
        };
        let Work::Index(p) = prepare(c, &f.opts.sandbox) else {
            panic!("a new file is indexed");
        };
        assert_eq!(p.doc.skip_reason, None);
        assert_eq!(p.doc.doc_type, DocType::Txt);
        assert!(
            matches!(&p.doc.text, StoredText::Plain(t) if t.contains("harbour")),
            "the text the walk saw"
        );
    }

    /// Prepares new files of the fixture's folder as a sync would.
    fn prepared(f: &Fixture, names: &[&str]) -> Vec<Work> {
        names
            .iter()
            .map(|name| {
                let path = f.docs.join(name);
                fs_err::write(&path, format!("# {name}\n\ncharlie words of {name}\n")).unwrap();
                let meta = fs_err::metadata(&path).unwrap();
                let c = Candidate {
                    detected: Detected::at_walk(&path).unwrap(),
                    path,
                    size: meta.len(),
                    modified_at: mtime_millis(&meta),
                    previous: None,
                };
                prepare(c, &f.opts.sandbox)
            })
            .collect()
    }

    #[test]
    fn enough_staged_text_commits_before_the_interval() {
        let f = Fixture::new();
        let mut report = SyncReport::default();
        // A batch under the cap, 2 s not yet past: written dirty, not yet searchable.
        let mut writer = BatchWriter::new(&f.index);
        for work in prepared(&f, &["c.md"]) {
            writer.push(work, &mut report);
        }
        writer.write(false).unwrap();
        assert_eq!(f.index.store.dirty_ids().unwrap().len(), 1);
        assert_eq!(f.matches("charlie"), 0);
        writer.finish().unwrap();
        assert!(f.index.store.dirty_ids().unwrap().is_empty());
        assert_eq!(f.matches("charlie"), 1);

        // Past the cap: committed at once, 2 s or not.
        let mut writer = BatchWriter::new(&f.index);
        writer.commit_terms = 1;
        for work in prepared(&f, &["d.md", "e.md"]) {
            writer.push(work, &mut report);
        }
        writer.write(false).unwrap();
        assert!(writer.staged.is_empty());
        assert!(f.index.store.dirty_ids().unwrap().is_empty());
        assert_eq!(f.matches("charlie"), 3);
    }
}
