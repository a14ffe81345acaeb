//! Linkly's index: the SQLite metadata store (records and extracted text), the tantivy BM25
//! index with CJK-aware tokenizing, and the incremental indexer that keeps both in step with
//! the watched folders. The catalog ([`Index::catalog_page`] and friends) enumerates documents
//! without full-text matching: stable paged listings, counts and light summaries. One
//! [`DocFilter`] says which documents a catalog query or a search covers; it compiles to SQL.
//! The store also keeps the tags of Markdown documents, read by the caller once per indexed
//! version ([`Index::catch_up_tags`]), so that a tag filter reads no file ([`Index::tagged_paths`]).
//!
//! This is the only crate that names tantivy, and the only one that names SQLite but the
//! gateway's own store; none of their types appear in its public API. It depends on `linkly-core`, `linkly-models` (the embedding model it runs, with
//! the int8 scan kernel) and `linkly-extract`, never on `linkly-tools` or a front end. It has
//! no `unsafe` code.
//!
//! Concurrency: any number of readers, in any number of processes. One writer at a time: a
//! sync takes tantivy's writer lock (held across processes) for its duration and fails with
//! [`Error::Locked`] if another process holds it. Store rows are written dirty before the
//! lexical commit and marked clean after it, so a crash loses no consistency (see `indexer`).

#![forbid(unsafe_code)]

mod analysis;
mod catalog;
mod corpus;
mod error;
mod filter;
mod hybrid;
mod impacts;
mod indexer;
mod ingest;
mod keywords;
mod lexical;
mod pipeline;
mod store;
mod tags;
mod tokenizer;
pub mod vector;
mod watcher;

use std::path::{Path, PathBuf};

use linkly_core::DocId;
use rayon::prelude::*;

#[cfg(feature = "testing")]
#[doc(hidden)]
pub use crate::analysis::analyse_for_bench;
pub use crate::catalog::{CatalogPage, CatalogSort, DocSummary, SkippedDoc};
pub use crate::corpus::Corpus;
pub use crate::error::{Error, Result, Storage, StorageError, StorageKind};
pub use crate::filter::{DocFilter, PathGlob};
pub use crate::hybrid::{
    Arms, Fusion, HybridHit, HybridOptions, HybridOutcome, LexicalArm, SearchMode, VectorArm, fuse,
};
pub use crate::impacts::{
    DocAnalysis, DocTerms, ImpactDoc, analyse_document, bm25_impacts, bm25_impacts_of,
};
pub use crate::indexer::{Phase, Progress, SyncOptions, SyncReport, check_exclusion};
pub use crate::ingest::IngestDoc;
pub use crate::store::DocRecord;
pub use crate::vector::{
    ChunkVector, DocChunkVectors, EmbedProgress, EmbedReport, ModelStatus, VectorStats,
};
pub use crate::watcher::{WatchEvent, Watcher};
pub use linkly_models::ModelError;

use crate::lexical::Lexical;
use crate::store::{INDEX_FORMAT_VERSION, Store};

/// One indexed term of a text and the byte range of the word (or CJK bigram) it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermSpan {
    /// Byte offset of the word's start.
    pub start: usize,
    /// Byte offset just past the word's end.
    pub end: usize,
    /// The term as indexed (lower-cased, folded, stemmed).
    pub term: String,
}

/// The index of one data directory.
pub struct Index {
    dir: PathBuf,
    store: Store,
    lexical: Lexical,
    vectors: vector::VectorSide,
    /// Syncs of this process run one at a time (another process is kept out by the writer
    /// lock).
    sync_gate: std::sync::Mutex<()>,
    /// Embedding runs of this process run one at a time; they may overlap a sync.
    embed_gate: std::sync::Mutex<()>,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("dir", &self.dir).finish()
    }
}

