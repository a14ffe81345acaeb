//! OCR: the text of images, and of scanned PDF pages, read by Tesseract.
//!
//! Tesseract runs as a **child process** (`tesseract stdin stdout -l … tsv`), fed the image on
//! its stdin, with a time limit, a memory limit (`ulimit -v` through `/bin/sh`) and one thread
//! (`OMP_THREAD_LIMIT=1`, since the indexer already runs one extraction per core). We chose this
//! over a binding to libtesseract (the `tesseract`/`leptess` crates) for robustness:
//!
//! - a crash, an abort or an out-of-memory in Tesseract or Leptonica (C and C++ code reading
//!   untrusted images) costs one file, never the indexer;
//! - a page that takes too long is killed, which an in-process call cannot be;
//! - nothing links at build time: the workspace builds and its other tests pass on a machine
//!   without Tesseract, and installing the engine later needs no rebuild (see [`status`]);
//! - the bindings lag Tesseract releases, and the cost of the process (a few milliseconds and
//!   reloading the language models) is small beside the recognition itself.
//!
//! Languages: the configured codes that are installed. Latin-script ones are read first; when
//! that pass finds no word, or its words have a mean confidence under
//! [`SECOND_PASS_BELOW`], a second pass with all the languages runs and the more confident
//! reading wins. Tesseract's time grows with the number of languages (about 5× for the six
//! defaults against English alone on the corpus images), so Latin-script documents, the common
//! case, pay for the Latin pass only.
//!
//! PDF pages are rasterised by `pdftoppm` (poppler-utils), in a child process as well.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use linkly_core::{OcrConfig, SkipReason, env, is_cjk};

use crate::child::{self, Finished, RunError};

/// The mean word confidence (0–100) under which a second pass with every language runs.
pub const SECOND_PASS_BELOW: f32 = 80.0;
/// Tesseract language codes of Latin-script languages (read in the first pass).
const LATIN: &[&str] = &[
    "eng", "fra", "spa", "deu", "ita", "por", "nld", "cat", "glg", "eus", "dan", "nor", "swe",
    "fin", "isl", "est", "lav", "lit", "pol", "ces", "slk", "slv", "hrv", "hun", "ron", "tur",
    "vie", "ind", "msa", "lat", "gle", "cym", "afr", "sqi", "bos", "mlt", "enm", "frm", "spa_old",
];
/// Address-space limit of one Tesseract or pdftoppm process.
const MEMORY_LIMIT: u64 = 4 * 1024 * 1024 * 1024;
/// Longest output read from one process.
const MAX_OUTPUT: u64 = 64 * 1024 * 1024;
/// How long [`status`] keeps what it found before looking again.
const STATUS_TTL: Duration = Duration::from_secs(30);
/// Resolution of rasterised PDF pages.
const PDF_DPI: u32 = 300;

/// How to OCR: whether at all, in which languages, and how long one image may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OcrOptions {
    /// OCR at all (it also needs the engine: see [`status`]).
    pub enabled: bool,
    /// Tesseract language codes, in the order given.
    pub languages: Vec<String>,
    /// How long one Tesseract (or pdftoppm) run may take before it is killed.
    pub timeout: Duration,
    /// How long the OCR of one scanned PDF may take in all; later pages keep their marker
    /// only. `None`: no limit (a worker process sets a share of its own timeout).
    pub pdf_budget: Option<Duration>,
}

impl Default for OcrOptions {
    fn default() -> Self {
        OcrOptions::from_config(&OcrConfig::default())
    }
}

impl OcrOptions {
    /// The options of an `[ocr]` config table.
    pub fn from_config(config: &OcrConfig) -> OcrOptions {
        OcrOptions {
            enabled: config.enabled,
            languages: config.languages.clone(),
            timeout: Duration::from_secs(120),
            pdf_budget: None,
        }
    }
}

