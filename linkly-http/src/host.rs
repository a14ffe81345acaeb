//! The host: binding a port, `GET /health`, `POST /control/stop`, the port file, and serving
//! the front ends' routes (the window at `/`, MCP at `/mcp`) on [`crate::conn`]'s accept loop.

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

use crate::access::{Access, constant_time_eq};
use crate::conn::ConnLimits;
use crate::health::{
    CONTROL_HEADER, Health, IndexStatus, PortFile, ServerInfo, StartedBy, StopRequest,
};

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
    /// Open connections at most: beyond, the oldest idle one is closed to make room (503 when
    /// all are busy). Default: 128, well under the 256 file descriptors macOS allows a process.
    pub max_connections: usize,
    /// The time a client gets to send a request's headers, and the longest a keep-alive
    /// connection stays idle. Default: 10 seconds.
    pub header_read_timeout: Duration,
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
            .field("max_connections", &self.max_connections)
            .field("header_read_timeout", &self.header_read_timeout)
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
            max_connections: 128,
            header_read_timeout: Duration::from_secs(10),
            control_token: None,
        }
    }
}

#[derive(Clone)]
struct HostState {
    linkly: Arc<Linkly>,
    state: Arc<ServerState>,
    endpoint: String,
    control: Option<Arc<str>>,
}

async fn health(State(app): State<HostState>) -> Json<Health> {
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
    State(app): State<HostState>,
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
    if !constant_time_eq(presented.trim().as_bytes(), expected.as_bytes()) {
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
}

impl BoundHttp {
    /// The port bound.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The address bound.
    pub fn bind(&self) -> IpAddr {
        self.opts.bind
    }

    /// The server's base URL, at the address bound (127.0.0.1 or `[::1]` for a wildcard one),
    /// without a trailing slash: `http://127.0.0.1:60606`.
    pub fn base_url(&self) -> String {
        let host = match self.opts.bind {
            IpAddr::V4(v4) if v4.is_unspecified() => Ipv4Addr::LOCALHOST.to_string(),
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) if v6.is_unspecified() => "[::1]".to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        };
        format!("http://{host}:{}", self.port)
    }

    /// The MCP endpoint URL, `<base>/mcp` (what `/health` reports).
    pub fn endpoint(&self) -> String {
        format!("{}/mcp", self.base_url())
    }

    /// Who may call this server (the rule [`crate::guarded`] and the window's gate apply).
    pub fn access(&self) -> Access {
        Access::new(self.opts.bind, self.opts.lan_token.clone())
    }

    /// The server's own routes, `GET /health` and `POST /control/stop`, over these tools and
    /// this state.
    pub fn host_routes(&self, linkly: Arc<Linkly>, state: Arc<ServerState>) -> Router {
        Router::new()
            .route("/health", get(health))
            .route("/control/stop", post(control_stop))
            .with_state(HostState {
                linkly,
                state,
                endpoint: self.endpoint(),
                control: self.opts.control_token.as_deref().map(Arc::from),
            })
    }
}

/// Binds `opts.bind` (127.0.0.1 by default) on the first free port from `opts.port` on.
pub async fn bind(opts: HttpOptions) -> Result<BoundHttp, HttpError> {
    let ip = opts.bind;
    if !ip.is_loopback() && opts.lan_token.as_deref().is_none_or(str::is_empty) {
        return Err(HttpError::NeedsToken(ip));
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
    Err(HttpError::NoFreePort {
        first: opts.port,
        tried: opts.port_attempts,
        last: last_err.map(|e| e.to_string()).unwrap_or_default(),
    })
}

/// Why a server could not bind or serve.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// An address beyond loopback without a LAN token.
    #[error("binding {0} (beyond loopback) requires a bearer token")]
    NeedsToken(IpAddr),
    /// Every port tried was taken.
    #[error("no free port from {first} on ({tried} tried): {last}")]
    NoFreePort {
        /// The first port tried.
        first: u16,
        /// How many were tried.
        tried: u16,
        /// The last error.
        last: String,
    },
    /// Reading the socket or writing the port file failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
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

/// Serves `app` (the front ends' routes, with [`BoundHttp::host_routes`] merged in) until
/// `shutdown` resolves; writes the port file first and removes it on the way out. Every
/// request counts as activity in `state` ([`ServerState::unused_for`]).
pub async fn serve(
    bound: BoundHttp,
    app: Router,
    state: Arc<ServerState>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), HttpError> {
    let endpoint = bound.endpoint();
    let BoundHttp {
        listener,
        port,
        opts,
    } = bound;
    let app = app.layer(axum::middleware::from_fn(
        move |req: axum::extract::Request, next: axum::middleware::Next| {
            state.touch();
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
    tracing::info!(%endpoint, "serving over HTTP");
    let limits = ConnLimits {
        max_connections: opts.max_connections,
        header_read_timeout: opts.header_read_timeout,
    };
    crate::conn::serve(listener, app, limits, shutdown).await;
    if let Some(file) = &opts.port_file {
        let _ = fs_err::remove_file(file);
    }
    Ok(())
}
