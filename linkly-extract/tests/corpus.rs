//! Runs `extract_path` on every file of the test corpus (`testdata/corpus`: `md`, `txt`,
//! `html`, `csv`, `edge`) and checks the facts `testdata/MANIFEST.md` states. The `linkly-*`
//! files are written by `testdata/make_fixtures.py` (legacy encodings and charsets).

use linkly_core::{OutlineNode, SkipReason, is_cjk};
use linkly_extract::{Extracted, extract_path};

use crate::common;
use common::{Results, check_ranges, corpus_dir, extract_folders, lines, ok};

const FOLDERS: [&str; 5] = ["md", "txt", "html", "csv", "edge"];

/// Every file of the five folders, extracted once: file name → result.
fn extract_all() -> Results {
    extract_folders(&FOLDERS, |_, path| extract_path(path))
}

fn top_titles(e: &Extracted) -> Vec<&str> {
    e.outline.iter().map(|n| n.title.as_str()).collect()
}

/// Every heading node's first line shows the heading's title (markup characters aside).
fn check_heading_lines(name: &str, e: &Extracted, nodes: &[OutlineNode]) {
    let text_lines = lines(e);
    let strip = |s: &str| -> String {
        s.chars()
            .filter(|c| !matches!(c, '`' | '*' | '_' | '\\') && !c.is_whitespace())
            .collect()
    };
    for n in nodes {
        let line = text_lines[n.start_line as usize - 1];
        assert!(
            strip(line).contains(&strip(&n.title)),
            "{name}: line {} {line:?} does not show heading {:?}",
            n.start_line,
            n.title
        );
        check_heading_lines(name, e, &n.children);
    }
}

#[test]
fn every_file_extracts_without_failure_and_with_valid_structure() {
    let all = extract_all();
    assert!(all.len() >= 20, "only {} corpus files found", all.len());
    for (name, (path, result)) in &all {
        let e = match result {
            Ok(e) => e,
            Err(skip) => {
                assert_ne!(skip.code, SkipReason::EXTRACTOR_FAILED, "{name}: {skip}");
                continue;
            }
        };
        assert!(!e.text.contains('\r'), "{name}: CR in text");
        assert!(!e.text.contains('\0'), "{name}: NUL in text");
        assert!(
            !e.text.contains('\u{FFFD}'),
            "{name}: replacement character in text"
        );
        assert!(
            !e.text.chars().any(|c| ('\u{80}'..='\u{9f}').contains(&c)),
            "{name}: C1 control in text (mojibake)"
        );
        assert!(!e.text.ends_with('\n'), "{name}: trailing newline");
        let total = e.total_lines();
        check_ranges(name, &e.outline, 1, total.max(1));
        let ext = path.extension().and_then(|x| x.to_str()).unwrap_or("");
        if matches!(ext, "md" | "html" | "htm") {
            check_heading_lines(name, e, &e.outline);
        }
    }
}