/// Whether OCR can run here, for `linkly doctor` and `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OcrStatus {
    /// Tesseract runs and has at least one language installed.
    pub available: bool,
    /// Its version (`5.3.0`), when it runs.
    pub version: Option<String>,
    /// The installed language codes (without `osd`), sorted.
    pub languages: Vec<String>,
    /// `pdftoppm` runs, so scanned PDF pages can be OCR'd too.
    pub pdf_rasterizer: bool,
    /// Tesseract's orientation and script detection data (`osd`) is installed, so pages
    /// turned by 90°, 180° or 270° are read upright.
    pub osd: bool,
    /// The program looked for (`tesseract`, or `$LINKLY_TESSERACT`).
    pub program: PathBuf,
}

/// The Tesseract program: `$LINKLY_TESSERACT`, else `tesseract` from `PATH`.
fn program() -> PathBuf {
    std::env::var_os(env::LINKLY_TESSERACT)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("tesseract"))
}

/// Whether OCR is available: the engine's version and languages, and the PDF rasteriser.
///
/// Probing runs the programs, so the answer is kept for 30 seconds; a long-running server sees
/// an engine installed while it runs at its next sync.
pub fn status() -> OcrStatus {
    static CACHE: Mutex<Option<(Instant, OcrStatus)>> = Mutex::new(None);
    let prog = program();
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((at, s)) = cache.as_ref()
        && s.program == prog
        && at.elapsed() < STATUS_TTL
    {
        return s.clone();
    }
    let s = probe(prog);
    *cache = Some((Instant::now(), s.clone()));
    s
}

fn probe(prog: PathBuf) -> OcrStatus {
    let quick = Duration::from_secs(20);
    let version = run(plain(&prog, &["--version"]), None, quick)
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            let all = format!(
                "{}\n{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            all.lines()
                .find_map(|l| l.trim().strip_prefix("tesseract "))
                .map(|v| v.trim().to_string())
        });
    let mut osd = false;
    let mut languages: Vec<String> = match version {
        Some(_) => run(plain(&prog, &["--list-langs"]), None, quick)
            .ok()
            .filter(|o| o.status.success())
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .skip_while(|l| !l.starts_with("List of available languages"))
                    .skip(1)
                    .map(|l| l.trim().to_string())
                    .filter(|l| {
                        osd |= l == "osd";
                        !l.is_empty() && l != "osd"
                    })
                    .collect()
            })
            .unwrap_or_default(),
        None => Vec::new(),
    };
    languages.sort();
    let pdf_rasterizer = run(plain(Path::new("pdftoppm"), &["-v"]), None, quick).is_ok();
    OcrStatus {
        available: version.is_some() && !languages.is_empty(),
        version,
        languages,
        pdf_rasterizer,
        osd,
        program: prog,
    }
}

/// The languages OCR would use now, or why it cannot run (`ocr_unavailable`).
pub fn ready(opts: &OcrOptions) -> Result<Vec<String>, SkipReason> {
    let unavailable = |detail: String| SkipReason::new(SkipReason::OCR_UNAVAILABLE, detail);
    if !opts.enabled {
        return Err(unavailable(
            "OCR is turned off (`[ocr] enabled = false` in config.toml)".into(),
        ));
    }
    let s = status();
    if s.version.is_none() {
        return Err(unavailable(format!(
            "the OCR engine ({}) is not installed: install Tesseract (Debian/Ubuntu: apt-get install tesseract-ocr tesseract-ocr-eng …), then index again",
            s.program.display()
        )));
    }
    let langs: Vec<String> = opts
        .languages
        .iter()
        .filter(|l| s.languages.contains(l))
        .cloned()
        .collect();
    if langs.is_empty() {
        return Err(unavailable(format!(
            "none of the OCR languages asked for ({}) is installed (installed: {}); install e.g. tesseract-ocr-eng, then index again",
            opts.languages.join(", "),
            s.languages.join(", ")
        )));
    }
    Ok(langs)
}

