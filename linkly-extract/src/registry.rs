use std::io::Read;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use linkly_core::{DocType, OutlineNode, SkipReason};

use crate::ExtractOptions;
use crate::detect::detect;
use crate::formats::FORMATS;
use crate::normalize;

/// What an extractor reads: the file's path (for its name, extension and folder) and its bytes.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The file's path.
    pub path: &'a Path,
    /// The whole file.
    pub bytes: &'a [u8],
}

/// The text of a document and its structure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    /// The document's type.
    pub doc_type: DocType,
    /// The extracted text: lines separated by `\n`, no `\r`, no trailing newline. Line 1 is the
    /// first line; `read`, `grep` and the outline's ranges all count the same lines.
    pub text: String,
    /// The document's title, when it declares one (HTML `<title>`, first `#` heading, ...).
    pub title: Option<String>,
    /// The outline, with inclusive 1-based line ranges into `text`. Empty when there is none.
    pub outline: Vec<OutlineNode>,
    /// The character encoding the bytes were decoded from, when that was a question
    /// (`UTF-8`, `Shift_JIS`, ...).
    pub encoding: Option<&'static str>,
}

impl Extracted {
    /// An extraction with text only.
    pub fn text(doc_type: DocType, text: String) -> Extracted {
        Extracted {
            doc_type,
            text,
            title: None,
            outline: Vec::new(),
            encoding: None,
        }
    }

    /// The number of lines of `text` (0 for empty text).
    pub fn total_lines(&self) -> u32 {
        if self.text.is_empty() {
            0
        } else {
            self.text.split('\n').count() as u32
        }
    }

    /// Normalises line ends to `\n`, drops trailing blank lines and normalises the characters
    /// that break matching ([`crate::normalize`]: ligatures, soft hyphens, odd spaces; in PDF
    /// text, words hyphenated across line ends), in the text, the title and the outline alike.
    fn normalise(mut self) -> Extracted {
        if self.text.contains('\r') {
            self.text = self.text.replace("\r\n", "\n").replace('\r', "\n");
        }
        let mut text = std::mem::take(&mut self.text);
        if self.doc_type == DocType::Pdf {
            text = normalize::join_hyphenated(text);
        }
        self.text = normalize::normalize_chars(text);
        self.title = self.title.map(normalize::normalize_chars);
        normalize_outline(&mut self.outline);
        let trimmed_len = self.text.trim_end_matches(['\n', ' ', '\t']).len();
        self.text.truncate(trimmed_len);
        let total = self.total_lines();
        clamp_outline(&mut self.outline, total);
        self
    }
}

fn normalize_outline(nodes: &mut [OutlineNode]) {
    for n in nodes {
        n.title = normalize::normalize_chars(std::mem::take(&mut n.title));
        for d in &mut n.detail {
            *d = normalize::normalize_chars(std::mem::take(d));
        }
        normalize_outline(&mut n.children);
    }
}

fn clamp_outline(nodes: &mut [OutlineNode], total: u32) {
    let total = total.max(1);
    for n in nodes {
        n.start_line = n.start_line.clamp(1, total);
        n.end_line = n.end_line.clamp(n.start_line, total);
        clamp_outline(&mut n.children, total);
    }
}

/// One document format: a module under `formats/` and a line in [`FORMATS`].
pub trait Extractor: Send + Sync {
    /// The doc type this format produces.
    fn doc_type(&self) -> DocType;
    /// The file extensions (lower case, no dot) this extractor reads.
    fn extensions(&self) -> &'static [&'static str];
    /// Files larger than this are skipped as `too_large` without being read.
    fn max_bytes(&self) -> u64 {
        64 * 1024 * 1024
    }
    /// Extracts the text and outline, or says why not.
    fn extract(&self, input: &Input<'_>) -> Result<Extracted, SkipReason>;
    /// True when the parser may abort, hang or run out of memory on bad input, so that
    /// [`crate::extract_isolated`] runs it in a worker process when one is configured.
    fn isolate(&self) -> bool {
        false
    }
    /// The worker's time limit for this input, when the format sets its own (media: in
    /// proportion to the length of sound the file can hold); `None` keeps the sandbox's.
    fn worker_timeout(&self, input: &Input<'_>) -> Option<std::time::Duration> {
        let _ = input;
        None
    }
    /// True when extraction is slow (OCR): the indexer extracts such files after all the others,
    /// in small batches, so that keyword search of everything else never waits for them.
    fn slow(&self) -> bool {
        false
    }
    /// Extracts with options ([`ExtractOptions`]: OCR languages, ...). Formats without options
    /// use [`Extractor::extract`], the default.
    fn extract_with(
        &self,
        input: &Input<'_>,
        options: &ExtractOptions,
    ) -> Result<Extracted, SkipReason> {
        let _ = options;
        self.extract(input)
    }
}

