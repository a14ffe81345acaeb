//! PDF: text per page (`pdf-extract`, with `lopdf`'s own text extraction as a per-page fallback),
//! bookmarks (`lopdf::Document::get_toc`) as the outline, `/Title` from the Info dictionary.
//!
//! Every page's text is preceded by a marker line `--- page N ---`, so that `read` and `grep`
//! show the page, and bookmark nodes start at the marker line of their page.
//!
//! `pdf-extract` panics on malformed files by design (and may abort), so each page runs under
//! `catch_unwind` here and the whole format asks for process isolation
//! ([`Extractor::isolate`]).

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use linkly_core::{DocType, Heading, OutlineNode, SkipReason};
use lopdf::{Document, Object, ObjectId};

use crate::{ExtractOptions, Extracted, Extractor, Input, ocr};

/// The marker line put before each page's text.
pub fn page_marker(page: u32) -> String {
    format!("--- page {page} ---")
}

/// Text of one page is cut after this many bytes.
const MAX_PAGE_BYTES: usize = 2 * 1024 * 1024;
/// The whole text is cut after this many bytes (later pages keep only their marker).
const MAX_TEXT_BYTES: usize = 48 * 1024 * 1024;
/// At most this many pages are read.
const MAX_PAGES: usize = 20_000;

/// PDF files (`.pdf`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Pdf;

impl Extractor for Pdf {
    fn doc_type(&self) -> DocType {
        DocType::Pdf
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["pdf"]
    }

    fn max_bytes(&self) -> u64 {
        256 * 1024 * 1024
    }

    fn isolate(&self) -> bool {
        true
    }

    fn extract(&self, input: &Input<'_>) -> Result<Extracted, SkipReason> {
        extract_pdf_with(input.bytes, &ExtractOptions::default())
    }

    fn extract_with(
        &self,
        input: &Input<'_>,
        options: &ExtractOptions,
    ) -> Result<Extracted, SkipReason> {
        extract_pdf_with(input.bytes, options)
    }
}

fn extract_pdf_with(bytes: &[u8], options: &ExtractOptions) -> Result<Extracted, SkipReason> {
    let head = &bytes[..bytes.len().min(1024)];
    if !head.windows(5).any(|w| w == b"%PDF-") {
        return Err(SkipReason::new(
            SkipReason::CORRUPT,
            "not a PDF file (no %PDF- header)",
        ));
    }
    // lopdf decrypts a file whose user password is empty while loading; a file that needs a
    // real password stays encrypted.
    let doc = match catch_unwind(AssertUnwindSafe(|| Document::load_mem(bytes))) {
        Ok(Ok(doc)) => doc,
        Ok(Err(e)) => {
            let msg = e.to_string();
            let code = if msg.to_ascii_lowercase().contains("decrypt")
                || msg.to_ascii_lowercase().contains("password")
            {
                SkipReason::ENCRYPTED
            } else {
                SkipReason::CORRUPT
            };
            return Err(SkipReason::new(
                code,
                format!("cannot parse the PDF: {msg}"),
            ));
        }
        Err(_) => {
            return Err(SkipReason::new(
                SkipReason::CORRUPT,
                "the PDF parser failed on this file",
            ));
        }
    };
    if doc.is_encrypted() {
        return Err(SkipReason::new(
            SkipReason::ENCRYPTED,
            "the PDF is encrypted and needs a password",
        ));
    }
    let pages: BTreeMap<u32, ObjectId> = doc.get_pages();
    if pages.is_empty() {
        return Err(SkipReason::new(SkipReason::CORRUPT, "the PDF has no pages"));
    }

    let mut paged = PagedText::default();
    let mut total_chars = 0usize;
    let mut any_image = false;
    for (i, (&num, &id)) in pages.iter().enumerate() {
        if !paged.open_page(i, num) {
            continue;
        }
        if !any_image {
            any_image = page_has_image(&doc, id);
        }
        let page_text = clean_page(&page_text(&doc, num));
        total_chars += page_text.chars().filter(|c| !c.is_whitespace()).count();
        paged.push_page(&page_text);
    }

    let page_count = pages.len();
    if total_chars == 0 || (any_image && total_chars < 16 * page_count) {
        let scan = format!(
            "{page_count} page(s) with {total_chars} characters of text: no text layer (a scan?)"
        );
        return ocr_scanned(&doc, bytes, &pages, options, scan);
    }

    Ok(paged.finish(&doc))
}

/// A PDF's text as it is read page by page: each page opens with its marker line, whose line
/// number the outline points to.
#[derive(Default)]
struct PagedText {
    text: String,
    marker_line: BTreeMap<u32, u32>,
    line: u32,
}

