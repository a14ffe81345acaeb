//! Streamable HTTP at `/mcp`, `GET /health`, and the port file.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::routing::get;
use linkly_tools::Linkly;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;

use crate::LinklyServer;

/// What the index is doing, as `/health` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexStatus {
    /// Up to date and following changes.
    Watching,
    /// Walking the folders.
    Scanning,
    /// Indexing changed files.
    Indexing,
    /// Up to date, not following changes.
    Idle,
    /// The last sync failed.
    Error,
}

impl IndexStatus {
    /// The token of `/health`.
    pub fn as_str(self) -> &'static str {
        match self {
            IndexStatus::Watching => "watching",
            IndexStatus::Scanning => "scanning",
            IndexStatus::Indexing => "indexing",
            IndexStatus::Idle => "idle",
            IndexStatus::Error => "error",
        }
    }
}

/// State shared between the server and whoever keeps the index fresh.
#[derive(Debug)]
pub struct ServerState {
    status: Mutex<IndexStatus>,
}

impl ServerState {
    /// A state with an initial status.
    pub fn new(status: IndexStatus) -> Arc<ServerState> {
        Arc::new(ServerState {
            status: Mutex::new(status),
        })
    }

    /// Sets the status.
    pub fn set(&self, status: IndexStatus) {
        *self.status.lock().unwrap_or_else(|e| e.into_inner()) = status;
    }

    /// The status.
    pub fn get(&self) -> IndexStatus {
        *self.status.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Where and how to serve.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The first port to try; the next ones are tried while it is busy.
    pub port: u16,
    /// How many ports to try.
    pub port_attempts: u16,
    /// Where to write `{"port": N}` (removed at shutdown).
    pub port_file: Option<PathBuf>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            port: 60606,
            port_attempts: 20,
            port_file: None,
        }
    }
}

#[derive(Clone)]
struct AppState {
    linkly: Arc<Linkly>,
    state: Arc<ServerState>,
    endpoint: String,
}

async fn health(State(app): State<AppState>) -> Json<serde_json::Value> {
    let linkly = app.linkly.clone();
    let count = tokio::task::spawn_blocking(move || linkly.index().doc_count().unwrap_or(0))
        .await
        .unwrap_or(0);
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "doc_count": count,
        "mcp_endpoint": app.endpoint,
        "index_status": app.state.get().as_str(),
    }))
}

/// A listening socket on 127.0.0.1, ready to serve.
#[derive(Debug)]
pub struct BoundHttp {
    listener: tokio::net::TcpListener,
    port: u16,
    opts: HttpOptions,
}

impl BoundHttp {
    /// The port bound.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The MCP endpoint URL.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

/// Binds 127.0.0.1 on the first free port from `opts.port` on.
pub async fn bind_http(opts: HttpOptions) -> anyhow::Result<BoundHttp> {
    let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut last_err = None;
    for offset in 0..opts.port_attempts.max(1) {
        let Some(port) = opts.port.checked_add(offset) else {
            break;
        };
        match tokio::net::TcpListener::bind(SocketAddr::new(ip, port)).await {
            Ok(listener) => {
                let port = listener.local_addr()?.port();
                return Ok(BoundHttp {
                    listener,
                    port,
                    opts,
                });
            }
            Err(e) => {
                tracing::info!(port, error = %e, "port busy, trying the next one");
                last_err = Some(e);
            }
        }
    }
    Err(anyhow::anyhow!(
        "no free port from {} on ({} tried): {}",
        opts.port,
        opts.port_attempts,
        last_err.map(|e| e.to_string()).unwrap_or_default()
    ))
}

/// Serves `/mcp` and `/health` until `shutdown` resolves; writes the port file first and
/// removes it on the way out. Browser requests whose `Origin` is not local are refused
/// (DNS-rebinding protection).
pub async fn serve_http(
    bound: BoundHttp,
    linkly: Arc<Linkly>,
    state: Arc<ServerState>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let endpoint = bound.endpoint();
    let BoundHttp {
        listener,
        port,
        opts,
    } = bound;
    let config = StreamableHttpServerConfig::default()
        .with_allowed_origins([
            "http://localhost:*",
            "http://127.0.0.1:*",
            "http://[::1]:*",
            "https://localhost:*",
            "https://127.0.0.1:*",
        ])
        .enforce_origin_validation();
    let server = LinklyServer::new(linkly.clone());
    let mcp = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let app = Router::new()
        .route("/health", get(health))
        .with_state(AppState {
            linkly,
            state,
            endpoint: endpoint.clone(),
        })
        .nest_service("/mcp", mcp);

    if let Some(file) = &opts.port_file {
        if let Some(dir) = file.parent() {
            fs_err::create_dir_all(dir)?;
        }
        fs_err::write(file, json!({ "port": port }).to_string())?;
    }
    tracing::info!(%endpoint, "serving MCP over Streamable HTTP");
    let result = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await;
    if let Some(file) = &opts.port_file {
        let _ = fs_err::remove_file(file);
    }
    result.context("HTTP server failed")
}
