//! Discovery end to end over a real index: libraries, `list_libraries`, `explore`,
//! `find_paths`, `list` (folder and library scopes) and the `library` filter of `search`, on a
//! generated tree (nested, CJK and accented folder names, glob metacharacters) and on the
//! test corpus (`testdata/corpus`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use linkly_core::Config;
use linkly_tools::{Linkly, PathGlob};
use serde_json::{Value, json};

use crate::common;
use common::{call, err_call, json_call};

struct Fixture {
    tmp: tempfile::TempDir,
    root: PathBuf,
    linkly: Linkly,
}

/// `days` before one instant fixed for the whole test run (so equal ages are equal times).
fn days_ago(days: u64) -> SystemTime {
    static NOW: OnceLock<SystemTime> = OnceLock::new();
    let now = *NOW.get_or_init(|| {
        let secs = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    });
    now - Duration::from_secs(days * 24 * 3600)
}

fn set_mtime(p: &Path, t: SystemTime) {
    let f = fs_err::File::options().write(true).open(p).unwrap();
    f.file().set_modified(t).unwrap();
}

const TANTIVY: &str = "tantivy index tantivy writer tantivy segments\n";

/// Files under `docs/`, with optional modification times in days ago.
const TREE: &[(&str, &str, Option<u64>)] = &[
    (
        "README.md",
        "# Read me\n\nThis folder holds the test tree.\n",
        Some(30),
    ),
    (
        "guide.md",
        "# Budget guide\n\nbudget budget planning\n",
        Some(30),
    ),
    ("projects/alpha/plan.md", TANTIVY, Some(20)),
    ("projects/alpha/notes.txt", TANTIVY, Some(20)),
    (
        "projects/beta/spec.md",
        "# Spec\n\nbudget budget review\n",
        Some(40),
    ),
    (
        "資料/東京/報告.md",
        "# 東京の報告\n\n東京の研究所。東京の天気。\n",
        None,
    ),
    (
        "Économie/été/résumé.md",
        "# Résumé\n\nL'économie française, économie.\n",
        None,
    ),
    ("we[ir]d*dir/x.txt", "needle in a weird folder\n", Some(10)),
    ("weid-x-dir/x.txt", "needle in a decoy folder\n", Some(10)),
    (
        "Users/me/Documents/Notion-Export-abc/ws/page.md",
        "# Page\n\nexport page\n",
        Some(50),
    ),
    (
        "Users/me/Documents/Notion-Export-abc/ws/sub/page2.md",
        "# Page 2\n\nexport\n",
        Some(50),
    ),
    (
        "Users/me/Documents/Notion-Export-abc/top.md",
        "# Top\n\nexport\n",
        Some(50),
    ),
    (
        "Users/me/notion-notes.md",
        "# Not a folder match\n\nnotion\n",
        Some(50),
    ),
    ("Archive/Old-notion/x.md", "# Old\n\narchived\n", Some(60)),
    ("empty.csv", "", Some(60)),
];

fn write_tree(root: &Path, files: &[(&str, &str, Option<u64>)]) {
    for (rel, text, age) in files {
        let p = root.join(rel);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(&p, text).unwrap();
        if let Some(days) = age {
            set_mtime(&p, days_ago(*days));
        }
    }
}

/// Indexes `roots` (watched folders) with `config`'s libraries.
fn open(home: &Path, config: Config) -> Linkly {
    common::open_synced(home, &config.folders.clone(), config)
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("docs");
    write_tree(&root, TREE);
    // Outside the watched folder, and a symlink inside it that leads there.
    let secret = tmp.path().join("secret");
    fs_err::create_dir_all(&secret).unwrap();
    fs_err::write(secret.join("s.md"), "secret\n").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&secret, root.join("link")).unwrap();

    let mut config = Config::default();
    config.add_folder(&root).unwrap();
    config
        .add_library("proj", "Project plans", &[root.join("projects")], &[])
        .unwrap();
    config
        .add_library("tokyo", "", &[root.join("資料")], &[])
        .unwrap();
    let root = fs_err::canonicalize(&root).unwrap();
    let linkly = open(tmp.path(), config);
    Fixture { tmp, root, linkly }
}

fn paths(v: &Value, list: &str) -> Vec<String> {
    common::column(v, list, "path")
        .into_iter()
        .map(str::to_string)
        .collect()
}

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

