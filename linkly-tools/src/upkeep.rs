//! Keeping an index fresh: the one engine that `linkly index`, `linkly serve`, `linkly mcp` and
//! programs embedding this crate share.
//!
//! Two forms:
//! - **one shot**, [`Linkly::index_now`]: a full sync of the watched folders and the notes
//!   folder, then the embeddings of what changed when the model is on disk;
//! - **continuous**, [`Linkly::keep_fresh`]: the same first reconcile, then a watcher whose
//!   bursts sync only the paths they name, and embeddings (with the model fetched from the hub
//!   first, when allowed) in the background. Keyword search answers throughout.
//!
//! Both extract risky formats (PDF) in a child process with a time and memory budget when the
//! program installed [`extraction_worker_hook`] at the top of `main` (the `linkly` binary
//! does); otherwise in-process behind `catch_unwind`.
//!
//! Tools keep their own answers fresh too: `note_save` indexes the note it wrote before it
//! returns, and `read`, `outline` and `grep` re-index a document whose file changed since it was
//! indexed before they answer (see [`Linkly::fresh_doc`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use linkly_core::{DocId, format_rfc3339, now_millis};
use linkly_extract::{ExtractOptions, Sandbox};
use linkly_index::vector::ModelManager;
use linkly_index::{
    DocRecord, EmbedProgress, EmbedReport, ModelStatus, Phase, Progress, SyncOptions, SyncReport,
    WatchEvent, Watcher,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Linkly, Result, ToolError};

/// The first argument that makes a process Linkly's extraction worker.
pub const WORKER_ARG: &str = "__extract-worker";

/// Set once [`extraction_worker_hook`] ran in this process.
static WORKER_HOOKED: AtomicBool = AtomicBool::new(false);

/// How often a running engine looks at `config.toml` for changes.
const CONFIG_POLL: Duration = Duration::from_millis(500);

/// How long the sync of a configuration change waits for another writer of the index.
const CONFIG_SYNC_PATIENCE: Duration = Duration::from_secs(60);

/// A sync older than this, with nothing watching, earns a note in `search` answers.
const STALE_AFTER_MS: i64 = 15 * 60 * 1000;

/// Call this first thing in `main` of a program that embeds Linkly. When the process was started
/// as Linkly's extraction worker (first argument [`WORKER_ARG`]) it extracts the one file it is
/// asked for and exits; otherwise it records that this executable can serve as the worker, so
/// that risky formats (PDF) are extracted in a child process with a time and memory budget, as
/// the `linkly` binary does. Without it, extraction runs in-process.
pub fn extraction_worker_hook() {
    if std::env::args_os().nth(1).is_some_and(|a| a == WORKER_ARG) {
        std::process::exit(linkly_extract::run_worker());
    }
    WORKER_HOOKED.store(true, Ordering::SeqCst);
}

/// The extraction sandbox of a configuration: this executable as the worker when
/// [`extraction_worker_hook`] ran, else in-process; the `[ocr]` settings either way.
pub fn sandbox_for(config: &linkly_core::Config) -> Sandbox {
    let mut sandbox = if WORKER_HOOKED.load(Ordering::SeqCst) {
        std::env::current_exe()
            .map(|exe| Sandbox::with_worker(exe, vec![WORKER_ARG.to_string()]))
            .unwrap_or_default()
    } else {
        static WARN: Once = Once::new();
        WARN.call_once(|| {
            tracing::info!(
                "risky formats are extracted in-process: call linkly_tools::extraction_worker_hook() first in main to isolate them"
            );
        });
        Sandbox::in_process()
    };
    sandbox.options = ExtractOptions::from_config(config);
    sandbox
}

/// What the index is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IndexState {
    /// Nothing has run yet.
    Scanning,
    /// A sync is running.
    Indexing,
    /// Up to date, and a watcher follows changes.
    Watching,
    /// Up to date as of the last sync; nothing watches.
    Idle,
    /// The full-text index is being rebuilt from the store (it was lost or inconsistent):
    /// search answers from part of the documents until it is whole.
    Rebuilding,
    /// The last sync failed.
    Error,
}

