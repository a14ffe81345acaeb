//! The HTTP host as clients meet it.
//!
//! Every integration test of `linkly-http`, in one test binary (see `linkly-mcp/tests/it.rs`
//! for why). Run one file's tests with `cargo test -p linkly-http --test it <file>::`.

mod common;

mod conn;
mod gate;
