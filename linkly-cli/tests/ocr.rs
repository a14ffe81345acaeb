//! OCR end to end through the `linkly` binary: the corpus images (and a scanned PDF, extracted
//! in the worker process) are indexed, found by `search` and `grep`, read with each
//! `image_text` mode of `read`; an image indexed while OCR is unavailable is read at the next
//! index once it is available.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{Env, succeeded};
use linkly_extract::hand_made_pdf;
use serde_json::Value;

const IMAGES: [&str; 7] = [
    "ocrs-polar-bears.png",
    "ocrs-rust-book.jpg",
    "poi-bug55902-mixedChars-ja.png",
    "textract-raw_text.jpg",
    "textract-raw_text.png",
    "tika-testJPEG_EXIF.jpg",
    "tika-testOCR_spacing.png",
];

/// A screenshot-like PNG holding over 2,000 characters of text (rendered by `pdftoppm`).
fn long_png(dir: &Path) {
    let lines: Vec<String> = (1..=60)
        .map(|i| format!("Line {i} of the ledger: invoices paid in full, receipts filed"))
        .collect();
    let pdf = dir.join("long-src.pdf.tmp");
    fs_err::write(&pdf, hand_made_pdf::text_pdf(&lines)).unwrap();
    succeeded(
        Command::new("pdftoppm")
            .args(["-r", "150", "-gray", "-png", "-singlefile"])
            .arg(&pdf)
            .arg(dir.join("long"))
            .output()
            .expect("pdftoppm (poppler-utils) is installed"),
    );
    fs_err::remove_file(&pdf).unwrap();
}

/// A scanned PDF: the page is the corpus JPEG of the EAS test, without text.
fn scanned_pdf() -> Vec<u8> {
    let jpg = fs_err::read(common::corpus_dir().join("images/textract-raw_text.jpg")).unwrap();
    hand_made_pdf::scanned_pdf(&[(&jpg, 2000, 1850)])
}

const PAGE: &str = "# Field notes\n\nThe alert:\n\n![EAS](images/textract-raw_text.jpg)\n\nAnd the bears <img src=\"images/ocrs-polar-bears.png\" alt=\"bears\">\n\nThe end.\n";

/// The corpus images under `docs/images`, a page referencing two of them, one referencing one
/// of them twice, a long screenshot, a page referencing it eleven times, and a scanned PDF.
fn ocr_env() -> Env {
    let many: String = (1..=11)
        .map(|i| format!("shot {i}: ![](long.png)\n"))
        .collect();
    let twice = "twice: ![](images/textract-raw_text.jpg)\n\nthe bears ![](images/ocrs-polar-bears.png)\n\nagain ![alert](images/textract-raw_text.jpg)\n";
    let env = Env::new(&[("page.md", PAGE), ("many.md", &many), ("twice.md", twice)]);
    let images = env.docs.join("images");
    fs_err::create_dir_all(&images).unwrap();
    for name in IMAGES {
        fs_err::copy(
            common::corpus_dir().join("images").join(name),
            images.join(name),
        )
        .unwrap();
    }
    long_png(&env.docs);
    fs_err::write(env.docs.join("scan.pdf"), scanned_pdf()).unwrap();
    env
}

fn search(env: &Env, query: &str) -> Vec<Value> {
    env.json(&["search", query])["results"]
        .as_array()
        .unwrap()
        .clone()
}

fn id_of(env: &Env, query: &str, file: &str) -> String {
    let v = env.json(&["search", query]);
    let hit = common::result_ending(&v, file)
        .unwrap_or_else(|| panic!("{query:?} did not find {file}: {v:#}"));
    hit["doc_id"].as_str().unwrap().to_string()
}

fn read(env: &Env, id: &str, mode: &str) -> Value {
    env.json(&["read", id, "--image-text", mode])
}

/// A folder of a text file and the corpus image `image` saved as `name`.
fn env_with_image(image: &str, name: &str) -> Env {
    let env = Env::new(&[("notes.txt", "plain words here\n")]);
    fs_err::copy(
        common::corpus_dir().join("images").join(image),
        env.docs.join(name),
    )
    .unwrap();
    env
}