#[test]
fn find_paths_aggregates_at_the_shallowest_matching_segment() {
    // TOOLS.md §7: `/Users/me/Documents/Notion-Export-abc/ws/page.md` matching `Notion` →
    // `/Users/me/Documents/Notion-Export-abc`; a match in a file name only is ignored.
    let f = fixture();
    let v = json_call(&f.linkly, "find_paths", json!({"patterns": ["Notion"]}));
    let notion = f.root.join("Users/me/Documents/Notion-Export-abc");
    let old = f.root.join("Archive/Old-notion");
    assert_eq!(
        v["directories"],
        json!([
            {"path": s(&notion), "path_glob": format!("{}/", s(&notion)), "file_count": 3},
            {"path": s(&old), "path_glob": format!("{}/", s(&old)), "file_count": 1},
        ]),
        "{v}"
    );
    assert_eq!(
        v["total_files"], 4,
        "notion-notes.md matches by file name only"
    );
    assert_eq!(v["truncated"], false);
    assert!(v["_meta"]["now"].is_string());

    let v = json_call(
        &f.linkly,
        "find_paths",
        json!({"patterns": ["notion", "ARCHIVE"], "limit": 1}),
    );
    // `Archive` is shallower than `Old-notion`: its file is aggregated at `Archive`.
    assert_eq!(v["truncated"], true);
    assert_eq!(paths(&v, "directories"), [s(&notion)]);
    assert_eq!(v["total_files"], 4);
    let (md, err) = call(
        &f.linkly,
        "find_paths",
        json!({"patterns": ["notion", "archive"]}),
    );
    assert!(!err);
    assert!(
        md.starts_with("# Find Paths\n\nFound 2 folder(s), 4 files total."),
        "{md}"
    );
    assert!(
        md.contains(&format!("{}/Archive — 1 file", s(&f.root))),
        "{md}"
    );

    // CJK literal, accented names byte for byte (ASCII-only case folding).
    let v = json_call(&f.linkly, "find_paths", json!({"patterns": ["東京"]}));
    assert_eq!(paths(&v, "directories"), [s(&f.root.join("資料/東京"))]);
    let v = json_call(&f.linkly, "find_paths", json!({"patterns": ["CONOMIE"]}));
    assert_eq!(paths(&v, "directories"), [s(&f.root.join("Économie"))]);

    let (md, err) = call(&f.linkly, "find_paths", json!({"patterns": ["zzzqqq"]}));
    assert!(!err);
    assert!(md.contains("No folder candidates matched."), "{md}");
    assert!(md.contains("search"), "{md}");
}

