//! HTML: readable text lines from the DOM, an outline from `h1`–`h6`, the `<title>`.

use encoding_rs::{Encoding, UTF_8};
use linkly_core::{DocType, Heading, OutlineNode, SkipReason};
use scraper::{Html as Document, Node};

use crate::encoding::{self, Confidence, Decoded};
use crate::formats::normalize_newlines;
use crate::{Extracted, Extractor, Input};

/// HTML files (`.html`, `.htm`, `.xhtml`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Html;

impl Extractor for Html {
    fn doc_type(&self) -> DocType {
        DocType::Html
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["html", "htm", "xhtml"]
    }

    fn extract(&self, input: &Input<'_>) -> Result<Extracted, SkipReason> {
        let decoded = decode_html(input.bytes);
        let encoding = decoded.name();
        let source = normalize_newlines(decoded.text);
        let document = parse(&source);
        let rendered = render(&document);
        let total_lines = rendered.lines.len() as u32;
        let title = document_title(&document).or_else(|| {
            rendered
                .headings
                .iter()
                .find(|h| h.level == 1)
                .map(|h| h.title.clone())
        });
        let outline = OutlineNode::from_headings(&rendered.headings, total_lines);
        Ok(Extracted {
            doc_type: DocType::Html,
            text: rendered.lines.join("\n"),
            title,
            outline,
            encoding: Some(encoding),
        })
    }
}

/// Decodes an HTML file: BOM, then UTF-16 by NUL pattern, then the declared charset when the
/// bytes bear it out, then detection.
pub(crate) fn decode_html(bytes: &[u8]) -> Decoded {
    if let Some(certain) = encoding::sniff_bom(bytes)
        .is_some()
        .then(|| encoding::decode_certain(bytes))
        .flatten()
    {
        return certain;
    }
    if encoding::sniff_utf16_nobom(bytes).is_some()
        && let Some(certain) = encoding::decode_certain(bytes)
    {
        return certain;
    }
    let declared = declared_charset(bytes)
        .filter(|e| *e != encoding_rs::UTF_16LE && *e != encoding_rs::UTF_16BE);
    if let Ok(text) = std::str::from_utf8(bytes) {
        // Valid UTF-8 with non-ASCII bytes is UTF-8 whatever the page says; pure ASCII reads the
        // same in any ASCII-compatible charset.
        let encoding = match declared {
            Some(e) if text.is_ascii() && e.is_ascii_compatible() => e,
            _ => UTF_8,
        };
        return Decoded {
            text: text.to_string(),
            encoding,
            confidence: Confidence::Certain,
        };
    }
    if let Some(declared) = declared.filter(|e| *e != UTF_8) {
        let graded = encoding::decode_graded(bytes, declared);
        if graded.confidence >= Confidence::Likely {
            return graded;
        }
    }
    encoding::decode(bytes)
}

/// The charset a `<meta charset>`, `<meta http-equiv content="...charset=...">` or XML
/// declaration in the first 4 KiB names. `unicode` (a Microsoft label) means UTF-16LE.
fn declared_charset(bytes: &[u8]) -> Option<&'static Encoding> {
    let head = &bytes[..bytes.len().min(4096)];
    let lower: Vec<u8> = head.to_ascii_lowercase();
    let mut candidates = Vec::new();
    if lower.starts_with(b"<?xml") {
        let end = find(&lower, b"?>", 0).unwrap_or(lower.len());
        candidates.push(&lower[..end]);
    }
    let mut from = 0;
    while let Some(start) = find(&lower, b"<meta", from) {
        let end = find(&lower, b">", start).unwrap_or(lower.len());
        candidates.push(&lower[start..end]);
        from = end;
    }
    for tag in candidates {
        for key in [&b"charset"[..], &b"encoding"[..]] {
            let Some(pos) = find(tag, key, 0) else {
                continue;
            };
            let rest = &tag[pos + key.len()..];
            let rest = trim_start(rest);
            let Some(rest) = rest.strip_prefix(b"=") else {
                continue;
            };
            let rest = trim_start(rest);
            let rest = rest
                .strip_prefix(b"\"")
                .or_else(|| rest.strip_prefix(b"'"))
                .unwrap_or(rest);
            let label: Vec<u8> = rest
                .iter()
                .copied()
                .take_while(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(b))
                .collect();
            if label.is_empty() {
                continue;
            }
            if label == b"unicode" {
                return Some(encoding_rs::UTF_16LE);
            }
            if let Some(e) = Encoding::for_label(&label) {
                return Some(e);
            }
        }
    }
    None
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn trim_start(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    &b[n..]
}

