//! The incremental sync of watched folders into the store and the lexical index.
//!
//! One writer at a time (the tantivy writer lock spans processes). Each batch is written to the
//! store as dirty rows, then committed to the lexical index, then marked clean; a sync killed at
//! any point leaves dirty or stale rows that the next sync redoes, so the index reopens and
//! catches up.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Instant, UNIX_EPOCH};

use globset::{Glob, GlobSet, GlobSetBuilder};
use linkly_core::{DocType, char_count, now_millis, word_count};
use sha2::{Digest, Sha256};

use crate::lexical::LexicalDoc;
use crate::store::{FileState, NewDoc};
use crate::{Index, Result, keywords};

/// Documents per batch: one store transaction and one lexical commit.
const BATCH_DOCS: usize = 1000;
/// Text bytes per batch.
const BATCH_BYTES: usize = 32 * 1024 * 1024;

/// What a sync is doing, for progress displays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Walking the folders.
    Scanning,
    /// Extracting and indexing changed files.
    Indexing,
    /// Removing deleted files.
    Removing,
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
}

struct Candidate {
    path: PathBuf,
    key: String,
    size: u64,
    modified_at: i64,
    previous: Option<FileState>,
}

struct Prepared {
    doc: NewDoc,
    dir: String,
    filename: String,
    previous: Option<FileState>,
}

enum Work {
    Unchanged(u64, i64),
    Index(Box<Prepared>),
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

/// Walks the watched folders: files of known doc types, hidden files, `.gitignore`d paths and
/// exclusions left out.
pub(crate) fn walk(opts: &SyncOptions, mut found: impl FnMut(PathBuf, std::fs::Metadata)) {
    let excluded = exclusion_set(&opts.exclude);
    for root in &opts.roots {
        let root_for_filter = root.clone();
        let excluded = excluded.clone();
        let walker = ignore::WalkBuilder::new(root)
            .hidden(true)
            .git_ignore(true)
            .git_exclude(true)
            .git_global(false)
            .require_git(false)
            .ignore(true)
            .parents(true)
            .follow_links(false)
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
            let known = path
                .extension()
                .and_then(|e| e.to_str())
                .and_then(DocType::from_extension)
                .is_some();
            if !known {
                continue;
            }
            if let Ok(meta) = fs_err::metadata(&path) {
                found(path, meta);
            }
        }
    }
}