#[test]
fn find_paths_glob_round_trips_through_search() {
    let f = fixture();
    let weird = f.root.join("we[ir]d*dir");
    let v = json_call(&f.linkly, "find_paths", json!({"patterns": ["[ir]d*"]}));
    assert_eq!(paths(&v, "directories"), [s(&weird)]);
    let glob = v["directories"][0]["path_glob"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(glob, format!("{}/", PathGlob::escape(&s(&weird))));
    assert!(glob.contains("\\[ir]d\\*dir/"), "{glob}");

    let hits = json_call(
        &f.linkly,
        "search",
        json!({"query": "needle", "path_glob": glob}),
    );
    assert_eq!(paths(&hits, "results"), [s(&weird.join("x.txt"))]);
    // Unescaped, the same text is a glob that matches the decoy folder instead.
    let raw = json_call(
        &f.linkly,
        "search",
        json!({"query": "needle", "path_glob": format!("{}/", s(&weird))}),
    );
    assert_eq!(
        paths(&raw, "results"),
        [s(&f.root.join("weid-x-dir/x.txt"))]
    );
}

#[test]
fn find_paths_validates_its_arguments() {
    let f = fixture();
    for (args, needle) in [
        (
            json!({"patterns": []}),
            "patterns must hold between 1 and 10",
        ),
        (
            json!({"patterns": vec!["a"; 11]}),
            "patterns must hold between 1 and 10",
        ),
        (json!({"patterns": [" "]}), "blank"),
        (json!({"patterns": ["x".repeat(65)]}), "at most 64 bytes"),
        (
            json!({"patterns": ["a"], "limit": 51}),
            "limit must be between 1 and 50",
        ),
        (json!({"limit": 5}), "patterns"),
        (
            json!({"patterns": ["a"], "library": "nope"}),
            "[LIBRARY_NOT_FOUND]",
        ),
    ] {
        let text = err_call(&f.linkly, "find_paths", args.clone());
        assert!(text.contains(needle), "{args}: {text}");
    }
}

/// Every item of a listing, page by page.
fn all_pages(l: &Linkly, base: &Value, limit: i64) -> (Vec<Value>, u64) {
    let mut items = Vec::new();
    let mut offset = 0;
    loop {
        let mut args = base.clone();
        args["limit"] = json!(limit);
        args["offset"] = json!(offset);
        let v = json_call(l, "list", args);
        let page = v["items"].as_array().unwrap().clone();
        assert!(page.len() as i64 <= limit);
        offset += page.len() as i64;
        items.extend(page);
        if !v["has_more"].as_bool().unwrap() {
            assert_eq!(offset as u64, v["total"].as_u64().unwrap());
            return (items, v["total"].as_u64().unwrap());
        }
        assert!(offset < 10_000, "paging never ends");
    }
}

fn file_name(p: &str) -> &str {
    p.rsplit('/').next().unwrap()
}

#[test]
fn list_pages_concatenate_to_the_full_sorted_set() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("bulk");
    // 37 files in nested folders; modification times collide in groups of 5 (ties broken by
    // path) and names repeat across folders (ties broken by path).
    let mut files = Vec::new();
    for i in 0..37u64 {
        let rel = format!("d{}/e{}/f{}.md", i % 3, i % 4, i % 6);
        let rel = if files.iter().any(|(r, _): &(String, u64)| *r == rel) {
            format!("d{}/g{i}/f{}.txt", i % 3, i % 6)
        } else {
            rel
        };
        files.push((rel, i % 5));
    }
    for (rel, age) in &files {
        let p = root.join(rel);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(&p, format!("file {rel}\n")).unwrap();
        set_mtime(&p, days_ago(10 + age));
    }
    let mut config = Config::default();
    config.add_folder(&root).unwrap();
    let l = open(tmp.path(), config);

    for sort in ["recent", "oldest", "name"] {
        let base = json!({"scope": "folder", "sort": sort});
        let (full, total) = all_pages(&l, &base, 200);
        assert_eq!(total as usize, files.len());
        // The expected order, computed independently.
        let mut expected = full.clone();
        expected.sort_by(|a, b| {
            let (pa, pb) = (a["path"].as_str().unwrap(), b["path"].as_str().unwrap());
            let (ma, mb) = (
                a["modified_at"].as_i64().unwrap(),
                b["modified_at"].as_i64().unwrap(),
            );
            let key = match sort {
                "recent" => mb.cmp(&ma),
                "oldest" => ma.cmp(&mb),
                _ => file_name(pa).cmp(file_name(pb)),
            };
            key.then(pa.cmp(pb))
        });
        assert_eq!(full, expected, "sort {sort}");
        for limit in [1, 2, 3, 7, 36] {
            let (paged, _) = all_pages(&l, &base, limit);
            assert_eq!(paged, full, "sort {sort}, limit {limit}");
        }
    }
    // Every directory pages to its share of the full order, whether the selection is narrow
    // (a few files: the path range) or broad (a large share: the sort's index).
    let (full, _) = all_pages(&l, &json!({"scope": "folder", "sort": "recent"}), 200);
    let mut dirs: Vec<String> = full
        .iter()
        .flat_map(|i| {
            let p = i["path"].as_str().unwrap();
            let parent = p.rsplit_once('/').unwrap().0.to_string();
            let grand = parent.rsplit_once('/').unwrap().0.to_string();
            [parent, grand]
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    assert!(dirs.len() > 10);
    for dir in dirs {
        let expected: Vec<Value> = full
            .iter()
            .filter(|i| i["path"].as_str().unwrap().starts_with(&format!("{dir}/")))
            .cloned()
            .collect();
        let base = json!({"scope": "folder", "sort": "recent", "path": dir});
        for limit in [1, 2] {
            assert_eq!(
                all_pages(&l, &base, limit).0,
                expected,
                "{dir}, limit {limit}"
            );
        }
    }
    // Filters page the same way.
    let base = json!({"scope": "folder", "doc_types": ["txt"], "sort": "name"});
    let (txt, total) = all_pages(&l, &base, 2);
    assert_eq!(
        total as usize,
        files.iter().filter(|f| f.0.ends_with(".txt")).count()
    );
    assert!(txt.iter().all(|i| i["doc_type"] == "txt"));
    // Past the end: an empty page, still counted.
    let v = json_call(&l, "list", json!({"scope": "folder", "offset": 1000}));
    assert_eq!(v["total"], 37);
    assert_eq!(v["has_more"], false);
    assert_eq!(v["items"], json!([]));
}

#[test]
fn list_folder_items_filters_snippets_and_readme() {
    let f = fixture();
    let v = json_call(
        &f.linkly,
        "list",
        json!({"scope": "folder", "path": s(&f.root), "snippet": true, "limit": 50}),
    );
    assert_eq!(v["scope"], "folder");
    assert_eq!(v["total"], TREE.len());
    assert_eq!(v["has_more"], false);
    assert_eq!(
        v["readme"],
        json!({"doc_id": v["readme"]["doc_id"], "path": s(&f.root.join("README.md"))})
    );
    let item = common::item_where(&v, "items", "path", &s(&f.root.join("guide.md")));
    for field in [
        "doc_id",
        "title",
        "path",
        "doc_type",
        "word_count",
        "char_count",
        "total_lines",
        "has_outline",
        "modified_at",
        "keywords",
        "snippet",
        "skip_reason",
    ] {
        assert!(item.get(field).is_some(), "missing {field}: {item}");
    }
    assert_eq!(item["title"], "Budget guide");
    assert_eq!(item["snippet"], "# Budget guide budget budget planning");
    assert_eq!(item["skip_reason"], Value::Null);
    let empty = common::item_where(&v, "items", "path", &s(&f.root.join("empty.csv")));
    assert!(
        empty["skip_reason"].as_str().unwrap().starts_with("empty"),
        "{empty}"
    );

    // Snippets are off by default (null), and the newest file comes first.
    let v = json_call(&f.linkly, "list", json!({"scope": "folder", "limit": 2}));
    assert_eq!(v["items"][0]["snippet"], Value::Null);
    assert_eq!(v["has_more"], true);
    assert!(v.get("readme").is_none(), "no path, no README pointer");
    let newest = v["items"][0]["path"].as_str().unwrap();
    assert!(
        newest.contains("東京") || newest.contains("été"),
        "{newest}"
    );

    // A subdirectory, types and time bounds.
    let v = json_call(
        &f.linkly,
        "list",
        json!({"scope": "folder", "path": s(&f.root.join("projects")), "doc_types": ["md"]}),
    );
    assert_eq!(v["total"], 2);
    let cutoff = linkly_core::format_rfc3339(
        days_ago(25)
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64,
    );
    let v = json_call(
        &f.linkly,
        "list",
        json!({"scope": "folder", "path": s(&f.root.join("projects")), "modified_after": cutoff}),
    );
    assert_eq!(
        paths(&v, "items"),
        [
            s(&f.root.join("projects/alpha/notes.txt")),
            s(&f.root.join("projects/alpha/plan.md"))
        ],
        "equal times: path order"
    );

    // Markdown.
    let (md, err) = call(
        &f.linkly,
        "list",
        json!({"scope": "folder", "path": s(&f.root), "sort": "name", "limit": 3}),
    );
    assert!(!err);
    assert!(
        md.starts_with(&format!(
            "# Files\n\nShowing 3 of {} files (sort: name, offset: 0) — target: {}\nREADME: local://",
            TREE.len(),
            s(&f.root)
        )),
        "{md}"
    );
    assert!(md.contains("More files: continue with offset=3"), "{md}");
    common::assert_footer(&md);
}

#[test]
fn list_rejects_invalid_combinations() {
    let f = fixture();
    for (args, needle) in [
        (
            json!({"scope": "folder", "tags": ["x"]}),
            "[INVALID_ARGUMENT] tags",
        ),
        (
            json!({"scope": "library"}),
            "[INVALID_ARGUMENT] library is required",
        ),
        (
            json!({"scope": "folder", "library": "proj"}),
            "[INVALID_ARGUMENT] library is only valid",
        ),
        (
            json!({"scope": "library", "library": "nope"}),
            "[LIBRARY_NOT_FOUND] library \"nope\"",
        ),
        (
            json!({"scope": "library", "library": "cloud://me/x"}),
            "remote gateway",
        ),
        (json!({"scope": "folders"}), "scope must be one of"),
        (
            json!({"scope": "folder", "sort": "size"}),
            "sort must be one of",
        ),
        (
            json!({"scope": "folder", "limit": 201}),
            "limit must be between 1 and 200",
        ),
        (
            json!({"scope": "folder", "snippet": true, "limit": 80}),
            "while snippet is on",
        ),
        (
            json!({"scope": "folder", "offset": -1}),
            "offset must be between",
        ),
        (
            json!({"scope": "folder", "doc_types": ["exe"]}),
            "doc_types has unknown type",
        ),
        (
            json!({"scope": "folder", "modified_after": "yesterday"}),
            "modified_after must be",
        ),
    ] {
        let text = err_call(&f.linkly, "list", args.clone());
        assert!(text.contains(needle), "{args}: {text}");
    }
}

#[test]
fn list_paths_outside_the_watched_folders_are_not_allowed() {
    let f = fixture();
    let secret = fs_err::canonicalize(f.tmp.path().join("secret")).unwrap();
    fs_err::create_dir_all(format!("{}-evil", s(&f.root))).unwrap();
    let mut outside = vec![
        s(&secret),
        format!("{}/../secret", s(&f.root)),
        format!("{}/projects/../../secret", s(&f.root)),
        "/".to_string(),
        s(&f.root.join("no-such-dir")),
        // A sibling whose name starts like the watched folder.
        format!("{}-evil", s(&f.root)),
    ];
    #[cfg(unix)]
    outside.push(s(&f.root.join("link")));
    for path in outside {
        let text = err_call(&f.linkly, "list", json!({"scope": "folder", "path": path}));
        assert!(text.starts_with("[PATH_NOT_ALLOWED]"), "{path}: {text}");
        let v: Value = serde_json::from_str(&err_call(
            &f.linkly,
            "list",
            json!({"scope": "folder", "path": path, "output_format": "json"}),
        ))
        .unwrap();
        assert_eq!(v["error"]["code"], "PATH_NOT_ALLOWED");
    }
    #[cfg(unix)]
    {
        let text = err_call(
            &f.linkly,
            "list",
            json!({"scope": "folder", "path": s(&f.root.join("link"))}),
        );
        // Where the link leads is not told.
        assert!(!text.contains(&s(&secret)), "{text}");
    }
    // A path outside is refused before the disk is read: the same answer whether it exists
    // or not (nothing tells that `~/.ssh/id_ed25519` is there).
    let missing = format!("{}/no-such-file", s(&secret));
    let there = err_call(
        &f.linkly,
        "list",
        json!({"scope": "folder", "path": s(&secret)}),
    );
    let not_there = err_call(
        &f.linkly,
        "list",
        json!({"scope": "folder", "path": missing}),
    );
    assert_eq!(
        there.replace(&s(&secret), "P"),
        not_there.replace(&missing, "P"),
        "the refusal differs when the path exists"
    );
    for (path, needle) in [("docs/projects", "absolute"), ("*/projects", "absolute")] {
        let text = err_call(&f.linkly, "list", json!({"scope": "folder", "path": path}));
        assert!(
            text.starts_with("[INVALID_ARGUMENT] path") && text.contains(needle),
            "{text}"
        );
    }
    let file = s(&f.root.join("guide.md"));
    let text = err_call(&f.linkly, "list", json!({"scope": "folder", "path": file}));
    assert!(text.contains("must be a directory"), "{text}");
    // `..` that stays inside is fine.
    let v = json_call(
        &f.linkly,
        "list",
        json!({"scope": "folder", "path": format!("{}/projects/../projects/alpha", s(&f.root))}),
    );
    assert_eq!(v["total"], 2);
    // Inside the watched folder but outside the library.
    let text = err_call(
        &f.linkly,
        "list",
        json!({"scope": "library", "library": "proj", "path": s(&f.root.join("資料"))}),
    );
    assert!(
        text.starts_with("[PATH_NOT_ALLOWED]") && text.contains("library \"proj\""),
        "{text}"
    );
}

#[test]
fn libraries_restrict_every_tool() {
    let f = fixture();
    let (md, err) = call(&f.linkly, "list_libraries", json!({}));
    assert!(!err, "{md}");
    assert!(
        md.starts_with("# Libraries\n\n- **proj** (local://1): Project plans (3 docs, 1 folder)\n"),
        "{md}"
    );
    assert!(
        md.contains("- **tokyo** (local://2): no description (1 docs, 1 folder)"),
        "{md}"
    );
    common::assert_footer(&md);
    let text = err_call(
        &f.linkly,
        "list_libraries",
        json!({"output_format": "json"}),
    );
    assert!(text.contains("output_format"), "{text}");
    let typed = f.linkly.list_libraries().unwrap();
    assert_eq!(typed.libraries[0].doc_count, 3);

    // search: by name, by id, unknown, cloud.
    let v = json_call(
        &f.linkly,
        "search",
        json!({"query": "budget", "library": "proj"}),
    );
    assert_eq!(
        paths(&v, "results"),
        [s(&f.root.join("projects/beta/spec.md"))]
    );
    let v = json_call(
        &f.linkly,
        "search",
        json!({"query": "budget tantivy", "library": "local://1"}),
    );
    assert_eq!(v["total"], 3);
    let v = json_call(
        &f.linkly,
        "search",
        json!({"query": "budget", "library": "tokyo"}),
    );
    assert_eq!(v["total"], 0);
    let text = err_call(
        &f.linkly,
        "search",
        json!({"query": "x", "library": "nope"}),
    );
    assert!(
        text.starts_with("[LIBRARY_NOT_FOUND]") && text.contains("\"proj\" (local://1)"),
        "{text}"
    );
    let text = err_call(
        &f.linkly,
        "search",
        json!({"query": "x", "library": "cloud://me/lib"}),
    );
    assert!(text.contains("remote gateway"), "{text}");

    // list, explore, find_paths.
    let v = json_call(
        &f.linkly,
        "list",
        json!({"scope": "library", "library": "proj", "sort": "name"}),
    );
    assert_eq!(v["total"], 3);
    assert!(v["target"].as_str().unwrap().contains("proj (local://1)"));
    let v = json_call(&f.linkly, "explore", json!({"library": "tokyo"}));
    assert_eq!(v["summary"]["documents"], 1);
    assert_eq!(v["directories"][0]["path"], s(&f.root.join("資料")));
    let v = json_call(
        &f.linkly,
        "find_paths",
        json!({"patterns": ["a"], "library": "proj"}),
    );
    assert_eq!(v["total_files"], 3);
}

#[test]
fn explore_summarises_tree_keywords_and_recent_activity() {
    let f = fixture();
    let v = json_call(&f.linkly, "explore", json!({}));
    assert_eq!(v["scope"], "all indexed content");
    assert_eq!(v["summary"]["documents"], TREE.len());
    assert_eq!(v["summary"]["name_only"], 1);
    assert_eq!(
        v["summary"]["types"][0],
        json!({"doc_type": "md", "count": 11})
    );
    let root = &v["directories"][0];
    assert_eq!(root["path"], s(&f.root));
    assert_eq!(root["depth"], 0);
    assert_eq!(root["file_count"], TREE.len());
    let alpha = common::item_where(
        &v,
        "directories",
        "path",
        &s(&f.root.join("projects/alpha")),
    );
    assert_eq!(alpha["depth"], 2);
    assert_eq!(alpha["file_count"], 2);
    assert_eq!(alpha["median_word_count"], 6);
    // "tantivy" only in projects/alpha: local; "budget" in two directories: global.
    let local = &v["keywords"]["local"];
    assert!(
        local
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["directory"] == s(&f.root.join("projects/alpha"))
                && l["keywords"][0] == json!({"keyword": "tantivy", "count": 2})),
        "{local}"
    );
    assert!(
        v["keywords"]["global"]
            .as_array()
            .unwrap()
            .contains(&json!({"keyword": "budget", "count": 2})),
        "{v}"
    );
    // Only the two files written just now are recent.
    let recent = &v["recent"]["directories"];
    assert_eq!(recent.as_array().unwrap().len(), 2, "{recent}");
    assert!(
        recent
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["changed_files"] == 1)
    );

    let (md, err) = call(&f.linkly, "explore", json!({}));
    assert!(!err);
    for section in [
        "# Explore\n\nScope: all indexed content\n",
        "## Summary\n\n- Documents: 15 (",
        "## Directories\n\n",
        "## Top keywords",
        "Local (≥90% in one directory):",
        "## Recent activity (last 7 days)",
        "  - projects/ — 3 files",
    ] {
        assert!(md.contains(section), "missing {section:?}:\n{md}");
    }
    let text = err_call(&f.linkly, "explore", json!({"library": "nope"}));
    assert!(text.starts_with("[LIBRARY_NOT_FOUND]"), "{text}");
}

