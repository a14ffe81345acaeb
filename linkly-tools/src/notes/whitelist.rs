//! The Markdown whitelist of `note_save`, checked on the pulldown-cmark AST.
//!
//! Allowed: paragraphs, soft and hard line breaks, bold, strikethrough, ordered and bullet
//! lists, plain text. Everything else is an offence, reported with its kind and 1-based line.
//! The parser runs with strikethrough, tables, footnotes, task lists and front-matter blocks
//! enabled, so that those constructs are recognised (and refused) rather than read as text.

use std::collections::BTreeSet;

use pulldown_cmark::{Event, Options, Parser, Tag};

/// The parser options shared by the whitelist and the tag scanner.
pub(crate) fn parser_options() -> Options {
    Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
}

/// A construct notes may not contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Forbidden {
    FrontMatter,
    Heading,
    Italic,
    Quote,
    InlineCode,
    CodeBlock,
    Link,
    Image,
    Table,
    TaskList,
    Footnote,
    ThematicBreak,
    Html,
}

impl Forbidden {
    /// How the construct is named in messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Forbidden::FrontMatter => {
                "YAML front matter (send the body only: the server owns the front matter)"
            }
            Forbidden::Heading => "heading",
            Forbidden::Italic => "italic",
            Forbidden::Quote => "block quote",
            Forbidden::InlineCode => "inline code",
            Forbidden::CodeBlock => "code block",
            Forbidden::Link => "link",
            Forbidden::Image => "image",
            Forbidden::Table => "table",
            Forbidden::TaskList => "task list",
            Forbidden::Footnote => "footnote",
            Forbidden::ThematicBreak => "thematic break",
            Forbidden::Html => "raw HTML",
        }
    }
}

/// One forbidden construct and the line it starts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Offence {
    pub(crate) line: usize,
    pub(crate) kind: Forbidden,
}

fn classify(event: &Event<'_>) -> Option<Forbidden> {
    Some(match event {
        Event::Start(tag) => match tag {
            Tag::Paragraph | Tag::Strong | Tag::Strikethrough | Tag::List(_) | Tag::Item => {
                return None;
            }
            // A table is reported once, at its start.
            Tag::TableHead | Tag::TableRow | Tag::TableCell => return None,
            Tag::MetadataBlock(_) => Forbidden::FrontMatter,
            Tag::Heading { .. } => Forbidden::Heading,
            Tag::Emphasis => Forbidden::Italic,
            Tag::BlockQuote(_) => Forbidden::Quote,
            Tag::CodeBlock(_) => Forbidden::CodeBlock,
            Tag::Link { .. } => Forbidden::Link,
            Tag::Image { .. } => Forbidden::Image,
            Tag::Table(_) => Forbidden::Table,
            Tag::FootnoteDefinition(_) => Forbidden::Footnote,
            Tag::HtmlBlock => Forbidden::Html,
            // Extensions that are not enabled; refused should they ever appear.
            _ => Forbidden::Html,
        },
        Event::Code(_) => Forbidden::InlineCode,
        Event::Html(_) | Event::InlineHtml(_) => Forbidden::Html,
        Event::FootnoteReference(_) => Forbidden::Footnote,
        Event::Rule => Forbidden::ThematicBreak,
        Event::TaskListMarker(_) => Forbidden::TaskList,
        Event::InlineMath(_) | Event::DisplayMath(_) => Forbidden::InlineCode,
        Event::End(_) | Event::Text(_) | Event::SoftBreak | Event::HardBreak => return None,
    })
}

