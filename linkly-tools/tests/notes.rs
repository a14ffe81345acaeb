//! Notes end to end through `Linkly::call`: note_save (create, edit, compare-and-swap, tags,
//! whitelist, path safety), list scope="notes" (file system first) and search over notes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use linkly_core::{Config, DataDir, ErrorCode};
use linkly_index::Index;
use linkly_tools::{Linkly, NoteSaveParams};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::common;

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    linkly: Linkly,
}

impl Fixture {
    /// A data directory in a hidden folder (like `~/.linkly`) and a watched folder.
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let docs = tmp.path().join("docs");
        fs_err::create_dir_all(&docs).unwrap();
        fs_err::write(docs.join("budget.md"), "# Budget\n\nThe budget plan.\n").unwrap();
        let data = DataDir::new(tmp.path().join(".linkly"));
        let index = Index::open(&data.index_dir()).unwrap();
        let config = Config {
            folders: vec![docs],
            ..Config::default()
        };
        let linkly = Linkly::new(Arc::new(index), data, config);
        Fixture {
            root: tmp.path().to_path_buf(),
            _tmp: tmp,
            linkly,
        }
    }

    fn notes_dir(&self) -> PathBuf {
        self.linkly.notes_dir()
    }

    fn sync(&self) {
        self.linkly
            .index()
            .sync(&self.linkly.sync_options(), &mut |_| {})
            .unwrap();
    }

    fn ok(&self, tool: &str, args: Value) -> Value {
        let out = self.linkly.call(tool, args.clone()).unwrap();
        assert!(!out.is_error, "{tool} {args} failed: {}", out.text);
        serde_json::from_str(&out.text).unwrap()
    }

    fn err(&self, tool: &str, args: Value) -> String {
        let out = self.linkly.call(tool, args.clone()).unwrap();
        assert!(out.is_error, "{tool} {args} should fail: {}", out.text);
        assert!(!out.text.contains("[meta]"));
        out.text
    }

    fn save(&self, args: Value) -> Value {
        self.ok("note_save", args)
    }

    fn notes(&self) -> Value {
        self.ok("list", json!({"scope": "notes"}))
    }

    fn md_files(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = fs_err::read_dir(self.notes_dir())
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        out.retain(|p| p.extension().is_some_and(|e| e == "md"));
        out.sort();
        out
    }
}

fn sha(path: &Path) -> String {
    format!("{:x}", Sha256::digest(fs_err::read(path).unwrap()))
}

fn body_of(path: &Path) -> String {
    let text = fs_err::read_to_string(path).unwrap();
    let rest = text.strip_prefix("---\n").unwrap();
    let end = rest.find("\n---\n").unwrap();
    rest[end + 5..].to_string()
}

