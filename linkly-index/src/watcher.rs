//! Live folder watching: file-system events, debounced and coalesced, trigger an incremental
//! sync.
//!
//! A burst (a `git checkout` of thousands of files, an unzip, an editor's atomic save) settles
//! into one sync; the sync itself compares sizes, times and hashes, so renames, deletions and
//! vanished files need no special handling. Unreadable paths are skipped by the sync, never
//! stop the watcher.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, new_debouncer};

use crate::{Index, Result, SyncOptions, SyncReport};

/// How long the file system must stay quiet before a sync runs.
const DEBOUNCE: Duration = Duration::from_millis(300);

/// What the watcher reports.
#[derive(Debug, Clone)]
pub enum WatchEvent {
    /// Changes were seen; a sync is starting.
    Syncing,
    /// A sync finished.
    Synced(SyncReport),
    /// A sync failed (the watcher goes on).
    Failed(String),
}

/// A running watcher; dropping it stops watching.
pub struct Watcher {
    stop: Option<mpsc::Sender<Msg>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher").finish_non_exhaustive()
    }
}

enum Msg {
    Changed(Vec<PathBuf>),
    Stop,
}

fn relevant(path: &Path, roots: &[PathBuf], ignored: &[PathBuf]) -> bool {
    if ignored.iter().any(|i| path.starts_with(i)) {
        return false;
    }
    // Hidden files and folders below a root (editors' swap files, .git) never trigger a sync
    // on their own; a root may itself lie under a hidden folder.
    let rel = roots
        .iter()
        .find_map(|r| path.strip_prefix(r).ok())
        .unwrap_or(path);
    !rel.components()
        .filter_map(|c| c.as_os_str().to_str())
        .any(|c| c.starts_with('.') && c.len() > 1 && c != "..")
}

impl Watcher {
    /// Watches `opts.roots` recursively and syncs `index` after each burst of changes.
    /// Paths under `ignored` (the data directory, say) never trigger a sync.
    pub fn start(
        index: Arc<Index>,
        opts: SyncOptions,
        ignored: Vec<PathBuf>,
        mut on_event: impl FnMut(WatchEvent) + Send + 'static,
    ) -> Result<Watcher> {
        let (tx, rx) = mpsc::channel::<Msg>();
        let events_tx = tx.clone();
        let mut debouncer =
            new_debouncer(
                DEBOUNCE,
                None,
                move |result: DebounceEventResult| match result {
                    Ok(events) => {
                        let paths: Vec<PathBuf> =
                            events.into_iter().flat_map(|e| e.event.paths).collect();
                        let _ = events_tx.send(Msg::Changed(paths));
                    }
                    Err(errors) => {
                        for e in errors {
                            tracing::warn!(error = %e, "file watcher error");
                        }
                    }
                },
            )
            .map_err(|e| crate::Error::Io(std::io::Error::other(e.to_string())))?;
        for root in &opts.roots {
            if let Err(e) = debouncer.watch(root, RecursiveMode::Recursive) {
                tracing::warn!(root = %root.display(), error = %e, "cannot watch folder");
            }
        }
        let thread = std::thread::Builder::new()
            .name("linkly-watcher".into())
            .spawn(move || {
                // The debouncer lives as long as the thread.
                let _debouncer = debouncer;
                loop {
                    let mut dirty = false;
                    match rx.recv() {
                        Ok(Msg::Stop) | Err(_) => return,
                        Ok(Msg::Changed(paths)) => {
                            dirty |= paths.iter().any(|p| relevant(p, &opts.roots, &ignored));
                        }
                    }
                    // Coalesce whatever else arrives while the burst goes on.
                    loop {
                        match rx.recv_timeout(DEBOUNCE) {
                            Ok(Msg::Stop) => return,
                            Ok(Msg::Changed(paths)) => {
                                dirty |= paths.iter().any(|p| relevant(p, &opts.roots, &ignored));
                            }
                            Err(RecvTimeoutError::Timeout) => break,
                            Err(RecvTimeoutError::Disconnected) => return,
                        }
                    }
                    if !dirty {
                        continue;
                    }
                    on_event(WatchEvent::Syncing);
                    match index.sync(&opts, &mut |_| {}) {
                        Ok(report) => on_event(WatchEvent::Synced(report)),
                        Err(e) => on_event(WatchEvent::Failed(e.to_string())),
                    }
                }
            })?;
        Ok(Watcher {
            stop: Some(tx),
            thread: Some(thread),
        })
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(Msg::Stop);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_and_ignored_paths_do_not_trigger() {
        let ignored = vec![PathBuf::from("/data/home")];
        let roots = vec![PathBuf::from("/docs"), PathBuf::from("/tmp/.hidden/root")];
        assert!(relevant(Path::new("/docs/a.md"), &roots, &ignored));
        assert!(!relevant(Path::new("/docs/.git/index"), &roots, &ignored));
        assert!(!relevant(Path::new("/docs/.a.md.swp"), &roots, &ignored));
        assert!(!relevant(Path::new("/data/home/index/x"), &roots, &ignored));
        assert!(relevant(
            Path::new("/tmp/.hidden/root/a.md"),
            &roots,
            &ignored
        ));
    }
}