impl PagedText {
    /// Writes the marker line of page `num`, the `i`-th; false when the text is over its caps
    /// ([`MAX_PAGES`], [`MAX_TEXT_BYTES`]) and the page's own text is left out.
    fn open_page(&mut self, i: usize, num: u32) -> bool {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(&page_marker(num));
        self.line += 1;
        self.marker_line.insert(num, self.line);
        i < MAX_PAGES && self.text.len() <= MAX_TEXT_BYTES
    }

    /// Adds the text of the page last opened (nothing when it is empty).
    fn push_page(&mut self, page: &str) {
        if page.is_empty() {
            return;
        }
        self.text.push('\n');
        self.text.push_str(page);
        self.line += page.split('\n').count() as u32;
    }

    /// The document: the text, the info dictionary's title and the outline.
    fn finish(self, doc: &Document) -> Extracted {
        let outline = outline(doc, &self.marker_line, self.line);
        let mut out = Extracted::text(DocType::Pdf, self.text);
        out.title = info_title(doc);
        out.outline = outline;
        out
    }
}

/// One page's text: `pdf-extract`, unless it fails or its text looks worse than `lopdf`'s.
fn page_text(doc: &Document, num: u32) -> String {
    let primary = catch_unwind(AssertUnwindSafe(|| {
        let mut s = String::new();
        let mut out = pdf_extract::PlainTextOutput::new(&mut s);
        pdf_extract::output_doc_page(doc, &mut out, num).map(|_| s)
    }));
    let primary = match primary {
        Ok(Ok(s)) => Some(s),
        _ => None,
    };
    let fallback = catch_unwind(AssertUnwindSafe(|| doc.extract_text(&[num])))
        .ok()
        .and_then(|r| r.ok());
    match (primary, fallback) {
        (Some(p), Some(f)) => {
            let (pc, fc) = (non_space(&p), non_space(&f));
            if pc * 2 < fc {
                return f;
            }
            // Words split into pieces ("Exa mp le") or run together: lopdf's spacing wins
            // when its words look like words (length, vowels) and pdf-extract's do not, or
            // pdf-extract cut many more words.
            match (latin_stats(&p), latin_stats(&f)) {
                (Some(ps), Some(fs))
                    if fs.plausible() && (!ps.plausible() || ps.words * 20 > fs.words * 23) =>
                {
                    f
                }
                (None, Some(fs))
                    if fs.plausible() && pc > 0 && p.split_whitespace().count() * 4 < fs.words =>
                {
                    f
                }
                _ => p,
            }
        }
        (Some(p), None) => p,
        (None, Some(f)) => f,
        (None, None) => String::new(),
    }
}

fn non_space(s: &str) -> usize {
    s.chars().filter(|c| !c.is_whitespace()).count()
}

/// Word statistics of the Latin words of a text.
struct LatinStats {
    words: usize,
    mean_len: f64,
    vowel_ratio: f64,
}

impl LatinStats {
    fn plausible(&self) -> bool {
        (3.2..=11.0).contains(&self.mean_len) && (0.25..=0.65).contains(&self.vowel_ratio)
    }
}

/// Statistics of whitespace-separated Latin words (None without enough of them).
fn latin_stats(s: &str) -> Option<LatinStats> {
    let (mut words, mut letters, mut vowels, mut chars) = (0usize, 0usize, 0usize, 0usize);
    for w in s.split_whitespace() {
        if !w.chars().all(|c| c.is_ascii() || c.is_alphabetic()) {
            continue;
        }
        let l = w.chars().filter(|c| c.is_alphabetic()).count();
        if l == 0 {
            continue;
        }
        words += 1;
        chars += w.chars().count();
        letters += w.chars().filter(|c| c.is_ascii_alphabetic()).count();
        vowels += w.chars().filter(|c| "aeiouyAEIOUY".contains(*c)).count();
    }
    if words < 8 || letters == 0 {
        return None;
    }
    Some(LatinStats {
        words,
        mean_len: chars as f64 / words as f64,
        vowel_ratio: vowels as f64 / letters as f64,
    })
}

/// Normalises a page's text: no `\r`, no control characters, no trailing spaces, at most one
/// blank line in a row, no blank lines at either end.
fn clean_page(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len().min(MAX_PAGE_BYTES));
    let mut blank_run = 0;
    for line in raw.split(['\n', '\r']) {
        let line: String = line
            .chars()
            .map(|c| if c == '\t' { ' ' } else { c })
            .filter(|c| !c.is_control())
            .collect();
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank_run += 1;
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
            if blank_run > 0 {
                out.push('\n');
            }
        }
        blank_run = 0;
        out.push_str(line);
        if out.len() > MAX_PAGE_BYTES {
            let mut cut = MAX_PAGE_BYTES;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
            break;
        }
    }
    out
}

