//! The CLI and MCP give the same answer: each tool called as `linkly --json <tool> …` (embedded,
//! then in client mode against a running server) and through an MCP client with the same
//! arguments returns the same JSON, `_meta.now` and the CLI's `status` aside. The CLI builds
//! the tool's own params type, so a flag that maps to the wrong parameter shows here.

use crate::common;

use common::Env;
use linkly_mcp::RemoteClient;
use serde_json::{Value, json};

/// An answer with what legitimately differs taken out: the CLI's `status`, the time, and
/// `explore`'s `recent.since` (now minus 7 days) and `freshness`, which describes the answering process (a one-shot CLI is `idle`,
/// a server `watching`, with its own last sync).
fn comparable(mut v: Value) -> Value {
    if let Value::Object(map) = &mut v {
        map.remove("status");
        map.remove("_meta");
        map.remove("freshness");
        if let Some(Value::Object(recent)) = map.get_mut("recent") {
            recent.remove("since");
        }
    }
    v
}

/// The Markdown footer's time line (`[meta] now=…`) taken out of a text.
fn without_footer(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("[meta] now="))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the CLI printed with `--json`, made comparable.
fn cli(env: &Env, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = env.run(&all);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    // A Markdown-only answer (`list_libraries`) comes wrapped as `content`.
    let wrapped = v.as_object().is_some_and(|m| m.len() == 2);
    match v.get("content").and_then(Value::as_str).filter(|_| wrapped) {
        Some(text) => json!({"content": without_footer(text)}),
        None => match v["status"].as_str() {
            // An error: the tool's `[CODE] message` behind the CLI's `Tool error: `.
            Some("error") => json!({"error": v["message"].as_str().unwrap()
                .trim_start_matches("Tool error: ")}),
            _ => comparable(v),
        },
    }
}

/// What an MCP client got for the same call, made comparable the same way.
fn mcp(rt: &tokio::runtime::Runtime, client: &RemoteClient, tool: &str, args: &Value) -> Value {
    let out = rt.block_on(client.call(tool, args.clone())).unwrap();
    let parsed: Option<Value> = serde_json::from_str(&out.text).ok();
    match (out.is_error, parsed) {
        (true, Some(v)) => json!({"error": format!("[{}] {}",
            v["error"]["code"].as_str().unwrap(), v["error"]["message"].as_str().unwrap())}),
        (true, None) => json!({"error": out.text}),
        (false, Some(v)) => comparable(v),
        (false, None) => json!({"content": without_footer(&out.text)}),
    }
}

#[test]
fn each_tool_answers_the_cli_as_it_answers_mcp() {
    let env = Env::sample();
    env.index();
    let docs = env.docs.canonicalize().unwrap();
    let docs = docs.to_str().unwrap().to_string();
    let out = env.run(&[
        "library",
        "add",
        "plans",
        &docs,
        "--description",
        "All plans",
    ]);
    assert!(out.status.success());
    let guide = env.doc_id("planning");
    let g = env.doc_id("hit");
    let created = env.json(&[
        "note-save",
        "--mode",
        "create",
        "--content",
        "Budget idea\n\n#work",
    ]);
    assert!(created["note_id"].is_string(), "{created}");
    let ghost = "00000000-0000-4000-8000-000000000000";

    // (CLI arguments, tool, MCP arguments); every call asks for JSON where the tool has it.
    let cases: Vec<(Vec<&str>, &str, Value)> = vec![
        (
            vec![
                "search",
                "budget",
                "--limit",
                "5",
                "--type",
                "MD,txt",
                "--time-sort",
                "newest",
            ],
            "search",
            json!({"query": "budget", "limit": 5, "doc_types": ["MD", "txt"], "time_sort": "newest"}),
        ),
        (
            vec!["search", "idea", "--scope", "notes", "--tags", "#Work"],
            "search",
            json!({"query": "idea", "scope": "notes", "tags": ["#Work"]}),
        ),
        (
            vec!["outline", &guide, "--expand", "1"],
            "outline",
            json!({"doc_ids": [&guide], "expand": ["1"]}),
        ),
        (
            vec![
                "grep", "HIT", &g, "-C", "1", "-i", "--limit", "3", "--offset", "1",
            ],
            "grep",
            json!({"pattern": "HIT", "doc_id": &g, "context": 1, "case_insensitive": true, "limit": 3, "offset": 1}),
        ),
        (
            vec!["grep", "hit", &g, "--mode", "count"],
            "grep",
            json!({"pattern": "hit", "doc_id": &g, "output_mode": "count"}),
        ),
        (
            vec![
                "read",
                &guide,
                "--offset",
                "3",
                "--limit",
                "4",
                "--image-text",
                "none",
            ],
            "read",
            json!({"doc_id": &guide, "offset": 3, "limit": 4, "image_text": "none"}),
        ),
        (vec!["list-libraries"], "list_libraries", json!({})),
        (
            vec!["explore", "--library", "plans"],
            "explore",
            json!({"library": "plans"}),
        ),
        (
            vec!["find-paths", "--patterns", "notes,jp", "--limit", "5"],
            "find_paths",
            json!({"patterns": ["notes", "jp"], "limit": 5}),
        ),
        (
            vec![
                "list",
                "--scope",
                "folder",
                "--path",
                &docs,
                "--sort",
                "name",
                "--limit",
                "3",
                "--snippet",
            ],
            "list",
            json!({"scope": "folder", "path": &docs, "sort": "name", "limit": 3, "snippet": true}),
        ),
        (
            vec!["list", "--scope", "notes", "--no-snippet"],
            "list",
            json!({"scope": "notes", "snippet": false}),
        ),
        // The tool's own refusals, parameter named, reach both alike.
        (
            vec!["search", "budget", "--limit", "80"],
            "search",
            json!({"query": "budget", "limit": 80}),
        ),
        (
            vec!["search", "budget", "--type", "exe"],
            "search",
            json!({"query": "budget", "doc_types": ["exe"]}),
        ),
        (
            vec!["find-paths", "--patterns", "a", "--limit", "0"],
            "find_paths",
            json!({"patterns": ["a"], "limit": 0}),
        ),
        (
            vec![
                "note-save",
                "--mode",
                "edit",
                "--note-id",
                ghost,
                "--base-version",
                "abc",
                "--content",
                "x",
            ],
            "note_save",
            json!({"mode": "edit", "note_id": ghost, "base_version": "abc", "content": "x"}),
        ),
    ];

    let embedded: Vec<Value> = cases.iter().map(|(args, _, _)| cli(&env, args)).collect();
    let (_server, port) = env.serve_watching(&["--no-model-download"]);
    let (rt, client) = common::connect_remote(&env, port);
    for ((args, tool, mcp_args), embedded) in cases.iter().zip(embedded) {
        let mut mcp_args = mcp_args.clone();
        if !matches!(*tool, "list_libraries" | "note_save") {
            mcp_args["output_format"] = json!("json");
        }
        let over_mcp = mcp(&rt, &client, tool, &mcp_args);
        assert_eq!(
            embedded, over_mcp,
            "{args:?} (embedded CLI) vs {tool} {mcp_args} (MCP)"
        );
        // The CLI in client mode, through the same server.
        let client_mode = cli(&env, args);
        assert_eq!(client_mode, over_mcp, "{args:?} (CLI client mode) vs MCP");
    }
}
