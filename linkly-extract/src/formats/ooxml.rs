//! Shared plumbing for the zip + XML formats (DOCX, PPTX, XLSX, EPUB): opening the package with
//! zip-bomb and encryption checks, reading parts with a size cap, relationships, and a small
//! pull parser over `quick-xml` that yields local names, attributes and resolved text.

use std::collections::HashMap;
use std::io::{Cursor, Read};

use linkly_core::SkipReason;
use quick_xml::XmlVersion;
use quick_xml::events::{BytesStart, Event};
use quick_xml::reader::Reader;
use zip::ZipArchive;

/// The most a package may inflate to, all entries together.
pub(crate) const MAX_UNPACKED: u64 = 200 * 1024 * 1024;
/// The most one part may inflate to.
pub(crate) const MAX_PART: u64 = 64 * 1024 * 1024;

/// The magic bytes of an OLE2 compound file (CFB).
const CFB_MAGIC: [u8; 8] = [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];

/// An opened zip package.
pub(crate) struct Package<'a> {
    zip: ZipArchive<Cursor<&'a [u8]>>,
    /// Lower-cased entry name → index, for case-insensitive lookups.
    lower: HashMap<String, usize>,
}

/// What an OLE2 container named like an OOXML file is: an encrypted package (the OOXML file was
/// saved with a password) or some other legacy file.
fn cfb_reason(bytes: &[u8], what: &str) -> SkipReason {
    let needle: Vec<u8> = "EncryptionInfo"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    let encrypted = bytes.windows(needle.len()).any(|w| w == needle.as_slice());
    if encrypted {
        SkipReason::new(
            SkipReason::ENCRYPTED,
            format!("the {what} file is password-protected (an encrypted OOXML package)"),
        )
    } else {
        SkipReason::new(
            SkipReason::UNSUPPORTED_VARIANT,
            format!("an OLE2 (legacy Office) file named like a {what} file"),
        )
    }
}

impl<'a> Package<'a> {
    /// Opens a package: an OLE2 container is `encrypted` (or `unsupported_variant`), a broken zip
    /// is `corrupt`, one that inflates past [`MAX_UNPACKED`] is `too_large`.
    pub(crate) fn open(bytes: &'a [u8], what: &str) -> Result<Package<'a>, SkipReason> {
        Package::open_limited(bytes, what, MAX_UNPACKED)
    }

    /// [`Package::open`] with a given cap on the inflated size.
    pub(crate) fn open_limited(
        bytes: &'a [u8],
        what: &str,
        max_unpacked: u64,
    ) -> Result<Package<'a>, SkipReason> {
        if bytes.starts_with(&CFB_MAGIC) {
            return Err(cfb_reason(bytes, what));
        }
        let mut zip = ZipArchive::new(Cursor::new(bytes)).map_err(|e| {
            SkipReason::new(
                SkipReason::CORRUPT,
                format!("not a readable {what} package (zip): {e}"),
            )
        })?;
        let mut total: u64 = 0;
        let mut lower = HashMap::new();
        for i in 0..zip.len() {
            let Ok(entry) = zip.by_index_raw(i) else {
                continue;
            };
            total = total.saturating_add(entry.size());
            if let Ok(name) = entry.name() {
                lower.entry(name.to_lowercase()).or_insert(i);
            }
        }
        if total > max_unpacked {
            return Err(SkipReason::new(
                SkipReason::TOO_LARGE,
                format!(
                    "the {what} package inflates to {total} bytes, over the {} MiB cap",
                    max_unpacked / (1024 * 1024)
                ),
            ));
        }
        Ok(Package { zip, lower })
    }

    /// The entry names, in archive order.
    pub(crate) fn names(&self) -> Vec<String> {
        self.zip
            .file_names()
            .filter_map(Result::ok)
            .map(|n| n.into_owned())
            .collect()
    }