/// Elements open deeper than this are left out of the tree (their text stays).
///
/// html5ever's tree builder looks through the stack of open elements for most start tags
/// ("has a `p` element in button scope"), so a page nesting `n` elements costs `n²`: 100,000
/// nested `<div>`s took 30 s. Browsers cap the depth too (Chromium at 512).
pub(crate) const MAX_DEPTH: usize = 512;

/// Parses a page, first cutting the tags that would nest past [`MAX_DEPTH`] (see
/// [`flatten_deep`]), so that parsing stays linear in the size of the page.
pub(crate) fn parse(source: &str) -> Document {
    match flatten_deep(source, MAX_DEPTH) {
        Some(flat) => {
            tracing::debug!(max_depth = MAX_DEPTH, "HTML nests too deep: flattened");
            Document::parse_document(&flat)
        }
        None => Document::parse_document(source),
    }
}

/// How [`flatten_deep`] counts an element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TagKind {
    /// Never holds others (no end tag): `br`, `img`, ...
    Void,
    /// Its end tag is optional: the parser closes it itself, without a deep search, when a
    /// sibling starts, so it is not counted as nesting: `p`, `li`, `td`, ...
    OptionalEnd,
    /// Its content is raw text up to its end tag: `script`, `style`, ...
    RawText,
    /// Counted.
    Other,
}

fn tag_kind(name: &str) -> TagKind {
    let mut buf = [0u8; 10];
    let Some(lower) = buf.get_mut(..name.len()) else {
        return TagKind::Other;
    };
    lower.copy_from_slice(name.as_bytes());
    lower.make_ascii_lowercase();
    match &*lower {
        b"area" | b"base" | b"br" | b"col" | b"embed" | b"hr" | b"img" | b"input" | b"link"
        | b"meta" | b"source" | b"track" | b"wbr" | b"param" | b"keygen" | b"basefont"
        | b"bgsound" | b"frame" | b"image" => TagKind::Void,
        b"p" | b"li" | b"dt" | b"dd" | b"option" | b"optgroup" | b"tr" | b"td" | b"th"
        | b"tbody" | b"thead" | b"tfoot" | b"colgroup" | b"caption" | b"rb" | b"rt" | b"rtc"
        | b"rp" | b"html" | b"head" | b"body" => TagKind::OptionalEnd,
        b"script" | b"style" | b"textarea" | b"title" | b"xmp" | b"iframe" | b"noembed"
        | b"noframes" | b"noscript" => TagKind::RawText,
        _ => TagKind::Other,
    }
}

/// End tags searched for among this many innermost open elements; beyond, an end tag matches
/// nothing (keeps the scan linear).
const END_TAG_REACH: usize = 64;

/// The page without the start tags that would nest more than `max_depth` elements and without
/// their end tags, or `None` when it never nests that deep (the common case: nothing is
/// copied). One linear scan of the tags: comments, declarations and raw-text elements are
/// stepped over; void elements and elements with optional end tags are not counted.
pub(crate) fn flatten_deep(source: &str, max_depth: usize) -> Option<String> {
    let b = source.as_bytes();
    // Open elements: the byte range of the name in `source`, and whether its tag was kept.
    let mut open: Vec<(usize, usize, bool)> = Vec::new();
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while let Some(lt) = memchr::memchr(b'<', &b[i..]) {
        let at = i + lt;
        let rest = &b[at + 1..];
        if rest.starts_with(b"!--") {
            i = find(b, b"-->", at + 4).map_or(b.len(), |e| e + 3);
            continue;
        }
        if rest.first().is_some_and(|c| *c == b'!' || *c == b'?') {
            i = find(b, b">", at + 1).map_or(b.len(), |e| e + 1);
            continue;
        }
        let close = rest.first() == Some(&b'/');
        let name_start = at + 1 + usize::from(close);
        let name_len = b[name_start..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b':' | b'_'))
            .count();
        if name_len == 0 || !b[name_start].is_ascii_alphabetic() {
            i = at + 1;
            continue;
        }
        let name_end = name_start + name_len;
        let Some(end) = tag_end(b, name_end) else {
            break;
        };
        let name = &source[name_start..name_end];
        i = end + 1;
        let kind = tag_kind(name);
        if matches!(kind, TagKind::Void | TagKind::OptionalEnd) {
            continue;
        }
        if close {
            let reach = open.len().saturating_sub(END_TAG_REACH);
            let found = (reach..open.len())
                .rev()
                .find(|&k| source[open[k].0..open[k].1].eq_ignore_ascii_case(name));
            match found {
                Some(k) => {
                    if !open[k].2 {
                        cuts.push((at, end + 1));
                    }
                    open.truncate(k);
                }
                None if open.len() > max_depth => cuts.push((at, end + 1)),
                None => {}
            }
            continue;
        }
        if kind == TagKind::RawText {
            // Its content is text up to `</name`: not tags.
            let mut from = i;
            i = b.len();
            while let Some(p) = find(b, b"</", from) {
                let candidate = &b[p + 2..];
                if candidate.len() >= name.len()
                    && candidate[..name.len()].eq_ignore_ascii_case(name.as_bytes())
                {
                    i = p;
                    break;
                }
                from = p + 2;
            }
            continue;
        }
        if b[end - 1] == b'/' {
            continue;
        }
        let kept = open.len() < max_depth;
        if !kept {
            cuts.push((at, end + 1));
        }
        open.push((name_start, name_end, kept));
    }
    if cuts.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(source.len());
    let mut from = 0;
    for (start, end) in cuts {
        out.push_str(&source[from..start]);
        from = end;
    }
    out.push_str(&source[from..]);
    Some(out)
}

