//! Which extractor reads a file: its extension, checked against its first bytes.
//!
//! The extension decides, unless the bytes carry the signature of a document format that the
//! extension's extractor does not read (a PDF named `.docx`): then the signature decides. A
//! file without an extension is recognised by its signature alone, and otherwise read as text
//! when its first bytes are UTF-8 text (HTML when they open an HTML document). An unknown
//! extension with a document signature (PDF, OOXML, EPUB, Word 97–2003, RTF) is read as that
//! document; images and text need a known extension or none.
//!
//! There is no table of extensions here: the extractors' own
//! [`crate::Extractor::extensions`] in [`crate::formats::FORMATS`] are the one table.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use linkly_core::{DocType, SkipReason};

use crate::Extractor;
use crate::formats::FORMATS;

/// What the first bytes of a file say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sniffed {
    Pdf,
    /// A zip package whose parts name a format: the extension of that format's extractor
    /// (`docx`, `pptx`, `xlsx`, `epub`), or `None` when the head does not show which.
    Zip(Option<&'static str>),
    /// An OLE2 compound file (Word, Excel or PowerPoint 97–2003, or encrypted OOXML).
    Ole,
    Rtf,
    Image,
}

impl Sniffed {
    /// Document formats count even under an unknown extension; images do not (caches and
    /// thumbnails under odd names would all go to OCR).
    fn is_document(self) -> bool {
        !matches!(self, Sniffed::Image)
    }

    /// The extractor that reads this content when the extension's does not.
    fn extractor(self) -> Option<&'static dyn Extractor> {
        by_extension(match self {
            Sniffed::Pdf => "pdf",
            // A package whose parts the head does not show: the extraction, which sees the
            // whole file, tells the OOXML formats apart.
            Sniffed::Zip(kind) => kind.unwrap_or("docx"),
            Sniffed::Ole => "doc",
            Sniffed::Rtf => "rtf",
            Sniffed::Image => "png",
        })
    }

    /// True when `e` (chosen by the extension) reads this content itself.
    fn read_by(self, e: &dyn Extractor) -> bool {
        let is = |ext: &str| e.extensions().contains(&ext);
        let zip_family = is("docx") || is("pptx") || is("xlsx") || is("xls") || is("epub");
        match self {
            Sniffed::Pdf => is("pdf"),
            Sniffed::Zip(Some("xlsx")) => is("xlsx") || is("xlsm"),
            Sniffed::Zip(Some(kind)) => is(kind),
            Sniffed::Zip(None) => zip_family,
            // Encrypted OOXML files are OLE containers; their extractors say `encrypted`.
            Sniffed::Ole => zip_family || is("doc"),
            Sniffed::Rtf => is("rtf") || is("doc"),
            Sniffed::Image => is("png"),
        }
    }
}

/// The extractor registered for an extension (lower case, no dot).
fn by_extension(ext: &str) -> Option<&'static dyn Extractor> {
    FORMATS
        .iter()
        .copied()
        .find(|e| e.extensions().contains(&ext))
}

/// The extractor for a file, from its path and its first bytes (the first 4 KiB are plenty; the
/// whole file is fine): see the module doc. `None`: no extractor reads it (the file is indexed
/// by name, `unsupported_format`).
///
/// Given only a head, a zip package whose part names lie further on is answered with the DOCX
/// extractor as the stand-in for its family; extraction, which reads the whole file, decides.
pub fn detect(path: &Path, head: &[u8]) -> Option<&'static dyn Extractor> {
    decide(crate::extractor_for(path), path, head).map(|(e, _)| e)
}

/// [`detect`] given the extension's extractor (`by_ext`, looked up once by the caller); also
/// says what the content showed.
fn decide(
    by_ext: Option<&'static dyn Extractor>,
    path: &Path,
    head: &[u8],
) -> Option<(&'static dyn Extractor, Option<Sniffed>)> {
    let sniffed = sniff(head);
    let extractor = match (by_ext, sniffed) {
        (Some(e), Some(s)) if !s.read_by(e) => {
            tracing::debug!(path = %path.display(), content = ?s, "extension and content disagree: content wins");
            s.extractor().or(Some(e))
        }
        (Some(e), _) => Some(e),
        (None, Some(s)) if s.is_document() || path.extension().is_none() => s.extractor(),
        (None, None) if path.extension().is_none() => text_kind(head),
        (None, _) => None,
    }?;
    Some((extractor, sniffed))
}

/// How many bytes [`Detected::at_walk`] reads of a file without an extension to recognise it.
const WALK_HEAD: u64 = 4096;

