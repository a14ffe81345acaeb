//! DOCX (Word 2007+): paragraphs in reading order, heading styles → outline, tables as
//! GitHub-style tables, list items as `- `, text boxes after the paragraph that anchors them,
//! then footnotes, endnotes, headers and footers at the end.
//!
//! Read with `zip` + `quick-xml` rather than `docx-rs`: see `docs/formats-docx.md`.

use std::collections::{HashMap, HashSet};

use linkly_core::{DocType, Heading, OutlineNode, SkipReason};

use crate::formats::ooxml::{
    self, Child, Package, Xml, XmlParser, collapse, push_line, table_lines,
};
use crate::{Extracted, Extractor, Input};

/// Word documents (`.docx`, `.docm`, `.dotx`, `.dotm`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Docx;

impl Extractor for Docx {
    fn doc_type(&self) -> DocType {
        DocType::Docx
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["docx", "docm", "dotx", "dotm"]
    }

    fn extract(&self, input: &Input<'_>) -> Result<Extracted, SkipReason> {
        let mut pkg = Package::open(input.bytes, "DOCX")?;
        let (main, document) = pkg.main_part("word/document.xml", "main document")?;
        let (dir, _) = ooxml::split_dir(&main);
        let dir = dir.to_string();
        let styles = pkg
            .read_text(&format!("{dir}/styles.xml"))
            .map(|x| Styles::parse(&x))
            .unwrap_or_default();

        let mut out = Output::default();
        let complete = out.part(&document, &styles, "", true);
        if !complete && out.lines.is_empty() {
            return Err(SkipReason::new(
                SkipReason::CORRUPT,
                "the main document part is not well-formed XML",
            ));
        }

        // Notes, then headers and footers, all at the end.
        let rels = pkg.rels(&main);
        let mut extra: Vec<(u8, String)> = rels
            .values()
            .filter_map(|r| {
                let order = if r.is("footnotes") {
                    0
                } else if r.is("endnotes") {
                    1
                } else if r.is("header") {
                    2
                } else if r.is("footer") {
                    3
                } else {
                    return None;
                };
                Some((order, r.target.clone()))
            })
            .collect();
        extra.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| natural_key(&a.1).cmp(&natural_key(&b.1)))
        });
        extra.dedup();
        let mut seen_headers: HashSet<Vec<String>> = HashSet::new();
        for (order, target) in extra {
            let Some(xml) = pkg.read_text(&target) else {
                continue;
            };
            let mut part = Output::default();
            let prefix = match order {
                2 => "Header: ",
                3 => "Footer: ",
                _ => "",
            };
            part.part(&xml, &styles, prefix, false);
            if part.lines.is_empty() || (order >= 2 && !seen_headers.insert(part.lines.clone())) {
                continue;
            }
            push_line(&mut out.lines, String::new());
            for line in part.lines {
                push_line(&mut out.lines, line);
            }
        }

        while out.lines.last().is_some_and(|l| l.is_empty()) {
            out.lines.pop();
        }
        if out.lines.is_empty() {
            return Err(SkipReason::new(
                SkipReason::EMPTY,
                "the document has no text",
            ));
        }
        let total = out.lines.len() as u32;
        let title = ooxml::core_title(&mut pkg).or(out.title_para);
        Ok(Extracted {
            doc_type: DocType::Docx,
            text: out.lines.join("\n"),
            title,
            outline: OutlineNode::from_headings(&out.headings, total),
            encoding: None,
        })
    }
}

/// `header10.xml` after `header2.xml`.
fn natural_key(s: &str) -> (String, u64) {
    let digits: String = s
        .chars()
        .rev()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let stem: String = s.chars().filter(|c| !c.is_ascii_digit()).collect();
    (stem, digits.parse().unwrap_or(0))
}

/// A paragraph style, as far as headings and lists care.
#[derive(Debug, Clone, Default)]
struct StyleDef {
    name: String,
    outline: Option<u8>,
    based_on: Option<String>,
    numbered: bool,
}

/// The paragraph styles of `styles.xml`, by style id.
#[derive(Debug, Clone, Default)]
struct Styles {
    defs: HashMap<String, StyleDef>,
}

