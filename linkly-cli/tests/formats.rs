//! Office, book and PDF documents through the real binary: outlines whose line ranges `read`
//! honours, for a bookmarked PDF (extracted in the isolated worker), a DOCX with heading
//! styles, an EPUB with a nested TOC and an XLSX workbook; and the same through MCP.

use crate::common;

use common::Env;
use serde_json::json;

const FILES: [&str; 4] = [
    "pdf/tika-testPDF_bookmarks.pdf",
    "docx/linkly-headers.docx",
    "epub/idpf-childrens-literature.epub",
    "xlsx/csvkit-sheets.xlsx",
];

fn env_with_corpus_files() -> Env {
    let env = Env::new(&[]);
    let corpus = common::corpus_dir();
    for f in FILES {
        let src = corpus.join(f);
        fs_err::copy(&src, env.docs.join(src.file_name().unwrap())).unwrap();
    }
    env.index();
    env
}

fn id_of(env: &Env, file: &str) -> String {
    let v = env.json(&["search", file.split('.').next().unwrap(), "--limit", "5"]);
    common::result_ending(&v, file).unwrap_or_else(|| panic!("{file} not found: {v}"))["doc_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `[1.2] Title [L5-15, 11 lines]` → (title, start, end).
fn nodes(outline_text: &str) -> Vec<(String, usize, usize)> {
    outline_text
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l.strip_prefix('[')?;
            let (_, rest) = rest.split_once("] ")?;
            let (title, range) = rest.rsplit_once(" [L")?;
            let (span, _) = range.split_once(',')?;
            let (a, b) = span.split_once('-')?;
            Some((title.to_string(), a.parse().ok()?, b.parse().ok()?))
        })
        .collect()
}

fn line_at(env: &Env, id: &str, n: usize) -> String {
    let v = env.json(&["read", id, "--offset", &n.to_string(), "--limit", "1"]);
    v["content"].as_str().unwrap().to_string()
}

#[test]
fn outlines_of_real_documents_match_read() {
    let env = env_with_corpus_files();

    let pdf = id_of(&env, "tika-testPDF_bookmarks.pdf");
    let v = env.json(&["outline", &pdf]);
    let text = v["documents"][0]["outline_text"].as_str().unwrap();
    let n = nodes(text);
    assert_eq!(n[0].0, "Countries", "{text}");
    let denmark = n.iter().find(|x| x.0.starts_with("Denmark")).expect(text);
    assert_eq!(line_at(&env, &pdf, denmark.1), "--- page 2 ---");
    assert!(line_at(&env, &pdf, denmark.1 + 1).contains("Denmark"));
    // PDF grep tolerates stray whitespace by default.
    let g = env.json(&["grep", "about Den mark", &pdf]);
    assert_eq!(g["total_matches"], 1, "{g}");

    let docx = id_of(&env, "linkly-headers.docx");
    let v = env.json(&["outline", &docx]);
    let text = v["documents"][0]["outline_text"].as_str().unwrap();
    let n = nodes(text);
    assert_eq!(n.len(), 6, "{text}");
    assert!(
        text.contains("          [1.1.1.1.1.1] Sixth level"),
        "{text}"
    );
    for (title, start, _) in &n {
        assert!(
            line_at(&env, &docx, *start).contains(title.as_str()),
            "{title} at {start}"
        );
    }

    let epub = id_of(&env, "idpf-childrens-literature.epub");
    let v = env.json(&["outline", &epub]);
    let text = v["documents"][0]["outline_text"].as_str().unwrap();
    assert!(
        text.lines().any(|l| l.starts_with("      [")),
        "nested 4 deep: {text}"
    );
    let n = nodes(text);
    let rabbi = n
        .iter()
        .find(|x| x.0.contains("The Rabbi and the Diadem"))
        .expect(text);
    assert!(line_at(&env, &epub, rabbi.1).contains("Rabbi"), "{rabbi:?}");

    let xlsx = id_of(&env, "csvkit-sheets.xlsx");
    let v = env.json(&["outline", &xlsx]);
    let text = v["documents"][0]["outline_text"].as_str().unwrap();
    let n = nodes(text);
    let data = n.iter().find(|x| x.0.starts_with("data (")).expect(text);
    assert_eq!(line_at(&env, &xlsx, data.1), "## Sheet: data");
    assert!(text.contains("Columns: text, date, integer"), "{text}");
}

