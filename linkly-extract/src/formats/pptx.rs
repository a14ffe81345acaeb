//! PPTX (PowerPoint 2007+): slides in presentation order, each under a `## Slide N: Title` line
//! with its text, tables and SmartArt, then its speaker notes as `Notes: ` lines. The outline has
//! one node per slide, titled by its title placeholder (else its first text).

use std::collections::HashMap;

use linkly_core::{DocType, OutlineNode, SkipReason};

use crate::formats::ooxml::{self, Package, Rel, Xml, XmlParser, collapse, push_line, table_lines};
use crate::{Extracted, Extractor, Input};

/// PowerPoint presentations (`.pptx`, `.pptm`, `.ppsx`, `.potx`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Pptx;

/// The longest slide title taken from a slide's first text.
const MAX_TITLE_CHARS: usize = 80;

impl Extractor for Pptx {
    fn doc_type(&self) -> DocType {
        DocType::Pptx
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["pptx", "pptm", "ppsx", "ppsm", "potx", "potm"]
    }

    fn extract(&self, input: &Input<'_>) -> Result<Extracted, SkipReason> {
        let mut pkg = Package::open(input.bytes, "PPTX")?;
        let (main, presentation) = pkg.main_part("ppt/presentation.xml", "presentation")?;
        let rels = pkg.rels(&main);
        let slides = slide_order(&presentation, &rels);

        let mut lines: Vec<String> = Vec::new();
        let mut outline = Vec::new();
        let mut first_title = None;
        for (i, slide_part) in slides.iter().enumerate() {
            let number = i + 1;
            let Some(xml) = pkg.read_text(slide_part) else {
                continue;
            };
            let slide_rels = pkg.rels(slide_part);
            let mut shapes = parse_shapes(&xml);
            add_smartart(&mut pkg, &slide_rels, &mut shapes);

            let title = shapes
                .iter()
                .find(|s| matches!(s.ph.as_deref(), Some("title" | "ctrTitle")))
                .map(|s| s.joined())
                .filter(|t| !t.is_empty());
            if first_title.is_none() {
                first_title.clone_from(&title);
            }
            let body: Vec<&Shape> = shapes
                .iter()
                .filter(|s| {
                    !matches!(
                        s.ph.as_deref(),
                        Some("title" | "ctrTitle" | "sldNum" | "dt")
                    )
                })
                .collect();
            let label = match &title {
                Some(t) => format!("Slide {number}: {t}"),
                None => match first_text(&body) {
                    Some(first) => {
                        let cut = linkly_core::stdx::truncate_chars(&first, MAX_TITLE_CHARS);
                        if cut.len() < first.len() {
                            format!("Slide {number}: {cut}…")
                        } else {
                            format!("Slide {number}: {first}")
                        }
                    }
                    None => format!("Slide {number}"),
                },
            };

            push_line(&mut lines, String::new());
            lines.push(format!("## {label}"));
            let start = lines.len() as u32;
            for shape in body {
                shape.write(&mut lines, "");
            }
            // Speaker notes: the body placeholder of the notes slide.
            if let Some(notes) = slide_rels.values().find(|r| r.is("notesSlide"))
                && let Some(notes_xml) = pkg.read_text(&notes.target)
            {
                for shape in parse_shapes(&notes_xml)
                    .iter()
                    .filter(|s| matches!(s.ph.as_deref(), Some("body")))
                {
                    shape.write(&mut lines, "Notes: ");
                }
            }
            while lines.last().is_some_and(|l| l.is_empty()) {
                lines.pop();
            }
            outline.push(OutlineNode::new(label, start, lines.len() as u32));
        }
        if lines.is_empty() {
            return Err(SkipReason::new(
                SkipReason::EMPTY,
                "the presentation has no slides",
            ));
        }
        let title = ooxml::core_title(&mut pkg).or(first_title);
        Ok(Extracted {
            doc_type: DocType::Pptx,
            text: lines.join("\n"),
            title,
            outline,
            encoding: None,
        })
    }
}

/// A slide's first paragraph, else its first table's text.
fn first_text(shapes: &[&Shape]) -> Option<String> {
    let paragraph = shapes.iter().flat_map(|s| &s.blocks).find_map(|b| match b {
        Block::Para(t) => Some(collapse(t)).filter(|t| !t.is_empty()),
        Block::Table(_) => None,
    });
    paragraph.or_else(|| shapes.iter().map(|s| s.joined()).find(|t| !t.is_empty()))
}

