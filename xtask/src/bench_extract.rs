//! `cargo xtask bench extract [--passes N] [--formats md,pdf,...]`: extraction throughput per
//! format on `../shared/corpus/<format>/` (release build).
//!
//! Each file is read into memory first (not timed), then extracted in-process through
//! [`linkly_extract::extract_loaded`], the registry entry point the indexer uses (PDF included:
//! the worker process the indexer starts for PDF is left out, so the figure is the parser's).
//! OCR is off (scanned PDF pages would time Tesseract, which `cargo xtask bench ocr` measures).
//! Every file is extracted once per pass; passes repeat at least `--passes` times (default 3)
//! and until the format has taken a second, and the fastest pass is reported. MB/s counts the
//! input bytes (1 MB = 2^20 bytes). Panics that the registry catches (PDF parsers) are silenced.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::bail;
use linkly_extract::ExtractOptions;

/// The formats measured by default: every text format of the corpus (images need OCR, which has
/// its own benchmark, `cargo xtask bench ocr`).
const FORMATS: [&str; 11] = [
    "md", "txt", "html", "csv", "docx", "pptx", "xlsx", "epub", "rtf", "doc", "pdf",
];

struct Row {
    format: String,
    files: usize,
    bytes: u64,
    best: Duration,
    ok: usize,
    skipped: usize,
    slowest: (String, Duration),
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let passes = crate::arg(args, "--passes")
        .map(|s| s.parse::<usize>())
        .transpose()?
        .unwrap_or(3)
        .max(1);
    let formats: Vec<String> = match crate::arg(args, "--formats") {
        Some(list) => list.split(',').map(str::to_string).collect(),
        None => FORMATS.iter().map(|s| s.to_string()).collect(),
    };
    let mut options = ExtractOptions::default();
    options.ocr.enabled = false;
    // The PDF parsers panic on some files; the registry catches it and skips the file.
    std::panic::set_hook(Box::new(|_| {}));
    let corpus = crate::shared_dir().join("corpus");
    if !corpus.is_dir() {
        bail!("no corpus at {}", corpus.display());
    }
    eprintln!(
        "bench extract: {} formats from {}, best of at least {passes} passes",
        formats.len(),
        corpus.display()
    );
    let mut rows = Vec::new();
    for format in &formats {
        let dir = corpus.join(format);
        let mut paths: Vec<PathBuf> = fs_err::read_dir(&dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        paths.sort();
        let files: Vec<(PathBuf, Vec<u8>)> = paths
            .into_iter()
            .map(|p| Ok((p.clone(), fs_err::read(&p)?)))
            .collect::<anyhow::Result<_>>()?;
        let bytes = files.iter().map(|(_, b)| b.len() as u64).sum();
        let mut row = Row {
            format: format.clone(),
            files: files.len(),
            bytes,
            best: Duration::MAX,
            ok: 0,
            skipped: 0,
            slowest: (String::new(), Duration::ZERO),
        };
        let (mut pass, mut spent) = (0, Duration::ZERO);
        while pass < passes || (spent < Duration::from_secs(1) && pass < 10_000) {
            pass += 1;
            let (mut ok, mut skipped) = (0, 0);
            let mut slowest = (String::new(), Duration::ZERO);
            let start = Instant::now();
            for (path, data) in &files {
                let t = Instant::now();
                let result = linkly_extract::extract_loaded_with(path, data, &options);
                let took = t.elapsed();
                match result {
                    Ok(e) => {
                        ok += 1;
                        std::hint::black_box(e);
                    }
                    Err(_) => skipped += 1,
                }
                if took > slowest.1 {
                    let name = path.file_name().unwrap_or_default().to_string_lossy();
                    slowest = (name.into_owned(), took);
                }
            }
            let total = start.elapsed();
            spent += total;
            if total < row.best {
                row.best = total;
                row.slowest = slowest;
            }
            (row.ok, row.skipped) = (ok, skipped);
        }
        eprintln!(
            "bench extract: {format}: {} files, best of {pass} passes {:.4} s",
            files.len(),
            row.best.as_secs_f64()
        );
        rows.push(row);
    }
    let mut report = String::from(
        "| format | files | MB | seconds | MB/s | files/s | text / skipped | slowest file |\n|---|---|---|---|---|---|---|---|\n",
    );
    let (mut all_files, mut all_bytes, mut all_secs) = (0, 0u64, 0.0);
    for r in &rows {
        let secs = r.best.as_secs_f64().max(1e-9);
        let mb = r.bytes as f64 / 1_048_576.0;
        report.push_str(&format!(
            "| {} | {} | {mb:.2} | {secs:.4} | {:.1} | {:.0} | {} / {} | {} ({:.1} ms) |\n",
            r.format,
            r.files,
            mb / secs,
            r.files as f64 / secs,
            r.ok,
            r.skipped,
            r.slowest.0,
            r.slowest.1.as_secs_f64() * 1000.0
        ));
        all_files += r.files;
        all_bytes += r.bytes;
        all_secs += secs;
    }
    let all_mb = all_bytes as f64 / 1_048_576.0;
    report.push_str(&format!(
        "| all | {all_files} | {all_mb:.2} | {all_secs:.4} | {:.1} | {:.0} | | |\n",
        all_mb / all_secs.max(1e-9),
        all_files as f64 / all_secs.max(1e-9)
    ));
    crate::bench::write_report("extract.md", &report)
}
