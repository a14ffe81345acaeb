//! The host's gate for the routes a bearer token reaches (`/mcp`, `/health`,
//! `/control/stop`): the LAN token where [`Access`] requires one, and otherwise a `Host` that
//! names this server (DNS-rebinding protection).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::access::{Access, HOST_REFUSED, constant_time_eq};

/// `routes` behind the gate of `access`.
pub fn guarded(routes: Router, access: Access) -> Router {
    routes.layer(axum::middleware::from_fn_with_state(
        Arc::new(access),
        guard,
    ))
}

/// Every request: the token where one is required; otherwise a local `Host`.
async fn guard(State(access): State<Arc<Access>>, req: Request, next: Next) -> Response {
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    if access.exempt(peer) {
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok());
        if !access.host_allowed(host) {
            return (StatusCode::FORBIDDEN, HOST_REFUSED).into_response();
        }
        return next.run(req).await;
    }
    let token = access.token().unwrap_or_default();
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
