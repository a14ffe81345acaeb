//! Answers an agent can act on, through the real binary and through MCP (the official Python
//! SDK, `interop/client.py`): a search snippet's line range read back exactly, an empty search
//! that names its filter, a reversed date window refused with both parameters named.

use crate::common;

use common::{Env, corpus_dir};
use serde_json::{Value, json};

/// The sample plus a real document of the corpus (Spanish React docs).
fn env() -> Env {
    let spanish =
        fs_err::read_to_string(corpus_dir().join("md/reactdocs-es-thinking-in-react.md")).unwrap();
    let env = Env::new(&[
        ("react-es.md", spanish.as_str()),
        ("plain.txt", "alpha beta\ngamma budget delta\n"),
    ]);
    env.index();
    env
}

/// The first search result for `jerarquia` (no accent: the index folds it) in JSON.
fn hit(env: &Env) -> Value {
    let v = env.json(&["search", "jerarquia", "--limit", "1"]);
    v["results"][0].clone()
}

#[test]
fn cli_snippet_range_reads_back_and_empty_answers_explain() {
    let env = env();
    let r = hit(&env);
    assert_eq!(r["snippet_kind"], "text", "{r}");
    assert_eq!(r["matched_terms"][0], "jerarquía", "{r}");
    let (from, to) = (
        r["snippet_from"].as_u64().unwrap(),
        r["snippet_to"].as_u64().unwrap(),
    );
    let id = r["doc_id"].as_str().unwrap();
    let out = env.run(&[
        "read",
        id,
        "--offset",
        &from.to_string(),
        "--limit",
        &(to - from + 1).to_string(),
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("jerarquía"), "L{from}-{to}: {text}");
    // The Markdown form shows the range and marks the word.
    let out = env.run(&["search", "jerarquia", "--limit", "1"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let range = if from == to {
        format!("> (L{from}) ")
    } else {
        format!("> (L{from}-{to}) ")
    };
    let line = text.lines().find(|l| l.starts_with("> (L")).unwrap();
    assert!(
        line.starts_with(&range) && line.contains("**jerarquía**"),
        "{line}"
    );

    // An empty search names its filter, suggests dropping it, and still exits 1.
    let out = env.run(&["--exit-code", "search", "budget", "--type", "pdf"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("No results found for \"budget\"."), "{text}");
    assert!(text.contains("Filters: doc_types=[\"pdf\"]"), "{text}");
    assert!(
        text.contains("Hint: Without the filters (doc_types), 1 document matches"),
        "{text}"
    );
    let out = env.run(&["--json", "--exit-code", "search", "budget", "--type", "pdf"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["filters"]["doc_types"], json!(["pdf"]));
    assert_eq!(v["unfiltered_total"], 1);

    // A grep without a match says which option finds it, and still exits 1.
    let txt = env.doc_id("gamma");
    let out = env.run(&["--exit-code", "grep", "GAMMA", &txt]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("Hint: With case_insensitive=true the same pattern matches 1 line"),
        "{text}"
    );

    // A reversed window is refused, naming both parameters.
    let err = env.stderr_of_exit(
        2,
        &[
            "--exit-code",
            "search",
            "budget",
            "--modified-after",
            "2024-06-01",
            "--modified-before",
            "2024-01-01",
        ],
    );
    assert!(
        err.contains("[INVALID_ARGUMENT] modified_after (2024-06-01) is later than modified_before (2024-01-01)"),
        "{err}"
    );
}

#[test]
fn mcp_snippet_range_reads_back_and_empty_answers_explain() {
    let env = env();
    // The expected values come from the CLI; the MCP answers must agree and read back.
    let r = hit(&env);
    let (from, to) = (
        r["snippet_from"].as_u64().unwrap(),
        r["snippet_to"].as_u64().unwrap(),
    );
    let id = r["doc_id"].as_str().unwrap();
    let scenario = json!({
        "require_tools": ["search", "read"],
        "steps": [
            {"name": "search: the snippet's line range", "tool": "search",
             "arguments": {"query": "jerarquia", "limit": 1, "output_format": "json"},
             "expect": {"is_error": false, "json_paths": {
                 "$._json.results[0].doc_id": id,
                 "$._json.results[0].snippet_kind": "text",
                 "$._json.results[0].snippet_from": from,
                 "$._json.results[0].snippet_to": to,
                 "$._json.results[0].matched_terms[0]": "jerarquía"}}},
            {"name": "search: the range in Markdown", "tool": "search",
             "arguments": {"query": "jerarquia", "limit": 1},
             "expect": {"is_error": false, "contains": ["**jerarquía**"],
                        "matches": [format!(r"> \(L{from}(-{to})?\) ")]}},
            {"name": "read: exactly the snippet's lines", "tool": "read",
             "arguments": {"doc_id": id, "offset": from, "limit": to - from + 1, "output_format": "json"},
             "expect": {"is_error": false, "json_paths": {
                 "$._json.shown_from": from, "$._json.shown_to": to,
                 "$._json.content": {"contains": "jerarquía"}}}},
            {"name": "search: an empty answer names its filter", "tool": "search",
             "arguments": {"query": "budget", "doc_types": ["pdf"], "output_format": "json"},
             "expect": {"is_error": false, "json_paths": {
                 "$._json.total": 0,
                 "$._json.filters.doc_types": ["pdf"],
                 "$._json.unfiltered_total": 1,
                 "$._json.hint": {"contains": "drop or widen"}}}},
            {"name": "search: a reversed window is refused", "tool": "search",
             "arguments": {"query": "budget", "modified_after": "2024-06-01", "modified_before": "2024-01-01"},
             "expect": {"is_error": true, "contains": [
                 "[INVALID_ARGUMENT] modified_after (2024-06-01) is later than modified_before (2024-01-01)"],
                 "not_contains": ["[meta] now="]}},
            {"name": "list: a reversed window is refused", "tool": "list",
             "arguments": {"scope": "folder", "modified_after": "2024-06-01", "modified_before": "2024-01-01"},
             "expect": {"is_error": true, "contains": ["modified_after", "modified_before"]}},
        ]
    });
    let stdout = env.probe("answers", &env.stdio_target(), &scenario);
    assert!(stdout.matches("PASS").count() >= 6, "{stdout}");
}
