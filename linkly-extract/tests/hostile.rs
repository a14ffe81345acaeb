//! Hostile and odd files: deep nesting, turned and skewed scans, files without an extension or
//! with a wrong one, files without text. Every file must come back, with text or a reason.
//!
//! Reads only what the repository carries (`tests/data/`) and files built here. The scans need
//! Tesseract with `eng` and `osd` (`.ci/run` installs them).

use std::io::Write;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use linkly_core::{DocType, SkipReason};
use linkly_extract::{
    Detected, Extracted, Sandbox, detect, extract_detected, extract_loaded, extract_path,
};

/// Runs `f` on its own thread and fails when it has not returned within `secs` seconds (a
/// watchdog against hangs, not a speed check: a linear parser takes well under a second).
fn returns_within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("no result within {secs} s"))
}

fn data(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// A zip package of `(name, content)` parts.
fn zip(parts: &[(&str, &str)]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, content) in parts {
        w.start_file(*name, options).unwrap();
        w.write_all(content.as_bytes()).unwrap();
    }
    w.finish().unwrap().into_inner()
}

const CONTENT_TYPES: &str = r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#;

/// A DOCX whose body is `body` (WordprocessingML inside `<w:body>`).
fn docx(body: &str) -> Vec<u8> {
    let document = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>"#
    );
    zip(&[
        ("[Content_Types].xml", CONTENT_TYPES),
        ("word/document.xml", &document),
    ])
}

/// A one-page PDF whose text layer says `text`.
fn pdf(text: &str) -> Vec<u8> {
    let content = format!("BT /F1 18 Tf 72 700 Td ({text}) Tj ET");
    linkly_extract::hand_made_pdf::helvetica_pages((612, 792), &[content])
}

fn extracted(path: &str, bytes: Vec<u8>) -> Result<Extracted, SkipReason> {
    let path = path.to_string();
    returns_within(60, move || extract_loaded(Path::new(&path), &bytes))
}

#[test]
fn html_nested_100k_levels_extracts() {
    let n = 100_000;
    for (open, close) in [
        ("<div>", "</div>"),
        ("<b>", "</b>"),
        ("<table><tr><td>", "</td></tr></table>"),
        ("<ul><li>", "</li></ul>"),
        ("<span class='a>b'>", "</span>"),
    ] {
        let page = format!(
            "<html><head><title>Deep</title></head><body><p>Start</p>{}deep text{}<p>End</p></body></html>",
            open.repeat(n),
            close.repeat(n)
        );
        let e = extracted("deep.html", page.into_bytes()).unwrap();
        assert!(e.text.contains("deep text"), "{open}: {:?}", &e.text[..80]);
        assert!(e.text.starts_with("Start"), "{open}");
        assert_eq!(e.title.as_deref(), Some("Deep"));
    }
    // Never closed at all.
    let page = format!("<body>{}unclosed", "<div>".repeat(n));
    let e = extracted("open.htm", page.into_bytes()).unwrap();
    assert_eq!(e.text, "unclosed");
}

#[test]
fn docx_nested_100k_levels_returns() {
    let n = 100_000;
    for (open, close) in [
        ("<w:tbl><w:tr><w:tc>", "</w:tc></w:tr></w:tbl>"),
        ("<w:sdt><w:sdtContent>", "</w:sdtContent></w:sdt>"),
        ("<w:p>", "</w:p>"),
    ] {
        let body = format!(
            "{}<w:p><w:r><w:t>deep text</w:t></w:r></w:p>{}",
            open.repeat(n),
            close.repeat(n)
        );
        let e = extracted("deep.docx", docx(&body)).unwrap();
        assert!(e.text.contains("deep text"), "{open}");
    }
}

