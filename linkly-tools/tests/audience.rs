//! A visitor signed in over the LAN (`Audience::Shared`) reads only the libraries the person
//! shares: every tool, through `call_as` as MCP over HTTP calls it, and the typed API inside
//! `Audience::run` as the window calls it. The person (`Audience::Person`) reads everything.

use std::sync::Arc;

use linkly_core::{Config, DataDir, Library};
use linkly_tools::{Audience, Linkly, SearchParams};
use serde_json::{Value, json};

use crate::common::write_files;

struct Fixture {
    _tmp: tempfile::TempDir,
    linkly: Arc<Linkly>,
    /// A document of the shared library, and one outside it.
    shared_doc: String,
    private_doc: String,
}

/// Two watched folders, `team/` (library "team", shared on the LAN) and `private/` (library
/// "private", not shared); the same word in both, and a note of the person's.
fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let team = tmp.path().join("team");
    let private = tmp.path().join("private");
    write_files(
        &team,
        &[("plan.md", "# Plan\n\nThe quarterly budget is set.\n")],
    );
    write_files(
        &private,
        &[(
            "salary.md",
            "# Salary\n\nThe budget of my salary, private.\n",
        )],
    );
    let data = DataDir::new(tmp.path().join("home"));
    data.ensure().unwrap();
    let mut config = Config::default();
    config.add_folder(&team).unwrap();
    config.add_folder(&private).unwrap();
    for (id, name, folder) in [(1, "team", &team), (2, "private", &private)] {
        config.libraries.push(Library {
            id,
            name: name.into(),
            folders: vec![fs_err::canonicalize(folder).unwrap()],
            ..Library::default()
        });
    }
    config.lan_shared_libraries = vec!["team".into()];
    config.save(&data).unwrap();
    let linkly = Arc::new(Linkly::open(data).unwrap());
    linkly.index_now(&mut |_| {}).unwrap();
    linkly
        .note_save(
            serde_json::from_value(json!({
                "mode": "create",
                "content": "My diary: budget worries.\n",
                "app_name": "test",
            }))
            .unwrap(),
        )
        .unwrap();
    let found = linkly
        .search(SearchParams {
            query: "budget".into(),
            ..Default::default()
        })
        .unwrap();
    let id_of = |file: &str| {
        found
            .results
            .iter()
            .find(|r| r.path.ends_with(file))
            .unwrap_or_else(|| panic!("{file} not found by the person: {found:?}"))
            .doc_id
            .clone()
    };
    Fixture {
        shared_doc: id_of("plan.md"),
        private_doc: id_of("salary.md"),
        _tmp: tmp,
        linkly,
    }
}

fn visitor() -> Audience {
    Audience::Shared(vec!["team".into()])
}

/// A tool call's JSON answer for `audience`, or its error text.
fn call(f: &Fixture, audience: &Audience, tool: &str, mut args: Value) -> Result<Value, String> {
    if !matches!(tool, "list_libraries" | "note_save") {
        args["output_format"] = json!("json");
    }
    let out = f.linkly.call_as(audience, tool, args).unwrap();
    if out.is_error {
        Err(out.text)
    } else {
        Ok(serde_json::from_str(&out.text).unwrap())
    }
}

