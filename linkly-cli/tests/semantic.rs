//! Semantic search end to end through the real `linkly` binary: `linkly index` embeds with the
//! real test model (all-MiniLM-L6-v2 from `cargo xtask test-model`, given as
//! `LINKLY_MODEL_DIR`), then a paraphrase that shares no word with its target finds it, in
//! hybrid mode, through the CLI and through the MCP server driven by the Python SDK probe; with
//! no model the same search answers in keyword mode.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::{Env, MEANING, PARAPHRASE, succeeded};
use linkly_models::test_inputs::TestInput;
use serde_json::{Value, json};

/// The test model's folder; fails (never skips) when it is not there.
fn test_model() -> PathBuf {
    TestInput::MiniLm.path()
}

fn env() -> Env {
    Env::new(MEANING)
}

/// `linkly --json search PARAPHRASE --limit 3` run by `cmd` (with or without the model),
/// asserted to succeed and parsed.
fn search(cmd: &mut Command) -> Value {
    let out = succeeded(
        cmd.args(["--json", "search", PARAPHRASE, "--limit", "3"])
            .output()
            .unwrap(),
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_paraphrase_finds_its_document_through_the_cli_and_mcp() {
    let env = env();
    let model = test_model();
    let out = env
        .cmd()
        .env("LINKLY_MODEL_DIR", &model)
        .args(["index", env.docs.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "index failed: {stderr}");
    assert!(stderr.contains("Embedded 3 documents"), "{stderr}");

    let v = search(env.cmd().env("LINKLY_MODEL_DIR", &model));
    assert_eq!(v["mode"], "hybrid", "{v}");
    let first = v["results"][0]["path"].as_str().unwrap_or_default();
    assert!(first.ends_with("bread.md"), "{v}");

    let mut target = env.stdio_target();
    target.extend([
        "--env".to_string(),
        format!("LINKLY_MODEL_DIR={}", model.display()),
    ]);
    let scenario = json!({"steps": [
        {"name": "hybrid search over MCP", "tool": "search",
         "arguments": {"query": PARAPHRASE, "limit": 1, "output_format": "json"},
         "expect": {"is_error": false, "contains": ["\"mode\":\"hybrid\"", "bread.md"]}}
    ]});
    env.probe("semantic", &target, &scenario);

    // `linkly mcp` shared the data directory's server (it started one, with the model): stop
    // it, so that the CLI runs embedded again.
    let port_file = env.home.join("port");
    let pid =
        serde_json::from_str::<serde_json::Value>(&fs_err::read_to_string(&port_file).unwrap())
            .unwrap()["pid"]
            .as_u64()
            .unwrap();
    assert!(
        std::process::Command::new("kill")
            .arg(pid.to_string())
            .status()
            .unwrap()
            .success()
    );
    let start = std::time::Instant::now();
    while port_file.exists() {
        assert!(start.elapsed().as_secs() < 30, "the server did not stop");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }

    // Without the model the same search still answers, from BM25 alone.
    let v = search(env.cmd().env_remove("LINKLY_MODEL_DIR"));
    assert_eq!(v["mode"], "keyword", "{v}");
}
