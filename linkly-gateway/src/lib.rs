//! Linkly Cloud, self-hosted: a multi-user MCP gateway that hosts the libraries people publish,
//! with `library_search`, `library_link` and the nine document tools over `cloud://` libraries.
//!
//! Two halves that share only the vocabulary ([`model`], [`GatewayError`]), with no arrow
//! between them:
//!
//! - The server (`linkly gateway serve`):
//!   - [`db`]: the one store of accounts, catalogue, links, invitations and published
//!     documents, in SQLite (one process) or PostgreSQL (several processes behind a load
//!     balancer);
//!   - [`catalog`]: the gateway's own tools, `library_search` and `library_link`;
//!   - [`admin`]: user tokens;
//!   - [`server`], [`libraries`], [`http`]: the MCP server, the published libraries' indexes,
//!     the HTTP front.
//! - The client, what the desktop `linkly` uses against a gateway:
//!   - [`publish`]: the client of the publish protocol (`linkly publish`);
//!   - [`remote`]: the stdio router of `linkly mcp --remote` (local tools here, cloud ones
//!     there).
//! - Shared: [`model`] (users, plans, libraries, visibility, published documents).

pub mod admin;
pub mod catalog;
pub mod db;
mod error;
pub mod http;
pub mod libraries;
pub mod model;
pub mod publish;
pub mod remote;
pub mod server;

pub use crate::error::{GatewayError, Result};
pub use crate::http::{BoundGateway, GatewayOptions, bind, serve};
