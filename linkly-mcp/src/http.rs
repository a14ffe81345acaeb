//! MCP over Streamable HTTP: the router a host (`linkly-http`) mounts at `/mcp`, with its
//! sessions (idle expiry, a cap) and the check of every message ([`crate::filter`]).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use linkly_tools::Linkly;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::LinklyServer;
use crate::filter::McpLimits;
use crate::inbound::MAX_MESSAGE_BYTES;

/// How `/mcp` serves: sessions and body size.
#[derive(Debug, Clone)]
pub struct McpOptions {
    /// An MCP session without a request for this long is closed (its client starts a new one
    /// on its next call). Default: 10 minutes.
    pub session_idle_timeout: Duration,
    /// Open MCP sessions at most: beyond, `initialize` is answered 503. Default: 512 (about
    /// 50 KB each).
    pub max_sessions: usize,
    /// The largest request body: 413 beyond. Default: 16 MiB (a 10 MiB note, escaped, fits).
    pub max_body_bytes: usize,
}

impl Default for McpOptions {
    fn default() -> Self {
        McpOptions {
            session_idle_timeout: Duration::from_secs(600),
            max_sessions: 512,
            max_body_bytes: MAX_MESSAGE_BYTES,
        }
    }
}

/// The MCP sessions a server holds open, to watch them (see [`McpRoutes::sessions`]).
#[derive(Debug, Clone)]
pub struct OpenSessions(Arc<LocalSessionManager>);

impl OpenSessions {
    /// How many sessions are open now.
    pub async fn count(&self) -> usize {
        self.0.sessions.read().await.len()
    }
}

/// `/mcp`, ready to merge into a host's router.
pub struct McpRoutes {
    /// The routes (`/mcp` only).
    pub router: Router,
    sessions: Arc<LocalSessionManager>,
    cancel: Arc<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for McpRoutes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpRoutes").finish_non_exhaustive()
    }
}

impl McpRoutes {
    /// The open sessions.
    pub fn sessions(&self) -> OpenSessions {
        OpenSessions(self.sessions.clone())
    }

    /// What ends the sessions and their event streams, so connections can drain: call it when
    /// the server shuts down.
    pub fn closer(&self) -> impl FnOnce() + Send + 'static {
        let cancel = self.cancel.clone();
        move || cancel()
    }
}

/// `/mcp` over these tools, for a server bound to `bind`: browser requests whose `Origin` is
/// not local (or the bind address) are refused; the `Host` check is the host's
/// (`linkly_http::Gate`).
pub fn router(linkly: Arc<Linkly>, bind: IpAddr, opts: &McpOptions) -> McpRoutes {
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(opts.session_idle_timeout);
    let sessions = Arc::new(sessions);
    let mut origins = vec![
        "http://localhost:*".to_string(),
        "http://127.0.0.1:*".to_string(),
        "http://[::1]:*".to_string(),
        "https://localhost:*".to_string(),
        "https://127.0.0.1:*".to_string(),
    ];
    if !bind.is_unspecified() {
        let host = match bind {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        };
        origins.push(format!("http://{host}:*"));
    }
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(opts.max_body_bytes);
    let token = config.cancellation_token.clone();
    let server = LinklyServer::new(linkly);
    let mcp = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), config);
    let router =
        Router::new()
            .nest_service("/mcp", mcp)
            .layer(axum::middleware::from_fn_with_state(
                Arc::new(McpLimits {
                    sessions: sessions.clone(),
                    max_sessions: opts.max_sessions,
                    max_body_bytes: opts.max_body_bytes,
                }),
                crate::filter::filter_mcp,
            ));
    McpRoutes {
        router,
        sessions,
        cancel: Arc::new(move || token.cancel()),
    }
}
