//! The server half, `linkly gateway serve`: the store, the catalogue, the published libraries
//! as the tools read them from the store, the MCP handler and the HTTP front.
//!
//! Nothing in [`crate::client`] may use this module (`cargo xtask tidy` checks it): the client
//! and the server share only [`crate::model`] and [`crate::GatewayError`].

pub mod admin;
pub mod catalog;
pub mod db;
pub mod http;
pub mod mcp;
pub mod published;
mod sessions;