impl Index {
    /// Opens the index in `dir`, creating it if needed. An index of another format version is
    /// cleared, to be rebuilt from the files by the next sync.
    pub fn open(dir: &Path) -> Result<Index> {
        fs_err::create_dir_all(dir)?;
        let (store, mismatch, fresh) =
            Store::open(&dir.join("meta.sqlite"), &catalog::indexes_sql())?;
        let lexical = Lexical::open(&dir.join(lexical::DIR))?;
        for older in lexical::OLDER_DIRS {
            let older = dir.join(older);
            if older.exists() {
                tracing::info!(dir = %older.display(), "removing a full-text index of an older format; it is rebuilt from the store");
                if let Err(e) = fs_err::remove_dir_all(&older) {
                    tracing::warn!(error = %e, "could not remove the older full-text index");
                }
            }
        }
        if fresh && lexical.num_docs() > 0 {
            // The store was lost while the full-text index survived: its ids must never come
            // back for other files, and its documents are orphans (the next sync sweeps them
            // and indexes every file again).
            tracing::warn!(dir = %dir.display(), "the metadata store is new but the full-text index is not: old ids retired, the index is rebuilt");
            store.raise_next_id(lexical.max_id() + 1)?;
        }
        let vectors = vector::VectorSide::open(dir)?;
        let index = Index {
            dir: dir.to_path_buf(),
            store,
            lexical,
            vectors,
            sync_gate: std::sync::Mutex::new(()),
            embed_gate: std::sync::Mutex::new(()),
        };
        if mismatch {
            tracing::warn!(dir = %dir.display(), version = INDEX_FORMAT_VERSION, "index format changed; rebuilding");
            index.rebuild_marker()?;
        }
        Ok(index)
    }

    fn rebuild_marker(&self) -> Result<()> {
        let ids: Vec<u64> = self.store.file_states()?.values().map(|s| s.id).collect();
        self.lexical.clear()?;
        self.store.delete(&ids)?;
        self.store.mark_current_version()?;
        Ok(())
    }

    /// The folder holding the index.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The terms a text is indexed under (lower-cased, folded, stemmed, CJK bigrams), in order.
    pub fn query_terms(text: &str) -> Vec<String> {
        tokenizer::index_terms(text)
    }

    /// The indexed terms of a text with where each stands: the words and CJK bigrams the
    /// full-text index splits it into, lower-cased, folded and stemmed as a query is, so a
    /// caller can find where a query's terms occur in a document's text.
    pub fn term_spans(text: &str) -> Vec<TermSpan> {
        tokenizer::term_spans(text)
            .into_iter()
            .map(|(start, end, term)| TermSpan { start, end, term })
            .collect()
    }

    /// [`Index::term_spans`] without collecting them: `f(start, end, term)` for each term in
    /// order, with no allocation per term (snippets look at every word of their lines).
    pub fn for_each_term_span(text: &str, f: impl FnMut(usize, usize, &str)) {
        tokenizer::for_each_term_span(text, f)
    }

    /// One document's record, if the id resolves.
    pub fn doc(&self, id: DocId) -> Result<Option<DocRecord>> {
        self.store.get(id)
    }

    /// The record of the document at an absolute path, if it is indexed.
    pub fn doc_by_path(&self, path: &str) -> Result<Option<DocRecord>> {
        self.store.get_by_path(path)
    }

    /// Records of several documents (ids that do not resolve are left out), in order.
    pub fn docs(&self, ids: &[DocId]) -> Result<Vec<DocRecord>> {
        let raw: Vec<u64> = ids.iter().map(|d| d.0).collect();
        self.store.get_many(&raw)
    }

    /// The SHA-256 (hex) of the source files of these documents, as indexed (ids not stored
    /// are left out). `linkly publish` sends it so that a gateway skips unchanged documents.
    pub fn doc_hashes(&self, ids: &[DocId]) -> Result<std::collections::HashMap<DocId, String>> {
        let raw: Vec<u64> = ids.iter().map(|d| d.0).collect();
        Ok(self
            .store
            .hashes(&raw)?
            .into_iter()
            .map(|(id, h)| (DocId(id), h))
            .collect())
    }

    /// Every record, ordered by path.
    pub fn all_docs(&self) -> Result<Vec<DocRecord>> {
        self.store.all()
    }

    /// The extracted text of a document.
    pub fn content(&self, id: DocId) -> Result<Option<String>> {
        self.store.content(id)
    }

