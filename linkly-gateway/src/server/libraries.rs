//! The search indexes of cloud libraries, kept in step with the database.
//!
//! Each library a call names gets a [`linkly_index::Index`] under
//! `<data_dir>/cache/<instance>/libraries/<owner>/<slug>/`, filled from the database's published
//! documents (never from files). Before a call is served, the library's `content_seq` is
//! compared with what the index has applied, and the missing changes are ingested
//! ([`Db::changes_since`], pages of 1,000): a library published through another gateway process
//! is searchable here at the next call. Documents keep the database's ids, so
//! `cloud://<owner>/<slug>/<n>` names the same document in every process.
//!
//! `<instance>` is the first of `0`, `1`, … whose lock file this process can hold: processes
//! that share a data directory each get their own indexes, and a restarted process takes its
//! predecessor's back (and only catches up).

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use linkly_core::{Config, DataDir, DocId, DocType, OutlineNode};
use linkly_extract::Extracted;
use linkly_index::vector::{ModelChoice, ModelManager, TextEmbedder, canonical_name};
use linkly_index::{ChunkVector, DocChunkVectors, Index, IngestDoc};
use linkly_tools::{Behind, Linkly};

use crate::model::{LibraryInfo, LibraryKey, PublishedDoc, PublishedVectors};
use crate::server::db::Db;
use crate::{GatewayError, Result};

/// Open library indexes at most (the least recently used one is closed beyond).
pub const DEFAULT_OPEN_LIBRARIES: usize = 64;

/// The longest a call spends catching a library's index up before it answers from what is
/// indexed (the rest goes on in the background).
pub const CALL_BUDGET: Duration = Duration::from_millis(800);

/// Changes applied per database round trip.
const PAGE: usize = 1000;

/// The file, in a library's index directory, that records what it has applied:
/// `<library id> <seq>`.
const APPLIED_FILE: &str = "applied_seq";

/// The file that records the library's roots (the first segment of its paths), one a line.
const ROOTS_FILE: &str = "roots";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One library's index and what it has applied.
#[derive(Debug)]
struct LibraryIndex {
    dir: PathBuf,
    key: LibraryKey,
    index: Arc<Index>,
    /// Catch-up state; held while catching up, so one catch-up at a time per library.
    state: Mutex<Applied>,
    /// The tools as of the last page applied: what a call gets while a catch-up runs.
    current: Mutex<Arc<Linkly>>,
    /// A background catch-up started by a call runs.
    background: AtomicBool,
    /// How many changes the catch-up under way has still to apply: search answers given
    /// meanwhile say that they cover what is indexed so far.
    behind: Arc<Behind>,
}

#[derive(Debug)]
struct Applied {
    library_id: i64,
    seq: i64,
    roots: BTreeSet<String>,
    linkly: Arc<Linkly>,
    /// Why search is keyword-only (`None`: it is hybrid), and whether to look again at the
    /// next call (the gateway lacked the model: it may be installed meanwhile).
    notice: Option<String>,
    look_again: bool,
}

/// The per-library indexes of one gateway process.
pub struct Libraries {
    db: Db,
    root: PathBuf,
    capacity: usize,
    /// Held for the life of the process: the instance directory is ours.
    _instance_lock: File,
    open: Mutex<Lru>,
    /// Libraries being caught up in the background now; `true`: once more when done.
    warming: Mutex<HashMap<LibraryKey, bool>>,
    /// The embedding models that embed queries, shared by every library.
    models: Arc<Models>,
}

/// The embedding models of the gateway's data directory, loaded once each on first need: a
/// library whose vectors one of them made is searched by meaning, its queries embedded by it.
pub struct Models {
    data_dir: PathBuf,
    loaded: Mutex<HashMap<String, std::result::Result<Arc<TextEmbedder>, String>>>,
}