fn paths(answer: &Value, list: &str) -> Vec<String> {
    answer[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn the_person_reads_everything() {
    let f = fixture();
    let found = call(&f, &Audience::Person, "search", json!({"query": "budget"})).unwrap();
    assert_eq!(found["total"], 3, "{found}");
    call(
        &f,
        &Audience::Person,
        "read",
        json!({"doc_id": f.private_doc}),
    )
    .unwrap();
    let libs = Audience::Person.run(|| f.linkly.list_libraries()).unwrap();
    assert_eq!(libs.libraries.len(), 2);
}

#[test]
fn a_visitor_searches_and_reads_only_the_shared_libraries() {
    let f = fixture();
    let v = visitor();
    // Search without a library covers the shared ones: the private file and the note are out.
    let found = call(&f, &v, "search", json!({"query": "budget"})).unwrap();
    assert_eq!(paths(&found, "results").len(), 1, "{found}");
    assert!(paths(&found, "results")[0].ends_with("plan.md"));
    let notes = call(
        &f,
        &v,
        "search",
        json!({"query": "budget", "scope": "notes"}),
    )
    .unwrap();
    assert_eq!(notes["total"], 0, "{notes}");
    // Naming the private library: not found, with the shared ones named.
    let refused = call(
        &f,
        &v,
        "search",
        json!({"query": "budget", "library": "private"}),
    )
    .unwrap_err();
    assert!(refused.contains("LIBRARY_NOT_FOUND"), "{refused}");
    assert!(refused.contains("team"), "{refused}");
    // The private document by its id: not found, for read, grep and outline alike.
    for (tool, args) in [
        ("read", json!({"doc_id": f.private_doc})),
        (
            "grep",
            json!({"doc_id": f.private_doc, "pattern": "salary"}),
        ),
    ] {
        let refused = call(&f, &v, tool, args).unwrap_err();
        assert!(refused.contains("DOC_NOT_FOUND"), "{tool}: {refused}");
    }
    let outline = match call(&f, &v, "outline", json!({"doc_ids": [f.private_doc]})) {
        Ok(answer) => answer.to_string(),
        Err(refused) => refused,
    };
    assert!(
        outline.contains("not found") && !outline.contains("Salary"),
        "{outline}"
    );
    let read = call(&f, &v, "read", json!({"doc_id": f.shared_doc})).unwrap();
    assert!(read.to_string().contains("quarterly budget"), "{read}");
    // Discovery: only the shared library, its folder.
    let libs = v.run(|| f.linkly.list_libraries()).unwrap();
    let names: Vec<&str> = libs.libraries.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["team"]);
    let listed = f
        .linkly
        .call_as(&v, "list_libraries", json!({}))
        .unwrap()
        .text;
    assert!(!listed.contains("private"), "{listed}");
    let listed = call(&f, &v, "list", json!({"scope": "folder"})).unwrap();
    let text = listed.to_string();
    assert!(
        text.contains("plan.md") && !text.contains("salary"),
        "{text}"
    );
    let explored = call(&f, &v, "explore", json!({})).unwrap().to_string();
    assert!(!explored.contains("private"), "{explored}");
    let folders = call(&f, &v, "find_paths", json!({"patterns": ["private"]})).unwrap();
    assert!(!folders.to_string().contains("private/"), "{folders}");
    // A list of another folder by path: refused or empty, never its files.
    let private_dir = f.linkly.config().folders[1].display().to_string();
    match call(
        &f,
        &v,
        "list",
        json!({"scope": "folder", "path": private_dir}),
    ) {
        Ok(answer) => assert!(!answer.to_string().contains("salary"), "{answer}"),
        Err(refused) => assert!(!refused.contains("salary.md"), "{refused}"),
    }
    // Notes are the person's: the notes folder and note_save are refused.
    let refused = call(&f, &v, "list", json!({"scope": "notes"})).unwrap_err();
    assert!(refused.contains("person"), "{refused}");
    let refused = call(
        &f,
        &v,
        "note_save",
        json!({"mode": "create", "content": "x"}),
    )
    .unwrap_err();
    assert!(refused.contains("person"), "{refused}");
    // The typed API, as the window calls it, under the same rule.
    let typed = v.run(|| {
        f.linkly.search(SearchParams {
            query: "salary".into(),
            ..Default::default()
        })
    });
    assert_eq!(typed.unwrap().total, 0);
    assert!(
        v.run(|| f.linkly.fresh_doc(doc_number(&f.private_doc)))
            .unwrap()
            .is_none()
    );
}

#[test]
fn a_visitor_of_a_server_that_shares_nothing_reads_nothing() {
    let f = fixture();
    let nobody = Audience::Shared(Vec::new());
    let found = call(&f, &nobody, "search", json!({"query": "budget"})).unwrap();
    assert_eq!(found["total"], 0, "{found}");
    let refused = call(&f, &nobody, "list", json!({"scope": "folder"})).unwrap_err();
    assert!(refused.contains("none"), "{refused}");
}

/// `local://N` → N.
fn doc_number(id: &str) -> linkly_core::DocId {
    linkly_core::DocId(id.rsplit('/').next().unwrap().parse().unwrap())
}
