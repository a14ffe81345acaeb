//! The edit loop of the product documents (list → read → note_save edit → conflict → re-read →
//! retry), driven through `linkly mcp` by the official MCP Python SDK client.
//!
//! The probe cannot carry values from one step to the next, so the scenario runs in two
//! phases; between them the test reads the note file, computes its version (SHA-256 of the
//! bytes) and plays a person editing the note in a text editor.

use crate::common;

use std::path::{Path, PathBuf};

use common::Env;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

fn sha(path: &Path) -> String {
    format!("{:x}", Sha256::digest(fs_err::read(path).unwrap()))
}

fn body_of(path: &Path) -> String {
    let text = fs_err::read_to_string(path).unwrap();
    text.split_once("\n---\n").unwrap().1.to_string()
}

/// Creates a note with `content` (and `extra` flags) as the app "Tester" and indexes it;
/// returns `note-save`'s answer, the note's id and its file.
fn create_note(env: &Env, content: &str, extra: &[&str]) -> (Value, String, PathBuf) {
    let mut args = vec!["note-save", "--mode", "create", "--content", content];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--app-name", "Tester"]);
    let created = env.json(&args);
    let id = created["note_id"].as_str().unwrap().to_string();
    let path = PathBuf::from(created["path"].as_str().unwrap());
    env.index();
    (created, id, path)
}

fn run_phase(env: &Env, name: &str, scenario: Value) {
    let stdout = env.probe(name, &env.stdio_target(), &scenario);
    common::assert_passed(&stdout, &["[check] schema note_save"]);
}

#[test]
fn the_edit_loop_through_the_python_sdk_client() {
    let env = Env::new(&[("doc.md", "# Doc\n\nSome text about trains.\n")]);
    let (_, id, path) = create_note(&env, "Trip plan\n- book the train\n- pack #travel\n", &[]);
    let found = env.json(&["search", "train", "--scope", "notes"]);
    assert_eq!(found["total"], 1, "only the note: {found}");
    let doc_id = found["results"][0]["doc_id"].as_str().unwrap().to_string();
    let v1 = sha(&path);
    let body1 = body_of(&path);
    let agent_body = format!("{body1}- buy snacks\n");

    // Phase A: list → read → edit → a second agent with the same base conflicts.
    run_phase(
        &env,
        "phase-a",
        json!({
            "require_tools": ["list", "read", "note_save"],
            "steps": [
                {"name": "list notes", "tool": "list", "arguments": {"scope": "notes"},
                 "expect": {"is_error": false, "json_paths": {
                    "$._json.total": 1,
                    "$._json.items[0].note_id": id,
                    "$._json.items[0].version": v1,
                    "$._json.items[0].indexed": true,
                    "$._json.items[0].doc_id": doc_id,
                    "$._json.items[0].title": "Trip plan",
                    "$._json.items[0].source": "Tester",
                    "$._json.items[0].tags": ["travel"],
                    "$._json.available_tags": ["travel"]}}},
                {"name": "read the full body", "tool": "read", "arguments": {"doc_id": doc_id},
                 "expect": {"is_error": false, "contains": ["- book the train", "- pack #travel"]}},
                {"name": "edit from the version read", "tool": "note_save",
                 "arguments": {"mode": "edit", "note_id": id, "base_version": v1,
                               "content": agent_body, "app_name": "Probe"},
                 "expect": {"is_error": false, "json_paths": {
                    "$._json.note_id": id,
                    "$._json.version": {"regex": "^[0-9a-f]{64}$", "ne": v1},
                    "$._json.content": agent_body,
                    "$._json.tags": ["travel"],
                    "$._json.doc_id": doc_id}}},
                {"name": "a second writer from the same base conflicts", "tool": "note_save",
                 "arguments": {"mode": "edit", "note_id": id, "base_version": v1,
                               "content": "Trip plan\n- overwrite everything\n"},
                 "expect": {"is_error": true, "contains": ["[NOTE_VERSION_CONFLICT]", "Nothing was written"],
                            "matches": ["current version is [0-9a-f]{64}"]}},
                {"name": "the list shows the new version, already indexed", "tool": "list",
                 "arguments": {"scope": "notes", "output_format": "json"},
                 "expect": {"json_paths": {
                    "$._json.items[0].version": {"ne": v1},
                    "$._json.items[0].indexed": true,
                    "$._json.items[0].doc_id": doc_id,
                    "$._json.items[0].source": "Probe"}}},
                {"name": "a forbidden construct is refused", "tool": "note_save",
                 "arguments": {"mode": "create", "content": "# Heading\n\n[link](http://x)"},
                 "expect": {"is_error": true, "contains": ["[NOTE_INVALID_INPUT]", "heading (line 1)", "link (line 3)"]}},
                {"name": "unknown fields are rejected", "tool": "note_save",
                 "arguments": {"mode": "create", "content": "x", "output_format": "json"},
                 "expect": {"args_schema_valid": false, "is_error": true, "contains": ["output_format"]}}
            ]
        }),
    );
    let body2 = body_of(&path);
    assert_eq!(
        body2, agent_body,
        "the edit landed and the loser wrote nothing"
    );
    let v2 = sha(&path);

    // Between the phases a person adds a line in a text editor; the index catches up.
    let mut text = fs_err::read_to_string(&path).unwrap();
    text.push_str("- charge the phone\n");
    fs_err::write(&path, &text).unwrap();
    let v3 = sha(&path);
    env.index();
    let merged = format!("{}- bring water #train\n", body_of(&path));

    // Phase B: the agent's version is stale → conflict with the actual version → re-read →
    // merge → retry.
    run_phase(
        &env,
        "phase-b",
        json!({
            "require_tools": ["list", "read", "note_save"],
            "steps": [
                {"name": "the agent's last version is stale", "tool": "note_save",
                 "arguments": {"mode": "edit", "note_id": id, "base_version": v2,
                               "content": format!("{agent_body}- bring water\n")},
                 "expect": {"is_error": true, "contains": ["[NOTE_VERSION_CONFLICT]", format!("current version is {v3}")]}},
                {"name": "re-read: list", "tool": "list", "arguments": {"scope": "notes"},
                 "expect": {"json_paths": {
                    "$._json.items[0].version": v3,
                    "$._json.items[0].indexed": true,
                    "$._json.items[0].doc_id": doc_id}}},
                {"name": "re-read: read", "tool": "read", "arguments": {"doc_id": doc_id},
                 "expect": {"contains": ["- buy snacks", "- charge the phone"]}},
                {"name": "retry with the merged body", "tool": "note_save",
                 "arguments": {"mode": "edit", "note_id": id, "base_version": v3, "content": merged},
                 "expect": {"is_error": false, "json_paths": {
                    "$._json.content": merged,
                    "$._json.tags": ["travel", "train"]}}},
                {"name": "search by tag finds the note", "tool": "search",
                 "arguments": {"query": "train", "tags": ["#Travel"], "output_format": "json"},
                 "expect": {"json_paths": {"$._json.total": 1, "$._json.results[0].doc_id": doc_id}}}
            ]
        }),
    );
    let final_body = body_of(&path);
    assert_eq!(final_body, merged);
    for line in [
        "- book the train",
        "- buy snacks",
        "- charge the phone",
        "- bring water #train",
    ] {
        assert!(final_body.contains(line), "{line} lost:\n{final_body}");
    }
    assert!(!final_body.contains("overwrite"));
}

