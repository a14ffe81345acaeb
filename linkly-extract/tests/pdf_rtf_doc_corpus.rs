//! Runs extraction on every file of the test corpus folders `pdf`, `rtf`, `doc` and `edge`
//! (`testdata/corpus`) and checks the facts `testdata/MANIFEST.md` states; tests the
//! worker-process isolation.
//!
//! PDFs go through [`extract_isolated`] with this test binary as the worker (the
//! `worker_entry` test below turns into [`run_worker`] when `LINKLY_EXTRACT_TEST_WORKER` is
//! set), so a PDF that aborts or hangs costs one file and never the test run.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use linkly_core::{OutlineNode, SkipReason};
use linkly_extract::{Extracted, Sandbox, extract_isolated, extract_path, run_worker};

use crate::common;
use common::{Results, check_ranges, corpus_dir, extract_folders, ok};

const FOLDERS: [&str; 4] = ["pdf", "rtf", "doc", "edge"];
const WORKER_ENV: &str = "LINKLY_EXTRACT_TEST_WORKER";

/// In a worker child: serve one request and exit. In the normal test run: nothing.
#[test]
fn worker_entry() {
    if std::env::var_os(WORKER_ENV).is_some() {
        std::process::exit(run_worker());
    }
}

/// `worker_entry`'s name in this test binary (`pdf_rtf_doc_corpus::worker_entry`).
fn worker_test_name() -> String {
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    format!("{module}::worker_entry")
}

/// This test binary as an extraction worker.
fn worker_sandbox() -> Sandbox {
    let exe = std::env::current_exe().expect("current_exe");
    let mut sandbox = Sandbox::with_worker(
        "/usr/bin/env",
        vec![
            format!("{WORKER_ENV}=1"),
            exe.display().to_string(),
            worker_test_name(),
            "--exact".into(),
            "--nocapture".into(),
            "--test-threads=1".into(),
            "-q".into(),
        ],
    );
    sandbox.timeout = Duration::from_secs(300);
    sandbox
}

/// Every file of the four folders, extracted once (PDFs in a worker process).
fn all() -> &'static Results {
    static ALL: OnceLock<Results> = OnceLock::new();
    ALL.get_or_init(|| {
        let sandbox = worker_sandbox();
        extract_folders(&FOLDERS, |folder, path| {
            if folder == "pdf" {
                let bytes = std::fs::read(path).unwrap();
                extract_isolated(&sandbox, path, &bytes)
            } else {
                extract_path(path)
            }
        })
    })
}

fn get(name: &str) -> Option<&'static Extracted> {
    ok(all(), name)
}

fn page_markers(e: &Extracted) -> Vec<u32> {
    e.text
        .split('\n')
        .filter_map(|l| {
            l.strip_prefix("--- page ")?
                .strip_suffix(" ---")?
                .parse()
                .ok()
        })
        .collect()
}

/// PDF outline nodes start at a page marker line.
fn check_pdf_nodes(name: &str, e: &Extracted, nodes: &[OutlineNode]) {
    let lines: Vec<&str> = e.text.split('\n').collect();
    for n in nodes {
        let line = lines[n.start_line as usize - 1];
        assert!(
            line.starts_with("--- page "),
            "{name}: {:?} starts at {line:?}",
            n.title
        );
        check_pdf_nodes(name, e, &n.children);
    }
}