impl IndexState {
    /// The token `/health` and `status` show.
    pub fn as_str(self) -> &'static str {
        match self {
            IndexState::Scanning => "scanning",
            IndexState::Indexing => "indexing",
            IndexState::Watching => "watching",
            IndexState::Idle => "idle",
            IndexState::Rebuilding => "rebuilding",
            IndexState::Error => "error",
        }
    }
}

/// What the engine of this process knows about freshness.
#[derive(Debug)]
pub(crate) struct Freshness {
    state: Mutex<IndexState>,
    /// A watcher runs in this process.
    watching: AtomicBool,
    /// A keep-fresh engine runs in this process.
    engine: AtomicBool,
}

impl Default for Freshness {
    fn default() -> Self {
        Freshness {
            state: Mutex::new(IndexState::Idle),
            watching: AtomicBool::new(false),
            engine: AtomicBool::new(false),
        }
    }
}

impl Freshness {
    fn set(&self, s: IndexState) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = s;
    }

    fn get(&self) -> IndexState {
        *self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What the engine reports while it works.
#[derive(Debug, Clone)]
pub enum FreshEvent {
    /// The index state changed.
    State(IndexState),
    /// Progress of a sync.
    Sync(Progress),
    /// A sync finished (`full`: every watched folder was walked).
    Synced {
        /// What it did.
        report: SyncReport,
        /// True for a full reconcile, false for a watcher burst.
        full: bool,
    },
    /// Progress of an embedding run.
    Embedding(EmbedProgress),
    /// An embedding run finished.
    Embedded(EmbedReport),
    /// The embedding model is being fetched from the hub: bytes done of total.
    Downloading {
        /// The model.
        model: String,
        /// Bytes fetched.
        done: u64,
        /// Bytes in all (0 while unknown).
        total: u64,
    },
    /// The embedding model's status after an attempt to load it.
    Model(ModelStatus),
    /// Something failed; the engine goes on.
    Failed(String),
}

/// What [`Linkly::index_now`] did.
#[derive(Debug, Clone)]
pub struct IndexNowReport {
    /// The sync.
    pub sync: SyncReport,
    /// The embedding run, when the model was there.
    pub embed: Option<EmbedReport>,
    /// The model's status after the run.
    pub model: ModelStatus,
}

/// How [`Linkly::keep_fresh`] runs.
#[derive(Debug, Clone)]
pub struct KeepFreshOptions {
    /// Follow changes with a watcher after the first reconcile (else one reconcile only).
    pub watch: bool,
    /// Fetch the embedding model from the hub when it is missing (needs the `download` feature
    /// of `linkly-index`; `LINKLY_MODEL_DIR` set turns it off).
    pub fetch_model: bool,
}

impl Default for KeepFreshOptions {
    fn default() -> Self {
        KeepFreshOptions {
            watch: true,
            fetch_model: true,
        }
    }
}

/// A running keep-fresh engine; dropping it stops the watcher.
pub struct KeepFresh {
    watcher: Arc<Mutex<Option<Watcher>>>,
    stopped: Arc<AtomicBool>,
    linkly: Arc<Linkly>,
}

impl std::fmt::Debug for KeepFresh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeepFresh").finish_non_exhaustive()
    }
}

