//! The vector side of the index: chunking, embeddings (through `linkly-models`), the vector store
//! (`vectors.sqlite`) and the in-memory ANN (`hnsw_rs`); hybrid ranking, which fuses the
//! vector arm with BM25, is `crate::hybrid`.
//!
//! Keyword search never waits for any of it: while the model is missing, downloading, loading
//! or broken, or while no vector of the current model exists yet, [`Index::hybrid_search`]
//! answers from BM25 alone and says [`crate::SearchMode::Keyword`].
//!
//! Concurrency: embedding writes (`embed_pending`) take the index writer lock, like a sync, so
//! one process writes vectors. Other processes see new vectors through SQLite's
//! `data_version` and load them at their next search. Searches hold a read lock on the ANN;
//! the embedder is shared (`Arc`) and used outside any lock.

mod ann;
mod chunker;
#[cfg(any(test, feature = "testing"))]
mod scan_bench;
mod store;

#[cfg(feature = "testing")]
#[doc(hidden)]
pub use scan_bench::ScanBench;
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub use scan_bench::random_vectors;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use linkly_core::DocId;
use linkly_models::prepared::Cache;

pub use linkly_models::{
    DEFAULT_MODEL, DownloadProgress, ImportOptions, Imported, KNOWN_MODELS, ModelChoice,
    ModelManager, TextEmbedder, canonical_name,
};

use crate::vector::ann::Ann;
use crate::vector::store::{DocVectors, VectorStore};
use crate::{Index, ModelError, Result};

/// Chunks embedded per model call (sorted by length first, so padding stays small).
const EMBED_BATCH: usize = 16;
/// Documents per vector-store transaction.
const EMBED_DOCS: usize = 64;

/// Where the embedding model stands.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelStatus {
    /// No model files (search is keyword-only).
    Missing {
        /// The model expected.
        name: String,
    },
    /// Being downloaded.
    Downloading {
        /// The model.
        name: String,
        /// Bytes fetched of the current file.
        done: u64,
        /// Its size.
        total: u64,
    },
    /// Being loaded.
    Loading {
        /// The model.
        name: String,
    },
    /// Loaded: hybrid search is on once its vectors exist.
    Ready {
        /// The model.
        name: String,
        /// Vector dimension.
        dim: usize,
    },
    /// The files are there but do not load.
    Broken {
        /// The model.
        name: String,
        /// Why.
        reason: String,
    },
}

impl ModelStatus {
    /// A one-line description.
    pub fn describe(&self) -> String {
        match self {
            ModelStatus::Missing { name } => format!("{name}: not downloaded"),
            ModelStatus::Downloading { name, done, total } => format!(
                "{name}: downloading ({:.1} of {:.1} MB)",
                *done as f64 / 1e6,
                *total as f64 / 1e6
            ),
            ModelStatus::Loading { name } => format!("{name}: loading"),
            ModelStatus::Ready { name, dim } => format!("{name}: ready ({dim} dimensions)"),
            ModelStatus::Broken { name, reason } => format!("{name}: broken ({reason})"),
        }
    }
}

/// Progress of an embedding run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbedProgress {
    /// Documents embedded so far.
    pub done: u64,
    /// Documents to embed in this run.
    pub total: u64,
    /// Chunks embedded so far.
    pub chunks: u64,
}

/// What an embedding run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EmbedReport {
    /// Documents embedded.
    pub docs: u64,
    /// Chunks embedded.
    pub chunks: u64,
    /// Documents whose vectors were dropped (deleted or changed files).
    pub removed: u64,
    /// Wall time in milliseconds.
    pub elapsed_ms: u64,
}

/// One chunk's vector as it is stored: the lines it covers and its values (what
/// [`Index::doc_vectors`] reads and [`Index::put_vectors`] writes, so vectors made by one index
/// can be served by another, as a gateway serves a published library's).
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkVector {
    /// First line of the chunk (1-based).
    pub start_line: u32,
    /// Last line of the chunk (inclusive).
    pub end_line: u32,
    /// The vector, as the model made it.
    pub vector: Vec<f32>,
}

/// A document's chunk vectors, at the content hash they were made from.
#[derive(Debug, Clone, PartialEq)]
pub struct DocChunkVectors {
    /// The document.
    pub id: DocId,
    /// The content hash the vectors belong to.
    pub hash: String,
    /// Its chunks.
    pub chunks: Vec<ChunkVector>,
}

