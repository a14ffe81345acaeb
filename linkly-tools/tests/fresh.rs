//! The keep-fresh engine and the tools that keep their own answers fresh, in-process: what an
//! embedding program gets without the CLI.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{err_call, json_call};
use linkly_tools::{IndexState, KeepFreshOptions, Linkly};
use serde_json::json;

struct Env {
    _tmp: tempfile::TempDir,
    docs: std::path::PathBuf,
    linkly: Arc<Linkly>,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    fs_err::create_dir_all(&docs).unwrap();
    fs_err::write(
        docs.join("plan.md"),
        "# Plan\n\nThe budget for 2024 is set.\n",
    )
    .unwrap();
    let linkly = Arc::new(Linkly::open(common::watching(tmp.path(), &docs)).unwrap());
    Env {
        _tmp: tmp,
        docs,
        linkly,
    }
}

fn paths(l: &Linkly, query: &str) -> Vec<String> {
    let v = json_call(l, "search", json!({"query": query}));
    common::column(&v, "results", "path")
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// `note_save` (which answers JSON and takes no `output_format`).
fn save(l: &Linkly, args: serde_json::Value) -> serde_json::Value {
    let (text, err) = common::call(l, "note_save", args);
    assert!(!err, "note_save failed: {text}");
    serde_json::from_str(&text).unwrap()
}

fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{what}: not within 20 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn index_now_syncs_and_records_the_reconcile() {
    let e = env();
    let done = e.linkly.index_now(&mut |_| {}).unwrap();
    assert_eq!(done.sync.added, 1);
    assert!(done.embed.is_none(), "no model on disk: keyword-only");
    let c = e.linkly.coverage().unwrap();
    assert_eq!((c.documents, c.indexed), (1, 1));
    assert!(c.last_reconcile.is_some());
    assert!(!c.watching);
    assert_eq!(c.state, IndexState::Idle);
    // Entries carry when they were indexed.
    let v = json_call(&e.linkly, "search", json!({"query": "budget"}));
    assert!(
        v["results"][0]["indexed_at"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    let v = json_call(
        &e.linkly,
        "list",
        json!({"scope": "folder", "path": e.docs}),
    );
    assert!(v["items"][0]["indexed_at"].as_str().unwrap().ends_with('Z'));
    // Keyword-only, and said so.
    let md = common::call(&e.linkly, "search", json!({"query": "budget"})).0;
    assert!(md.contains("Note: Keyword-only search"), "{md}");
}

#[test]
fn keep_fresh_follows_new_changed_and_deleted_files() {
    let e = env();
    let engine = e
        .linkly
        .keep_fresh(
            KeepFreshOptions {
                watch: true,
                fetch_model: false,
            },
            |_| {},
        )
        .unwrap();
    assert!(engine.wait_ready(Duration::from_secs(30)));
    assert_eq!(e.linkly.index_state(), IndexState::Watching);
    assert!(e.linkly.coverage().unwrap().watching);
    assert_eq!(paths(&e.linkly, "budget").len(), 1);

    let trip = e.docs.join("trip.md");
    fs_err::write(&trip, "# Trip\n\nThe ferry leaves at nine.\n").unwrap();
    eventually("a new file is searchable", || {
        paths(&e.linkly, "ferry")
            .iter()
            .any(|p| p.ends_with("trip.md"))
    });
    fs_err::write(&trip, "# Trip\n\nThe train leaves at ten.\n").unwrap();
    eventually("a changed file is searchable by its new words", || {
        paths(&e.linkly, "train")
            .iter()
            .any(|p| p.ends_with("trip.md"))
    });
    fs_err::remove_file(&trip).unwrap();
    eventually("a deleted file leaves search", || {
        paths(&e.linkly, "train").is_empty()
    });
    // A note edited in a text editor (the notes folder lies in the data directory, which the
    // watcher otherwise ignores).
    let saved = save(
        &e.linkly,
        json!({"mode": "create", "content": "Groceries: apples"}),
    );
    let note = std::path::PathBuf::from(saved["path"].as_str().unwrap());
    let text = fs_err::read_to_string(&note).unwrap();
    fs_err::write(&note, text.replace("apples", "persimmons")).unwrap();
    eventually("a note edited by hand is searchable", || {
        !paths(&e.linkly, "persimmons").is_empty()
    });
    // While the engine runs, search has no staleness note.
    let md = common::call(&e.linkly, "search", json!({"query": "budget"})).0;
    assert!(!md.contains("nothing watches"), "{md}");
    drop(engine);
    assert!(!e.linkly.coverage().unwrap().watching);
}

#[test]
fn read_outline_and_grep_never_answer_from_stale_text() {
    let e = env();
    e.linkly.index_now(&mut |_| {}).unwrap();
    let v = json_call(&e.linkly, "search", json!({"query": "budget"}));
    let id = v["results"][0]["doc_id"].as_str().unwrap().to_string();
    let plan = e.docs.join("plan.md");
    // Edited behind the index's back (no watcher runs).
    fs_err::write(
        &plan,
        "# Plan v2\n\n## Costs\n\nThe budget for 2025 is larger.\n",
    )
    .unwrap();
    let read = json_call(&e.linkly, "read", json!({"doc_id": id}));
    let text = read.to_string();
    assert!(text.contains("2025") && !text.contains("2024"), "{text}");
    let outline = json_call(&e.linkly, "outline", json!({"doc_ids": [id]}));
    assert!(outline.to_string().contains("Costs"), "{outline}");
    let grep = json_call(&e.linkly, "grep", json!({"doc_id": id, "pattern": "2025"}));
    assert!(grep.to_string().contains("larger"), "{grep}");
    // Search sees the new text too: the record was re-indexed, not patched for one answer.
    assert_eq!(paths(&e.linkly, "larger").len(), 1);

    fs_err::remove_file(&plan).unwrap();
    let err = err_call(&e.linkly, "read", json!({"doc_id": id}));
    assert!(
        err.contains("DOC_NOT_FOUND") && err.contains("search again"),
        "{err}"
    );
    assert!(
        paths(&e.linkly, "budget").is_empty(),
        "the deleted file left the index"
    );
}

#[test]
fn note_save_answers_once_the_note_is_searchable() {
    let e = env();
    e.linkly.index_now(&mut |_| {}).unwrap();
    let saved = save(
        &e.linkly,
        json!({"mode": "create", "content": "Pelicans by the pier #birds"}),
    );
    let doc_id = saved["doc_id"].as_str().expect("a doc_id in the reply");
    let found = json_call(
        &e.linkly,
        "search",
        json!({"query": "pelicans", "scope": "notes", "tags": ["birds"]}),
    );
    assert_eq!(found["results"][0]["doc_id"], json!(doc_id), "{found}");
    let listed = json_call(&e.linkly, "list", json!({"scope": "notes"}));
    assert_eq!(listed["items"][0]["doc_id"], json!(doc_id), "{listed}");
    assert_eq!(listed["items"][0]["indexed"], json!(true));
    let read = json_call(&e.linkly, "read", json!({"doc_id": doc_id}));
    assert!(read.to_string().contains("Pelicans"), "{read}");
}

#[test]
fn an_old_index_that_nothing_watches_says_how_to_catch_up() {
    let e = env();
    // Never indexed: search says what to run.
    let md = common::call(&e.linkly, "search", json!({"query": "budget"})).0;
    assert!(md.contains("run `linkly index`"), "{md}");
    e.linkly.index_now(&mut |_| {}).unwrap();
    let md = common::call(&e.linkly, "search", json!({"query": "budget"})).0;
    assert!(
        !md.contains("run `linkly index`"),
        "a fresh index needs no note: {md}"
    );
}