/// The slide parts in presentation order (`p:sldIdLst`), resolved through the relationships.
fn slide_order(presentation: &str, rels: &HashMap<String, Rel>) -> Vec<String> {
    let mut out = Vec::new();
    let mut p = XmlParser::new(presentation);
    while let Some(ev) = p.next() {
        if let Xml::Start(el) = ev
            && el.name == "sldId"
            && let Some(id) = el.prefixed_attr("id")
            && let Some(rel) = rels.get(id)
        {
            out.push(rel.target.clone());
        }
    }
    if out.is_empty() {
        // No list (or an unreadable one): every slide relationship, by number.
        let mut slides: Vec<&Rel> = rels.values().filter(|r| r.is("slide")).collect();
        slides.sort_by_key(|r| {
            let digits: String = r.target.chars().filter(char::is_ascii_digit).collect();
            (digits.parse::<u64>().unwrap_or(0), r.target.clone())
        });
        out = slides.into_iter().map(|r| r.target.clone()).collect();
    }
    out
}

/// What a shape holds.
#[derive(Debug)]
enum Block {
    Para(String),
    Table(Vec<Vec<String>>),
}

/// A shape (text box, placeholder, table frame) of a slide.
#[derive(Debug, Default)]
struct Shape {
    /// The placeholder type (`title`, `ctrTitle`, `body`, `sldNum`...); `obj` for an untyped
    /// placeholder.
    ph: Option<String>,
    blocks: Vec<Block>,
    /// SmartArt data parts referenced by the shape (relationship ids).
    diagrams: Vec<String>,
}

impl Shape {
    /// The shape's text on one line.
    fn joined(&self) -> String {
        let parts: Vec<String> = self
            .blocks
            .iter()
            .map(|b| match b {
                Block::Para(t) => collapse(t),
                Block::Table(rows) => ooxml::table_on_one_line(rows),
            })
            .filter(|t| !t.is_empty())
            .collect();
        parts.join(" ")
    }

    fn write(&self, lines: &mut Vec<String>, prefix: &str) {
        for block in &self.blocks {
            match block {
                Block::Para(text) => {
                    for part in text.split('\n') {
                        let part = part.trim();
                        if !part.is_empty() {
                            push_line(lines, format!("{prefix}{part}"));
                        }
                    }
                }
                Block::Table(rows) => {
                    let rendered = table_lines(rows);
                    if rendered.is_empty() {
                        continue;
                    }
                    push_line(lines, String::new());
                    for line in rendered {
                        push_line(lines, format!("{prefix}{line}"));
                    }
                    push_line(lines, String::new());
                }
            }
        }
    }
}

/// Reads the shapes of a slide (or notes slide) in document order.
fn parse_shapes(xml: &str) -> Vec<Shape> {
    let mut shapes = Vec::new();
    let mut shape: Option<Shape> = None;
    let mut para: Option<String> = None;
    let mut in_t = false;
    let mut rows: Option<Vec<Vec<String>>> = None;
    let mut row: Option<Vec<String>> = None;
    let mut cell: Option<Vec<String>> = None;
    let mut p = XmlParser::new(xml);
    while let Some(ev) = p.next() {
        match ev {
            Xml::Start(el) => match el.name.as_str() {
                "sp" | "graphicFrame" | "cxnSp" => {
                    if let Some(done) = shape.take() {
                        shapes.push(done);
                    }
                    shape = Some(Shape::default());
                }
                "ph" => {
                    if let Some(s) = shape.as_mut() {
                        s.ph = Some(el.attr("type").unwrap_or("obj").to_string());
                    }
                }
                "relIds" => {
                    if let Some(s) = shape.as_mut()
                        && let Some(dm) = el.prefixed_attr("dm")
                    {
                        s.diagrams.push(dm.to_string());
                    }
                }
                "Fallback" | "spPr" | "style" | "bodyPr" | "lstStyle" | "rPr" | "pPr"
                | "endParaRPr" | "extLst" | "tblPr" | "tblGrid" | "tcPr" => p.skip(),
                "p" => para = Some(String::new()),
                "t" => in_t = true,
                "br" => {
                    if let Some(t) = para.as_mut() {
                        t.push('\n');
                    }
                }
                "tbl" => rows = Some(Vec::new()),
                "tr" => row = Some(Vec::new()),
                // A spanning cell is followed by its covered (`hMerge`) cells: no padding.
                "tc" => cell = Some(Vec::new()),
                _ => {}
            },
            Xml::End(name) => match name.as_str() {
                "t" => in_t = false,
                "p" => {
                    if let Some(text) = para.take() {
                        if let Some(texts) = cell.as_mut() {
                            let text = collapse(&text);
                            if !text.is_empty() {
                                texts.push(text);
                            }
                        } else if let Some(s) = shape.as_mut()
                            && !text.trim().is_empty()
                        {
                            s.blocks.push(Block::Para(text));
                        }
                    }
                }
                "tc" => {
                    if let (Some(texts), Some(r)) = (cell.take(), row.as_mut()) {
                        r.push(texts.join(" "));
                    }
                }
                "tr" => {
                    if let (Some(r), Some(all)) = (row.take(), rows.as_mut()) {
                        all.push(r);
                    }
                }
                "tbl" => {
                    if let Some(mut all) = rows.take() {
                        all.retain(|r| r.iter().any(|c| !c.trim().is_empty()));
                        if let Some(s) = shape.as_mut()
                            && !all.is_empty()
                        {
                            s.blocks.push(Block::Table(all));
                        }
                    }
                }
                "sp" | "graphicFrame" | "cxnSp" => {
                    if let Some(done) = shape.take() {
                        shapes.push(done);
                    }
                }
                _ => {}
            },
            Xml::Text(t) => {
                if in_t && let Some(text) = para.as_mut() {
                    // Private-use characters are symbol-font glyphs: no text.
                    text.extend(t.chars().filter(|c| !('\u{E000}'..='\u{F8FF}').contains(c)));
                }
            }
        }
    }
    if let Some(done) = shape.take() {
        shapes.push(done);
    }
    shapes
}

