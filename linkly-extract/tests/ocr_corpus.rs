//! OCR on the test corpus: the images of `testdata/corpus/images` and the scanned PDFs (the corpus's
//! `pypdf-imagemagick-images-only.pdf`, and a two-page scan built here from two corpus JPEGs).
//!
//! Needs Tesseract with `eng` and `jpn` (`chi_sim`, `chi_tra`, `fra`, `spa` for the defaults)
//! and `pdftoppm`: `.ci/run` installs them.

use linkly_core::{DocType, SkipReason};
use linkly_extract::ocr::{self, OcrOptions};
use linkly_extract::{ExtractOptions, Extracted, extract_loaded_with, extract_path};

use crate::common;
use common::corpus_dir;

fn image(name: &str) -> Extracted {
    let path = corpus_dir().join("images").join(name);
    let e = extract_path(&path).unwrap_or_else(|s| panic!("{name}: {s}"));
    assert_eq!(e.doc_type, DocType::Image, "{name}");
    assert!(e.outline.is_empty() && e.title.is_none(), "{name}");
    e
}

/// Whitespace runs become one space.
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn expected(name: &str) -> String {
    let path = corpus_dir().join("../expected").join(name);
    fs_err::read_to_string(&path).unwrap()
}

#[test]
fn the_engine_and_the_default_languages_are_installed() {
    let s = ocr::status();
    assert!(s.available, "{s:?}");
    assert!(
        s.version.as_deref().is_some_and(|v| v.starts_with('5')),
        "{s:?}"
    );
    for lang in linkly_core::OcrConfig::DEFAULT_LANGUAGES {
        assert!(
            s.languages.iter().any(|l| l == lang),
            "{lang} missing: {s:?}"
        );
    }
    assert!(s.pdf_rasterizer, "{s:?}");
    assert_eq!(ocr::ready(&OcrOptions::default()).unwrap().len(), 6);
}

#[test]
fn the_textract_images_match_their_expected_text() {
    let jpg = image("textract-raw_text.jpg");
    let want = expected("textract-jpg_raw_text.txt");
    let rate = ocr::character_error_rate(&jpg.text, &want);
    assert!(rate <= 0.02, "CER {rate:.3}: {:?}", jpg.text);
    assert!(
        jpg.text.contains("EMERGENCY ALERT SYSTEM"),
        "{:?}",
        jpg.text
    );
    // One line per line of the picture.
    assert!(
        jpg.text.lines().any(|l| l.trim() == "EAS TEST"),
        "{:?}",
        jpg.text
    );

    let png = image("textract-raw_text.png");
    let rate = ocr::character_error_rate(&png.text, &expected("textract-png_raw_text.txt"));
    assert!(rate <= 0.10, "CER {rate:.3}: {:?}", png.text);
    assert!(png.text.contains("abcdefghijkl"), "{:?}", png.text);
}

#[test]
fn the_other_images_give_their_words() {
    for (name, words) in [
        (
            "ocrs-polar-bears.png",
            &["polar bears", "Fossils", "Mitochondrial DNA", "Alaska"][..],
        ),
        (
            "ocrs-rust-book.jpg",
            &["RUST", "PROGRAMMING", "LANGUAGE", "KLABNIK"][..],
        ),
        ("tika-testOCR_spacing.png", &["The quick brown fox"][..]),
    ] {
        let e = image(name);
        let flat = squash(&e.text);
        for w in words {
            assert!(flat.contains(w), "{name}: {w:?} not in {:?}", e.text);
        }
    }
    // A photo without text: a reason, never empty text.
    let path = corpus_dir().join("images/tika-testJPEG_EXIF.jpg");
    match extract_path(&path) {
        Err(skip) => assert_eq!(skip.code, SkipReason::OCR_FOUND_NOTHING, "{skip}"),
        Ok(photo) => assert!(
            photo.text.chars().filter(|c| c.is_alphanumeric()).count() < 10,
            "{:?}",
            photo.text
        ),
    }
}