#[test]
fn outline_of_real_documents_over_mcp() {
    let env = env_with_corpus_files();
    let ids: Vec<String> = FILES
        .iter()
        .map(|f| id_of(&env, f.rsplit('/').next().unwrap()))
        .collect();
    let scenario = json!({"steps": [
        {"name": "outline of four formats", "tool": "outline", "arguments": {"doc_ids": ids},
         "expect": {"contains": ["[1.2] Denmark", "[1.1.1.1.1.1] Sixth level", "The Rabbi and the Diadem", "data (6 rows × 8 columns)"]}},
        {"name": "read a PDF page", "tool": "read", "arguments": {"doc_id": ids[0], "offset": 3, "limit": 2},
         "expect": {"contains": ["     3\t--- page 2 ---", "Denmark"]}}
    ]});
    env.probe("formats", &env.stdio_target(), &scenario);
}

/// An environment holding these corpus files, indexed.
fn env_with(files: &[&str]) -> Env {
    let env = Env::new(&[]);
    for f in files {
        let src = common::corpus_dir().join(f);
        fs_err::copy(&src, env.docs.join(src.file_name().unwrap())).unwrap();
    }
    env.index();
    env
}

/// The id of the indexed file whose name is `file` (`list` of the documents folder).
fn id_by_name(env: &Env, file: &str) -> String {
    let v = env.json(&[
        "list",
        "--scope",
        "folder",
        "--path",
        env.docs.to_str().unwrap(),
    ]);
    v["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .find(|e| e["path"].as_str().is_some_and(|p| p.ends_with(file)))
        .unwrap_or_else(|| panic!("{file} not listed: {v}"))["doc_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{file} has no id: {v}"))
        .to_string()
}

/// `grep` in JSON: the matching lines' numbers and texts.
fn grep_lines(env: &Env, pattern: &str, id: &str) -> Vec<(u64, String)> {
    let v = env.json(&["grep", "-C", "0", pattern, id]);
    v["matches"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|m| {
            (
                m["line_number"].as_u64().unwrap(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn pdf_ligatures_and_line_end_hyphens_grep_on_the_line_read_shows() {
    let env = env_with(&["pdf/pdfjs-freeculture-p185-186.pdf"]);
    let id = id_by_name(&env, "pdfjs-freeculture-p185-186.pdf");
    // `quanti\u{FB01}ed` in the font: grep finds the plain word on line 9, read shows it there.
    // (Plain words: PDF grep's default fuzzy_whitespace matches the text with its whitespace
    // removed, where `\b` finds no word boundary.)
    let hits = grep_lines(&env, "quantified", &id);
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].0, 9);
    assert!(
        hits[0].1.contains("if not yet quantified, threat"),
        "{hits:?}"
    );
    assert_eq!(line_at(&env, &id, 9), hits[0].1);
    // `In re-` / `sponse`: one word on line 8, where the hyphenation began.
    let hits = grep_lines(&env, "response", &id);
    assert_eq!(
        hits.iter().map(|h| h.0).collect::<Vec<_>>(),
        [8],
        "{hits:?}"
    );
    assert!(line_at(&env, &id, 8).ends_with("In response"));
    // Search (BM25) finds both words too.
    for word in ["quantified", "response"] {
        let v = env.json(&["search", word, "--limit", "5"]);
        assert_eq!(v["results"][0]["doc_id"], id.as_str(), "{word}: {v}");
    }
}

#[test]
fn cp932_postal_code_table_is_indexed_and_found_by_kanji_and_half_width_kana() {
    let env = env_with(&[
        "csv/linkly-ken-all-cp932.csv",
        "txt/linkly-iso-2022-jp-vuedocs.txt",
    ]);
    let csv = id_by_name(&env, "linkly-ken-all-cp932.csv");
    for query in ["札幌市中央区", "飯田橋", "ｻｯﾎﾟﾛｼﾁｭｳｵｳｸ", "ｲｲﾀﾞﾊﾞｼ"]
    {
        let v = env.json(&["search", query, "--limit", "5"]);
        assert_eq!(v["results"][0]["doc_id"], csv.as_str(), "{query}: {v}");
    }
    let hits = grep_lines(&env, "ｲｲﾀﾞﾊﾞｼ", &csv);
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert!(
        hits[0].1.contains("| 東京都 | 千代田区 | 飯田橋 |"),
        "{hits:?}"
    );
    // ISO-2022-JP text reads as Japanese, not as escape sequences.
    let txt = id_by_name(&env, "linkly-iso-2022-jp-vuedocs.txt");
    assert!(line_at(&env, &txt, 1).starts_with("コンポーネントによって UI を"));
    let v = env.json(&["search", "再利用可能なピース", "--limit", "5"]);
    assert_eq!(v["results"][0]["doc_id"], txt.as_str(), "{v}");
}
