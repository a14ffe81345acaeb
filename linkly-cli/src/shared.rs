//! `linkly mcp`: a stdio server that keeps the index fresh by itself.
//!
//! MCP clients start `linkly mcp` and nothing else, often several at once (a desktop app and a
//! coding agent) on one data directory. So `linkly mcp` shares the data directory's server:
//! the one running (`linkly serve`, or one an earlier `linkly mcp` started), else it starts
//! `linkly serve --exit-when-unused` in the background, detached, and bridges stdio to it.
//! All writes (sync, watcher, embeddings, notes) happen in that one process: no lock errors, no
//! double indexing. The server lives while a client pings it and stops a few minutes after the
//! last one; a client whose server died (killed, say) starts a new one and reconnects on its
//! next call. `linkly mcp --embedded` serves from the process itself instead.

use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use linkly_core::DataDir;
use linkly_mcp::{Connector, RemoteClient, RemoteError};
use linkly_tools::{KeepFreshOptions, Linkly};

use crate::args::McpArgs;
use crate::backend::{self, runtime};
use crate::health::{Target, read_port_file};

/// How long a server started by `linkly mcp` lives without any request (`LINKLY_MCP_IDLE_SECS`).
const DEFAULT_IDLE_SECS: u64 = 300;
/// How often a client pings its server (well within the idle time).
const KEEPALIVE: Duration = Duration::from_secs(20);
/// How long a client waits for a server it started to answer.
const START_TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) fn mcp(data: &DataDir, args: McpArgs) -> anyhow::Result<ExitCode> {
    let conn = backend::connection();
    if let Some(url) = args.remote {
        return remote(data, &url, conn.token);
    }
    if let Some(endpoint) = conn.endpoint {
        // Bridge: stdio in, the remote server's tools out.
        let target = Target::parse(&endpoint, conn.token)?;
        runtime()?.block_on(linkly_mcp::serve_stdio_bridge(
            &target.mcp_url(),
            target.token.as_deref(),
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.embedded {
        return embedded(data);
    }
    // Start (or find) the server before the client's first request, so that the folders are
    // being reconciled while the client initialises.
    if let Err(e) = ensure_server(data) {
        tracing::warn!(error = %e, "no shared server; serving from this process");
        return embedded(data);
    }
    keepalive(data.clone());
    let for_connector = data.clone();
    let connect: Connector = Arc::new(move || {
        let data = for_connector.clone();
        Box::pin(async move {
            let target = tokio::task::spawn_blocking(move || ensure_server(&data))
                .await
                .map_err(|e| RemoteError::Protocol(e.to_string()))?
                .map_err(|e| RemoteError::Connect {
                    url: "(the data directory's server)".into(),
                    message: format!("{e:#}"),
                })?;
            RemoteClient::connect(&target.mcp_url(), None).await
        })
    });
    runtime()?.block_on(linkly_mcp::serve_stdio_bridge_with(connect))?;
    Ok(ExitCode::SUCCESS)
}

/// `linkly mcp --remote URL --token T`: the local tools served from this process (as
/// `--embedded`: its own keep-fresh engine keeps the index fresh, and fails quietly, leaving
/// the tools answering, while another process writes it), the cloud ones forwarded to the
/// gateway.
fn remote(data: &DataDir, url: &str, token: Option<String>) -> anyhow::Result<ExitCode> {
    let token = crate::publish::gateway_token(token)?;
    let (linkly, engine) = open_fresh(data)?;
    let router = linkly_gateway::remote::RemoteRouter::new(linkly, url, &token);
    runtime()?.block_on(async move {
        // A refused token is a mistake to show now; an unreachable gateway may come back (the
        // local tools answer meanwhile).
        match router.check().await {
            Err(e @ linkly_gateway::GatewayError::Unauthorized(_)) => return Err(e),
            Err(e) => tracing::warn!(error = %e, "the gateway does not answer yet"),
            Ok(()) => {}
        }
        linkly_gateway::remote::serve_stdio_remote(router).await
    })?;
    drop(engine);
    Ok(ExitCode::SUCCESS)
}

/// The data directory's tools with this process's own keep-fresh engine, which fails quietly
/// (leaving the tools answering) while another process writes the index.
fn open_fresh(data: &DataDir) -> anyhow::Result<(Arc<Linkly>, linkly_tools::KeepFresh)> {
    let linkly =
        Arc::new(Linkly::open(data.clone()).map_err(|e| anyhow::anyhow!("{}", e.message))?);
    let engine = linkly
        .keep_fresh(
            KeepFreshOptions {
                watch: true,
                fetch_model: false,
            },
            |event| {
                if let linkly_tools::FreshEvent::Failed(m) = event {
                    tracing::warn!("{m}");
                }
            },
        )
        .map_err(|e| anyhow::anyhow!("{}", e.message))?;
    Ok((linkly, engine))
}

/// Serves from this process, with its own keep-fresh engine (which fails quietly, leaving the
/// tools answering, when another process writes the index).
fn embedded(data: &DataDir) -> anyhow::Result<ExitCode> {
    let (linkly, engine) = open_fresh(data)?;
    runtime()?.block_on(linkly_mcp::serve_stdio(linkly))?;
    drop(engine);
    Ok(ExitCode::SUCCESS)
}

/// The running server of the data directory, if its port file answers `/health`.
fn running(data: &DataDir) -> Option<Target> {
    let port = read_port_file(&data.port_file()).ok().flatten()?;
    let target = Target::local(port);
    target
        .health(Duration::from_millis(1500))
        .ok()
        .filter(|(status, _, _)| (200..300).contains(status))
        .map(|_| target)
}

/// The data directory's server: the running one, else one started now in the background.
/// Two clients starting at once both end up with the same server: the second `serve` finds
/// the first one's lock and exits, and both wait for the port file of the winner.
pub(crate) fn ensure_server(data: &DataDir) -> anyhow::Result<Target> {
    if let Some(t) = running(data) {
        return Ok(t);
    }
    data.ensure()?;
    let exe = std::env::current_exe().context("cannot find the linkly executable")?;
    let log_path = data.root().join("serve.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("cannot open {}", log_path.display()))?;
    let idle = std::env::var("LINKLY_MCP_IDLE_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_IDLE_SECS);
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("--home")
        .arg(data.root())
        .args(["serve", "--exit-when-unused", &idle.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log));
    // Its own process group: a client that kills its process group does not stop the server
    // other clients share.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn().context("cannot start `linkly serve`")?;
    let started = Instant::now();
    let mut exited = None;
    loop {
        if let Some(t) = running(data) {
            // Reap it when it stops (it outlives this process otherwise; init reaps it then).
            if exited.is_none() {
                std::thread::spawn(move || {
                    let _ = child.wait();
                });
            }
            // A server just started loads the embedding model (when on disk) before anything
            // else: the client's first searches are then hybrid. A fraction of a second.
            while started.elapsed() < START_TIMEOUT
                && t.health_json(Duration::from_secs(2))
                    .is_ok_and(|h| h.index_status == linkly_mcp::IndexStatus::Scanning)
            {
                std::thread::sleep(Duration::from_millis(25));
            }
            return Ok(t);
        }
        if exited.is_none()
            && let Ok(Some(status)) = child.try_wait()
        {
            // Lost the race for the lock to another client's server, or failed: keep waiting
            // a little for the winner's port file.
            exited = Some(status);
        }
        if started.elapsed() > START_TIMEOUT
            || exited.is_some() && started.elapsed() > Duration::from_secs(5)
        {
            bail!(
                "`linkly serve` did not start (see {}){}",
                log_path.display(),
                exited
                    .map(|s| format!("; it exited with {s}"))
                    .unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Pings the server while this client lives, so that a server started for clients stops only
/// when they are all gone.
fn keepalive(data: DataDir) {
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(KEEPALIVE);
            if let Some(port) = read_port_file(&data.port_file()).ok().flatten() {
                let _ = Target::local(port).health(Duration::from_secs(5));
            }
        }
    });
}