impl Models {
    /// The models of the data directory `data_dir` (`<data_dir>/models/`, or
    /// `LINKLY_MODEL_DIR`).
    pub fn new(data_dir: &Path) -> Models {
        Models {
            data_dir: data_dir.to_path_buf(),
            loaded: Mutex::default(),
        }
    }

    /// Where the model `name` lies on this gateway: the selected model (or
    /// `LINKLY_MODEL_DIR`'s) when it has that name, else `<data_dir>/models/<org>--<name>/`.
    fn find(&self, name: &str) -> Option<ModelChoice> {
        let manager = ModelManager::new(&self.data_dir);
        let chosen = manager.choice();
        if chosen.name == name && chosen.is_present() {
            return Some(chosen);
        }
        let stored = ModelChoice {
            name: name.to_string(),
            dir: manager.dir_of(&canonical_name(name)),
            from_env: false,
        };
        stored.is_present().then_some(stored)
    }

    /// The model `name`, loaded; else why it cannot embed queries here.
    pub fn embedder(&self, name: &str) -> std::result::Result<Arc<TextEmbedder>, String> {
        if let Some(done) = lock(&self.loaded).get(name) {
            return done.clone();
        }
        let Some(choice) = self.find(name) else {
            // Not cached: installed later, it is found at the next look.
            return Err("this gateway does not have it".to_string());
        };
        let loaded = TextEmbedder::load(&choice)
            .map(Arc::new)
            .map_err(|e| format!("it does not load here: {e}"));
        if let Err(e) = &loaded {
            tracing::warn!(model = name, error = %e, "embedding model unusable; libraries of its vectors stay keyword-only");
        }
        lock(&self.loaded).insert(name.to_string(), loaded.clone());
        loaded
    }

    /// The width of the vectors of the model `name`, when this gateway has it.
    pub fn dim(&self, name: &str) -> Option<usize> {
        self.embedder(name).ok().map(|e| e.dim())
    }
}

impl std::fmt::Debug for Libraries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Libraries")
            .field("root", &self.root)
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Lru {
    tick: u64,
    map: HashMap<LibraryKey, (u64, Arc<LibraryIndex>)>,
}

impl Libraries {
    /// The indexes under `<data_dir>/cache/<instance>/libraries/`, at most `capacity` open.
    pub fn new(db: Db, data_dir: &Path, capacity: usize) -> Result<Libraries> {
        let cache = data_dir.join("cache");
        fs_err::create_dir_all(&cache)?;
        let (instance, lock_file) = claim_instance(&cache)?;
        let root = instance.join("libraries");
        fs_err::create_dir_all(&root)?;
        tracing::info!(dir = %root.display(), "library indexes");
        Ok(Libraries {
            db,
            root,
            capacity: capacity.max(1),
            _instance_lock: lock_file,
            open: Mutex::default(),
            warming: Mutex::default(),
            models: Arc::new(Models::new(data_dir)),
        })
    }

    /// The width of the vectors of the model `name`, when this gateway has it (a publish's
    /// vectors of that model must have it).
    pub fn model_dim(&self, name: &str) -> Option<usize> {
        self.models.dim(name)
    }

    /// The directory of the indexes.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The tools over a library's index, caught up with the database. Blocking.
    ///
    /// `NotFound` when the library does not exist (the caller has checked that the user may
    /// read it).
    ///
    /// A call never waits long for the index: it waits for a catch-up in progress (a
    /// publish's, in the background) at most [`CALL_BUDGET`], then answers from what is
    /// indexed already, and a catch-up it starts itself stops after [`CALL_BUDGET`] and goes
    /// on in a background thread.
    pub fn linkly(&self, key: &LibraryKey) -> Result<Arc<Linkly>> {
        self.linkly_within(key, Some(CALL_BUDGET))
    }

    /// Catches a library's index up with the database completely, waiting for a catch-up
    /// in progress (a publish's background catch-up).
    pub fn catch_up(&self, key: &LibraryKey) -> Result<Arc<Linkly>> {
        self.linkly_within(key, None)
    }

