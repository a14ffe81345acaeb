//! Answers an agent can act on (issue 15, points 1 and 2): snippets that say where the hit is
//! (`snippet_from`/`snippet_to`, read back exactly), and empty answers that name their filters,
//! say why and suggest the next call; reversed date windows and unknown `expand` ids refused.

use std::path::{Path, PathBuf};

use linkly_core::Config;
use linkly_tools::Linkly;
use serde_json::{Value, json};

use crate::common;
use common::{call, err_call, json_call};

fn open(home: &Path, roots: &[PathBuf]) -> Linkly {
    let mut config = Config::default();
    for r in roots {
        config.add_folder(r).unwrap();
    }
    common::open_synced(home, roots, config)
}

/// An index of these generated files under `docs/`.
fn fixture(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf, Linkly) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("docs");
    common::write_files(&root, files);
    let l = open(tmp.path(), std::slice::from_ref(&root));
    (tmp, root, l)
}

/// The real Markdown documents the repository carries (`testdata/corpus/md`).
fn corpus_md() -> (tempfile::TempDir, Linkly) {
    let tmp = tempfile::tempdir().unwrap();
    let md = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/corpus/md");
    let l = open(tmp.path(), &[md]);
    (tmp, l)
}

/// Reads lines `from..=to` of a document as the `read` tool shows them.
fn read_range(l: &Linkly, doc_id: &str, from: u64, to: u64) -> Vec<String> {
    let v = json_call(
        l,
        "read",
        json!({"doc_id": doc_id, "offset": from, "limit": to - from + 1}),
    );
    let text = v["content"].as_str().unwrap_or_else(|| panic!("{v}"));
    text.lines().map(str::to_string).collect()
}

