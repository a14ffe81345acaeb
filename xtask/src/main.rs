//! `cargo xtask`: Linkly's automation.
//!
//! - `cargo xtask test [ARGS]`: installs what the tests need (the MCP probe's Python client in
//!   `target/mcp-harness`), then runs `cargo test --workspace [ARGS]`.
//! - `cargo xtask bench index|search|all`: indexing and search benchmarks on a generated
//!   10,000-document corpus and on BEIR SciFact (release build).

// A command-line tool prints by design.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench;
mod bench_serve;
mod corpus;
mod harness;

use std::path::PathBuf;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("test") => harness::test(&args[1..]),
        Some("probe-setup") => harness::probe_setup().map(|_| ()),
        Some("bench") => bench::run(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <command>\n\n  test [ARGS]          install the test tools, then cargo test --workspace [ARGS]\n  probe-setup          install the MCP probe client only\n  bench index|search|all|serve [--docs N]   benchmarks (release build)"
            );
            std::process::exit(2);
        }
    }
}

/// The workspace root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

/// The folder of shared material beside the repository (or `LINKLY_SHARED_DIR`).
fn shared_dir() -> PathBuf {
    std::env::var_os("LINKLY_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared"))
}

/// The target folder.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}
