//! `library_search` and `library_link` as the gateway's MCP server calls them: answers'
//! shape in both formats, every status, and parameter errors.

use linkly_gateway::model::{LibraryKey, LibraryMeta, Limits, Plan, User, Visibility};
use linkly_gateway::server::catalog::{library_link, library_search};
use linkly_gateway::server::db::{Db, DbSpec};
use serde_json::{Value, json};

struct Fixture {
    db: Db,
    alice: User,
    carol: User,
    _dir: tempfile::TempDir,
}

/// alice owns `rust` (public, 0 documents), `design` (showcase) and `diary` (private); carol
/// (free plan) owns nothing.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&DbSpec::Sqlite(dir.path().join("g.sqlite"))).unwrap();
    let (alice, _) = db.add_user("alice", Plan::Pro).unwrap();
    let (carol, _) = db.add_user("carol", Plan::Free).unwrap();
    for (slug, title, visibility) in [
        ("rust", "Rust Patterns", Visibility::Public),
        ("design", "Design Systems", Visibility::Showcase),
        ("diary", "Diary", Visibility::Private),
    ] {
        db.upsert_library(
            &alice,
            slug,
            &LibraryMeta {
                title: title.into(),
                description: format!("All about {slug}"),
                category: "programming".into(),
                visibility: Some(visibility),
            },
        )
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(3));
    }
    Fixture {
        db,
        alice,
        carol,
        _dir: dir,
    }
}

impl Fixture {
    /// `library_search` as carol.
    fn carol_searches(&self, args: Value) -> linkly_tools::ToolOutput {
        library_search(&self.db, &self.carol, args)
    }