/// Every forbidden construct of a body, one per kind and line, in order.
pub(crate) fn offences(body: &str) -> Vec<Offence> {
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(body.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let mut found = BTreeSet::new();
    for (event, range) in Parser::new_ext(body, parser_options()).into_offset_iter() {
        if let Some(kind) = classify(&event) {
            let line = line_starts.partition_point(|&s| s <= range.start);
            found.insert(Offence { line, kind });
        }
    }
    found.into_iter().collect()
}

/// The kinds of forbidden constructs a body holds (a note may keep what it already had).
pub(crate) fn kinds(body: &str) -> BTreeSet<Forbidden> {
    offences(body).into_iter().map(|o| o.kind).collect()
}

/// Checks a body; `tolerated` are kinds the note already contained before this edit. The error
/// message names every offending construct with its line.
pub(crate) fn check(body: &str, tolerated: &BTreeSet<Forbidden>) -> Result<(), String> {
    let bad: Vec<Offence> = offences(body)
        .into_iter()
        .filter(|o| !tolerated.contains(&o.kind))
        .collect();
    if bad.is_empty() {
        return Ok(());
    }
    let list = bad
        .iter()
        .map(|o| format!("{} (line {})", o.kind.name(), o.line))
        .collect::<Vec<_>>()
        .join(", ");
    Err(format!(
        "content uses Markdown that notes do not allow: {list}. Notes may contain only paragraphs, line breaks, **bold**, ~~strikethrough~~, ordered and bullet lists and plain text; rewrite those parts as plain text (escape a literal character with a backslash, e.g. \\*)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds_of(body: &str) -> Vec<(usize, &'static str)> {
        offences(body)
            .into_iter()
            .map(|o| (o.line, o.kind.name()))
            .collect()
    }

    #[test]
    fn accepts_the_allowed_constructs() {
        let body = "Plain **bold** and ~~gone~~ text\nsoft break  \nhard break\n\n- a\n- b\n  1. nested\n\n1. one\n2. two\n\nhttps://example.com stays text #tag\n";
        assert_eq!(kinds_of(body), []);
    }

    #[test]
    fn names_each_offence_and_its_line() {
        let body = "# Title\n\n*it* and `code`\n\n> quote\n\n[l](http://x) ![i](a.png)\n\n---\n\n- [ ] task\n\nnote[^1]\n\n[^1]: foot\n\n<b>x</b>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\ncode\n```\n";
        assert_eq!(
            kinds_of(body),
            [
                (1, "heading"),
                (3, "italic"),
                (3, "inline code"),
                (5, "block quote"),
                (7, "link"),
                (7, "image"),
                (9, "thematic break"),
                (11, "task list"),
                (13, "footnote"),
                (15, "footnote"),
                (17, "raw HTML"),
                (19, "table"),
                (23, "code block"),
            ]
        );
        let err = check(body, &BTreeSet::new()).unwrap_err();
        assert!(err.contains("heading (line 1)"), "{err}");
        let tolerated: BTreeSet<Forbidden> = kinds(body);
        assert!(check(body, &tolerated).is_ok());
    }

    #[test]
    fn front_matter_is_named() {
        let err = check("---\nnote_id: x\n---\nbody\n", &BTreeSet::new()).unwrap_err();
        assert!(err.contains("YAML front matter"), "{err}");
    }
}

#[cfg(test)]
mod props {
    use proptest::prelude::*;

    use super::*;

    fn word() -> impl Strategy<Value = String> {
        "[a-z]{1,8}"
    }

    /// Inline content built only from allowed constructs (and tag tokens).
    fn inline() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => word(),
            1 => (word(), word()).prop_map(|(a, b)| format!("**{a} {b}**")),
            1 => word().prop_map(|a| format!("~~{a}~~")),
            // `_` after punctuation could open italics (`#a-_b_`), so one separator at most.
            1 => "[a-z][a-z0-9]{0,6}([-_/][a-z0-9]{1,4})?".prop_map(|t| format!("#{t}")),
        ]
    }

    fn line() -> impl Strategy<Value = String> {
        prop::collection::vec(inline(), 1..6).prop_map(|w| w.join(" "))
    }

    fn block() -> impl Strategy<Value = String> {
        let breaks = prop_oneof![Just("\n"), Just("  \n"), Just("\\\n")];
        prop_oneof![
            // A paragraph: lines joined by soft or hard breaks.
            (prop::collection::vec((line(), breaks), 1..4)).prop_map(|parts| {
                let mut out = String::new();
                for (i, (l, br)) in parts.iter().enumerate() {
                    if i > 0 {
                        out.push_str(br);
                    }
                    out.push_str(l);
                }
                out
            }),
            prop::collection::vec(line(), 1..4).prop_map(|items| items
                .iter()
                .map(|i| format!("- {i}"))
                .collect::<Vec<_>>()
                .join("\n")),
            prop::collection::vec(line(), 1..4).prop_map(|items| items
                .iter()
                .enumerate()
                .map(|(n, i)| format!("{}. {i}", n + 1))
                .collect::<Vec<_>>()
                .join("\n")),
        ]
    }

    fn body() -> impl Strategy<Value = Vec<String>> {
        prop::collection::vec(block(), 1..6)
    }

    /// One block per forbidden construct, with the kind it must be reported as.
    const FORBIDDEN: &[(&str, Forbidden)] = &[
        ("# Title words", Forbidden::Heading),
        ("### deeper", Forbidden::Heading),
        ("Setext title\n===", Forbidden::Heading),
        ("some *italic* text", Forbidden::Italic),
        ("some _italic_ text", Forbidden::Italic),
        ("> quoted", Forbidden::Quote),
        ("a `code` span", Forbidden::InlineCode),
        ("```\nfenced\n```", Forbidden::CodeBlock),
        ("~~~rust\nfn x() {}\n~~~", Forbidden::CodeBlock),
        ("see [the site](https://example.com)", Forbidden::Link),
        ("see <https://example.com>", Forbidden::Link),
        ("an ![image](pic.png)", Forbidden::Image),
        ("| a | b |\n|---|---|\n| 1 | 2 |", Forbidden::Table),
        ("- [ ] open task", Forbidden::TaskList),
        ("- [x] done task", Forbidden::TaskList),
        ("a claim[^1]\n\n[^1]: the source", Forbidden::Footnote),
        ("***", Forbidden::ThematicBreak),
        ("___", Forbidden::ThematicBreak),
        ("inline <b>html</b> here", Forbidden::Html),
        ("<div>block html</div>", Forbidden::Html),
    ];

    proptest! {
        #[test]
        fn accepts_every_body_of_allowed_constructs(blocks in body()) {
            let body = blocks.join("\n\n");
            prop_assert_eq!(offences(&body), vec![], "{}", body);
            prop_assert!(check(&body, &BTreeSet::new()).is_ok());
        }

        #[test]
        fn rejects_each_forbidden_construct_at_its_line(
            blocks in body(),
            at in 0usize..6,
            which in 0usize..FORBIDDEN.len(),
        ) {
            let (snippet, kind) = FORBIDDEN[which];
            let at = at.min(blocks.len());
            let before = &blocks[..at];
            let line = before.iter().map(|b| b.lines().count() + 1).sum::<usize>() + 1;
            let mut all: Vec<&str> = blocks.iter().map(String::as_str).collect();
            all.insert(at, snippet);
            let body = all.join("\n\n");
            let found = offences(&body);
            prop_assert!(
                found.iter().any(|o| o.kind == kind && o.line == line),
                "{:?} not found at line {} in {:?}: {:?}", kind, line, body, found
            );
            prop_assert!(found.iter().all(|o| o.kind == kind), "{:?}: {:?}", body, found);
            let err = check(&body, &BTreeSet::new()).unwrap_err();
            let named = format!("{} (line {line})", kind.name());
            prop_assert!(err.contains(&named), "{}", err);
        }
    }
}
