//! Markdown and MDX: the file's own text, an outline from its ATX and setext headings.

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
        let text = normalize_newlines(decoded.text);
        let parsed = parse(&text);
        let total_lines = text.split('\n').count() as u32;
        let title = parsed.front_matter_title.or_else(|| {
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
        assert_eq!(out.outline[0].start_line, 10);
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
