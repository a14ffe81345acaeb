//! The Python virtual environments that tests and benchmarks install from PyPI on first use: the
//! MCP interop client's, faster-whisper's, sentence-transformers'.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

/// Creates a virtual environment in `dir` (with `$PYTHON`, else `python3`) and installs into
/// it what `pip_args` name (`pip install`'s arguments); `what` names it in the error. Returns
/// the environment's `python`.
pub(crate) fn install<S: AsRef<OsStr>>(
    dir: &Path,
    what: &str,
    pip_args: impl IntoIterator<Item = S>,
) -> anyhow::Result<PathBuf> {
    let base = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(&base)
        .args(["-m", "venv"])
        .arg(dir)
        .status()
        .with_context(|| format!("cannot run {base}"))?
        .success();
    if !ok {
        bail!(
            "`{base} -m venv {}` failed (on Debian: apt-get install python3-venv)",
            dir.display()
        );
    }
    let python = dir.join("bin/python");
    let ok = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(pip_args)
        .status()?
        .success();
    if !ok {
        bail!("installing {what} into {} failed", dir.display());
    }
    Ok(python)
}
