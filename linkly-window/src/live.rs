//! What the keep-fresh engine is doing now, as the window's progress bar shows it: the server
//! hands every [`FreshEvent`] to [`Live::record`], and `/api/status` reads it back.

use std::sync::Mutex;

use linkly_tools::FreshEvent;
use serde::Serialize;

/// The engine's latest progress.
#[derive(Debug, Default)]
pub struct Live {
    inner: Mutex<Snapshot>,
}

/// A copy of [`Live`] at one moment.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Snapshot {
    /// The phase of the sync under way (`scanning`, `indexing`, …), if one runs.
    pub phase: Option<String>,
    /// Items done in that phase.
    pub done: u64,
    /// Items in that phase.
    pub total: u64,
    /// Embedding: documents done and in all, while a run goes on.
    pub embedding: Option<(u64, u64)>,
    /// The model download: bytes done and in all, while it goes on.
    pub download: Option<(u64, u64)>,
    /// The last failure the engine reported.
    pub failure: Option<String>,
    /// What the last sync did: files added, changed, removed.
    pub last_sync: Option<(u64, u64, u64)>,
}

impl Live {
    /// Records an event of the engine.
    pub fn record(&self, event: &FreshEvent) {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            FreshEvent::Sync(p) => {
                s.phase = Some(format!("{:?}", p.phase).to_ascii_lowercase());
                s.done = p.done;
                s.total = p.total;
            }
            FreshEvent::Synced { report, .. } => {
                s.phase = None;
                s.last_sync = Some((report.added, report.updated, report.removed));
            }
            FreshEvent::Embedding(p) => {
                s.embedding = Some((p.done, p.total));
            }
            FreshEvent::Embedded(_) => s.embedding = None,
            FreshEvent::Downloading { done, total, .. } => {
                s.download = (done < total || *total == 0).then_some((*done, *total));
            }
            FreshEvent::Failed(m) => s.failure = Some(m.clone()),
            FreshEvent::State(_) | FreshEvent::Model(_) => {}
        }
    }

    /// The latest progress.
    pub fn snapshot(&self) -> Snapshot {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