impl KeepFresh {
    /// Waits until the first reconcile is done and the watcher runs (or the engine settled
    /// idle or in error), at most `timeout`. True when it got there.
    pub fn wait_ready(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            match self.linkly.fresh.get() {
                IndexState::Watching | IndexState::Idle | IndexState::Error => return true,
                _ if std::time::Instant::now() >= deadline => return false,
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

impl Drop for KeepFresh {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        drop(
            self.watcher
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
        self.linkly.fresh.watching.store(false, Ordering::SeqCst);
        self.linkly.fresh.engine.store(false, Ordering::SeqCst);
    }
}

/// How fresh the index is, for `/health`, `linkly status`, `explore` and `search`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Coverage {
    /// What the index is doing.
    pub state: IndexState,
    /// Files of the watched folders (and notes) in the index.
    pub documents: u64,
    /// Of those, files whose text is indexed.
    pub indexed: u64,
    /// Files indexed by name only, by skip reason.
    pub skipped: BTreeMap<String, u64>,
    /// Documents waiting for their embeddings (null while the model is not loaded).
    pub waiting_for_embedding: Option<u64>,
    /// Audio and video files waiting for transcription: indexed by name before the speech
    /// model was installed, transcribed by the next sync.
    #[serde(default)]
    pub waiting_for_transcription: u64,
    /// `hybrid` when vectors answer, else `keyword`.
    pub search_mode: String,
    /// The embedding model's state, in words.
    pub model: String,
    /// When every watched folder was last walked (RFC 3339 UTC), if ever.
    pub last_reconcile: Option<String>,
    /// When the index last changed by a sync of any kind (RFC 3339 UTC), if ever.
    pub last_sync: Option<String>,
    /// Whether a watcher follows changes (in the process answering).
    pub watching: bool,
}

impl Coverage {
    /// One line for people and agents: state, coverage, embeddings, last reconcile, watcher.
    pub fn one_line(&self) -> String {
        let skipped: u64 = self.skipped.values().sum();
        let mut out = format!(
            "{} · {} of {} files with text",
            self.state.as_str(),
            self.indexed,
            self.documents
        );
        if skipped > 0 {
            let reasons: Vec<String> = self
                .skipped
                .iter()
                .map(|(code, n)| format!("{code} {n}"))
                .collect();
            out.push_str(&format!(
                " ({skipped} by name only: {})",
                reasons.join(", ")
            ));
        }
        out.push_str(&format!(" · {} search", self.search_mode));
        if let Some(w) = self.waiting_for_embedding.filter(|w| *w > 0) {
            out.push_str(&format!(", {w} waiting for embeddings"));
        }
        if self.waiting_for_transcription > 0 {
            out.push_str(&format!(
                ", {} waiting for transcription",
                self.waiting_for_transcription
            ));
        }
        match &self.last_reconcile {
            Some(t) => out.push_str(&format!(" · last full scan {t}")),
            None => out.push_str(" · never fully scanned"),
        }
        out.push_str(if self.watching {
            " · watching for changes"
        } else {
            " · not watching (changes wait for `linkly index` or `linkly serve`)"
        });
        out
    }
}

impl Linkly {
    /// The sync options of this configuration: the watched folders, the notes folder (when it
    /// exists), the exclusions, and the extraction sandbox ([`sandbox_for`]).
    pub fn sync_options(&self) -> SyncOptions {
        let config = self.config();
        let mut opts = crate::notes::sync_options(&config, self.data_dir());
        opts.sandbox = sandbox_for(&config);
        opts.sandbox.options.speech.model = Some(self.data_dir().speech_model_dir());
        opts
    }

    /// One shot: syncs the watched folders and the notes folder now (new, changed and deleted
    /// files), then embeds what changed when the embedding model is on disk.
    pub fn index_now(&self, on_event: &mut dyn FnMut(&FreshEvent)) -> Result<IndexNowReport> {
        self.fresh.set(IndexState::Indexing);
        let result = self.index().sync(&self.sync_options(), &mut |p| {
            on_event(&FreshEvent::Sync(*p))
        });
        let sync = match result {
            Ok(r) => r,
            Err(e) => {
                self.fresh.set(IndexState::Error);
                return Err(e.into());
            }
        };
        // A server's watcher still follows changes after a one-shot sync it did not start.
        self.fresh
            .set(if self.fresh.watching.load(Ordering::SeqCst) {
                IndexState::Watching
            } else {
                IndexState::Idle
            });
        on_event(&FreshEvent::Synced {
            report: sync.clone(),
            full: true,
        });
        let model = match self.index().model_status() {
            ready @ ModelStatus::Ready { .. } => ready,
            _ => self.index().attach_selected_model(self.data_dir().root()),
        };
        on_event(&FreshEvent::Model(model.clone()));
        let embed = if let ModelStatus::Ready { .. } = model {
            let r = self
                .index()
                .embed_pending(&mut |p| on_event(&FreshEvent::Embedding(*p)))?;
            on_event(&FreshEvent::Embedded(r));
            Some(r)
        } else {
            None
        };
        Ok(IndexNowReport {
            sync,
            embed,
            model: self.index().model_status(),
        })
    }

    /// Continuous: in a background thread, reconciles the watched folders with the index,
    /// then follows changes with a watcher (each burst syncs the paths it names), and embeds in
    /// the background (fetching the model first when it is missing and `opts.fetch_model`).
    /// Returns at once; tools answer from the index meanwhile. Drop the handle to stop.
    pub fn keep_fresh(
        self: &Arc<Self>,
        opts: KeepFreshOptions,
        on_event: impl Fn(&FreshEvent) + Send + Sync + 'static,
    ) -> Result<KeepFresh> {
        // The notes folder exists from the start, so the watcher follows it too.
        let _ = fs_err::create_dir_all(self.notes_dir());
        let on_event = Arc::new(on_event);
        let handle = KeepFresh {
            watcher: Arc::new(Mutex::new(None)),
            stopped: Arc::new(AtomicBool::new(false)),
            linkly: self.clone(),
        };
        self.fresh.engine.store(true, Ordering::SeqCst);
        self.fresh.set(IndexState::Scanning);
        let linkly = self.clone();
        let watcher = handle.watcher.clone();
        let stopped = handle.stopped.clone();
        let on_config = on_event.clone();
        let engine_opts = opts.clone();
        std::thread::Builder::new()
            .name("linkly-keep-fresh".into())
            .spawn(move || linkly.run_engine(engine_opts, watcher, stopped, on_event))
            .map_err(|e| ToolError::internal(format!("cannot start the keep-fresh thread: {e}")))?;
        let linkly = self.clone();
        let watcher = handle.watcher.clone();
        let stopped = handle.stopped.clone();
        std::thread::Builder::new()
            .name("linkly-config".into())
            .spawn(move || linkly.follow_config(opts, watcher, stopped, on_config))
            .map_err(|e| ToolError::internal(format!("cannot start the config thread: {e}")))?;
        Ok(handle)
    }

    fn run_engine(
        self: Arc<Self>,
        opts: KeepFreshOptions,
        watcher: Arc<Mutex<Option<Watcher>>>,
        stopped: Arc<AtomicBool>,
        on_event: Arc<dyn Fn(&FreshEvent) + Send + Sync>,
    ) {
        let state = |s: IndexState| {
            self.fresh.set(s);
            on_event(&FreshEvent::State(s));
        };
        let sync_opts = self.sync_options();
        // A model already on disk is loaded first (a fraction of a second), so that the first
        // searches are hybrid; one still to fetch waits until after the reconcile.
        let manager = ModelManager::new(self.data_dir().root());
        if manager.choice().is_present()
            && !matches!(self.index().model_status(), ModelStatus::Ready { .. })
        {
            let model = self.index().attach_selected_model(self.data_dir().root());
            on_event(&FreshEvent::Model(model));
        }
        state(IndexState::Indexing);
        // The watcher starts before the reconcile, so that nothing saved during it is missed
        // (a burst during the reconcile waits for it and syncs its paths after).
        if opts.watch
            && let Some(w) = self.start_watcher(&sync_opts, &on_event)
        {
            *watcher.lock().unwrap_or_else(|e| e.into_inner()) = Some(w);
        }
        if stopped.load(Ordering::SeqCst) {
            return;
        }
        let mut rebuilding = false;
        match self.index().sync(&sync_opts, &mut |p| {
            if (p.phase == Phase::Rebuilding) != rebuilding {
                rebuilding = p.phase == Phase::Rebuilding;
                state(if rebuilding {
                    IndexState::Rebuilding
                } else {
                    IndexState::Indexing
                });
            }
            on_event(&FreshEvent::Sync(*p));
        }) {
            Ok(report) => on_event(&FreshEvent::Synced { report, full: true }),
            Err(e) => {
                state(IndexState::Error);
                on_event(&FreshEvent::Failed(format!("indexing failed: {e}")));
                return;
            }
        }
        let watching = self.fresh.watching.load(Ordering::SeqCst);
        state(if watching {
            IndexState::Watching
        } else {
            IndexState::Idle
        });
        if stopped.load(Ordering::SeqCst) {
            return;
        }
        // The model (fetched when missing and allowed), then the embeddings; keyword search
        // answers meanwhile.
        let choice = manager.choice();
        if !choice.is_present()
            && !choice.from_env
            && opts.fetch_model
            && cfg!(feature = "download")
        {
            tracing::info!(model = %choice.name, "fetching the embedding model (turn off with --no-model-download)");
            if let Err(e) = self.fetch_model(&manager, &choice.name, &on_event) {
                on_event(&FreshEvent::Failed(format!(
                    "downloading the embedding model failed ({e}); search stays keyword-only"
                )));
                self.index()
                    .set_model_status(ModelStatus::Missing { name: choice.name });
            }
        }
        let model = match self.index().model_status() {
            ready @ ModelStatus::Ready { .. } => ready,
            _ => {
                let model = self.index().attach_selected_model(self.data_dir().root());
                on_event(&FreshEvent::Model(model.clone()));
                model
            }
        };
        if matches!(model, ModelStatus::Ready { .. }) {
            self.embed_now(&on_event);
        }
    }

    /// Starts a watcher over these sync options (none without roots); its bursts sync the
    /// paths they name and embed what changed.
    fn start_watcher(
        self: &Arc<Self>,
        sync_opts: &SyncOptions,
        on_event: &Arc<dyn Fn(&FreshEvent) + Send + Sync>,
    ) -> Option<Watcher> {
        if sync_opts.roots.is_empty() {
            return None;
        }
        let events_linkly = self.clone();
        let events = on_event.clone();
        let embed_after = self.clone();
        let embed_events = on_event.clone();
        let started = Watcher::start(
            self.index().clone(),
            sync_opts.clone(),
            vec![self.data_dir().root().to_path_buf()],
            move |event| match event {
                WatchEvent::Syncing => {
                    events_linkly.fresh.set(IndexState::Indexing);
                    events(&FreshEvent::State(IndexState::Indexing));
                }
                WatchEvent::Synced(r) => {
                    let changed = r.added + r.updated + r.removed > 0;
                    events(&FreshEvent::Synced {
                        report: r,
                        full: false,
                    });
                    events_linkly.fresh.set(IndexState::Watching);
                    events(&FreshEvent::State(IndexState::Watching));
                    if changed {
                        embed_after.embed_in_background(embed_events.clone());
                    }
                }
                WatchEvent::Failed(e) => {
                    events_linkly.fresh.set(IndexState::Error);
                    events(&FreshEvent::Failed(format!("re-indexing failed: {e}")));
                }
            },
        );
        match started {
            Ok(w) => {
                self.fresh.watching.store(true, Ordering::SeqCst);
                Some(w)
            }
            Err(e) => {
                on_event(&FreshEvent::Failed(format!(
                    "cannot watch the folders: {e}"
                )));
                None
            }
        }
    }

    /// Follows `config.toml` while the engine runs: a change saved by anyone (the window,
    /// `linkly config set`, an editor) is put in effect within a second: the watcher restarts
    /// over the new folders and exclusions, and a full sync indexes what was added, drops what
    /// left, and extracts again what waited for a switch (transcription, OCR).
    fn follow_config(
        self: Arc<Self>,
        opts: KeepFreshOptions,
        watcher: Arc<Mutex<Option<Watcher>>>,
        stopped: Arc<AtomicBool>,
        on_event: Arc<dyn Fn(&FreshEvent) + Send + Sync>,
    ) {
        let path = self.data_dir().config_file();
        let read = || fs_err::read_to_string(&path).unwrap_or_default();
        let mut seen = read();
        let mut applied = (*self.config()).clone();
        while !stopped.load(Ordering::SeqCst) {
            std::thread::sleep(CONFIG_POLL);
            let text = read();
            if text == seen {
                continue;
            }
            seen = text;
            let config = match linkly_core::Config::load(self.data_dir()) {
                Ok(c) => c,
                Err(e) => {
                    on_event(&FreshEvent::Failed(format!(
                        "config.toml changed but cannot be read ({e}); the previous settings stay in effect"
                    )));
                    continue;
                }
            };
            if config == applied {
                continue;
            }
            tracing::info!("config.toml changed: applying it");
            self.put_config(config.clone());
            applied = config;
            let sync_opts = self.sync_options();
            if opts.watch {
                // The old watcher stops before the new one starts over the new folders.
                let old = watcher.lock().unwrap_or_else(|e| e.into_inner()).take();
                drop(old);
                self.fresh.watching.store(false, Ordering::SeqCst);
                if let Some(w) = self.start_watcher(&sync_opts, &on_event) {
                    *watcher.lock().unwrap_or_else(|e| e.into_inner()) = Some(w);
                }
            }
            if stopped.load(Ordering::SeqCst) {
                return;
            }
            self.fresh.set(IndexState::Indexing);
            on_event(&FreshEvent::State(IndexState::Indexing));
            // A sync of the watcher (or a rebuild the person asked for) may hold the index's
            // writer a moment: wait for it rather than fail the change.
            let mut waited = std::time::Duration::ZERO;
            let synced = loop {
                match self
                    .index()
                    .sync(&sync_opts, &mut |p| on_event(&FreshEvent::Sync(*p)))
                {
                    Err(e)
                        if linkly_core::CodedError::error_code(&e)
                            == linkly_core::ErrorCode::IndexBusy
                            && waited < CONFIG_SYNC_PATIENCE
                            && !stopped.load(Ordering::SeqCst) =>
                    {
                        std::thread::sleep(CONFIG_POLL);
                        waited += CONFIG_POLL;
                    }
                    other => break other,
                }
            };
            match synced {
                Ok(report) => on_event(&FreshEvent::Synced { report, full: true }),
                Err(e) => on_event(&FreshEvent::Failed(format!("indexing failed: {e}"))),
            }
            let state = if self.fresh.watching.load(Ordering::SeqCst) {
                IndexState::Watching
            } else {
                IndexState::Idle
            };
            self.fresh.set(state);
            on_event(&FreshEvent::State(state));
            self.embed_in_background(on_event.clone());
        }
    }

    /// Fetches the selected embedding model now when it is not on disk (resuming a partial
    /// download; progress as [`FreshEvent::Downloading`]), loads it and embeds what waits: the
    /// person's "download" button. Runs on the calling thread.
    pub fn download_model(&self, on_event: Arc<dyn Fn(&FreshEvent) + Send + Sync>) -> Result<()> {
        let manager = ModelManager::new(self.data_dir().root());
        let choice = manager.choice();
        if !choice.is_present()
            && let Err(e) = self.fetch_model(&manager, &choice.name, &on_event)
        {
            self.index()
                .set_model_status(ModelStatus::Missing { name: choice.name });
            return Err(e);
        }
        let model = self.index().attach_selected_model(self.data_dir().root());
        on_event(&FreshEvent::Model(model.clone()));
        if matches!(model, ModelStatus::Ready { .. }) {
            self.embed_now(&on_event);
        }
        Ok(())
    }

    fn embed_now(&self, on_event: &Arc<dyn Fn(&FreshEvent) + Send + Sync>) {
        match self
            .index()
            .embed_pending(&mut |p| on_event(&FreshEvent::Embedding(*p)))
        {
            Ok(r) => on_event(&FreshEvent::Embedded(r)),
            Err(e) => on_event(&FreshEvent::Failed(format!(
                "embedding stopped ({e}); search stays keyword-only for what is missing"
            ))),
        }
    }

    /// Embeds what is pending in a thread of its own, when the model is loaded; a run already
    /// going picks the new documents up in its next pass (runs of this process queue).
    fn embed_in_background(self: &Arc<Self>, on_event: Arc<dyn Fn(&FreshEvent) + Send + Sync>) {
        if !matches!(self.index().model_status(), ModelStatus::Ready { .. }) {
            return;
        }
        let linkly = self.clone();
        let _ = std::thread::Builder::new()
            .name("linkly-embed".into())
            .spawn(move || linkly.embed_now(&on_event));
    }

    #[cfg(feature = "download")]
    fn fetch_model(
        &self,
        manager: &ModelManager,
        name: &str,
        on_event: &Arc<dyn Fn(&FreshEvent) + Send + Sync>,
    ) -> Result<()> {
        let index = self.index().clone();
        manager
            .download(name, &mut |p| {
                index.set_model_status(ModelStatus::Downloading {
                    name: name.to_string(),
                    done: p.done,
                    total: p.total,
                });
                on_event(&FreshEvent::Downloading {
                    model: name.to_string(),
                    done: p.done,
                    total: p.total,
                });
            })
            .map(|_| ())
            .map_err(|e| ToolError::from(linkly_index::Error::from(e)))
    }

    #[cfg(not(feature = "download"))]
    fn fetch_model(
        &self,
        _manager: &ModelManager,
        _name: &str,
        _on_event: &Arc<dyn Fn(&FreshEvent) + Send + Sync>,
    ) -> Result<()> {
        Err(ToolError::internal(
            "this build has no model download (feature `download`)",
        ))
    }

    /// Re-indexes these files (or folders) now, as a watcher burst would: what a tool that just
    /// wrote a file, or found one changed, runs before it answers. Embeddings follow in the
    /// background when an engine runs.
    pub fn refresh_paths(&self, paths: &[PathBuf]) -> Result<SyncReport> {
        let report = self.index().sync_paths(&self.sync_options(), paths)?;
        if report.added + report.updated > 0
            && self.fresh.engine.load(Ordering::SeqCst)
            && matches!(self.index().model_status(), ModelStatus::Ready { .. })
        {
            let index = self.index().clone();
            let _ = std::thread::Builder::new()
                .name("linkly-embed".into())
                .spawn(move || {
                    if let Err(e) = index.embed_pending(&mut |_| {}) {
                        tracing::warn!(error = %e, "embedding stopped");
                    }
                });
        }
        Ok(report)
    }

    /// A document's record, checked against its file first: when the file changed since it
    /// was indexed (size or modification time) it is re-indexed before the record is returned;
    /// when it is gone, `None` (and it leaves the index). When another process holds the
    /// index writer the stored record is returned as it is.
    pub fn fresh_doc(&self, id: DocId) -> Result<Option<DocRecord>> {
        let Some(rec) = self.corpus().doc(id)? else {
            return Ok(None);
        };
        if !self.admits(&rec.path) {
            // Outside the libraries a visitor may read: as if it did not exist.
            return Ok(None);
        }
        if !self.documents_are_files() {
            // Extracted elsewhere (a gateway's library): the index is the only copy.
            return Ok(Some(rec));
        }
        if rec
            .skip_reason
            .as_deref()
            .is_some_and(|r| r.starts_with(linkly_core::SkipReason::NON_UTF8_PATH))
        {
            // Listed under a lossy name that no file has: nothing to check it against.
            return Ok(Some(rec));
        }
        let path = PathBuf::from(&rec.path);
        let current = std::fs::metadata(&path).ok().map(|m| {
            let mtime = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_millis() as i64)
                .unwrap_or(0);
            (m.len(), mtime)
        });
        if current == Some((rec.size, rec.modified_at)) {
            return Ok(Some(rec));
        }
        match self.refresh_paths(&[path]) {
            Ok(_) => Ok(self.corpus().doc(id)?),
            Err(e) => {
                tracing::warn!(doc = %id, error = %e.message, "cannot re-index a changed file; answering from the index");
                Ok(current.map(|_| rec))
            }
        }
    }

    /// How fresh the index is.
    pub fn coverage(&self) -> Result<Coverage> {
        let Ok(index) = self.local_index() else {
            // Documents kept by another store: what it holds, searched as its model allows.
            let documents = self.corpus().doc_count()?;
            let model = self.corpus().model_status();
            return Ok(Coverage {
                state: self.fresh.get(),
                documents,
                indexed: documents,
                skipped: BTreeMap::new(),
                waiting_for_embedding: None,
                waiting_for_transcription: 0,
                search_mode: if matches!(model, ModelStatus::Ready { .. }) {
                    "hybrid".into()
                } else {
                    "keyword".into()
                },
                model: model.describe(),
                last_reconcile: None,
                last_sync: None,
                watching: false,
            });
        };
        let documents = index.doc_count()?;
        let skipped: BTreeMap<String, u64> = index.skip_counts()?.into_iter().collect();
        let skipped_total: u64 = skipped.values().sum();
        let model = index.model_status();
        let ready = matches!(model, ModelStatus::Ready { .. });
        let vectors = if ready {
            Some(index.vector_stats()?)
        } else {
            None
        };
        let time = |t: Option<i64>| t.map(format_rfc3339);
        let speech = ExtractOptions {
            speech: linkly_extract::SpeechOptions {
                model: Some(self.data_dir().speech_model_dir()),
                ..linkly_extract::SpeechOptions::default()
            },
            ..ExtractOptions::default()
        };
        let waiting_for_transcription = if linkly_extract::formats::speech_ready(&speech) {
            skipped
                .get(linkly_core::SkipReason::TRANSCRIPTION_UNAVAILABLE)
                .copied()
                .unwrap_or(0)
        } else {
            0
        };
        Ok(Coverage {
            state: self.fresh.get(),
            documents,
            indexed: documents.saturating_sub(skipped_total),
            skipped,
            waiting_for_embedding: vectors.as_ref().map(|v| v.pending_docs),
            waiting_for_transcription,
            search_mode: if vectors.as_ref().is_some_and(|v| v.chunks > 0) {
                "hybrid".into()
            } else {
                "keyword".into()
            },
            model: model.describe(),
            last_reconcile: time(index.last_reconcile()?),
            last_sync: time(index.last_sync()?),
            watching: self.fresh.watching.load(Ordering::SeqCst),
        })
    }

    /// The OCR languages Tesseract has on this machine (none when it is not installed).
    pub fn ocr_languages(&self) -> Vec<String> {
        linkly_extract::ocr::status().languages
    }

    /// Whether a speech model is on disk (in the data directory's speech model folder).
    pub fn speech_model_ready(&self) -> bool {
        linkly_extract::formats::speech_ready(&ExtractOptions {
            speech: linkly_extract::SpeechOptions {
                model: Some(self.data_dir().speech_model_dir()),
                ..linkly_extract::SpeechOptions::default()
            },
            ..ExtractOptions::default()
        })
    }

    /// Asks for every file to be read and extracted again, then syncs (progress as events):
    /// the person's "re-extract" after new OCR languages or a new extractor. Documents stay
    /// searchable meanwhile.
    pub fn reextract_all(&self, on_event: &mut dyn FnMut(&FreshEvent)) -> Result<IndexNowReport> {
        self.index().forget_extractions()?;
        self.index_now(on_event)
    }

    /// Rebuilds the full-text index from the store (no file is extracted again).
    pub fn rebuild_search_index(&self, on_event: &mut dyn FnMut(&FreshEvent)) -> Result<u64> {
        self.fresh.set(IndexState::Rebuilding);
        let r = self
            .index()
            .rebuild_lexical(&mut |p| on_event(&FreshEvent::Sync(*p)));
        self.fresh
            .set(if self.fresh.watching.load(Ordering::SeqCst) {
                IndexState::Watching
            } else {
                IndexState::Idle
            });
        Ok(r?)
    }

    /// True while a keep-fresh engine runs in this process (it applies config changes itself).
    pub fn keeps_fresh(&self) -> bool {
        self.fresh.engine.load(Ordering::SeqCst)
    }

    /// What the index is doing, as this process's engine knows it.
    pub fn index_state(&self) -> IndexState {
        self.fresh.get()
    }

    /// A one-line warning when nothing keeps the index fresh and its last sync is old (or
    /// never happened), with the command that fixes it.
    pub(crate) fn staleness_note(&self) -> Option<String> {
        if self.fresh.engine.load(Ordering::SeqCst) {
            return None;
        }
        // Documents extracted elsewhere are as fresh as their store: nothing syncs them here.
        let last = self.local_index().ok()?.last_sync().ok().flatten();
        match last {
            None => Some(
                "Nothing has indexed these folders yet and nothing watches them: run `linkly index` (or `linkly serve` to keep them fresh)."
                    .into(),
            ),
            Some(t) if now_millis() - t > STALE_AFTER_MS => Some(format!(
                "The index was last updated {} and nothing watches the folders: run `linkly index` to catch up (or `linkly serve` to keep it fresh).",
                format_rfc3339(t)
            )),
            _ => None,
        }
    }
}
