//! Streamable HTTP at `/mcp`, `GET /health`, the window at `/` (`linkly-window`), and the port
//! file.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use linkly_tools::Linkly;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::LinklyServer;
use crate::conn::ConnLimits;
use crate::guard::McpLimits;
use crate::health::{
    CONTROL_HEADER, Health, IndexStatus, PortFile, ServerInfo, StartedBy, StopRequest,
};
use crate::inbound::MAX_MESSAGE_BYTES;

/// State shared between the server and whoever keeps the index fresh.
#[derive(Debug)]
pub struct ServerState {
    status: Mutex<IndexStatus>,
    /// When the last HTTP request arrived.
    last_request: Mutex<Instant>,
    /// The serving process, for `/health`.
    info: Mutex<Option<ServerInfo>>,
    /// A stop asked by `POST /control/stop`.
    stop: tokio::sync::watch::Sender<Option<StopRequest>>,
}

impl ServerState {
    /// A state with an initial status.
    pub fn new(status: IndexStatus) -> Arc<ServerState> {
        Arc::new(ServerState {
            status: Mutex::new(status),
            last_request: Mutex::new(Instant::now()),
            info: Mutex::new(None),
            stop: tokio::sync::watch::Sender::new(None),
        })
    }

    /// Describes the serving process in `/health`.
    pub fn set_info(&self, info: ServerInfo) {
        *self.info.lock().unwrap_or_else(|e| e.into_inner()) = Some(info);
    }