/// Asserts that a `read --image-text full` answer's first two images are the alert
/// (`textract-raw_text.jpg`) and the bears (`ocrs-polar-bears.png`), each with its full text.
#[track_caller]
fn assert_alert_then_bears(answer: &Value) {
    let images = answer["images"].as_array().unwrap();
    assert!(images.len() >= 2, "{answer}");
    for (image, words) in images
        .iter()
        .zip(["EMERGENCY ALERT SYSTEM", "Mitochondrial DNA"])
    {
        assert!(image["text"].as_str().unwrap().contains(words), "{answer}");
    }
}

#[test]
fn images_are_searched_grepped_and_read() {
    let env = ocr_env();
    env.index();

    // search: words of the images, a CJK query, and the scanned PDF (OCR'd in the worker).
    let jpg = id_of(&env, "EMERGENCY alert", "textract-raw_text.jpg");
    let bears = id_of(&env, "Mitochondrial", "ocrs-polar-bears.png");
    id_of(&env, "KLABNIK", "ocrs-rust-book.jpg");
    id_of(&env, "abcdefghijkl", "textract-raw_text.png");
    let ja = id_of(&env, "複数の文字", "poi-bug55902-mixedChars-ja.png");
    id_of(&env, "カタカナ", "poi-bug55902-mixedChars-ja.png");
    let scan = id_of(&env, "NATIONAL EMERGENCY", "scan.pdf");
    let hits = search(&env, "EMERGENCY");
    let jpg_hit = hits.iter().find(|r| r["doc_id"] == jpg.as_str()).unwrap();
    assert_eq!(jpg_hit["doc_type"], "image");
    let v = env.json(&["search", "bears", "--type", "image"]);
    assert!(
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["doc_type"] == "image"),
        "{v}"
    );

    // grep: line-numbered matches inside image text.
    let out = env.run(&["grep", "ALERT SYSTEM", &jpg]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("EMERGENCY ALERT SYSTEM"),
        "{text}"
    );
    let out = env.run(&["grep", "文字", &ja]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("複数の文字"),
        "{text}"
    );
    let out = env.run(&["grep", "EMERGENCY", &scan]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("NATIONAL"), "{text}");
    let v = env.json(&["read", &scan]);
    assert_eq!(
        v["content"].as_str().unwrap().lines().next(),
        Some("--- page 1 ---")
    );

    // read image_text on a page referencing two images.
    let page = id_of(&env, "Field notes", "page.md");
    let none = read(&env, &page, "none");
    let imgs = none["images"].as_array().unwrap();
    assert_eq!(imgs.len(), 2, "{none}");
    assert_eq!(imgs[0]["line"], 5);
    assert_eq!(imgs[0]["doc_id"], jpg.as_str());
    assert!(
        imgs[0]["file"]
            .as_str()
            .unwrap()
            .ends_with("images/textract-raw_text.jpg")
    );
    assert_eq!(imgs[1]["line"], 7);
    assert_eq!(imgs[1]["doc_id"], bears.as_str());
    for i in imgs {
        assert!(
            i.get("excerpt").is_none() && i.get("char_count").is_none() && i.get("text").is_none(),
            "{i}"
        );
    }
    let abs = read(&env, &page, "abstract");
    for i in abs["images"].as_array().unwrap() {
        assert!(i["char_count"].as_u64().unwrap() > 20, "{i}");
        assert!(!i["excerpt"].as_str().unwrap().contains('\n'), "{i}");
        assert!(i.get("text").is_none(), "{i}");
    }
    assert!(
        abs["images"][0]["excerpt"]
            .as_str()
            .unwrap()
            .contains("EAS TEST")
    );
    assert_alert_then_bears(&read(&env, &page, "full"));
    // The Markdown form lists them under "Referenced images".
    let out = env.run(&["read", &page, "--image-text", "full"]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("Referenced images:") && md.contains("  > EAS TEST"),
        "{md}"
    );

    // Budgets: at most 2,000 characters per image (a longer one is never cut: it stays an
    // abstract with a note saying how to read it alone) and 20,000 per call; each image's
    // text once per answer, later references pointing back to the first.
    let many = id_of(&env, "shot", "many.md");
    let v = read(&env, &many, "full");
    let imgs = v["images"].as_array().unwrap();
    assert_eq!(imgs.len(), 11);
    let long_count = imgs[0]["char_count"].as_u64().unwrap();
    assert!(
        long_count > 2000,
        "the long screenshot has {long_count} chars"
    );
    assert!(imgs[0].get("text").is_none(), "{}", imgs[0]);
    assert!(imgs[0]["excerpt"].is_string(), "{}", imgs[0]);
    let note = imgs[0]["note"].as_str().unwrap();
    assert!(
        note.contains("over the 2,000 inlined per image")
            && note.contains(&format!("read {}", imgs[0]["doc_id"].as_str().unwrap())),
        "{note}"
    );
    for (n, i) in imgs.iter().enumerate().skip(1) {
        assert_eq!(i["doc_id"], imgs[0]["doc_id"], "image {n}");
        assert!(i.get("text").is_none() && i.get("excerpt").is_none(), "{i}");
        assert_eq!(i["note"], "same image as line 1, shown there", "{i}");
    }
    let twice = id_of(&env, "twice", "twice.md");
    let v = read(&env, &twice, "full");
    let imgs = v["images"].as_array().unwrap();
    assert_eq!(imgs.len(), 3, "{v}");
    assert_alert_then_bears(&v);
    assert_eq!(imgs[2]["line"], 5);
    assert_eq!(imgs[2]["note"], "same image as line 1, shown there", "{v}");
    assert!(imgs[2].get("text").is_none(), "{v}");
    let out = env.run(&["read", &twice, "--image-text", "full"]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert_eq!(md.matches("  > EAS TEST").count(), 1, "{md}");
    let long = env.json(&["search", "ledger invoices receipts"]);
    assert!(common::result_ending(&long, "long.png").is_some(), "{long}");
}