#[test]
fn snippet_lines_read_back_hold_the_matched_words() {
    let (_tmp, l) = corpus_md();
    let mut checked = 0;
    for q in [
        "jerarquía de componentes",
        "props emit",
        "コンポーネント",
        "组件基础",
        "reactividad estado",
        "Principes fondamentaux des composants",
    ] {
        let v = json_call(&l, "search", json!({"query": q, "limit": 5}));
        for r in v["results"].as_array().unwrap() {
            if r["snippet_kind"] != "text" {
                continue;
            }
            let (from, to) = (
                r["snippet_from"].as_u64().unwrap(),
                r["snippet_to"].as_u64().unwrap(),
            );
            assert!(from >= 1 && from <= to, "{q}: {r}");
            assert!(to <= r["total_lines"].as_u64().unwrap(), "{q}: {r}");
            let lines = read_range(&l, r["doc_id"].as_str().unwrap(), from, to);
            let text = lines.join("\n").to_lowercase();
            let terms = r["matched_terms"].as_array().unwrap();
            assert!(!terms.is_empty(), "{q}: {r}");
            for t in terms {
                let t = t.as_str().unwrap();
                assert!(
                    text.contains(&t.to_lowercase()),
                    "{q}: {t:?} not in L{from}-{to}: {text}"
                );
                assert!(r["snippet"].as_str().unwrap().contains(t), "{q}: {r}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} snippets checked");
}

#[test]
fn cjk_and_accented_words_are_marked_where_the_index_found_them() {
    let (_tmp, l) = corpus_md();
    let v = json_call(
        &l,
        "search",
        json!({"query": "コンポーネント", "doc_types": ["md"], "limit": 1}),
    );
    let r = &v["results"][0];
    assert_eq!(r["snippet_kind"], "text", "{r}");
    assert_eq!(r["matched_terms"][0], "コンポーネント", "bigrams join: {r}");
    // Accents fold both ways: the query without them finds and marks the word with them.
    let v = json_call(&l, "search", json!({"query": "jerarquia", "limit": 1}));
    let r = &v["results"][0];
    assert_eq!(r["matched_terms"][0], "jerarquía", "{r}");
    let (text, _) = call(&l, "search", json!({"query": "jerarquia", "limit": 1}));
    let line = text.lines().find(|s| s.starts_with("> (L")).unwrap();
    assert!(line.contains("**jerarquía**"), "{line}");
    let (from, to) = (
        r["snippet_from"].as_u64().unwrap(),
        r["snippet_to"].as_u64().unwrap(),
    );
    let range = if from == to {
        format!("> (L{from}) ")
    } else {
        format!("> (L{from}-{to}) ")
    };
    assert!(line.starts_with(&range), "{line}");
}

#[test]
fn a_title_or_path_hit_says_no_passage_matched() {
    let (_tmp, _root, l) = fixture(&[
        ("zebrafish-protocol.txt", "Step one.\nStep two.\n"),
        ("other.txt", "nothing to see\n"),
    ]);
    let v = json_call(&l, "search", json!({"query": "zebrafish"}));
    let r = &v["results"][0];
    assert_eq!(r["snippet_kind"], "title", "{r}");
    assert_eq!(r["snippet"], "Step one. Step two.");
    assert_eq!(
        (r["snippet_from"].clone(), r["snippet_to"].clone()),
        (json!(1), json!(2))
    );
    assert!(r.get("matched_terms").is_none(), "{r}");
    let (text, _) = call(&l, "search", json!({"query": "zebrafish"}));
    assert!(
        text.contains("> (L1-2, the opening: no passage holds the query's words; the title or path matched) Step one. Step two."),
        "{text}"
    );
}

#[test]
fn an_empty_search_names_its_filters_and_what_to_try() {
    let (_tmp, root, l) = fixture(&[
        ("a/budget.md", "# Plan\n\nThe budget for 2024.\n"),
        ("b/other.txt", "unrelated words\n"),
    ]);
    let glob = format!("{}/b/", root.display());
    let v = json_call(
        &l,
        "search",
        json!({"query": "budget", "doc_types": ["pdf"], "path_glob": glob}),
    );
    assert_eq!(v["total"], 0);
    assert_eq!(v["filters"]["doc_types"], json!(["pdf"]));
    assert_eq!(v["filters"]["path_glob"], json!(glob));
    assert_eq!(v["unfiltered_total"], 1);
    let hint = v["hint"].as_str().unwrap();
    assert!(
        hint.contains("Without the filters (doc_types, path_glob), 1 document matches"),
        "{hint}"
    );
    assert!(hint.contains("scope=\"notes\""), "{hint}");
    let (text, _) = call(
        &l,
        "search",
        json!({"query": "budget", "doc_types": ["pdf"]}),
    );
    common::assert_holds(
        &text,
        &[
            "No results found for \"budget\".",
            "Filters: doc_types=[\"pdf\"]\n",
            "Hint: Without the filters (doc_types), 1 document matches",
        ],
    );
    // No filter: other words, find_paths.
    let v = json_call(&l, "search", json!({"query": "zzzqqq"}));
    assert!(
        v.get("filters").is_none() && v.get("unfiltered_total").is_none(),
        "{v}"
    );
    assert!(v["hint"].as_str().unwrap().contains("find_paths"), "{v}");
    // Results: no hint.
    let v = json_call(&l, "search", json!({"query": "budget"}));
    assert!(v.get("hint").is_none(), "{v}");
}

#[test]
fn reversed_date_windows_are_refused_naming_both_parameters() {
    let (_tmp, root, l) = fixture(&[("a.txt", "budget\n")]);
    let window = json!({"modified_after": "2024-06-01", "modified_before": "2024-01-01"});
    let mut search = window.clone();
    search["query"] = json!("budget");
    let text = err_call(&l, "search", search);
    assert!(
        text.starts_with("[INVALID_ARGUMENT] modified_after (2024-06-01) is later than modified_before (2024-01-01)"),
        "{text}"
    );
    for scope in ["folder", "notes"] {
        let mut list = window.clone();
        list["scope"] = json!(scope);
        let text = err_call(&l, "list", list);
        assert!(
            text.contains("modified_after (2024-06-01) is later than modified_before"),
            "{scope}: {text}"
        );
    }
    // One instant is a valid window (bounds are inclusive).
    let v = json_call(
        &l,
        "list",
        json!({"scope": "folder", "path": root, "modified_after": "2024-01-01", "modified_before": "2024-01-01"}),
    );
    assert_eq!(v["total"], 0);
    assert_eq!(v["unfiltered_total"], 1, "{v}");
    assert!(
        v["hint"]
            .as_str()
            .unwrap()
            .contains("holds 1 indexed file without the filters (modified_after, modified_before)"),
        "{v}"
    );
}

#[test]
fn grep_without_a_match_suggests_the_option_that_finds_it() {
    let (_tmp, _root, l) =
        fixture(&[("g.md", "# Notes\n\nThe Budget is set.\nthe bud get again\n")]);
    let id = json_call(&l, "search", json!({"query": "budget"}))["results"][0]["doc_id"].clone();
    let v = json_call(&l, "grep", json!({"pattern": "budget is", "doc_id": id}));
    assert_eq!(v["total_matches"], 0);
    assert_eq!(
        v["retry_with"],
        json!({"case_insensitive": true, "total_matches": 1})
    );
    assert_eq!(v["searched"]["total_lines"], 4);
    let v = json_call(
        &l,
        "grep",
        json!({"pattern": "bud get", "doc_id": id, "case_insensitive": true}),
    );
    assert_eq!(v["total_matches"], 1, "a literal match: {v}");
    let v = json_call(&l, "grep", json!({"pattern": "budgetagain", "doc_id": id}));
    assert_eq!(
        v["retry_with"],
        json!({"fuzzy_whitespace": true, "total_matches": 1}),
        "{v}"
    );
    let (text, _) = call(
        &l,
        "grep",
        json!({"pattern": "Budget is (set", "doc_id": id}),
    );
    assert!(text.contains("[INVALID_ARGUMENT]"), "{text}");
    let (text, _) = call(&l, "grep", json!({"pattern": "zzz.q", "doc_id": id}));
    common::assert_holds(
        &text,
        &[
            "Found 0 matches in",
            "Searched 4 lines (md) with case_insensitive=false, fuzzy_whitespace=false.",
            "not even with case_insensitive or fuzzy_whitespace on",
            "regular expression",
        ],
    );
}

#[test]
fn outline_refuses_unknown_expand_ids() {
    let (_tmp, _root, l) = fixture(&[("g.md", "# A\n\ntext\n\n## A1\n\nmore\n\n# B\n\nend\n")]);
    let id = json_call(&l, "search", json!({"query": "text"}))["results"][0]["doc_id"].clone();
    let text = err_call(
        &l,
        "outline",
        json!({"doc_ids": [id], "expand": ["1.1", "7", "2.5"]}),
    );
    assert!(
        text.starts_with(&format!("[INVALID_ARGUMENT] expand names node id(s) that no requested outline has: \"7\", \"2.5\". Top-level ids are {}: \"1\"…\"2\"", id.as_str().unwrap())),
        "{text}"
    );
    let v = json_call(&l, "outline", json!({"doc_ids": [id], "expand": ["1.1"]}));
    assert!(
        v["documents"][0]["outline_text"]
            .as_str()
            .unwrap()
            .contains("[1.1] A1")
    );
}

#[test]
fn empty_discovery_answers_say_why() {
    let (_tmp, root, l) = fixture(&[
        ("projects/taxes-2023.pdf.txt", "numbers\n"),
        ("x/y.txt", "z\n"),
    ]);
    // find_paths: the keyword is only in a file name.
    let v = json_call(&l, "find_paths", json!({"patterns": ["taxes"]}));
    assert_eq!(v["directories"], json!([]));
    let hint = v["hint"].as_str().unwrap();
    assert!(hint.contains("1 file name does"), "{hint}");
    assert!(hint.contains("call search"), "{hint}");
    let (text, _) = call(&l, "find_paths", json!({"patterns": ["nowhere"]}));
    assert!(
        text.contains(
            "No folder candidates matched.\nHint: No folder or file name in the 2 indexed paths"
        ),
        "{text}"
    );
    // list: a type filter that empties the folder.
    let v = json_call(
        &l,
        "list",
        json!({"scope": "folder", "path": root.join("x"), "doc_types": ["pdf"]}),
    );
    assert_eq!(v["total"], 0);
    assert_eq!(v["filters"], json!({"doc_types": ["pdf"]}));
    assert_eq!(v["unfiltered_total"], 1);
    let (text, _) = call(
        &l,
        "list",
        json!({"scope": "folder", "path": root.join("x"), "doc_types": ["pdf"]}),
    );
    assert!(
        text.contains("No files match.\nFilters: doc_types=[\"pdf\"]\nHint: "),
        "{text}"
    );
    // explore of an empty index.
    let tmp = tempfile::tempdir().unwrap();
    let empty = open(tmp.path(), &[]);
    let v: Value = json_call(&empty, "explore", json!({}));
    assert!(v["hint"].as_str().unwrap().contains("linkly index"), "{v}");
    let v = json_call(&empty, "search", json!({"query": "x"}));
    assert!(
        v["hint"]
            .as_str()
            .unwrap()
            .contains("holds no document yet"),
        "{v}"
    );
}

#[test]
fn a_page_of_results_is_the_whole_lists_slice() {
    let files: Vec<(String, String)> = (0..14)
        .map(|i| {
            (
                format!("page{i:02}.md"),
                format!("# Page {i}\n\nThe lantern report, part {i}.\n"),
            )
        })
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let (_tmp, _root, l) = fixture(&refs);
    for sort in [None, Some(linkly_tools::TimeSort::Newest)] {
        let params = || linkly_tools::SearchParams {
            query: "lantern report".into(),
            limit: Some(14),
            time_sort: sort,
            ..linkly_tools::SearchParams::default()
        };
        let whole = l.search(params()).unwrap();
        assert_eq!(whole.results.len(), 14);
        let page = l.search_page(params(), 10).unwrap();
        assert_eq!(page.total, whole.total);
        let ids = |r: &linkly_tools::SearchResponse| -> Vec<String> {
            r.results.iter().map(|h| h.doc_id.clone()).collect()
        };
        assert_eq!(ids(&page), ids(&whole)[10..], "{sort:?}");
        assert_eq!(page.results[0].snippet, whole.results[10].snippet);
        // Past the end: no result, and not the empty answer's hint either.
        let past = l.search_page(params(), 20).unwrap();
        assert!(past.results.is_empty() && past.hint.is_none());
        assert_eq!(past.total, whole.total);
    }
}
