//! Linkly Cloud, self-hosted: a multi-user MCP gateway that hosts the libraries people publish,
//! with `library_search`, `library_link` and the nine document tools over `cloud://` libraries.
//!
//! Two halves that share only the vocabulary ([`model`], [`GatewayError`]); the arrow points
//! one way, the client never uses the server (`cargo xtask tidy` checks it):
//!
//! - [`server`], `linkly gateway serve` (the `server` feature; the desktop `linkly` leaves it
//!   out, and PostgreSQL with it):
//!   - [`server::db`]: the one store of accounts, catalogue, links, invitations and published
//!     documents, in SQLite (one process) or PostgreSQL (several processes behind a load
//!     balancer);
//!   - [`server::catalog`]: the gateway's own tools, `library_search` and `library_link`;
//!   - [`server::admin`]: user tokens;
//!   - [`server::mcp`], [`server::published`], [`server::http`]: the MCP server, the published
//!     libraries as the tools read them from the store, the HTTP front.
//! - [`client`], what the desktop `linkly` uses against a gateway:
//!   - [`client::publish`]: the client of the publish protocol (`linkly publish`);
//!   - [`client::remote`]: the stdio router of `linkly mcp --remote` (local tools here, cloud
//!     ones there).
//! - Shared: [`model`] (users, plans, libraries, visibility, published documents).

pub mod client;
mod error;
pub mod model;
#[cfg(feature = "server")]
pub mod server;

pub use crate::error::{GatewayError, Result};
#[cfg(feature = "server")]
pub use crate::server::http::{BoundGateway, GatewayOptions, bind, serve};