/// The extractor registered for a path's extension, if any.
pub fn extractor_for(path: &Path) -> Option<&'static dyn Extractor> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    FORMATS
        .iter()
        .copied()
        .find(|e| e.extensions().contains(&ext.as_str()))
}

/// Extensions (lower case, no dot) of files indexed by name only, with their type: no
/// extractor reads them, but `list` and `find_paths` show them (with the skip reason
/// `unsupported`). Empty since audio and video are transcribed (`formats::Audio`,
/// `formats::Video`). Together with [`FORMATS`]' extensions, the one table of what Linkly indexes.
pub const NAME_ONLY: &[(&str, DocType)] = &[];

/// The type a file's extension (any case) stands for: its extractor's, or audio or video
/// indexed by name ([`NAME_ONLY`]); `None` for an extension Linkly does not index. A file
/// without an extension is recognised by its content instead ([`detect`](crate::detect)).
pub fn doc_type_for(path: &Path) -> Option<DocType> {
    if let Some(e) = extractor_for(path) {
        return Some(e.doc_type());
    }
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    NAME_ONLY.iter().find(|(e, _)| *e == ext).map(|(_, t)| *t)
}

/// Reads and extracts one file. Never panics and never returns garbage: an empty, huge,
/// corrupt, mislabelled or unsupported file comes back as a [`SkipReason`].
pub fn extract_path(path: &Path) -> Result<Extracted, SkipReason> {
    extract_path_with(path, &ExtractOptions::default())
}

/// [`extract_path`] with options.
pub fn extract_path_with(path: &Path, options: &ExtractOptions) -> Result<Extracted, SkipReason> {
    let cannot_read =
        |e: std::io::Error| SkipReason::new(SkipReason::CORRUPT, format!("cannot read file: {e}"));
    let mut file = fs_err::File::open(path).map_err(cannot_read)?;
    let len = file.metadata().map_err(cannot_read)?.len();
    if len == 0 {
        return Err(SkipReason::new(SkipReason::EMPTY, "the file has no bytes"));
    }
    let mut head = Vec::with_capacity(HEAD as usize);
    file.by_ref()
        .take(HEAD)
        .read_to_end(&mut head)
        .map_err(cannot_read)?;
    let Some(extractor) = detect(path, &head) else {
        return Err(unsupported(path));
    };
    if len > extractor.max_bytes() {
        return Err(too_large(extractor, len));
    }
    let mut bytes = head;
    file.read_to_end(&mut bytes).map_err(cannot_read)?;
    extract_bytes(checked_extractor(path, &bytes)?, path, &bytes, options)
}

/// How much of a file [`extract_path`] reads to recognise it before reading the rest.
const HEAD: u64 = 64 * 1024;

/// Extracts a file whose bytes the caller has already read (to hash them, say), with the same
/// checks as [`extract_path`]: unsupported extension, empty, over the cap, panics.
pub fn extract_loaded(path: &Path, bytes: &[u8]) -> Result<Extracted, SkipReason> {
    extract_loaded_with(path, bytes, &ExtractOptions::default())
}

/// [`extract_loaded`] with options.
pub fn extract_loaded_with(
    path: &Path,
    bytes: &[u8],
    options: &ExtractOptions,
) -> Result<Extracted, SkipReason> {
    extract_bytes(checked_extractor(path, bytes)?, path, bytes, options)
}