/// The index of the `>` that ends a tag whose name ends at `from` (a quoted attribute value,
/// after `=`, may hold `>`), or `None` when the page ends first.
fn tag_end(b: &[u8], from: usize) -> Option<usize> {
    let mut k = from;
    let mut after_eq = false;
    while let Some(&c) = b.get(k) {
        match c {
            b'>' => return Some(k),
            b'=' => after_eq = true,
            b'"' | b'\'' if after_eq => {
                k = b[k + 1..].iter().position(|&q| q == c)? + k + 1;
                after_eq = false;
            }
            c if !c.is_ascii_whitespace() => after_eq = false,
            _ => {}
        }
        k += 1;
    }
    None
}

/// The text of the first `<title>` outside `<svg>`, whitespace collapsed.
fn document_title(document: &Document) -> Option<String> {
    let title = document.tree.root().descendants().find(|n| {
        n.value().as_element().is_some_and(|e| e.name() == "title")
            && !n
                .ancestors()
                .any(|a| a.value().as_element().is_some_and(|e| e.name() == "svg"))
    })?;
    let text: String = title
        .descendants()
        .filter_map(|n| n.value().as_text().map(|t| t.to_string()))
        .collect();
    let text = collapse(&text);
    (!text.is_empty()).then_some(text)
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Elements whose content is never text.
fn is_skipped(name: &str) -> bool {
    matches!(
        name,
        "script"
            | "style"
            | "noscript"
            | "template"
            | "head"
            | "svg"
            | "math"
            | "iframe"
            | "object"
            | "embed"
            | "canvas"
            | "select"
            | "datalist"
    )
}

/// Elements that stand as a paragraph: a blank line before and after.
fn is_paragraph(name: &str) -> bool {
    matches!(
        name,
        "p" | "pre"
            | "blockquote"
            | "table"
            | "dl"
            | "figure"
            | "hr"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "section"
            | "article"
            | "header"
            | "footer"
            | "aside"
            | "nav"
            | "main"
            | "form"
            | "fieldset"
            | "details"
    )
}

/// Elements that start and end a line.
fn is_block(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "body"
            | "center"
            | "dd"
            | "dialog"
            | "div"
            | "dt"
            | "figcaption"
            | "hgroup"
            | "html"
            | "li"
            | "ol"
            | "ul"
            | "menu"
            | "summary"
            | "caption"
            | "legend"
            | "tr"
            | "thead"
            | "tbody"
            | "tfoot"
            | "option"
            | "label"
            | "textarea"
    )
}

fn heading_level(name: &str) -> Option<u8> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

struct Rendered {
    lines: Vec<String>,
    headings: Vec<Heading>,
    anchors: Vec<(String, u32)>,
}

/// An (X)HTML page rendered to text as `.html` files are: its lines, its `h1`–`h6` headings and
/// the line where each element `id` starts (for EPUB table-of-contents fragments).
pub(crate) struct RenderedPage {
    /// The text lines.
    pub(crate) lines: Vec<String>,
    /// The headings, with 1-based lines into `lines`.
    pub(crate) headings: Vec<Heading>,
    /// Element ids and the 1-based line where each one's content starts.
    pub(crate) anchors: Vec<(String, u32)>,
}

