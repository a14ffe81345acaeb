//! The self-hosted gateway: its catalogue, stores, HTTP API and faults.
//!
//! Every integration test of `linkly-gateway`, in one test binary.
//!
//! One binary per crate links the crate's dependencies once instead of once per file (each
//! link was 20 to 133 MB of unoptimised code; the workspace's 55 came to 2.6 GB).
//! Each file below is a module; `cargo xtask tidy` checks that every `tests/*.rs` is listed
//! here (the package sets `autotests = false`). Run one file's tests with
//! `cargo test -p linkly-gateway --test it <file>::`.

mod common;

mod catalog;
mod cluster;
mod db;
mod faults;
mod published;
mod server;
