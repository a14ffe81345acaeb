//! EPUB 2 and 3 with `zip` + `quick-xml` (no GPL `epub` crate; see `docs/formats-epub.md`):
//! `META-INF/container.xml` → the OPF package → the spine's XHTML chapters, rendered as HTML
//! files are, in spine order; the table of contents (EPUB 3 nav document, else EPUB 2 NCX),
//! nested, becomes the outline, each entry starting at the line of its chapter or fragment.

use std::collections::HashMap;

use linkly_core::{DocType, Heading, OutlineNode, SkipReason};
use scraper::ElementRef;

use crate::formats::html::{decode_html, render_page};
use crate::formats::normalize_newlines;
use crate::formats::ooxml::{
    Package, Xml, XmlParser, collapse, percent_decode, resolve, split_dir,
};
use crate::{Extracted, Extractor, Input};

/// EPUB books (`.epub`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Epub;

/// The deepest table-of-contents nesting read.
const MAX_DEPTH: usize = 16;

impl Extractor for Epub {
    fn doc_type(&self) -> DocType {
        DocType::Epub
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["epub"]
    }

    fn extract(&self, input: &Input<'_>) -> Result<Extracted, SkipReason> {
        let mut pkg = Package::open(input.bytes, "EPUB")?;
        let Some(opf_path) = find_opf(&mut pkg) else {
            return Err(SkipReason::new(
                SkipReason::CORRUPT,
                "no OPF package document (META-INF/container.xml names none)",
            ));
        };
        let Some(opf_xml) = pkg.read_text(&opf_path) else {
            return Err(SkipReason::new(
                SkipReason::CORRUPT,
                format!("the OPF package document {opf_path} cannot be read"),
            ));
        };
        if pkg.has("META-INF/encryption.xml") && is_font_only_encryption(&mut pkg) == Some(false) {
            return Err(SkipReason::new(
                SkipReason::ENCRYPTED,
                "the EPUB's content documents are encrypted (DRM)",
            ));
        }
        let opf = Opf::parse(&opf_xml, split_dir(&opf_path).0);

        // Chapters in spine order.
        let mut lines: Vec<String> = Vec::new();
        let mut chapter_start: HashMap<String, u32> = HashMap::new();
        let mut anchors: HashMap<(String, String), u32> = HashMap::new();
        let mut headings: Vec<Heading> = Vec::new();
        for idref in &opf.spine {
            let Some(item) = opf.items.get(idref) else {
                continue;
            };
            if !item.is_html() || chapter_start.contains_key(&item.href) {
                continue;
            }
            let Some(bytes) = pkg.read(&item.href) else {
                continue;
            };
            let source = normalize_newlines(decode_html(&bytes).text);
            let page = render_page(&fix_self_closing(&source));
            if !lines.is_empty() && !page.lines.is_empty() {
                lines.push(String::new());
            }
            let offset = lines.len() as u32;
            chapter_start.insert(item.href.clone(), offset + 1);
            for (id, line) in page.anchors {
                anchors
                    .entry((item.href.clone(), id))
                    .or_insert(offset + line);
            }
            headings.extend(page.headings.into_iter().map(|h| Heading {
                line: h.line + offset,
                ..h
            }));
            lines.extend(page.lines);
        }
        while lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        if lines.is_empty() {
            return Err(SkipReason::new(
                SkipReason::EMPTY,
                "the EPUB's spine has no text",
            ));
        }
        let total = lines.len() as u32;

        // The table of contents: EPUB 3 nav, else the NCX.
        let mut toc = opf
            .nav
            .as_ref()
            .and_then(|nav| pkg.read(nav).map(|b| (nav.clone(), b)))
            .map(|(nav, bytes)| {
                let source = normalize_newlines(decode_html(&bytes).text);
                nav_toc(&fix_self_closing(&source), &nav)
            })
            .unwrap_or_default();
        if toc.is_empty()
            && let Some(ncx) = opf.ncx.as_ref()
            && let Some(xml) = pkg.read_text(ncx)
        {
            toc = ncx_toc(&xml, ncx);
        }
        let outline = if toc.is_empty() {
            OutlineNode::from_headings(&headings, total)
        } else {
            let flat = place(&toc, &chapter_start, &anchors);
            OutlineNode::from_headings(&flat, total)
        };
        let title = opf
            .title
            .or_else(|| headings.first().map(|h| h.title.clone()));
        Ok(Extracted {
            doc_type: DocType::Epub,
            text: lines.join("\n"),
            title,
            outline,
            encoding: None,
        })
    }
}