/// One Tesseract reading of an image.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// The text: one line per recognised line, a blank line between paragraphs, no spaces
    /// between CJK characters.
    pub text: String,
    /// Words recognised.
    pub words: usize,
    /// Their mean confidence (0–100, weighted by length); 0 without words.
    pub confidence: f32,
}

/// The text of an image (PNG, JPEG, BMP, WebP, TIFF, GIF: whatever Leptonica reads), in the
/// configured languages (two passes: see the module doc). An image without text gives empty
/// text.
///
/// Pages that are not upright: with the `osd` data installed, Tesseract's automatic layout
/// with orientation detection (`--psm 1`) turns a page by 90°, 180° or 270° before reading it;
/// without it, the layout without orientation (`--psm 3`). When that finds no word, the image
/// is read once more as a single block of text (`--psm 6`), which holds up under a skew of
/// ten degrees or so where the layout analysis finds no line at all; that reading counts when
/// its words have a mean confidence of [`SKEWED_MIN_CONFIDENCE`] or more and hold at least three
/// letters or digits (a drawing read as a block gives a few symbols).
pub fn recognize(image: &[u8], opts: &OcrOptions) -> Result<String, SkipReason> {
    let langs = ready(opts)?;
    let layout = if status().osd { PSM_AUTO_OSD } else { PSM_AUTO };
    let first = read_languages(image, &langs, opts.timeout, layout)?;
    if first.words > 0 {
        return Ok(first.text);
    }
    let block = read_pass(image, &langs, opts.timeout, PSM_BLOCK)?;
    let letters = block.text.chars().filter(|c| c.is_alphanumeric()).count();
    if letters >= 3 && block.confidence >= SKEWED_MIN_CONFIDENCE {
        return Ok(block.text);
    }
    Ok(String::new())
}

/// Tesseract page segmentation modes used.
const PSM_AUTO_OSD: &str = "1";
const PSM_AUTO: &str = "3";
const PSM_BLOCK: &str = "6";
/// The mean confidence a single-block reading of a page the layout found empty needs.
pub const SKEWED_MIN_CONFIDENCE: f32 = 50.0;

/// A reading in the Latin-script languages first, then with all of them when that one is
/// empty or unsure (see the module doc).
fn read_languages(
    image: &[u8],
    langs: &[String],
    timeout: Duration,
    psm: &str,
) -> Result<Reading, SkipReason> {
    let latin: Vec<String> = langs
        .iter()
        .filter(|l| LATIN.contains(&l.as_str()))
        .cloned()
        .collect();
    if latin.is_empty() || latin.len() == langs.len() {
        return read_pass(image, langs, timeout, psm);
    }
    let first = read_pass(image, &latin, timeout, psm)?;
    if first.words > 0 && first.confidence >= SECOND_PASS_BELOW {
        return Ok(first);
    }
    let second = read_pass(image, langs, timeout, psm)?;
    if second.words > 0 && (first.words == 0 || second.confidence > first.confidence) {
        Ok(second)
    } else {
        Ok(first)
    }
}

/// One Tesseract pass over an image with these languages (`eng+fra+…`), automatic layout
/// without orientation detection.
pub fn read_once(
    image: &[u8],
    languages: &[String],
    timeout: Duration,
) -> Result<Reading, SkipReason> {
    read_pass(image, languages, timeout, PSM_AUTO)
}

/// One Tesseract pass with a page segmentation mode.
fn read_pass(
    image: &[u8],
    languages: &[String],
    timeout: Duration,
    psm: &str,
) -> Result<Reading, SkipReason> {
    let langs = languages.join("+");
    let cmd = limited(
        &program(),
        &["stdin", "stdout", "-l", &langs, "--psm", psm, "tsv"],
    );
    let out = run(cmd, Some(image), timeout).map_err(|e| skip(e, "OCR"))?;
    if !out.status.success() {
        let err = last_line(&out.stderr);
        let code = if err.contains("pixRead")
            || err.contains("Unsupported image")
            || err.contains("image file")
            || err.contains("Error in")
        {
            SkipReason::CORRUPT
        } else {
            SkipReason::EXTRACTOR_FAILED
        };
        return Err(SkipReason::new(
            code,
            format!("Tesseract could not read the image: {err}"),
        ));
    }
    Ok(parse_tsv(&String::from_utf8_lossy(&out.stdout)))
}

