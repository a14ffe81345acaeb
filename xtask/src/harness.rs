//! The test run: the MCP interop client's Python environment, the PostgreSQL cluster of the
//! gateway's tests, then `cargo test`. Everything it reads lies in the repository (`interop/`,
//! `testdata/`); the test model and PostgreSQL come from PyPI.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Command;

use anyhow::bail;

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
    eprintln!(
        "xtask: creating the MCP interop client's environment in {}",
        home.display()
    );
    crate::venv::install(
        &home.join("venv"),
        "the MCP interop client's requirements",
        [OsStr::new("-r"), lock.as_os_str()],
    )?;
    fs_err::write(&stamp, pins)?;
    Ok(home)
}

/// Installs the test tools, then runs the workspace tests.
pub(crate) fn test(extra: &[String]) -> anyhow::Result<()> {
    let harness = probe_setup()?;
    let model = crate::test_model::ensure()?;
    let (e5_file, e5_dir) = crate::test_model::ensure_e5()?;
    let speech = crate::test_speech::ensure()?;
    // Stopped when it goes out of scope, after the tests, whatever they did.
    let cluster = crate::pg_cluster::Cluster::start()?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut status = Command::new(&cargo)
        .current_dir(crate::root())
        .args(["test", "--workspace"])
        // The hosts' build of `linkly`, with the gateway server: its tests run it.
        .args(["--features", "linkly-cli/gateway-server"])
        .args(extra)
        .env("MCP_HARNESS_HOME", &harness)
        .env(crate::test_model::TEST_MODEL_ENV, &model)
        .env(crate::test_model::TEST_E5_FILE_ENV, &e5_file)
        .env(crate::test_model::TEST_E5_DIR_ENV, &e5_dir)
        .env(crate::test_speech::TEST_SPEECH_ENV, &speech)
        .env(crate::pg_cluster::URL_ENV, cluster.url())
        .env(crate::pg_cluster::CLUSTER_ENV, &cluster.description)
        .env_remove("LINKLY_SHARED_DIR")
        .status()?;
    if status.success() && extra.is_empty() {
        // A build with the registry's example tool: one tool declared once is listed and
        // called by the CLI, MCP and the gateway (`linkly-cli/tests/tool_table.rs`).
        status = Command::new(&cargo)
            .current_dir(crate::root())
            .args(["test", "-p", "linkly-cli", "--test", "it"])
            .args(["--features", "gateway-server,example-tool", "tool_table"])
            .env_remove("LINKLY_SHARED_DIR")
            .status()?;
    }
    drop(cluster);
    if !status.success() {
        bail!("cargo test failed");
    }
    Ok(())
}
