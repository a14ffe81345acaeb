//! The gateway's HTTP face: `/mcp` (MCP over Streamable HTTP), `/health`, and the publish API
//! under `/api/v1/` (see docs/gateway.md, "The publish protocol").
//!
//! Every `/mcp` and `/api/v1` request needs `Authorization: Bearer <token>` naming a user
//! (401 with `WWW-Authenticate: Bearer` otherwise); each user gets a token bucket of requests
//! (429 with `Retry-After` beyond). Bodies are bounded (413 beyond), and so are connections,
//! the time to send headers (linkly-http's accept loop), MCP sessions (linkly-mcp's filter),
//! each user's open MCP sessions (`sessions.rs`, 429 beyond) and the bytes each user publishes
//! per UTC day (`db/usage.rs`, 429 beyond).

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Extension, Router};
use linkly_core::{DocType, OutlineNode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;

use crate::model::{
    LibraryKey, LibraryMeta, Limits, ManifestEntry, PublishedDoc, User, VectorModel,
    parse_category, valid_name,
};
use crate::server::db::Db;
use crate::server::mcp::{GatewayServer, Shared};
use crate::server::sessions::{SessionOwners, TooManySessions};
use crate::{GatewayError, Result};

/// The largest `/mcp` request body by default: 16 MiB.
pub const DEFAULT_MCP_BODY_BYTES: usize = 16 << 20;
/// The largest publish request body by default (a batch of documents): 64 MiB.
pub const DEFAULT_API_BODY_BYTES: usize = 64 << 20;
/// Requests per user per minute by default.
pub const DEFAULT_RATE_PER_MINUTE: u32 = 600;
/// The longest document path, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// The largest document text, in bytes.
pub const MAX_TEXT_BYTES: usize = 256 << 20;
/// Open MCP sessions per user by default.
pub const DEFAULT_SESSIONS_PER_USER: usize = 64;
/// Bytes a user may publish per UTC day by default: 1 GiB.
pub const DEFAULT_PUBLISH_BYTES_PER_DAY: u64 = 1 << 30;

/// How a gateway serves.
#[derive(Clone)]
pub struct GatewayOptions {
    /// The store of accounts, catalogue and documents.
    pub db: Db,
    /// Where the users' notes (`users/`) and the embedding models (`models/`) live.
    pub data_dir: PathBuf,
    /// The address to bind: loopback by default; any other is allowed (every request is
    /// token-checked).
    pub bind: IpAddr,
    /// The port (0: any free one).
    pub port: u16,
    /// Slots per plan.
    pub limits: Limits,
    /// The largest `/mcp` request body (default 16 MiB).
    pub max_body_bytes: usize,
    /// The largest publish request body (default 64 MiB).
    pub max_api_body_bytes: usize,
    /// Requests per user per minute (a token bucket of this size, refilled continuously).
    pub rate: u32,
    /// Open connections at most.
    pub max_connections: usize,
    /// Open MCP sessions at most.
    pub max_sessions: usize,
    /// Open MCP sessions per user at most (0: no limit but `max_sessions`): a new one beyond is
    /// refused with 429. A session counts while it is open and was used within
    /// `session_idle_timeout`.
    pub max_sessions_per_user: usize,
    /// Bytes each user may publish per UTC day (0: no limit): a publish that would go past it
    /// is refused with 429 and nothing of it is stored. What counts: each document's text,
    /// path, title, outline and vectors (see docs/gateway.md).
    pub max_publish_bytes_per_day: u64,
    /// An MCP session without a request for this long is closed.
    pub session_idle_timeout: Duration,
    /// The time a client gets to send a request's headers.
    pub header_read_timeout: Duration,
}

impl std::fmt::Debug for GatewayOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayOptions")
            .field("data_dir", &self.data_dir)
            .field("bind", &self.bind)
            .field("port", &self.port)
            .field("limits", &self.limits)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_api_body_bytes", &self.max_api_body_bytes)
            .field("rate", &self.rate)
            .field("max_sessions", &self.max_sessions)
            .field("max_sessions_per_user", &self.max_sessions_per_user)
            .field("max_publish_bytes_per_day", &self.max_publish_bytes_per_day)
            .finish_non_exhaustive()
    }
}

