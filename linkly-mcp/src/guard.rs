//! The HTTP server's gates: who may call (the LAN token, the DNS-rebinding `Host` check, for
//! `/health` as for `/mcp`), and what reaches rmcp at `/mcp` (a size limit, the JSON-RPC check
//! of [`crate::inbound`] with proper error codes, a cap on sessions, `DELETE` answered 200).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use rmcp::model::{ClientRequest, JsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use crate::inbound::{Inbound, Rejection, check_message};

/// Who may call.
#[derive(Debug)]
pub(crate) struct Access {
    token: Option<String>,
    bind: IpAddr,
}

impl Access {
    /// The rule for a server bound to `bind`, with a LAN token or not.
    pub(crate) fn new(bind: IpAddr, token: Option<String>) -> Access {
        Access {
            token: token.filter(|t| !t.is_empty()),
            bind,
        }
    }

    /// Whether `peer` may call without the token: 127.0.0.1 and `::1`, when the server listens
    /// on a wildcard address or on 127.0.0.1/`::1` itself.
    fn exempt(&self, peer: Option<IpAddr>) -> bool {
        if self.token.is_none() {
            return true;
        }
        let default_bind = self.bind.is_unspecified()
            || self.bind == IpAddr::V4(Ipv4Addr::LOCALHOST)
            || self.bind == IpAddr::V6(Ipv6Addr::LOCALHOST);
        default_bind && peer.is_some_and(is_local_peer)
    }

    /// Whether `Host` names this server by a loopback name or its bind address (any port).
    fn host_allowed(&self, host: Option<&HeaderValue>) -> bool {
        let Some(host) = host.and_then(|h| h.to_str().ok()) else {
            return false;
        };
        let name = host_name(host).to_ascii_lowercase();
        let name = name.strip_suffix('.').unwrap_or(&name);
        if matches!(name, "localhost" | "127.0.0.1" | "::1") {
            return true;
        }
        !self.bind.is_unspecified() && name.parse::<IpAddr>().is_ok_and(|ip| ip == self.bind)
    }
}

/// The name part of a `Host` value: `[::1]:80` → `::1`, `localhost:80` → `localhost`.
fn host_name(host: &str) -> &str {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// True for the addresses local clients connect from (`127.0.0.1`, `::1`).
pub(crate) fn is_local_peer(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4 == Ipv4Addr::LOCALHOST,
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped() == Some(Ipv4Addr::LOCALHOST),
    }
}

pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Every request: the token where one is required; otherwise a local `Host`.
pub(crate) async fn guard(State(access): State<Arc<Access>>, req: Request, next: Next) -> Response {
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    if access.exempt(peer) {
        if !access.host_allowed(req.headers().get(header::HOST)) {
            return (
                StatusCode::FORBIDDEN,
                "Forbidden: the Host header must name this server by a loopback address (DNS-rebinding protection)",
            )
                .into_response();
        }
        return next.run(req).await;
    }
    let token = access.token.as_deref().unwrap_or_default();
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    if presented.is_some_and(|p| constant_time_eq(p.as_bytes(), token.as_bytes())) {
        return next.run(req).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "missing or wrong bearer token: LAN clients must send Authorization: Bearer <token> (see `linkly status` on the server)",
    )
        .into_response()
}

/// What `/mcp` lets through (the state of [`filter_mcp`]).
#[derive(Debug)]
pub struct McpLimits {
    /// The server's sessions, to count them.
    pub sessions: Arc<LocalSessionManager>,
    /// Open sessions at most: a new one beyond is answered 503.
    pub max_sessions: usize,
    /// The largest request body: 413 beyond.
    pub max_body_bytes: usize,
}

fn json_response(status: StatusCode, body: serde_json::Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn is_json(req: &Request) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

/// `/mcp`: a JSON POST is read (up to the limit) and checked before rmcp parses it again; a
/// refusal is answered here (400 with `-32700`/`-32600`, or 200 with `-32602` and the request's
/// id); a new session beyond the cap is answered 503. `DELETE` answers 200 rather than rmcp's
/// 202 (clients log a failed close otherwise).
pub async fn filter_mcp(
    State(limits): State<Arc<McpLimits>>,
    req: Request,
    next: Next,
) -> Response {
    if req.method() == Method::DELETE {
        let mut response = next.run(req).await;
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        return response;
    }
    if req.method() != Method::POST || !is_json(&req) {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let bytes = match Limited::new(body, limits.max_body_bytes).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "Payload Too Large: request body exceeds {} bytes",
                    limits.max_body_bytes
                ),
            )
                .into_response();
        }
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("cannot read the request body: {e}"),
            )
                .into_response();
        }
    };
    match check_message(&bytes) {
        Inbound::Rejected(rejection) => {
            tracing::debug!(code = rejection.code, message = %rejection.message, "refused an MCP message");
            let status = if rejection.id.is_null() {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::OK
            };
            return json_response(status, rejection.to_json());
        }
        Inbound::Ignored => return StatusCode::ACCEPTED.into_response(),
        Inbound::Message(message) => {
            let initialize = matches!(&*message, JsonRpcMessage::Request(r)
                if matches!(r.request, ClientRequest::InitializeRequest(_)));
            if initialize && !parts.headers.contains_key("mcp-session-id") {
                let open = limits.sessions.sessions.read().await.len();
                if open >= limits.max_sessions {
                    tracing::warn!(open, "MCP session cap reached: refusing a new session");
                    let id = match &*message {
                        JsonRpcMessage::Request(r) => {
                            serde_json::to_value(&r.id).unwrap_or_default()
                        }
                        _ => serde_json::Value::Null,
                    };
                    let rejection = Rejection {
                        code: -32000,
                        message: format!(
                            "Too many open MCP sessions ({open}): close unused ones (DELETE) or retry later; idle sessions expire"
                        ),
                        id,
                    };
                    let mut response =
                        json_response(StatusCode::SERVICE_UNAVAILABLE, rejection.to_json());
                    response
                        .headers_mut()
                        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
                    return response;
                }
            }
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
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

    #[test]
    fn who_needs_the_token() {
        let local = Some("127.0.0.1".parse().unwrap());
        let lan = Some("192.168.1.5".parse().unwrap());
        let t = || Some("t".to_string());
        let any = Access::new("0.0.0.0".parse().unwrap(), t());
        assert!(any.exempt(local) && !any.exempt(lan) && !any.exempt(None));
        let other_loopback = Access::new("127.0.0.2".parse().unwrap(), t());
        assert!(!other_loopback.exempt(local));
        assert!(!other_loopback.exempt(Some("127.0.0.2".parse().unwrap())));
        let no_token = Access::new("127.0.0.2".parse().unwrap(), None);
        assert!(no_token.exempt(local));
    }

    #[test]
    fn host_names() {
        let a = Access::new("127.0.0.2".parse().unwrap(), None);
        let h = |s: &'static str| a.host_allowed(Some(&HeaderValue::from_static(s)));
        assert!(h("127.0.0.1:60606") && h("localhost") && h("LOCALHOST.:1") && h("[::1]:8"));
        assert!(h("127.0.0.2:60606"));
        assert!(!h("evil.example:60606") && !h("127.0.0.3") && !h("localhost.evil.example"));
        assert!(!a.host_allowed(None));
        let any = Access::new("0.0.0.0".parse().unwrap(), None);
        assert!(!any.host_allowed(Some(&HeaderValue::from_static("0.0.0.0:1"))));
    }
}
