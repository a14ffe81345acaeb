//! Runs `extract_path` on every file of the test corpus folders `docx`, `pptx`, `xlsx` and
//! `epub` (`testdata/corpus`) and checks the facts `testdata/MANIFEST.md` states: heading
//! titles, slide titles, sheet names, TOC entries and depth, skip reasons, and the textract
//! reference texts.

use std::collections::HashSet;

use linkly_core::{OutlineNode, SkipReason};
use linkly_extract::extract_path;

use crate::common;
use common::{Results, check_ranges, corpus_dir, extract_folders, lines, ok};

const FOLDERS: [&str; 4] = ["docx", "pptx", "xlsx", "epub"];

/// Every file of an office folder, extracted once: file name → result.
fn extract_folder(folder: &str) -> Results {
    extract_folders(&[folder], |_, path| extract_path(path))
}

fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// (depth, title) of every node, in document order.
fn flatten(nodes: &[OutlineNode], depth: usize, out: &mut Vec<(usize, String)>) {
    for n in nodes {
        out.push((depth, n.title.clone()));
        flatten(&n.children, depth + 1, out);
    }
}

fn depth(nodes: &[OutlineNode]) -> usize {
    nodes
        .iter()
        .map(|n| 1 + depth(&n.children))
        .max()
        .unwrap_or(0)
}

/// The skip reason each protected or broken file must get.
fn expected_skip(name: &str) -> Option<&'static str> {
    if name.contains("protected_passtika") {
        Some(SkipReason::ENCRYPTED)
    } else if name.contains("truncated") {
        Some(SkipReason::CORRUPT)
    } else if name == "python-pptx-no-slides.pptx" {
        Some(SkipReason::EMPTY)
    } else {
        None
    }
}

#[test]
fn every_office_file_extracts_or_skips_with_the_right_reason() {
    let mut extracted = 0;
    let mut skipped = 0;
    for folder in FOLDERS {
        let all = extract_folder(folder);
        assert!(!all.is_empty(), "no files in {folder}");
        for (name, (_, result)) in &all {
            match (result, expected_skip(name)) {
                (Ok(e), None) => {
                    extracted += 1;
                    assert!(!e.text.trim().is_empty(), "{name}: no text");
                    assert!(!e.text.contains('\r'), "{name}: CR in text");
                    assert!(!e.text.contains('\0'), "{name}: NUL in text");
                    assert!(!e.text.contains("\n\n\n"), "{name}: a run of blank lines");
                    assert!(!e.text.starts_with('\n'), "{name}: leading blank line");
                    assert!(!e.text.ends_with('\n'), "{name}: trailing newline");
                    check_ranges(name, &e.outline, 1, e.total_lines().max(1));
                }
                (Ok(_), Some(code)) => panic!("{name}: extracted, but should be skipped as {code}"),
                (Err(skip), Some(code)) => {
                    skipped += 1;
                    assert_eq!(skip.code, code, "{name}: {skip}");
                }
                (Err(skip), None) => panic!("{name}: skipped: {skip}"),
            }
        }
    }
    assert!(extracted >= 20, "only {extracted} files extracted");
    assert!(skipped >= 5, "only {skipped} files skipped");
}

#[test]
fn spreadsheet_variants_are_unsupported_not_garbage() {
    let path = corpus_dir().join("edge/calamine-too_small.xls");
    if path.is_file() {
        let skip = extract_path(&path).unwrap_err();
        assert_eq!(skip.code, SkipReason::UNSUPPORTED_VARIANT, "{skip}");
    }
    let dir = tempfile::tempdir().unwrap();
    for ext in ["xls", "xlsm", "xlsb", "ods"] {
        let path = dir.path().join(format!("book.{ext}"));
        std::fs::write(&path, b"PK\x03\x04 not really").unwrap();
        let skip = extract_path(&path).unwrap_err();
        assert_eq!(skip.code, SkipReason::UNSUPPORTED_VARIANT, "{ext}: {skip}");
    }
}

// ---------------------------------------------------------------------------------------------
// DOCX

/// MANIFEST facts: (file, a count, (number, title) pairs).
type Facts = &'static [(&'static str, usize, &'static [(usize, &'static str)])];