#[test]
fn markdown_headings_title_and_text() {
    let all = extract_all();
    let corpus = corpus_dir();

    // Text is the file after its front matter (metadata, not text), but for the characters
    // that break matching (the French file's non-breaking space): grep and read line numbers
    // are the file's, minus the front matter's lines.
    for (name, (path, result)) in &all {
        if path.extension().is_some_and(|x| x == "md") {
            let e = result.as_ref().unwrap_or_else(|s| panic!("{name}: {s}"));
            let raw = std::fs::read_to_string(corpus.join("md").join(name)).unwrap();
            let raw = raw.replace("\r\n", "\n");
            let body = linkly_extract::formats::split_front_matter(&raw)
                .map_or(raw.as_str(), |fm| &raw[fm.body_offset..]);
            assert_eq!(
                e.text,
                body.replace('\u{A0}', " ")
                    .trim_end_matches(['\n', ' ', '\t']),
                "{name}"
            );
            assert!(!e.text.contains('\u{A0}'), "{name}");
            assert_eq!(e.encoding, Some("UTF-8"));
        }
    }

    if let Some(e) = ok(&all, "vuedocs-zh-component-basics.md") {
        assert_eq!(top_titles(e), ["组件基础"]);
        assert_eq!(e.title.as_deref(), Some("组件基础"));
        assert_eq!(e.outline[0].start_line, 1);
        let h2: Vec<&str> = e.outline[0]
            .children
            .iter()
            .map(|n| n.title.as_str())
            .collect();
        assert!(h2.contains(&"定义一个组件"), "{h2:?}");
        assert!(h2.contains(&"传递 props"), "{h2:?}");
    }
    for (name, title) in [
        (
            "vuedocs-fr-component-basics.md",
            "Principes fondamentaux des composants",
        ),
        ("vuedocs-ja-component-basics.md", "コンポーネントの基礎"),
        (
            "vuedocs-ja-reactivity-fundamentals.md",
            "リアクティビティーの基礎",
        ),
        ("vuedocs-zh-reactivity-fundamentals.md", "响应式基础"),
    ] {
        if let Some(e) = ok(&all, name) {
            assert_eq!(top_titles(e), [title], "{name}");
            assert_eq!(e.title.as_deref(), Some(title), "{name}");
        }
    }

    if let Some(e) = ok(&all, "reactdocs-es-thinking-in-react.md") {
        assert_eq!(
            top_titles(e),
            [
                "Comienza con el boceto",
                "Paso 1: Separa la UI en una jerarquía de componentes",
                "Paso 2: Construye una versión estática en React",
                "Paso 3: Encuentra la representación mínima pero completa del estado de la UI",
                "Paso 4: Identificar dónde debe vivir tu estado",
                "Paso 5: Añade flujo de datos inverso",
                "¿A dónde ir a partir de aquí?",
            ]
        );
        // Front matter: the title, never a heading, and never text: line 1 is the first line
        // after it (the blank line before `<Intro>`).
        assert_eq!(e.title.as_deref(), Some("Pensar en React"));
        assert!(!e.text.contains("title: Pensar en React"));
        assert_eq!(&lines(e)[..2], ["", "<Intro>"]);
        assert!(
            e.outline[0].start_line > 3,
            "front matter lines in the outline"
        );
        assert!(lines(e)[e.outline[1].start_line as usize - 1].starts_with("## Paso 1"));
        // The h4 under step 3.
        assert_eq!(e.outline[3].children[0].title, "Props vs. estado");
    }
    if let Some(e) = ok(&all, "reactdocs-es-state-a-components-memory.md") {
        assert_eq!(
            top_titles(e),
            [
                "Cuando una variable regular no es suficiente",
                "Agregar una variable de estado",
                "Colocar múltiples variables de estado a un componente",
                "El estado es aislado y privado.",
            ]
        );
        assert!(e.title.is_some());
        assert!(!e.outline.iter().any(|n| n.title.contains("{/")));
    }
}

