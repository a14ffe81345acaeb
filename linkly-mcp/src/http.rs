//! Streamable HTTP at `/mcp`, `GET /health`, and the port file.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    /// When the last HTTP request arrived.
    last_request: Mutex<Instant>,
}

impl ServerState {
    /// A state with an initial status.
    pub fn new(status: IndexStatus) -> Arc<ServerState> {
        Arc::new(ServerState {
            status: Mutex::new(status),
            last_request: Mutex::new(Instant::now()),
        })
    }

    /// How long since the last request (of any kind, `/health` included).
    pub fn unused_for(&self) -> Duration {
        self.last_request
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
    }

    fn touch(&self) {
        *self.last_request.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
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
#[derive(Clone)]
pub struct HttpOptions {
    /// The address to bind: loopback by default; anything else requires `lan_token`.
    pub bind: IpAddr,
    /// The bearer token non-local clients must send (LAN mode).
    pub lan_token: Option<String>,
    /// The first port to try; the next ones are tried while it is busy.
    pub port: u16,
    /// How many ports to try.
    pub port_attempts: u16,
    /// Where to write `{"port": N}` (removed at shutdown).
    pub port_file: Option<PathBuf>,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("bind", &self.bind)
            .field("lan_token", &self.lan_token.as_ref().map(|_| "<set>"))
            .field("port", &self.port)
            .field("port_attempts", &self.port_attempts)
            .field("port_file", &self.port_file)
            .finish()
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            lan_token: None,
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
    let (count, coverage) = tokio::task::spawn_blocking(move || {
        (
            linkly.index().doc_count().unwrap_or(0),
            linkly.coverage().ok(),
        )
    })
    .await
    .unwrap_or((0, None));
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "doc_count": count,
        "mcp_endpoint": app.endpoint,
        "index_status": app.state.get().as_str(),
        "coverage": coverage,
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

/// Binds `opts.bind` (127.0.0.1 by default) on the first free port from `opts.port` on.
pub async fn bind_http(opts: HttpOptions) -> anyhow::Result<BoundHttp> {
    let ip = opts.bind;
    if !ip.is_loopback() && opts.lan_token.as_deref().is_none_or(str::is_empty) {
        anyhow::bail!("binding {ip} (beyond loopback) requires a bearer token");
    }
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
    let lan_token = opts.lan_token.clone().filter(|_| !opts.bind.is_loopback());
    let mut config = StreamableHttpServerConfig::default();
    if lan_token.is_some() {
        // LAN clients name the machine by its address; the token protects instead.
        config = config.disable_allowed_hosts();
    }
    let config = config
        .with_allowed_origins([
            "http://localhost:*",
            "http://127.0.0.1:*",
            "http://[::1]:*",
            "https://localhost:*",
            "https://127.0.0.1:*",
        ])
        .enforce_origin_validation();
    let activity = state.clone();
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
        .nest_service("/mcp", mcp)
        .layer(axum::middleware::from_fn(move |req, next| {
            let token = lan_token.clone();
            require_token(token, req, next)
        }))
        .layer(axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                activity.touch();
                next.run(req)
            },
        ));

    if let Some(file) = &opts.port_file {
        if let Some(dir) = file.parent() {
            fs_err::create_dir_all(dir)?;
        }
        fs_err::write(
            file,
            json!({ "port": port, "pid": std::process::id() }).to_string(),
        )?;
    }
    tracing::info!(%endpoint, "serving MCP over Streamable HTTP");
    let result = axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await;
    if let Some(file) = &opts.port_file {
        let _ = fs_err::remove_file(file);
    }
    result.context("HTTP server failed")
}

/// True for the addresses local clients connect from (`127.0.0.1`, `::1`).
fn is_local_peer(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4 == Ipv4Addr::LOCALHOST,
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped() == Some(Ipv4Addr::LOCALHOST),
    }
}

/// In LAN mode, every request from a non-local peer must carry `Authorization: Bearer <token>`.
async fn require_token(
    token: Option<String>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let Some(token) = token else {
        return next.run(req).await;
    };
    let peer = req
        .extensions()
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    if peer.is_some_and(is_local_peer) {
        return next.run(req).await;
    }
    let presented = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    if presented.is_some_and(|p| constant_time_eq(p.as_bytes(), token.as_bytes())) {
        return next.run(req).await;
    }
    (
        axum::http::StatusCode::UNAUTHORIZED,
        [(axum::http::header::WWW_AUTHENTICATE, "Bearer")],
        "missing or wrong bearer token: LAN clients must send Authorization: Bearer <token> (see `linkly status` on the server)",
    )
        .into_response()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_peers_and_token_comparison() {
        assert!(is_local_peer("127.0.0.1".parse().unwrap()));
        assert!(is_local_peer("::1".parse().unwrap()));
        assert!(!is_local_peer("127.0.0.2".parse().unwrap()));
        assert!(!is_local_peer("192.168.1.5".parse().unwrap()));
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
