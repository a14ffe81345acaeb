//! The tools end to end over a real index of generated files and of the test corpus (`testdata/corpus`).

use std::path::{Path, PathBuf};

use linkly_core::Config;
use linkly_tools::{Linkly, TOOLS};
use serde_json::{Value, json};

use crate::common;
use common::{call, err_call, json_call};

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    linkly: Linkly,
}

fn fixture(files: &[(&str, &str)]) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("docs");
    common::write_files(&root, files);
    let linkly = common::open_synced(tmp.path(), std::slice::from_ref(&root), Config::default());
    Fixture {
        _tmp: tmp,
        root,
        linkly,
    }
}

const GUIDE: &str = "# Budget guide\n\nIntro line.\n\n## Planning\n\nThe budget for 2024 is set.\nMore planning text.\n\n## Spending\n\nSpending rules here.\nbudget again\n";

fn sample() -> Fixture {
    fixture(&[
        ("guide.md", GUIDE),
        (
            "notes/plain.txt",
            "alpha beta\ngamma budget delta\nepsilon\n",
        ),
        (
            "jp/東京.md",
            "# 東京の案内\n\n機械学習の研究所が東京にあります。\n",
        ),
        ("we[ir]d*dir/x.txt", "needle in a weird folder\n"),
        ("other/x.txt", "needle in a normal folder\n"),
    ])
}

#[test]
fn search_returns_every_contract_field() {
    let f = sample();
    let v = json_call(&f.linkly, "search", json!({"query": "budget"}));
    assert_eq!(v["mode"], "keyword");
    assert_eq!(v["total"], 2);
    let first = &v["results"][0];
    for field in [
        "doc_id",
        "title",
        "path",
        "doc_type",
        "relevance",
        "word_count",
        "char_count",
        "total_lines",
        "has_outline",
        "modified_at",
        "keywords",
        "snippet",
    ] {
        assert!(first.get(field).is_some(), "missing {field} in {first}");
    }
    assert_eq!(
        first["title"], "Budget guide",
        "title boost puts the guide first"
    );
    assert_eq!(first["relevance"], 1.0);
    assert_eq!(first["has_outline"], true);
    assert!(first["doc_id"].as_str().unwrap().starts_with("local://"));
    assert!(v["_meta"]["now"].as_str().unwrap().ends_with('Z'));
}

/// An index still ingesting (a gateway's library after a publish) says so in every search
/// answer until it has caught up.
#[test]
fn a_search_while_the_index_is_behind_says_it_covers_what_is_indexed_so_far() {
    let f = sample();
    let behind = std::sync::Arc::new(linkly_tools::Behind::default());
    let dir = linkly_core::DataDir::new(f._tmp.path().join("data"));
    let linkly =
        Linkly::new(f.linkly.index().clone(), dir, Config::default()).with_behind(behind.clone());
    let notices = |l: &Linkly| {
        json_call(l, "search", json!({"query": "budget"}))["notices"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .filter_map(|n| n.as_str().map(str::to_string))
            .filter(|n| n.contains("still being indexed"))
            .collect::<Vec<_>>()
    };
    assert!(notices(&linkly).is_empty());
    behind.set(1_500);
    let said = notices(&linkly);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].contains("1,500 changes"), "{said:?}");
    assert!(
        call(&linkly, "search", json!({"query": "budget"}))
            .0
            .contains("still being indexed")
    );
    behind.set(0);
    assert!(notices(&linkly).is_empty());
}

#[test]
fn search_markdown_shape_and_no_results() {
    let f = sample();
    let (text, err) = call(&f.linkly, "search", json!({"query": "budget"}));
    assert!(!err);
    assert!(
        text.starts_with("# Search Results\n\nShowing top 2 of 2 results for \"budget\""),
        "{text}"
    );
    common::assert_footer(&text);
    let (text, _) = call(&f.linkly, "search", json!({"query": "zzzqqq"}));
    assert!(text.contains("No results found for \"zzzqqq\"."), "{text}");
    let v = json_call(&f.linkly, "search", json!({"query": "zzzqqq"}));
    assert_eq!(v["total"], 0);
}

#[test]
fn cjk_words_inside_running_text_are_found() {
    let f = sample();
    for q in ["機械学習", "研究所", "東京"] {
        let v = json_call(&f.linkly, "search", json!({"query": q}));
        assert_eq!(v["total"], 1, "{q}: {v}");
        assert!(
            v["results"][0]["snippet"]
                .as_str()
                .unwrap()
                .contains(q.chars().next().unwrap())
        );
    }
}