#[test]
fn epub_with_a_deep_unclosed_ncx_returns() {
    let ncx = format!(
        r#"<?xml version="1.0"?><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/"><navMap>{}"#,
        r#"<navPoint><navLabel><text>Level</text></navLabel><content src="c1.xhtml"/>"#
            .repeat(100_000)
    );
    let opf = r#"<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="2.0"><metadata/><manifest><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/><item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/></manifest><spine toc="ncx"><itemref idref="c1"/></spine></package>"#;
    let container = r#"<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>"#;
    let chapter = format!(
        "<html><body><h1>Chapter</h1><p>Body text.</p>{}inner{}</body></html>",
        "<div>".repeat(50_000),
        "</div>".repeat(50_000)
    );
    let bytes = zip(&[
        ("mimetype", "application/epub+zip"),
        ("META-INF/container.xml", container),
        ("content.opf", opf),
        ("toc.ncx", &ncx),
        ("c1.xhtml", &chapter),
    ]);
    let e = extracted("deep.epub", bytes).unwrap();
    assert!(e.text.contains("Body text.") && e.text.contains("inner"));
}

#[test]
fn turned_and_skewed_scans_are_read() {
    for name in ["scan-rotated-90.png", "scan-rotated-10.png"] {
        let path = data(name);
        let e = returns_within(300, move || extract_path(&path))
            .unwrap_or_else(|s| panic!("{name}: {s}"));
        assert_eq!(e.doc_type, DocType::Image);
        let text = e.text.to_lowercase();
        let found = ["quarterly", "shipments", "storage", "committee", "schedule"]
            .iter()
            .filter(|w| text.contains(*w))
            .count();
        assert!(found >= 3, "{name}: {:?}", e.text);
    }
}

#[test]
fn an_image_without_text_says_so() {
    // A drawing of a frame and a disc: nothing to read.
    let path = data("no-text.png");
    let skip = returns_within(300, move || extract_path(&path)).unwrap_err();
    assert_eq!(skip.code, SkipReason::OCR_FOUND_NOTHING, "{skip}");
}

#[test]
fn a_docx_without_an_extension_is_read_by_content() {
    let bytes = docx("<w:p><w:r><w:t>Saved without a name ending</w:t></w:r></w:p>");
    let head = &bytes[..bytes.len().min(4096)];
    let found = detect(Path::new("/docs/report"), head).expect("detected");
    assert_eq!(found.doc_type(), DocType::Docx);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report");
    std::fs::write(&path, &bytes).unwrap();
    let e = extract_path(&path).unwrap();
    assert_eq!(e.doc_type, DocType::Docx);
    assert_eq!(e.text, "Saved without a name ending");
    // Plain text without an extension, and binary junk.
    std::fs::write(dir.path().join("NOTES"), "Remember the milk.\n").unwrap();
    assert_eq!(
        extract_path(&dir.path().join("NOTES")).unwrap().text,
        "Remember the milk."
    );
    std::fs::write(dir.path().join("blob"), b"\x00\x01\x02\xFF\xFE binary").unwrap();
    let skip = extract_path(&dir.path().join("blob")).unwrap_err();
    assert_eq!(skip.code, SkipReason::UNSUPPORTED);
}

#[test]
fn a_mislabelled_file_is_read_as_what_it_is() {
    let bytes = pdf("Hello from a mislabelled file");
    assert_eq!(
        extracted("real.pdf", bytes.clone()).unwrap().doc_type,
        DocType::Pdf
    );
    for name in ["fake.docx", "fake.txt", "fake", "fake.xyz"] {
        let e = extracted(name, bytes.clone()).unwrap_or_else(|s| panic!("{name}: {s}"));
        assert_eq!(e.doc_type, DocType::Pdf, "{name}");
        assert!(e.text.contains("Hello from a mislabelled file"), "{name}");
    }
    // A DOCX named .xlsx.
    let bytes = docx("<w:p><w:r><w:t>Word, not Excel</w:t></w:r></w:p>");
    let e = extracted("sheet.xlsx", bytes).unwrap();
    assert_eq!(
        (e.doc_type, e.text.as_str()),
        (DocType::Docx, "Word, not Excel")
    );
}