impl Styles {
    fn parse(xml: &str) -> Styles {
        let mut defs = HashMap::new();
        let mut p = XmlParser::new(xml);
        let mut current: Option<(String, StyleDef)> = None;
        while let Some(ev) = p.next() {
            match ev {
                Xml::Start(el) => match el.name.as_str() {
                    "style" => {
                        let id = el.attr("w:styleId").unwrap_or_default().to_string();
                        let paragraph = el.attr("w:type").is_none_or(|t| t == "paragraph");
                        if !paragraph {
                            p.skip();
                            continue;
                        }
                        current = Some((id, StyleDef::default()));
                    }
                    "name" => {
                        if let Some((_, def)) = current.as_mut() {
                            def.name = el.attr("w:val").unwrap_or_default().to_lowercase();
                        }
                    }
                    "basedOn" => {
                        if let Some((_, def)) = current.as_mut() {
                            def.based_on = el.attr("w:val").map(str::to_string);
                        }
                    }
                    "outlineLvl" => {
                        if let Some((_, def)) = current.as_mut() {
                            def.outline = el.attr("w:val").and_then(|v| v.parse().ok());
                        }
                    }
                    "numId" => {
                        if let Some((_, def)) = current.as_mut() {
                            def.numbered = el.attr("w:val").is_some_and(|v| v != "0");
                        }
                    }
                    "rPr" | "tblPr" | "tcPr" | "trPr" | "tblStylePr" => p.skip(),
                    _ => {}
                },
                Xml::End(name) if name == "style" => {
                    if let Some((id, def)) = current.take() {
                        defs.insert(id, def);
                    }
                }
                _ => {}
            }
        }
        Styles { defs }
    }

    /// The heading level (1–9) a paragraph style gives: `Title`, `heading N` by name or id, or
    /// an outline level, inherited through `basedOn`.
    fn level(&self, id: &str) -> Option<u8> {
        let mut id = id;
        for _ in 0..12 {
            let def = self.defs.get(id);
            let name = def.map(|d| d.name.as_str()).unwrap_or("");
            if let Some(level) = level_from_name(name).or_else(|| {
                // Without styles.xml, ids like `Heading2` are all there is to go by; with it, an
                // id it does not define is a plain paragraph (as Word shows it).
                if def.is_none() && self.defs.is_empty() {
                    level_from_name(&id.to_lowercase())
                } else {
                    None
                }
            }) {
                return Some(level);
            }
            if let Some(def) = def {
                match def.outline {
                    Some(v @ 0..=8) => return Some(v + 1),
                    Some(_) => return None,
                    None => {}
                }
                match def.based_on.as_deref() {
                    Some(base) if base != id => id = base,
                    _ => return None,
                }
            } else {
                return None;
            }
        }
        None
    }

    fn is_title(&self, id: &str) -> bool {
        match self.defs.get(id) {
            Some(def) => def.name == "title",
            None => id.eq_ignore_ascii_case("title"),
        }
    }

    /// Whether the style (or one it is based on) carries list numbering.
    fn numbered(&self, id: &str) -> bool {
        let mut id = id;
        for _ in 0..12 {
            let Some(def) = self.defs.get(id) else {
                return false;
            };
            if def.numbered {
                return true;
            }
            match def.based_on.as_deref() {
                Some(base) if base != id => id = base,
                _ => return false,
            }
        }
        false
    }
}

/// `title` → 1, `heading 3` / `heading3` → 3.
fn level_from_name(name: &str) -> Option<u8> {
    if name == "title" {
        return Some(1);
    }
    let rest = name.strip_prefix("heading")?.trim_start();
    match rest.parse::<u8>() {
        Ok(n @ 1..=9) => Some(n),
        _ => None,
    }
}

/// A paragraph being read.
#[derive(Debug, Default)]
struct Para {
    text: String,
    style: Option<String>,
    /// Outline level set on the paragraph itself (0–9; 9 = body text).
    outline: Option<u8>,
    /// List level when the paragraph is numbered.
    list: Option<u32>,
    /// Text boxes anchored in the paragraph, delivered after it.
    after: Vec<Block>,
}

/// A finished block of content.
#[derive(Debug)]
enum Block {
    Para {
        text: String,
        heading: Option<u8>,
        title: bool,
        list: Option<u32>,
    },
    Table(Vec<Vec<String>>),
}

/// An open container paragraphs are delivered to.
#[derive(Debug)]
enum Frame {
    Table(Vec<Vec<String>>),
    Row(Vec<String>),
    Cell { texts: Vec<String>, span: usize },
    TextBox(Vec<Block>),
}

/// The lines and headings of one or more parts.
#[derive(Debug, Default)]
struct Output {
    lines: Vec<String>,
    headings: Vec<Heading>,
    title_para: Option<String>,
}