#[test]
fn explore_stays_within_its_budget_on_a_wide_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("wide");
    for i in 0..150 {
        for j in 0..2 {
            let p = root.join(format!("top{:03}/sub{j}/deep/f.md", i % 30));
            let p = p.with_file_name(format!("f{i}.md"));
            fs_err::create_dir_all(p.parent().unwrap()).unwrap();
            fs_err::write(&p, format!("word{i} word{i} shared shared\n")).unwrap();
        }
    }
    let mut config = Config::default();
    config.add_folder(&root).unwrap();
    let l = open(tmp.path(), config);
    let v = json_call(&l, "explore", json!({}));
    assert_eq!(v["summary"]["documents"], 300);
    let dirs = v["directories"].as_array().unwrap();
    assert!(dirs.len() <= 40, "{}", dirs.len());
    assert!(v["directories_total"].as_u64().unwrap() > 40);
    let left: u64 = dirs.iter().filter_map(|d| d["more_files"].as_u64()).sum();
    assert!(left > 0, "the cut says what it left out");
    let (md, _) = call(&l, "explore", json!({}));
    assert!(md.len() < 12_000, "{} bytes", md.len());
    assert!(md.contains("more subdirector"), "{md}");
}

#[test]
fn every_discovery_tool_answers_in_markdown_and_json_with_the_footer() {
    let f = fixture();
    for (tool, args, header) in [
        ("explore", json!({}), "# Explore"),
        (
            "find_paths",
            json!({"patterns": ["projects"]}),
            "# Find Paths",
        ),
        ("list", json!({"scope": "folder"}), "# Files"),
        (
            "list",
            json!({"scope": "library", "library": "proj"}),
            "# Files",
        ),
    ] {
        let (md, err) = call(&f.linkly, tool, args.clone());
        assert!(!err, "{tool}: {md}");
        assert!(md.starts_with(header), "{tool}: {md}");
        common::assert_footer(&md);
        let v = json_call(&f.linkly, tool, args);
        assert!(v["_meta"]["now"].as_str().unwrap().ends_with('Z'), "{v}");
    }
}