/// True when the page's resources hold an image XObject.
fn page_has_image(doc: &Document, page: ObjectId) -> bool {
    let Ok((own, inherited)) = doc.get_page_resources(page) else {
        return false;
    };
    let mut dicts: Vec<&lopdf::Dictionary> = own.into_iter().collect();
    dicts.extend(
        inherited
            .iter()
            .filter_map(|id| doc.get_dictionary(*id).ok()),
    );
    dicts.iter().any(|res| {
        let Ok(xobjects) = res.get(b"XObject").and_then(|o| deref_dict(doc, o)) else {
            return false;
        };
        xobjects.iter().any(|(_, v)| {
            let stream = match v {
                Object::Reference(id) => doc.get_object(*id).and_then(Object::as_stream).ok(),
                Object::Stream(s) => Some(s),
                _ => None,
            };
            stream.is_some_and(|s| {
                s.dict
                    .get(b"Subtype")
                    .and_then(Object::as_name)
                    .is_ok_and(|n| n == b"Image")
            })
        })
    })
}

fn deref_dict<'a>(doc: &'a Document, o: &'a Object) -> lopdf::Result<&'a lopdf::Dictionary> {
    match o {
        Object::Reference(id) => doc.get_dictionary(*id),
        other => other.as_dict(),
    }
}

/// Bookmarks → outline nodes starting at their page's marker line.
///
/// The tree (titles, nesting, order) is walked here, so that bookmarks without a page (links)
/// are kept; pages come from `get_toc`, by title. A bookmark without a page starts where the
/// one before it does.
fn outline(doc: &Document, marker_line: &BTreeMap<u32, u32>, total: u32) -> Vec<OutlineNode> {
    let pages: std::collections::HashMap<String, u32> =
        match catch_unwind(AssertUnwindSafe(|| doc.get_toc())) {
            Ok(Ok(toc)) => toc
                .toc
                .iter()
                .filter_map(|t| Some((one_line(&t.title), u32::try_from(t.page).ok()?)))
                .collect(),
            _ => Default::default(),
        };
    let mut items = Vec::new();
    let first = doc
        .catalog()
        .ok()
        .and_then(|c| c.get(b"Outlines").ok())
        .and_then(|o| deref_dict(doc, o).ok())
        .and_then(|o| o.get(b"First").ok())
        .and_then(|o| o.as_reference().ok());
    let mut seen = std::collections::HashSet::new();
    if let Some(first) = first {
        walk_outline(doc, first, 1, &mut seen, &mut items);
    }
    let mut headings = Vec::with_capacity(items.len());
    let mut last_line = 1;
    for (level, title) in items {
        let line = pages
            .get(&title)
            .and_then(|p| marker_line.get(p))
            .copied()
            .unwrap_or(last_line);
        last_line = line;
        headings.push(Heading { level, title, line });
    }
    OutlineNode::from_headings(&headings, total)
}

fn walk_outline(
    doc: &Document,
    first: ObjectId,
    level: u8,
    seen: &mut std::collections::HashSet<ObjectId>,
    out: &mut Vec<(u8, String)>,
) {
    let mut next = Some(first);
    while let Some(id) = next {
        if !seen.insert(id) || seen.len() > 10_000 {
            return;
        }
        let Ok(item) = doc.get_dictionary(id) else {
            return;
        };
        let title = item
            .get(b"Title")
            .ok()
            .map(|t| match t {
                Object::Reference(r) => doc.get_object(*r).unwrap_or(t),
                t => t,
            })
            .and_then(|t| lopdf::decode_text_string(t).ok())
            .map(|t| one_line(&t))
            .unwrap_or_default();
        if !title.is_empty() {
            out.push((level, title.chars().take(300).collect()));
        }
        if level < 32
            && let Ok(child) = item.get(b"First").and_then(Object::as_reference)
        {
            walk_outline(doc, child, level + 1, seen, out);
        }
        next = item.get(b"Next").and_then(Object::as_reference).ok();
    }
}

