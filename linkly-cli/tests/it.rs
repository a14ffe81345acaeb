//! The `linkly` binary driven as people and agents drive it.
//!
//! Every integration test of `linkly-cli`, in one test binary.
//!
//! One binary per crate links the crate's dependencies once instead of once per file (each
//! link was 20 to 133 MB of unoptimised code; the workspace's 55 came to 2.6 GB).
//! Each file below is a module; `cargo xtask tidy` checks that every `tests/*.rs` is listed
//! here (the package sets `autotests = false`). Run one file's tests with
//! `cargo test -p linkly-cli --test it <file>::`.

mod browser;
mod common;

mod agent;
mod answers;
mod cli;
mod clients;
mod config;
mod crash;
mod discovery;
mod dist;
mod download;
mod formats;
mod fresh;
// `linkly gateway serve` is in the hosts' build only: `cargo xtask test` turns it on.
#[cfg(feature = "gateway-server")]
mod gateway;
mod handover;
mod lan_ui;
mod library_notes;
mod mcp_discovery;
mod mcp_notes;
mod mcp_ocr;
mod mcp_probe;
mod model_import;
mod note_save;
mod ocr;
mod parity;
mod repair;
mod semantic;
// The registry's example tool through every front end: `cargo xtask test` turns both on.
mod serve;
mod settings_ui;
#[cfg(all(feature = "gateway-server", feature = "example-tool"))]
mod tool_table;
mod transcribe;
mod ui;