    /// The serving process, as `/health` describes it.
    pub fn info(&self) -> Option<ServerInfo> {
        self.info.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Asks the server to stop (what `POST /control/stop` does).
    pub fn request_stop(&self, request: StopRequest) {
        self.stop.send_replace(Some(request));
    }

    /// Resolves once a stop is asked, with the request.
    pub async fn stop_requested(&self) -> StopRequest {
        let mut rx = self.stop.subscribe();
        loop {
            if let Some(r) = rx.borrow_and_update().clone() {
                return r;
            }
            if rx.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
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
    /// Where to write the [`PortFile`] (`{"port", "pid"}`; removed at shutdown).
    pub port_file: Option<PathBuf>,
    /// An MCP session without a request for this long is closed (its client starts a new one
    /// on its next call). Default: 10 minutes.
    pub session_idle_timeout: Duration,
    /// Open MCP sessions at most: beyond, `initialize` is answered 503. Default: 512 (about
    /// 50 KB each).
    pub max_sessions: usize,
    /// Open connections at most: beyond, the oldest idle one is closed to make room (503 when
    /// all are busy). Default: 128, well under the 256 file descriptors macOS allows a process.
    pub max_connections: usize,
    /// The time a client gets to send a request's headers, and the longest a keep-alive
    /// connection stays idle. Default: 10 seconds.
    pub header_read_timeout: Duration,
    /// The largest request body: 413 beyond. Default: 16 MiB (a 10 MiB note, escaped, fits).
    pub max_body_bytes: usize,
    /// Where the keep-fresh engine reports progress for the window (the app at `/`).
    pub live: Arc<linkly_window::Live>,
    /// With a token, `POST /control/stop` stops the server when its `Linkly-Control` header
    /// carries it (written to the port file, so `linkly stop` and a server taking over can
    /// read it; 404 without one).
    pub control_token: Option<String>,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("bind", &self.bind)
            .field("lan_token", &self.lan_token.as_ref().map(|_| "<set>"))
            .field("port", &self.port)
            .field("port_attempts", &self.port_attempts)
            .field("port_file", &self.port_file)
            .field("session_idle_timeout", &self.session_idle_timeout)
            .field("max_sessions", &self.max_sessions)
            .field("max_connections", &self.max_connections)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("live", &self.live)
            .field(
                "control_token",
                &self.control_token.as_ref().map(|_| "<set>"),
            )
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
            session_idle_timeout: Duration::from_secs(600),
            max_sessions: 512,
            max_connections: 128,
            header_read_timeout: Duration::from_secs(10),
            max_body_bytes: MAX_MESSAGE_BYTES,
            live: Arc::default(),
            control_token: None,
        }
    }
}

#[derive(Clone)]
struct AppState {
    linkly: Arc<Linkly>,
    state: Arc<ServerState>,
    endpoint: String,
    control: Option<Arc<str>>,
}

async fn health(State(app): State<AppState>) -> Json<Health> {
    let linkly = app.linkly.clone();
    let (count, coverage) = tokio::task::spawn_blocking(move || {
        (
            linkly.index().doc_count().unwrap_or(0),
            linkly.coverage().ok(),
        )
    })
    .await
    .unwrap_or((0, None));
    Json(Health {
        version: env!("CARGO_PKG_VERSION").to_string(),
        doc_count: count,
        mcp_endpoint: app.endpoint,
        index_status: app.state.get(),
        coverage,
        server: app.state.info(),
    })
}

/// `POST /control/stop`: stops the server (its requests in flight finish first) when the
/// `Linkly-Control` header carries the port file's token. `{"handover": true}` is how a server
/// started by hand takes over: only a server started in the background accepts it (409
/// otherwise).
async fn control_stop(
    State(app): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let Some(expected) = app.control.as_deref() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let presented = headers
        .get(CONTROL_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !linkly_window::constant_time_eq(presented.trim().as_bytes(), expected.as_bytes()) {
        return (
            StatusCode::FORBIDDEN,
            "missing or wrong control token (it is in the data directory's port file)",
        )
            .into_response();
    }
    let request: StopRequest = if body.iter().all(u8::is_ascii_whitespace) {
        StopRequest {
            handover: false,
            by_pid: None,
        }
    } else {
        match serde_json::from_slice(&body) {
            Ok(r) => r,
            Err(e) => {
                return (
                    StatusCode::BAD_REQUEST,
                    format!("the body must be {{\"handover\": bool, \"by_pid\": N}}: {e}"),
                )
                    .into_response();
            }
        }
    };
    let info = app.state.info();
    if request.handover
        && info
            .as_ref()
            .is_some_and(|i| i.started_by != StartedBy::Background)
    {
        return (
            StatusCode::CONFLICT,
            "this server was started by hand: it does not hand over (stop it with `linkly stop`)",
        )
            .into_response();
    }
    tracing::info!(
        handover = request.handover,
        by_pid = request.by_pid,
        "stop requested"
    );
    app.state.request_stop(request);
    Json(serde_json::json!({
        "stopping": true,
        "pid": std::process::id(),
    }))
    .into_response()
}

/// A listening socket, ready to serve.
#[derive(Debug)]
pub struct BoundHttp {
    listener: tokio::net::TcpListener,
    port: u16,
    opts: HttpOptions,
    sessions: Arc<LocalSessionManager>,
}

/// The MCP sessions a server holds open, to watch them (see [`BoundHttp::sessions`]).
#[derive(Debug, Clone)]
pub struct OpenSessions(Arc<LocalSessionManager>);

impl OpenSessions {
    /// How many sessions are open now.
    pub async fn count(&self) -> usize {
        self.0.sessions.read().await.len()
    }
}

impl BoundHttp {
    /// The server's MCP sessions.
    pub fn sessions(&self) -> OpenSessions {
        OpenSessions(self.sessions.clone())
    }

    /// The port bound.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The MCP endpoint URL, at the address bound (127.0.0.1 or `[::1]` for a wildcard one).
    pub fn endpoint(&self) -> String {
        let host = match self.opts.bind {
            IpAddr::V4(v4) if v4.is_unspecified() => Ipv4Addr::LOCALHOST.to_string(),
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) if v6.is_unspecified() => "[::1]".to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        };
        format!("http://{host}:{}/mcp", self.port)
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
                let mut sessions = LocalSessionManager::default();
                sessions.session_config.keep_alive = Some(opts.session_idle_timeout);
                return Ok(BoundHttp {
                    listener,
                    port,
                    opts,
                    sessions: Arc::new(sessions),
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

/// Writes `text` to `path`, readable by its owner only (it may hold the control token): to a
/// temporary file renamed over it, so a reader never sees half of it.
fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut open = std::fs::OpenOptions::new();
    open.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
    let mut f = open
        .open(&tmp)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", tmp.display())))?;
    f.write_all(text.as_bytes())?;
    drop(f);
    fs_err::rename(&tmp, path)
}

/// Serves `/mcp` and `/health` until `shutdown` resolves; writes the port file first and
/// removes it on the way out.
///
/// Who may call: with a LAN token, every peer must send it, except 127.0.0.1 and `::1` when the
/// server listens on a wildcard address or on 127.0.0.1/`::1` itself (bound to another
/// address, say 127.0.0.2, every peer needs the token). Requests not authenticated by the token
/// must name the server by a loopback name or its bind address in `Host`, and browser requests
/// whose `Origin` is not local are refused (DNS-rebinding protection). Idle sessions expire,
/// their number and the number of connections are capped (see [`HttpOptions`]).
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
        sessions,
    } = bound;
    let access = Arc::new(linkly_window::Access::new(
        opts.bind,
        opts.lan_token.clone(),
    ));
    let mut origins = vec![
        "http://localhost:*".to_string(),
        "http://127.0.0.1:*".to_string(),
        "http://[::1]:*".to_string(),
        "https://localhost:*".to_string(),
        "https://127.0.0.1:*".to_string(),
    ];
    if !opts.bind.is_unspecified() {
        let host = match opts.bind {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        };
        origins.push(format!("http://{host}:*"));
    }
    // The Host check is the guard's (it also covers `/health` and accepts the bind address).
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(opts.max_body_bytes);
    let cancel = config.cancellation_token.clone();
    let activity = state.clone();
    let server = LinklyServer::new(linkly.clone());
    let mcp = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), config);
    let mcp = Router::new()
        .nest_service("/mcp", mcp)
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(McpLimits {
                sessions,
                max_sessions: opts.max_sessions,
                max_body_bytes: opts.max_body_bytes,
            }),
            crate::guard::filter_mcp,
        ));
    // The window at `/`: it has its own gate (the same Host rule, and with a LAN token a
    // sign-in that sets a cookie, since a browser cannot send a bearer token).
    let window = linkly_window::router(
        linkly.clone(),
        opts.live.clone(),
        linkly_window::WindowOptions {
            endpoint: endpoint.clone(),
            bind: opts.bind,
            lan_token: opts.lan_token.clone(),
        },
    );
    let app = Router::new()
        .route("/health", get(health))
        .route("/control/stop", post(control_stop))
        .with_state(AppState {
            linkly,
            state,
            endpoint: endpoint.clone(),
            control: opts.control_token.as_deref().map(Arc::from),
        })
        .merge(mcp)
        .layer(axum::middleware::from_fn_with_state(
            access,
            crate::guard::guard,
        ))
        .merge(window)
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
        write_private(
            file,
            &PortFile {
                port,
                pid: std::process::id(),
                control: opts.control_token.clone(),
            }
            .to_json(),
        )?;
    }
    tracing::info!(%endpoint, "serving MCP over Streamable HTTP");
    let limits = ConnLimits {
        max_connections: opts.max_connections,
        header_read_timeout: opts.header_read_timeout,
    };
    crate::conn::serve(listener, app, limits, async move {
        shutdown.await;
        // Ends the sessions and their event streams, so connections can drain.
        cancel.cancel();
    })
    .await;
    if let Some(file) = &opts.port_file {
        let _ = fs_err::remove_file(file);
    }
    Ok(())
}