#[test]
fn japanese_text_comes_out_without_spaces_between_characters() {
    let e = image("poi-bug55902-mixedChars-ja.png");
    for w in ["Single byte", "複数の文字", "カタカナ"] {
        assert!(e.text.contains(w), "{w:?} not in {:?}", e.text);
    }
    // English alone cannot read it: the second pass with the CJK languages did.
    let eng = OcrOptions {
        languages: vec!["eng".into()],
        ..OcrOptions::default()
    };
    let bytes = fs_err::read(corpus_dir().join("images/poi-bug55902-mixedChars-ja.png")).unwrap();
    let latin = ocr::recognize(&bytes, &eng).unwrap();
    assert!(!latin.contains("複数"), "{latin:?}");
}

fn two_page_scan() -> Vec<u8> {
    let eas = fs_err::read(corpus_dir().join("images/textract-raw_text.jpg")).unwrap();
    let book = fs_err::read(corpus_dir().join("images/ocrs-rust-book.jpg")).unwrap();
    linkly_extract::hand_made_pdf::scanned_pdf(&[(&eas, 2000, 1850), (&book, 1200, 1600)])
}

#[test]
fn scanned_pdf_pages_are_read_page_by_page() {
    let pdf = two_page_scan();
    let e = extract_loaded_with(
        std::path::Path::new("scan.pdf"),
        &pdf,
        &ExtractOptions::default(),
    )
    .unwrap_or_else(|s| panic!("{s}"));
    assert_eq!(e.doc_type, DocType::Pdf);
    let lines: Vec<&str> = e.text.lines().collect();
    let p1 = lines.iter().position(|l| *l == "--- page 1 ---").unwrap();
    let p2 = lines.iter().position(|l| *l == "--- page 2 ---").unwrap();
    let page1 = lines[p1..p2].join(" ");
    let page2 = lines[p2..].join(" ");
    assert!(page1.contains("EMERGENCY ALERT SYSTEM"), "{page1:?}");
    assert!(
        page2.contains("PROGRAMMING") && !page2.contains("EMERGENCY"),
        "{page2:?}"
    );
}

#[test]
fn the_corpus_scan_goes_through_ocr() {
    // Its six pages are 16×16-pixel pictures: OCR runs on each and finds nothing to read.
    let path = corpus_dir().join("pdf/pypdf-imagemagick-images-only.pdf");
    let skip = extract_path(&path).unwrap_err();
    assert_eq!(skip.code, SkipReason::OCR_FOUND_NOTHING, "{skip}");
    assert!(skip.detail.contains("OCR found no text"), "{skip}");
}

#[test]
fn without_ocr_images_and_scans_wait_as_ocr_unavailable() {
    let off = ExtractOptions {
        ocr: OcrOptions {
            enabled: false,
            ..OcrOptions::default()
        },
        ..ExtractOptions::default()
    };
    let png = corpus_dir().join("images/textract-raw_text.png");
    let bytes = fs_err::read(&png).unwrap();
    let skip = extract_loaded_with(&png, &bytes, &off).unwrap_err();
    assert_eq!(skip.code, SkipReason::OCR_UNAVAILABLE, "{skip}");
    let skip =
        extract_loaded_with(std::path::Path::new("scan.pdf"), &two_page_scan(), &off).unwrap_err();
    assert_eq!(skip.code, SkipReason::OCR_UNAVAILABLE, "{skip}");
    assert!(skip.detail.contains("no text layer"), "{skip}");
    // Languages that are not installed are left out; none at all is unavailable too.
    let klingon = OcrOptions {
        languages: vec!["tlh".into()],
        ..OcrOptions::default()
    };
    assert_eq!(
        ocr::recognize(&bytes, &klingon).unwrap_err().code,
        SkipReason::OCR_UNAVAILABLE
    );
}