/// MANIFEST: (file, tables, headings as (level, title)).
const DOCX_FACTS: Facts = &[
    (
        "linkly-headers.docx",
        0,
        &[
            (1, "A Test of Headers"),
            (2, "Second Level"),
            (3, "Third level"),
            (4, "Fourth level"),
            (5, "Fifth level"),
            (6, "Sixth level"),
        ],
    ),
    ("poi-HeaderFooterUnicode.docx", 0, &[(1, "Molière")]),
    ("python-docx-test.docx", 0, &[(1, "python-docx was here!")]),
    ("textract-raw_text.docx", 0, &[]),
    (
        "tika-testWORD_2006ml.docx",
        3,
        &[(1, "Heading1"), (1, "Heading2")],
    ),
    ("tika-testWORD_various.docx", 1, &[]),
];

#[test]
fn docx_headings_tables_and_lines() {
    let all = extract_folder("docx");
    for &(name, tables, headings) in DOCX_FACTS {
        let Some(e) = ok(&all, name) else {
            continue;
        };
        let mut flat = Vec::new();
        flatten(&e.outline, 1, &mut flat);
        let expected: Vec<(usize, String)> =
            headings.iter().map(|&(d, t)| (d, t.to_string())).collect();
        if name == "tika-testWORD_2006ml.docx" {
            // Also "Bibliography" (a style based on Heading 1, outline level 1 in Word).
            let titles: Vec<&str> = flat.iter().map(|(_, t)| t.as_str()).collect();
            assert_eq!(titles, ["Heading1", "Heading2", "Bibliography"], "{name}");
        } else {
            assert_eq!(flat, expected, "{name}");
        }
        let text_lines = lines(e);
        fn each(nodes: &[OutlineNode], f: &mut dyn FnMut(&OutlineNode)) {
            for n in nodes {
                f(n);
                each(&n.children, f);
            }
        }
        each(&e.outline, &mut |n| {
            let line = text_lines[n.start_line as usize - 1];
            assert_eq!(norm(line), n.title, "{name}: heading line {}", n.start_line);
        });
        let separators = text_lines.iter().filter(|l| l.starts_with("| ---")).count();
        assert!(
            separators >= tables,
            "{name}: {separators} tables, MANIFEST says {tables}"
        );
    }
}

#[test]
fn docx_notes_boxes_headers_and_title() {
    let all = extract_folder("docx");
    if let Some(e) = ok(&all, "poi-HeaderFooterUnicode.docx") {
        assert!(
            e.text
                .contains("Header: This is a simple header, with a € euro symbol in it.")
        );
        assert!(
            e.text
                .contains("Footer: The footer, with Molière, has Unicode in it.")
        );
        // Headers and footers come last.
        assert!(
            e.text
                .ends_with("Footer: The footer, with Molière, has Unicode in it.")
        );
    }
    if let Some(e) = ok(&all, "tika-testWORD_2006ml.docx") {
        assert_eq!(e.title.as_deref(), Some("My Document Title"));
        // Text boxes, once each (the VML fallback copy is skipped).
        assert_eq!(e.text.matches("This is a text box").count(), 1);
        assert!(e.text.contains("This is text within a shape"));
        assert!(e.text.contains("| R1c1 | R1c2 | R1c3 |"));
        assert!(e.text.contains("- this is a basic list 1."));
        assert!(e.text.contains("And this is the footnote"));
        assert!(e.text.contains("This is an endnote"));
    }
    if let Some(e) = ok(&all, "tika-testWORD_various.docx") {
        assert!(e.text.contains("ゾルゲと尾崎、淡々と最期"));
        assert!(e.text.contains("- Bullet 1"));
        assert!(
            e.text
                .contains("| Row 1 Col 1 | Row 1 Col 2 | Row 1 Col 3 |")
        );
        assert!(e.text.contains("Header: This is the header text."));
    }
}

// ---------------------------------------------------------------------------------------------
// PPTX

/// MANIFEST: (file, slides, titled slides as (number, title)).
const PPTX_FACTS: Facts = &[
    ("python-pptx-tbl-cell.pptx", 3, &[]),
    (
        "textract-raw_text.pptx",
        3,
        &[
            (1, "I love PowerPoint. A lot."),
            (2, "hipsum"),
            (3, "Hipsum II"),
        ],
    ),
    ("tika-testPPT_groups.pptx", 2, &[(2, "MyTitle")]),
    ("tika-testPPT_masterText.pptx", 1, &[]),
    ("tika-testPPT_various.pptx", 1, &[]),
];