impl Output {
    /// Reads one part (document, notes, header or footer) into lines. False when the XML broke
    /// off before its end.
    fn part(&mut self, xml: &str, styles: &Styles, line_prefix: &str, headings: bool) -> bool {
        let mut r = PartReader {
            out: self,
            styles,
            line_prefix,
            headings,
            paras: Vec::new(),
            frames: Vec::new(),
            in_t: false,
            note_prefix: None,
        };
        let mut p = XmlParser::new(xml);
        while let Some(ev) = p.next() {
            r.event(ev, &mut p);
        }
        // Whatever is still open (truncated XML) is delivered as is.
        while let Some(para) = r.paras.pop() {
            r.end_para(para);
        }
        !p.failed
    }
}

struct PartReader<'o, 's> {
    out: &'o mut Output,
    styles: &'s Styles,
    line_prefix: &'s str,
    headings: bool,
    paras: Vec<Para>,
    frames: Vec<Frame>,
    in_t: bool,
    /// `[^3] ` before the first line of the note being read.
    note_prefix: Option<String>,
}

impl PartReader<'_, '_> {
    fn event(&mut self, ev: Xml, p: &mut XmlParser<'_>) {
        match ev {
            Xml::Start(el) => match el.name.as_str() {
                "p" => self.paras.push(Para::default()),
                "pPr" => self.paragraph_properties(p),
                "rPr" | "sectPr" | "sdtPr" | "Fallback" | "moveFrom" | "instrText" | "delText"
                | "tblPr" | "tblGrid" | "trPr" | "fldData" | "tblPrEx" | "pPrChange"
                | "rPrChange" => p.skip(),
                "t" => self.in_t = true,
                "tab" | "ptab" => self.push_text("\t"),
                "br" | "cr" => self.push_text("\n"),
                "noBreakHyphen" => self.push_text("-"),
                "footnoteReference" => {
                    let id = el.attr("w:id").unwrap_or("?").to_string();
                    self.push_text(&format!("[^{id}]"));
                }
                "endnoteReference" => {
                    let id = el.attr("w:id").unwrap_or("?").to_string();
                    self.push_text(&format!("[^e{id}]"));
                }
                "footnote" | "endnote" => {
                    let special = el.attr("w:type").is_some_and(|t| t != "normal");
                    if special {
                        p.skip();
                    } else {
                        let id = el.attr("w:id").unwrap_or("?");
                        let mark = if el.name == "endnote" { "e" } else { "" };
                        self.note_prefix = Some(format!("[^{mark}{id}] "));
                    }
                }
                "tbl" => self.frames.push(Frame::Table(Vec::new())),
                "tr" => self.frames.push(Frame::Row(Vec::new())),
                "tc" => self.frames.push(Frame::Cell {
                    texts: Vec::new(),
                    span: 1,
                }),
                "tcPr" => self.cell_properties(p),
                "txbxContent" => self.frames.push(Frame::TextBox(Vec::new())),
                _ => {}
            },
            Xml::End(name) => match name.as_str() {
                "t" => self.in_t = false,
                "p" => {
                    if let Some(para) = self.paras.pop() {
                        self.end_para(para);
                    }
                }
                "tc" => {
                    if let Some(Frame::Cell { .. }) = self.frames.last()
                        && let Some(Frame::Cell { texts, span }) = self.frames.pop()
                        && let Some(Frame::Row(cells)) = self.frames.last_mut()
                    {
                        cells.push(texts.join(" "));
                        for _ in 1..span.min(64) {
                            cells.push(String::new());
                        }
                    }
                }
                "tr" => {
                    if let Some(Frame::Row(_)) = self.frames.last()
                        && let Some(Frame::Row(cells)) = self.frames.pop()
                        && let Some(Frame::Table(rows)) = self.frames.last_mut()
                    {
                        rows.push(cells);
                    }
                }
                "tbl" => {
                    if let Some(Frame::Table(_)) = self.frames.last()
                        && let Some(Frame::Table(rows)) = self.frames.pop()
                    {
                        self.deliver(Block::Table(rows));
                    }
                }
                "txbxContent" => {
                    if let Some(Frame::TextBox(_)) = self.frames.last()
                        && let Some(Frame::TextBox(blocks)) = self.frames.pop()
                    {
                        match self.paras.last_mut() {
                            Some(para) => para.after.extend(blocks),
                            None => blocks.into_iter().for_each(|b| self.deliver(b)),
                        }
                    }
                }
                _ => {}
            },
            Xml::Text(t) => {
                if self.in_t {
                    self.push_text(&t);
                }
            }
        }
    }

    fn push_text(&mut self, s: &str) {
        if let Some(para) = self.paras.last_mut() {
            // Private-use characters are symbol-font glyphs (Symbol, Wingdings): no text.
            para.text
                .extend(s.chars().filter(|c| !('\u{E000}'..='\u{F8FF}').contains(c)));
        }
    }