#[test]
fn text_encodings() {
    let all = extract_all();
    if let Some(e) = ok(&all, "linkly-euc-jp.txt") {
        assert_eq!(e.encoding, Some("EUC-JP"));
        assert!(e.text.contains("コンソール アプリケーション"), "{}", e.text);
        assert!(e.text.contains("プロジェクト"));
        assert!(e.text.starts_with("索引ツールの使い方\n\n"));
        assert_eq!(e.total_lines(), 13);
    }
    if let Some(e) = ok(&all, "linkly-windows-1250-czech.txt") {
        assert_eq!(e.encoding, Some("windows-1250"));
        for word in [
            "veřejnosti",
            "českými",
            "Děti",
            "Žádáme",
            "Šťastný",
            "Řezníčková",
        ] {
            assert!(e.text.contains(word), "missing {word}");
        }
    }
    if let Some(e) = ok(&all, "linkly-windows-1252-french.txt") {
        assert_eq!(e.encoding, Some("windows-1252"));
        assert!(e.text.starts_with("Chère Hélène,"));
        assert!(e.text.contains("lettre…"));
        assert!(e.text.contains("« un chef-d’œuvre »"));
    }
    if let Some(e) = ok(&all, "linkly-utf16le-nobom.txt") {
        assert_eq!(e.encoding, Some("UTF-16LE"));
        assert_eq!(lines(e)[0], "Time,Station,Temperature");
        assert_eq!(lines(e)[1], "2024-03-01 06:00,Station A,0.0");
        assert_eq!(e.total_lines(), 25);
    }
    // Japanese legacy encodings (`make_fixtures.py`): CP932 with NEC/IBM extensions and
    // half-width katakana, EUC-JP with half-width katakana, ISO-2022-JP (7-bit, valid UTF-8 too).
    if let Some(e) = ok(&all, "linkly-cp932-extensions.txt") {
        assert_eq!(e.encoding, Some("Shift_JIS"));
        assert_eq!(lines(e)[1], "①\u{3000}㈱髙島屋の本社は大阪市にあります。");
        assert!(e.text.contains("㍻三十年"));
        assert!(e.text.contains("第Ⅳ期"));
        assert_eq!(lines(e)[4], "ﾊﾝｶｸｶﾀｶﾅ ﾃﾞ ｶｲﾀ ｷﾞｮｳ ﾓ ｱﾘﾏｽ｡");
        assert_eq!(e.total_lines(), 5);
    }
    let vue_ja = std::fs::read_to_string(corpus_dir().join("md/vuedocs-ja-component-basics.md"))
        .unwrap()
        .split('\n')
        .map(str::to_string)
        .collect::<Vec<_>>();
    for name in [
        "linkly-euc-jp-vuedocs.txt",
        "linkly-iso-2022-jp-vuedocs.txt",
    ] {
        if let Some(e) = ok(&all, name) {
            let want = if name.contains("euc") {
                "EUC-JP"
            } else {
                "ISO-2022-JP"
            };
            assert_eq!(e.encoding, Some(want), "{name}");
            // Four paragraphs of the Vue guide, lines 7, 13, 94 and 96 of the Markdown file.
            for (i, n) in [7, 13, 94, 96].into_iter().enumerate() {
                assert_eq!(lines(e)[2 * i], vue_ja[n - 1], "{name}");
            }
        }
    }
    if let Some(e) = ok(&all, "linkly-euc-jp-vuedocs.txt") {
        assert_eq!(lines(e).last(), Some(&"ｶﾀｶﾅ ﾓ ﾖﾒﾏｽ"));
    }
    if let Some(e) = ok(&all, "textract-raw_text.txt") {
        let raw = std::fs::read_to_string(corpus_dir().join("txt/textract-raw_text.txt")).unwrap();
        assert_eq!(e.text, raw.trim_end_matches(['\n', ' ', '\t']));
    }
}