#[test]
fn pptx_slides_titles_and_ranges() {
    let all = extract_folder("pptx");
    for &(name, slides, titled) in PPTX_FACTS {
        let Some(e) = ok(&all, name) else {
            continue;
        };
        assert_eq!(e.outline.len(), slides, "{name}: slide count");
        let text_lines = lines(e);
        for (i, node) in e.outline.iter().enumerate() {
            let number = i + 1;
            assert!(
                node.title == format!("Slide {number}")
                    || node.title.starts_with(&format!("Slide {number}: ")),
                "{name}: {:?}",
                node.title
            );
            // The slide's range starts at its `## Slide N: …` line and ends before the next.
            assert_eq!(
                text_lines[node.start_line as usize - 1],
                format!("## {}", node.title),
                "{name}"
            );
            if let Some(next) = e.outline.get(i + 1) {
                assert!(
                    node.end_line < next.start_line,
                    "{name}: overlapping slides"
                );
            }
        }
        for &(number, title) in titled {
            assert_eq!(
                e.outline[number - 1].title,
                format!("Slide {number}: {}", norm(title)),
                "{name}"
            );
        }
    }
}

#[test]
fn pptx_text_tables_smartart_and_notes() {
    let all = extract_folder("pptx");
    if let Some(e) = ok(&all, "tika-testPPT_groups.pptx") {
        for t in [
            "Text box1",
            "Text box5",
            "smart1",
            "WordArt2",
            "Ungrouped text box",
        ] {
            assert!(e.text.contains(t), "groups: {t}");
        }
    }
    if let Some(e) = ok(&all, "python-pptx-tbl-cell.pptx") {
        assert!(e.text.contains("| d | e | f |"));
    }
}

// ---------------------------------------------------------------------------------------------
// XLSX

/// MANIFEST: (file, sheet names, whole list?).
const XLSX_FACTS: &[(&str, &[&str], bool)] = &[
    ("calamine-empty_sheet.xlsx", &["Sheet1"], true),
    ("csvkit-sheets.xlsx", &["not this one", "data", "ʤ"], true),
    ("poi-unicodeSheetName.xlsx", &["Sheet・1"], true),
    ("textract-raw_text.xlsx", &["Sheet1", "Sheet2"], true),
    (
        "tika-testEXCEL.strict.xlsx",
        &["First Sheet", "Sheet Number 2", "Sheet3"],
        true,
    ),
];

/// `name (3 rows × 2 columns)` → (`name`, 3, 2).
fn parse_sheet_title(title: &str) -> (String, usize, usize) {
    let (name, counts) = title.rsplit_once(" (").expect(title);
    let counts = counts.trim_end_matches(')');
    let (rows, cols) = counts.split_once(" × ").expect(title);
    let num = |s: &str| s.split(' ').next().unwrap().parse::<usize>().expect(title);
    (name.to_string(), num(rows), num(cols))
}

#[test]
fn xlsx_sheets_tables_and_previews() {
    let all = extract_folder("xlsx");
    for &(name, sheets, whole) in XLSX_FACTS {
        let Some(e) = ok(&all, name) else {
            continue;
        };
        let text_lines = lines(e);
        let parsed: Vec<(String, usize, usize)> = e
            .outline
            .iter()
            .map(|n| parse_sheet_title(&n.title))
            .collect();
        let names: Vec<&str> = parsed.iter().map(|(n, _, _)| n.as_str()).collect();
        if whole {
            assert_eq!(names, sheets, "{name}");
        } else {
            assert_eq!(&names[..sheets.len()], sheets, "{name}");
        }
        for (node, (sheet, rows, cols)) in e.outline.iter().zip(&parsed) {
            assert_eq!(
                text_lines[node.start_line as usize - 1],
                format!("## Sheet: {sheet}"),
                "{name}"
            );
            let range = &text_lines[node.start_line as usize..node.end_line as usize];
            let table_rows = range.iter().filter(|l| l.starts_with('|')).count();
            if *rows == 0 {
                assert_eq!(table_rows, 0, "{name}/{sheet}");
                assert!(node.detail.iter().all(|d| !d.starts_with("Columns:")));
            } else {
                // Header, separator, data rows.
                assert_eq!(table_rows, rows + 1, "{name}/{sheet}");
                let header = range.iter().find(|l| l.starts_with('|')).unwrap();
                assert_eq!(
                    header.matches(" |").count(),
                    *cols,
                    "{name}/{sheet}: {header}"
                );
                assert!(node.detail.iter().any(|d| d.starts_with("Columns: ")));
                let previews = node.detail.iter().filter(|d| d.starts_with("Row ")).count();
                assert_eq!(previews, (rows - 1).min(3), "{name}/{sheet}");
            }
        }
    }
    if let Some(e) = ok(&all, "csvkit-sheets.xlsx") {
        // Cells are searchable text: dates as dates, numbers without float noise.
        assert!(
            e.text
                .contains("| Chicago Reader | 1971-01-01 | 40 | TRUE | 1 |"),
            "{}",
            e.text
        );
        assert!(e.text.contains("41800000.01"));
    }
    if let Some(e) = ok(&all, "calamine-empty_sheet.xlsx") {
        assert_eq!(e.outline[0].title, "Sheet1 (0 rows × 0 columns)");
    }
}

