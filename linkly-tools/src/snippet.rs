//! Query-centred snippets: the line of a document where most query words meet.

use linkly_core::{is_cjk, stdx};

/// The longest snippet, in characters.
const SNIPPET_CHARS: usize = 240;
/// Lines scanned for the best match.
const SCAN_LINES: usize = 20_000;

/// The words of a query as they are looked for in text: lower-cased Latin words of two or more
/// characters, and each CJK run with its bigrams.
pub(crate) fn query_words(query: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut push = |w: String| {
        if !w.is_empty() && !words.contains(&w) {
            words.push(w);
        }
    };
    let mut current = String::new();
    let mut cjk_run = String::new();
    for c in query.chars().chain(std::iter::once(' ')) {
        if is_cjk(c) {
            if !current.is_empty() {
                push(std::mem::take(&mut current));
            }
            cjk_run.push(c);
            continue;
        }
        if !cjk_run.is_empty() {
            let chars: Vec<char> = cjk_run.chars().collect();
            push(cjk_run.clone());
            for pair in chars.windows(2) {
                push(pair.iter().collect());
            }
            cjk_run.clear();
        }
        if c.is_alphanumeric() {
            current.extend(c.to_lowercase());
        } else if !current.is_empty() {
            let w = std::mem::take(&mut current);
            if w.chars().count() >= 2 {
                push(w);
            }
        }
    }
    words
}

/// The best snippet of `text` for the query words, or the start of `fallback` when no line
/// matches (the document matched by title or path).
pub(crate) fn snippet(text: &str, words: &[String], fallback: &str) -> String {
    let mut best: Option<(usize, usize, &str)> = None;
    for line in text.lines().take(SCAN_LINES) {
        if line.trim().is_empty() {
            continue;
        }
        let lower = line.to_lowercase();
        let mut score = 0;
        let mut first = usize::MAX;
        for w in words {
            if let Some(pos) = lower.find(w.as_str()) {
                score += w.chars().count().min(8);
                first = first.min(pos);
            }
        }
        if score > 0 && best.is_none_or(|(s, _, _)| score > s) {
            // `first` is a byte offset into the lower-cased line; map it back approximately.
            let ratio = first as f64 / lower.len().max(1) as f64;
            let at = stdx::floor_char_boundary(line, (ratio * line.len() as f64) as usize);
            best = Some((score, at, line));
        }
    }
    match best {
        Some((_, at, line)) => window(line, at),
        None => {
            let t = stdx::truncate_chars(fallback.trim(), SNIPPET_CHARS);
            if t.len() < fallback.trim().len() {
                format!("{t}…")
            } else {
                t.to_string()
            }
        }
    }
}

/// About `SNIPPET_CHARS` characters of `line` around byte offset `at`, on one line.
fn window(line: &str, at: usize) -> String {
    let line_chars = line.chars().count();
    let at_char = line[..at].chars().count();
    let start = at_char.saturating_sub(SNIPPET_CHARS / 3);
    let start = if line_chars - start < SNIPPET_CHARS {
        line_chars.saturating_sub(SNIPPET_CHARS)
    } else {
        start
    };
    let body: String = line.chars().skip(start).take(SNIPPET_CHARS).collect();
    let body = body.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.push_str(&body);
    if start + SNIPPET_CHARS < line_chars {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_of_queries() {
        assert_eq!(query_words("Rust  tantivy, a"), ["rust", "tantivy"]);
        assert_eq!(
            query_words("機械学習"),
            ["機械学習", "機械", "械学", "学習"]
        );
    }

    #[test]
    fn picks_the_line_with_most_words() {
        let text = "intro\nrust is here\nrust and tantivy together\nend";
        let w = query_words("rust tantivy");
        assert_eq!(snippet(text, &w, ""), "rust and tantivy together");
        assert_eq!(
            snippet(text, &query_words("zzz"), "the abstract"),
            "the abstract"
        );
    }

    #[test]
    fn long_lines_are_windowed() {
        let line = format!("{} needle {}", "a ".repeat(300), "b ".repeat(300));
        let s = snippet(&line, &query_words("needle"), "");
        assert!(
            s.contains("needle") && s.starts_with('…') && s.ends_with('…'),
            "{s}"
        );
        assert!(s.chars().count() <= SNIPPET_CHARS + 2);
    }
}