    fn linkly_within(&self, key: &LibraryKey, budget: Option<Duration>) -> Result<Arc<Linkly>> {
        let info = self
            .db
            .library(key)?
            .ok_or_else(|| GatewayError::not_found(format!("no library {key}")))?;
        let mut lib = self.entry(key)?;
        let held = match budget {
            None => lock(&lib.state).library_id,
            Some(budget) => {
                // A catch-up in progress (a publish's) is waited for up to the budget, so a
                // small publish is searchable in full at once; past it, what is indexed so far.
                let until = Instant::now() + budget;
                loop {
                    match lib.state.try_lock() {
                        Ok(state) => break state.library_id,
                        Err(std::sync::TryLockError::Poisoned(e)) => {
                            break e.into_inner().library_id;
                        }
                        Err(std::sync::TryLockError::WouldBlock) if Instant::now() < until => {
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        Err(std::sync::TryLockError::WouldBlock) => return Ok(lib.current()),
                    }
                }
            }
        };
        if held != 0 && held != info.id {
            // Deleted and published again under the same address: start over.
            tracing::info!(library = %key, "library replaced: rebuilding its index");
            drop(lib);
            self.forget(key);
            lib = self.entry(key)?;
        }
        let deadline = budget.map(|b| Instant::now() + b);
        let (linkly, done) = lib.catch_up(&self.db, &info, &self.models, deadline)?;
        if !done && !lib.background.swap(true, Ordering::SeqCst) {
            // The rest in the background; calls meanwhile answer from what is indexed.
            let (db, models) = (self.db.clone(), self.models.clone());
            std::thread::spawn(move || {
                if let Err(e) = lib.catch_up(&db, &info, &models, None) {
                    tracing::warn!(library = %lib.key, error = %e, "cannot catch the library's index up");
                }
                lib.background.store(false, Ordering::SeqCst);
            });
        }
        Ok(linkly)
    }

    /// Starts a background catch-up of a library (`true`), or asks the one running to go once
    /// more when done (`false`): a publish builds the library's index as its batches arrive,
    /// so the first search after it finds the index ready.
    pub fn begin_warming(&self, key: &LibraryKey) -> bool {
        let mut warming = lock(&self.warming);
        match warming.get_mut(key) {
            Some(again) => {
                *again = true;
                false
            }
            None => {
                warming.insert(key.clone(), false);
                true
            }
        }
    }

    /// Ends a background catch-up round: `true` when another was asked meanwhile.
    pub fn end_warming(&self, key: &LibraryKey) -> bool {
        let mut warming = lock(&self.warming);
        match warming.get_mut(key) {
            Some(again) if *again => {
                *again = false;
                true
            }
            _ => {
                warming.remove(key);
                false
            }
        }
    }

    /// The open entry of a library, opened (and the least recently used one closed) when needed.
    fn entry(&self, key: &LibraryKey) -> Result<Arc<LibraryIndex>> {
        let mut open = lock(&self.open);
        open.tick += 1;
        let tick = open.tick;
        if let Some((used, lib)) = open.map.get_mut(key) {
            *used = tick;
            return Ok(lib.clone());
        }
        if open.map.len() >= self.capacity
            && let Some(oldest) = open
                .map
                .iter()
                .min_by_key(|(_, (used, _))| *used)
                .map(|(k, _)| k.clone())
        {
            open.map.remove(&oldest);
        }
        let dir = self.root.join(&key.owner).join(&key.slug);
        let lib = Arc::new(LibraryIndex::open(dir, key.clone())?);
        open.map.insert(key.clone(), (tick, lib.clone()));
        Ok(lib)
    }

    /// Forgets a library's index (it was deleted): closes it and removes its files.
    pub fn forget(&self, key: &LibraryKey) {
        let removed = lock(&self.open).map.remove(key);
        drop(removed);
        let dir = self.root.join(&key.owner).join(&key.slug);
        if dir.exists()
            && let Err(e) = fs_err::remove_dir_all(&dir)
        {
            tracing::warn!(error = %e, "cannot remove a deleted library's index");
        }
    }
}

/// Takes the first instance directory whose lock this process can hold.
fn claim_instance(cache: &Path) -> Result<(PathBuf, File)> {
    for n in 0..1024u32 {
        let dir = cache.join(n.to_string());
        fs_err::create_dir_all(&dir)?;
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("lock"))?;
        match file.try_lock() {
            Ok(()) => return Ok((dir, file)),
            Err(std::fs::TryLockError::WouldBlock) => continue,
            Err(std::fs::TryLockError::Error(e)) => return Err(e.into()),
        }
    }
    Err(GatewayError::Io(std::io::Error::other(
        "no free cache instance under the data directory (1024 in use)",
    )))
}