/// Rasterises one page (1-based) of a PDF to a grayscale PNG at 300 dpi with `pdftoppm`.
pub fn rasterize_pdf_page(pdf: &[u8], page: u32, timeout: Duration) -> Result<Vec<u8>, SkipReason> {
    let page = page.to_string();
    let dpi = PDF_DPI.to_string();
    let cmd = limited(
        Path::new("pdftoppm"),
        &["-f", &page, "-l", &page, "-r", &dpi, "-gray", "-png", "-"],
    );
    let out = run(cmd, Some(pdf), timeout).map_err(|e| skip(e, "rasterising the PDF page"))?;
    if !out.status.success() {
        return Err(SkipReason::new(
            SkipReason::EXTRACTOR_FAILED,
            format!(
                "pdftoppm could not render page {page}: {}",
                last_line(&out.stderr)
            ),
        ));
    }
    Ok(out.stdout)
}

/// Text from Tesseract's TSV output: words of a line joined by a space, lines by `\n`, a blank
/// line between paragraphs, blocks and pages.
fn parse_tsv(tsv: &str) -> Reading {
    let mut text = String::new();
    let mut line = String::new();
    let mut last_key: Option<(u32, u32, u32, u32)> = None;
    let (mut words, mut weight, mut sum) = (0usize, 0f32, 0f32);
    let flush = |line: &mut String, text: &mut String, gap: bool| {
        let l = join_cjk(line.trim());
        line.clear();
        if l.is_empty() {
            return;
        }
        if !text.is_empty() {
            text.push('\n');
            if gap {
                text.push('\n');
            }
        }
        text.push_str(&l);
    };
    let mut pending_gap = false;
    for row in tsv.lines().skip(1) {
        let cols: Vec<&str> = row.splitn(12, '\t').collect();
        if cols.len() < 12 || cols[0] != "5" {
            continue;
        }
        let word = cols[11].trim();
        let conf: f32 = cols[10].trim().parse().unwrap_or(-1.0);
        if word.is_empty() || conf < 0.0 {
            continue;
        }
        // Low-confidence specks with no letter or digit are noise, not text.
        if conf < 25.0 && !word.chars().any(char::is_alphanumeric) {
            continue;
        }
        let num = |i: usize| cols[i].trim().parse::<u32>().unwrap_or(0);
        let key = (num(1), num(2), num(3), num(4));
        if let Some(prev) = last_key
            && prev != key
        {
            flush(&mut line, &mut text, pending_gap);
            pending_gap = false;
            if (prev.0, prev.1, prev.2) != (key.0, key.1, key.2) {
                pending_gap = true;
            }
        }
        last_key = Some(key);
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
        let n = word.chars().count() as f32;
        words += 1;
        weight += n;
        sum += conf * n;
    }
    flush(&mut line, &mut text, pending_gap);
    Reading {
        text,
        words,
        confidence: if weight > 0.0 { sum / weight } else { 0.0 },
    }
}

/// Removes the spaces Tesseract puts between CJK characters (`複数 の 文字` → `複数の文字`), so
/// that the index's CJK bigrams and `grep` find the words.
fn join_cjk(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let before = out.chars().last();
            let after = chars[i + 1..].iter().find(|c| **c != ' ');
            if before.is_some_and(cjk_like) && after.is_some_and(|c| cjk_like(*c)) {
                continue;
            }
            if before == Some(' ') {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// CJK ideographs, kana and hangul, plus CJK and full-width punctuation.
fn cjk_like(c: char) -> bool {
    is_cjk(c) || matches!(c as u32, 0x3000..=0x303F | 0xFF00..=0xFFEF)
}

fn last_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().chars().take(200).collect())
        .unwrap_or_else(|| "no message".into())
}