    /// True when the package has a part of that name (case-insensitive).
    pub(crate) fn has(&self, name: &str) -> bool {
        self.index(name).is_some()
    }

    fn index(&self, name: &str) -> Option<usize> {
        let name = name.trim_start_matches('/');
        self.zip
            .index_for_name(name)
            .or_else(|| self.lower.get(&name.to_lowercase()).copied())
    }

    /// The bytes of a part, at most [`MAX_PART`] of them; `None` when missing or unreadable.
    pub(crate) fn read(&mut self, name: &str) -> Option<Vec<u8>> {
        let index = self.index(name)?;
        let entry = self.zip.by_index(index).ok()?;
        let mut out = Vec::new();
        entry.take(MAX_PART).read_to_end(&mut out).ok()?;
        Some(out)
    }

    /// A part decoded to text (UTF-8, or UTF-16 with a BOM); `None` when missing.
    pub(crate) fn read_text(&mut self, name: &str) -> Option<String> {
        self.read(name).map(|b| xml_text(&b))
    }

    /// The relationships of a part: id → (type, resolved target). External targets are kept
    /// as written.
    pub(crate) fn rels(&mut self, part: &str) -> HashMap<String, Rel> {
        let (dir, file) = split_dir(part);
        let rels_name = if dir.is_empty() {
            format!("_rels/{file}.rels")
        } else {
            format!("{dir}/_rels/{file}.rels")
        };
        let mut out = HashMap::new();
        let Some(xml) = self.read_text(&rels_name) else {
            return out;
        };
        let mut parser = XmlParser::new(&xml);
        while let Some(ev) = parser.next() {
            if let Xml::Start(el) = ev
                && el.name == "Relationship"
            {
                let (Some(id), Some(target)) = (el.attr("Id"), el.attr("Target")) else {
                    continue;
                };
                let external = el.attr("TargetMode") == Some("External");
                let target = if external {
                    target.to_string()
                } else {
                    resolve(dir, target)
                };
                out.insert(
                    id.to_string(),
                    Rel {
                        kind: el.attr("Type").unwrap_or_default().to_string(),
                        target,
                    },
                );
            }
        }
        out
    }

    /// The package's main part, as the root relationships name it (`officeDocument`), else
    /// `fallback`, with its text: `corrupt` when it is missing. `what` names it in the reason
    /// ("main document", "presentation").
    pub(crate) fn main_part(
        &mut self,
        fallback: &str,
        what: &str,
    ) -> Result<(String, String), SkipReason> {
        let name = self
            .rels("")
            .into_values()
            .find(|r| r.is("officeDocument"))
            .map(|r| r.target)
            .filter(|t| self.has(t))
            .unwrap_or_else(|| fallback.to_string());
        match self.read_text(&name) {
            Some(text) => Ok((name, text)),
            None => Err(SkipReason::new(
                SkipReason::CORRUPT,
                format!("the package has no {what} part ({name})"),
            )),
        }
    }
}

/// One relationship of a part.
#[derive(Debug, Clone)]
pub(crate) struct Rel {
    /// The relationship type URI.
    pub(crate) kind: String,
    /// The target part's path in the package (no leading `/`).
    pub(crate) target: String,
}

impl Rel {
    /// True when the type URI ends with `/<suffix>` (`officeDocument`, `slide`, `notesSlide`...).
    pub(crate) fn is(&self, suffix: &str) -> bool {
        self.kind
            .rsplit('/')
            .next()
            .is_some_and(|k| k.eq_ignore_ascii_case(suffix))
    }
}

/// `word/document.xml` → (`word`, `document.xml`).
pub(crate) fn split_dir(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", path),
    }
}