impl GatewayOptions {
    /// Defaults: 127.0.0.1:8080, default limits, 16 MiB MCP bodies, 64 MiB publish bodies,
    /// 600 requests per user per minute, 1,024 connections, 4,096 sessions idle for 10 minutes
    /// at most and 64 per user, 1 GiB published per user per UTC day, 10 seconds to send
    /// headers.
    pub fn new(db: Db, data_dir: PathBuf) -> GatewayOptions {
        GatewayOptions {
            db,
            data_dir,
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 8080,
            limits: Limits::default(),
            max_body_bytes: DEFAULT_MCP_BODY_BYTES,
            max_api_body_bytes: DEFAULT_API_BODY_BYTES,
            rate: DEFAULT_RATE_PER_MINUTE,
            max_connections: 1024,
            max_sessions: 4096,
            max_sessions_per_user: DEFAULT_SESSIONS_PER_USER,
            max_publish_bytes_per_day: DEFAULT_PUBLISH_BYTES_PER_DAY,
            session_idle_timeout: Duration::from_secs(600),
            header_read_timeout: Duration::from_secs(10),
        }
    }
}

/// A gateway bound to its port, ready to serve.
#[derive(Debug)]
pub struct BoundGateway {
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
    opts: GatewayOptions,
}

impl BoundGateway {
    /// The port bound.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The base URL (`http://127.0.0.1:8080`; a wildcard bind is shown as loopback).
    pub fn base_url(&self) -> String {
        let host = match self.addr.ip() {
            IpAddr::V4(v4) if v4.is_unspecified() => Ipv4Addr::LOCALHOST.to_string(),
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) if v6.is_unspecified() => "[::1]".to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        };
        format!("http://{host}:{}", self.addr.port())
    }

    /// The MCP endpoint: `<base>/mcp`.
    pub fn endpoint(&self) -> String {
        format!("{}/mcp", self.base_url())
    }

    /// Serves until `shutdown` resolves.
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<()> {
        let BoundGateway { listener, opts, .. } = self;
        let (db, data_dir, limits) = (opts.db.clone(), opts.data_dir.clone(), opts.limits.clone());
        let shared = tokio::task::spawn_blocking(move || Shared::new(db, data_dir, limits))
            .await
            .map_err(|e| GatewayError::Io(std::io::Error::other(e.to_string())))??;
        let (app, cancel) = app(Arc::new(shared), &opts);
        tracing::info!(endpoint = %format!("http://{}/mcp", listener.local_addr()?), "gateway serving");
        linkly_http::serve_connections(
            listener,
            app,
            linkly_http::ConnLimits {
                max_connections: opts.max_connections,
                header_read_timeout: opts.header_read_timeout,
            },
            async move {
                shutdown.await;
                // Ends the sessions and their event streams, so connections can drain.
                cancel();
            },
        )
        .await;
        Ok(())
    }
}

/// Binds `opts.bind:opts.port`.
pub async fn bind(opts: GatewayOptions) -> Result<BoundGateway> {
    if !opts.bind.is_loopback() {
        tracing::warn!(bind = %opts.bind, "the gateway listens beyond loopback: put TLS in front of it");
    }
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(opts.bind, opts.port)).await?;
    let addr = listener.local_addr()?;
    Ok(BoundGateway {
        listener,
        addr,
        opts,
    })
}