/// Facts about the vectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorStats {
    /// The model the stored vectors belong to.
    pub model: Option<String>,
    /// Stored chunks.
    pub chunks: u64,
    /// Chunks searchable in memory.
    pub loaded: u64,
    /// Documents embedded at their current content.
    pub embedded_docs: u64,
    /// Documents waiting to be embedded.
    pub pending_docs: u64,
    /// Whether the HNSW graph is built (else searches scan).
    pub graph: bool,
}

struct AnnState {
    ann: Ann,
    /// The model the loaded vectors belong to.
    model: Option<String>,
    /// Whether the stored vectors were read into `ann` (on first need, not at open: a process
    /// that only reads documents never pays for them).
    loaded: bool,
}

struct Loaded {
    name: String,
    embedder: Arc<TextEmbedder>,
}

/// The vector half of an [`Index`].
pub(crate) struct VectorSide {
    store: VectorStore,
    ann: Arc<RwLock<AnnState>>,
    model: RwLock<Option<Loaded>>,
    status: Mutex<ModelStatus>,
    building: Arc<AtomicBool>,
    /// Searches served: the second one makes the vectors' 8-bit copies ([`Ann::build_codes`]).
    searches: AtomicUsize,
    seen_version: Mutex<i64>,
    /// A model selected but not loaded yet ([`Index::attach_selected_model_when_needed`]):
    /// loaded by the first search, status or embedding run that needs it.
    deferred: Mutex<Option<ModelChoice>>,
    /// The snapshot of the stored vectors ([`VectorSide::ensure_loaded`]).
    snapshot: PathBuf,
    /// Chunks from which a load that found no snapshot writes one.
    snapshot_min: AtomicUsize,
}

/// Chunks from which a snapshot of the vectors is kept: below, reading them from the store
/// takes a millisecond or two.
const SNAPSHOT_MIN: usize = 2048;

impl VectorSide {
    /// Opens `vectors.sqlite` in `dir`; its vectors are read at the first search that needs
    /// them ([`VectorSide::ensure_loaded`]).
    pub(crate) fn open(dir: &Path) -> Result<VectorSide> {
        let store = VectorStore::open(&dir.join("vectors.sqlite"))?;
        let model = store.model()?;
        let seen = store.data_version()?;
        Ok(VectorSide {
            store,
            ann: Arc::new(RwLock::new(AnnState {
                ann: Ann::new(0),
                model,
                loaded: false,
            })),
            model: RwLock::new(None),
            status: Mutex::new(ModelStatus::Missing {
                name: DEFAULT_MODEL.to_string(),
            }),
            building: Arc::new(AtomicBool::new(false)),
            searches: AtomicUsize::new(0),
            seen_version: Mutex::new(seen),
            deferred: Mutex::new(None),
            snapshot: dir.join("vectors.snapshot"),
            snapshot_min: AtomicUsize::new(SNAPSHOT_MIN),
        })
    }

    /// Reads the stored vectors into memory, once. Until then writers leave the in-memory set
    /// alone (the store is the truth; this read sees what they wrote).
    ///
    /// When `vectors.snapshot` holds exactly the stored set (its key: this store's identity,
    /// the model, and the chunks' count, highest id and id sum), the vectors and their 8-bit
    /// copies are mapped from it instead, and the scan reads them where they lie in the page
    /// cache: a cold `linkly search` no longer copies 17 MB (ten thousand chunks) out of
    /// SQLite into fresh memory, 15–20 ms on two cores. A load that found no such snapshot
    /// writes one, so the first cold search after the vectors change pays for it, and the
    /// next ones do not.
    fn ensure_loaded(&self) -> Result<()> {
        if self.ann.read().unwrap_or_else(|e| e.into_inner()).loaded {
            return Ok(());
        }
        // In `refresh`'s order: the version, then the vectors.
        let mut seen = self.seen_version.lock().unwrap_or_else(|e| e.into_inner());
        let mut state = self.ann.write().unwrap_or_else(|e| e.into_inner());
        if state.loaded {
            return Ok(());
        }
        // The version first: what is committed after it is loaded by the next refresh.
        *seen = self.store.data_version()?;
        state.model = self.store.model()?;
        let started = std::time::Instant::now();
        let snapshot = |key: String| Cache::at(self.snapshot.clone(), key);
        let owner = state
            .model
            .as_deref()
            .and_then(|model| self.store.snapshot_owner(model));
        let mapped = owner.as_deref().and_then(|owner| {
            let key = self.store.snapshot_key(owner).ok()?;
            snapshot(key).load(Ann::load_snapshot)
        });
        let from_snapshot = mapped.is_some();
        match mapped {
            Some(ann) => state.ann = ann,
            None => {
                state.ann = Ann::new(0);
                state.ann.add_rows(self.store.load_rows_after(0)?);
            }
        }
        tracing::debug!(
            ms = started.elapsed().as_secs_f64() * 1e3,
            chunks = state.ann.live(),
            from_snapshot,
            "stored vectors loaded"
        );
        if let Some(owner) = &owner
            && !from_snapshot
            && state.ann.live() >= self.snapshot_min.load(Ordering::Relaxed)
        {
            let cache = snapshot(state.ann.snapshot_key(owner));
            cache.save(|w| state.ann.save_snapshot(w));
        }
        state.loaded = true;
        drop((state, seen));
        self.spawn_graph_build();
        Ok(())
    }