/// Renders a page that is already decoded to text.
pub(crate) fn render_page(source: &str) -> RenderedPage {
    let document = parse(source);
    let rendered = render(&document);
    RenderedPage {
        lines: rendered.lines,
        headings: rendered.headings,
        anchors: rendered.anchors,
    }
}

/// Walks the DOM (iteratively: deep nesting cannot overflow the stack) into text lines.
fn render(document: &Document) -> Rendered {
    let mut w = Writer::default();
    let root = document.tree.root();
    let mut node = root;
    loop {
        let descended = w.open(node.value());
        if descended && let Some(child) = node.first_child() {
            node = child;
            continue;
        }
        w.close(node.value(), descended);
        // Climb until a node with a next sibling; every parent passed was descended into.
        loop {
            if node.id() == root.id() {
                return w.finish();
            }
            if let Some(sibling) = node.next_sibling() {
                node = sibling;
                break;
            }
            let Some(parent) = node.parent() else {
                return w.finish();
            };
            node = parent;
            w.close(node.value(), true);
        }
    }
}

#[derive(Default)]
struct Writer {
    lines: Vec<String>,
    cur: String,
    space: bool,
    headings: Vec<Heading>,
    /// The open heading: level, first line, text lines gathered so far.
    heading: Option<(u8, u32)>,
    pre: usize,
    cell: usize,
    /// Cells seen in each open table row.
    rows: Vec<usize>,
    /// Open lists: `None` = bulleted, `Some(n)` = the next number.
    lists: Vec<Option<u32>>,
    /// A list item's marker, written before the item's first text.
    marker: Option<String>,
    /// Element ids and their lines.
    anchors: Vec<(String, u32)>,
    /// Ids of elements opened at the start of a line, waiting for that line's number.
    pending_anchors: Vec<String>,
}

impl Writer {
    /// Handles the start of a node; false when its children must not be visited.
    fn open(&mut self, node: &Node) -> bool {
        match node {
            Node::Text(t) => {
                self.text(t);
                false
            }
            Node::Element(e) => {
                let name = e.name();
                if is_skipped(name) {
                    return false;
                }
                if let Some(level) = heading_level(name)
                    && self.cell == 0
                {
                    self.paragraph();
                    self.heading = Some((level, self.lines.len() as u32 + 1));
                    self.anchor(e.attr("id"));
                    return true;
                }
                match name {
                    "br" => self.newline(),
                    "pre" => {
                        self.paragraph();
                        self.pre += 1;
                    }
                    "tr" => {
                        self.newline();
                        self.rows.push(0);
                    }
                    "td" | "th" => {
                        if let Some(n) = self.rows.last_mut() {
                            if *n > 0 {
                                self.cur.push_str(" | ");
                                self.space = false;
                            }
                            *n += 1;
                        }
                        self.cell += 1;
                    }
                    "ul" | "menu" => {
                        self.list_break();
                        self.lists.push(None);
                    }
                    "ol" => {
                        self.list_break();
                        let start = e.attr("start").and_then(|s| s.trim().parse().ok());
                        self.lists.push(Some(start.unwrap_or(1)));
                    }
                    "li" => {
                        self.newline();
                        if self.cell == 0 {
                            let indent = "  ".repeat(self.lists.len().saturating_sub(1));
                            let marker = match self.lists.last_mut() {
                                Some(Some(n)) => {
                                    *n += 1;
                                    format!("{}. ", *n - 1)
                                }
                                _ => "- ".to_string(),
                            };
                            self.marker = Some(format!("{indent}{marker}"));
                        }
                    }
                    "img" => {
                        if let Some(alt) = e.attr("alt").map(collapse).filter(|a| !a.is_empty()) {
                            self.text(&alt);
                        }
                    }
                    _ if is_paragraph(name) => self.paragraph(),
                    _ if is_block(name) => self.newline(),
                    _ => {}
                }
                self.anchor(e.attr("id"));
                true
            }
            Node::Document | Node::Fragment => true,
            _ => false,
        }
    }