// ---------------------------------------------------------------------------------------------
// EPUB

/// MANIFEST: (file, title, TOC depth, top-level entries, whole list?).
const EPUB_FACTS: &[(&str, &str, usize, &[&str], bool)] = &[
    (
        "idpf-childrens-literature.epub",
        "Children's Literature",
        4,
        &["SECTION IV FAIRY STORIES—MODERN FANTASTIC TALES"],
        true,
    ),
    (
        "idpf-kusamakura-japanese-vertical-writing.epub",
        "草枕",
        1,
        &["一", "二", "三", "四", "五", "六", "七", "八", "九", "十"],
        false,
    ),
    (
        "textract-raw_text.epub",
        "Testing Epub",
        2,
        &[
            "Epub testing",
            "Introduction",
            "We happy?",
            "We happy?",
            "We happy?",
            "We happy?",
        ],
        true,
    ),
    (
        "tika-testEPUB.epub",
        "An ePub  for Tika",
        1,
        &["Cover Page", "Table of Contents", "Chapter 1", "Chapter 2"],
        true,
    ),
];

#[test]
fn epub_titles_toc_and_line_ranges() {
    let all = extract_folder("epub");
    for &(name, title, toc_depth, top, whole) in EPUB_FACTS {
        let Some(e) = ok(&all, name) else {
            continue;
        };
        assert_eq!(e.title.as_deref().map(norm), Some(norm(title)), "{name}");
        assert_eq!(depth(&e.outline), toc_depth, "{name}: TOC depth");
        let tops: Vec<&str> = e.outline.iter().map(|n| n.title.as_str()).collect();
        if whole {
            assert_eq!(tops, top, "{name}");
        } else {
            assert_eq!(&tops[..top.len()], top, "{name}");
        }
        // Each entry starts where its chapter or fragment does: the words of the entry's title
        // show on its first lines (fragments may point at a page-number marker a few lines above
        // the heading). Checked on entries whose title words are all in the text.
        let text_lines = lines(e);
        let mut flat = Vec::new();
        fn collect<'a>(nodes: &'a [OutlineNode], out: &mut Vec<&'a OutlineNode>) {
            for n in nodes {
                out.push(n);
                collect(&n.children, out);
            }
        }
        collect(&e.outline, &mut flat);
        let all_words: HashSet<String> = words(&e.text).into_iter().collect();
        let (mut checked, mut near) = (0, 0);
        for n in flat {
            let title_words = words(&n.title);
            if title_words.is_empty() || !title_words.iter().all(|w| all_words.contains(w)) {
                continue;
            }
            checked += 1;
            let from = n.start_line as usize - 1;
            let to = (n.start_line as usize + 12).min(n.end_line as usize);
            let window: HashSet<String> = words(&text_lines[from..to.max(from + 1)].join(" "))
                .into_iter()
                .collect();
            if title_words.iter().all(|w| window.contains(w)) {
                near += 1;
            }
        }
        assert!(
            near * 10 >= checked * 7,
            "{name}: only {near} of {checked} TOC entries start at their title"
        );
    }
    // Fragments land on their own section, not just the chapter's first line.
    let starts = |name: &str, path: &[&str]| -> String {
        let e = ok(&all, name).unwrap();
        let mut nodes = &e.outline;
        let mut node = None;
        for title in path {
            let n = nodes.iter().find(|n| n.title == *title).expect(title);
            nodes = &n.children;
            node = Some(n);
        }
        lines(e)[node.unwrap().start_line as usize - 1].to_string()
    };
    if all.contains_key("textract-raw_text.epub") {
        let line = starts("textract-raw_text.epub", &["Introduction"]);
        assert_eq!(line, "Introduction");
    }
}