    fn set_status(&self, s: ModelStatus) {
        *self.status.lock().unwrap_or_else(|e| e.into_inner()) = s;
    }

    /// `embedder` is the model `name`, loaded: search may use it, and the status says ready.
    fn set_ready(&self, name: String, embedder: Arc<TextEmbedder>) {
        let dim = embedder.dim();
        *self.model.write().unwrap_or_else(|e| e.into_inner()) = Some(Loaded {
            name: name.clone(),
            embedder,
        });
        self.set_status(ModelStatus::Ready { name, dim });
    }

    /// The embedder, when loaded and its vectors are the ones in memory; never waits.
    /// The loaded model, when it is ready and the loaded vectors are its own.
    pub(crate) fn usable_embedder(&self) -> Option<Arc<TextEmbedder>> {
        let slot = self.model.try_read().ok()?;
        let loaded = slot.as_ref()?;
        let state = self.ann.try_read().ok()?;
        (state.model.as_deref() == Some(loaded.name.as_str()) && state.ann.live() > 0)
            .then(|| loaded.embedder.clone())
    }

    /// Loads what another process wrote since the last look.
    /// Loads the vectors another process wrote since the last look.
    pub(crate) fn refresh(&self) -> Result<()> {
        self.ensure_loaded()?;
        let version = self.store.data_version()?;
        let mut seen = self.seen_version.lock().unwrap_or_else(|e| e.into_inner());
        if *seen == version {
            return Ok(());
        }
        *seen = version;
        let model = self.store.model()?;
        let mut state = self.ann.write().unwrap_or_else(|e| e.into_inner());
        if state.model != model {
            state.ann = Ann::new(0);
            state.model = model;
        }
        let after = state.ann.max_chunk_id;
        state.ann.add_rows(self.store.load_rows_after(after)?);
        if self.store.chunk_count()? != state.ann.live() as u64 {
            let ids: HashSet<u64> = self.store.chunk_ids()?.into_iter().collect();
            state.ann.retain(&ids);
        }
        drop(state);
        self.spawn_graph_build();
        Ok(())
    }

    /// Builds or refreshes the HNSW graph in a background thread when one is due.
    /// The `k` chunks nearest to a query, best first, as (document, cosine, first line, last
    /// line); `allowed` restricts to documents.
    pub(crate) fn nearest_chunks(
        &self,
        embedder: &TextEmbedder,
        query: &str,
        k: usize,
        allowed: Option<&crate::filter::IdSet>,
    ) -> Result<Vec<(u64, f32, u32, u32)>> {
        let mut q = embedder.embed_query(query)?;
        ann::normalise(&mut q);
        let state = self.ann.read().unwrap_or_else(|e| e.into_inner());
        let hits = state
            .ann
            .search(&q, k, allowed)
            .into_iter()
            .map(|(slot, score)| {
                let s = state.ann.slot(slot);
                (s.doc_id, score, s.start_line, s.end_line)
            })
            .collect();
        // A process that searches more than once (a server, an embedding program) scans the
        // 8-bit copies from then on; a one-shot CLI search does not make them.
        let coded = state.ann.coded();
        drop(state);
        if !coded && self.searches.fetch_add(1, Ordering::Relaxed) >= 1 {
            let started = Instant::now();
            let mut state = self.ann.write().unwrap_or_else(|e| e.into_inner());
            state.ann.build_codes();
            tracing::debug!(
                ms = started.elapsed().as_secs_f64() * 1e3,
                chunks = state.ann.live(),
                "made the vectors' 8-bit copies"
            );
        }
        Ok(hits)
    }