#[test]
fn every_file_yields_text_or_the_right_skip_reason() {
    let all = all();
    assert!(all.len() >= 20, "only {} corpus files found", all.len());
    let expected_skips: BTreeMap<&str, &str> = [
        ("tika-testUnicodePassword.pdf", SkipReason::ENCRYPTED),
        (
            "pypdf-imagemagick-images-only.pdf",
            SkipReason::OCR_FOUND_NOTHING,
        ),
        ("pdfplumber-empty-zero-bytes.pdf", SkipReason::EMPTY),
        ("scautable-empty_file-zero-bytes.csv", SkipReason::EMPTY),
        (
            "tika-testWordPerfect_42.doc",
            SkipReason::UNSUPPORTED_VARIANT,
        ),
    ]
    .into_iter()
    .collect();
    for (name, (path, result)) in all {
        if let Some(code) = expected_skips.get(name.as_str()) {
            let skip = result.as_ref().expect_err(name);
            assert_eq!(skip.code, *code, "{name}: {skip}");
            continue;
        }
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !["pdf", "rtf", "doc"].contains(&ext) {
            // Other formats in edge/ belong to other extractors; they only must not fail.
            if let Err(skip) = result {
                assert_ne!(skip.code, SkipReason::EXTRACTOR_FAILED, "{name}: {skip}");
            }
            continue;
        }
        let e = result
            .as_ref()
            .unwrap_or_else(|skip| panic!("{name} was skipped: {skip}"));
        assert!(
            e.text.chars().filter(|c| c.is_alphanumeric()).count() >= 5,
            "{name}: almost no text: {:?}",
            e.text
        );
        assert!(!e.text.contains('\r'), "{name}");
        check_ranges(name, &e.outline, 1, e.total_lines());
        if ext == "pdf" {
            let pages = page_markers(e);
            assert!(!pages.is_empty(), "{name}: no page markers");
            assert_eq!(
                pages,
                (1..=pages.len() as u32).collect::<Vec<_>>(),
                "{name}"
            );
            check_pdf_nodes(name, e, &e.outline);
        }
    }
}

#[test]
fn pdf_page_counts_and_texts() {
    for (name, pages) in [
        ("pypdf-latex-multicolumn.pdf", 3),
        ("tika-testPDF_bookmarks.pdf", 2),
        ("pypdf-minimal-document.pdf", 1),
        ("pdfjs-freeculture-p185-186.pdf", 2),
    ] {
        let Some(e) = get(name) else { continue };
        assert_eq!(page_markers(e).len(), pages, "{name}");
    }
    for (name, sample) in [
        (
            "pypdf-google-doc-document.pdf",
            "Beautiful is better than ugly",
        ),
        ("pypdf-minimal-document.pdf", "Lorem ipsum"),
    ] {
        let Some(e) = get(name) else { continue };
        assert!(e.text.contains(sample), "{name}: no {sample:?}");
    }
    if let Some(e) = get("tika-testPDF_bookmarks.pdf") {
        assert_eq!(
            e.text,
            "--- page 1 ---\nThis is a page about France\n--- page 2 ---\nThis is a page about Denmark"
        );
    }
}

/// The 1-based numbers of the lines of `e` that match `pattern` as a whole word (what `grep`
/// with `\bword\b` finds).
fn grep_word(e: &Extracted, word: &str) -> Vec<usize> {
    let is_word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    e.text
        .split('\n')
        .enumerate()
        .filter(|(_, line)| {
            line.match_indices(word).any(|(at, _)| {
                !is_word(line[..at].chars().next_back())
                    && !is_word(line[at + word.len()..].chars().next())
            })
        })
        .map(|(i, _)| i + 1)
        .collect()
}

#[test]
fn pdf_ligatures_and_line_end_hyphens_become_greppable() {
    let ligature = |c: char| ('\u{FB00}'..='\u{FB06}').contains(&c);
    // Free Culture (pages 185-186): `quanti\u{FB01}ed` in the font, `In re-` / `sponse` and
    // `grant-` / `ing` hyphenated at line ends.
    if let Some(e) = get("pdfjs-freeculture-p185-186.pdf") {
        assert!(!e.text.contains(ligature), "{}", e.text);
        let lines: Vec<&str> = e.text.split('\n').collect();
        // The line numbers are those of the page as laid out: marker, then the page's lines.
        assert_eq!(lines[0], "--- page 1 ---");
        assert_eq!(grep_word(e, "quantified"), [9]);
        assert!(
            lines[8].starts_with("to a real, if not yet quantified, threat"),
            "{:?}",
            lines[8]
        );
        assert_eq!(grep_word(e, "response"), [8]);
        assert!(lines[7].ends_with("In response"), "{:?}", lines[7]);
        assert_eq!(grep_word(e, "granting"), [2]);
        assert!(
            lines[2].starts_with("archives and libraries"),
            "{:?}",
            lines[2]
        );
        assert!(grep_word(e, "sponse").is_empty());
        // A real hyphen inside a line stays.
        assert_eq!(grep_word(e, "twentieth-century"), [10]);
    }
    // LaTeX (Computer Modern): `\u{FB01}lled`, `O\u{FB03}cial`, 30 hyphenated line ends.
    if let Some(e) = get("pypdf-latex-multicolumn.pdf") {
        assert!(!e.text.contains(ligature));
        assert!(!grep_word(e, "filled").is_empty());
        assert!(!grep_word(e, "Official").is_empty());
        let lines: Vec<&str> = e.text.split('\n').collect();
        let split = lines.windows(2).filter(|w| {
            let end = w[0].trim_end();
            end.ends_with('-')
                && end[..end.len() - 1]
                    .chars()
                    .next_back()
                    .is_some_and(char::is_lowercase)
                && w[1]
                    .trim_start()
                    .chars()
                    .next()
                    .is_some_and(char::is_lowercase)
        });
        assert_eq!(split.count(), 0);
        for word in ["adipiscing", "consectetuer", "tristique", "sollicitudin"] {
            assert!(!grep_word(e, word).is_empty(), "{word}");
        }
    }
}

