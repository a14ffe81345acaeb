//! What reaches rmcp at `/mcp`: a size limit, the JSON-RPC check of [`crate::inbound`] with
//! proper error codes, a cap on sessions, `DELETE` answered 200. Who may call is the host's
//! (`linkly_http`).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use rmcp::model::{ClientRequest, JsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use crate::inbound::{Inbound, Rejection, check_message};

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