    /// `library_link` as carol, with these limits.
    fn carol_links(&self, limits: &Limits, args: Value) -> linkly_tools::ToolOutput {
        library_link(&self.db, &self.carol, limits, args)
    }
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn search_json(f: &Fixture, viewer: &User, args: Value) -> Value {
    let mut args = args;
    args["output_format"] = json!("json");
    let out = library_search(&f.db, viewer, args);
    assert!(!out.is_error, "{}", out.text);
    json_of(&out.text)
}

fn link_json(f: &Fixture, user: &User, limits: &Limits, args: Value) -> (bool, Value) {
    let mut args = args;
    args["output_format"] = json!("json");
    let out = library_link(&f.db, user, limits, args);
    (out.is_error, json_of(&out.text))
}

#[test]
fn tool_definitions() {
    let tools = linkly_gateway::server::mcp::tools();
    assert_eq!(
        tools[..2].iter().map(|t| &*t.name).collect::<Vec<_>>(),
        ["library_search", "library_link"]
    );
    let search = serde_json::to_value(&tools[0]).unwrap();
    assert_eq!(search["annotations"]["readOnlyHint"], json!(true));
    assert_eq!(search["inputSchema"]["additionalProperties"], json!(false));
    let props = &search["inputSchema"]["properties"];
    assert_eq!(props["limit"]["minimum"], json!(1));
    assert_eq!(props["limit"]["maximum"], json!(50));
    assert_eq!(props["limit"]["default"], json!(10));
    assert_eq!(props["offset"]["default"], json!(0));
    assert_eq!(props["category"]["enum"].as_array().unwrap().len(), 9);
    assert_eq!(props["output_format"]["default"], json!("markdown"));
    let link = serde_json::to_value(&tools[1]).unwrap();
    assert_eq!(link["annotations"]["readOnlyHint"], json!(false));
    assert_eq!(link["annotations"]["destructiveHint"], json!(true));
    assert_eq!(link["annotations"]["idempotentHint"], json!(true));
    assert_eq!(link["inputSchema"]["required"], json!(["library"]));
    assert_eq!(
        link["inputSchema"]["properties"]["action"]["enum"],
        json!(["link", "unlink", null])
    );
    assert_eq!(link["inputSchema"]["additionalProperties"], json!(false));
    assert!(
        link["description"]
            .as_str()
            .unwrap()
            .contains("never choose")
    );
}

#[test]
fn search_answers_in_json() {
    let f = fixture();
    let v = search_json(&f, &f.carol, json!({}));
    assert_eq!(v["signed_in_as"], json!("carol"));
    assert_eq!(v["total"], json!(2));
    assert_eq!(
        (v["offset"].clone(), v["limit"].clone()),
        (json!(0), json!(10))
    );
    assert_eq!(v["has_more"], json!(false));
    assert!(v["_meta"]["now"].as_str().unwrap().ends_with('Z'));
    let libs = v["libraries"].as_array().unwrap();
    let design = &libs[0];
    assert_eq!(design["id"], json!("cloud://alice/design"));
    assert_eq!(design["visibility"], json!("showcase"));
    assert_eq!(design["can_link"], json!(false));
    assert_eq!(design["cannot_link_reason"], json!("invite_required"));
    let rust = &libs[1];
    for k in [
        "id",
        "title",
        "description",
        "owner",
        "category",
        "visibility",
        "document_count",
        "star_count",
        "link_count",
        "is_owner",
        "is_linked",
        "can_link",
        "cannot_link_reason",
        "updated_at",
    ] {
        assert!(rust.get(k).is_some(), "{k} missing: {rust}");
    }
    assert_eq!(rust["can_link"], json!(true));
    assert_eq!(rust["cannot_link_reason"], Value::Null);
    assert_eq!(rust["owner"], json!("alice"));
    assert_eq!(rust["is_owner"], json!(false));

    // The owner sees their private library too; paging says has_more.
    let v = search_json(&f, &f.alice, json!({"owner": "@alice", "limit": 2}));
    assert_eq!(v["total"], json!(3));
    assert_eq!(v["has_more"], json!(true));
    assert_eq!(v["libraries"][0]["id"], json!("cloud://alice/diary"));
    assert_eq!(v["libraries"][0]["is_owner"], json!(true));
    // Numbers as strings are taken, as the other tools take them.
    let v = search_json(
        &f,
        &f.alice,
        json!({"limit": "1", "offset": 2, "category": "Programming"}),
    );
    assert_eq!(v["libraries"].as_array().unwrap().len(), 1);
    assert_eq!(v["has_more"], json!(false));

    // Empty pages say why.
    let v = search_json(&f, &f.carol, json!({"query": "zebra"}));
    assert_eq!(v["libraries"], json!([]));
    assert!(
        v["hint"]
            .as_str()
            .unwrap()
            .contains("No library matching \"zebra\""),
        "{v}"
    );
    let v = search_json(&f, &f.carol, json!({"offset": 40}));
    assert!(v["hint"].as_str().unwrap().contains("past the end"), "{v}");
}

#[test]
fn search_answers_in_markdown() {
    let f = fixture();
    let out = f.carol_searches(json!({"query": "rust"}));
    assert!(!out.is_error);
    let md = out.text;
    assert!(md.starts_with("You are signed in as @carol"), "{md}");
    assert!(md.contains("`cloud://alice/rust`"), "{md}");
    assert!(md.contains("Rust Patterns"), "{md}");
    assert!(md.contains("library_link"), "{md}");
    assert!(md.contains("0 documents"), "{md}");
    assert!(md.contains("\n---\n[meta] now="), "{md}");
    // Linked: say it is searchable.
    f.db.link(
        &f.carol,
        &LibraryKey::parse("cloud://alice/rust").unwrap(),
        &Limits::default(),
    )
    .unwrap();
    let md = f.carol_searches(Value::Null).text;
    assert!(
        md.contains("search it now with library=\"cloud://alice/rust\""),
        "{md}"
    );
    assert!(md.contains("invite_required"), "{md}");
    let md = f
        .carol_searches(json!({"query": "zebra", "category": "science"}))
        .text;
    assert!(md.starts_with("You are signed in as @carol"), "{md}");
    assert!(
        md.contains("No library matching \"zebra\", in category science"),
        "{md}"
    );
}

#[test]
fn search_refuses_bad_arguments_naming_them() {
    let f = fixture();
    let cases = [
        (json!({"limit": 0}), "limit must be between 1 and 50"),
        (json!({"limit": 51}), "limit must be between 1 and 50"),
        (
            json!({"limit": "ten"}),
            "limit: invalid value: string \"ten\"",
        ),
        (json!({"offset": -1}), "offset must be ≥ 0"),
        (
            json!({"query": 5}),
            "query: invalid type: integer `5`, expected a string",
        ),
        (json!({"category": "cooking"}), "category must be one of"),
        (
            json!({"output_format": "xml"}),
            "output_format must be one of",
        ),
        (json!({"library": "x"}), "unknown field `library`"),
        (json!([1]), "invalid arguments"),
    ];
    for (args, expected) in cases {
        let out = f.carol_searches(args.clone());
        assert!(out.is_error, "{args}");
        assert!(out.text.starts_with("[INVALID_ARGUMENT] "), "{}", out.text);
        assert!(out.text.contains(expected), "{args}: {}", out.text);
        assert!(!out.text.contains("[meta]"));
    }
    let mut args = json!({"limit": 99, "output_format": "json"});
    let v = json_of(&f.carol_searches(args.take()).text);
    assert_eq!(v["error"]["code"], json!("INVALID_ARGUMENT"));
    assert_eq!(v["error"]["details"]["parameter"], json!("limit"));
    assert_eq!(v["error"]["details"]["maximum"], json!(50));
}

#[test]
fn link_statuses() {
    let f = fixture();
    let limits = Limits::default();
    let (dave, _) = f.db.add_user("dave", Plan::Free).unwrap();
    let public = LibraryMeta {
        visibility: Some(Visibility::Public),
        ..LibraryMeta::default()
    };
    f.db.upsert_library(&dave, "other", &public).unwrap();

    // Carol (free plan, one slot) in turn: linked, the same again, a showcase she is not
    // invited to, another library past her one slot. None is an error; one slot stays used.
    let answers: Vec<Value> = [
        (json!({"library": "cloud://alice/rust"}), "linked"),
        (
            json!({"library": "cloud://alice/rust", "action": null}),
            "already_linked",
        ),
        (
            json!({"library": "cloud://alice/design"}),
            "invite_required",
        ),
        (json!({"library": "cloud://dave/other"}), "slot_exhausted"),
    ]
    .into_iter()
    .map(|(args, status)| {
        let (err, v) = link_json(&f, &f.carol, &limits, args);
        assert!(!err, "{v}");
        assert_eq!(v["status"], json!(status), "{v}");
        assert_eq!(v["slots_used"], json!(1), "{v}");
        v
    })
    .collect();
    let v = &answers[0];
    assert_eq!(v["library"], json!("cloud://alice/rust"));
    assert_eq!(v["slot_limit"], json!(1));
    assert!(v.get("upgrade_url").is_none());
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("library=\"cloud://alice/rust\"")
    );
    assert!(v["_meta"]["now"].is_string());
    let v = &answers[3];
    assert_eq!(v["slot_limit"], json!(1));
    assert_eq!(v["upgrade_url"], json!(limits.upgrade_url));
    let out = f.carol_links(&limits, json!({"library": "cloud://dave/other"}));
    assert!(!out.is_error);
    assert!(out.text.contains("1 of 1"), "{}", out.text);
    assert!(out.text.contains(&limits.upgrade_url), "{}", out.text);
    assert!(
        out.text
            .contains("ask the user which library to unlink; never choose one yourself"),
        "{}",
        out.text
    );

