//! The test run: the MCP probe's Python client, then `cargo test`.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context as _, bail};

/// Creates `target/mcp-harness/venv` with the probe's locked requirements (once).
pub(crate) fn probe_setup() -> anyhow::Result<PathBuf> {
    let home = crate::target_dir().join("mcp-harness");
    let python = home.join("venv/bin/python");
    let stamp = home.join("installed.stamp");
    let lock = crate::shared_dir().join("tools/mcp-probe/requirements.lock.txt");
    if !lock.exists() {
        bail!(
            "{} is missing: the shared folder must lie beside the repository (or set LINKLY_SHARED_DIR)",
            lock.display()
        );
    }
    if stamp.exists() && python.exists() {
        return Ok(home);
    }
    fs_err::create_dir_all(&home)?;
    let py = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    eprintln!(
        "xtask: creating the MCP probe environment in {}",
        home.display()
    );
    let ok = Command::new(&py)
        .args(["-m", "venv"])
        .arg(home.join("venv"))
        .status()
        .with_context(|| format!("cannot run {py}"))?
        .success();
    if !ok {
        bail!("`{py} -m venv` failed (on Debian: apt-get install python3-venv)");
    }
    let ok = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&lock)
        .status()?
        .success();
    if !ok {
        bail!("installing the MCP probe's requirements failed");
    }
    fs_err::write(&stamp, "ok\n")?;
    Ok(home)
}

/// Installs the test tools, then runs the workspace tests.
pub(crate) fn test(extra: &[String]) -> anyhow::Result<()> {
    let harness = probe_setup()?;
    let model = crate::test_model::ensure()?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(crate::root())
        .args(["test", "--workspace"])
        .args(extra)
        .env("MCP_HARNESS_HOME", &harness)
        .env(crate::test_model::TEST_MODEL_ENV, &model)
        .env("LINKLY_SHARED_DIR", crate::shared_dir())
        .status()?;
    if !status.success() {
        bail!("cargo test failed");
    }
    Ok(())
}