    /// The number of documents in the store.
    pub fn doc_count(&self) -> Result<u64> {
        self.store.count()
    }

    /// Consistency facts for tests and `doctor`: documents in the store, live documents in the
    /// lexical index, and rows still marked dirty.
    pub fn health(&self) -> Result<IndexHealth> {
        Ok(IndexHealth {
            stored: self.store.count()?,
            lexical: self.lexical.num_docs(),
            dirty: self.store.dirty_ids()?.len() as u64,
        })
    }

    /// Forgets what every stored file looked like, so that the next sync reads and extracts
    /// every file again (after the person asked to re-extract: a new extractor, new OCR
    /// languages). Documents stay searchable meanwhile. Returns how many files.
    pub fn forget_extractions(&self) -> Result<u64> {
        let _gate = self.sync_gate.lock().unwrap_or_else(|e| e.into_inner());
        self.store.forget_file_states()
    }

    /// Rebuilds the full-text index from the store (the source of truth: it keeps every
    /// document's extracted text), without extracting any file again. A full [`Index::sync`]
    /// does it by itself when the two disagree (a lost or damaged `lexical` folder, orphans
    /// after a lost store); `linkly index --rebuild`, `linkly doctor --fix` and the window's
    /// Settings page ask for it. Takes the writer lock. Returns the number of documents indexed.
    pub fn rebuild_lexical(&self, progress: &mut dyn FnMut(&Progress)) -> Result<u64> {
        let _gate = self.sync_gate.lock().unwrap_or_else(|e| e.into_inner());
        self.lexical
            .holding_writer(|| self.rebuild_lexical_locked(progress))
    }

    fn rebuild_lexical_locked(&self, progress: &mut dyn FnMut(&Progress)) -> Result<u64> {
        let ids = self.store.ids()?;
        let total = ids.len() as u64;
        tracing::info!(
            documents = total,
            "rebuilding the full-text index from the store"
        );
        self.lexical.clear()?;
        let mut done = 0u64;
        progress(&Progress {
            phase: Phase::Rebuilding,
            done,
            total,
            bytes: 0,
        });
        for chunk in ids.chunks(1000) {
            let records = self.store.get_many(chunk)?;
            let mut texts = Vec::with_capacity(records.len());
            for rec in &records {
                texts.push(self.store.content(rec.id)?.unwrap_or_default());
            }
            // Analysed on all cores, as a sync's documents are.
            let terms: Vec<indexer::FieldTerms> = records
                .par_iter()
                .zip(texts.par_iter())
                .map(|(rec, text)| {
                    let content = indexer::searchable(text, indexer::LEXICAL_TEXT_BYTES);
                    indexer::FieldTerms::of(
                        &rec.path,
                        rec.title.as_deref(),
                        analysis::index_terms_of(content),
                    )
                })
                .collect();
            let docs: Vec<lexical::LexicalDoc<'_>> = records
                .iter()
                .zip(&terms)
                .map(|(rec, t)| lexical::LexicalDoc {
                    id: rec.id.0,
                    title: &t.title,
                    filename: &t.filename,
                    dir: &t.dir,
                    content: &t.content,
                    // The index was cleared above.
                    fresh: true,
                })
                .collect();
            self.lexical.stage(&docs, &[])?;
            self.lexical.commit()?;
            done += records.len() as u64;
            progress(&Progress {
                phase: Phase::Rebuilding,
                done,
                total,
                bytes: 0,
            });
        }
        Ok(done)
    }

    /// True when the full-text index holds what the store says it should: every clean row,
    /// and nothing the store does not know (dirty rows may or may not be in it yet).
    pub fn lexical_consistent(&self) -> Result<bool> {
        let h = self.health()?;
        Ok(h.lexical <= h.stored && h.lexical + h.dirty >= h.stored)
    }
}

/// Consistency facts of an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexHealth {
    /// Documents in the metadata store.
    pub stored: u64,
    /// Live documents in the lexical index.
    pub lexical: u64,
    /// Store rows written but not yet confirmed in the lexical index.
    pub dirty: u64,
}