/// Binds and serves a gateway until `shutdown` resolves (`linkly gateway serve`).
pub async fn serve(
    opts: GatewayOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<()> {
    bind(opts).await?.serve(shutdown).await
}

/// The router, and what ends the MCP sessions at shutdown.
fn app(shared: Arc<Shared>, opts: &GatewayOptions) -> (Router, impl FnOnce() + Send + 'static) {
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(opts.session_idle_timeout);
    let sessions = Arc::new(sessions);
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_max_request_body_bytes(opts.max_body_bytes);
    let cancel = config.cancellation_token.clone();
    let for_sessions = shared.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(GatewayServer::new(for_sessions.clone())),
        sessions.clone(),
        config,
    );
    let mcp = Router::new()
        .nest_service("/mcp", mcp)
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(linkly_mcp::McpLimits {
                sessions: sessions.clone(),
                max_sessions: opts.max_sessions,
                max_body_bytes: opts.max_body_bytes,
            }),
            linkly_mcp::filter_mcp,
        ));
    let api = Router::new()
        .route(
            "/api/v1/libraries/{slug}",
            put(put_library).delete(delete_library),
        )
        .route("/api/v1/libraries/{slug}/publish", post(open_publish))
        .route(
            "/api/v1/libraries/{slug}/publish/{id}/documents",
            post(stage_documents),
        )
        .route(
            "/api/v1/libraries/{slug}/publish/{id}/commit",
            post(commit_publish),
        )
        .layer(DefaultBodyLimit::max(opts.max_api_body_bytes))
        .layer(Extension(PublishQuota(
            (opts.max_publish_bytes_per_day > 0).then_some(opts.max_publish_bytes_per_day),
        )))
        .with_state(shared.clone());
    let auth = Arc::new(Auth {
        db: shared.db().clone(),
        buckets: Mutex::default(),
        rate: opts.rate.max(1),
        max_body_bytes: opts.max_body_bytes,
        sessions: SessionOwners::new(
            sessions,
            opts.max_sessions_per_user,
            opts.session_idle_timeout,
        ),
    });
    let protected = mcp
        .merge(api)
        .layer(axum::middleware::from_fn_with_state(auth, authenticate));
    let app = Router::new()
        .route("/health", get(health))
        .with_state(shared)
        .merge(protected);
    (app, move || cancel.cancel())
}

/// The daily quota of bytes published per user (`None`: none), for the publish handlers.
#[derive(Debug, Clone, Copy)]
struct PublishQuota(Option<u64>);

/// A JSON error answer: `{"error": "…"}`.
fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({ "error": message.into() }))).into_response()
}

/// A refused API request: a status and a message, answered `{"error": "…"}`.
#[derive(Debug)]
struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.0 == StatusCode::UNAUTHORIZED {
            return unauthorized(&self.1);
        }
        error(self.0, self.1)
    }
}

impl From<GatewayError> for ApiError {
    fn from(e: GatewayError) -> ApiError {
        match e {
            GatewayError::Invalid(m) => ApiError(StatusCode::BAD_REQUEST, m),
            GatewayError::Conflict(m) => ApiError(StatusCode::CONFLICT, m),
            GatewayError::NotFound(m) => ApiError(StatusCode::NOT_FOUND, m),
            GatewayError::Unauthorized(m) => ApiError(StatusCode::UNAUTHORIZED, m),
            GatewayError::Limit(m) => ApiError(StatusCode::TOO_MANY_REQUESTS, m),
            e => {
                tracing::error!(error = %e, "gateway request failed");
                ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
            }
        }
    }
}

/// Runs blocking work (the database) off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T, ApiError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.into()),
        Err(e) => Err(ApiError(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("task failed: {e}"),
        )),
    }
}

async fn health(State(shared): State<Arc<Shared>>) -> Response {
    let db = shared.db().clone();
    let count = tokio::task::spawn_blocking(move || db.library_count()).await;
    let libraries = match count {
        Ok(Ok(n)) => n,
        Ok(Err(e)) => {
            tracing::error!(error = %e, "health: the database failed");
            return error(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
        }
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    axum::Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "role": "gateway",
        "libraries": libraries,
    }))
    .into_response()
}

/// Token checks and rate limits.
struct Auth {
    db: Db,
    buckets: Mutex<HashMap<i64, Bucket>>,
    rate: u32,
    /// The largest `/mcp` request body (read again only to answer a failed token check).
    max_body_bytes: usize,
    /// Who opened each MCP session, and how many a user may hold.
    sessions: SessionOwners,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Auth {
    /// The user a token names, read from the database on every request (one indexed
    /// lookup): a token rotated or a user removed by any process stops working at once.
    async fn user(&self, token: &str) -> Result<Option<User>> {
        let db = self.db.clone();
        let t = token.to_string();
        tokio::task::spawn_blocking(move || db.user_by_token(&t))
            .await
            .map_err(|e| GatewayError::Io(std::io::Error::other(e.to_string())))?
    }

    /// Takes one request from the user's bucket; `Err(seconds to wait)` when empty.
    fn admit(&self, user: i64) -> Result<(), u64> {
        let capacity = f64::from(self.rate);
        let per_sec = capacity / 60.0;
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() > 100_000 {
            buckets.clear();
        }
        let now = Instant::now();
        let b = buckets.entry(user).or_insert(Bucket {
            tokens: capacity,
            at: now,
        });
        b.tokens = (b.tokens + now.duration_since(b.at).as_secs_f64() * per_sec).min(capacity);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - b.tokens) / per_sec).ceil().max(1.0) as u64)
        }
    }
}