#[test]
fn images_wait_for_ocr_and_are_read_once_it_is_installed() {
    let env = env_with_image("textract-raw_text.jpg", "alert.jpg");
    let out = succeeded(
        env.cmd()
            .env("LINKLY_TESSERACT", "/nonexistent/tesseract")
            .args(["--json", "index", env.docs.to_str().unwrap()])
            .output()
            .unwrap(),
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["skipped"], 1, "{v}");
    // Indexed by name, with the reason visible.
    let hit = &env.json(&["search", "alert"])["results"][0];
    assert!(
        hit["path"].as_str().unwrap().ends_with("alert.jpg"),
        "{hit}"
    );
    assert!(
        hit["skip_reason"]
            .as_str()
            .unwrap()
            .starts_with("ocr_unavailable"),
        "{hit}"
    );
    assert_eq!(env.json(&["search", "EMERGENCY"])["total"], 0);
    // Still missing: nothing to redo.
    let out = env
        .cmd()
        .env("LINKLY_TESSERACT", "/nonexistent/tesseract")
        .args(["--json", "index"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["updated"], 0, "{v}");
    // The engine appears: the next index reads the image although it did not change.
    let v = env.json(&["index"]);
    assert_eq!(v["updated"], 1, "{v}");
    assert_eq!(v["skipped"], 0, "{v}");
    let hit = &env.json(&["search", "EMERGENCY"])["results"][0];
    assert!(
        hit["path"].as_str().unwrap().ends_with("alert.jpg"),
        "{hit}"
    );
    assert!(hit.get("skip_reason").is_none_or(Value::is_null), "{hit}");
}

#[test]
fn ocr_can_be_turned_off_in_the_config() {
    let env = env_with_image("textract-raw_text.png", "letters.png");
    fs_err::create_dir_all(&env.home).unwrap();
    fs_err::write(
        env.home.join("config.toml"),
        "[ocr]\nenabled = false\nlanguages = [\"eng\"]\n",
    )
    .unwrap();
    env.index();
    let hit = &env.json(&["search", "letters"])["results"][0];
    let reason = hit["skip_reason"].as_str().unwrap();
    assert!(reason.contains("enabled = false"), "{reason}");
}