/// What a walk decides of a file ([`Detected::at_walk`]) is what its extraction uses: the name
/// decides when there is an extension (the content still shows a mislabelled file), the head
/// when there is none, and that decision is not taken again from the bytes extracted.
#[test]
fn the_walk_decides_once_what_a_file_is() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::in_process();
    let put = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let extract = |path: &Path, d: &Detected| {
        d.admit(path, std::fs::metadata(path).unwrap().len())?;
        let bytes = d.read(path).unwrap();
        extract_detected(&sandbox, d, path, &bytes)
    };

    // By name; the content completes it: a PDF named .docx is read as PDF.
    let fake = put("fake.docx", &pdf("Hello from a mislabelled file"));
    let d = Detected::at_walk(&fake).unwrap();
    assert_eq!(d.doc_type(), DocType::Docx);
    assert_eq!(extract(&fake, &d).unwrap().doc_type, DocType::Pdf);

    // By the head: the walk read it as text, and the bytes given to the extraction (a PDF
    // now) do not make it decide again.
    let notes = put("NOTES", b"Remember the milk.\n");
    let d = Detected::at_walk(&notes).unwrap();
    assert_eq!(d.doc_type(), DocType::Txt);
    assert_eq!(
        extract(&notes, &d).unwrap().text,
        "Remember the milk.",
        "the head is read once: the walk's bytes"
    );
    let e = extract_detected(&sandbox, &d, &notes, b"%PDF-1.4 not really\n").unwrap();
    assert_eq!(
        (e.doc_type, e.text.as_str()),
        (DocType::Txt, "%PDF-1.4 not really")
    );

    // Not indexed at all: an unknown extension, binary junk without one.
    assert!(Detected::at_walk(&put("main.rs", b"fn main() {}")).is_none());
    assert!(Detected::at_walk(&put("blob", b"\x00\x01\x02\xFF\xFE binary")).is_none());

    // The cap is told before a byte is read, by the walk's extractor.
    let big = put("big.csv", b"a,b\n");
    let d = Detected::at_walk(&big).unwrap();
    let skip = d.admit(&big, 17 * 1024 * 1024).unwrap_err();
    assert_eq!(skip.code, SkipReason::TOO_LARGE);
    assert!(d.admit(&big, 4).is_ok());
}

#[test]
fn files_without_text_give_a_reason() {
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("blank.txt", b"  \n\n\t \n".to_vec()),
        ("blank.md", b"\n\n   \n".to_vec()),
        (
            "blank.html",
            b"<html><head><title></title></head><body> </body></html>".to_vec(),
        ),
        (
            "script.html",
            b"<script>var x = 1;</script><style>p{}</style>".to_vec(),
        ),
        ("blank.csv", b"\n\n".to_vec()),
        (
            "blank.rtf",
            br"{\rtf1\ansi{\fonttbl{\f0 Arial;}} }".to_vec(),
        ),
        (
            "blank.docx",
            docx("<w:p/><w:p><w:r><w:t> </w:t></w:r></w:p>"),
        ),
        ("blank.doc", b"   \n".to_vec()),
        ("nothing.xhtml", b"<?xml version=\"1.0\"?><html/>".to_vec()),
    ];
    for (name, bytes) in cases {
        let skip = extracted(name, bytes).expect_err(name);
        assert!(
            [SkipReason::EMPTY, SkipReason::CORRUPT].contains(&skip.code),
            "{name}: {skip}"
        );
        assert!(!skip.detail.is_empty(), "{name}");
    }
    // Truly empty files of any type.
    for name in ["a.pdf", "a.docx", "a.png", "a.txt", "noext"] {
        let skip = extracted(name, Vec::new()).expect_err(name);
        assert!(
            [SkipReason::EMPTY, SkipReason::UNSUPPORTED].contains(&skip.code),
            "{name}: {skip}"
        );
    }
}

#[test]
fn large_files_of_any_format_go_to_the_worker() {
    use linkly_extract::{ISOLATE_ABOVE, Sandbox, extract_isolated};
    // A worker that dies at once: whatever reaches it fails, whatever stays in-process works.
    let sandbox = Sandbox::with_worker("/bin/sh", vec!["-c".into(), "kill -9 $$".into()]);
    let small = b"<p>small page</p>".to_vec();
    let e = extract_isolated(&sandbox, Path::new("small.html"), &small).unwrap();
    assert_eq!(e.text, "small page");
    let mut big = b"<p>".to_vec();
    big.resize(ISOLATE_ABOVE as usize + 1, b'a');
    let skip = extract_isolated(&sandbox, Path::new("big.html"), &big).unwrap_err();
    assert_eq!(skip.code, SkipReason::EXTRACTOR_FAILED, "{skip}");
    assert!(skip.detail.contains("signal 9"), "{skip}");
}