/// The real test documents the repository carries (`testdata/corpus`, see
/// `testdata/MANIFEST.md`).
fn test_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/corpus")
}

#[test]
fn discovery_over_the_test_corpus() {
    let corpus = fs_err::canonicalize(test_corpus()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    for d in ["md", "txt", "html", "csv"] {
        config.add_folder(&corpus.join(d)).unwrap();
    }
    config
        .add_library("markdown", "Docs in Markdown", &[corpus.join("md")], &[])
        .unwrap();
    let l = open(tmp.path(), config);
    let total = l.index().doc_count().unwrap();
    assert!(total > 20, "{total}");

    let v = json_call(&l, "explore", json!({}));
    assert_eq!(v["summary"]["documents"], total);
    let roots: Vec<&Value> = v["directories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["depth"] == 0)
        .collect();
    assert_eq!(roots.len(), 4);
    let keywords = v["keywords"].to_string();
    assert!(!v["keywords"]["global"].as_array().unwrap().is_empty() || keywords.contains("local"));

    let v = json_call(&l, "explore", json!({"library": "markdown"}));
    let md_docs = v["summary"]["documents"].as_u64().unwrap();
    assert!(md_docs > 5 && md_docs < total);
    assert_eq!(v["summary"]["types"][0]["doc_type"], "md");

    let v = json_call(&l, "find_paths", json!({"patterns": ["corpus"]}));
    assert_eq!(v["total_files"], total);
    let glob = v["directories"][0]["path_glob"]
        .as_str()
        .unwrap()
        .to_string();
    let hits = json_call(
        &l,
        "search",
        json!({"query": "component", "path_glob": glob, "limit": 50}),
    );
    assert!(hits["total"].as_u64().unwrap() > 0);

    let base = json!({"scope": "library", "library": "markdown", "sort": "name"});
    let (full, n) = all_pages(&l, &base, 200);
    assert_eq!(n, md_docs);
    let (paged, _) = all_pages(&l, &base, 4);
    assert_eq!(paged, full);
    let names: Vec<&str> = full
        .iter()
        .map(|i| file_name(i["path"].as_str().unwrap()))
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
}
