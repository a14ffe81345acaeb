//! The test run: the MCP interop client's Python environment, then `cargo test`. Everything it
//! reads lies in the repository (`interop/`, `testdata/`); the test model comes from PyPI.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context as _, bail};

/// Creates `target/mcp-harness/venv` with the interop client's locked requirements
/// (`interop/requirements.lock.txt`); again only when the lock file changes.
pub(crate) fn probe_setup() -> anyhow::Result<PathBuf> {
    let home = crate::target_dir().join("mcp-harness");
    let python = home.join("venv/bin/python");
    let stamp = home.join("installed.stamp");
    let lock = crate::root().join("interop/requirements.lock.txt");
    let pins = fs_err::read_to_string(&lock)?;
    if python.exists() && fs_err::read_to_string(&stamp).is_ok_and(|s| s == pins) {
        return Ok(home);
    }
    fs_err::create_dir_all(&home)?;
    let py = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    eprintln!(
        "xtask: creating the MCP interop client's environment in {}",
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
        bail!("installing the MCP interop client's requirements failed");
    }
    fs_err::write(&stamp, pins)?;
    Ok(home)
}

/// Installs the test tools, then runs the workspace tests.
pub(crate) fn test(extra: &[String]) -> anyhow::Result<()> {
    let harness = probe_setup()?;
    let model = crate::test_model::ensure()?;
    let (e5_file, e5_dir) = crate::test_model::ensure_e5()?;
    let speech = crate::test_speech::ensure()?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(crate::root())
        .args(["test", "--workspace"])
        .args(extra)
        .env("MCP_HARNESS_HOME", &harness)
        .env(crate::test_model::TEST_MODEL_ENV, &model)
        .env(crate::test_model::TEST_E5_FILE_ENV, &e5_file)
        .env(crate::test_model::TEST_E5_DIR_ENV, &e5_dir)
        .env(crate::test_speech::TEST_SPEECH_ENV, &speech)
        .env_remove("LINKLY_SHARED_DIR")
        .status()?;
    if !status.success() {
        bail!("cargo test failed");
    }
    Ok(())
}