    /// Reads `w:pPr`: style, outline level, numbering.
    fn paragraph_properties(&mut self, p: &mut XmlParser<'_>) {
        let mut num_id: Option<bool> = None;
        let mut ilvl = 0u32;
        let (mut style, mut outline) = (None, None);
        p.read_inside(
            |el| {
                match el.name.as_str() {
                    "pStyle" => style = el.attr("w:val").map(str::to_string),
                    "outlineLvl" => outline = el.attr("w:val").and_then(|v| v.parse().ok()),
                    "numId" => num_id = Some(el.attr("w:val").is_some_and(|v| v != "0")),
                    "ilvl" => ilvl = el.attr("w:val").and_then(|v| v.parse().ok()).unwrap_or(0),
                    "rPr" | "pPrChange" | "sectPr" | "tabs" => return Child::Skip,
                    _ => {}
                }
                Child::Enter
            },
            |_| {},
        );
        let styles = self.styles;
        if let Some(para) = self.paras.last_mut() {
            let numbered = match num_id {
                Some(n) => n,
                None => style.as_deref().is_some_and(|s| styles.numbered(s)),
            };
            para.list = numbered.then_some(ilvl.min(8));
            para.style = style;
            para.outline = outline;
        }
    }

    /// Reads `w:tcPr` for the column span.
    fn cell_properties(&mut self, p: &mut XmlParser<'_>) {
        p.read_inside(
            |el| {
                if el.name == "gridSpan"
                    && let Some(Frame::Cell { span, .. }) = self.frames.last_mut()
                {
                    *span = el
                        .attr("w:val")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(1)
                        .max(1);
                }
                Child::Enter
            },
            |_| {},
        );
    }

    fn end_para(&mut self, para: Para) {
        let Para {
            text,
            style,
            outline,
            list,
            after,
        } = para;
        let style_level = style.as_deref().and_then(|s| self.styles.level(s));
        let heading = match outline {
            Some(v @ 0..=8) => Some(v + 1),
            Some(_) => None,
            None => style_level,
        };
        let title = style.as_deref().is_some_and(|s| self.styles.is_title(s));
        self.deliver(Block::Para {
            text,
            heading: if self.headings { heading } else { None },
            title,
            list: if heading.is_some() { None } else { list },
        });
        for block in after {
            self.deliver(block);
        }
    }

    /// Hands a finished block to the innermost open container, or writes it out.
    fn deliver(&mut self, block: Block) {
        match self.frames.last_mut() {
            Some(Frame::Cell { texts, .. }) => {
                let text = match block {
                    Block::Para { text, .. } => collapse(&text),
                    Block::Table(rows) => ooxml::table_on_one_line(&rows),
                };
                if !text.is_empty() {
                    texts.push(text);
                }
            }
            Some(Frame::TextBox(blocks)) => blocks.push(block),
            // A paragraph straight in a table or row (malformed): written out.
            _ => self.write(block),
        }
    }