/// Resolves a relative target (`../media/a.png`, `/word/x.xml`, `slides/slide1.xml`) against a
/// folder of the package; percent-escapes are decoded.
pub(crate) fn resolve(dir: &str, target: &str) -> String {
    let target = percent_decode(target);
    let mut parts: Vec<&str> = if target.starts_with('/') {
        Vec::new()
    } else {
        dir.split('/').filter(|s| !s.is_empty()).collect()
    };
    for seg in target.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

/// Decodes `%xx` escapes (as UTF-8); invalid escapes are kept.
pub(crate) fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// XML bytes to text: a UTF-8 or UTF-16 BOM is honoured, otherwise UTF-8 (lossy).
pub(crate) fn xml_text(bytes: &[u8]) -> String {
    if let Some((encoding, bom)) = encoding_rs::Encoding::for_bom(bytes) {
        return encoding
            .decode_without_bom_handling(&bytes[bom..])
            .0
            .into_owned();
    }
    if bytes.len() >= 4 && bytes[0] == b'<' && bytes[1] == 0 {
        return encoding_rs::UTF_16LE
            .decode_without_bom_handling(bytes)
            .0
            .into_owned();
    }
    if bytes.len() >= 4 && bytes[0] == 0 && bytes[1] == b'<' {
        return encoding_rs::UTF_16BE
            .decode_without_bom_handling(bytes)
            .0
            .into_owned();
    }
    String::from_utf8_lossy(bytes).into_owned()
}

/// An element start: its local name and attributes (qualified name → value).
#[derive(Debug, Clone, Default)]
pub(crate) struct Element {
    /// The local name (`p` for `w:p`).
    pub(crate) name: String,
    attrs: Vec<(String, String)>,
}

impl Element {
    /// The value of an attribute, by qualified name (`w:val`) or, failing that, by local name.
    pub(crate) fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .or_else(|| {
                let local = name.rsplit(':').next().unwrap_or(name);
                self.attrs
                    .iter()
                    .find(|(k, _)| k.rsplit(':').next() == Some(local))
            })
            .map(|(_, v)| v.as_str())
    }
}

impl Element {
    /// The value of a namespace-prefixed attribute by its local name (`r:id` for `id`), never
    /// an unprefixed one of the same local name.
    pub(crate) fn prefixed_attr(&self, local: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k.split_once(':').is_some_and(|(_, l)| l == local))
            .map(|(_, v)| v.as_str())
    }
}

/// A pull-parser event.
#[derive(Debug, Clone)]
pub(crate) enum Xml {
    /// An element starts (an empty element is a `Start` followed by an `End`).
    Start(Element),
    /// An element ends: its local name.
    End(String),
    /// Character data, entities resolved.
    Text(String),
}

/// A forgiving pull parser: malformed XML ends the stream instead of failing.
pub(crate) struct XmlParser<'a> {
    reader: Reader<&'a [u8]>,
    pending_end: Option<String>,
    done: bool,
    /// Set when the stream ended on an error rather than at the end of the document.
    pub(crate) failed: bool,
}