impl LibraryIndex {
    fn open(dir: PathBuf, key: LibraryKey) -> Result<LibraryIndex> {
        fs_err::create_dir_all(&dir)?;
        let (library_id, seq) = read_applied(&dir);
        let roots: BTreeSet<String> = fs_err::read_to_string(dir.join(ROOTS_FILE))
            .map(|s| s.lines().map(str::to_string).collect())
            .unwrap_or_default();
        let index = Arc::new(Index::open(&dir.join("index"))?);
        let behind = Arc::new(Behind::default());
        let linkly = make_linkly(&index, &dir, &key, &roots, &behind, None);
        Ok(LibraryIndex {
            dir,
            key,
            index,
            behind,
            current: Mutex::new(linkly.clone()),
            background: AtomicBool::new(false),
            state: Mutex::new(Applied {
                library_id,
                seq,
                roots,
                linkly,
                notice: None,
                // Looked at by the first call.
                look_again: true,
            }),
        })
    }

    /// Applies the database's changes up to `info.content_seq`; returns the tools.
    /// The tools as of the last page applied.
    fn current(&self) -> Arc<Linkly> {
        lock(&self.current).clone()
    }

    /// Applies the database's changes up to `info.content_seq`, or as many as fit before
    /// `deadline` (a page at least); returns the tools and whether it caught up.
    fn catch_up(
        &self,
        db: &Db,
        info: &LibraryInfo,
        models: &Models,
        deadline: Option<Instant>,
    ) -> Result<(Arc<Linkly>, bool)> {
        let mut state = lock(&self.state);
        if state.library_id != info.id {
            state.library_id = info.id;
            state.seq = 0;
        }
        let before = state.roots.len();
        let mut applied = false;
        let to_go = |seq: i64| u64::try_from(info.content_seq - seq).unwrap_or(0);
        self.behind.set(to_go(state.seq));
        while state.seq < info.content_seq {
            let changes = db.changes_since(info.id, state.seq, PAGE)?;
            let mut docs = Vec::with_capacity(changes.upserted.len());
            let mut vectors: HashMap<String, Vec<DocChunkVectors>> = HashMap::new();
            for (id, mut doc) in changes.upserted {
                if let Some(root) = doc.path.split('/').next() {
                    state.roots.insert(root.to_string());
                }
                if let Some(v) = doc.vectors.take() {
                    match published_vectors(id, &doc, &v) {
                        Ok(d) => vectors.entry(v.model).or_default().push(d),
                        Err(e) => {
                            tracing::warn!(library = %self.key, path = %doc.path, error = %e, "stored vectors unreadable; the document is found by its words only");
                        }
                    }
                }
                docs.push(ingest_doc(id, doc)?);
            }
            let removed: Vec<String> = changes.removed.iter().map(|p| format!("/{p}")).collect();
            let (n, r) = (docs.len(), removed.len());
            self.index.ingest(docs, &removed)?;
            for (model, docs) in vectors {
                self.index.put_vectors(&model, docs)?;
            }
            applied = true;
            tracing::debug!(library = %self.key, upserted = n, removed = r, seq = changes.last_seq, "caught up");
            let moved = changes.last_seq > state.seq;
            state.seq = changes.last_seq;
            self.behind.set(to_go(state.seq));
            write_applied(&self.dir, state.library_id, state.seq)?;
            if !changes.has_more || !moved {
                // Nothing more to apply, whatever the sequence numbers say.
                self.behind.set(0);
                break;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            if state.roots.len() != before && state.seq < info.content_seq {
                // Searchable under its roots while the rest is applied.
                *lock(&self.current) = make_linkly(
                    &self.index,
                    &self.dir,
                    &self.key,
                    &state.roots,
                    &self.behind,
                    state.notice.clone(),
                );
            }
        }
        let done = state.seq >= info.content_seq;
        let mut remake = state.roots.len() != before;
        if remake {
            let roots: String = state.roots.iter().map(|r| format!("{r}\n")).collect();
            fs_err::write(self.dir.join(ROOTS_FILE), roots)?;
        }
        if applied || state.look_again {
            let (notice, look_again) = self.vector_notice(models)?;
            remake |= notice != state.notice;
            state.notice = notice;
            state.look_again = look_again;
        }
        if remake {
            state.linkly = make_linkly(
                &self.index,
                &self.dir,
                &self.key,
                &state.roots,
                &self.behind,
                state.notice.clone(),
            );
        }
        *lock(&self.current) = state.linkly.clone();
        Ok((state.linkly.clone(), done))
    }

    /// Whether search can be hybrid (the model of the stored vectors is attached: `None`),
    /// else why not; and whether the reason may go away without a publish (the model
    /// missing on this gateway).
    fn vector_notice(&self, models: &Models) -> Result<(Option<String>, bool)> {
        let Some(model) = self.index.vector_model()? else {
            return Ok((
                Some(
                    "Keyword-only search: this library was published without vectors (its \
                     publisher's index had no embedding model), so it is found by its words \
                     only."
                        .to_string(),
                ),
                false,
            ));
        };
        match models.embedder(&model) {
            Ok(embedder) => {
                self.index.attach_embedder(&model, embedder);
                Ok((None, false))
            }
            Err(reason) => Ok((
                Some(format!(
                    "Keyword-only search: this library's vectors were made by the model {model}, \
                     and this gateway cannot embed queries with it ({reason}); its administrator \
                     can install it (`linkly --home <gateway data dir> model download {model}`)."
                )),
                true,
            )),
        }
    }
}

fn make_linkly(
    index: &Arc<Index>,
    dir: &Path,
    key: &LibraryKey,
    roots: &BTreeSet<String>,
    behind: &Arc<Behind>,
    keyword_notice: Option<String>,
) -> Arc<Linkly> {
    let config = Config {
        folders: roots
            .iter()
            .map(|r| PathBuf::from(format!("/{r}")))
            .collect(),
        ..Config::default()
    };
    Arc::new(
        Linkly::new(index.clone(), DataDir::new(dir.to_path_buf()), config)
            .with_doc_prefix(key.doc_prefix())
            .with_keyword_notice(keyword_notice)
            .with_behind(behind.clone()),
    )
}

fn read_applied(dir: &Path) -> (i64, i64) {
    let text = fs_err::read_to_string(dir.join(APPLIED_FILE)).unwrap_or_default();
    let mut parts = text.split_whitespace().map(|p| p.parse::<i64>().ok());
    match (parts.next(), parts.next()) {
        (Some(Some(id)), Some(Some(seq))) => (id, seq),
        _ => (0, 0),
    }
}

fn write_applied(dir: &Path, library_id: i64, seq: i64) -> Result<()> {
    let tmp = dir.join(format!("{APPLIED_FILE}.tmp"));
    fs_err::write(&tmp, format!("{library_id} {seq}\n"))?;
    fs_err::rename(&tmp, dir.join(APPLIED_FILE))?;
    Ok(())
}

/// A published document's vectors as the index takes them, under the database's id.
fn published_vectors(id: i64, doc: &PublishedDoc, v: &PublishedVectors) -> Result<DocChunkVectors> {
    let id = u64::try_from(id)
        .map_err(|_| GatewayError::Database(format!("negative document id {id}")))?;
    Ok(DocChunkVectors {
        id: DocId(id),
        hash: doc.hash.clone(),
        chunks: v
            .decode(&doc.path)?
            .into_iter()
            .map(|(start_line, end_line, vector)| ChunkVector {
                start_line,
                end_line,
                vector,
            })
            .collect(),
    })
}

/// A published document as the index takes it: stored at `/<path>` under the database's id.
pub fn ingest_doc(id: i64, doc: PublishedDoc) -> Result<IngestDoc> {
    let doc_type = DocType::from_token(&doc.doc_type)
        .map_err(|_| GatewayError::invalid(format!("unknown document type {:?}", doc.doc_type)))?;
    let outline: Vec<OutlineNode> = match doc.outline {
        serde_json::Value::Null => Vec::new(),
        v => serde_json::from_value(v)
            .map_err(|e| GatewayError::invalid(format!("bad outline for {:?}: {e}", doc.path)))?,
    };
    let id = u64::try_from(id)
        .map_err(|_| GatewayError::Database(format!("negative document id {id}")))?;
    Ok(IngestDoc {
        id: Some(DocId(id)),
        path: format!("/{}", doc.path),
        doc_type,
        hash: doc.hash,
        size: doc.size,
        modified_at: doc.modified_at,
        extracted: Extracted {
            doc_type,
            text: doc.text,
            title: doc.title,
            outline,
            encoding: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn published(path: &str, outline: serde_json::Value) -> PublishedDoc {
        PublishedDoc {
            path: path.into(),
            doc_type: "md".into(),
            hash: "h".into(),
            size: 3,
            modified_at: 5,
            title: Some("T".into()),
            text: "# T\n\nbody".into(),
            outline,
            vectors: None,
        }
    }

    #[test]
    fn a_published_document_is_ingested_at_its_rooted_path_under_the_database_id() {
        let outline = serde_json::json!([{"title": "T", "level": 1, "start_line": 1, "end_line": 3, "children": []}]);
        let d = ingest_doc(42, published("docs/a.md", outline)).unwrap();
        assert_eq!(d.id, Some(DocId(42)));
        assert_eq!(d.path, "/docs/a.md");
        assert_eq!(d.doc_type, DocType::from_token("md").unwrap());
        assert_eq!(d.extracted.outline.len(), 1);
        assert_eq!(d.extracted.title.as_deref(), Some("T"));
        let none = ingest_doc(1, published("a.md", serde_json::Value::Null)).unwrap();
        assert!(none.extracted.outline.is_empty());
        let mut bad = published("a.md", serde_json::json!([]));
        bad.doc_type = "exe".into();
        assert!(ingest_doc(1, bad).is_err());
        assert!(ingest_doc(1, published("a.md", serde_json::json!({"x": 1}))).is_err());
        assert!(ingest_doc(-1, published("a.md", serde_json::json!([]))).is_err());
    }

    #[test]
    fn the_applied_sequence_survives_a_restart() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(read_applied(tmp.path()), (0, 0));
        write_applied(tmp.path(), 7, 1234).unwrap();
        assert_eq!(read_applied(tmp.path()), (7, 1234));
        fs_err::write(tmp.path().join(APPLIED_FILE), "garbage").unwrap();
        assert_eq!(read_applied(tmp.path()), (0, 0));
    }

    #[test]
    fn processes_sharing_a_data_directory_get_their_own_instance() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, _lock_a) = claim_instance(tmp.path()).unwrap();
        let (b, lock_b) = claim_instance(tmp.path()).unwrap();
        assert_ne!(a, b);
        drop(lock_b);
        let (c, _lock_c) = claim_instance(tmp.path()).unwrap();
        assert_eq!(b, c, "a released instance is taken back");
    }
}