#[test]
fn filters_apply_before_the_cut() {
    let f = sample();
    let v = json_call(
        &f.linkly,
        "search",
        json!({"query": "budget", "doc_types": ["txt"], "limit": 1}),
    );
    assert_eq!(v["total"], 1);
    assert!(
        v["results"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("plain.txt")
    );
    // The find_paths round trip: an escaped directory matches literally.
    let dir = format!("{}/we[ir]d*dir/", f.root.display());
    let glob = linkly_tools::PathGlob::escape(&dir);
    let v = json_call(
        &f.linkly,
        "search",
        json!({"query": "needle", "path_glob": glob}),
    );
    assert_eq!(v["total"], 1, "{v}");
    let v = json_call(
        &f.linkly,
        "search",
        json!({"query": "needle", "path_glob": "*/other/"}),
    );
    assert_eq!(v["total"], 1);
    let v = json_call(
        &f.linkly,
        "search",
        json!({"query": "budget", "modified_after": "2999-01-01"}),
    );
    assert_eq!(v["total"], 0);
    let v = json_call(
        &f.linkly,
        "search",
        json!({"query": "budget", "modified_before": "2999-01-01", "time_sort": "oldest"}),
    );
    assert_eq!(v["total"], 2);
}

#[test]
fn invalid_arguments_name_the_parameter() {
    let f = sample();
    let cases = [
        (
            json!({"query": "x", "limit": 80}),
            "[INVALID_ARGUMENT] limit must be between 1 and 50 (got 80)",
        ),
        (json!({"query": "  "}), "query must not be blank"),
        (json!({"query": "x", "bogus": 1}), "unknown field `bogus`"),
        (
            json!({"query": "x", "doc_types": ["exe"]}),
            "doc_types has unknown type(s) \"exe\"; supported: pdf, docx",
        ),
        (
            json!({"query": "x", "time_sort": "sideways"}),
            "time_sort must be one of",
        ),
        (
            json!({"query": "x", "scope": "web"}),
            "scope must be one of \"folder\", \"notes\"",
        ),
        (
            json!({"query": "x", "modified_after": "yesterday"}),
            "modified_after must be an ISO 8601",
        ),
        (json!({"query": "x", "path_glob": "[abc"}), "path_glob"),
        (json!({"query": "x", "limit": "ten"}), "limit"),
        (json!({}), "missing field `query`"),
        (
            json!({"query": "x", "library": "Work"}),
            "[LIBRARY_NOT_FOUND]",
        ),
        (
            json!({"query": "x", "library": "cloud://me/lib"}),
            "remote gateway",
        ),
        (
            json!({"query": "x", "tags": ["#", " "]}),
            "tags has no usable tag",
        ),
        (
            json!({"query": "x", "output_format": "xml"}),
            "output_format must be one of",
        ),
    ];
    for (args, expected) in cases {
        let text = err_call(&f.linkly, "search", args.clone());
        assert!(text.contains(expected), "{args}: {text}");
        assert!(!text.contains("[meta]"), "errors carry no footer");
    }
    // Nulls mean omitted.
    let (_, err) = call(
        &f.linkly,
        "search",
        json!({"query": "budget", "limit": null, "doc_types": null}),
    );
    assert!(!err);
    // JSON errors.
    let text = err_call(
        &f.linkly,
        "search",
        json!({"query": "x", "limit": 0, "output_format": "json"}),
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["error"]["code"], "INVALID_ARGUMENT");
    assert!(f.linkly.call("nope", json!({})).is_err());
}

fn doc_id_of(l: &Linkly, query: &str) -> String {
    let v = json_call(l, "search", json!({"query": query}));
    v["results"][0]["doc_id"].as_str().unwrap().to_string()
}

#[test]
fn outline_ranges_match_read() {
    let f = sample();
    let id = doc_id_of(&f.linkly, "guide");
    let (text, err) = call(&f.linkly, "outline", json!({"doc_ids": [id]}));
    assert!(!err, "{text}");
    common::assert_holds(
        &text,
        &[
            "[1] Budget guide [L1-13, 13 lines]",
            "  [1.1] Planning [L5-9, 5 lines]",
            "  [1.2] Spending [L10-13, 4 lines]",
        ],
    );
    let v = json_call(
        &f.linkly,
        "read",
        json!({"doc_id": id, "offset": 5, "limit": 1}),
    );
    assert_eq!(v["content"], "## Planning");
    let (text, _) = call(
        &f.linkly,
        "read",
        json!({"doc_id": id, "offset": 10, "limit": 2}),
    );
    assert!(text.contains("    10\t## Spending\n    11\t\n"), "{text}");
    assert!(
        text.contains("(lines 10-11 of 13; continue with offset=12)"),
        "{text}"
    );
    // Plain text has no outline, with the reason.
    let txt = doc_id_of(&f.linkly, "epsilon");
    let v = json_call(
        &f.linkly,
        "outline",
        json!({"doc_ids": [txt, "local://999999"]}),
    );
    assert_eq!(v["documents"][0]["has_outline"], false);
    assert!(
        v["documents"][0]["no_outline_reason"]
            .as_str()
            .unwrap()
            .contains("grep or read")
    );
    assert!(
        v["documents"][1]["error"]
            .as_str()
            .unwrap()
            .contains("not found")
    );
    let text = err_call(&f.linkly, "outline", json!({"doc_ids": ["local://999999"]}));
    assert!(text.starts_with("[DOC_NOT_FOUND]"), "{text}");
    let text = err_call(&f.linkly, "outline", json!({"doc_ids": []}));
    assert!(
        text.contains("doc_ids must hold between 1 and 20"),
        "{text}"
    );
}

#[test]
fn read_lines_match_the_file() {
    let f = sample();
    let id = doc_id_of(&f.linkly, "guide");
    let v = json_call(&f.linkly, "read", json!({"doc_id": id}));
    assert_eq!(v["total_lines"], 13);
    assert_eq!(v["shown_from"], 1);
    assert_eq!(v["shown_to"], 13);
    let expected: Vec<&str> = GUIDE.trim_end().split('\n').collect();
    assert_eq!(
        v["content"]
            .as_str()
            .unwrap()
            .split('\n')
            .collect::<Vec<_>>(),
        expected
    );
    let v = json_call(&f.linkly, "read", json!({"doc_id": id, "offset": 50}));
    assert_eq!(v["shown_from"], 0);
    assert_eq!(v["content"], "");
    let text = err_call(&f.linkly, "read", json!({"doc_id": id, "limit": 501}));
    assert!(text.contains("limit must be between 1 and 500 (got 501)"));
    let text = err_call(&f.linkly, "read", json!({"doc_id": "abc"}));
    assert!(text.contains("doc_id must be a document id"), "{text}");
    let text = err_call(
        &f.linkly,
        "read",
        json!({"doc_id": id, "image_text": "some"}),
    );
    assert!(text.contains("image_text must be one of"), "{text}");
    // A bare integer is accepted.
    let bare = id.trim_start_matches("local://");
    let (_, err) = call(&f.linkly, "read", json!({"doc_id": bare}));
    assert!(!err);
}

#[test]
fn grep_context_merging_and_paging() {
    let lines: Vec<String> = (1..=40)
        .map(|i| {
            if i % 5 == 0 {
                format!("hit {i}")
            } else {
                format!("line {i}")
            }
        })
        .collect();
    let f = fixture(&[("g.txt", &lines.join("\n"))]);
    let id = doc_id_of(&f.linkly, "hit");
    let v = json_call(
        &f.linkly,
        "grep",
        json!({"pattern": "hit", "doc_id": id, "limit": 3, "context": 1}),
    );
    assert_eq!(v["total_matches"], 8);
    assert_eq!(v["returned"], 3);
    assert_eq!(v["has_more"], true);
    assert_eq!(v["matches"][0]["line_number"], 5);
    assert_eq!(v["matches"][0]["context_before"], json!([[4, "line 4"]]));
    assert_eq!(v["matches"][0]["context_after"], json!([[6, "line 6"]]));
    let v2 = json_call(
        &f.linkly,
        "grep",
        json!({"pattern": "hit", "doc_id": id, "limit": 3, "offset": 3}),
    );
    assert_eq!(
        v2["matches"][0]["line_number"], 20,
        "paging never skips or repeats"
    );
    let (text, _) = call(
        &f.linkly,
        "grep",
        json!({"pattern": "HIT", "doc_id": id, "case_insensitive": true, "context": 3, "limit": 2}),
    );
    assert!(text.contains("Found 8 matches in g.txt"), "{text}");
    // Context of 3 around lines 5 and 10 overlaps at 7-8: merged, no separator, each line once.
    assert!(
        text.contains(
            "   5>\thit 5\n   6\tline 6\n   7\tline 7\n   8\tline 8\n   9\tline 9\n  10>\thit 10\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("(matches 1-2 of 8; continue with offset=2)"),
        "{text}"
    );
    let (text, _) = call(
        &f.linkly,
        "grep",
        json!({"pattern": "hit", "doc_id": id, "context": 0, "before": 1, "after": 0, "limit": 2}),
    );
    assert!(
        text.contains("   4\tline 4\n   5>\thit 5\n--\n   9\tline 9\n  10>\thit 10\n"),
        "{text}"
    );
    let (text, _) = call(
        &f.linkly,
        "grep",
        json!({"pattern": "hit", "doc_id": id, "output_mode": "count"}),
    );
    assert!(
        text.contains("Found 8 matches") && !text.contains("hit 5"),
        "{text}"
    );
    let text = err_call(&f.linkly, "grep", json!({"pattern": "(", "doc_id": id}));
    assert!(
        text.contains("[INVALID_ARGUMENT] pattern is not a valid regular expression"),
        "{text}"
    );
    let text = err_call(
        &f.linkly,
        "grep",
        json!({"pattern": "a", "doc_id": id, "context": 51}),
    );
    assert!(
        text.contains("context must be between 0 and 50 (got 51)"),
        "{text}"
    );
    let v = json_call(&f.linkly, "grep", json!({"pattern": "zzz", "doc_id": id}));
    assert_eq!(v["total_matches"], 0);
}

#[test]
fn every_tool_has_an_object_schema() {
    for t in TOOLS {
        let s = (t.input_schema)();
        assert_eq!(s["type"], "object", "{}", t.name);
        assert_eq!(
            s["additionalProperties"], false,
            "{}: unknown fields are rejected",
            t.name
        );
        assert!(!t.description.is_empty());
    }
}

/// The real test documents the repository carries (`testdata/corpus`, see
/// `testdata/MANIFEST.md`).
fn test_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/corpus")
}

#[test]
fn the_text_corpus_is_indexed_and_searchable() {
    let corpus = test_corpus();
    let tmp = tempfile::tempdir().unwrap();
    let roots: Vec<PathBuf> = ["md", "txt", "html", "csv"]
        .iter()
        .map(|d| corpus.join(d))
        .collect();
    let l = common::open_synced(tmp.path(), &roots, Config::default());
    // Markdown headings, in Chinese, Japanese and Spanish.
    for (q, file) in [
        ("组件基础", "vuedocs-zh-component-basics.md"),
        ("コンポーネント", "vuedocs-ja-component-basics.md"),
        (
            "jerarquía de componentes",
            "reactdocs-es-thinking-in-react.md",
        ),
        (
            "Principes fondamentaux des composants",
            "vuedocs-fr-component-basics.md",
        ),
    ] {
        let v = json_call(&l, "search", json!({"query": q, "limit": 5}));
        let paths: Vec<&str> = common::column(&v, "results", "path");
        assert!(paths.iter().any(|p| p.ends_with(file)), "{q}: {paths:?}");
    }
    let id = {
        let v = json_call(
            &l,
            "search",
            json!({"query": "Paso 1 Separa la UI", "doc_types": ["md"], "limit": 1}),
        );
        v["results"][0]["doc_id"].as_str().unwrap().to_string()
    };
    let v = json_call(&l, "outline", json!({"doc_ids": [id]}));
    let text = v["documents"][0]["outline_text"].as_str().unwrap();
    assert!(
        text.contains("Paso 1: Separa la UI en una jerarquía de componentes"),
        "{text}"
    );
    // Encodings: GBK and CP932 CSV cells, EUC-JP text, Windows-1250 Czech.
    for (q, file) in [
        ("北京市", "linkly-gbk.csv"),
        ("都道府県", "linkly-cp932.csv"),
        ("プロジェクト", "linkly-euc-jp.txt"),
        ("Řezníčková", "linkly-windows-1250-czech.txt"),
    ] {
        let v = json_call(&l, "search", json!({"query": q, "limit": 10}));
        let paths: Vec<&str> = common::column(&v, "results", "path");
        assert!(paths.iter().any(|p| p.ends_with(file)), "{q}: {paths:?}");
    }
    // HTML: scripts dropped, the title used.
    let v = json_call(
        &l,
        "search",
        json!({"query": "Linkly HTML fixture", "doc_types": ["html"], "limit": 1}),
    );
    assert_eq!(v["results"][0]["title"], "Linkly HTML fixture");
    let v = json_call(
        &l,
        "search",
        json!({"query": "scriptonlyword", "doc_types": ["html"], "limit": 5}),
    );
    assert_eq!(v["total"], 0, "script text is not indexed: {v}");
    // The zero-byte CSV is recorded with its skip reason and is unreadable.
    let v = json_call(
        &l,
        "search",
        json!({"query": "scautable empty", "limit": 3}),
    );
    let empty = v["results"].as_array().unwrap().iter().find(|r| {
        r["path"]
            .as_str()
            .unwrap()
            .ends_with("scautable-empty_file-zero-bytes.csv")
    });
    if let Some(r) = empty {
        assert!(r["skip_reason"].as_str().unwrap().starts_with("empty"));
        let text = err_call(&l, "read", json!({"doc_id": r["doc_id"]}));
        assert!(text.starts_with("[CONTENT_UNREADABLE]"), "{text}");
    }
}