/// What a file is — the extractor that reads it, its type and, when they were read to tell,
/// its first bytes — decided once, where a sync first meets the file, and carried to its
/// extraction ([`crate::extract_detected`]), so the head is read once, the type decided once
/// and the size cap checked once.
///
/// The walk decides by the name when it has an extension (no file is opened for it) and by the
/// first bytes when it has none. What the walk could not see is completed, not decided again,
/// when the bytes are read: a name-decided file's content is checked against its extension
/// (a PDF named `.docx` is read as PDF), and a zip package whose part names lie past the head
/// is told apart by the whole file.
#[derive(Clone)]
pub struct Detected {
    /// The extractor; `None` for a type indexed by name only ([`crate::NAME_ONLY`]).
    extractor: Option<&'static dyn Extractor>,
    doc_type: DocType,
    /// The first bytes, when the walk read them (a file without an extension).
    head: Option<Vec<u8>>,
    /// True while the content may still change the extractor: decided by the name alone, or
    /// by a head that shows a zip package.
    open: bool,
}

impl std::fmt::Debug for Detected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Detected")
            .field("extractor", &self.extractor.map(|e| e.extensions()[0]))
            .field("doc_type", &self.doc_type)
            .field("head", &self.head.as_ref().map(Vec::len))
            .field("open", &self.open)
            .finish()
    }
}

impl Detected {
    /// What a walk learns of the file at `path`: by its extension ([`crate::doc_type_for`]),
    /// or, without one, by its first 4 KiB (read here, and kept). `None`: Linkly does not
    /// index it (an unknown extension, unreadable, or content no extractor reads).
    pub fn at_walk(path: &Path) -> Option<Detected> {
        if path.extension().is_some() {
            let doc_type = crate::doc_type_for(path)?;
            return Some(Detected {
                extractor: crate::extractor_for(path),
                doc_type,
                head: None,
                open: true,
            });
        }
        let mut head = Vec::with_capacity(WALK_HEAD as usize);
        std::fs::File::open(path)
            .ok()?
            .take(WALK_HEAD)
            .read_to_end(&mut head)
            .ok()?;
        let (extractor, sniffed) = decide(None, path, &head)?;
        Some(Detected {
            extractor: Some(extractor),
            doc_type: extractor.doc_type(),
            head: Some(head),
            open: matches!(sniffed, Some(Sniffed::Zip(_))),
        })
    }

    /// The document's type (by name, or by content for a file without an extension): the type
    /// of its record when it is skipped.
    pub fn doc_type(&self) -> DocType {
        self.doc_type
    }

    /// True when its extractor is slow (OCR, transcription): a sync extracts it after the rest.
    pub fn slow(&self) -> bool {
        self.extractor.is_some_and(|e| e.slow())
    }

    /// Whether a file of `len` bytes is to be read at all: no extractor (`unsupported_format`)
    /// or over the extractor's cap (`too_large`) are told before a byte is read.
    pub fn admit(&self, path: &Path, len: u64) -> Result<(), SkipReason> {
        match self.extractor {
            None => Err(crate::unsupported(path)),
            Some(e) if len > e.max_bytes() => Err(crate::too_large(e, len)),
            Some(_) => Ok(()),
        }
    }

    /// The file's bytes: the head the walk read, then the rest, read now (a file rewritten
    /// since is read as the walk saw its start; its new modification time has the next sync
    /// read it again).
    pub fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let Some(head) = &self.head else {
            return fs_err::read(path);
        };
        let mut file = fs_err::File::open(path)?;
        file.seek(SeekFrom::Start(head.len() as u64))?;
        let mut bytes = head.clone();
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// The extractor of the whole file `bytes`: the walk's, unless the content completes the
    /// decision (see the type's doc); an empty file or one over the cap of an extractor the
    /// content chose is skipped.
    pub(crate) fn settle(
        &self,
        path: &Path,
        bytes: &[u8],
    ) -> Result<&'static dyn Extractor, SkipReason> {
        let Some(extractor) = self.extractor else {
            return Err(crate::unsupported(path));
        };
        if bytes.is_empty() {
            return Err(SkipReason::new(SkipReason::EMPTY, "the file has no bytes"));
        }
        if !self.open {
            return Ok(extractor);
        }
        let by_ext = self.head.is_none().then_some(extractor);
        let settled = decide(by_ext, path, bytes).map_or(extractor, |(e, _)| e);
        if !std::ptr::addr_eq(settled, extractor) && bytes.len() as u64 > settled.max_bytes() {
            return Err(crate::too_large(settled, bytes.len() as u64));
        }
        Ok(settled)
    }
}

