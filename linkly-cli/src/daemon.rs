//! `linkly serve`: the always-fresh server of a data directory.
//!
//! One per data directory (a lock file refuses a second one). It binds first (so clients can
//! connect at once and see `index_status`), then runs `linkly-tools`' keep-fresh engine:
//! reconcile, watch, embed. SIGINT/SIGTERM stop it gracefully: the HTTP server drains, the port
//! file is removed, and a sync batch in flight is rolled back (the index's dirty-row protocol
//! redoes it at the next start). `linkly mcp` starts one in the background when none runs
//! (`--exit-when-unused`: it stops when its clients are gone); see `shared`.

use std::net::{IpAddr, Ipv4Addr};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::bail;
use linkly_core::DataDir;
use linkly_index::Index;
use linkly_mcp::{HttpOptions, IndexStatus, ServerState};
use linkly_tools::{FreshEvent, IndexState, KeepFreshOptions, Linkly};

use crate::args::ServeArgs;
use crate::backend::runtime;

/// A new random LAN token: 32 hex characters.
fn new_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

pub(crate) fn serve(data: &DataDir, a: ServeArgs) -> anyhow::Result<ExitCode> {
    let mut config = linkly_core::Config::load(data)?;
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
            // Started by `linkly mcp`, which lost a race to another client's server: that one
            // serves both.
            std::fs::TryLockError::WouldBlock if a.exit_when_unused.is_some() => {
                eprintln!(
                    "A server already runs for {}: leaving it the work",
                    data.root().display()
                );
                return Ok(ExitCode::SUCCESS);
            }
            std::fs::TryLockError::WouldBlock => bail!(
                "another `linkly serve` is already running for {} (lock {}); stop it first — tool commands already go to it",
                data.root().display(),
                lock_path.display()
            ),
            std::fs::TryLockError::Error(e) => return Err(e.into()),
        }
    }

    let index = Arc::new(Index::open(&data.index_dir())?);
    let linkly = Arc::new(Linkly::new(index, data.clone(), config));
    let state = ServerState::new(IndexStatus::Scanning);
    let bind = if a.lan {
        a.bind.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    } else {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    };
    let rt = runtime()?;
    // The window's live progress, fed by the keep-fresh engine below.
    let live = Arc::new(linkly_window::Live::default());
    let result = rt.block_on(async move {
        // Bind first, so clients can connect at once and see `index_status`.
        let bound = linkly_mcp::bind_http(HttpOptions {
            bind,
            lan_token: lan_token.clone(),
            port: a.port,
            port_file: Some(data.port_file()),
            live: live.clone(),
            ..HttpOptions::default()
        })
        .await?;
        eprintln!("Linkly MCP server: {}", bound.endpoint());
        eprintln!(
            "Linkly window: {}",
            bound.endpoint().trim_end_matches("/mcp").to_string() + "/"
        );
        if a.lan {
            eprintln!(
                "LAN access on {bind}:{}: clients must send `Authorization: Bearer <token>` (the token is in `linkly status`)",
                bound.port()
            );
        }
        // The keep-fresh engine: reconcile, watch, embed (fetching the model when allowed).
        let engine_state = state.clone();
        let announced = AtomicBool::new(false);
        let engine = linkly
            .keep_fresh(
                KeepFreshOptions {
                    watch: !a.no_watch,
                    fetch_model: !a.no_model_download,
                },
                move |event| {
                    live.record(event);
                    report(&engine_state, &announced, event)
                },
            )
            .map_err(|e| anyhow::anyhow!("{}", e.message))?;
        let stop = stop_when(state.clone(), data.root().to_path_buf(), a.exit_when_unused);
        let served = linkly_mcp::serve_http(bound, linkly, state, stop).await;
        drop(engine);
        served
    });
    drop(lock);
    result?;
    Ok(ExitCode::SUCCESS)
}

/// Shows what the engine does: start-up sync and failures on stderr, the rest in the log, and
/// the index state in `/health`.
fn report(state: &ServerState, announced: &AtomicBool, event: &FreshEvent) {
    match event {
        FreshEvent::State(s) => state.set(match s {
            IndexState::Scanning => IndexStatus::Scanning,
            IndexState::Indexing => IndexStatus::Indexing,
            IndexState::Watching => IndexStatus::Watching,
            IndexState::Idle => IndexStatus::Idle,
            IndexState::Rebuilding => IndexStatus::Rebuilding,
            IndexState::Error => IndexStatus::Error,
        }),
        FreshEvent::Synced { report: r, full } => {
            if *full {
                eprintln!(
                    "Indexed {} files: {} new, {} changed, {} removed",
                    r.seen, r.added, r.updated, r.removed
                );
            } else if r.added + r.updated + r.removed > 0 {
                tracing::info!(
                    added = r.added,
                    updated = r.updated,
                    removed = r.removed,
                    elapsed_ms = r.elapsed_ms,
                    "changes indexed"
                );
            }
        }
        FreshEvent::Downloading { model, .. } if !announced.swap(true, Ordering::SeqCst) => {
            eprintln!(
                "Fetching the embedding model {model} from the Hugging Face hub in the background (search is keyword-only until it is there; `--no-model-download` turns this off)"
            );
        }
        FreshEvent::Embedded(r) if r.docs > 0 => eprintln!(
            "Embedded {} documents ({} chunks) in {:.1}s",
            r.docs,
            r.chunks,
            r.elapsed_ms as f64 / 1000.0
        ),
        FreshEvent::Failed(m) => eprintln!("Error: {m}"),
        _ => {}
    }
}

/// Resolves on SIGINT/SIGTERM; with `unused`, also after that many seconds without a request,
/// or when the data directory is gone (a server that `linkly mcp` started for its clients).
async fn stop_when(state: Arc<ServerState>, root: std::path::PathBuf, unused: Option<u64>) {
    let idle = async move {
        let Some(secs) = unused else {
            return std::future::pending::<()>().await;
        };
        let limit = Duration::from_secs(secs);
        loop {
            tokio::time::sleep(Duration::from_secs(1).min(limit)).await;
            if state.unused_for() >= limit {
                eprintln!("No client for {secs}s: stopping");
                return;
            }
            if !root.exists() {
                eprintln!("The data directory is gone: stopping");
                return;
            }
        }
    };
    tokio::select! {
        () = shutdown_signal() => {},
        () = idle => {},
    }
}

/// Resolves on SIGINT or SIGTERM (also how `linkly gateway serve` stops).
pub(crate) async fn shutdown_signal() {
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
