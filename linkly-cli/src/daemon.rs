//! `linkly serve`: the always-fresh background server.
//!
//! One per data directory (a lock file refuses a second one). It binds first (so clients can
//! connect at once and see `index_status`), reconciles the watched folders with the index (what
//! changed while it was down), then follows changes live. SIGINT/SIGTERM stop it gracefully:
//! the HTTP server drains, the port file is removed, and a sync batch in flight is rolled back
//! (the index's dirty-row protocol redoes it at the next start).

use std::net::{IpAddr, Ipv4Addr};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::bail;
use linkly_core::DataDir;
use linkly_index::{Index, WatchEvent, Watcher};
use linkly_mcp::{HttpOptions, IndexStatus, ServerState};
use linkly_tools::Linkly;

use crate::args::ServeArgs;
use crate::commands::{load_config, run_sync, runtime, sync_options};

/// A new random LAN token: 32 hex characters.
fn new_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

pub(crate) fn serve(data: &DataDir, a: ServeArgs) -> anyhow::Result<ExitCode> {
    let mut config = load_config(data)?;
    let mut changed = false;
    for p in &a.paths {
        changed |= config.add_folder(p)?;
    }
    let lan_token = if a.lan {
        if config.lan_token.as_deref().is_none_or(str::is_empty) {
            config.lan_token = Some(new_token());
            changed = true;
        }
        config.lan_token.clone()
    } else {
        None
    };
    data.ensure()?;
    if changed {
        config.save(data)?;
    }

    // Single writer: one server per data directory.
    let lock_path = data.root().join("serve.lock");
    let lock = fs_err::File::create(&lock_path)?;
    if let Err(e) = lock.file().try_lock() {
        match e {
            std::fs::TryLockError::WouldBlock => bail!(
                "another `linkly serve` is already running for {} (lock {}); stop it first — tool commands already go to it",
                data.root().display(),
                lock_path.display()
            ),
            std::fs::TryLockError::Error(e) => return Err(e.into()),
        }
    }

    let index = Arc::new(Index::open(&data.index_dir())?);
    let linkly = Arc::new(Linkly::new(index.clone(), data.clone(), config.clone()));
    let state = ServerState::new(IndexStatus::Scanning);
    let bind = if a.lan {
        a.bind.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    } else {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    };
    let watcher: Arc<Mutex<Option<Watcher>>> = Arc::new(Mutex::new(None));
    let rt = runtime()?;
    let result = rt.block_on({
        let watcher = watcher.clone();
        async move {
            let bound = linkly_mcp::bind_http(HttpOptions {
                bind,
                lan_token: lan_token.clone(),
                port: a.port,
                port_file: Some(data.port_file()),
                ..HttpOptions::default()
            })
            .await?;
            eprintln!("Linkly MCP server: {}", bound.endpoint());
            if a.lan {
                eprintln!(
                    "LAN access on {bind}:{}: clients must send `Authorization: Bearer <token>` (the token is in `linkly status`)",
                    bound.port()
                );
            }
            let sync_state = state.clone();
            let watch = !a.no_watch;
            let data = data.clone();
            let data_root = data.root().to_path_buf();
            std::thread::spawn(move || {
                sync_state.set(IndexStatus::Indexing);
                let roots = sync_options(&data, &config).roots;
                if !roots.is_empty() {
                    match run_sync(&index, &data, &config) {
                        Ok(r) => eprintln!(
                            "Indexed {} files: {} new, {} changed, {} removed",
                            r.seen, r.added, r.updated, r.removed
                        ),
                        Err(e) => {
                            eprintln!("Error: indexing failed: {e}");
                            sync_state.set(IndexStatus::Error);
                            return;
                        }
                    }
                }
                // Embeddings (and the model download, when needed) follow in the background;
                // keyword search answers meanwhile.
                {
                    let index = index.clone();
                    let data = data.clone();
                    std::thread::spawn(move || crate::model::background(&index, &data));
                }
                if !watch || roots.is_empty() {
                    sync_state.set(IndexStatus::Idle);
                    return;
                }
                let events_state = sync_state.clone();
                let started = Watcher::start(
                    index.clone(),
                    sync_options(&data, &config),
                    vec![data_root],
                    move |event| match event {
                        WatchEvent::Syncing => events_state.set(IndexStatus::Indexing),
                        WatchEvent::Synced(r) => {
                            if r.added + r.updated + r.removed > 0 {
                                tracing::info!(
                                    added = r.added,
                                    updated = r.updated,
                                    removed = r.removed,
                                    "changes indexed"
                                );
                            }
                            events_state.set(IndexStatus::Watching);
                        }
                        WatchEvent::Failed(e) => {
                            eprintln!("Error: re-indexing failed: {e}");
                            events_state.set(IndexStatus::Error);
                        }
                    },
                );
                match started {
                    Ok(w) => {
                        *watcher.lock().unwrap_or_else(|e| e.into_inner()) = Some(w);
                        // A change that landed between the sync and the watch is caught by
                        // one more (cheap) sync.
                        let _ = run_sync(&index, &data, &config);
                        sync_state.set(IndexStatus::Watching);
                    }
                    Err(e) => {
                        eprintln!("Error: cannot watch the folders: {e}");
                        sync_state.set(IndexStatus::Idle);
                    }
                }
            });
            linkly_mcp::serve_http(bound, linkly, state, shutdown_signal()).await
        }
    });
    // Stop watching before the process exits.
    drop(watcher.lock().unwrap_or_else(|e| e.into_inner()).take());
    drop(lock);
    result?;
    Ok(ExitCode::SUCCESS)
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    eprintln!("Shutting down");
}