    /// Handles the end of a node that `open` saw; `descended` is what `open` returned.
    fn close(&mut self, node: &Node, descended: bool) {
        let Node::Element(e) = node else {
            return;
        };
        if !descended {
            return;
        }
        let name = e.name();
        if heading_level(name).is_some()
            && let Some((level, line)) = self.heading
            && self.cell == 0
        {
            self.heading = None;
            self.newline();
            let end = self.lines.len();
            let first = line as usize - 1;
            if first < end {
                let title = collapse(&self.lines[first..end].join(" "));
                if !title.is_empty() {
                    self.headings.push(Heading { level, title, line });
                }
            }
            self.paragraph();
            return;
        }
        match name {
            "pre" => {
                self.pre = self.pre.saturating_sub(1);
                self.paragraph();
            }
            "tr" => {
                self.rows.pop();
                self.newline();
            }
            "td" | "th" => {
                self.cell = self.cell.saturating_sub(1);
            }
            "li" => {
                self.marker = None;
                self.newline();
            }
            "ul" | "ol" | "menu" => {
                self.lists.pop();
                self.list_break();
            }
            _ if is_paragraph(name) => self.paragraph(),
            _ if is_block(name) => self.newline(),
            _ => {}
        }
    }

    fn text(&mut self, s: &str) {
        if self.pre > 0 && self.cell == 0 {
            for (i, part) in s.split('\n').enumerate() {
                if i > 0 {
                    self.push_line(true);
                }
                if self.space && !self.cur.is_empty() {
                    self.cur.push(' ');
                }
                self.space = false;
                self.cur.push_str(&part.replace('\t', "    "));
            }
            return;
        }
        for c in s.chars() {
            if c.is_whitespace() {
                self.space = true;
            } else {
                if self.cur.is_empty()
                    && let Some(marker) = self.marker.take()
                {
                    self.cur.push_str(&marker);
                } else if self.space && !self.cur.is_empty() && !self.cur.ends_with(' ') {
                    self.cur.push(' ');
                }
                self.space = false;
                self.cur.push(c);
            }
        }
    }

    /// Ends the current line (inside a table cell: a space).
    fn newline(&mut self) {
        if self.cell > 0 {
            self.space = true;
            return;
        }
        self.push_line(false);
    }

    /// Ends the current line and leaves one blank line.
    fn paragraph(&mut self) {
        if self.cell > 0 {
            self.space = true;
            return;
        }
        self.push_line(false);
        if self.lines.last().is_some_and(|l| !l.is_empty()) {
            self.lines.push(String::new());
        }
    }

    /// A list starts or ends: a paragraph break at the top level, a line break when nested.
    fn list_break(&mut self) {
        if self.lists.is_empty() {
            self.paragraph();
        } else {
            self.newline();
        }
    }

    /// Moves the current line to `lines`. Empty lines are kept only when `keep_empty` (inside
    /// `<pre>`), and never two blank lines in a row.
    fn push_line(&mut self, keep_empty: bool) {
        let line = std::mem::take(&mut self.cur);
        self.space = false;
        let line = line.trim_end();
        let blank = line.chars().all(|c| c == '|' || c.is_whitespace());
        if blank {
            if keep_empty && self.lines.last().is_some_and(|l| !l.is_empty()) {
                self.lines.push(String::new());
            }
            return;
        }
        let number = self.lines.len() as u32 + 1;
        for id in self.pending_anchors.drain(..) {
            self.anchors.push((id, number));
        }
        self.lines.push(line.to_string());
    }

    /// Records where an element id starts: the line being written, or the next one.
    fn anchor(&mut self, id: Option<&str>) {
        let Some(id) = id.filter(|i| !i.is_empty()) else {
            return;
        };
        if self.cur.trim().is_empty() {
            self.pending_anchors.push(id.to_string());
        } else {
            let number = self.lines.len() as u32 + 1;
            self.anchors.push((id.to_string(), number));
        }
    }