/// The OPF path: `META-INF/container.xml`'s first rootfile, else the first `.opf` entry.
fn find_opf(pkg: &mut Package<'_>) -> Option<String> {
    if let Some(xml) = pkg.read_text("META-INF/container.xml") {
        let mut p = XmlParser::new(&xml);
        let mut first = None;
        while let Some(ev) = p.next() {
            if let Xml::Start(el) = ev
                && el.name == "rootfile"
                && let Some(path) = el.attr("full-path")
            {
                let path = resolve("", path);
                let oebps = el
                    .attr("media-type")
                    .is_none_or(|m| m == "application/oebps-package+xml");
                if oebps && pkg.has(&path) {
                    return Some(path);
                }
                first.get_or_insert(path);
            }
        }
        if let Some(path) = first.filter(|p| pkg.has(p)) {
            return Some(path);
        }
    }
    pkg.names()
        .into_iter()
        .find(|n| n.to_ascii_lowercase().ends_with(".opf"))
}

/// True when `META-INF/encryption.xml` only obfuscates fonts (which costs no text); false when
/// it encrypts anything else; `None` when unreadable.
fn is_font_only_encryption(pkg: &mut Package<'_>) -> Option<bool> {
    let xml = pkg.read_text("META-INF/encryption.xml")?;
    let mut p = XmlParser::new(&xml);
    let mut all_fonts = true;
    while let Some(ev) = p.next() {
        if let Xml::Start(el) = ev
            && el.name == "CipherReference"
            && let Some(uri) = el.attr("URI")
        {
            let uri = uri.to_ascii_lowercase();
            let font = [".otf", ".ttf", ".woff", ".woff2", ".odttf"]
                .iter()
                .any(|ext| uri.ends_with(ext));
            all_fonts &= font;
        }
    }
    Some(all_fonts)
}

/// A manifest item.
#[derive(Debug, Clone)]
struct Item {
    href: String,
    media_type: String,
}

impl Item {
    fn is_html(&self) -> bool {
        let href = self.href.to_ascii_lowercase();
        self.media_type.contains("html")
            || href.ends_with(".xhtml")
            || href.ends_with(".html")
            || href.ends_with(".htm")
    }
}

/// What the reader needs from the OPF package document.
#[derive(Debug, Default)]
struct Opf {
    title: Option<String>,
    items: HashMap<String, Item>,
    spine: Vec<String>,
    nav: Option<String>,
    ncx: Option<String>,
}

impl Opf {
    fn parse(xml: &str, dir: &str) -> Opf {
        let mut opf = Opf::default();
        let mut toc_id = None;
        let mut ncx_item = None;
        let mut p = XmlParser::new(xml);
        while let Some(ev) = p.next() {
            let Xml::Start(el) = ev else {
                continue;
            };
            match el.name.as_str() {
                "title" if opf.title.is_none() => {
                    let title = collapse(&p.text_content());
                    if !title.is_empty() {
                        opf.title = Some(title);
                    }
                }
                "item" => {
                    let (Some(id), Some(href)) = (el.attr("id"), el.attr("href")) else {
                        continue;
                    };
                    let href = resolve(dir, href.split('#').next().unwrap_or(href));
                    let media_type = el.attr("media-type").unwrap_or_default().to_string();
                    if el
                        .attr("properties")
                        .is_some_and(|p| p.split_whitespace().any(|w| w == "nav"))
                    {
                        opf.nav = Some(href.clone());
                    }
                    if media_type == "application/x-dtbncx+xml" && ncx_item.is_none() {
                        ncx_item = Some(href.clone());
                    }
                    opf.items.insert(id.to_string(), Item { href, media_type });
                }
                "spine" => toc_id = el.attr("toc").map(str::to_string),
                "itemref" => {
                    if let Some(idref) = el.attr("idref") {
                        opf.spine.push(idref.to_string());
                    }
                }
                _ => {}
            }
        }
        opf.ncx = toc_id
            .and_then(|id| opf.items.get(&id).map(|i| i.href.clone()))
            .or(ncx_item);
        opf
    }
}

/// One table-of-contents entry: its label, target (`path`, `fragment`) and children.
#[derive(Debug, Clone, Default)]
struct TocEntry {
    label: String,
    target: Option<(String, Option<String>)>,
    children: Vec<TocEntry>,
}

/// `chapter.xhtml#frag` relative to the document `base` that holds the link →
/// (`OEBPS/chapter.xhtml`, `frag`); `#frag` alone points into `base` itself.
fn target(base: &str, href: &str) -> Option<(String, Option<String>)> {
    let dir = split_dir(base).0;
    let href = href.trim();
    if href.is_empty() || href.contains("://") {
        return None;
    }
    let (path, fragment) = match href.split_once('#') {
        Some((p, f)) => (p, Some(percent_decode(f))),
        None => (href, None),
    };
    let path = if path.is_empty() {
        base.to_string()
    } else {
        resolve(dir, path)
    };
    Some((path, fragment.filter(|f| !f.is_empty())))
}

