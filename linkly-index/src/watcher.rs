//! Live folder watching: file-system events, debounced and coalesced, trigger a sync of the
//! paths they name.
//!
//! A burst (a `git checkout` of thousands of files, an unzip, an editor's atomic save) settles
//! into one scoped sync ([`Index::sync_paths`]) of the files and folders it named: never a
//! walk of every root. The sync compares sizes, times and hashes, so renames (both names are
//! in the events), deletions and vanished files need no special handling. When the kernel's
//! queue overflowed (events were lost), the watcher falls back to a full sync. Unreadable paths
//! are skipped by the sync, never stop the watcher.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, RecommendedCache, new_debouncer_opt};

use crate::{Index, Result, SyncOptions, SyncReport};

/// How long the file system must stay quiet before the debouncer hands over events.
const DEBOUNCE: Duration = Duration::from_millis(100);
/// How long the watcher waits for more batches of a burst before it syncs.
const COALESCE: Duration = Duration::from_millis(50);

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
    /// Events were lost (queue overflow, watcher error): only a full sync is safe.
    Rescan,
    Stop,
}

fn relevant(path: &Path, roots: &[PathBuf], ignored: &[PathBuf]) -> bool {
    // The innermost watched folder holding the path.
    let Some(root) = roots
        .iter()
        .filter(|r| path.starts_with(r))
        .max_by_key(|r| r.as_os_str().len())
    else {
        return false;
    };
    // An ignored folder (the data directory) is left out, except for a watched folder inside
    // it (the notes folder).
    if ignored
        .iter()
        .any(|i| path.starts_with(i) && !root.starts_with(i))
    {
        return false;
    }
    // Hidden files and folders below a root (editors' swap files, .git) never trigger a sync
    // on their own; a root may itself lie under a hidden folder.
    let rel = path.strip_prefix(root).unwrap_or(path);
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
        // notify follows symlinked folders by default (and watches their targets): not unless
        // the setting says so.
        let notify_config = notify::Config::default().with_follow_symlinks(opts.follow_symlinks);
        let mut debouncer = new_debouncer_opt::<_, notify::RecommendedWatcher, RecommendedCache>(
            DEBOUNCE,
            None,
            move |result: DebounceEventResult| match result {
                Ok(events) => {
                    if events.iter().any(|e| e.event.need_rescan()) {
                        let _ = events_tx.send(Msg::Rescan);
                    }
                    // Reads (our own walks open folders and files) change nothing: left
                    // out, or every sync would trigger the next one.
                    let paths: Vec<PathBuf> = events
                        .into_iter()
                        .filter(|e| !matches!(e.event.kind, notify::EventKind::Access(_)))
                        .flat_map(|e| e.event.paths)
                        .collect();
                    if paths.is_empty() {
                        return;
                    }
                    let _ = events_tx.send(Msg::Changed(paths));
                }
                Err(errors) => {
                    for e in errors {
                        tracing::warn!(error = %e, "file watcher error; a full sync follows");
                    }
                    let _ = events_tx.send(Msg::Rescan);
                }
            },
            RecommendedCache::new(),
            notify_config,
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
                    let mut changed: Vec<PathBuf> = Vec::new();
                    let mut rescan = false;
                    let mut take = |msg: Msg, changed: &mut Vec<PathBuf>| match msg {
                        Msg::Changed(paths) => {
                            changed.extend(
                                paths
                                    .into_iter()
                                    .filter(|p| relevant(p, &opts.roots, &ignored)),
                            );
                            true
                        }
                        Msg::Rescan => {
                            rescan = true;
                            true
                        }
                        Msg::Stop => false,
                    };
                    match rx.recv() {
                        Ok(msg) => {
                            if !take(msg, &mut changed) {
                                return;
                            }
                        }
                        Err(_) => return,
                    }
                    // Coalesce whatever else arrives while the burst goes on.
                    loop {
                        match rx.recv_timeout(COALESCE) {
                            Ok(msg) => {
                                if !take(msg, &mut changed) {
                                    return;
                                }
                            }
                            Err(RecvTimeoutError::Timeout) => break,
                            Err(RecvTimeoutError::Disconnected) => return,
                        }
                    }
                    if !rescan && changed.is_empty() {
                        continue;
                    }
                    tracing::debug!(paths = changed.len(), rescan, first = ?changed.first(), "watcher burst");
                    on_event(WatchEvent::Syncing);
                    let result = if rescan {
                        index.sync(&opts, &mut |_| {})
                    } else {
                        index.sync_paths(&opts, &changed)
                    };
                    match result {
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
        // A watched folder inside an ignored one (the notes folder in the data directory).
        let roots = vec![
            PathBuf::from("/home"),
            PathBuf::from("/home/me/.linkly/notes"),
        ];
        let ignored = vec![PathBuf::from("/home/me/.linkly")];
        assert!(relevant(
            Path::new("/home/me/.linkly/notes/n.md"),
            &roots,
            &ignored
        ));
        assert!(!relevant(
            Path::new("/home/me/.linkly/index/x"),
            &roots,
            &ignored
        ));
        assert!(!relevant(Path::new("/elsewhere/a.md"), &roots, &ignored));
    }
}