/// The format a file's signature shows, if any.
fn sniff(b: &[u8]) -> Option<Sniffed> {
    if b.starts_with(b"%PDF-") {
        return Some(Sniffed::Pdf);
    }
    if b.starts_with(b"PK\x03\x04") {
        return Some(Sniffed::Zip(zip_kind(b)));
    }
    if b.starts_with(b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1") {
        return Some(Sniffed::Ole);
    }
    if b.starts_with(b"{\\rtf") {
        return Some(Sniffed::Rtf);
    }
    let bmp = b.len() >= 18
        && b.starts_with(b"BM")
        && b[6..10] == [0, 0, 0, 0]
        && matches!(
            u32::from_le_bytes([b[14], b[15], b[16], b[17]]),
            12 | 40 | 52 | 56 | 64 | 108 | 124
        );
    let image = b.starts_with(b"\x89PNG\r\n\x1A\n")
        || b.starts_with(b"\xFF\xD8\xFF")
        || b.starts_with(b"GIF87a")
        || b.starts_with(b"GIF89a")
        || b.starts_with(b"II*\0")
        || b.starts_with(b"MM\0*")
        || (b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WEBP")
        || bmp;
    image.then_some(Sniffed::Image)
}

/// The format a zip package's part names show: EPUB by its `mimetype` entry, OOXML by its
/// `word/`, `ppt/` or `xl/` parts. Searched in the first and last 64 KiB (the local headers and
/// the central directory).
fn zip_kind(b: &[u8]) -> Option<&'static str> {
    if b.get(30..58) == Some(b"mimetypeapplication/epub+zip") {
        return Some("epub");
    }
    const SPAN: usize = 64 * 1024;
    let head = &b[..b.len().min(SPAN)];
    let tail = &b[b.len().saturating_sub(SPAN)..];
    let has = |needle: &[u8]| {
        [head, tail]
            .iter()
            .any(|part| memchr::memmem::find(part, needle).is_some())
    };
    if has(b"word/document") {
        Some("docx")
    } else if has(b"ppt/presentation") || has(b"ppt/slides/") {
        Some("pptx")
    } else if has(b"xl/workbook") || has(b"xl/worksheets/") {
        Some("xlsx")
    } else if has(b"META-INF/container.xml") {
        Some("epub")
    } else {
        None
    }
}

/// A file without an extension whose head is text: HTML when it opens an HTML document, else
/// plain text. Text here is UTF-8 (a character cut at the end of the head is fine) or UTF-16
/// with a BOM, without NUL bytes and with hardly any control characters.
fn text_kind(head: &[u8]) -> Option<&'static dyn Extractor> {
    if head.starts_with(b"\xFF\xFE") || head.starts_with(b"\xFE\xFF") {
        return by_extension("txt");
    }
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
        Err(_) => return None,
    };
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    if text.trim().is_empty() {
        return None;
    }
    let controls = text
        .chars()
        .filter(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t' | '\u{C}' | '\u{1B}'))
        .count();
    if controls * 100 > text.chars().count() {
        return None;
    }
    let start: String = text
        .trim_start()
        .chars()
        .take(15)
        .collect::<String>()
        .to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        by_extension("html")
    } else {
        by_extension("txt")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(path: &str, head: &[u8]) -> Option<&'static str> {
        detect(Path::new(path), head).map(|e| e.extensions()[0])
    }

    #[test]
    fn extension_first_then_signature() {
        assert_eq!(kind("a.pdf", b"%PDF-1.7"), Some("pdf"));
        assert_eq!(kind("a.docx", b"%PDF-1.7"), Some("pdf"));
        assert_eq!(kind("a.txt", b"%PDF-1.7"), Some("pdf"));
        assert_eq!(kind("a.md", b"BMW and Audi"), Some("md"));
        assert_eq!(kind("a.doc", b"{\\rtf1 x}"), Some("doc"));
        assert_eq!(
            kind("a.xls", b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1"),
            Some("xls")
        );
        assert_eq!(
            kind("a.docx", b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1"),
            Some("docx")
        );
        assert_eq!(kind("a.jpg", b"\x89PNG\r\n\x1A\n"), Some("png"));
        // A DOCX named .xlsx is read as DOCX.
        let mut docx = b"PK\x03\x04".to_vec();
        docx.extend_from_slice(b"....[Content_Types].xml....word/document.xml");
        assert_eq!(kind("a.xlsx", &docx), Some("docx"));
        assert_eq!(kind("a.docx", b"PK\x03\x04 unknown parts"), Some("docx"));
    }

    #[test]
    fn no_extension_by_content() {
        let mut docx = b"PK\x03\x04".to_vec();
        docx.extend_from_slice(b"....word/document.xml");
        assert_eq!(kind("report", &docx), Some("docx"));
        let mut epub = b"PK\x03\x04".to_vec();
        epub.extend_from_slice(&[0; 26]);
        epub.extend_from_slice(b"mimetypeapplication/epub+zip");
        assert_eq!(kind("book", &epub), Some("epub"));
        assert_eq!(kind("scan", b"\xFF\xD8\xFF\xE0"), Some("png"));
        assert_eq!(
            kind("old", b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1"),
            Some("doc")
        );
        assert_eq!(kind("README", "Read me: café\n".as_bytes()), Some("txt"));
        assert_eq!(kind("page", b"  <!DOCTYPE html><p>x"), Some("html"));
        // A character cut by the end of the head is still text.
        assert_eq!(kind("cut", &"日本語".as_bytes()[..7]), Some("txt"));
        assert_eq!(kind("blob", b"\x00\x01\x02\x03binary"), None);
        assert_eq!(kind("blank", b"   \n"), None);
        // Unknown extensions: documents yes, images and text no.
        assert_eq!(kind("a.bak", b"%PDF-1.4"), Some("pdf"));
        assert_eq!(kind("a.cache", b"\x89PNG\r\n\x1A\n"), None);
        assert_eq!(kind("a.json", b"{\"a\": 1}"), None);
    }
}
