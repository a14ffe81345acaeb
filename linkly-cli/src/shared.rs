//! `linkly mcp`: a stdio server that keeps the index fresh by itself.
//!
//! MCP clients start `linkly mcp` and nothing else, often several at once (a desktop app and a
//! coding agent) on one data directory. So `linkly mcp` shares the data directory's server:
//! the one running (`linkly serve`, or one an earlier `linkly mcp` started), else it starts
//! `linkly serve --exit-when-unused` in the background, detached, and bridges stdio to it.
//! All writes (sync, watcher, embeddings, notes) happen in that one process: no lock errors, no
//! double indexing. The server lives while a client pings it and stops a few minutes after the
//! last one; a client whose server died (killed, say) starts a new one and reconnects on its
//! next call, and one whose background server handed over to a server started by hand
//! reconnects to that one (`daemon`). `linkly mcp --embedded` serves from the process itself
//! instead.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use linkly_core::DataDir;
use linkly_mcp::{Connector, RemoteClient, RemoteError};
use linkly_tools::{KeepFreshOptions, Linkly};

use crate::args::McpArgs;
use crate::backend::{self, runtime};
use crate::daemon::ensure_server;
use crate::health::{Target, read_port_file};

/// How often a client pings its server (well within the idle time).
const KEEPALIVE: Duration = Duration::from_secs(20);

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
            // The server's per-start secret (from its 0600 port file), as a bearer token.
            RemoteClient::connect(&target.mcp_url(), target.token.as_deref()).await
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
    let router = linkly_gateway::client::remote::RemoteRouter::new(linkly, url, &token);
    runtime()?.block_on(async move {
        // A refused token is a mistake to show now; an unreachable gateway may come back (the
        // local tools answer meanwhile).
        match router.check().await {
            Err(e @ linkly_gateway::GatewayError::Unauthorized(_)) => return Err(e),
            Err(e) => tracing::warn!(error = %e, "the gateway does not answer yet"),
            Ok(()) => {}
        }
        linkly_gateway::client::remote::serve_stdio_remote(router).await
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