#[test]
fn pdf_bookmarks() {
    if let Some(e) = get("tika-testPDF_bookmarks.pdf") {
        assert_eq!(e.outline.len(), 1);
        let countries = &e.outline[0];
        assert_eq!(countries.title, "Countries");
        let children: Vec<&str> = countries
            .children
            .iter()
            .map(|n| n.title.as_str())
            .collect();
        assert_eq!(children.len(), 2, "{children:?}");
        assert!(children[0].starts_with("France"), "{children:?}");
        assert!(children[1].starts_with("Denmark"), "{children:?}");
        // Denmark is on page 2: its node starts at the page 2 marker.
        assert_eq!(countries.children[1].start_line, 3);
        assert!(!children.iter().any(|t| t.contains('\r')));
    }
}

#[test]
fn rtf_unicode_code_pages_and_surrogates() {
    if let Some(e) = get("tika-testRTF-ms932.rtf") {
        assert!(e.text.contains("こんにちは"), "{}", e.text);
        assert!(e.text.contains("テスト"), "{}", e.text);
        assert_eq!(e.title.as_deref(), Some("タイトル"));
    }
    if let Some(e) = get("tika-testRTFUnicodeGothic.rtf") {
        assert_eq!(
            e.text,
            "\u{10332}\u{1033F}\u{10344}\u{10339}\u{10343}\u{1033A}"
        );
    }
    if let Some(e) = get("tika-testRTFWord2010CzechCharacters.rtf") {
        assert!(e.text.contains("Článek týdne"), "{}", e.text);
        assert!(e.text.contains("Svitky od Mrtvého moře"));
        assert!(!e.text.contains("heading 1"), "style sheet leaked");
    }
    if let Some(e) = get("tika-testRTFInvalidUnicode.rtf") {
        assert!(e.text.contains("Unpaired hi"));
        assert!(e.text.contains("Mismatched pair"));
    }
}

#[test]
fn doc_texts_in_several_languages() {
    for (name, sample) in [
        ("poi-HeaderFooterUnicode.doc", "Molière"),
        ("poi-HeaderFooterUnicode.doc", "EUR - €"),
        (
            "tika-testWORD.doc",
            "This is a sample Microsoft Word Document.",
        ),
        (
            "tika-testWORD6.doc",
            "The quick brown fox jumps over the lazy dog",
        ),
        ("tika-testWORD_various.doc", "ゾルゲと尾崎、淡々と最期"),
        (
            "tika-testWORD_various.doc",
            "Row 1 Col 1 | Row 1 Col 2 | Row 1 Col 3",
        ),
        ("word-extractor-test11.doc", "这是一个用来测试"),
    ] {
        let Some(e) = get(name) else { continue };
        assert!(e.text.contains(sample), "{name}: no {sample:?}");
        // Field codes are dropped.
        assert!(!e.text.contains("HYPERLINK"), "{name}: field code in text");
    }
    if let Some(e) = get("tika-testWORD.doc") {
        assert_eq!(e.outline[0].title, "Heading Level 1");
    }
}