fn unauthorized(message: &str) -> Response {
    let mut r = error(StatusCode::UNAUTHORIZED, message);
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

/// `/mcp` and `/api/v1`: the bearer token names a user, who is put into the request's
/// extensions (rmcp hands them to the handler), within the user's rate.
async fn authenticate(State(auth): State<Arc<Auth>>, mut req: Request, next: Next) -> Response {
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then_some(rest)
        })
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    let Some(token) = token else {
        return unauthorized("missing bearer token: send Authorization: Bearer <token>");
    };
    let user = match auth.user(&token).await {
        Ok(Some(u)) => u,
        Ok(None) => return unauthorized("unknown token"),
        Err(e) => return token_unchecked(req, e, auth.max_body_bytes).await,
    };
    if let Err(wait) = auth.admit(user.id) {
        let mut r = error(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "rate limit: {} requests per minute; retry in {wait} s",
                auth.rate
            ),
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(wait));
        return r;
    }
    // A session belongs to the user who opened it: another token cannot use, watch or close it.
    let session = req
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let opening = match &session {
        Some(id) if !auth.sessions.claim(id, user.id) => {
            tracing::warn!(user = %user.name, "a token tried to use another user's session");
            return error(
                StatusCode::FORBIDDEN,
                "this session belongs to another user: open your own session",
            );
        }
        Some(_) => None,
        None if opens_session(&req) => match auth.sessions.open(user.id).await {
            Ok(opening) => Some(opening),
            Err(refusal) => {
                tracing::info!(user = %user.name, open = refusal.open, "refused a new MCP session over the per-user limit");
                return too_many_sessions(req, &refusal, auth.max_body_bytes).await;
            }
        },
        None => None,
    };
    let user_id = user.id;
    let closing = req.method() == Method::DELETE;
    req.extensions_mut().insert(user);
    let response = next.run(req).await;
    note_session(
        &auth.sessions,
        session.as_deref(),
        closing,
        user_id,
        &response,
    );
    drop(opening);
    response
}

/// Whether a request may open an MCP session: a POST to `/mcp` without `mcp-session-id` (an
/// initialize; rmcp refuses any other such POST).
fn opens_session(req: &Request) -> bool {
    req.method() == Method::POST && req.uri().path().starts_with("/mcp")
}

/// Records a session the answer opened, or forgets one a `DELETE` closed.
fn note_session(
    sessions: &SessionOwners,
    session: Option<&str>,
    closing: bool,
    user: i64,
    response: &Response,
) {
    match session {
        Some(id) if closing && response.status().is_success() => sessions.closed(id),
        Some(_) => {}
        None => {
            if let Some(id) = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
            {
                sessions.opened(id, user);
            }
        }
    }
}

/// The JSON-RPC id of an `/mcp` POST, its body read (up to `max_body_bytes`); `None` for any
/// other request or a body without one.
async fn mcp_request_id(req: Request, max_body_bytes: usize) -> Option<serde_json::Value> {
    if !(req.uri().path().starts_with("/mcp") && req.method() == Method::POST) {
        return None;
    }
    let body = axum::body::to_bytes(req.into_body(), max_body_bytes)
        .await
        .ok()?;
    serde_json::from_slice::<serde_json::Value>(&body)
        .ok()?
        .get("id")
        .cloned()
}

/// A JSON-RPC error answering the request `id`.
fn jsonrpc_error(id: serde_json::Value, code: i64, message: &str) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// 429 for a new MCP session over the user's limit, with `Retry-After` (the wait until their
/// least recently used session expires) and the reason as a JSON-RPC error answering the
/// initialize (`{"error": "…"}` when it has no id).
async fn too_many_sessions(
    req: Request,
    refusal: &TooManySessions,
    max_body_bytes: usize,
) -> Response {
    let message = refusal.message();
    let mut r = match mcp_request_id(req, max_body_bytes).await {
        Some(id) => (
            StatusCode::TOO_MANY_REQUESTS,
            axum::Json(jsonrpc_error(id, -32000, &message)),
        )
            .into_response(),
        None => error(StatusCode::TOO_MANY_REQUESTS, message),
    };
    r.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(refusal.wait.as_secs().max(1)),
    );
    r
}