fn one_line(s: &str) -> String {
    s.split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `/Title` of the Info dictionary, when it says something.
fn info_title(doc: &Document) -> Option<String> {
    let info = doc.trailer.get(b"Info").ok()?;
    let info = deref_dict(doc, info).ok()?;
    let title = info.get(b"Title").ok()?;
    let title = match title {
        Object::Reference(id) => doc.get_object(*id).ok()?,
        t => t,
    };
    let title = lopdf::decode_text_string(title).ok()?;
    let mut title = one_line(&title);
    for prefix in ["Microsoft Word - ", "Microsoft PowerPoint - "] {
        if let Some(rest) = title.strip_prefix(prefix) {
            title = rest.to_string();
        }
    }
    let lower = title.to_ascii_lowercase();
    let junk = title.chars().filter(|c| c.is_alphanumeric()).count() < 2
        || ["untitled", "title", "document", "untitled document"].contains(&lower.as_str())
        || [
            ".pdf", ".doc", ".docx", ".dvi", ".tex", ".indd", ".ps", ".qxd", ".rtf",
        ]
        .iter()
        .any(|ext| lower.ends_with(ext))
        || title.contains('\u{FFFD}');
    (!junk).then(|| title.chars().take(300).collect())
}

/// A scan: each page whose text layer has under 16 characters is rasterised and OCR'd, page by
/// page, its text following its `--- page N ---` marker (after what little text layer it has).
///
/// Without OCR the file is `ocr_unavailable` (a later sync with OCR redoes it); when OCR reads
/// every page and finds nothing, `ocr_found_nothing` (`no_text_layer` when pages failed). A page that fails or runs past the time limit, and the
/// pages after [`ocr::OcrOptions::pdf_budget`] is spent, keep their marker only.
fn ocr_scanned(
    doc: &Document,
    bytes: &[u8],
    pages: &BTreeMap<u32, ObjectId>,
    options: &ExtractOptions,
    scan: String,
) -> Result<Extracted, SkipReason> {
    if let Err(why) = ocr::ready(&options.ocr) {
        return Err(SkipReason::new(
            SkipReason::OCR_UNAVAILABLE,
            format!("{scan}; {}", why.detail),
        ));
    }
    if !ocr::status().pdf_rasterizer {
        return Err(SkipReason::new(
            SkipReason::OCR_UNAVAILABLE,
            format!(
                "{scan}; pdftoppm (poppler-utils) is not installed to render its pages for OCR"
            ),
        ));
    }
    let started = std::time::Instant::now();
    let mut paged = PagedText::default();
    let mut ocr_chars = 0usize;
    let mut problems: Vec<String> = Vec::new();
    for (i, &num) in pages.keys().enumerate() {
        if !paged.open_page(i, num) {
            continue;
        }
        let mut page = clean_page(&page_text(doc, num));
        if non_space(&page) < 16 {
            if options
                .ocr
                .pdf_budget
                .is_some_and(|b| started.elapsed() >= b)
            {
                problems.push(format!("page {num}: over the OCR time budget"));
            } else {
                match ocr::rasterize_pdf_page(bytes, num, options.ocr.timeout)
                    .and_then(|png| ocr::recognize(&png, &options.ocr))
                {
                    Ok(t) => {
                        let t = clean_page(&t);
                        ocr_chars += non_space(&t);
                        if !t.is_empty() {
                            if !page.is_empty() {
                                page.push('\n');
                            }
                            page.push_str(&t);
                        }
                    }
                    Err(e) => problems.push(format!("page {num}: {e}")),
                }
            }
        }
        paged.push_page(&page);
    }
    if !problems.is_empty() {
        tracing::warn!(pages = problems.len(), first = %problems[0], "OCR skipped pages of a scanned PDF");
    }
    if ocr_chars == 0 {
        let why = problems
            .first()
            .map(|p| format!(" ({p})"))
            .unwrap_or_default();
        // OCR that ran on every page and read nothing says so; pages it could not read leave
        // the question open.
        let code = if problems.is_empty() {
            SkipReason::OCR_FOUND_NOTHING
        } else {
            SkipReason::NO_TEXT_LAYER
        };
        return Err(SkipReason::new(
            code,
            format!("{scan}; OCR found no text on its pages either{why}"),
        ));
    }
    Ok(paged.finish(doc))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extract_pdf(bytes: &[u8]) -> Result<Extracted, SkipReason> {
        extract_pdf_with(bytes, &ExtractOptions::default())
    }

    #[test]
    fn not_a_pdf_is_corrupt() {
        let err = extract_pdf(b"hello").unwrap_err();
        assert_eq!(err.code, SkipReason::CORRUPT);
        let err = extract_pdf(b"%PDF-1.4\n garbage").unwrap_err();
        assert_eq!(err.code, SkipReason::CORRUPT);
    }

    #[test]
    fn cleans_pages() {
        assert_eq!(clean_page("\n\n a \r\n\n\n\nb\u{0}c  \n\n"), " a\n\nbc");
    }

    #[test]
    fn word_heuristics() {
        let split = "Exa mp le do cumen t B ea utiful is b etter tha n ugly";
        assert!(!latin_stats(split).unwrap().plausible());
        let good = "Example document Beautiful is better than ugly and more words here";
        assert!(latin_stats(good).unwrap().plausible());
        let shifted = "7KLV 3') YHUVLRQ RI )UHH &XOWXUH LV OLFHQVHG XQGHU D &UHDWLYH";
        assert!(!latin_stats(shifted).is_some_and(|s| s.plausible()));
    }
}