#[test]
fn html_titles_headings_and_charsets() {
    let all = extract_all();
    if let Some(e) = ok(&all, "linkly-headings.html") {
        assert_eq!(e.title.as_deref(), Some("Linkly HTML fixture"));
        assert_eq!(top_titles(e), ["Linkly HTML fixture", "Second part"]);
        let h2: Vec<&str> = e.outline[0]
            .children
            .iter()
            .map(|n| n.title.as_str())
            .collect();
        assert_eq!(h2, ["Lists", "Tables"]);
        assert_eq!(e.outline[0].children[1].children[0].title, "Nested heading");
        assert!(
            e.text.contains("X | Y | Z"),
            "table rows as cells joined by |"
        );
        assert!(!e.text.contains("scriptonlyword"), "script text leaked");
        assert!(!e.text.contains("font-family"), "style text leaked");
        assert!(
            !e.text.contains("\n\n\n"),
            "more than one blank line in a row"
        );
        assert!(
            !lines(e)
                .iter()
                .any(|l| l.trim().is_empty() && !l.is_empty())
        );
    }
    if let Some(e) = ok(&all, "linkly-windows-1256-mislabelled.html") {
        assert_eq!(e.title.as_deref(), Some("Arabic notice"));
        let arabic = e
            .text
            .chars()
            .filter(|c| ('\u{600}'..='\u{6ff}').contains(c))
            .count();
        assert!(arabic > 100, "{arabic} Arabic letters: {}", e.text);
        assert!(e.text.contains("إعلان المكتبة"));
    }
    if let Some(e) = ok(&all, "linkly-GB2312-undeclared.html") {
        assert!(e.text.contains("图书馆开放时间通知"), "{}", e.text);
    }
    if let Some(e) = ok(&all, "tika-testHTML_charset_utf16le.html") {
        assert_eq!(e.title.as_deref(), Some("Title"));
        assert_eq!(e.encoding, Some("UTF-16LE"));
        assert!(e.text.contains("This is a sample text"));
    }
    if let Some(e) = ok(&all, "tika-testHTML_embedded_img_in_js.html") {
        assert_eq!(e.title.as_deref(), Some("Title"));
        assert!(e.text.contains("some content"));
        assert!(!e.text.contains("base64"));
        assert!(!e.text.contains("data:image"));
        assert!(
            e.text.len() < 1000,
            "script content leaked: {} bytes",
            e.text.len()
        );
    }
    // Undeclared legacy CJK charsets (GB2312, SHIFT_JIS samples) decode to CJK text.
    for (name, (_, result)) in &all {
        let upper = name.to_ascii_uppercase();
        if name.ends_with(".html") && (upper.contains("GB2312") || upper.contains("SHIFT_JIS")) {
            let e = result.as_ref().unwrap_or_else(|s| panic!("{name}: {s}"));
            let cjk = e.text.chars().filter(|&c| is_cjk(c)).count();
            assert!(cjk >= 10, "{name}: {cjk} CJK characters in {:?}", e.text);
        }
    }
}