/// Adds the text of SmartArt diagrams (their data parts) to the shapes that show them.
fn add_smartart(pkg: &mut Package<'_>, rels: &HashMap<String, Rel>, shapes: &mut [Shape]) {
    for shape in shapes.iter_mut() {
        for id in std::mem::take(&mut shape.diagrams) {
            let Some(rel) = rels.get(&id) else {
                continue;
            };
            let Some(xml) = pkg.read_text(&rel.target) else {
                continue;
            };
            for s in parse_shapes_loose(&xml) {
                shape.blocks.push(Block::Para(s));
            }
        }
    }
}

/// Every `a:p` paragraph of a part, in order (SmartArt data has no shapes).
fn parse_shapes_loose(xml: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut para: Option<String> = None;
    let mut in_t = false;
    let mut p = XmlParser::new(xml);
    while let Some(ev) = p.next() {
        match ev {
            Xml::Start(el) => match el.name.as_str() {
                "p" => para = Some(String::new()),
                "t" => in_t = true,
                "extLst" | "spPr" | "rPr" => p.skip(),
                _ => {}
            },
            Xml::End(name) => match name.as_str() {
                "t" => in_t = false,
                "p" => {
                    if let Some(t) = para.take().map(|t| collapse(&t))
                        && !t.is_empty()
                    {
                        out.push(t);
                    }
                }
                _ => {}
            },
            Xml::Text(t) => {
                if in_t && let Some(text) = para.as_mut() {
                    text.push_str(&t);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_titles_tables() {
        let xml = r#"<p:sld xmlns:p="p" xmlns:a="a"><p:cSld><p:spTree>
          <p:sp><p:nvSpPr><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr>
            <p:txBody><a:p><a:r><a:t>Big</a:t></a:r><a:br/><a:r><a:t>Title</a:t></a:r></a:p></p:txBody></p:sp>
          <p:grpSp><p:sp><p:txBody><a:p><a:r><a:rPr lang="en"/><a:t>grouped</a:t></a:r></a:p></p:txBody></p:sp></p:grpSp>
          <p:graphicFrame><a:graphic><a:graphicData><a:tbl><a:tblGrid/>
            <a:tr><a:tc gridSpan="2"><a:txBody><a:p><a:r><a:t>h</a:t></a:r></a:p></a:txBody></a:tc><a:tc hMerge="1"/></a:tr>
            <a:tr><a:tc><a:txBody><a:p><a:r><a:t>1</a:t></a:r></a:p></a:txBody></a:tc>
                  <a:tc><a:txBody><a:p><a:r><a:t>2</a:t></a:r></a:p></a:txBody></a:tc></a:tr>
          </a:tbl></a:graphicData></a:graphic></p:graphicFrame>
        </p:spTree></p:cSld></p:sld>"#;
        let shapes = parse_shapes(xml);
        assert_eq!(shapes[0].ph.as_deref(), Some("title"));
        assert_eq!(shapes[0].joined(), "Big Title");
        assert_eq!(shapes[1].joined(), "grouped");
        let mut lines = Vec::new();
        shapes[2].write(&mut lines, "");
        assert_eq!(lines, ["| h |  |", "| --- | --- |", "| 1 | 2 |", ""]);
    }
}
