//! What agents are shown: the whole `tools/list` answer (names, titles, descriptions, input
//! schemas, annotations) as an MCP client receives it, held to a snapshot in the repository so
//! that any change to it shows in review (issue 14, point 2). Also: arguments as models send
//! them (`"limit": "5"`) over MCP.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::Session;
use linkly_core::{Config, DataDir};
use linkly_tools::Linkly;
use serde_json::{Value, json};

/// The snapshot, kept beside the tests.
fn snapshot_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/tools_list.json")
}

/// The first place where two JSON values differ, as a JSON pointer, with both sides.
fn first_difference(at: &str, expected: &Value, actual: &Value) -> Option<String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            let keys: std::collections::BTreeSet<&String> = e.keys().chain(a.keys()).collect();
            keys.into_iter().find_map(|k| {
                let (e, a) = (
                    e.get(k).unwrap_or(&Value::Null),
                    a.get(k).unwrap_or(&Value::Null),
                );
                first_difference(&format!("{at}/{k}"), e, a)
            })
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => e
            .iter()
            .zip(a)
            .enumerate()
            .find_map(|(i, (e, a))| first_difference(&format!("{at}/{i}"), e, a)),
        _ if expected == actual => None,
        _ => Some(format!(
            "at {at}:\n  snapshot: {expected}\n  now:      {actual}"
        )),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_matches_the_snapshot() {
    let (_tmp, mut session) = Session::empty().await;
    let list = session.tools_list().await;
    let text = serde_json::to_string_pretty(&list).unwrap() + "\n";
    let path = snapshot_path();
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(&path, &text).unwrap();
        return;
    }
    let stored = fs_err::read_to_string(&path).unwrap_or_default();
    let expected: Value = serde_json::from_str(&stored).unwrap_or(Value::Null);
    if let Some(diff) = first_difference("", &expected, &list) {
        panic!(
            "tools/list differs from {} ({diff}).\nWhat agents see changed: if that is meant, \
             rewrite the snapshot with `UPDATE_SNAPSHOTS=1 cargo test -p linkly-mcp --test it \
             tools_list::` and review its diff (and `cargo xtask tokens`).",
            path.display()
        );
    }
    // Same value, same bytes: the file stays the canonical pretty form.
    assert_eq!(
        stored, text,
        "re-run with UPDATE_SNAPSHOTS=1 to normalise the file"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_is_in_the_snapshot_with_its_annotations() {
    // The snapshot itself: nine tools, each with a schema and the read-only hint.
    let stored: Value =
        serde_json::from_str(&fs_err::read_to_string(snapshot_path()).unwrap()).unwrap();
    let names: Vec<&str> = stored["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let registry: Vec<&str> = linkly_tools::TOOLS.iter().map(|t| t.name).collect();
    assert_eq!(names, registry);
    for t in stored["tools"].as_array().unwrap() {
        let read_only = t["name"] != "note_save";
        assert_eq!(t["annotations"]["readOnlyHint"], read_only, "{t}");
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    }
}

/// A session over an index of one document of 30 lines; its id.
async fn indexed() -> (tempfile::TempDir, Session, String) {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    fs_err::create_dir_all(&docs).unwrap();
    let text: String = (1..=30)
        .map(|i| format!("line {i} the quokka smiles\n"))
        .collect();
    fs_err::write(docs.join("quokka.md"), text).unwrap();
    let data = DataDir::new(tmp.path().join("home"));
    let mut config = Config::default();
    config.add_folder(&docs).unwrap();
    config.save(&data).unwrap();
    let linkly = Arc::new(Linkly::open(data).unwrap());
    linkly.index_now(&mut |_| {}).unwrap();
    let mut session = Session::start(linkly).await;
    let (found, err) = session
        .call(
            "search",
            json!({"query": "quokka", "output_format": "json"}),
        )
        .await;
    assert!(!err, "{found}");
    let found: Value = serde_json::from_str(&found).unwrap();
    let id = found["results"][0]["doc_id"].as_str().unwrap().to_string();
    (tmp, session, id)
}

/// An answer without its `[meta] now=` footer, which changes from call to call.
fn stable(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("[meta]"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn integers_may_come_as_numeric_strings_over_mcp() {
    let (_tmp, mut s, id) = indexed().await;
    let (number, err) = s.call("read", json!({"doc_id": id, "limit": 5})).await;
    assert!(!err, "{number}");
    assert!(number.contains("(lines 1-5 of 30"), "{number}");
    let (string, err) = s.call("read", json!({"doc_id": id, "limit": "5"})).await;
    assert!(!err, "{string}");
    assert_eq!(stable(&string), stable(&number));
    let (grep, err) = s
        .call(
            "grep",
            json!({"pattern": "quokka", "doc_id": id, "context": "0", "limit": "2",
                   "offset": "1", "output_format": "json"}),
        )
        .await;
    assert!(!err, "{grep}");
    let grep: Value = serde_json::from_str(&grep).unwrap();
    assert_eq!(grep["returned"], 2, "{grep}");
    assert_eq!(grep["matches"][0]["line_number"], 2, "{grep}");
    // Not a number: a tool error naming the parameter, not a protocol error.
    let (text, err) = s
        .call("search", json!({"query": "quokka", "limit": "five"}))
        .await;
    assert!(err, "{text}");
    assert!(text.starts_with("[INVALID_ARGUMENT] limit: "), "{text}");
    // A string is range-checked like a number.
    let (text, err) = s
        .call("search", json!({"query": "quokka", "limit": "51"}))
        .await;
    assert!(err, "{text}");
    assert!(
        text.contains("limit must be between 1 and 50 (got 51)"),
        "{text}"
    );
}
