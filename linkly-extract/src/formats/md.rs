//! Markdown and MDX: the file's own text, an outline from its ATX and setext headings.
//!
//! **Front matter is metadata, never text.** A leading YAML block (`---` on the first line, a
//! `key: value` line, up to a closing `---` or `...`; [`split_front_matter`]) is taken out of
//! the text: it is not indexed, not counted and not shown by `read` as body lines. Line 1 is
//! the first line after the block, so `read`, `grep` and the outline number the body as an
//! agent sees it (and as `note_save` takes a note's body back). Its `title:` is the document's
//! title; the tools read its other fields from the file when they show them.

use linkly_core::{DocType, Heading, OutlineNode, SkipReason};
use pulldown_cmark::{Event, MetadataBlockKind, Options, Parser, Tag, TagEnd};

use crate::encoding;
use crate::formats::normalize_newlines;
use crate::{Extracted, Extractor, Input};

/// Markdown files (`.md`, `.mdx`, `.markdown`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Markdown;

impl Extractor for Markdown {
    fn doc_type(&self) -> DocType {
        DocType::Md
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["md", "mdx", "markdown"]
    }

    fn extract(&self, input: &Input<'_>) -> Result<Extracted, SkipReason> {
        let decoded = encoding::decode(input.bytes);
        let encoding = decoded.name();
        let whole = normalize_newlines(decoded.text);
        let (front_matter_title, text) = match split_front_matter(&whole) {
            Some(fm) => (
                front_matter_field(fm.block, "title"),
                whole[fm.body_offset..].to_string(),
            ),
            None => (None, whole),
        };
        let parsed = parse(&text);
        let total_lines = text.split('\n').count() as u32;
        let title = front_matter_title
            .or(parsed.front_matter_title)
            .or_else(|| {
                parsed
                    .headings
                    .iter()
                    .find(|h| h.level == 1)
                    .map(|h| h.title.clone())
            });
        let outline = OutlineNode::from_headings(&parsed.headings, total_lines);
        Ok(Extracted {
            doc_type: DocType::Md,
            text,
            title,
            outline,
            encoding: Some(encoding),
        })
    }
}

/// A leading YAML front-matter block of a Markdown text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrontMatterBlock<'a> {
    /// The lines between the opening and the closing line, each ending in a line break.
    pub block: &'a str,
    /// The byte offset of the body: the first byte after the closing line.
    pub body_offset: usize,
    /// The lines the block takes in the file, both delimiters included: file line
    /// `lines + n` is body line `n`.
    pub lines: u32,
}

/// The leading YAML front matter of a Markdown text, if it has one: an optional BOM, `---`
/// alone on the first line, a first line after it that is not blank, at least one
/// `key: value` line, and a closing `---` or `...` line. Anything else (a thematic break, a
/// block never closed) is body. Line ends may be `\n` or `\r\n`.
pub fn split_front_matter(text: &str) -> Option<FrontMatterBlock<'_>> {
    let start = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let rest = &text[start..];
    let open = if rest.starts_with("---\n") {
        4
    } else if rest.starts_with("---\r\n") {
        5
    } else {
        return None;
    };
    let inner_start = start + open;
    let mut offset = inner_start;
    let mut has_key = false;
    // `lines`: the lines taken so far, the opening one and this one included.
    for (lines, raw) in (2u32..).zip(text[inner_start..].split_inclusive('\n')) {
        let line = raw.trim_end_matches(['\n', '\r']);
        let first = offset == inner_start;
        offset += raw.len();
        let closing = line.trim_end() == "---" || line.trim_end() == "...";
        if first && (line.trim().is_empty() || closing) {
            return None;
        }
        if closing {
            return has_key.then_some(FrontMatterBlock {
                block: &text[inner_start..offset - raw.len()],
                body_offset: offset,
                lines,
            });
        }
        if !line.starts_with([' ', '\t', '#', '-']) && line.contains(':') {
            has_key = true;
        }
    }
    None
}

struct Parsed {
    headings: Vec<Heading>,
    front_matter_title: Option<String>,
}

fn parse(text: &str) -> Parsed {
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line_of = |offset: usize| -> u32 {
        // Number of line starts at or before `offset` = the 1-based line.
        line_starts.partition_point(|&s| s <= offset) as u32
    };

    let options = Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_PLUSES_DELIMITED_METADATA_BLOCKS
        | Options::ENABLE_HEADING_ATTRIBUTES
        | Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_FOOTNOTES;
    let mut headings = Vec::new();
    let mut front_matter_title = None;
    let mut in_metadata: Option<MetadataBlockKind> = None;
    let mut current: Option<(u8, u32, String)> = None;

    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        match event {
            Event::Start(Tag::MetadataBlock(kind)) => in_metadata = Some(kind),
            Event::End(TagEnd::MetadataBlock(_)) => in_metadata = None,
            Event::Text(t) if in_metadata.is_some() && front_matter_title.is_none() => {
                front_matter_title = front_matter_field(&t, "title");
            }
            Event::Text(_) if in_metadata.is_some() => {}
            Event::Start(Tag::Heading { level, .. }) => {
                current = Some((level as u8, line_of(range.start), String::new()));
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, line, raw)) = current.take() {
                    let title = clean_title(&raw);
                    if !title.is_empty() {
                        headings.push(Heading { level, title, line });
                    }
                }
            }
            Event::Text(t) | Event::Code(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                if let Some((_, _, raw)) = current.as_mut() {
                    raw.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((_, _, raw)) = current.as_mut() {
                    raw.push(' ');
                }
            }
            _ => {}
        }
    }
    Parsed {
        headings,
        front_matter_title,
    }
}