/// A command run directly (for probing: a missing program fails to start).
fn plain(prog: &Path, args: &[&str]) -> Command {
    child::command(prog, args, None)
}

/// A command run with one thread and the memory limit.
fn limited(prog: &Path, args: &[&str]) -> Command {
    let mut c = child::command(prog, args, Some(MEMORY_LIMIT));
    c.env("OMP_THREAD_LIMIT", "1");
    c
}

/// The skip reason for a helper program that could not run to the end.
fn skip(e: RunError, what: &str) -> SkipReason {
    match e {
        RunError::Start(e) => SkipReason::new(
            SkipReason::OCR_UNAVAILABLE,
            format!("cannot start the program for {what}: {e}"),
        ),
        RunError::Timeout(t) => SkipReason::new(
            SkipReason::TIMEOUT,
            format!("{what} took longer than {} s", t.as_secs()),
        ),
        RunError::Wait(e) => {
            SkipReason::new(SkipReason::EXTRACTOR_FAILED, format!("{what} failed: {e}"))
        }
    }
}

/// Runs a helper with `input` on its stdin, killing it after `timeout`.
fn run(cmd: Command, input: Option<&[u8]>, timeout: Duration) -> Result<Finished, RunError> {
    child::run(cmd, input, timeout, MAX_OUTPUT)
}

/// The character error rate of OCR (or any reading) against the expected text: the edit
/// distance over the expected length, runs of whitespace counted as one space.
pub fn character_error_rate(got: &str, expected: &str) -> f64 {
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let a: Vec<char> = squash(got).chars().collect();
    let b: Vec<char> = squash(expected).chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()] as f64 / b.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn character_error_rate_squashes_whitespace() {
        let cer = character_error_rate;
        assert_eq!(cer("abc", "abc"), 0.0);
        assert_eq!(cer("a  b\nc", "a b c"), 0.0);
        assert!((cer("abd", "abc") - 1.0 / 3.0).abs() < 1e-9);
        assert_eq!(cer("", "abcd"), 1.0);
    }

    #[test]
    fn tsv_becomes_lines_and_paragraphs() {
        let tsv = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n\
            1\t1\t0\t0\t0\t0\t0\t0\t10\t10\t-1\t\n\
            5\t1\t1\t1\t1\t1\t0\t0\t1\t1\t96.5\tHello\n\
            5\t1\t1\t1\t1\t2\t0\t0\t1\t1\t90\tworld\n\
            5\t1\t1\t1\t2\t1\t0\t0\t1\t1\t80\t複数\n\
            5\t1\t1\t1\t2\t2\t0\t0\t1\t1\t80\tの\n\
            5\t1\t1\t1\t2\t3\t0\t0\t1\t1\t10\t|\n\
            5\t1\t2\t1\t1\t1\t0\t0\t1\t1\t70\tNext\n";
        let r = parse_tsv(tsv);
        assert_eq!(r.text, "Hello world\n複数の\n\nNext");
        assert_eq!(r.words, 5);
        assert!(
            r.confidence > 70.0 && r.confidence < 97.0,
            "{}",
            r.confidence
        );
        assert_eq!(parse_tsv("").text, "");
    }

    #[test]
    fn cjk_spaces_go_latin_spaces_stay() {
        assert_eq!(join_cjk("複数 の 文字 Mix パ"), "複数の文字 Mix パ");
        assert_eq!(join_cjk("a  b"), "a b");
    }

    #[test]
    fn turned_off_is_unavailable() {
        let opts = OcrOptions {
            enabled: false,
            ..OcrOptions::default()
        };
        let err = recognize(b"x", &opts).unwrap_err();
        assert_eq!(err.code, SkipReason::OCR_UNAVAILABLE);
        assert!(err.detail.contains("enabled = false"), "{err}");
    }
}