    fn write(&mut self, block: Block) {
        let lines = &mut self.out.lines;
        match block {
            Block::Para {
                text,
                heading,
                title,
                list,
            } => {
                let parts: Vec<&str> = text
                    .split('\n')
                    .map(|l| l.trim_end())
                    .filter(|l| !l.trim().is_empty())
                    .collect();
                if parts.is_empty() {
                    return;
                }
                if heading.is_some() {
                    push_line(lines, String::new());
                }
                let first_line = lines.len() as u32 + 1;
                let indent = list.map(|l| "  ".repeat(l as usize)).unwrap_or_default();
                for (i, part) in parts.iter().enumerate() {
                    let mut line = String::from(self.line_prefix);
                    let mut part = *part;
                    if i == 0
                        && let Some(prefix) = self.note_prefix.take()
                    {
                        line.push_str(&prefix);
                        part = part.trim_start();
                    }
                    if list.is_some() {
                        line.push_str(&indent);
                        line.push_str(if i == 0 { "- " } else { "  " });
                        line.push_str(part.trim_start());
                    } else {
                        line.push_str(part);
                    }
                    push_line(lines, line);
                }
                let joined = collapse(&text);
                if let Some(level) = heading {
                    self.out.headings.push(Heading {
                        level,
                        title: joined.clone(),
                        line: first_line,
                    });
                }
                if title && self.out.title_para.is_none() {
                    self.out.title_para = Some(joined);
                }
            }
            Block::Table(mut rows) => {
                rows.retain(|r| r.iter().any(|c| !c.trim().is_empty()));
                let rendered = table_lines(&rows);
                if rendered.is_empty() {
                    return;
                }
                push_line(lines, String::new());
                for line in rendered {
                    push_line(lines, format!("{}{line}", self.line_prefix));
                }
                push_line(lines, String::new());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STYLES: &str = r#"<w:styles xmlns:w="w">
      <w:style w:type="paragraph" w:styleId="1"><w:name w:val="heading 1"/></w:style>
      <w:style w:type="paragraph" w:styleId="Titre2"><w:name w:val="Titre 2"/>
        <w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style>
      <w:style w:type="paragraph" w:styleId="Mine"><w:name w:val="Mine"/><w:basedOn w:val="1"/></w:style>
      <w:style w:type="paragraph" w:styleId="TOCHeading"><w:name w:val="TOC Heading"/>
        <w:basedOn w:val="1"/><w:pPr><w:outlineLvl w:val="9"/></w:pPr></w:style>
      <w:style w:type="paragraph" w:styleId="Heading"><w:name w:val="Heading"/></w:style>
      <w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/></w:style>
      <w:style w:type="character" w:styleId="Heading1Char"><w:name w:val="Heading 1 Char"/></w:style>
    </w:styles>"#;

    #[test]
    fn style_levels() {
        let s = Styles::parse(STYLES);
        assert_eq!(s.level("1"), Some(1));
        assert_eq!(s.level("Titre2"), Some(2));
        assert_eq!(s.level("Mine"), Some(1));
        assert_eq!(s.level("TOCHeading"), None);
        assert_eq!(s.level("Heading"), None);
        assert_eq!(s.level("Title"), Some(1));
        assert_eq!(
            s.level("Heading7"),
            None,
            "an id styles.xml does not define"
        );
        assert_eq!(
            Styles::default().level("Heading3"),
            Some(3),
            "no styles.xml: the id"
        );
        assert_eq!(
            s.level("Heading1Char"),
            None,
            "character styles are not loaded"
        );
        assert!(s.is_title("Title"));
    }

    #[test]
    fn body_tables_lists_textboxes() {
        let doc = r#"<w:document xmlns:w="w"><w:body>
          <w:p><w:pPr><w:pStyle w:val="Title"/></w:pPr><w:r><w:t>The Title</w:t></w:r></w:p>
          <w:p><w:pPr><w:pStyle w:val="1"/></w:pPr><w:r><w:t>Intro &amp; more</w:t></w:r></w:p>
          <w:p><w:r><w:t xml:space="preserve">Plain </w:t></w:r><w:r><w:t>text</w:t><w:footnoteReference w:id="2"/></w:r>
            <w:r><mc:AlternateContent><mc:Choice><w:drawing><w:txbxContent>
              <w:p><w:r><w:t>In a box</w:t></w:r></w:p></w:txbxContent></w:drawing></mc:Choice>
              <mc:Fallback><w:pict><w:txbxContent><w:p><w:r><w:t>In a box</w:t></w:r></w:p>
              </w:txbxContent></w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>
          <w:p><w:pPr><w:numPr><w:ilvl w:val="1"/><w:numId w:val="3"/></w:numPr></w:pPr><w:r><w:t>item</w:t></w:r></w:p>
          <w:tbl><w:tr><w:tc><w:p><w:r><w:t>a</w:t></w:r></w:p></w:tc>
            <w:tc><w:tcPr><w:gridSpan w:val="2"/></w:tcPr><w:p><w:r><w:t>b|c</w:t></w:r></w:p></w:tc></w:tr>
            <w:tr><w:tc><w:p><w:r><w:t>1</w:t></w:r></w:p><w:p><w:r><w:t>2</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
          <w:p><w:pPr><w:outlineLvl w:val="2"/></w:pPr><w:r><w:t>Deep</w:t><w:br/><w:t>er</w:t></w:r></w:p>
        </w:body></w:document>"#;
        let styles = Styles::parse(STYLES);
        let mut out = Output::default();
        assert!(out.part(doc, &styles, "", true));
        assert_eq!(
            out.lines,
            [
                "The Title",
                "",
                "Intro & more",
                "Plain text[^2]",
                "In a box",
                "  - item",
                "",
                "| a | b\\|c |  |",
                "| --- | --- | --- |",
                "| 1 2 |  |  |",
                "",
                "Deep",
                "er"
            ]
        );
        let h: Vec<_> = out
            .headings
            .iter()
            .map(|h| (h.level, h.title.as_str(), h.line))
            .collect();
        assert_eq!(
            h,
            [
                (1, "The Title", 1),
                (1, "Intro & more", 3),
                (3, "Deep er", 12)
            ]
        );
        assert_eq!(out.title_para.as_deref(), Some("The Title"));
    }
}
