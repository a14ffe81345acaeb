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
use crate::gate::{Class, Gate, GateOptions, Routes};
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
    /// LAN access switched while the server runs (instead of `lan_token`): the token while it
    /// is on, read on every request ([`Access::switched`]).
    pub lan_switch: Option<crate::LanSwitch>,
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
    /// The per-start local secret (written to the port file, 0600): with one, every caller,
    /// local peers included, must present it (or the agent or LAN token) to reach more than
    /// the public routes ([`crate::Gate`]). `linkly serve` always draws one.
    pub local_secret: Option<String>,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("bind", &self.bind)
            .field("lan_token", &self.lan_token.as_ref().map(|_| "<set>"))
            .field("lan_switch", &self.lan_switch.is_some())
            .field("port", &self.port)
            .field("port_attempts", &self.port_attempts)
            .field("port_file", &self.port_file)
            .field("max_connections", &self.max_connections)
            .field("header_read_timeout", &self.header_read_timeout)
            .field(
                "control_token",
                &self.control_token.as_ref().map(|_| "<set>"),
            )
            .field("local_secret", &self.local_secret.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            lan_token: None,
            lan_switch: None,
            port: 60606,
            port_attempts: 20,
            port_file: None,
            max_connections: 128,
            header_read_timeout: Duration::from_secs(10),
            control_token: None,
            local_secret: None,
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

    /// Who may call this server by address (the LAN token, the `Host` check).
    pub fn access(&self) -> Access {
        match &self.opts.lan_switch {
            Some(lan) => Access::switched(self.opts.bind, lan.clone()),
            None => Access::new(self.opts.bind, self.opts.lan_token.clone()),
        }
    }

    /// The limits each connection is served under (also on a second listener).
    pub fn limits(&self) -> crate::ConnLimits {
        crate::ConnLimits {
            max_connections: self.opts.max_connections,
            header_read_timeout: self.opts.header_read_timeout,
        }
    }

    /// The gate of this server: its access rule and local secret, with `agent_token` and the
    /// libraries shared on the LAN (`lan_shared`, read at each visitor's request).
    pub fn gate(
        &self,
        agent_token: Option<String>,
        lan_shared: Arc<dyn Fn() -> Vec<String> + Send + Sync>,
    ) -> Gate {
        Gate::new(GateOptions {
            access: self.access(),
            local_secret: self.opts.local_secret.clone(),
            agent_token,
            lan_shared,
        })
    }

    /// The server's own routes, `GET /health` (public) and `POST /control/stop` (the person's),
    /// over these tools and this state.
    pub fn host_routes(&self, linkly: Arc<Linkly>, state: Arc<ServerState>) -> Routes {
        Routes::new()
            .route("/health", Class::Public, get(health))
            .route("/control/stop", Class::Person, post(control_stop))
            .map(|r| {
                r.with_state(HostState {
                    linkly,
                    state,
                    endpoint: self.endpoint(),
                    control: self.opts.control_token.as_deref().map(Arc::from),
                })
            })
    }
}

/// Binds `opts.bind` (127.0.0.1 by default) on the first free port from `opts.port` on.
pub async fn bind(opts: HttpOptions) -> Result<BoundHttp, HttpError> {
    let ip = opts.bind;
    if !ip.is_loopback()
        && opts.lan_switch.is_none()
        && opts.lan_token.as_deref().is_none_or(str::is_empty)
    {
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
                // Another account listening there would receive this person's agent traffic
                // (clients configured for this port): refuse rather than move on.
                if e.kind() == std::io::ErrorKind::AddrInUse
                    && let Some(holder) = port_holder(port)
                    && holder.uid != own_uid().unwrap_or(holder.uid)
                {
                    return Err(HttpError::HeldByAnotherAccount {
                        port,
                        uid: holder.uid,
                        process: holder.process,
                    });
                }
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
    /// Another account listens on the port: its clients would be this person's.
    #[error("port {port} is held by another account (uid {uid}{}): refusing to start, since clients configured for this port would talk to it; stop that process or choose another port with --port", process.as_deref().map(|p| format!(", process {p}")).unwrap_or_default())]
    HeldByAnotherAccount {
        /// The port.
        port: u16,
        /// The account that holds it.
        uid: u32,
        /// The process that holds it (`pid (name)`), when this account may see it.
        process: Option<String>,
    },
    /// Reading the socket or writing the port file failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Who listens on a local TCP port (Linux: `/proc/net/tcp*`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Holder {
    uid: u32,
    process: Option<String>,
}

/// The listener of `port`, as `/proc/net/tcp` and `/proc/net/tcp6` tell (None elsewhere).
fn port_holder(port: u16) -> Option<Holder> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let (uid, inode) = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .find_map(|table| listener_in(&table, port))?;
    Some(Holder {
        uid,
        process: process_of_socket(inode),
    })
}

/// The uid and socket inode of the listener of `port` in a `/proc/net/tcp` table.
fn listener_in(table: &str, port: u16) -> Option<(u32, u64)> {
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let local_port = f.get(1)?.rsplit_once(':')?.1;
        if *f.get(3)? != "0A" || u16::from_str_radix(local_port, 16).ok()? != port {
            return None;
        }
        Some((f.get(7)?.parse().ok()?, f.get(9)?.parse().ok()?))
    })
}

/// `pid (name)` of the process holding socket `inode`, when its descriptors may be read.
fn process_of_socket(inode: u64) -> Option<String> {
    let wanted = format!("socket:[{inode}]");
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|p| {
        let pid: u32 = p.file_name().to_str()?.parse().ok()?;
        let holds = std::fs::read_dir(p.path().join("fd"))
            .ok()?
            .flatten()
            .any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == wanted.as_str())
            });
        holds.then(|| {
            let name = std::fs::read_to_string(p.path().join("comm")).unwrap_or_default();
            format!("{pid} ({})", name.trim())
        })
    })
}

/// This process's uid (Linux: `/proc/self/status`).
fn own_uid() -> Option<u32> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
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
                secret: opts.local_secret.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listener_of_a_port_is_found_in_proc_net_tcp() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:ECCE 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 4242 1 0000000000000000 100 0 0 10 0\n   1: 0100007F:ECCF 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000        0 99 1\n";
        assert_eq!(listener_in(table, 60622), Some((1001, 4242)));
        // Not listening: a connection from that port.
        assert_eq!(listener_in(table, 60623), None);
        assert_eq!(listener_in(table, 1), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_port_this_account_holds_is_found_with_its_process() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let holder = port_holder(port).expect("the listener");
        assert_eq!(Some(holder.uid), own_uid());
        let process = holder.process.expect("this account's process");
        assert!(
            process.starts_with(&std::process::id().to_string()),
            "{process}"
        );
    }
}