    fn spawn_graph_build(&self) {
        let work = {
            let state = self.ann.read().unwrap_or_else(|e| e.into_inner());
            state.ann.graph_work()
        };
        let Some(work) = work else { return };
        if self.building.swap(true, Ordering::SeqCst) {
            return;
        }
        let ann = self.ann.clone();
        let building = self.building.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            let built = work.build();
            ann.write()
                .unwrap_or_else(|e| e.into_inner())
                .ann
                .install_graph(built);
            building.store(false, Ordering::SeqCst);
            tracing::info!(
                elapsed_ms = started.elapsed().as_millis() as u64,
                "vector graph built"
            );
        });
    }
}

impl Index {
    /// The embedding model's status (loading a model selected with
    /// [`Index::attach_selected_model_when_needed`] first, so the answer is the real one).
    pub fn model_status(&self) -> ModelStatus {
        self.load_deferred_model();
        self.vectors
            .status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Records a status set from outside (a download in progress).
    pub fn set_model_status(&self, status: ModelStatus) {
        self.vectors.set_status(status);
    }

    /// Loads an embedding model from its folder. Searches go on, keyword-only, while it loads;
    /// on failure the status is [`ModelStatus::Broken`] and the error is returned.
    pub fn attach_model(&self, choice: &ModelChoice) -> Result<()> {
        *self
            .vectors
            .deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = None;
        self.load_model(choice)
    }

    /// Loads the model selected by [`Index::attach_selected_model_when_needed`], if it is not
    /// loaded yet; callers that come meanwhile wait for it, as a search would.
    pub(crate) fn load_deferred_model(&self) {
        let mut deferred = self
            .vectors
            .deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(choice) = deferred.take() {
            let _ = self.load_model(&choice);
        }
    }

    /// Before a vector search: the deferred model loaded and the vectors current; both at
    /// once when both are still to be read (a CLI call's search: two loads of some 60 and
    /// 150 ms, on two cores). Without a model, loaded or to load, the vectors are of no use
    /// to the search and are not read (a keyword-only CLI search).
    pub(crate) fn prepare_vector_arm(&self) {
        let refresh = || {
            if let Err(e) = self.vectors.refresh() {
                tracing::warn!(error = %e, "cannot refresh vectors; using those in memory");
            }
        };
        let deferred = self
            .vectors
            .deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        if !deferred
            && self
                .vectors
                .model
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .is_none()
        {
            return;
        }
        if deferred {
            std::thread::scope(|scope| {
                scope.spawn(refresh);
                self.load_deferred_model();
            });
        } else {
            refresh();
        }
    }

    fn load_model(&self, choice: &ModelChoice) -> Result<()> {
        let name = choice.name.clone();
        self.vectors
            .set_status(ModelStatus::Loading { name: name.clone() });
        match TextEmbedder::load(choice) {
            Ok(embedder) => {
                self.vectors.set_ready(name, Arc::new(embedder));
                Ok(())
            }
            Err(e) => {
                tracing::warn!(model = %name, error = %e, "embedding model unusable; search stays keyword-only");
                self.vectors.set_status(ModelStatus::Broken {
                    name,
                    reason: e.to_string(),
                });
                Err(e.into())
            }
        }
    }

    /// Loads the model the data directory `data_root` selects (or `LINKLY_MODEL_DIR`), when its
    /// files are there; returns the resulting status. Never fails: a missing or broken model
    /// leaves search keyword-only.
    pub fn attach_selected_model(&self, data_root: &Path) -> ModelStatus {
        let choice = ModelManager::new(data_root).choice();
        if !choice.is_present() {
            self.vectors
                .set_status(ModelStatus::Missing { name: choice.name });
        } else {
            let _ = self.attach_model(&choice);
        }
        self.model_status()
    }

    /// Selects the model as [`Index::attach_selected_model`] does, but loads it only when
    /// something needs it: a hybrid search, the model's status, an embedding run. A process
    /// that only reads, greps or outlines documents (a CLI call) never pays for the model.
    pub fn attach_selected_model_when_needed(&self, data_root: &Path) {
        let choice = ModelManager::new(data_root).choice();
        if !choice.is_present() {
            self.vectors
                .set_status(ModelStatus::Missing { name: choice.name });
        } else {
            self.attach_model_when_needed(choice);
        }
    }

    /// [`Index::attach_model`], put off until something needs the model (see
    /// [`Index::attach_selected_model_when_needed`]).
    pub fn attach_model_when_needed(&self, choice: ModelChoice) {
        *self
            .vectors
            .deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(choice);
    }

    /// Facts about the stored and loaded vectors.
    pub fn vector_stats(&self) -> Result<VectorStats> {
        self.vectors.ensure_loaded()?;
        let embedded = self.vectors.store.embedded()?;
        let states = self.store.file_states()?;
        let current = states
            .values()
            .filter(|s| embedded.get(&s.id) == Some(&s.hash))
            .count() as u64;
        let state = self.vectors.ann.read().unwrap_or_else(|e| e.into_inner());
        Ok(VectorStats {
            model: self.vectors.store.model()?,
            chunks: self.vectors.store.chunk_count()?,
            loaded: state.ann.live() as u64,
            embedded_docs: current,
            pending_docs: states.len() as u64 - current,
            graph: state.ann.has_graph(),
        })
    }

    /// Sets the number of chunks from which an HNSW graph is built (below it searches scan).
    pub fn set_vector_graph_min(&self, chunks: usize) {
        self.vectors
            .ann
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .ann
            .graph_min = chunks;
    }

    /// Sets the number of chunks from which a load of the stored vectors that found no
    /// snapshot of them writes one (tests).
    pub fn set_vector_snapshot_min(&self, chunks: usize) {
        self.vectors.snapshot_min.store(chunks, Ordering::Relaxed);
    }

    /// Builds the HNSW graph now, in this thread, when one is due (benchmarks, tests).
    pub fn build_vector_graph(&self) {
        if let Err(e) = self.vectors.ensure_loaded() {
            tracing::warn!(error = %e, "cannot read the stored vectors");
            return;
        }
        let work = self
            .vectors
            .ann
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .ann
            .graph_work();
        if let Some(work) = work {
            let built = work.build();
            self.vectors
                .ann
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .ann
                .install_graph(built);
        }
    }

    /// Drops the vectors of documents deleted or changed since they were embedded (run after
    /// each sync, under the writer lock).
    pub(crate) fn forget_stale_vectors(&self) -> Result<u64> {
        let embedded = self.vectors.store.embedded()?;
        if embedded.is_empty() {
            return Ok(0);
        }
        let current: HashMap<u64, String> = self
            .store
            .file_states()?
            .into_values()
            .map(|s| (s.id, s.hash))
            .collect();
        let stale: Vec<u64> = embedded
            .iter()
            .filter(|(id, hash)| current.get(id) != Some(hash))
            .map(|(id, _)| *id)
            .collect();
        self.drop_vectors(&stale)
    }

    /// Drops the vectors of these documents when they no longer match the stored content (run
    /// after a scoped sync, under the writer lock).
    pub(crate) fn forget_vectors_of(&self, ids: &[u64]) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let current = self.store.hashes(ids)?;
        let embedded = self.vectors.store.embedded()?;
        let stale: Vec<u64> = ids
            .iter()
            .copied()
            .filter(|id| embedded.get(id).is_some_and(|h| current.get(id) != Some(h)))
            .collect();
        self.drop_vectors(&stale)
    }

