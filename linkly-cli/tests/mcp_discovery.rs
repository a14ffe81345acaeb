//! The discovery tools (`list_libraries`, `explore`, `find_paths`, `list`, and `search` with a
//! library) through the real `linkly mcp` binary and an independent MCP client (the official
//! Python SDK, `interop/client.py`).

use crate::common;

use common::Env;
use serde_json::{Value, json};

/// The Markdown footer at the very end of a text.
const FOOTER: &str = r"\n---\n\[meta\] now=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$";
const NOW: &str = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$";

fn md(name: &str, tool: &str, arguments: Value, contains: &[&str]) -> Value {
    json!({"name": name, "tool": tool, "arguments": arguments,
           "expect": {"is_error": false, "contains": contains, "matches": [FOOTER]}})
}

fn js(name: &str, tool: &str, mut arguments: Value, paths: Value) -> Value {
    arguments["output_format"] = json!("json");
    let mut paths = paths;
    paths["$._json._meta.now"] = json!({"regex": NOW});
    json!({"name": name, "tool": tool, "arguments": arguments,
           "expect": {"is_error": false, "json_paths": paths}})
}

fn error(name: &str, tool: &str, arguments: Value, contains: &[&str]) -> Value {
    json!({"name": name, "tool": tool, "arguments": arguments,
           "expect": {"is_error": true, "contains": contains, "not_contains": ["[meta] now="]}})
}

fn scenario(env: &Env) -> Value {
    let docs = env.docs.canonicalize().unwrap();
    let docs = docs.to_str().unwrap();
    let alpha = format!("{docs}/projects/alpha");
    let outside = env.tmp.path().canonicalize().unwrap();
    json!({
        "require_tools": ["list_libraries", "explore", "find_paths", "list", "search"],
        "steps": [
            md("list_libraries in Markdown", "list_libraries", json!({}),
               &["# Libraries", "- **proj** (local://1): Project plans (3 docs, 1 folder)"]),
            {"name": "list_libraries takes no arguments", "tool": "list_libraries",
             "arguments": {"output_format": "json"},
             "expect": {"args_schema_valid": false, "is_error": true, "contains": ["INVALID_ARGUMENT", "unknown field `output_format`"]}},
            md("explore in Markdown", "explore", json!({}),
               &["# Explore", "## Summary", "## Directories", "## Top keywords", "## Recent activity (last 7 days)"]),
            js("explore in JSON", "explore", json!({}), json!({
                "$._json.summary.documents": 6,
                "$._json.directories[0].path": docs,
                "$._json.directories[0].file_count": 6})),
            js("explore a library", "explore", json!({"library": "local://1"}), json!({
                "$._json.summary.documents": 3,
                "$._json.scope": "library proj (local://1)"})),
            md("find_paths in Markdown", "find_paths", json!({"patterns": ["ALPHA", "東京"]}),
               &["# Find Paths", "Found 2 folder(s), 3 files total.", &format!("path_glob: `{alpha}/`")]),
            js("find_paths in JSON", "find_paths", json!({"patterns": ["alpha"]}), json!({
                "$._json.total_files": 2, "$._json.truncated": false,
                "$._json.directories[0].path": alpha,
                "$._json.directories[0].path_glob": format!("{alpha}/"),
                "$._json.directories[0].file_count": 2})),
            md("list a folder in Markdown", "list", json!({"scope": "folder", "path": docs, "sort": "name"}),
               &["# Files", &format!("Showing 6 of 6 files (sort: name, offset: 0) — target: {docs}"), "README: local://"]),
            js("list a library in JSON", "list", json!({"scope": "library", "library": "proj", "limit": 2}), json!({
                "$._json.scope": "library", "$._json.total": 3, "$._json.has_more": true,
                "$._json.items": {"len": 2}, "$._json.items[0].skip_reason": null,
                "$._json.items[0].snippet": null})),
            js("search within a library", "search", json!({"query": "tantivy budget", "library": "proj"}), json!({
                "$._json.total": 3})),
            error("list: tags with scope folder", "list", json!({"scope": "folder", "tags": ["work"]}),
                  &["[INVALID_ARGUMENT] tags", "scope \"notes\""]),
            error("list: scope library without library", "list", json!({"scope": "library"}),
                  &["[INVALID_ARGUMENT] library is required with scope \"library\""]),
            error("list: unknown library", "list", json!({"scope": "library", "library": "nope"}),
                  &["[LIBRARY_NOT_FOUND] library \"nope\" not found", "\"proj\" (local://1)"]),
            error("list: path outside the watched folders", "list",
                  json!({"scope": "folder", "path": outside.to_str().unwrap()}), &["[PATH_NOT_ALLOWED]"]),
            error("search: unknown library", "search", json!({"query": "x", "library": "nope"}),
                  &["[LIBRARY_NOT_FOUND]"]),
            error("search: cloud library", "search", json!({"query": "x", "library": "cloud://me/lib"}),
                  &["[INVALID_ARGUMENT]", "remote gateway"]),
            error("explore: unknown library in JSON", "explore", json!({"library": "nope", "output_format": "json"}),
                  &["\"code\":\"LIBRARY_NOT_FOUND\""]),
            // The schema says the bound too (maxItems); the server still checks it.
            {"name": "find_paths: too many patterns", "tool": "find_paths",
             "arguments": {"patterns": ["a","b","c","d","e","f","g","h","i","j","k"]},
             "expect": {"args_schema_valid": false, "is_error": true,
                        "contains": ["[INVALID_ARGUMENT] patterns must hold between 1 and 10"],
                        "not_contains": ["[meta] now="]}}
        ]
    })
}

#[test]
fn discovery_tools_through_the_python_sdk_client() {
    let env = Env::new(&[
        ("README.md", "# Read me\n\nThe test tree.\n"),
        ("guide.md", common::GUIDE),
        ("projects/alpha/plan.md", "# Plan\n\ntantivy tantivy plan\n"),
        ("projects/alpha/notes.txt", "tantivy notes tantivy\n"),
        ("projects/beta/spec.md", "# Spec\n\nbudget budget review\n"),
        ("資料/東京/報告.md", "# 東京の報告\n\n東京の研究所。\n"),
    ]);
    env.index();
    let projects = env.docs.join("projects");
    env.run_ok(&[
        "library",
        "add",
        "proj",
        projects.to_str().unwrap(),
        "--description",
        "Project plans",
    ]);

    let stdout = env.probe("discovery", &env.stdio_target(), &scenario(&env));
    let last = stdout.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("18 passed") || stdout.matches("PASS").count() >= 18,
        "{stdout}"
    );
    common::assert_passed(
        &stdout,
        &[
            "[check] schema list_libraries",
            "[check] schema explore",
            "[check] schema find_paths",
        ],
    );
}
