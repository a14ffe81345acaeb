//! Linkly's HTTP host: the accept loop, who may call (the access rule and its guards), the
//! server's own routes (`/health`, `/control/stop`), the port file and the control token —
//! the ground the front ends (the window at `/`, MCP at `/mcp`) are served on.
//!
//! It knows axum and hyper, and neither the MCP protocol nor HTML: a front end hands it
//! [`Routes`] (an `axum::Router` whose every route has a [`Class`]), [`Gate::wrap`] puts the one
//! gate before them, and [`serve`] runs it with a cap on connections and a header read timeout
//! ([`serve_connections`]), writes the port file, and counts activity for servers that stop
//! when unused. `linkly-cli`'s daemon composes the window, `/mcp` and [`BoundHttp::host_routes`]
//! on it; the gateway runs its own routes on [`serve_connections`].

mod access;
mod conn;
mod gate;
mod health;
mod host;

pub use crate::access::{Access, HOST_REFUSED, LanSwitch, constant_time_eq, is_local_peer};
pub use crate::conn::{ConnLimits, serve as serve_connections};
pub use crate::gate::{
    ANONYMOUS_BODY_BYTES, ANONYMOUS_READ_TIMEOUT, AUTH_COOKIE, BASELINE_CSP, Caller, Class, Gate,
    GateOptions, LAN_OFF, LINK_LIFETIME, LanShared, LinkError, Refusal, RefusalPage, RouteClass,
    Routes, SESSION_COOKIE, class_of, cookie, new_token, sign_in_link_code,
};
pub use crate::health::{
    CONTROL_HEADER, Health, IndexStatus, PortFile, ServerInfo, StartedBy, StopRequest,
};
pub use crate::host::{BoundHttp, HttpError, HttpOptions, ServerState, bind, serve};