    /// Removes these documents' vectors from the store and the live set.
    fn drop_vectors(&self, stale: &[u64]) -> Result<u64> {
        if stale.is_empty() {
            return Ok(0);
        }
        let removed = self.vectors.store.remove(stale)?;
        let mut state = self.vectors.ann.write().unwrap_or_else(|e| e.into_inner());
        if state.loaded {
            state.ann.remove(&removed);
        }
        Ok(stale.len() as u64)
    }

    /// The model of the stored vectors, if any are stored.
    pub fn vector_model(&self) -> Result<Option<String>> {
        if self.vectors.store.chunk_count()? == 0 {
            return Ok(None);
        }
        self.vectors.store.model()
    }

    /// A document's chunk vectors when they were made from its current content; `None` when
    /// it has none, or only stale ones.
    pub fn doc_vectors(&self, id: DocId) -> Result<Option<DocChunkVectors>> {
        let Some((hash, chunks)) = self.vectors.store.doc_chunks(id.0)? else {
            return Ok(None);
        };
        let current = self.store.hashes(&[id.0])?;
        if current.get(&id.0) != Some(&hash) {
            return Ok(None);
        }
        Ok(Some(DocChunkVectors {
            id,
            hash,
            chunks: chunks
                .into_iter()
                .map(|c| ChunkVector {
                    start_line: c.start_line,
                    end_line: c.end_line,
                    vector: c.vector,
                })
                .collect(),
        }))
    }