// ---------------------------------------------------------------------------------------------
// textract reference texts

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’')
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase().replace('’', "'"))
        .collect()
}

/// The share of `expected`'s words found in `got` in the same order (greedy subsequence match).
fn in_order_share(expected: &[String], got: &[String]) -> f64 {
    let mut j = 0;
    let mut found = 0;
    for w in expected {
        if let Some(pos) = got[j..].iter().position(|g| g == w) {
            found += 1;
            j += pos + 1;
        }
    }
    found as f64 / expected.len().max(1) as f64
}

#[test]
fn textract_reference_texts_match() {
    let corpus = corpus_dir();
    let expected_dir = corpus.parent().unwrap().join("expected");
    for (format, file) in [
        ("docx", "docx/textract-raw_text.docx"),
        ("pptx", "pptx/textract-raw_text.pptx"),
        ("epub", "epub/textract-raw_text.epub"),
    ] {
        let path = corpus.join(file);
        let reference = expected_dir.join(format!("textract-{format}_raw_text.txt"));
        if !path.is_file() || !reference.is_file() {
            continue;
        }
        let got = extract_path(&path).unwrap_or_else(|s| panic!("{file}: {s}"));
        let expected = words(&std::fs::read_to_string(&reference).unwrap());
        let got_words = words(&got.text);
        let share = in_order_share(&expected, &got_words);
        assert!(
            share >= 0.97,
            "{file}: only {share:.3} of the reference words, in order"
        );
        // And line by line, whitespace normalised: every reference line's words appear in order.
        let got_norm = norm(&got.text);
        let mut missing = Vec::new();
        for line in std::fs::read_to_string(&reference).unwrap().lines() {
            let line = norm(line);
            if !line.is_empty() && !got_norm.contains(&line) {
                missing.push(line);
            }
        }
        // textract splits runs of a paragraph onto lines of their own ("I love " / "PowerPoint"),
        // which whitespace normalisation joins back; all its lines must be found.
        assert!(
            missing.is_empty(),
            "{file}: reference lines not found: {missing:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Robustness: damaged copies of real files never panic the extractors.

#[test]
fn damaged_files_are_skipped_not_panicking() {
    let corpus = corpus_dir();
    let files = [
        "docx/tika-testWORD_2006ml.docx",
        "docx/tika-testWORD_various.docx",
        "pptx/pandoc-reader-basic.pptx",
        "pptx/tika-testPPT_groups.pptx",
        "xlsx/csvkit-sheets.xlsx",
        "xlsx/tika-testEXCEL.strict.xlsx",
        "epub/pandoc-features.epub",
        "epub/textract-raw_text.epub",
    ];
    let mut tried = 0;
    for file in files {
        let path = corpus.join(file);
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let mut variants: Vec<Vec<u8>> = Vec::new();
        // Truncated at several points.
        for cut in [
            1,
            8,
            100,
            bytes.len() / 3,
            bytes.len() / 2,
            bytes.len() - 22,
            bytes.len() - 1,
        ] {
            variants.push(bytes[..cut.min(bytes.len())].to_vec());
        }
        // Bytes flipped across the file (a cheap deterministic scramble).
        let mut seed = 0x2545_f491_u64;
        for _ in 0..12 {
            let mut damaged = bytes.clone();
            for _ in 0..16 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let at = (seed as usize) % damaged.len();
                damaged[at] ^= 0xA5;
            }
            variants.push(damaged);
        }
        for bytes in variants {
            tried += 1;
            if let Err(skip) = linkly_extract::extract_loaded(&path, &bytes) {
                assert_ne!(skip.code, SkipReason::EXTRACTOR_FAILED, "{file}: {skip}");
            }
        }
    }
    assert!(tried > 0);
}