fn mtime_millis(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn prepare(c: Candidate, sandbox: &linkly_extract::Sandbox) -> Work {
    let doc_type = c
        .path
        .extension()
        .and_then(|e| e.to_str())
        .and_then(DocType::from_extension)
        .unwrap_or(DocType::Txt);
    let extractor = linkly_extract::extractor_for(&c.path);
    let stat_hash = || format!("stat:{}:{}", c.size, c.modified_at);
    let (hash, result) = match extractor {
        None => (stat_hash(), Err(linkly_extract::unsupported(&c.path))),
        Some(e) if c.size > e.max_bytes() => {
            (stat_hash(), Err(linkly_extract::too_large(e, c.size)))
        }
        Some(_) => match fs_err::read(&c.path) {
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
                    linkly_extract::extract_isolated(sandbox, &c.path, &bytes),
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
    let filename = c
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = c
        .path
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let doc = match result {
        Ok(ex) => {
            let total_lines = ex.total_lines();
            NewDoc {
                path: c.key,
                doc_type: ex.doc_type,
                size: c.size,
                modified_at: c.modified_at,
                hash,
                title: ex.title.filter(|t| !t.trim().is_empty()),
                word_count: word_count(&ex.text),
                char_count: char_count(&ex.text),
                total_lines,
                outline: ex.outline,
                keywords: keywords::keywords(&ex.text),
                abstract_text: keywords::abstract_of(&ex.text),
                skip_reason: None,
                encoding: ex.encoding.map(str::to_string),
                text: ex.text,
            }
        }
        Err(reason) => NewDoc {
            path: c.key,
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
            text: String::new(),
        },
    };
    Work::Index(Box::new(Prepared {
        doc,
        dir,
        filename,
        previous: c.previous,
    }))
}

/// Prepares candidates on all cores, keeping their order.
fn prepare_parallel(batch: Vec<Candidate>, sandbox: &linkly_extract::Sandbox) -> Vec<Work> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(batch.len().max(1));
    if threads <= 1 {
        return batch.into_iter().map(|c| prepare(c, sandbox)).collect();
    }
    let chunk = batch.len().div_ceil(threads);
    let mut parts: Vec<Vec<Candidate>> = Vec::new();
    let mut it = batch.into_iter().peekable();
    while it.peek().is_some() {
        parts.push(it.by_ref().take(chunk).collect());
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .into_iter()
            .map(|part| {
                s.spawn(move || {
                    part.into_iter()
                        .map(|c| prepare(c, sandbox))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

impl Index {
    /// Brings the index up to date with the watched folders: new, changed (size, modification
    /// time, then content hash) and deleted files; files of folders no longer watched are
    /// removed. Takes the writer lock for its duration.
    pub fn sync(
        &self,
        opts: &SyncOptions,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<SyncReport> {
        let started = Instant::now();
        self.lexical.acquire_writer()?;
        let result = self.sync_locked(opts, progress, started);
        // Release the lock whatever happened, so another process may write.
        let released = self.lexical.release_writer();
        let report = result?;
        released?;
        Ok(report)
    }

    fn sync_locked(
        &self,
        opts: &SyncOptions,
        progress: &mut dyn FnMut(&Progress),
        started: Instant,
    ) -> Result<SyncReport> {
        let mut report = SyncReport::default();
        let mut states = self.store.file_states()?;

        // Scan.
        let mut candidates = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        walk(opts, |path, meta| {
            let Some(key) = path.to_str().map(str::to_string) else {
                tracing::warn!(path = %path.display(), "skipping a path that is not valid UTF-8");
                return;
            };
            seen.insert(key.clone());
            let size = meta.len();
            let modified_at = mtime_millis(&meta);
            let previous = states.remove(&key);
            if let Some(prev) = &previous
                && !prev.dirty
                && prev.size == size
                && prev.modified_at == modified_at
            {
                report.unchanged += 1;
                return;
            }
            candidates.push(Candidate {
                path,
                key,
                size,
                modified_at,
                previous,
            });
            if candidates.len() % 1000 == 0 {
                progress(&Progress {
                    phase: Phase::Scanning,
                    done: seen.len() as u64,
                    total: seen.len() as u64,
                    bytes: 0,
                });
            }
        });
        report.seen = seen.len() as u64;

        // Whatever is left in `states` was not seen: deleted, or under a folder no longer
        // watched. Files under a watched folder that is missing right now (an unmounted disk)
        // are kept.
        let missing_roots: Vec<&PathBuf> = opts.roots.iter().filter(|r| !r.is_dir()).collect();
        let deleted: Vec<u64> = states
            .iter()
            .filter(|(path, _)| !missing_roots.iter().any(|r| Path::new(path).starts_with(r)))
            .map(|(_, s)| s.id)
            .collect();

        let total = candidates.len() as u64;
        progress(&Progress {
            phase: Phase::Indexing,
            done: 0,
            total,
            bytes: 0,
        });
        let mut done = 0u64;
        let mut pending = candidates.into_iter().peekable();
        while pending.peek().is_some() {
            let mut batch = Vec::new();
            let mut bytes = 0usize;
            while let Some(c) = pending.next_if(|_| batch.len() < BATCH_DOCS && bytes < BATCH_BYTES)
            {
                bytes += c.size as usize;
                batch.push(c);
            }
            let n = batch.len() as u64;
            let works = prepare_parallel(batch, &opts.sandbox);
            let mut touched = Vec::new();
            let mut prepared = Vec::new();
            for w in works {
                match w {
                    Work::Unchanged(id, mtime) => {
                        touched.push((id, mtime));
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
                        prepared.push(*p);
                    }
                }
            }
            self.store.touch(&touched)?;
            self.write_batch(&prepared)?;
            done += n;
            progress(&Progress {
                phase: Phase::Indexing,
                done,
                total,
                bytes: report.bytes,
            });
        }

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
            done,
            total,
            bytes: report.bytes,
        });
        Ok(report)
    }

    fn write_batch(&self, prepared: &[Prepared]) -> Result<()> {
        if prepared.is_empty() {
            return Ok(());
        }
        let docs: Vec<&NewDoc> = prepared.iter().map(|p| &p.doc).collect();
        let ids = self.store.upsert_batch(&docs, now_millis())?;
        let lexical: Vec<LexicalDoc<'_>> = prepared
            .iter()
            .zip(&ids)
            .map(|(p, id)| LexicalDoc {
                id: *id,
                title: p.doc.title.as_deref().unwrap_or(""),
                filename: &p.filename,
                dir: &p.dir,
                content: &p.doc.text,
            })
            .collect();
        self.lexical.stage(&lexical, &[])?;
        self.lexical.commit()?;
        self.store.mark_clean(&ids)?;
        Ok(())
    }
}
