//! The child processes the benchmarks run (`linkly`, Python, xtask itself): their output once
//! they exited 0, or an error that names them and carries their stderr.

use std::process::{Command, Output};

use anyhow::{Context as _, bail};
use serde_json::Value;

/// Runs `cmd` to its end; an error naming `what`, with its stderr, unless it exited 0.
pub(crate) fn output(cmd: &mut Command, what: &str) -> anyhow::Result<Output> {
    let out = cmd
        .output()
        .with_context(|| format!("{what}: cannot start {:?}", cmd.get_program()))?;
    if !out.status.success() {
        bail!("{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(out)
}

/// Runs `cmd` like [`output`] and parses its stdout as JSON.
pub(crate) fn json(cmd: &mut Command, what: &str) -> anyhow::Result<Value> {
    let out = output(cmd, what)?;
    serde_json::from_slice(&out.stdout).with_context(|| format!("{what}: its JSON output"))
}
