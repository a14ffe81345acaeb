//! Per-document keywords and abstracts, computed at index time.
//!
//! Keywords are the most frequent content terms of a document that are not stop words
//! (English, French, Spanish), numbers or markup, with CJK bigrams counted like words.

use std::collections::HashMap;

use linkly_core::{is_cjk, stdx};

use crate::tokenizer;

/// How many keywords each document keeps.
const KEYWORDS: usize = 8;
/// The abstract's length in characters.
const ABSTRACT_CHARS: usize = 300;
/// Only the start of a long text is scanned for keywords.
const SCAN_BYTES: usize = 256 * 1024;

const STOP_WORDS: &[&str] = &[
    // English
    "the", "and", "for", "are", "but", "not", "you", "all", "any", "can", "had", "her", "was",
    "one", "our", "out", "has", "have", "his", "how", "its", "may", "new", "now", "old", "see",
    "two", "way", "who", "did", "get", "him", "let", "say", "she", "too", "use", "that", "with",
    "this", "from", "they", "will", "would", "there", "their", "what", "about", "which", "when",
    "make", "like", "time", "just", "know", "take", "into", "year", "your", "some", "could",
    "them", "than", "then", "look", "only", "come", "over", "think", "also", "back", "after",
    "work", "first", "well", "even", "want", "because", "these", "give", "most", "were", "been",
    "being", "here", "more", "such", "each", "other", "where", "should", "does", "those", "very",
    "same", "while", "between", "both", "under", "through", "many", "must", "own", "before",
    "http", "https", "www", "com", "html", "nbsp", // French
    "les", "des", "une", "est", "que", "qui", "dans", "par", "pour", "sur", "pas", "plus", "sont",
    "ses", "son", "aux", "avec", "mais", "nous", "vous", "elle", "ils", "elles", "leur", "leurs",
    "cette", "ces", "comme", "tout", "tous", "fait", "peut", "être", "etre", "aussi", "entre",
    "dont", "ont", "ainsi", "votre", "notre", // Spanish
    "los", "las", "del", "por", "con", "una", "para", "como", "más", "mas", "pero", "sus", "esta",
    "este", "estos", "estas", "son", "hay", "tiene", "cuando", "muy", "sin", "sobre", "también",
    "tambien", "puede", "todo", "todos", "ese", "esa", "entre", "donde", "desde", "porque", "qué",
];

fn is_stop_word(term: &str) -> bool {
    STOP_WORDS.contains(&term)
}

/// The top keywords of a text.
pub(crate) fn keywords(text: &str) -> Vec<String> {
    let scan = &text[..stdx::floor_char_boundary(text, SCAN_BYTES)];
    let mut counts: HashMap<String, (u32, usize)> = HashMap::new();
    for (order, term) in tokenizer::terms(scan).into_iter().enumerate() {
        let cjk = term.chars().any(is_cjk);
        let keep = if cjk {
            term.chars().count() == 2
        } else {
            term.chars().count() >= 3
                && term.chars().any(|c| c.is_alphabetic())
                && !term.chars().all(|c| c.is_ascii_hexdigit())
                && !is_stop_word(&term)
        };
        if keep {
            counts.entry(term).or_insert((0, order)).0 += 1;
        }
    }
    let mut ranked: Vec<(String, (u32, usize))> =
        counts.into_iter().filter(|(_, (n, _))| *n >= 2).collect();
    ranked.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.1.1.cmp(&b.1.1)));
    ranked.into_iter().take(KEYWORDS).map(|(t, _)| t).collect()
}

/// The start of a text, whitespace collapsed, without Markdown front matter.
pub(crate) fn abstract_of(text: &str) -> String {
    let body = strip_front_matter(text);
    let mut out = String::new();
    for word in body.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
        if out.len() > ABSTRACT_CHARS * 4 {
            break;
        }
    }
    let cut = stdx::truncate_chars(&out, ABSTRACT_CHARS);
    if cut.len() < out.len() {
        format!("{cut}…")
    } else {
        out
    }
}

fn strip_front_matter(text: &str) -> &str {
    if let Some(rest) = text.strip_prefix("---\n")
        && let Some(end) = rest.find("\n---")
    {
        let after = &rest[end + 4..];
        return after.strip_prefix('\n').unwrap_or(after);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_frequent_content_words() {
        let kw = keywords("The tantivy index. The tantivy writer and the index reader. 2024 2024");
        assert_eq!(kw, ["tantivy", "index"]);
        let kw = keywords("東京の天気。東京は晴れ。");
        assert_eq!(kw, ["東京"]);
    }

    #[test]
    fn abstracts() {
        assert_eq!(
            abstract_of("---\ntitle: x\n---\nHello\n\nworld"),
            "Hello world"
        );
        assert!(abstract_of(&"word ".repeat(200)).ends_with('…'));
    }
}
