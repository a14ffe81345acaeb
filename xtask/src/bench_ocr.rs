//! `cargo xtask bench ocr`: OCR speed (images per second, one Tesseract thread) and accuracy
//! (character error rate against reference texts) on the corpus images, for the default
//! language set (two passes: Latin languages, then all six when the first reads poorly), the
//! six languages in one pass, and English alone.
//!
//! References: `../shared/expected/textract-{jpg,png}_raw_text.txt` (textract's), and two
//! transcribed here from the pictures (the Japanese sample's left column and the spacing
//! sample).

use std::path::Path;
use std::time::Instant;

use anyhow::bail;
use linkly_core::OcrConfig;
use linkly_extract::ocr::{self, OcrOptions};

const IMAGES: [&str; 7] = [
    "ocrs-polar-bears.png",
    "ocrs-rust-book.jpg",
    "poi-bug55902-mixedChars-ja.png",
    "textract-raw_text.jpg",
    "textract-raw_text.png",
    "tika-testJPEG_EXIF.jpg",
    "tika-testOCR_spacing.png",
];

/// Reference texts transcribed from the pictures.
const TRANSCRIBED: [(&str, &str); 2] = [
    (
        "poi-bug55902-mixedChars-ja.png",
        "Single byte 複数の文字 カタカナ ﾊﾝｶｸ 表十ソ 表Mixﾊﾟﾋﾟ",
    ),
    ("tika-testOCR_spacing.png", "The quick brown fox"),
];

pub(crate) fn run(_args: &[String]) -> anyhow::Result<()> {
    let status = ocr::status();
    if !status.available {
        bail!(
            "Tesseract is not installed ({status:?}): apt-get install tesseract-ocr tesseract-ocr-eng …"
        );
    }
    let dir = crate::shared_dir().join("corpus/images");
    let expected = crate::shared_dir().join("expected");
    let mut references: Vec<(&str, String)> = vec![
        (
            "textract-raw_text.jpg",
            read(&expected.join("textract-jpg_raw_text.txt"))?,
        ),
        (
            "textract-raw_text.png",
            read(&expected.join("textract-png_raw_text.txt"))?,
        ),
    ];
    references.extend(TRANSCRIBED.iter().map(|(n, t)| (*n, t.to_string())));
    let images: Vec<(&str, Vec<u8>)> = IMAGES
        .iter()
        .map(|n| Ok((*n, fs_err::read(dir.join(n))?)))
        .collect::<anyhow::Result<_>>()?;
    let six = OcrConfig::DEFAULT_LANGUAGES.map(str::to_string).to_vec();
    eprintln!(
        "bench ocr: Tesseract {} with {}; {} images",
        status.version.as_deref().unwrap_or("?"),
        status.languages.join(", "),
        images.len()
    );
    let mut report = String::from(
        "| languages | images/s | seconds | CER textract jpg | CER textract png | CER Japanese | CER spacing | mean CER |\n|---|---|---|---|---|---|---|---|\n",
    );
    for (label, langs, single_pass) in [
        (
            "default: eng+fra+spa, then all six if unsure",
            six.clone(),
            false,
        ),
        ("all six in one pass", six.clone(), true),
        ("eng only", vec!["eng".to_string()], true),
    ] {
        let opts = OcrOptions {
            languages: langs.clone(),
            ..OcrOptions::default()
        };
        let started = Instant::now();
        let mut texts = Vec::new();
        for (name, bytes) in &images {
            let text = if single_pass {
                ocr::read_once(bytes, &langs, opts.timeout).map(|r| r.text)
            } else {
                ocr::recognize(bytes, &opts)
            };
            let text = text.map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
            texts.push((*name, text));
        }
        let secs = started.elapsed().as_secs_f64();
        let mut row = format!(
            "| {label} | {:.2} | {secs:.1} |",
            images.len() as f64 / secs
        );
        let mut sum = 0.0;
        for (name, want) in &references {
            let got = texts
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| t.as_str())
                .unwrap_or("");
            let rate = ocr::character_error_rate(got, want);
            sum += rate;
            row.push_str(&format!(" {:.1}% |", rate * 100.0));
        }
        row.push_str(&format!(
            " {:.1}% |\n",
            sum * 100.0 / references.len() as f64
        ));
        eprint!("{row}");
        report.push_str(&row);
    }
    println!("{report}");
    Ok(())
}

fn read(path: &Path) -> anyhow::Result<String> {
    Ok(fs_err::read_to_string(path)?)
}