/// The extractor for `path` and its bytes ([`detect`]: the extension, checked against the
/// content), once the bytes pass the checks every extraction makes first: an extractor reads
/// them (`unsupported_format`), not empty (`empty`), not over the format's cap (`too_large`).
pub(crate) fn checked_extractor(
    path: &Path,
    bytes: &[u8],
) -> Result<&'static dyn Extractor, SkipReason> {
    let Some(extractor) = detect(path, bytes) else {
        return Err(unsupported(path));
    };
    if bytes.is_empty() {
        return Err(SkipReason::new(SkipReason::EMPTY, "the file has no bytes"));
    }
    if bytes.len() as u64 > extractor.max_bytes() {
        return Err(too_large(extractor, bytes.len() as u64));
    }
    Ok(extractor)
}

/// The skip reason of a file no extractor reads.
pub fn unsupported(path: &Path) -> SkipReason {
    let what = path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| format!(".{e} files are not supported by this build"))
        .unwrap_or_else(|| "files without an extension are not supported".into());
    SkipReason::new(SkipReason::UNSUPPORTED, what)
}

/// The skip reason of a file over its format's cap.
pub fn too_large(extractor: &dyn Extractor, len: u64) -> SkipReason {
    SkipReason::new(
        SkipReason::TOO_LARGE,
        format!(
            "{len} bytes is over the {} MiB cap for {} files",
            extractor.max_bytes() / (1024 * 1024),
            extractor.doc_type()
        ),
    )
}

/// The most text one file may give (in-process and in a worker alike); more is `too_large`.
pub const MAX_TEXT_BYTES: usize = 256 * 1024 * 1024;

/// Text, or the reason there is none: an extraction with nothing but whitespace is `empty`,
/// one over [`MAX_TEXT_BYTES`] is `too_large`. Every file gets text or a reason, never silence.
fn has_text(e: Extracted) -> Result<Extracted, SkipReason> {
    if e.text.len() > MAX_TEXT_BYTES {
        return Err(SkipReason::new(
            SkipReason::TOO_LARGE,
            format!(
                "its text is {} MiB, over the {} MiB cap",
                e.text.len() / (1024 * 1024),
                MAX_TEXT_BYTES / (1024 * 1024)
            ),
        ));
    }
    if e.text.trim().is_empty() {
        return Err(SkipReason::new(
            SkipReason::EMPTY,
            format!("the {} file holds no text", e.doc_type),
        ));
    }
    Ok(e)
}

/// Extracts from bytes already in memory with a given extractor, catching panics.
pub(crate) fn extract_bytes(
    extractor: &dyn Extractor,
    path: &Path,
    bytes: &[u8],
    options: &ExtractOptions,
) -> Result<Extracted, SkipReason> {
    let input = Input { path, bytes };
    match catch_unwind(AssertUnwindSafe(|| extractor.extract_with(&input, options))) {
        Ok(result) => result.map(Extracted::normalise).and_then(has_text),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            tracing::warn!(path = %path.display(), %msg, "extractor panicked");
            Err(SkipReason::new(
                SkipReason::EXTRACTOR_FAILED,
                format!("the {} extractor failed: {msg}", extractor.doc_type()),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_types_come_from_the_one_table() {
        let t = |p: &str| doc_type_for(Path::new(p));
        assert_eq!(t("a/notes.MDX"), Some(DocType::Md));
        assert_eq!(t("page.htm"), Some(DocType::Html));
        assert_eq!(t("book.xls"), Some(DocType::Xlsx));
        assert_eq!(t("macro.docm"), Some(DocType::Docx));
        assert_eq!(t("song.FLAC"), Some(DocType::Audio));
        assert_eq!(t("clip.webm"), Some(DocType::Video));
        assert_eq!(t("main.rs"), None);
        assert_eq!(t("README"), None);
        // No extension of the name-only table has an extractor too.
        for (ext, _) in NAME_ONLY {
            assert!(
                extractor_for(Path::new(&format!("x.{ext}"))).is_none(),
                "{ext}"
            );
        }
    }
}
