//! Office, book and PDF documents through the real binary: outlines whose line ranges `read`
//! honours, for a bookmarked PDF (extracted in the isolated worker), a DOCX with heading
//! styles, an EPUB with a nested TOC and an XLSX workbook; and the same through MCP.

mod common;

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
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"].as_str().unwrap().ends_with(file))
        .unwrap_or_else(|| panic!("{file} not found: {v}"))["doc_id"]
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