/// A top-level `key: value` of a YAML (or TOML `key = value`) front-matter block, unquoted.
fn front_matter_field(block: &str, key: &str) -> Option<String> {
    for line in block.lines() {
        let Some(rest) = line.strip_prefix(key) else {
            continue;
        };
        let rest = rest.trim_start();
        let Some(value) = rest.strip_prefix(':').or_else(|| rest.strip_prefix('=')) else {
            continue;
        };
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value)
            .trim();
        if !value.is_empty() && value != "|" && value != ">" {
            return Some(value.to_string());
        }
    }
    None
}

/// Joins a heading's text on one line, without MDX `{/*id*/}` anchors or `{#id}` attributes.
fn clean_title(raw: &str) -> String {
    let mut s = raw.to_string();
    // `{/*id*/}`; the asterisks may already be gone if they were parsed as emphasis.
    while let Some(start) = s.find("{/") {
        let Some(len) = s[start..].find("/}") else {
            break;
        };
        let inner = &s[start + 2..start + len];
        if inner.contains(['{', '}']) {
            break;
        }
        s.replace_range(start..start + len + 2, " ");
    }
    // `{#id}` left over when heading attributes were not recognised.
    if let Some(start) = s.rfind("{#")
        && s.trim_end().ends_with('}')
        && !s[start + 2..]
            .trim_end()
            .trim_end_matches('}')
            .contains(['{', '}'])
    {
        s.truncate(start);
    }
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn run(text: &str) -> Extracted {
        Markdown
            .extract(&Input {
                path: Path::new("a.md"),
                bytes: text.as_bytes(),
            })
            .unwrap()
    }

    fn titles(nodes: &[OutlineNode]) -> Vec<String> {
        nodes.iter().map(|n| n.title.clone()).collect()
    }

    #[test]
    fn atx_and_setext_with_lines() {
        let src = "# Top\n\nintro\n\n## Sub `code` *em*\n\ntext\n\nSetext\n------\n\nmore\n";
        let out = run(src);
        assert_eq!(out.text, src);
        assert_eq!(out.title.as_deref(), Some("Top"));
        assert_eq!(out.outline.len(), 1);
        let top = &out.outline[0];
        assert_eq!((top.start_line, top.end_line), (1, 13));
        assert_eq!(titles(&top.children), ["Sub code em", "Setext"]);
        assert_eq!(top.children[0].start_line, 5);
        assert_eq!(top.children[0].end_line, 8);
        assert_eq!(top.children[1].start_line, 9);
    }

    #[test]
    fn fenced_code_and_front_matter_are_not_headings() {
        let src = "---\ntitle: \"Front Title\"\n# not: heading\n---\n\n```sh\n# comment\n```\n\n## Real\n";
        let out = run(src);
        assert_eq!(out.title.as_deref(), Some("Front Title"));
        assert_eq!(titles(&out.outline), ["Real"]);
        // Line 1 is the first line after the front matter.
        assert_eq!(out.outline[0].start_line, 6);
        assert!(out.text.starts_with("\n```sh\n"), "{:?}", out.text);
        assert!(!out.text.contains("Front Title"));
    }

    #[test]
    fn front_matter_is_metadata_not_text() {
        let src = "---\nnote_id: 1b4e28ba-2fa1-11d2-883f-0016d3cca427\ncreated_at: 2026-04-30T19:45:00.450Z\ntitle: 'Owls'\n---\nBarn owls hunt at night #wildlife\n";
        let out = run(src);
        assert_eq!(out.text.trim_end(), "Barn owls hunt at night #wildlife");
        assert_eq!(out.title.as_deref(), Some("Owls"));
        let fm = split_front_matter(src).unwrap();
        assert_eq!(fm.lines, 5);
        assert_eq!(
            &src[fm.body_offset..],
            "Barn owls hunt at night #wildlife\n"
        );
        assert!(fm.block.starts_with("note_id:") && fm.block.ends_with(".450Z\ntitle: 'Owls'\n"));
        // CRLF, a BOM and a `...` closing line.
        let crlf = "\u{feff}---\r\ntitle: x\r\n...\r\nBody";
        assert_eq!(
            &crlf[split_front_matter(crlf).unwrap().body_offset..],
            "Body"
        );
    }

    #[test]
    fn what_is_not_front_matter_stays_text() {
        for src in [
            "---\n\ntitle: x\n---\nbody",        // blank line after the opening
            "---\nJust a rule above\n---\nbody", // no key: a rule and a setext heading
            "---\ntitle: never closed\n",
            "---\n---\nbody",
            "text\n---\ntitle: x\n---\n",
            " ---\ntitle: x\n---\n",
        ] {
            assert!(split_front_matter(src).is_none(), "{src:?}");
            assert_eq!(run(src).text, src, "{src:?}");
        }
    }

    #[test]
    fn anchors_are_stripped() {
        let out = run("## Paso 1: Separa {/*step-1-break*/}\n\n# 组件基础 {#components-basics}\n");
        assert_eq!(titles(&out.outline), ["Paso 1: Separa", "组件基础"]);
        assert_eq!(out.title.as_deref(), Some("组件基础"));
    }

    #[test]
    fn crlf_lines_match() {
        let out = run("a\r\n\r\n# H\r\n");
        assert_eq!(out.outline[0].start_line, 3);
        assert_eq!(out.text.split('\n').nth(2), Some("# H"));
    }

    #[test]
    fn title_cleaning() {
        assert_eq!(clean_title("A {/step/}"), "A");
        assert_eq!(clean_title("  a   b  "), "a b");
        assert_eq!(clean_title("x {#id}"), "x");
    }
}