/// The answer to a request whose token could not be checked (the database failed): 503 with
/// the reason. An MCP request gets it as a JSON-RPC error instead, which an MCP client shows as
/// such (a bare HTTP status would read as a lost connection to the gateway).
async fn token_unchecked(req: Request, e: GatewayError, max_body_bytes: usize) -> Response {
    tracing::error!(error = %e, "cannot check a token");
    let message = e.to_string();
    match mcp_request_id(req, max_body_bytes).await {
        Some(id) => axum::Json(jsonrpc_error(id, -32603, &message)).into_response(),
        None => error(StatusCode::SERVICE_UNAVAILABLE, message),
    }
}

/// The user the middleware put into the request.
fn signed_in(req_user: Option<axum::Extension<User>>) -> Result<User, ApiError> {
    req_user
        .map(|axum::Extension(u)| u)
        .ok_or_else(|| ApiError(StatusCode::UNAUTHORIZED, "not signed in".into()))
}

fn parse_body<T: serde::de::DeserializeOwned>(body: &Bytes) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError(StatusCode::BAD_REQUEST, format!("invalid JSON body: {e}")))
}

fn check_slug(slug: &str) -> Result<(), ApiError> {
    if valid_name(slug) {
        Ok(())
    } else {
        Err(ApiError(
            StatusCode::BAD_REQUEST,
            format!(
                "invalid slug {slug:?}: 1-64 lowercase letters, digits, '-', '_' or '.', not starting with '.' or '-'"
            ),
        ))
    }
}

/// Checks a document path: relative, `/`-separated, no `..`, at most 1,024 bytes.
pub fn check_path(path: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(GatewayError::invalid(format!(
            "invalid path {path:?}: {why}"
        )))
    };
    if path.is_empty() {
        return bad("empty");
    }
    if path.len() > MAX_PATH_BYTES {
        return bad("longer than 1024 bytes");
    }
    if path.starts_with('/') {
        return bad("must be relative (no leading '/')");
    }
    if path.contains('\\') || path.contains('\0') {
        return bad("use '/' separators");
    }
    if path
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return bad("no empty, '.' or '..' segment");
    }
    Ok(())
}

/// Checks a published document before it is stored.
pub fn check_document(doc: &PublishedDoc) -> Result<()> {
    check_path(&doc.path)?;
    DocType::from_token(&doc.doc_type).map_err(|_| {
        GatewayError::invalid(format!("{}: unknown doc_type {:?}", doc.path, doc.doc_type))
    })?;
    if doc.text.len() > MAX_TEXT_BYTES {
        return Err(GatewayError::invalid(format!(
            "{}: text larger than 256 MiB",
            doc.path
        )));
    }
    if doc.hash.is_empty() {
        return Err(GatewayError::invalid(format!("{}: empty hash", doc.path)));
    }
    if !doc.outline.is_null() {
        serde_json::from_value::<Vec<OutlineNode>>(doc.outline.clone())
            .map_err(|e| GatewayError::invalid(format!("{}: invalid outline: {e}", doc.path)))?;
    }
    if let Some(v) = &doc.vectors {
        v.decode(&doc.path)?;
    }
    Ok(())
}

async fn put_library(
    State(shared): State<Arc<Shared>>,
    user: Option<axum::Extension<User>>,
    Path(slug): Path<String>,
    body: Bytes,
) -> Response {
    let run = async {
        let user = signed_in(user)?;
        check_slug(&slug)?;
        let mut meta: LibraryMeta = parse_body(&body)?;
        if !meta.category.trim().is_empty() {
            meta.category = parse_category(&meta.category)
                .map_err(ApiError::from)?
                .to_string();
        }
        let db = shared.db().clone();
        let key = LibraryKey {
            owner: user.name.clone(),
            slug: slug.clone(),
        };
        let (info, created) = blocking(move || {
            let created = db.library(&key)?.is_none();
            Ok((db.upsert_library(&user, &slug, &meta)?, created))
        })
        .await?;
        Ok::<_, ApiError>(
            axum::Json(json!({ "library": info.key.address(), "created": created }))
                .into_response(),
        )
    };
    run.await.unwrap_or_else(IntoResponse::into_response)
}