#[test]
fn create_list_index_edit_and_conflict() {
    let f = Fixture::new();
    let created = f.save(json!({
        "mode": "create",
        "content": "Meeting with Bob\nDiscuss the **budget** #Work\n",
        "app_name": "Cursor",
    }));
    let path = PathBuf::from(created["path"].as_str().unwrap());
    assert_eq!(path, f.notes_dir().join("Meeting with Bob.md"));
    assert_eq!(created["version"], sha(&path));
    assert_eq!(created["tags"], json!(["work"]));
    // Indexed before the answer: the reply carries the document id.
    assert!(
        created["doc_id"].as_str().unwrap().starts_with("local://"),
        "{created}"
    );
    assert_eq!(
        created["content"],
        "Meeting with Bob\nDiscuss the **budget** #Work\n"
    );
    assert!(created["_meta"]["now"].is_string());
    let id = created["note_id"].as_str().unwrap().to_string();
    assert_eq!(uuid_version(&id), 4);
    let text = fs_err::read_to_string(&path).unwrap();
    assert!(
        text.starts_with(&format!(
            "---\nnote_id: {id}\ntitle: \"Meeting with Bob\"\ncreated_at: "
        )),
        "{text}"
    );
    assert!(
        text.contains("\nsource: \"Cursor\"\n---\nMeeting with Bob\n"),
        "{text}"
    );

    // note_save answers once the note is indexed: listed with its doc_id at once.
    let list = f.notes();
    assert_eq!(list["scope"], "notes");
    assert_eq!(list["total"], 1);
    assert_eq!(list["has_more"], false);
    assert_eq!(list["available_tags"], json!(["work"]));
    let item = &list["items"][0];
    assert_eq!(item["note_id"], id.as_str());
    assert_eq!(item["version"], created["version"]);
    assert_eq!(item["indexed"], true);
    assert_eq!(item["doc_id"], created["doc_id"]);
    assert!(item["doc_id"].as_str().unwrap().starts_with("local://"));
    assert_eq!(item["title"], "Meeting with Bob");
    assert_eq!(item["source"], "Cursor");
    assert_eq!(item["tags"], json!(["work"]));
    assert_eq!(
        item["snippet"],
        "Meeting with Bob Discuss the **budget** #Work"
    );
    assert!(item["created_at"].as_i64().unwrap() > 1_600_000_000_000);
    assert!(item["modified_at"].is_i64());

    // Indexed like any Markdown document (the notes folder lies in a hidden data directory,
    // and a full sync agrees with what note_save indexed).
    f.sync();
    let list = f.notes();
    let doc_id = list["items"][0]["doc_id"].as_str().unwrap().to_string();
    assert_eq!(list["items"][0]["indexed"], true);
    let found = f.ok(
        "search",
        json!({"query": "budget", "scope": "notes", "output_format": "json"}),
    );
    assert_eq!(found["total"], 1, "{found}");
    assert_eq!(found["results"][0]["doc_id"], doc_id.as_str());
    let everywhere = f.ok(
        "search",
        json!({"query": "budget", "output_format": "json"}),
    );
    assert_eq!(
        everywhere["total"], 2,
        "scope folder covers all indexed content"
    );
    let tagged = f.ok(
        "search",
        json!({"query": "budget", "tags": ["#WORK"], "output_format": "json"}),
    );
    assert_eq!(tagged["total"], 1);
    let none = f.ok(
        "search",
        json!({"query": "budget", "tags": ["work", "other"], "output_format": "json"}),
    );
    assert_eq!(none["total"], 0, "tags are ANDed");
    let read = f.ok("read", json!({"doc_id": doc_id, "output_format": "json"}));
    assert!(
        read["content"]
            .as_str()
            .unwrap()
            .contains("Meeting with Bob")
    );

    // Edit from the version just read.
    let v1 = created["version"].as_str().unwrap().to_string();
    let edited = f.save(json!({
        "mode": "edit",
        "note_id": id,
        "base_version": v1,
        "content": "Meeting with Bob\nDiscuss the **budget** #Work\nAgreed on a date\n",
    }));
    let v2 = edited["version"].as_str().unwrap().to_string();
    assert_ne!(v1, v2);
    assert_eq!(v2, sha(&path));
    assert_eq!(edited["path"], created["path"], "an edit keeps the file");
    let text2 = fs_err::read_to_string(&path).unwrap();
    let created_line = text.lines().nth(3).unwrap();
    assert!(created_line.starts_with("created_at: "));
    assert!(text2.contains(created_line), "created_at is kept");
    assert!(text2.contains("source: \"Cursor\""), "source is kept");

    // A second writer from the same base loses and writes nothing.
    let out = f
        .linkly
        .note_save(NoteSaveParams {
            mode: linkly_tools::NoteMode::Edit,
            note_id: Some(id.clone()),
            base_version: Some(v1.clone()),
            content: "Meeting with Bob\nOverwrite!\n".into(),
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(out.code, ErrorCode::NoteVersionConflict);
    assert_eq!(out.details.as_ref().unwrap()["actual_version"], v2.as_str());
    assert!(
        out.to_string()
            .contains(&format!("current version is {v2}"))
    );
    assert_eq!(sha(&path), v2, "nothing written");

    // The edit was indexed before note_save answered: the list shows v2 as indexed.
    let list = f.notes();
    assert_eq!(list["items"][0]["version"], v2.as_str());
    assert_eq!(list["items"][0]["indexed"], true);
    assert_eq!(list["items"][0]["doc_id"], edited["doc_id"]);
    // A person's edit in a text editor is "not indexed yet" until a sync sees it.
    let by_hand = fs_err::read_to_string(&path)
        .unwrap()
        .replace("Agreed on a date", "Agreed on a date by hand");
    fs_err::write(&path, by_hand).unwrap();
    let list = f.notes();
    assert_eq!(list["items"][0]["indexed"], false);
    assert_eq!(list["items"][0]["doc_id"], Value::Null);
    f.sync();
    assert_eq!(
        f.notes()["items"][0]["doc_id"],
        doc_id.as_str(),
        "same path, same id"
    );
}

fn uuid_version(id: &str) -> u32 {
    assert_eq!(id.len(), 36, "{id}");
    id[14..15].parse().unwrap()
}

#[test]
fn an_edit_made_in_a_text_editor_is_never_overwritten() {
    let f = Fixture::new();
    let created = f.save(json!({"mode": "create", "content": "Groceries\n- milk\n"}));
    let path = PathBuf::from(created["path"].as_str().unwrap());
    // A person adds a line in their editor.
    let mut text = fs_err::read_to_string(&path).unwrap();
    text.push_str("- eggs\n");
    fs_err::write(&path, &text).unwrap();
    let actual = sha(&path);
    let err = f.err(
        "note_save",
        json!({"mode": "edit", "note_id": created["note_id"], "base_version": created["version"],
               "content": "Groceries\n- milk\n- bread\n"}),
    );
    assert!(err.starts_with("[NOTE_VERSION_CONFLICT]"), "{err}");
    assert!(err.contains(&actual), "{err}");
    assert!(text == fs_err::read_to_string(&path).unwrap());
    // Re-read, merge, retry.
    let listed = f.notes();
    assert_eq!(listed["items"][0]["version"], actual.as_str());
    let merged = body_of(&path) + "- bread\n";
    let saved = f.save(
        json!({"mode": "edit", "note_id": created["note_id"], "base_version": actual,
                              "content": merged}),
    );
    assert_eq!(saved["content"], "Groceries\n- milk\n- eggs\n- bread\n");
    assert_eq!(body_of(&path), "Groceries\n- milk\n- eggs\n- bread\n");
}

#[test]
fn tags_only_add_and_legacy_front_matter_tags_move_into_the_body() {
    let f = Fixture::new();
    let created =
        f.save(json!({"mode": "create", "content": "Plan #work", "tags": ["Ideas", "#work", " "]}));
    assert_eq!(created["content"], "Plan #work\n\n#ideas\n");
    assert_eq!(created["tags"], json!(["work", "ideas"]));
    // Deleting a token removes the tag; `tags` adds.
    let edited = f.save(
        json!({"mode": "edit", "note_id": created["note_id"], "base_version": created["version"],
                               "content": "Plan\n\n#ideas\n", "tags": ["later"]}),
    );
    assert_eq!(edited["content"], "Plan\n\n#ideas #later\n");
    assert_eq!(edited["tags"], json!(["ideas", "later"]));

    // An older note keeps its tags in the front matter only.
    let legacy_id = "0b7e6b4e-8a43-4c1f-9d1e-4a7f4c2b9e10";
    let legacy = f.notes_dir().join("Legacy.md");
    fs_err::write(
        &legacy,
        format!("---\nnote_id: {legacy_id}\ncreated_at: 2024-01-02T03:04:05Z\ntags: [Old, work]\naliases:\n  - kept\n---\nLegacy body #work\n"),
    )
    .unwrap();
    let list = f.notes();
    let item = common::item_where(&list, "items", "note_id", legacy_id);
    assert_eq!(item["tags"], json!(["work", "old"]));
    assert_eq!(item["created_at"], 1_704_164_645_000i64);
    let filtered = f.ok("list", json!({"scope": "notes", "tags": ["OLD"]}));
    assert_eq!(filtered["total"], 1);
    // First edit: the YAML-only tag gets its token; the person's removal of #work stands.
    let saved = f.save(
        json!({"mode": "edit", "note_id": legacy_id, "base_version": item["version"],
                              "content": "Legacy body edited\n"}),
    );
    assert_eq!(saved["content"], "Legacy body edited\n\n#old\n");
    let text = fs_err::read_to_string(&legacy).unwrap();
    assert!(!text.contains("tags:"), "{text}");
    common::assert_holds(
        &text,
        &[
            "aliases:\n  - kept\n",
            "created_at: 2024-01-02T03:04:05Z",
            "updated_at: ",
        ],
    );
    let available = f.notes()["available_tags"].clone();
    assert_eq!(available, json!(["ideas", "later", "old"]));
}

#[test]
fn the_whitelist_names_each_construct_and_line() {
    let f = Fixture::new();
    let err = f.err(
        "note_save",
        json!({"mode": "create", "content": "# Title\n\nsome *emphasis* and `code`\n\n> quote\n"}),
    );
    assert!(err.starts_with("[NOTE_INVALID_INPUT]"), "{err}");
    for part in [
        "heading (line 1)",
        "italic (line 3)",
        "inline code (line 3)",
        "block quote (line 5)",
    ] {
        assert!(err.contains(part), "{part}: {err}");
    }
    assert!(f.md_files().is_empty(), "nothing written");
    let err = f.err(
        "note_save",
        json!({"mode": "create", "content": "---\nnote_id: x\n---\nBody"}),
    );
    assert!(err.contains("front matter"), "{err}");

    // A note a person wrote with a heading may keep it, but an edit adds no new kind.
    let id = "5d0c1a52-3b1e-4d7a-8f51-0e2c9a7b6d31";
    let path = f.notes_dir().join("Person.md");
    fs_err::create_dir_all(f.notes_dir()).unwrap();
    fs_err::write(
        &path,
        format!("---\nnote_id: {id}\n---\n# My heading\n\ntext\n"),
    )
    .unwrap();
    let v = sha(&path);
    let err = f.err(
        "note_save",
        json!({"mode": "edit", "note_id": id, "base_version": v, "content": "# My heading\n\ntext [a](http://x)\n"}),
    );
    assert!(
        err.contains("link (line 3)") && !err.contains("heading"),
        "{err}"
    );
    f.save(json!({"mode": "edit", "note_id": id, "base_version": v, "content": "# My heading\n\nmore text\n"}));
}

#[test]
fn invalid_calls_are_refused_with_their_code() {
    let f = Fixture::new();
    let created = f.save(json!({"mode": "create", "content": "Existing note"}));
    let id = created["note_id"].as_str().unwrap();
    let v = created["version"].as_str().unwrap();
    let cases = [
        (
            json!({"mode": "delete", "content": "x"}),
            "[NOTE_INVALID_INPUT] mode must be one of \"create\", \"edit\"",
        ),
        (
            json!({"mode": "edit", "content": "x"}),
            "mode=\"edit\" requires note_id, base_version",
        ),
        (
            json!({"mode": "edit", "content": "x", "note_id": id}),
            "requires base_version:",
        ),
        (
            json!({"mode": "create", "content": "  \n "}),
            "content must not be blank",
        ),
        (
            json!({"mode": "create", "content": "x", "base_version": v}),
            "base_version is for mode=\"edit\" only",
        ),
        (
            json!({"mode": "edit", "content": "x", "note_id": id, "base_version": "abc"}),
            "base_version must be a note version",
        ),
        (
            json!({"mode": "create", "content": "x", "app_name": "x".repeat(65)}),
            "app_name must be at most 64 characters",
        ),
        (
            json!({"mode": "create", "content": "x", "tags": ["two words"]}),
            "cannot be written as a #tag token",
        ),
        (
            json!({"mode": "create", "content": "x", "note_id": id}),
            "[NOTE_DUPLICATE_ID]",
        ),
        (
            json!({"mode": "edit", "content": "x", "note_id": "6a8b0a4e-1f7d-4f51-9f8a-2b1c3d4e5f60", "base_version": v}),
            "[NOTE_NOT_FOUND]",
        ),
        (
            json!({"mode": "create", "content": "x", "output_format": "json"}),
            "unknown field `output_format`",
        ),
        (json!({"content": "x"}), "missing field `mode`"),
    ];
    for (args, expected) in cases {
        let err = f.err("note_save", args.clone());
        assert!(err.contains(expected), "{args}: {err}");
    }
    let huge = "a".repeat(10 * 1024 * 1024 + 1);
    let err = f.err("note_save", json!({"mode": "create", "content": huge}));
    assert!(err.contains("at most 10485760 bytes"), "{err}");
    // Two files claiming one id: edits refuse to guess.
    fs_err::copy(
        created["path"].as_str().unwrap(),
        f.notes_dir().join("Copy.md"),
    )
    .unwrap();
    let err = f.err(
        "note_save",
        json!({"mode": "edit", "content": "x", "note_id": id, "base_version": v}),
    );
    assert!(err.starts_with("[NOTE_DUPLICATE_ID]"), "{err}");
    assert_eq!(f.md_files().len(), 2);
}

#[test]
fn ids_and_contents_crafted_to_escape_the_folder_are_refused() {
    let f = Fixture::new();
    let outside = f.root.join("escaped.md");
    let long_id = "a".repeat(5000);
    for bad_id in [
        "../escaped",
        "../../etc/passwd",
        "/etc/passwd",
        "C:\\Windows\\x",
        "6a8b0a4e-1f7d-4f51-9f8a-2b1c3d4e5f60/../../escaped",
        "6a8b0a4e-1f7d-4f51-9f8a-2b1c3d4e5f6\u{0}",
        long_id.as_str(),
    ] {
        for mode in ["create", "edit"] {
            let mut args = json!({"mode": mode, "content": "x", "note_id": bad_id});
            if mode == "edit" {
                args["base_version"] = json!("0".repeat(64));
            }
            let err = f.err("note_save", args);
            assert!(
                err.starts_with("[NOTE_INVALID_INPUT] note_id must be a UUID"),
                "{bad_id:?}: {err}"
            );
            assert!(err.len() < 500, "the id is not echoed in full");
        }
    }
    let err = f.err("note_save", json!({"mode": "create", "content": "a\u{0}b"}));
    assert!(err.contains("control character"), "{err}");

    let long_line = format!("{} end", "x".repeat(5000));
    for first_line in [
        "../../escaped",
        "/etc/passwd",
        "..\\..\\escaped",
        "C:\\Users\\x",
        ".hidden",
        "~/home",
        long_line.as_str(),
        "CON",
        "a/../../b",
    ] {
        let saved = f.save(json!({"mode": "create", "content": format!("{first_line}\nbody")}));
        let path = PathBuf::from(saved["path"].as_str().unwrap());
        assert_eq!(path.parent().unwrap(), f.notes_dir(), "{first_line:?}");
        let name = path.file_name().unwrap().to_str().unwrap();
        assert!(!name.starts_with('.'), "{name}");
        assert!(name.chars().count() <= 90, "{name}");
        assert!(!name.contains(['/', '\\', '\0', ':']), "{name}");
        assert!(path.exists());
    }
    assert!(!outside.exists());
    let names: Vec<String> = fs_err::read_dir(&f.root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "only docs and the data dir: {names:?}");
}

#[test]
fn names_titles_sorting_paging_and_markdown() {
    let f = Fixture::new();
    let a = f.save(json!({"mode": "create", "content": "Zebra facts #animals"}));
    std::thread::sleep(std::time::Duration::from_millis(5));
    let b = f.save(json!({"mode": "create", "content": "#animals #ideas\n\nno title words above"}));
    std::thread::sleep(std::time::Duration::from_millis(5));
    let c = f.save(json!({"mode": "create", "content": "Zebra facts\nagain", "tags": ["ideas"]}));
    assert!(a["path"].as_str().unwrap().ends_with("/Zebra facts.md"));
    assert!(c["path"].as_str().unwrap().ends_with("/Zebra facts 2.md"));
    let generated = b["path"].as_str().unwrap();
    assert!(generated.contains("/note-"), "{generated}");

    let ids = |v: &Value| -> Vec<String> {
        common::column(v, "items", "note_id")
            .into_iter()
            .map(str::to_string)
            .collect()
    };
    let id = |v: &Value| v["note_id"].as_str().unwrap().to_string();
    let recent = f.notes();
    assert_eq!(ids(&recent), [id(&c), id(&b), id(&a)]);
    assert_eq!(recent["items"][1]["title"], Value::Null, "generated name");
    assert_eq!(recent["available_tags"], json!(["animals", "ideas"]));
    let oldest = f.ok("list", json!({"scope": "notes", "sort": "oldest"}));
    assert_eq!(ids(&oldest), [id(&a), id(&b), id(&c)]);
    let by_name = f.ok("list", json!({"scope": "notes", "sort": "name"}));
    // By code point: "Zebra facts 2.md" < "Zebra facts.md" (' ' < '.') < "note-…" ('Z' < 'n').
    assert_eq!(ids(&by_name), [id(&c), id(&a), id(&b)]);
    let page = f.ok(
        "list",
        json!({"scope": "notes", "limit": 2, "offset": 1, "snippet": false}),
    );
    assert_eq!(page["total"], 3);
    assert_eq!(page["has_more"], false);
    assert_eq!(ids(&page), [id(&b), id(&a)]);
    assert_eq!(page["items"][0]["snippet"], Value::Null);
    let page = f.ok("list", json!({"scope": "notes", "limit": 1}));
    assert_eq!(page["has_more"], true);
    let both = f.ok(
        "list",
        json!({"scope": "notes", "tags": ["animals", "#Ideas"]}),
    );
    assert_eq!(ids(&both), [id(&b)]);
    f.ok(
        "list",
        json!({"scope": "notes", "limit": 200, "snippet": false}),
    );
    for (args, expected) in [
        (
            json!({"scope": "notes", "limit": 80}),
            "limit must be between 1 and 50 while snippet is on (got 80)",
        ),
        (
            json!({"scope": "notes", "limit": 201, "snippet": false}),
            "limit must be between 1 and 200",
        ),
        (
            json!({"scope": "notes", "doc_types": ["md"]}),
            "doc_types applies to scope \"folder\"",
        ),
        (
            json!({"scope": "notes", "path": "/tmp"}),
            "path applies to scope",
        ),
        (
            json!({"scope": "notes", "sort": "size"}),
            "sort must be one of",
        ),
        (
            json!({"scope": "notes", "tags": [" # "]}),
            "tags has no usable tag",
        ),
    ] {
        let err = f.err("list", args.clone());
        assert!(err.contains(expected), "{args}: {err}");
    }

    let out = f
        .linkly
        .call(
            "list",
            json!({"scope": "notes", "output_format": "markdown", "limit": 2}),
        )
        .unwrap();
    assert!(!out.is_error);
    let md = out.text;
    assert!(
        md.starts_with(
            "# Notes\n\nShowing 2 of 3 notes (sort: recent, offset: 0) — target: notes\n"
        ),
        "{md}"
    );
    assert!(md.contains(&format!("- note_id: {}\n", id(&c))), "{md}");
    assert!(
        md.contains(&format!("- version: {}\n", c["version"].as_str().unwrap())),
        "{md}"
    );
    assert!(md.contains("- doc_id: local://"), "{md}");
    assert!(md.contains("\n## 2. (untitled)\n"), "{md}");
    assert!(md.contains("More notes: continue with offset=2"), "{md}");
    assert!(
        md.contains("Available tags: #animals (2), #ideas (2)"),
        "{md}"
    );
    assert!(md.contains("\n---\n[meta] now="), "{md}");
}

#[test]
fn concurrent_threads_never_lose_an_update() {
    let f = Fixture::new();
    let created = f.save(json!({"mode": "create", "content": "Log"}));
    let id = created["note_id"].as_str().unwrap().to_string();
    let path = PathBuf::from(created["path"].as_str().unwrap());
    let linkly = Arc::new(f.linkly);
    let handles: Vec<_> = (0..8)
        .map(|w| {
            let linkly = linkly.clone();
            let (id, path) = (id.clone(), path.clone());
            std::thread::spawn(move || {
                let mut won = Vec::new();
                for c in 0..25 {
                    let bytes = fs_err::read(&path).unwrap();
                    let version = format!("{:x}", Sha256::digest(&bytes));
                    let text = String::from_utf8(bytes).unwrap();
                    let body = text.split_once("\n---\n").unwrap().1;
                    let line = format!("w{w}c{c}");
                    let result = linkly.note_save(NoteSaveParams {
                        mode: linkly_tools::NoteMode::Edit,
                        note_id: Some(id.clone()),
                        base_version: Some(version),
                        content: format!("{body}\n{line}"),
                        ..Default::default()
                    });
                    match result {
                        Ok(_) => won.push(line),
                        Err(e) => assert_eq!(e.code, ErrorCode::NoteVersionConflict, "{e}"),
                    }
                }
                won
            })
        })
        .collect();
    let mut won: Vec<String> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let body = body_of(&path);
    let mut present: Vec<String> = body.lines().skip(1).map(str::to_string).collect();
    won.sort();
    present.sort();
    assert!(!won.is_empty());
    assert_eq!(
        present, won,
        "exactly the successful writes are in the note"
    );
}

#[test]
fn the_notes_folder_is_a_sync_root_unless_a_watched_folder_covers_it() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    let data = DataDir::new(tmp.path().join(".linkly"));
    let mut config = Config {
        folders: vec![docs.clone()],
        ..Config::default()
    };
    assert_eq!(
        linkly_tools::sync_options(&config, &data).roots,
        std::slice::from_ref(&docs),
        "no notes folder yet"
    );
    fs_err::create_dir_all(data.default_notes_dir()).unwrap();
    assert_eq!(
        linkly_tools::sync_options(&config, &data).roots,
        [docs.clone(), data.default_notes_dir()]
    );
    let inside = docs.join("Notes");
    fs_err::create_dir_all(&inside).unwrap();
    config.notes_dir = Some(inside);
    assert_eq!(
        linkly_tools::sync_options(&config, &data).roots,
        std::slice::from_ref(&docs)
    );
    let hidden = docs.join(".app/notes");
    fs_err::create_dir_all(&hidden).unwrap();
    config.notes_dir = Some(hidden.clone());
    assert_eq!(
        linkly_tools::sync_options(&config, &data).roots,
        [docs, hidden]
    );
}

/// What an agent does: save a note with tags, read it, send back the edited text it read,
/// find it by tag. The front matter is metadata: not text, not counted, not in keywords.
#[test]
fn a_note_read_is_the_body_note_save_takes_back() {
    let f = Fixture::new();
    let body = "Barn owls hunt at night\nThey nest in **old barns** and church towers #Wildlife\n- voles\n- shrews\n";
    let created =
        f.save(json!({"mode": "create", "content": body, "tags": ["birds"], "app_name": "Cursor"}));
    let doc_id = created["doc_id"].as_str().unwrap().to_string();
    let path = PathBuf::from(created["path"].as_str().unwrap());
    let file = fs_err::read_to_string(&path).unwrap();
    assert!(
        file.contains("title: \"Barn owls hunt at night\"\n"),
        "{file}"
    );

    let read = f.ok("read", json!({"doc_id": doc_id, "output_format": "json"}));
    let effective = created["content"].as_str().unwrap();
    assert_eq!(read["content"], effective.trim_end(), "{read}");
    assert_eq!(read["shown_from"], 1);
    assert_eq!(read["total_lines"], effective.trim_end().lines().count());
    assert_eq!(read["char_count"], effective.trim_end().chars().count());
    assert_eq!(read["title"], "Barn owls hunt at night");
    assert_eq!(read["note"]["note_id"], created["note_id"]);
    assert_eq!(read["note"]["version"], created["version"]);
    assert_eq!(read["note"]["tags"], json!(["wildlife", "birds"]));
    let fm = &read["front_matter"];
    assert_eq!(fm["note_id"], created["note_id"]);
    assert_eq!(fm["title"], "Barn owls hunt at night");
    assert_eq!(fm["source"], "Cursor");
    assert!(fm["created_at"].as_str().unwrap().ends_with('Z'), "{fm}");
    assert_eq!(read["front_matter_lines"], 7);
    let md = f
        .linkly
        .call("read", json!({"doc_id": doc_id}))
        .unwrap()
        .text;
    common::assert_holds(
        &md,
        &[
            "note: note_id ",
            "front matter (metadata, not text; line 1 is file line 8)",
            "     1\tBarn owls hunt at night\n",
        ],
    );
    assert!(!md.contains("\t---"), "{md}");

    // The counts, keywords and search index hold the body only.
    let rec = f
        .linkly
        .index()
        .doc_by_path(path.to_str().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(
        rec.word_count,
        linkly_core::word_count(effective.trim_end())
    );
    assert_eq!(rec.title.as_deref(), Some("Barn owls hunt at night"));
    assert!(
        rec.keywords
            .iter()
            .all(|k| !k.chars().any(|c| c.is_ascii_digit())),
        "timestamps and ids leak into keywords: {:?}",
        rec.keywords
    );
    let id_fragment = &created["note_id"].as_str().unwrap()[..8];
    let hits = f.ok(
        "search",
        json!({"query": id_fragment, "output_format": "json"}),
    );
    assert_eq!(hits["total"], 0, "the note id is not text: {hits}");

    // The agent edits a span of what it read and sends it back with the version read.
    let revised = read["content"]
        .as_str()
        .unwrap()
        .replace("church towers", "hollow trees");
    let edited = f.save(json!({
        "mode": "edit",
        "note_id": read["note"]["note_id"],
        "base_version": read["note"]["version"],
        "content": revised,
    }));
    assert_eq!(edited["content"], revised.as_str());
    // The same loop again from a fresh read, this time of the Markdown answer's lines.
    let md = f
        .linkly
        .call("read", json!({"doc_id": doc_id}))
        .unwrap()
        .text;
    let version = md
        .split("version ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    let lines: Vec<&str> = md
        .lines()
        .filter_map(|l| l.trim_start().split_once('\t'))
        .filter(|(n, _)| n.parse::<u32>().is_ok())
        .map(|(_, t)| t)
        .collect();
    let again = f.save(json!({
        "mode": "edit",
        "note_id": created["note_id"],
        "base_version": version,
        "content": lines.join("\n").replace("voles", "voles and mice"),
    }));
    assert!(
        again["content"]
            .as_str()
            .unwrap()
            .contains("voles and mice")
    );

    // Found by tag, under one title everywhere.
    let by_tag = f.ok(
        "search",
        json!({"query": "owls", "tags": ["wildlife"], "output_format": "json"}),
    );
    assert_eq!(by_tag["results"][0]["doc_id"], doc_id.as_str(), "{by_tag}");
    assert_eq!(by_tag["results"][0]["title"], "Barn owls hunt at night");
    assert_eq!(f.notes()["items"][0]["title"], "Barn owls hunt at night");
    let read = f.ok("read", json!({"doc_id": doc_id, "output_format": "json"}));
    assert_eq!(read["title"], "Barn owls hunt at night");
}

/// A note written before titles were kept gets its title on the next edit; one with a
/// generated name has none, and a person's own `title:` wins.
#[test]
fn one_title_for_a_note() {
    let f = Fixture::new();
    fs_err::create_dir_all(f.notes_dir()).unwrap();
    let legacy = f.notes_dir().join("Old plans.md");
    fs_err::write(
        &legacy,
        "---\nnote_id: 3f2c8e1a-5b6d-4c7e-9f80-123456789abc\ncreated_at: 2025-01-01T00:00:00.000Z\n---\nOld plans for the garden\n",
    )
    .unwrap();
    let own = f.notes_dir().join("x.md");
    fs_err::write(&own, "---\ntitle: \"My own title\"\n---\nSome words\n").unwrap();
    f.sync();
    let list = f.notes();
    let titles: Vec<&str> = common::column(&list, "items", "title");
    assert!(
        titles.contains(&"Old plans") && titles.contains(&"My own title"),
        "{list}"
    );
    let hit = f.ok(
        "search",
        json!({"query": "own words", "scope": "notes", "output_format": "json"}),
    );
    assert_eq!(hit["results"][0]["title"], "My own title", "{hit}");
    let note = common::item_where(&list, "items", "title", "Old plans");
    f.save(json!({"mode": "edit", "note_id": note["note_id"], "base_version": note["version"], "content": "Old plans for the garden, revised"}));
    assert!(
        fs_err::read_to_string(&legacy)
            .unwrap()
            .contains("\ntitle: \"Old plans\"\n")
    );
    let hit = f.ok(
        "search",
        json!({"query": "garden revised", "scope": "notes", "output_format": "json"}),
    );
    assert_eq!(hit["results"][0]["title"], "Old plans", "{hit}");
    let generated = f.save(json!({"mode": "create", "content": "#ideas"}));
    assert!(
        !fs_err::read_to_string(generated["path"].as_str().unwrap())
            .unwrap()
            .contains("title:")
    );
}

/// A library with a note-tag filter holds its folders' documents plus exactly the notes that
/// carry its tags, in list_libraries, search, list, explore and find_paths.
#[test]
fn a_library_with_a_note_tag_filter() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs_err::canonicalize(tmp.path()).unwrap();
    let nature = root.join("docs/nature");
    fs_err::create_dir_all(&nature).unwrap();
    fs_err::write(
        nature.join("fox.md"),
        "# Fox\n\nThe red fox hunts voles at dusk.\n",
    )
    .unwrap();
    fs_err::write(
        root.join("docs/tax.md"),
        "# Tax\n\nThe tax office hunts receipts.\n",
    )
    .unwrap();
    let data = DataDir::new(root.join(".linkly"));
    let index = Index::open(&data.index_dir()).unwrap();
    let config = Config {
        folders: vec![root.join("docs")],
        libraries: vec![linkly_core::Library {
            id: 7,
            name: "nature".into(),
            description: "Wildlife".into(),
            folders: vec![nature.clone()],
            tags: vec!["wildlife".into()],
        }],
        ..Config::default()
    };
    let linkly = Linkly::new(Arc::new(index), data, config);
    let ok = |tool: &str, args: Value| -> Value {
        let out = linkly.call(tool, args.clone()).unwrap();
        assert!(!out.is_error, "{tool} {args}: {}", out.text);
        serde_json::from_str(&out.text).unwrap_or(Value::String(out.text))
    };
    let owl = ok(
        "note_save",
        json!({"mode": "create", "content": "Owls hunt voles at night #wildlife"}),
    );
    ok(
        "note_save",
        json!({"mode": "create", "content": "Boss hunts for the budget #work"}),
    );
    linkly
        .index()
        .sync(&linkly.sync_options(), &mut |_| {})
        .unwrap();
    let owl_path = owl["path"].as_str().unwrap();

    let libs = linkly.list_libraries().unwrap();
    assert_eq!(
        libs.libraries[0].doc_count, 2,
        "fox.md and the #wildlife note"
    );
    assert!(
        libs.to_markdown()
            .contains("(2 docs, 1 folder) + notes tagged #wildlife")
    );

    let hits = ok(
        "search",
        json!({"query": "hunts", "library": "nature", "output_format": "json"}),
    );
    let paths: Vec<&str> = common::column(&hits, "results", "path");
    assert_eq!(paths.len(), 2, "{hits}");
    assert!(
        paths.contains(&owl_path) && paths.iter().any(|p| p.ends_with("/fox.md")),
        "{paths:?}"
    );

    let listed = ok(
        "list",
        json!({"scope": "library", "library": "nature", "output_format": "json"}),
    );
    assert_eq!(listed["total"], 2, "{listed}");
    // The notes folder is a path of the library: only its tagged notes are listed.
    let notes_dir = linkly.notes_dir();
    let in_notes = ok(
        "list",
        json!({"scope": "library", "library": "local://7", "path": notes_dir.to_str().unwrap(), "output_format": "json"}),
    );
    assert_eq!(in_notes["total"], 1, "{in_notes}");
    assert_eq!(in_notes["items"][0]["path"], owl_path);
    let in_folder = ok(
        "list",
        json!({"scope": "library", "library": "nature", "path": nature.to_str().unwrap(), "output_format": "json"}),
    );
    assert_eq!(in_folder["total"], 1, "{in_folder}");
    let outside = linkly
        .call("list", json!({"scope": "library", "library": "nature", "path": root.join("docs").to_str().unwrap()}))
        .unwrap();
    assert!(
        outside.is_error && outside.text.contains("PATH_NOT_ALLOWED"),
        "{}",
        outside.text
    );

    let explored = ok(
        "explore",
        json!({"library": "nature", "output_format": "json"}),
    );
    assert_eq!(explored["summary"]["documents"], 2, "{explored}");
    let text = explored.to_string();
    assert!(text.contains(notes_dir.to_str().unwrap()), "{text}");
    assert!(!text.contains("/docs\""), "{text}");
    let dirs = ok(
        "find_paths",
        json!({"patterns": ["notes", "docs"], "library": "nature", "output_format": "json"}),
    );
    assert!(!dirs.to_string().contains("tax"), "{dirs}");
}

/// The index holds a note's text normalised (ligatures, non-breaking spaces) so that search
/// finds it, but `read` shows the note's own characters: sending back what was read changes
/// nothing the agent did not change.
#[test]
fn a_note_read_keeps_its_own_characters() {
    let f = Fixture::new();
    let body = "Eﬃcient ﬁeld notes\u{A0}today\nSecond line #misc\n";
    let created = f.save(json!({"mode": "create", "content": body}));
    let doc_id = created["doc_id"].as_str().unwrap().to_string();
    let read = f.ok("read", json!({"doc_id": doc_id, "output_format": "json"}));
    let effective = created["content"].as_str().unwrap();
    assert_eq!(read["content"], effective.trim_end(), "{read}");
    assert!(
        read["content"]
            .as_str()
            .unwrap()
            .contains("ﬁeld notes\u{A0}today")
    );
    let found = f.ok(
        "search",
        json!({"query": "efficient field", "scope": "notes", "output_format": "json"}),
    );
    assert_eq!(found["results"][0]["doc_id"], doc_id, "{found}");
    // Sent back as read: accepted, and the file keeps its characters.
    let edited = format!("{}\nThird line\n", read["content"].as_str().unwrap());
    let saved = f.save(json!({
        "mode": "edit",
        "note_id": created["note_id"],
        "base_version": read["note"]["version"],
        "content": edited,
    }));
    let file = fs_err::read_to_string(saved["path"].as_str().unwrap()).unwrap();
    assert!(file.contains("Eﬃcient ﬁeld notes\u{A0}today\n"), "{file}");
}

/// The person's deletion (not a tool): the note goes to the trash, out of the index and of
/// `list`, and `note_restore` brings it back, indexed again. A stale version deletes nothing.
#[test]
fn delete_moves_to_the_trash_and_restore_brings_it_back() {
    let f = Fixture::new();
    f.sync();
    let saved = f.ok(
        "note_save",
        json!({"mode": "create", "content": "Groceries\n\nmilk and eggs #home"}),
    );
    let id = saved["note_id"].as_str().unwrap().to_string();
    let version = saved["version"].as_str().unwrap().to_string();
    assert!(saved["doc_id"].is_string());

    // A stale version: nothing is deleted.
    let stale = "0".repeat(64);
    let err = f.linkly.note_delete(&id, &stale).unwrap_err();
    assert_eq!(err.code, ErrorCode::NoteVersionConflict);
    assert!(f.linkly.note(&id).is_ok());

    let deleted = f.linkly.note_delete(&id, &version).unwrap();
    assert!(!Path::new(&deleted.from).exists());
    let trashed = f.linkly.trashed_notes().unwrap();
    assert_eq!(trashed.len(), 1);
    assert_eq!(trashed[0].name, deleted.trash_name);
    assert_eq!(trashed[0].title, "Groceries");
    assert!(trashed[0].deleted_at > 0);
    // Gone from the list and from search.
    let listed = f.ok("list", json!({"scope": "notes", "output_format": "json"}));
    assert_eq!(listed["total"], 0);
    let found = f.ok(
        "search",
        json!({"query": "milk eggs", "scope": "notes", "output_format": "json"}),
    );
    assert_eq!(found["total"], 0);

    // A name that is not a trash file name, or a path, restores nothing.
    for bad in ["../notes/x.md", "x.md", ".hidden_x.md", "a/b_c.md"] {
        assert!(f.linkly.note_restore(bad).is_err(), "{bad}");
    }
    let back = f.linkly.note_restore(&deleted.trash_name).unwrap();
    assert_eq!(back.note_id, id);
    assert_eq!(back.version, version, "the bytes are unchanged");
    assert!(f.linkly.trashed_notes().unwrap().is_empty());
    let found = f.ok(
        "search",
        json!({"query": "milk eggs", "scope": "notes", "output_format": "json"}),
    );
    assert_eq!(found["total"], 1);
    let _ = &f.root;
}

/// `update_config` reads the file again, applies the change, saves it and puts it in effect.
#[test]
fn update_config_saves_and_applies() {
    let f = Fixture::new();
    f.linkly.data_dir().ensure().unwrap();
    f.linkly.config().save(f.linkly.data_dir()).unwrap();
    let extra = f.root.join("more");
    fs_err::create_dir_all(&extra).unwrap();
    fs_err::write(extra.join("alpha.md"), "alpha beta gamma\n").unwrap();
    let added = f.linkly.update_config(|c| c.add_folder(&extra)).unwrap();
    assert!(added);
    assert_eq!(f.linkly.config().folders.len(), 2);
    let on_disk = Config::load(f.linkly.data_dir()).unwrap();
    assert_eq!(on_disk.folders.len(), 2);
    f.linkly.index_now(&mut |_| {}).unwrap();
    let found = f.ok("search", json!({"query": "gamma", "output_format": "json"}));
    assert_eq!(found["total"], 1);
    // A failing change saves nothing.
    let missing = f.root.join("missing");
    assert!(f.linkly.update_config(|c| c.add_folder(&missing)).is_err());
    assert_eq!(Config::load(f.linkly.data_dir()).unwrap().folders.len(), 2);
    // The overview counts the types.
    let o = f.linkly.overview().unwrap();
    assert!(o.by_type.iter().any(|(t, n)| t == "md" && *n >= 2));
}

#[test]
fn a_tag_filter_answers_from_the_index_not_the_notes_folder() {
    let f = Fixture::new();
    let owl = f.save(json!({"mode": "create", "content": "Owls hunt voles at dusk #birds"}));
    let path = PathBuf::from(owl["path"].as_str().unwrap());
    let found = |tags: Value| -> Vec<String> {
        let hits = f.ok(
            "search",
            json!({"query": "owls voles", "tags": tags, "output_format": "json"}),
        );
        common::column(&hits, "results", "path")
            .into_iter()
            .map(str::to_string)
            .collect()
    };
    let owl_path = vec![path.to_string_lossy().into_owned()];
    // Found by its tag right after note_save returns.
    assert_eq!(found(json!(["birds"])), owl_path);

    // Rewritten on disk behind the index's back: a tag search answers from what the index
    // holds (the folder is not read), as the text does, until a sync indexes the note again.
    let text = fs_err::read_to_string(&path).unwrap();
    fs_err::write(&path, text.replace("#birds", "#night")).unwrap();
    assert_eq!(found(json!(["birds"])), owl_path);
    assert!(found(json!(["night"])).is_empty());
    f.sync();
    assert!(found(json!(["birds"])).is_empty());
    assert_eq!(found(json!(["night"])), owl_path);

    // An edit through note_save: the new tag finds it at once.
    let listed = f.notes();
    let version = listed["items"][0]["version"].as_str().unwrap().to_string();
    f.save(
        json!({"mode": "edit", "note_id": owl["note_id"], "base_version": version,
                  "content": "Owls hunt voles at dusk #night", "tags": ["hunting"]}),
    );
    assert_eq!(found(json!(["hunting", "night"])), owl_path);
}