/// The EPUB 3 nav document's `toc` nav (else its first nav), nested `ol`/`li`.
fn nav_toc(source: &str, base: &str) -> Vec<TocEntry> {
    let document = crate::formats::html::parse(source);
    let navs: Vec<ElementRef<'_>> = document
        .tree
        .root()
        .descendants()
        .filter_map(ElementRef::wrap)
        .filter(|e| e.value().name() == "nav")
        .collect();
    let nav = navs
        .iter()
        .find(|n| {
            n.value()
                .attrs()
                .any(|(k, v)| k.ends_with("type") && v.split_whitespace().any(|w| w == "toc"))
        })
        .or(navs.first());
    let Some(nav) = nav else {
        return Vec::new();
    };
    // The first `ol` under the nav.
    let Some(ol) = nav
        .descendants()
        .filter_map(ElementRef::wrap)
        .find(|e| e.value().name() == "ol")
    else {
        return Vec::new();
    };
    nav_list(ol, base, 0)
}

fn nav_list(ol: ElementRef<'_>, base: &str, depth: usize) -> Vec<TocEntry> {
    let mut out = Vec::new();
    if depth >= MAX_DEPTH {
        return out;
    }
    for li in ol
        .children()
        .filter_map(ElementRef::wrap)
        .filter(|e| e.value().name() == "li")
    {
        let mut entry = TocEntry::default();
        for child in li.children().filter_map(ElementRef::wrap) {
            match child.value().name() {
                "a" | "span" if entry.label.is_empty() => {
                    entry.label = collapse(&child.text().collect::<String>());
                    if let Some(href) = child.value().attr("href") {
                        entry.target = target(base, href);
                    }
                }
                "ol" => entry.children = nav_list(child, base, depth + 1),
                _ => {}
            }
        }
        if entry.label.is_empty() && entry.children.is_empty() {
            continue;
        }
        out.push(entry);
    }
    out
}

/// The EPUB 2 NCX `navMap`, nested `navPoint`s.
fn ncx_toc(xml: &str, base: &str) -> Vec<TocEntry> {
    let mut stack: Vec<TocEntry> = vec![TocEntry::default()];
    let mut in_map = false;
    let mut in_label = false;
    let mut p = XmlParser::new(xml);
    while let Some(ev) = p.next() {
        match ev {
            Xml::Start(el) => match el.name.as_str() {
                "navMap" => in_map = true,
                "navPoint" if in_map => stack.push(TocEntry::default()),
                "navLabel" if in_map => in_label = true,
                "text" if in_label => {
                    let text = collapse(&p.text_content());
                    if let Some(top) = stack.last_mut()
                        && top.label.is_empty()
                    {
                        top.label = text;
                    }
                }
                "content" if in_map => {
                    if let Some(src) = el.attr("src")
                        && let Some(top) = stack.last_mut()
                        && top.target.is_none()
                    {
                        top.target = target(base, src);
                    }
                }
                "pageList" | "navList" => p.skip(),
                _ => {}
            },
            Xml::End(name) => match name.as_str() {
                "navMap" => in_map = false,
                "navLabel" => in_label = false,
                "navPoint" if in_map && stack.len() > 1 => {
                    let done = stack.pop().unwrap_or_default();
                    if stack.len() <= MAX_DEPTH
                        && let Some(parent) = stack.last_mut()
                    {
                        parent.children.push(done);
                    }
                }
                _ => {}
            },
            Xml::Text(_) => {}
        }
    }
    // Unclosed navPoints (truncated XML): fold them into their parents, no deeper than
    // MAX_DEPTH (the walks over the tree recurse).
    stack.truncate(MAX_DEPTH + 1);
    while stack.len() > 1 {
        let done = stack.pop().unwrap_or_default();
        if let Some(parent) = stack.last_mut() {
            parent.children.push(done);
        }
    }
    stack.pop().map(|root| root.children).unwrap_or_default()
}