    // Not visible: an error.
    let (err, v) = link_json(
        &f,
        &f.carol,
        &limits,
        json!({"library": "cloud://alice/diary"}),
    );
    assert!(err);
    assert_eq!(v["error"]["code"], json!("LIBRARY_NOT_FOUND"));
    assert_eq!(v["error"]["details"]["status"], json!("not_found"));
    let out = f.carol_links(&limits, json!({"library": "cloud://nobody/x"}));
    assert!(out.is_error);
    assert!(out.text.starts_with("[LIBRARY_NOT_FOUND] "), "{}", out.text);
    let out = f.carol_links(
        &limits,
        json!({"library": "cloud://nobody/x", "action": "unlink"}),
    );
    assert!(out.is_error);

    // Unlink, then again.
    let (err, v) = link_json(
        &f,
        &f.carol,
        &limits,
        json!({"library": "cloud://alice/rust", "action": "unlink"}),
    );
    assert!(!err);
    assert_eq!(v["status"], json!("unlinked"));
    assert_eq!(v["slots_used"], json!(0));
    let out = f.carol_links(
        &limits,
        json!({"library": "cloud://alice/rust", "action": "UNLINK"}),
    );
    assert!(!out.is_error);
    assert!(out.text.contains("was not linked"), "{}", out.text);
    assert!(out.text.contains("[meta] now="), "{}", out.text);
    let (_, v) = link_json(
        &f,
        &f.carol,
        &limits,
        json!({"library": "cloud://alice/rust", "action": "unlink"}),
    );
    assert_eq!(v["status"], json!("already_unlinked"));
    let md = f
        .carol_links(&limits, json!({"library": "cloud://dave/other"}))
        .text;
    assert!(md.starts_with("Linked cloud://dave/other"), "{md}");
    assert!(
        md.contains("search with library=\"cloud://dave/other\""),
        "{md}"
    );
}

#[test]
fn link_refuses_bad_arguments_naming_them() {
    let f = fixture();
    let limits = Limits::default();
    let cases = [
        (json!({}), "library is required"),
        (json!({"library": "rust"}), "library \"rust\""),
        (json!({"library": "local://3"}), "library \"local://3\""),
        (json!({"library": "12"}), "library \"12\""),
        (json!({"library": "cloud://alice/rust/12"}), "document id"),
        (
            json!({"library": "cloud://alice"}),
            "library \"cloud://alice\"",
        ),
        (json!({"library": 7}), "library: invalid type: integer `7`"),
        (
            json!({"library": "cloud://alice/rust", "action": "star"}),
            "action must be one of \"link\", \"unlink\"",
        ),
        (
            json!({"library": "cloud://alice/rust", "force": true}),
            "unknown field `force`",
        ),
    ];
    for (args, expected) in cases {
        let out = library_link(&f.db, &f.alice, &limits, args.clone());
        assert!(out.is_error, "{args}");
        assert!(out.text.starts_with("[INVALID_ARGUMENT] "), "{}", out.text);
        assert!(out.text.contains(expected), "{args}: {}", out.text);
    }
    let (err, v) = link_json(&f, &f.alice, &limits, json!({"library": "local://3"}));
    assert!(err);
    assert_eq!(v["error"]["details"]["parameter"], json!("library"));
    // Nothing was linked by any of them.
    assert_eq!(f.db.slots_used(&f.alice).unwrap(), 0);
}
