//! The client half, what the desktop `linkly` runs against a gateway: `linkly publish` and
//! `linkly mcp --remote`.
//!
//! It speaks to a gateway over HTTP only and never uses [`crate::server`] (`cargo xtask tidy`
//! checks it); it shares [`crate::model`] and [`crate::GatewayError`] with the server.

pub mod publish;
pub mod remote;