#[test]
fn csv_tables_and_encodings() {
    let all = extract_all();
    // Every CSV that extracts is one Markdown table with one outline node over all of it.
    for (name, (path, result)) in &all {
        if path.extension().is_none_or(|x| x != "csv") {
            continue;
        }
        let Ok(e) = result else { continue };
        assert_eq!(e.title, None, "{name}");
        assert_eq!(e.outline.len(), 1, "{name}");
        let node = &e.outline[0];
        assert_eq!(
            (node.start_line, node.end_line),
            (1, e.total_lines()),
            "{name}"
        );
        let text_lines = lines(e);
        assert!(text_lines[1].starts_with("| --- |"), "{name}");
        for line in &text_lines {
            assert!(
                line.starts_with('|') && line.ends_with(" |"),
                "{name}: {line:?}"
            );
        }
        let rows = e.total_lines() - 2;
        let rows_text = if rows == 1 {
            "1 row".to_string()
        } else {
            format!("{rows} rows")
        };
        let shown = node.title.replace(',', "");
        assert!(
            shown.ends_with(&rows_text),
            "{name}: {} vs {rows}",
            node.title
        );
        assert!(node.detail[0].starts_with("Columns: "), "{name}");
    }

    let expect = |name: &str, words: &[&str]| {
        if let Some(e) = ok(&all, name) {
            for w in words {
                assert!(e.text.contains(w), "{name}: missing {w:?}");
            }
        }
    };
    expect("csvkit-test_latin1.csv", &["| 4 | 5 | © |"]);
    expect("rust-csv-uspop-latin1.csv", &["Õakman"]);
    expect(
        "linkly-gbk.csv",
        &["| 编号 | 地区 | 备注 |", "| 001 | 北京市 | 示例数据 |"],
    );
    expect(
        "linkly-cp932.csv",
        &[
            "| 番号 | 都道府県 | 登録件数 | 備考 |",
            "| 1 | 北海道 | 819,729 | サンプル値 |",
            "沖縄県",
        ],
    );
    expect("csvkit-test_utf16_little.csv", &["| a | b | c |", "ʤ"]);

    let title = |name: &str| ok(&all, name).map(|e| e.outline[0].title.clone());
    if let Some(t) = title("csvkit-realdata-ks_1033_data.csv") {
        assert_eq!(t, "Table: 14 columns × 1,575 rows");
    }
    if let Some(t) = title("linkly-cp932.csv") {
        assert_eq!(t, "Table: 4 columns × 47 rows");
    }
    if let Some(e) = ok(&all, "csvkit-test_utf8_bom.csv") {
        assert_eq!(lines(e)[0], "| foo | bar | baz |");
        assert_eq!(e.outline[0].detail[0], "Columns: foo, bar, baz");
        assert!(e.text.contains("ʤ"));
    }
    if let Some(e) = ok(&all, "csvkit-null_byte.csv") {
        assert_eq!(lines(e)[2], "|  | 2 | 3 |");
    }
    if let Some(e) = ok(&all, "linkly-cp932.csv") {
        assert_eq!(e.encoding, Some("Shift_JIS"));
    }
    // Japan Post's KEN_ALL layout: mostly half-width katakana, once refused as
    // `encoding_unknown`. Full-width digits in the names become ASCII (`１９` → `19`).
    if let Some(e) = ok(&all, "linkly-ken-all-cp932.csv") {
        assert_eq!(e.encoding, Some("Shift_JIS"));
        assert_eq!(e.outline[0].title, "Table: 15 columns × 15 rows");
        assert_eq!(
            lines(e)[0],
            "| 01101 | 060   | 0600000 | ﾎｯｶｲﾄﾞｳ | ｻｯﾎﾟﾛｼﾁｭｳｵｳｸ | ｲｶﾆｹｲｻｲｶﾞﾅｲﾊﾞｱｲ | 北海道 | 札幌市中央区 | 以下に掲載がない場合 | 0 | 0 | 0 | 0 | 0 | 0 |"
        );
        assert!(
            e.text
                .contains("| ｵｵﾄﾞｵﾘﾆｼ(1-19ﾁｮｳﾒ) | 北海道 | 札幌市中央区 | 大通西（1～19丁目） |")
        );
        assert!(
            e.text
                .contains("| 1020072 | ﾄｳｷｮｳﾄ | ﾁﾖﾀﾞｸ | ｲｲﾀﾞﾊﾞｼ | 東京都 | 千代田区 | 飯田橋 |")
        );
    }
    if let Some(e) = ok(&all, "linkly-gbk.csv") {
        assert!(
            matches!(e.encoding, Some("GBK" | "gb18030")),
            "{:?}",
            e.encoding
        );
    }
    for (empty, code) in [
        ("csvkit-empty.csv", SkipReason::EMPTY),
        ("scautable-empty_file-zero-bytes.csv", SkipReason::EMPTY),
    ] {
        if let Some((_, result)) = all.get(empty) {
            assert_eq!(result.as_ref().unwrap_err().code, code, "{empty}");
        }
    }
}

#[test]
fn edge_files() {
    let all = extract_all();
    if let Some((_, result)) = all.get("scautable-empty_file-zero-bytes.csv") {
        let skip = result.as_ref().unwrap_err();
        assert_eq!(skip.code, SkipReason::EMPTY);
    }
    // Files of formats this crate does not read (yet) are skipped, never garbage.
    for name in ["pdfplumber-empty-zero-bytes.pdf", "calamine-too_small.xls"] {
        if let Some((_, Err(skip))) = all.get(name) {
            assert_ne!(skip.code, SkipReason::EXTRACTOR_FAILED, "{name}");
        }
    }
}