/// An agent's loop through the Python SDK client: read a note (its body, with the front
/// matter as metadata), send back the text read with one span edited and the version read,
/// find it by tag. Nothing of the front matter is text, keywords or counts.
#[test]
fn what_read_returns_is_what_note_save_takes_back() {
    let env = Env::new(&[("doc.md", "# Doc\n\nSome text about herons.\n")]);
    let body =
        "Herons fish at dawn\nThey stand still in **shallow water** #Wildlife\n- frogs\n- fish\n";
    let (created, id, path) = create_note(&env, body, &["--tags", "birds"]);
    let doc_id = env.json(&["search", "herons", "--scope", "notes"])["results"][0]["doc_id"]
        .as_str()
        .unwrap()
        .to_string();
    let version = sha(&path);
    let effective = created["content"].as_str().unwrap().trim_end().to_string();
    // What the agent sends back: the text read, one span replaced.
    let revised = effective.replace("- frogs", "- frogs and eels");
    run_phase(
        &env,
        "read-edit-loop",
        json!({
            "require_tools": ["read", "note_save", "search"],
            "steps": [
                {"name": "read shows the body and the note's metadata", "tool": "read",
                 "arguments": {"doc_id": doc_id, "output_format": "json"},
                 "expect": {"is_error": false, "json_paths": {
                    "$._json.content": effective,
                    "$._json.title": "Herons fish at dawn",
                    "$._json.total_lines": effective.lines().count(),
                    "$._json.note.note_id": id,
                    "$._json.note.version": version,
                    "$._json.note.tags": ["wildlife", "birds"],
                    "$._json.front_matter.title": "Herons fish at dawn",
                    "$._json.front_matter.source": "Tester",
                    "$._json.front_matter_lines": 7}}},
                {"name": "read in Markdown: line 1 is the body's first line", "tool": "read",
                 "arguments": {"doc_id": doc_id},
                 "expect": {"is_error": false,
                            "contains": ["note: note_id", version, "     1\tHerons fish at dawn"],
                            "not_contains": ["\tnote_id:", "\t---"]}},
                {"name": "send back the text read, one span edited", "tool": "note_save",
                 "arguments": {"mode": "edit", "note_id": id, "base_version": version, "content": revised},
                 "expect": {"is_error": false, "json_paths": {"$._json.content": revised}}},
                {"name": "search by tag finds it under its title", "tool": "search",
                 "arguments": {"query": "eels", "tags": ["wildlife"], "output_format": "json"},
                 "expect": {"is_error": false, "json_paths": {
                    "$._json.total": 1,
                    "$._json.results[0].doc_id": doc_id,
                    "$._json.results[0].title": "Herons fish at dawn"}}},
                {"name": "the note id is not text", "tool": "search",
                 "arguments": {"query": id[..8].to_string(), "output_format": "json"},
                 "expect": {"is_error": false, "json_paths": {"$._json.total": 0}}}
            ]
        }),
    );
    assert_eq!(body_of(&path), revised);
    // Keywords come from the body: no fragments of timestamps or ids.
    let hit = &env.json(&["search", "herons", "--scope", "notes"])["results"][0];
    let keywords = common::strings(&hit["keywords"]);
    assert!(!keywords.is_empty(), "{hit}");
    assert!(
        keywords
            .iter()
            .all(|k| !k.chars().any(|c| c.is_ascii_digit())),
        "{keywords:?}"
    );
    assert_eq!(hit["title"], "Herons fish at dawn");
}
