//! Linkly Cloud, self-hosted: a multi-user MCP gateway that hosts the libraries people publish,
//! with `library_search`, `library_link` and the nine document tools over `cloud://` libraries.
//!
//! - [`model`]: users, plans, libraries, visibility, published documents.
//! - [`db`]: the one store of accounts, catalogue, links, invitations and published documents,
//!   in SQLite (one process) or PostgreSQL (several processes behind a load balancer).
//! - [`catalog`]: the gateway's own tools, `library_search` and `library_link`.
//! - [`admin`]: user tokens.
//! - [`server`], [`libraries`], [`http`]: the gateway server (`linkly gateway serve`).

pub mod admin;
pub mod catalog;
pub mod db;
mod error;
pub mod http;
pub mod libraries;
pub mod model;
pub mod server;

pub use crate::error::{GatewayError, Result};
pub use crate::http::{BoundGateway, GatewayOptions, bind, serve};
