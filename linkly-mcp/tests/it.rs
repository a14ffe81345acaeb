//! The MCP server as clients meet it.
//!
//! Every integration test of `linkly-mcp`, in one test binary.
//!
//! One binary per crate links the crate's dependencies once instead of once per file (each
//! link was 20 to 133 MB of unoptimised code; the workspace's 55 came to 2.6 GB).
//! Each file below is a module; `cargo xtask tidy` checks that every `tests/*.rs` is listed
//! here (the package sets `autotests = false`). Run one file's tests with
//! `cargo test -p linkly-mcp --test it <file>::`.

mod common;

mod errors;
mod guidance;
mod hostile;
mod tools_list;