impl<'a> XmlParser<'a> {
    /// A parser over a document.
    pub(crate) fn new(xml: &'a str) -> XmlParser<'a> {
        let mut reader = Reader::from_str(xml);
        let config = reader.config_mut();
        config.check_end_names = false;
        config.allow_unmatched_ends = true;
        config.allow_dangling_amp = true;
        XmlParser {
            reader,
            pending_end: None,
            done: false,
            failed: false,
        }
    }

    /// The next event, or `None` at the end (or on malformed XML).
    #[allow(clippy::should_implement_trait)]
    pub(crate) fn next(&mut self) -> Option<Xml> {
        if let Some(name) = self.pending_end.take() {
            return Some(Xml::End(name));
        }
        if self.done {
            return None;
        }
        loop {
            let event = match self.reader.read_event() {
                Ok(e) => e,
                Err(_) => {
                    self.done = true;
                    self.failed = true;
                    return None;
                }
            };
            return Some(match event {
                Event::Start(e) => Xml::Start(element(&e)),
                Event::Empty(e) => {
                    let el = element(&e);
                    self.pending_end = Some(el.name.clone());
                    Xml::Start(el)
                }
                Event::End(e) => Xml::End(e.local_name().as_ref().to_string()),
                Event::Text(t) => Xml::Text(t.xml10_content().into_owned()),
                Event::CData(t) => Xml::Text(t.xml10_content().into_owned()),
                Event::GeneralRef(r) => {
                    let text = match r.resolve_char_ref() {
                        Ok(Some(c)) => c.to_string(),
                        Ok(None) => quick_xml::escape::resolve_xml_entity(&r)
                            .map(str::to_string)
                            .unwrap_or_default(),
                        Err(_) => String::new(),
                    };
                    Xml::Text(text)
                }
                Event::Eof => {
                    self.done = true;
                    return None;
                }
                _ => continue,
            });
        }
    }

    /// Reads the element whose start was just returned up to its end: `start` sees each element
    /// that begins inside it (but those inside one it answered [`Child::Skip`] for), `text`
    /// each piece of text read.
    pub(crate) fn read_inside(
        &mut self,
        mut start: impl FnMut(&Element) -> Child,
        mut text: impl FnMut(&str),
    ) {
        let mut depth = 1usize;
        while let Some(ev) = self.next() {
            match ev {
                Xml::Start(el) => match start(&el) {
                    Child::Enter => depth += 1,
                    Child::Skip => self.skip(),
                },
                Xml::End(_) => {
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                Xml::Text(t) => text(&t),
            }
        }
    }

    /// Skips to the end of the element whose start was just returned.
    pub(crate) fn skip(&mut self) {
        self.read_inside(|_| Child::Enter, |_| {});
    }

    /// The text inside the element whose start was just returned, up to its end.
    pub(crate) fn text_content(&mut self) -> String {
        let mut out = String::new();
        self.read_inside(|_| Child::Enter, |t| out.push_str(t));
        out
    }
}

/// What [`XmlParser::read_inside`] does with an element inside the one it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Child {
    /// Read its contents too.
    Enter,
    /// Pass over its contents.
    Skip,
}

fn element(e: &BytesStart<'_>) -> Element {
    let name = e.local_name().as_ref().to_string();
    let attrs = e
        .attributes()
        .with_checks(false)
        .filter_map(Result::ok)
        .map(|a| {
            let value = a
                .normalized_value(XmlVersion::Implicit1_0)
                .map(|v| v.into_owned())
                .unwrap_or_else(|_| a.value.to_string());
            (a.key.as_ref().to_string(), value)
        })
        .collect();
    Element { name, attrs }
}

/// The `dc:title` of `docProps/core.xml`, whitespace collapsed, if not empty.
pub(crate) fn core_title(pkg: &mut Package<'_>) -> Option<String> {
    let xml = pkg.read_text("docProps/core.xml")?;
    let mut parser = XmlParser::new(&xml);
    while let Some(ev) = parser.next() {
        if let Xml::Start(el) = ev
            && el.name == "title"
        {
            let title = collapse(&parser.text_content());
            return (!title.is_empty()).then_some(title);
        }
    }
    None
}

/// Whitespace runs to one space, trimmed.
pub(crate) fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A table's cells on one line, in reading order, white space collapsed: a table inside a
/// Word cell, or in a slide shape's one-line text.
pub(crate) fn table_on_one_line(rows: &[Vec<String>]) -> String {
    collapse(
        &rows
            .iter()
            .map(|r| r.join(" "))
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// A GitHub-style table: the first row is the header, then a `---` separator, then the rest.
/// Cells have `|` escaped and line breaks turned into spaces; short rows are padded.
pub(crate) fn table_lines(rows: &[Vec<String>]) -> Vec<String> {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    if columns == 0 {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(rows.len() + 1);
    for (i, row) in rows.iter().enumerate() {
        let mut line = String::from("|");
        for c in 0..columns {
            line.push(' ');
            if let Some(cell) = row.get(c) {
                line.push_str(&table_cell(cell));
            }
            line.push_str(" |");
        }
        out.push(line);
        if i == 0 {
            out.push(format!("|{}", " --- |".repeat(columns)));
        }
    }
    out
}

/// A cell on one line, `|` escaped.
pub(crate) fn table_cell(cell: &str) -> String {
    let mut out = String::with_capacity(cell.len());
    for part in cell.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&part.replace('|', "\\|"));
    }
    out
}

/// Appends `new` lines to `lines`, never leaving two blank lines in a row or a blank line first.
pub(crate) fn push_line(lines: &mut Vec<String>, line: String) {
    if line.trim().is_empty() {
        if lines.last().is_some_and(|l| !l.is_empty()) {
            lines.push(String::new());
        }
    } else {
        lines.push(line.trim_end().to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve() {
        assert_eq!(
            resolve("ppt/slides", "../notesSlides/n1.xml"),
            "ppt/notesSlides/n1.xml"
        );
        assert_eq!(resolve("word", "/word/x.xml"), "word/x.xml");
        assert_eq!(resolve("", "word/document.xml"), "word/document.xml");
        assert_eq!(resolve("OEBPS", "a%20b.xhtml"), "OEBPS/a b.xhtml");
        assert_eq!(percent_decode("%E8%8D%89"), "草");
        assert_eq!(percent_decode("100%"), "100%");
    }

    #[test]
    fn parser_resolves_entities_and_empty_elements() {
        let mut p = XmlParser::new(r#"<a x="1 &amp; 2"><b/>x &amp; y&#x41;</a>"#);
        let mut seen = Vec::new();
        while let Some(ev) = p.next() {
            seen.push(match ev {
                Xml::Start(e) => format!("<{} {:?}>", e.name, e.attr("x")),
                Xml::End(n) => format!("</{n}>"),
                Xml::Text(t) => t,
            });
        }
        assert_eq!(seen.concat(), "<a Some(\"1 & 2\")><b None></b>x & yA</a>");
    }

    #[test]
    fn tables_render() {
        let rows = vec![
            vec!["a".to_string(), "b|c".to_string()],
            vec!["1".to_string()],
        ];
        assert_eq!(
            table_lines(&rows),
            ["| a | b\\|c |", "| --- | --- |", "| 1 |  |"]
        );
    }

    /// A zip with one entry of `len` zero bytes, deflated.
    pub(crate) fn zip_of(name: &str, len: usize) -> Vec<u8> {
        use std::io::Write;
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        w.start_file(name, options).unwrap();
        w.write_all(&vec![0u8; len]).unwrap();
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn zip_bombs_are_too_large() {
        let bytes = zip_of("word/document.xml", 4 * 1024 * 1024);
        assert!(bytes.len() < 64 * 1024, "{}", bytes.len());
        let err = Package::open_limited(&bytes, "DOCX", 1024 * 1024)
            .err()
            .unwrap();
        assert_eq!(err.code, SkipReason::TOO_LARGE, "{err}");
        let mut pkg = Package::open_limited(&bytes, "DOCX", 8 * 1024 * 1024)
            .ok()
            .unwrap();
        assert_eq!(
            pkg.read("WORD/Document.xml").map(|b| b.len()),
            Some(4 * 1024 * 1024)
        );
    }

    #[test]
    fn cfb_and_truncated() {
        let mut cfb = CFB_MAGIC.to_vec();
        cfb.extend("EncryptionInfo".encode_utf16().flat_map(u16::to_le_bytes));
        assert_eq!(
            Package::open(&cfb, "DOCX").err().unwrap().code,
            SkipReason::ENCRYPTED
        );
        assert_eq!(
            Package::open(&CFB_MAGIC, "DOCX").err().unwrap().code,
            SkipReason::UNSUPPORTED_VARIANT
        );
        assert_eq!(
            Package::open(b"PK\x03\x04garbage", "DOCX")
                .err()
                .unwrap()
                .code,
            SkipReason::CORRUPT
        );
    }
}