/// Flattens the TOC into headings (level = depth) at the lines their targets start on. An entry
/// without a target (or with one outside the spine) starts where its first placed descendant
/// does, else where the entry before it does.
fn place(
    toc: &[TocEntry],
    chapter_start: &HashMap<String, u32>,
    anchors: &HashMap<(String, String), u32>,
) -> Vec<Heading> {
    fn line_of(
        e: &TocEntry,
        chapter_start: &HashMap<String, u32>,
        anchors: &HashMap<(String, String), u32>,
    ) -> Option<u32> {
        let (path, fragment) = e.target.as_ref()?;
        fragment
            .as_ref()
            .and_then(|f| anchors.get(&(path.clone(), f.clone())).copied())
            .or_else(|| chapter_start.get(path).copied())
    }
    fn first_placed(
        e: &TocEntry,
        chapter_start: &HashMap<String, u32>,
        anchors: &HashMap<(String, String), u32>,
    ) -> Option<u32> {
        line_of(e, chapter_start, anchors).or_else(|| {
            e.children
                .iter()
                .find_map(|c| first_placed(c, chapter_start, anchors))
        })
    }
    fn walk(
        entries: &[TocEntry],
        depth: u8,
        chapter_start: &HashMap<String, u32>,
        anchors: &HashMap<(String, String), u32>,
        prev: &mut u32,
        out: &mut Vec<Heading>,
    ) {
        for e in entries {
            let line = first_placed(e, chapter_start, anchors).unwrap_or(*prev);
            *prev = line;
            out.push(Heading {
                level: depth,
                title: if e.label.is_empty() {
                    "(untitled)".to_string()
                } else {
                    e.label.clone()
                },
                line,
            });
            walk(
                &e.children,
                depth.saturating_add(1),
                chapter_start,
                anchors,
                prev,
                out,
            );
        }
    }
    let mut out = Vec::new();
    let mut prev = 1;
    walk(toc, 1, chapter_start, anchors, &mut prev, &mut out);
    out
}

/// XHTML writes `<title/>` or `<script src="x"/>`; an HTML parser reads those as start tags whose
/// raw text runs to the end of the file. Such elements are given an explicit end tag.
fn fix_self_closing(source: &str) -> String {
    const RAW: [&str; 7] = [
        "title", "script", "style", "textarea", "iframe", "noscript", "xmp",
    ];
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(lt) = rest.find('<') {
        out.push_str(&rest[..lt]);
        rest = &rest[lt..];
        let Some(gt) = rest.find('>') else {
            break;
        };
        let tag = &rest[..=gt];
        let name: String = tag[1..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == ':')
            .collect::<String>()
            .to_ascii_lowercase();
        let local = name.rsplit(':').next().unwrap_or("");
        if tag.ends_with("/>") && RAW.contains(&local) {
            out.push_str(&tag[..tag.len() - 2]);
            out.push_str("></");
            out.push_str(&name);
            out.push('>');
        } else {
            out.push_str(tag);
        }
        rest = &rest[gt + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_closing_raw_text_elements() {
        assert_eq!(
            fix_self_closing("<head><title/><script src='a'/></head><p>x<br/></p>"),
            "<head><title></title><script src='a'></script></head><p>x<br/></p>"
        );
    }

    #[test]
    fn ncx_nesting_and_targets() {
        let xml = r#"<ncx><navMap>
          <navPoint id="a"><navLabel><text>One</text></navLabel><content src="t/one.html"/>
            <navPoint id="b"><navLabel><text>One.a</text></navLabel><content src="t/one.html#x%20y"/></navPoint>
          </navPoint>
          <navPoint id="c"><navLabel><text>Two</text></navLabel><content src="two.html"/></navPoint>
        </navMap></ncx>"#;
        let toc = ncx_toc(xml, "OEBPS/toc.ncx");
        assert_eq!(toc.len(), 2);
        assert_eq!(toc[0].label, "One");
        assert_eq!(
            toc[0].children[0].target,
            Some(("OEBPS/t/one.html".to_string(), Some("x y".to_string())))
        );
        let mut chapters = HashMap::new();
        chapters.insert("OEBPS/t/one.html".to_string(), 1);
        chapters.insert("OEBPS/two.html".to_string(), 9);
        let mut anchors = HashMap::new();
        anchors.insert(("OEBPS/t/one.html".to_string(), "x y".to_string()), 4);
        let flat = place(&toc, &chapters, &anchors);
        let got: Vec<_> = flat
            .iter()
            .map(|h| (h.level, h.title.as_str(), h.line))
            .collect();
        assert_eq!(got, [(1, "One", 1), (2, "One.a", 4), (1, "Two", 9)]);
    }

    #[test]
    fn nav_entries_without_links_take_their_first_child() {
        let nav = r##"<html><body><nav epub:type="landmarks"><ol><li><a href="#x">L</a></li></ol></nav>
          <nav epub:type="toc"><ol><li><a>Group</a><ol><li><a href="c.xhtml#s">Sub</a></li></ol></li></ol></nav>
          </body></html>"##;
        let toc = nav_toc(nav, "EPUB/nav.xhtml");
        assert_eq!(toc.len(), 1);
        assert_eq!(toc[0].label, "Group");
        assert!(toc[0].target.is_none());
        let mut anchors = HashMap::new();
        anchors.insert(("EPUB/c.xhtml".to_string(), "s".to_string()), 7);
        let flat = place(&toc, &HashMap::new(), &anchors);
        assert_eq!(flat[0].line, 7);
        assert_eq!(flat[1].line, 7);
    }
}