#[test]
fn doc_matches_textract_expected_text() {
    let Some(e) = get("textract-raw_text.doc") else {
        return;
    };
    let expected_path = corpus_dir().join("../expected/textract-doc_raw_text.txt");
    let expected = std::fs::read_to_string(&expected_path)
        .unwrap_or_else(|err| panic!("{}: {err}", expected_path.display()));
    let norm = |s: &str| -> Vec<String> {
        s.split_whitespace()
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            })
            .filter(|w| !w.is_empty())
            .collect()
    };
    let got: HashSet<String> = norm(&e.text).into_iter().collect();
    let want = norm(&expected);
    let present = want.iter().filter(|w| got.contains(*w)).count();
    assert!(
        present * 100 >= want.len() * 90,
        "{present} of {} expected words",
        want.len()
    );
}

fn a_pdf() -> PathBuf {
    corpus_dir().join("pdf/tika-testPDF_bookmarks.pdf")
}

#[test]
fn isolation_crash_costs_one_file() {
    let path = a_pdf();
    let bytes = std::fs::read(&path).unwrap();
    let mut sandbox = Sandbox::with_worker("/bin/sh", vec!["-c".into(), "kill -9 $$".into()]);
    sandbox.memory_limit = None;
    let err = extract_isolated(&sandbox, &path, &bytes).unwrap_err();
    assert_eq!(err.code, SkipReason::EXTRACTOR_FAILED, "{err}");
    let mut sandbox = Sandbox::with_worker("/bin/sh", vec!["-c".into(), "exit 3".into()]);
    sandbox.memory_limit = Some(1 << 30);
    let err = extract_isolated(&sandbox, &path, &bytes).unwrap_err();
    assert_eq!(err.code, SkipReason::EXTRACTOR_FAILED, "{err}");
    assert!(err.detail.contains("status 3"), "{err}");
    // Garbage on stdout.
    let sandbox = Sandbox::with_worker("/bin/sh", vec!["-c".into(), "echo nonsense".into()]);
    let err = extract_isolated(&sandbox, &path, &bytes).unwrap_err();
    assert_eq!(err.code, SkipReason::EXTRACTOR_FAILED, "{err}");
}

#[test]
fn isolation_timeout_kills_the_worker() {
    let path = a_pdf();
    let bytes = std::fs::read(&path).unwrap();
    let mut sandbox = Sandbox::with_worker("sleep", vec!["30".into()]);
    sandbox.memory_limit = None;
    sandbox.timeout = Duration::from_secs(1);
    let start = std::time::Instant::now();
    let err = extract_isolated(&sandbox, &path, &bytes).unwrap_err();
    assert_eq!(err.code, SkipReason::TIMEOUT, "{err}");
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn isolation_in_process_and_safe_formats() {
    let path = a_pdf();
    let bytes = std::fs::read(&path).unwrap();
    // No worker: in-process, same result as extract_path.
    let direct = extract_path(&path).unwrap();
    let in_process = extract_isolated(&Sandbox::in_process(), &path, &bytes).unwrap();
    assert_eq!(direct, in_process);
    // Through a real worker: the same too.
    let worker = extract_isolated(&worker_sandbox(), &path, &bytes).unwrap();
    assert_eq!(direct, worker);
    // A format that is not risky never goes to the worker (this one would fail).
    let rtf = corpus_dir().join("rtf/tika-testRTFUnicodeGothic.rtf");
    let rtf_bytes = std::fs::read(&rtf).unwrap();
    let broken = Sandbox::with_worker("/bin/false", Vec::new());
    assert!(extract_isolated(&broken, &rtf, &rtf_bytes).is_ok());
    // Checks made before any worker starts.
    assert_eq!(
        extract_isolated(&broken, Path::new("x.pdf"), b"")
            .unwrap_err()
            .code,
        SkipReason::EMPTY
    );
    assert_eq!(
        extract_isolated(&broken, Path::new("x.unknownext"), b"abc")
            .unwrap_err()
            .code,
        SkipReason::UNSUPPORTED
    );
}