async fn delete_library(
    State(shared): State<Arc<Shared>>,
    user: Option<axum::Extension<User>>,
    Path(slug): Path<String>,
) -> Response {
    let run = async {
        let user = signed_in(user)?;
        check_slug(&slug)?;
        let s = shared.clone();
        let deleted = blocking(move || s.db().delete_library(&user, &slug)).await?;
        Ok::<_, ApiError>(axum::Json(json!({ "deleted": deleted })).into_response())
    };
    run.await.unwrap_or_else(IntoResponse::into_response)
}

/// The caller's own library, or 404.
fn own_library(db: &Db, user: &User, slug: &str) -> Result<i64> {
    let key = LibraryKey {
        owner: user.name.clone(),
        slug: slug.to_string(),
    };
    db.library(&key)?.map(|l| l.id).ok_or_else(|| {
        GatewayError::not_found(format!(
            "no library {key}: create it first (PUT /api/v1/libraries/{slug})"
        ))
    })
}

#[derive(serde::Deserialize)]
struct ManifestBody {
    documents: Vec<ManifestEntry>,
    /// The model of the vectors the documents will carry, when they carry some: a document
    /// whose stored vectors are not that model's is asked for again.
    #[serde(default)]
    vectors: Option<VectorModel>,
}

#[derive(serde::Deserialize)]
struct DocumentsBody {
    documents: Vec<PublishedDoc>,
}

/// The start of every publish request: the signed-in user, the slug checked, the JSON body.
fn publish_request<T: serde::de::DeserializeOwned>(
    user: Option<axum::Extension<User>>,
    slug: &str,
    body: &Bytes,
) -> Result<(User, T), ApiError> {
    let user = signed_in(user)?;
    check_slug(slug)?;
    Ok((user, parse_body(body)?))
}

/// What a manifest asks of the library `id`: the paths the gateway needs (new ones, those
/// whose hash changed, those whose vectors are not of the manifest's model), and those it
/// holds that the manifest no longer lists.
fn plan_manifest(db: &Db, id: i64, manifest: &ManifestBody) -> Result<(Vec<String>, Vec<String>)> {
    let current: HashMap<String, (String, Option<String>)> = db
        .manifest(id)?
        .into_iter()
        .map(|e| (e.path, (e.hash, e.vector_model)))
        .collect();
    let model = manifest.vectors.as_ref().map(|v| v.model.as_str());
    let listed: HashSet<&str> = manifest.documents.iter().map(|e| e.path.as_str()).collect();
    let gone: Vec<String> = current
        .keys()
        .filter(|p| !listed.contains(p.as_str()))
        .cloned()
        .collect();
    let mut seen = HashSet::new();
    let needed: Vec<String> = manifest
        .documents
        .iter()
        .filter(|e| match current.get(&e.path) {
            Some((hash, held)) => *hash != e.hash || (model.is_some() && held.as_deref() != model),
            None => true,
        })
        .filter(|e| seen.insert(e.path.clone()))
        .map(|e| e.path.clone())
        .collect();
    Ok((needed, gone))
}

/// A manifest's paths, checked.
fn check_manifest(manifest: &ManifestBody) -> Result<(), ApiError> {
    for e in &manifest.documents {
        check_path(&e.path).map_err(ApiError::from)?;
    }
    Ok(())
}

/// A batch's documents, checked: paths, types, outlines, and vectors of the width their model
/// makes on this gateway (a batch with one bad document is refused whole).
async fn check_batch(shared: &Arc<Shared>, docs: &DocumentsBody) -> Result<(), ApiError> {
    for d in &docs.documents {
        check_document(d).map_err(ApiError::from)?;
    }
    let models: HashSet<(String, usize)> = docs
        .documents
        .iter()
        .filter_map(|d| d.vectors.as_ref().map(|v| (v.model.clone(), v.dim)))
        .collect();
    if models.is_empty() {
        return Ok(());
    }
    let s = shared.clone();
    blocking(move || {
        for (model, dim) in &models {
            if let Some(want) = s.models().dim(model)
                && want != *dim
            {
                return Err(GatewayError::invalid(format!(
                    "the vectors are {dim}-dimensional, but {model} makes {want}-dimensional ones: nothing was stored"
                )));
            }
        }
        Ok(())
    })
    .await
}

