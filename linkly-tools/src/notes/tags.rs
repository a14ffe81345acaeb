//! Note tags: the `#tag` tokens of a note's body (outside code) are its tags.
//!
//! A token is a `#` at the start of a line or after whitespace or an opening bracket, not
//! escaped with a backslash, followed by tag characters (letters, digits, `_`, `-`, `/`) of
//! which at least one is not a digit (`#114` is an issue number, not a tag). Tags compare in
//! their normalised form (`linkly_core::normalise_tag`): leading `#` and surrounding whitespace
//! stripped, ASCII lower-cased.

use std::ops::Range;

use pulldown_cmark::{Event, Parser, Tag, TagEnd};

use linkly_core::normalise_tag;

use crate::notes::whitelist::parser_options;

/// Whether a character may appear inside a tag token.
pub(crate) fn is_tag_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '/')
}

/// Whether a normalised tag can be written as a `#tag` token that reads back as itself.
pub(crate) fn is_writable(tag: &str) -> bool {
    !tag.is_empty() && tag.chars().all(is_tag_char) && !tag.chars().all(|c| c.is_ascii_digit())
}

/// The byte ranges of code (inline code and code blocks) and raw HTML in a body, where `#`
/// starts no tag.
fn code_ranges(body: &str) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut block_start: Option<usize> = None;
    for (event, range) in Parser::new_ext(body, parser_options()).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_)) | Event::Start(Tag::HtmlBlock) => {
                block_start.get_or_insert(range.start);
            }
            Event::End(TagEnd::CodeBlock) | Event::End(TagEnd::HtmlBlock) => {
                if let Some(start) = block_start.take() {
                    ranges.push(start..range.end);
                }
            }
            Event::Code(_) | Event::InlineHtml(_) | Event::Html(_) => ranges.push(range),
            _ => {}
        }
    }
    ranges
}

/// The tags of a body, normalised, in order of first appearance, without duplicates.
pub(crate) fn body_tags(body: &str) -> Vec<String> {
    let code = code_ranges(body);
    let in_code = |i: usize| code.iter().any(|r| r.contains(&i));
    let mut tags: Vec<String> = Vec::new();
    let bytes = body.as_bytes();
    for (i, c) in body.char_indices() {
        if c != '#' || in_code(i) {
            continue;
        }
        let before = body[..i].chars().next_back();
        let starts = match before {
            None => true,
            Some(p) => p.is_whitespace() || matches!(p, '(' | '[' | '{'),
        };
        // `\#` is an escaped, literal `#`.
        if !starts || (i > 0 && bytes[i - 1] == b'\\') {
            continue;
        }
        let rest = &body[i + 1..];
        let end = rest.find(|ch: char| !is_tag_char(ch)).unwrap_or(rest.len());
        // A tag does not end in `/` or `-` (`#todo-` at a sentence's end is `#todo`).
        let token = rest[..end].trim_end_matches(['/', '-']);
        let tag = token.to_ascii_lowercase();
        if is_writable(&tag) && !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    tags
}

/// Appends `#tag` tokens for the tags the body lacks: on the last line when it holds only tag
/// tokens, else as a new paragraph. Returns the body unchanged when nothing is missing.
pub(crate) fn append_missing(body: &str, wanted: &[String]) -> String {
    let present = body_tags(body);
    let missing: Vec<&String> = wanted.iter().filter(|t| !present.contains(t)).collect();
    if missing.is_empty() {
        return body.to_string();
    }
    let tokens = missing
        .iter()
        .map(|t| format!("#{t}"))
        .collect::<Vec<_>>()
        .join(" ");
    let trimmed = body.trim_end();
    let last_line = trimmed.rsplit('\n').next().unwrap_or("");
    let last_is_tags = !last_line.trim().is_empty()
        && last_line
            .split_whitespace()
            .all(|w| w.starts_with('#') && is_writable(&normalise_tag(w)));
    let mut out = String::with_capacity(trimmed.len() + tokens.len() + 3);
    out.push_str(trimmed);
    if trimmed.is_empty() {
        // Nothing to separate from.
    } else if last_is_tags {
        out.push(' ');
    } else {
        out.push_str("\n\n");
    }
    out.push_str(&tokens);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_tokens_outside_code() {
        let body = "Plan #Work and #ideas.\n\n`#notatag` and \\#escaped, issue #114, url x.com/#frag\n\n```\n#code\n```\n\n- item #list-tag-\n(#paren) #a/b #日本\n";
        assert_eq!(
            body_tags(body),
            ["work", "ideas", "list-tag", "paren", "a/b", "日本"]
        );
        assert!(body_tags("# Heading").is_empty());
    }

    #[test]
    fn appends_only_missing_tokens() {
        assert_eq!(append_missing("Hello #a", &["a".into()]), "Hello #a");
        assert_eq!(
            append_missing("Hello\n", &["a".into(), "b".into()]),
            "Hello\n\n#a #b\n"
        );
        assert_eq!(
            append_missing("Hello\n\n#a\n", &["a".into(), "b".into()]),
            "Hello\n\n#a #b\n"
        );
    }
}

#[cfg(test)]
mod props {
    use linkly_core::{normalise_tag as normalise, normalise_tags as normalise_all};
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn normalisation_is_idempotent(raw in "[ #\\t]{0,3}[#a-zA-Z0-9 _/\\-ÄéÉ日\\t]{0,12}") {
            let once = normalise(&raw);
            prop_assert_eq!(normalise(&once), once.clone());
            prop_assert!(!once.starts_with('#') && once.trim() == once);
        }

        #[test]
        fn normalising_lists_is_idempotent(raw in prop::collection::vec(any::<String>(), 0..6)) {
            let once = normalise_all(&raw);
            prop_assert_eq!(normalise_all(&once), once);
        }

        #[test]
        fn any_string_normalises_idempotently(raw in any::<String>()) {
            let once = normalise(&raw);
            prop_assert_eq!(normalise(&once), once);
        }

        #[test]
        fn appended_tags_read_back(body in "[a-z ]{1,40}", tag in "[a-z][a-z0-9_]{0,8}") {
            let out = append_missing(&body, std::slice::from_ref(&tag));
            prop_assert!(body_tags(&out).contains(&tag), "{:?}", out);
        }
    }
}