    /// Stores vectors made elsewhere (by `model`) for documents, replacing theirs, under the
    /// writer lock as an embedding run does; vectors of another model are dropped first. Every
    /// vector must have the width of the first one.
    pub fn put_vectors(&self, model: &str, docs: Vec<DocChunkVectors>) -> Result<u64> {
        let dim = docs
            .iter()
            .flat_map(|d| d.chunks.first())
            .map(|c| c.vector.len())
            .next()
            .unwrap_or(0);
        if let Some((d, c)) = docs.iter().find_map(|d| {
            d.chunks
                .iter()
                .find(|c| c.vector.len() != dim || dim == 0)
                .map(|c| (d, c))
        }) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "document {} has a vector of {} values at lines {}-{}; expected {dim}",
                    d.id.0,
                    c.vector.len(),
                    c.start_line,
                    c.end_line
                ),
            )
            .into());
        }
        let _gate = self.embed_gate.lock().unwrap_or_else(|e| e.into_inner());
        self.lexical
            .holding_writer(|| self.put_vectors_locked(model, dim, docs))
    }

    fn put_vectors_locked(
        &self,
        model: &str,
        dim: usize,
        docs: Vec<DocChunkVectors>,
    ) -> Result<u64> {
        self.vectors.ensure_loaded()?;
        self.vectors.store.set_model(model)?;
        {
            let mut state = self.vectors.ann.write().unwrap_or_else(|e| e.into_inner());
            if state.model.as_deref() != Some(model) {
                state.ann = Ann::new(dim);
                state.model = Some(model.to_string());
            }
        }
        *self
            .vectors
            .seen_version
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = self.vectors.store.data_version()?;
        let docs: Vec<DocVectors> = docs
            .into_iter()
            .map(|d| DocVectors {
                doc_id: d.id.0,
                hash: d.hash,
                chunks: d
                    .chunks
                    .into_iter()
                    .map(|c| (c.start_line, c.end_line, c.vector))
                    .collect(),
            })
            .collect();
        let (removed, added) = self.vectors.store.write(&docs)?;
        let n = added.len() as u64;
        {
            let mut state = self.vectors.ann.write().unwrap_or_else(|e| e.into_inner());
            state.ann.remove(&removed);
            state.ann.add(added);
        }
        self.vectors.spawn_graph_build();
        Ok(n)
    }

    /// Drops the vectors of these documents (a gateway's documents republished without them).
    pub fn remove_vectors(&self, ids: &[DocId]) -> Result<u64> {
        let ids: Vec<u64> = ids.iter().map(|d| d.0).collect();
        let _gate = self.embed_gate.lock().unwrap_or_else(|e| e.into_inner());
        self.vectors.ensure_loaded()?;
        self.drop_vectors(&ids)
    }

    /// Uses an embedder loaded elsewhere (shared by many indexes, as a gateway's libraries
    /// share one) for the vectors of `name`: search is hybrid when the stored vectors are
    /// that model's.
    pub fn attach_embedder(&self, name: &str, embedder: Arc<TextEmbedder>) {
        *self
            .vectors
            .deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = None;
        self.vectors.set_ready(name.to_string(), embedder);
    }

    /// Embeds the documents that have no vectors at their current content, in batches, each
    /// batch committed to the vector store and searchable at once. Resumable: a run stopped
    /// anywhere leaves the documents not yet committed pending. Takes the writer lock.
    pub fn embed_pending(&self, progress: &mut dyn FnMut(&EmbedProgress)) -> Result<EmbedReport> {
        self.load_deferred_model();
        let Some((name, embedder)) = self
            .vectors
            .model
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|l| (l.name.clone(), l.embedder.clone()))
        else {
            return Err(ModelError::NotLoaded {
                status: self.model_status().describe(),
            }
            .into());
        };
        let _gate = self.embed_gate.lock().unwrap_or_else(|e| e.into_inner());
        self.lexical
            .holding_writer(|| self.embed_locked(&name, &embedder, progress))
    }

    fn embed_locked(
        &self,
        name: &str,
        embedder: &TextEmbedder,
        progress: &mut dyn FnMut(&EmbedProgress),
    ) -> Result<EmbedReport> {
        let started = Instant::now();
        let mut report = EmbedReport::default();
        self.vectors.ensure_loaded()?;
        if self.vectors.store.set_model(name)? {
            tracing::info!(model = name, "embedding model changed; vectors are rebuilt");
        }
        {
            let mut state = self.vectors.ann.write().unwrap_or_else(|e| e.into_inner());
            if state.model.as_deref() != Some(name) {
                state.ann = Ann::new(embedder.dim());
                state.model = Some(name.to_string());
            }
        }
        // Our own commits do not move `data_version`; mark what we hold as seen.
        *self
            .vectors
            .seen_version
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = self.vectors.store.data_version()?;
        report.removed = self.forget_stale_vectors()?;
        let embedded = self.vectors.store.embedded()?;
        let mut pending: Vec<(u64, String)> = self
            .store
            .file_states()?
            .into_values()
            .filter(|s| !s.dirty && embedded.get(&s.id) != Some(&s.hash))
            .map(|s| (s.id, s.hash))
            .collect();
        pending.sort_unstable();
        let total = pending.len() as u64;
        progress(&EmbedProgress {
            done: 0,
            total,
            chunks: 0,
        });
        for group in pending.chunks(EMBED_DOCS) {
            let mut docs = Vec::with_capacity(group.len());
            let mut texts: Vec<(usize, String)> = Vec::new();
            let mut spans: Vec<(usize, u32, u32)> = Vec::new();
            for (id, hash) in group {
                let d = docs.len();
                docs.push(DocVectors {
                    doc_id: *id,
                    hash: hash.clone(),
                    chunks: Vec::new(),
                });
                let Some(rec) = self.store.get(DocId(*id))? else {
                    continue;
                };
                if rec.skip_reason.is_some() {
                    continue;
                }
                let text = self.store.content(DocId(*id))?.unwrap_or_default();
                for c in chunker::chunk(&text, &rec.outline, rec.title.as_deref()) {
                    spans.push((d, c.start_line, c.end_line));
                    texts.push((spans.len() - 1, c.text));
                }
            }
            // Longest first, so each batch pads to similar lengths.
            texts.sort_by_key(|(_, t)| std::cmp::Reverse(t.len()));
            let mut vectors: Vec<Option<Vec<f32>>> = vec![None; spans.len()];
            for batch in texts.chunks(EMBED_BATCH) {
                let refs: Vec<&str> = batch.iter().map(|(_, t)| t.as_str()).collect();
                let out = embedder.embed_passages(&refs)?;
                for ((i, _), v) in batch.iter().zip(out) {
                    vectors[*i] = Some(v);
                }
            }
            for ((d, start, end), v) in spans.into_iter().zip(vectors) {
                if let Some(v) = v {
                    docs[d].chunks.push((start, end, v));
                }
            }
            let (removed, added) = self.vectors.store.write(&docs)?;
            report.docs += docs.len() as u64;
            report.chunks += added.len() as u64;
            {
                let mut state = self.vectors.ann.write().unwrap_or_else(|e| e.into_inner());
                state.ann.remove(&removed);
                state.ann.add(added);
            }
            progress(&EmbedProgress {
                done: report.docs,
                total,
                chunks: report.chunks,
            });
        }
        self.vectors.spawn_graph_build();
        report.elapsed_ms = started.elapsed().as_millis() as u64;
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DocFilter, HybridOptions, SearchMode, SyncOptions};

    /// The real test model (all-MiniLM-L6-v2), from `cargo xtask test-model`.
    fn test_model() -> PathBuf {
        linkly_models::test_inputs::TestInput::MiniLm.path()
    }

    /// Looks at the in-memory vectors' state.
    fn ann<T>(index: &Index, look: impl FnOnce(&AnnState) -> T) -> T {
        look(&index.vectors.ann.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Whether the stored vectors were read.
    fn read(index: &Index) -> bool {
        ann(index, |s| s.loaded)
    }

    /// Whether they lie in a mapped snapshot.
    fn mapped(index: &Index) -> bool {
        ann(index, |s| s.ann.is_mapped())
    }

    /// `tmp/docs`, holding one note about a cat.
    fn cat_folder(tmp: &Path) -> PathBuf {
        let root = tmp.join("docs");
        fs_err::create_dir_all(&root).unwrap();
        fs_err::write(root.join("cat.md"), "The cat sleeps on the windowsill.\n").unwrap();
        root
    }

    #[test]
    fn a_search_without_a_model_leaves_the_stored_vectors_unread() {
        let tmp = tempfile::tempdir().unwrap();
        let root = cat_folder(tmp.path());
        let sync = |index: &Index| {
            let roots = vec![root.clone()];
            let opts = SyncOptions::of_roots(roots);
            index.sync(&opts, &mut |_| {}).unwrap();
        };
        let model = ModelChoice {
            name: "sentence-transformers/all-MiniLM-L6-v2".into(),
            dir: test_model(),
            from_env: false,
            cache: None,
        };
        let dir = tmp.path().join("index");
        let index = Index::open(&dir).unwrap();
        sync(&index);
        index.attach_model(&model).unwrap();
        index.embed_pending(&mut |_| {}).unwrap();
        drop(index);

        // Opened again with no model to load: a keyword answer, and the vectors stay on disk.
        let search = |index: &Index| {
            let (filter, opts) = (DocFilter::default(), HybridOptions::default());
            index
                .hybrid_search("windowsill", 5, &filter, &opts)
                .unwrap()
        };
        let index = Index::open(&dir).unwrap();
        index.attach_selected_model_when_needed(&tmp.path().join("no-model-here"));
        assert_eq!(search(&index).mode, SearchMode::Keyword);
        assert!(!read(&index));
        // The model arrives: the next search reads them and is hybrid.
        index.attach_model_when_needed(model);
        assert_eq!(search(&index).mode, SearchMode::Hybrid);
        assert!(read(&index));
    }

    /// A cold load writes a snapshot of the vectors, the next one maps it and answers the
    /// same; once the vectors change the snapshot no longer matches, is not used, and is
    /// written again.
    #[test]
    fn a_snapshot_of_the_vectors_serves_cold_loads_until_they_change() {
        let tmp = tempfile::tempdir().unwrap();
        let root = cat_folder(tmp.path());
        fs_err::write(root.join("tea.md"), "Green tea is brewed at 80 degrees.\n").unwrap();
        let model = ModelChoice {
            name: "sentence-transformers/all-MiniLM-L6-v2".into(),
            dir: test_model(),
            from_env: false,
            cache: None,
        };
        let dir = tmp.path().join("index");
        let snapshot = dir.join("vectors.snapshot");
        let open = || {
            let index = Index::open(&dir).unwrap();
            index.set_vector_snapshot_min(1);
            index.attach_model(&model).unwrap();
            index
        };
        let update = |index: &Index| {
            let opts = SyncOptions::of_roots(vec![root.clone()]);
            index.sync(&opts, &mut |_| {}).unwrap();
            index.embed_pending(&mut |_| {}).unwrap();
        };
        let search = |index: &Index, q: &str| {
            let (filter, opts) = (DocFilter::default(), HybridOptions::default());
            let r = index.hybrid_search(q, 5, &filter, &opts).unwrap();
            assert_eq!(r.mode, SearchMode::Hybrid);
            r.hits
        };
        update(&open());
        assert!(!snapshot.exists(), "embedding writes no snapshot");

        let index = open();
        let first = search(&index, "a sleeping kitten");
        assert!(!mapped(&index));
        assert!(snapshot.exists(), "a load from the store writes one");
        drop(index);
        let index = open();
        assert_eq!(search(&index, "a sleeping kitten"), first);
        assert!(mapped(&index), "the next load maps it");
        drop(index);

        // The vectors change: the snapshot is stale, the store is read, the new chunk found.
        fs_err::write(root.join("dog.md"), "A puppy naps by the fireplace.\n").unwrap();
        update(&open());
        let index = open();
        let hits = search(&index, "a puppy naps");
        assert!(!mapped(&index), "a stale snapshot is not used");
        let best = index.doc(hits[0].id).unwrap().unwrap();
        assert!(best.path.ends_with("dog.md"), "{best:?}");
        drop(index);
        let index = open();
        assert_eq!(search(&index, "a puppy naps"), hits);
        assert!(mapped(&index), "and it was written again");
        drop(index);

        // The vector store deleted and made again: the chunks get the same ids over again,
        // but the snapshot names the store it came from, so it is not taken for this one.
        for name in ["vectors.sqlite", "vectors.sqlite-wal", "vectors.sqlite-shm"] {
            let _ = fs_err::remove_file(dir.join(name));
        }
        update(&open());
        let index = open();
        assert_eq!(search(&index, "a puppy naps"), hits);
        assert!(!mapped(&index), "another store's snapshot is not used");
    }
}