/// `POST …/publish`: opens a staged publish from a manifest (discarding any other open publish
/// of the library) and answers its number, the paths needed and how many documents its commit
/// will remove; nothing changes in sight yet.
async fn open_publish(
    State(shared): State<Arc<Shared>>,
    user: Option<axum::Extension<User>>,
    Path(slug): Path<String>,
    body: Bytes,
) -> Response {
    let run = async {
        let (user, manifest): (_, ManifestBody) = publish_request(user, &slug, &body)?;
        check_manifest(&manifest)?;
        let db = shared.db().clone();
        let answer = blocking(move || {
            let id = own_library(&db, &user, &slug)?;
            let (needed, gone) = plan_manifest(&db, id, &manifest)?;
            let publish = db.begin_publish(id, &gone)?;
            Ok(json!({ "publish": publish, "needed": needed, "removed": gone.len() }))
        })
        .await?;
        Ok::<_, ApiError>(axum::Json(answer).into_response())
    };
    run.await.unwrap_or_else(IntoResponse::into_response)
}

/// `POST …/publish/{id}/documents`: stages a batch of an open publish (out of sight until the
/// commit); 409 when that publish is no longer open; 429, the publish discarded, when the
/// batch would take its user's bytes today past the daily quota.
async fn stage_documents(
    State(shared): State<Arc<Shared>>,
    Extension(PublishQuota(quota)): Extension<PublishQuota>,
    user: Option<axum::Extension<User>>,
    Path((slug, publish)): Path<(String, i64)>,
    body: Bytes,
) -> Response {
    let run = async {
        let (user, docs): (_, DocumentsBody) = publish_request(user, &slug, &body)?;
        drop(body);
        check_batch(&shared, &docs).await?;
        let db = shared.db().clone();
        let staged = blocking(move || {
            let id = own_library(&db, &user, &slug)?;
            db.stage_documents_within(id, publish, &docs.documents, quota)?;
            Ok(docs.documents.len())
        })
        .await?;
        Ok::<_, ApiError>(axum::Json(json!({ "staged": staged })).into_response())
    };
    run.await.unwrap_or_else(IntoResponse::into_response)
}

/// `POST …/publish/{id}/commit`: applies an open publish whole, in one transaction (its
/// removals and staged documents); 409 when it is no longer open; 429, the publish discarded,
/// when its bytes would take its user's day past the daily quota.
async fn commit_publish(
    State(shared): State<Arc<Shared>>,
    Extension(PublishQuota(quota)): Extension<PublishQuota>,
    user: Option<axum::Extension<User>>,
    Path((slug, publish)): Path<(String, i64)>,
) -> Response {
    let run = async {
        let user = signed_in(user)?;
        check_slug(&slug)?;
        let db = shared.db().clone();
        let done = blocking(move || {
            let id = own_library(&db, &user, &slug)?;
            db.commit_publish_within(id, publish, quota)
        })
        .await?;
        Ok::<_, ApiError>(
            axum::Json(json!({ "stored": done.stored, "removed": done.removed })).into_response(),
        )
    };
    run.await.unwrap_or_else(IntoResponse::into_response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_paths_are_relative_and_clean() {
        for ok in ["a.md", "docs/a b.md", "root/x/y/z.pdf", "é/ü.txt"] {
            assert!(check_path(ok).is_ok(), "{ok}");
        }
        let long = "a/".repeat(600) + "b";
        for bad in [
            "",
            "/abs.md",
            "../x.md",
            "a/../b",
            "a//b",
            "./a",
            "a\\b",
            "a/",
            long.as_str(),
        ] {
            assert!(check_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_rate_limit_is_a_bucket_per_user() {
        let tmp = tempfile::tempdir().unwrap();
        let db = Db::open(&crate::server::db::DbSpec::parse(None, tmp.path()).unwrap()).unwrap();
        let auth = Auth {
            db,
            buckets: Mutex::default(),
            rate: 2,
            max_body_bytes: DEFAULT_MCP_BODY_BYTES,
            sessions: SessionOwners::new(
                Arc::default(),
                DEFAULT_SESSIONS_PER_USER,
                Duration::from_secs(600),
            ),
        };
        assert!(auth.admit(1).is_ok() && auth.admit(1).is_ok());
        let wait = auth.admit(1).unwrap_err();
        assert!((1..=30).contains(&wait), "{wait}");
        assert!(auth.admit(2).is_ok(), "another user has their own bucket");
    }
}
