//! Linkly Cloud, self-hosted: a multi-user MCP gateway that hosts the libraries people publish,
//! with `library_search`, `library_link` and the nine document tools over `cloud://` libraries.
//!
//! - [`model`]: users, plans, libraries, visibility, published documents.
//! - [`db`]: the one store of accounts, catalogue, links, invitations and published documents,
//!   in SQLite (one process) or PostgreSQL (several processes behind a load balancer).
//! - [`publish`]: the client of the publish protocol (`linkly publish`).
//! - [`remote`]: the stdio router of `linkly mcp --remote` (local tools here, cloud ones there).

pub mod db;
mod error;
pub mod model;
pub mod publish;
pub mod remote;

pub use crate::error::{GatewayError, Result};