    fn finish(mut self) -> Rendered {
        self.push_line(false);
        while self.lines.last().is_some_and(|l| l.is_empty()) {
            self.lines.pop();
        }
        let last = self.lines.len() as u32;
        for id in self.pending_anchors.drain(..) {
            self.anchors.push((id, last.max(1)));
        }
        Rendered {
            lines: self.lines,
            headings: self.headings,
            anchors: self.anchors,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn run(bytes: &[u8]) -> Extracted {
        Html.extract(&Input {
            path: Path::new("a.html"),
            bytes,
        })
        .unwrap()
    }

    #[test]
    fn text_lines_headings_and_title() {
        let out = run(br#"<!doctype html><html><head><title> The  Page </title>
            <style>p { color: red }</style><script>var x = "data:image/png;base64,AAAA";</script>
            </head><body>
            <h1>Main <em>heading</em></h1>
            <p>First   paragraph
               continues.</p><p>Second<br>line two</p>
            <h2>Sub</h2>
            <ul><li>one</li><li>two<ul><li>inner</li></ul></li></ul>
            <table><tr><th>A</th><th>B</th></tr><tr><td>1</td><td><p>2</p></td></tr></table>
            <pre>code  line 1
  indented</pre>
            <noscript>enable js</noscript><template><p>tpl</p></template>
            </body></html>"#);
        assert_eq!(out.title.as_deref(), Some("The Page"));
        let lines: Vec<&str> = out.text.split('\n').collect();
        assert_eq!(lines[0], "Main heading");
        assert!(lines.contains(&"First paragraph continues."), "{lines:?}");
        assert!(lines.contains(&"Second"));
        assert!(lines.contains(&"line two"));
        assert!(lines.contains(&"- one"));
        assert!(lines.contains(&"  - inner"));
        assert!(lines.contains(&"A | B"));
        assert!(lines.contains(&"1 | 2"));
        assert!(lines.contains(&"code  line 1"));
        assert!(lines.contains(&"  indented"));
        assert!(!out.text.contains("base64"));
        assert!(!out.text.contains("color"));
        assert!(!out.text.contains("enable js"));
        assert!(!out.text.contains("tpl"));
        assert!(!out.text.contains("\n\n\n"));
        assert_eq!(out.outline.len(), 1);
        assert_eq!(out.outline[0].title, "Main heading");
        let sub = &out.outline[0].children[0];
        assert_eq!(sub.title, "Sub");
        assert_eq!(lines[sub.start_line as usize - 1], "Sub");
    }

    #[test]
    fn title_falls_back_to_h1() {
        let out = run(b"<body><p>x</p><h1>Head</h1></body>");
        assert_eq!(out.title.as_deref(), Some("Head"));
    }

    #[test]
    fn charsets() {
        let (bytes, _, _) =
            encoding_rs::WINDOWS_1252.encode("<meta charset=\"windows-1252\"><p>café</p>");
        assert_eq!(run(&bytes).text, "café");
        let mut bytes =
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=iso-8859-5\"><p>"
                .to_vec();
        bytes.extend(encoding_rs::ISO_8859_5.encode("Привет мир").0.iter());
        assert_eq!(run(&bytes).text, "Привет мир");
        // Declared Latin-1 but really UTF-8.
        let out = run("<meta charset=iso-8859-1><p>東京</p>".as_bytes());
        assert_eq!((out.text.as_str(), out.encoding), ("東京", Some("UTF-8")));
    }

    #[test]
    fn ordered_lists_number() {
        let out = run(b"<ol><li>a</li><li>b</li></ol>");
        assert_eq!(out.text, "1. a\n2. b");
    }

    #[test]
    fn deep_nesting_is_flattened() {
        let n = 2000;
        let page = format!(
            "<body><p>top</p>{}deep text{}<p>after</p></body>",
            "<div>".repeat(n),
            "</div>".repeat(n)
        );
        let flat = flatten_deep(&page, MAX_DEPTH).unwrap();
        assert_eq!(flat.matches("<div>").count(), MAX_DEPTH);
        assert_eq!(flat.matches("</div>").count(), MAX_DEPTH);
        assert_eq!(run(page.as_bytes()).text, "top\n\ndeep text\n\nafter");
        // Shallow pages, void and optional-end elements, comments, raw text: untouched.
        let shallow = "<div><p>a<p>b<br><img src=x><!-- <div> --><script>'<div>'</script>\
            <div title='a>b'>c</div></div>";
        assert_eq!(flatten_deep(shallow, 3), None);
        let lis = "<ul>".to_string() + &"<li>x".repeat(5000) + "</ul>";
        assert_eq!(flatten_deep(&lis, 4), None);
        // An end tag closes the elements opened inside it.
        assert_eq!(
            flatten_deep("<a><b><c><d>x</d></c></b></a>", 2).as_deref(),
            Some("<a><b>x</b></a>")
        );
    }

    #[test]
    fn declared_labels() {
        assert_eq!(
            declared_charset(b"<meta charset='Shift_JIS'>"),
            Some(encoding_rs::SHIFT_JIS)
        );
        assert_eq!(
            declared_charset(b"<META CHARSET=\"unicode\">"),
            Some(encoding_rs::UTF_16LE)
        );
        assert_eq!(
            declared_charset(b"<?xml version=\"1.0\" encoding=\"EUC-JP\"?><html>"),
            Some(encoding_rs::EUC_JP)
        );
        assert_eq!(declared_charset(b"<p>no meta</p>"), None);
    }
}
