//! Query-centred snippets: the passage of a document where most query terms meet, with its
//! line range (1-based, inclusive, the numbering `read` and `grep` use) and the matched words.
//!
//! Matching goes through the full-text index's own analyzer ([`linkly_index::Index::term_spans`]:
//! words and CJK bigrams, lower-cased, folded, stemmed), so a snippet finds exactly what BM25
//! matched: `Cafés` for `cafe`, `quantified` for `quantify`, `機械学習` inside running text.

use std::cell::RefCell;
use std::collections::HashMap;

use linkly_core::{is_cjk, stdx};
use linkly_index::Index;
use schemars::JsonSchema;
use serde::Serialize;

/// The longest snippet, in characters.
const SNIPPET_CHARS: usize = 240;
/// Lines scanned for the best match.
const SCAN_LINES: usize = 20_000;
/// Bytes of one line scanned for matches (a minified one-line file stays cheap).
const SCAN_LINE_BYTES: usize = 64 * 1024;
/// Lines a passage may span.
const MAX_PASSAGE_LINES: usize = 5;

/// What a snippet shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SnippetKind {
    /// The passage where the query's words occur.
    Text,
    /// The passage closest in meaning (semantic search); none of the query's words is in it.
    Semantic,
    /// No passage holds a query word: the document matched by its title, file name or path;
    /// the snippet is the document's opening.
    Title,
    /// The content is unreadable (the document has a skip reason): no snippet.
    None,
}

/// The distinct indexed terms of a query.
#[derive(Debug, Clone, Default)]
pub(crate) struct QueryTerms {
    terms: Vec<String>,
    /// Per term, a cheap test: a Latin term's first characters, a CJK term itself, or none.
    probes: Vec<Probe>,
    /// Non-ASCII characters folded so far.
    folds: RefCell<HashMap<char, String>>,
}

#[derive(Debug, Clone)]
enum Probe {
    /// The line, lower-cased and folded, must contain this.
    Latin(String),
    /// The line must contain this verbatim.
    Cjk(String),
    /// Any line may hold the term.
    Any,
}

impl QueryTerms {
    /// The terms of `query` as the index analyses it.
    pub(crate) fn new(query: &str) -> QueryTerms {
        let mut terms: Vec<String> = Vec::new();
        for span in Index::term_spans(query) {
            if !terms.contains(&span.term) {
                terms.push(span.term);
            }
        }
        let probes = terms
            .iter()
            .map(|t| {
                if t.chars().any(is_cjk) {
                    Probe::Cjk(t.clone())
                } else if !t.is_ascii() {
                    // Greek, Cyrillic, Devanagari…: no cheap test, analyse every line.
                    Probe::Any
                } else {
                    // A stem is the word's folded start but for its last letter or so
                    // (`happi` for `happy`): probe with all of it but that.
                    let n = t.chars().count().saturating_sub(1).max(1);
                    Probe::Latin(t.chars().take(n).collect())
                }
            })
            .collect();
        QueryTerms {
            terms,
            probes,
            folds: RefCell::default(),
        }
    }

    /// Whether the query has any term.
    pub(crate) fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether `line` may hold a term (false means it surely holds none).
    fn may_match(&self, line: &str) -> bool {
        let folded = if line.is_ascii() {
            None
        } else {
            Some(fold(line, &self.folds))
        };
        self.probes.iter().any(|p| match p {
            Probe::Cjk(s) => line.contains(s.as_str()),
            Probe::Latin(s) => match &folded {
                None => line
                    .as_bytes()
                    .windows(s.len())
                    .any(|w| w.eq_ignore_ascii_case(s.as_bytes())),
                Some(f) => f.contains(s.as_str()),
            },
            Probe::Any => true,
        })
    }

    /// The byte ranges of `line` holding a query term, with the term's index.
    fn matches(&self, line: &str) -> Vec<Hit> {
        if !self.may_match(line) {
            return Vec::new();
        }
        let mut hits = Vec::new();
        Index::for_each_term_span(line, |start, end, term| {
            if let Some(k) = self.terms.iter().position(|t| t == term) {
                hits.push((start, end, k));
            }
        });
        hits
    }
}

/// `line` lower-cased and folded as the index folds words (`Café` → `cafe`), each distinct
/// non-ASCII character folded once through the index's analyzer and remembered.
fn fold(line: &str, cache: &RefCell<HashMap<char, String>>) -> String {
    let mut cache = cache.borrow_mut();
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
            continue;
        }
        let folded = cache.entry(c).or_insert_with(|| {
            let mut spans = Index::term_spans(c.encode_utf8(&mut [0; 4]));
            match (spans.pop(), spans.is_empty()) {
                (Some(span), true) => span.term,
                _ => " ".into(),
            }
        });
        out.push_str(folded);
    }
    out
}

/// A snippet: one line of text (cut with `…`), the lines it comes from, and where the query's
/// words are in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Passage {
    /// The passage on one line.
    pub(crate) text: String,
    /// The first line shown (1-based).
    pub(crate) from: u32,
    /// The last line shown (1-based, inclusive).
    pub(crate) to: u32,
    /// Byte ranges of `text` that hold a query word, in order, not overlapping.
    pub(crate) marks: Vec<(usize, usize)>,
}

impl Passage {
    /// The words of the text that matched, as written, each once.
    pub(crate) fn matched_words(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for &(a, b) in &self.marks {
            let w = self.text[a..b].to_string();
            if !out.iter().any(|o| o.to_lowercase() == w.to_lowercase()) {
                out.push(w);
            }
        }
        out
    }

    /// The text with its matched words in Markdown bold (`**word**`).
    pub(crate) fn marked(&self) -> String {
        let mut out = String::with_capacity(self.text.len() + 4 * self.marks.len());
        let mut at = 0;
        for &(a, b) in &self.marks {
            out.push_str(&self.text[at..a]);
            out.push_str("**");
            out.push_str(&self.text[a..b]);
            out.push_str("**");
            at = b;
        }
        out.push_str(&self.text[at..]);
        out
    }
}

/// One scanned line: its 0-based number and matches.
struct LineHits {
    number: usize,
    hits: Vec<Hit>,
}

/// A match in a line: byte range and the index of the query term.
type Hit = (usize, usize, usize);

/// The passage of `text` where the most query terms meet, looking only at lines
/// `within.0..=within.1` (1-based) when given; `None` when no line holds a query term.
pub(crate) fn best_passage(
    text: &str,
    terms: &QueryTerms,
    within: Option<(u32, u32)>,
) -> Option<Passage> {
    if terms.is_empty() || text.is_empty() {
        return None;
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let (lo, hi) = bounds(&lines, within)?;
    let mut scanned: Vec<LineHits> = Vec::new();
    for (i, line) in lines
        .iter()
        .enumerate()
        .take(hi + 1)
        .skip(lo)
        .take(SCAN_LINES)
    {
        let head = &line[..stdx::floor_char_boundary(line, SCAN_LINE_BYTES)];
        let hits = terms.matches(head);
        if !hits.is_empty() {
            let all = distinct(hits.iter().map(|h| h.2)) == terms.terms.len();
            scanned.push(LineHits { number: i, hits });
            if all {
                // No later line can score higher, and the earliest wins ties.
                break;
            }
        }
    }
    // A line's score: the distinct terms in it and in its neighbours (a phrase broken over two
    // lines still meets), then the distinct terms in the line itself; the earliest line wins
    // ties.
    let mut best: Option<((usize, usize), usize)> = None;
    for (k, l) in scanned.iter().enumerate() {
        let near = scanned[k.saturating_sub(1)..(k + 2).min(scanned.len())]
            .iter()
            .filter(|o| o.number.abs_diff(l.number) <= 1)
            .flat_map(|o| o.hits.iter().map(|h| h.2));
        let score = (distinct(near), distinct(l.hits.iter().map(|h| h.2)));
        if best.is_none_or(|(s, _)| score > s) {
            best = Some((score, k));
        }
    }
    let (_, k) = best?;
    Some(build(&lines, &scanned[k], Some(terms), lo, hi))
}

/// How many distinct term indexes there are.
fn distinct(terms: impl Iterator<Item = usize>) -> usize {
    let mut seen: Vec<usize> = terms.collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len()
}

/// The 0-based first and last line of `within` (1-based, inclusive), clamped to the text.
fn bounds(lines: &[&str], within: Option<(u32, u32)>) -> Option<(usize, usize)> {
    let (first, last) = within.map_or((1, u32::MAX), |(a, b)| (a.max(1), b));
    let lo = first as usize - 1;
    let hi = (last as usize).min(lines.len()).checked_sub(1)?;
    (lo <= hi).then_some((lo, hi))
}

/// The passage around one line: the line windowed around its first match, then the following
/// lines while the budget lasts (and the line before when it matches too), never past
/// `lo..=hi`.
fn build(
    lines: &[&str],
    centre: &LineHits,
    terms: Option<&QueryTerms>,
    lo: usize,
    hi: usize,
) -> Passage {
    let hits_of = |n: usize| {
        let line = lines[n];
        terms.map_or_else(Vec::new, |t| {
            t.matches(&line[..stdx::floor_char_boundary(line, SCAN_LINE_BYTES)])
        })
    };
    let at = centre.hits.first().map_or(0, |h| h.0);
    let (mut text, mut marks, start_cut) = window(lines[centre.number], at, &centre.hits);
    let (mut from, mut to) = (centre.number, centre.number);
    let room = |t: &str| SNIPPET_CHARS.saturating_sub(t.chars().count());
    // Lines after, then before (unless the centre line was cut at its start).
    while to < hi && to - from + 1 < MAX_PASSAGE_LINES && room(&text) > 20 && !text.ends_with('…')
    {
        to += 1;
        if !lines[to].trim().is_empty() {
            let r = room(&text);
            append(&mut text, &mut marks, lines[to], &hits_of(to), r);
        }
    }
    // The line before joins when it holds a query word too (a phrase broken over two lines).
    let before = if !start_cut && from > lo {
        hits_of(from - 1)
    } else {
        Vec::new()
    };
    if !before.is_empty() {
        let r = room(&text);
        if prepend(&mut text, &mut marks, lines[from - 1], &before, r) {
            from -= 1;
        }
    }
    // Blank lines at the edges are not part of what is shown.
    while to > centre.number && lines[to].trim().is_empty() {
        to -= 1;
    }
    while from < centre.number && lines[from].trim().is_empty() {
        from += 1;
    }
    Passage {
        text,
        from: from as u32 + 1,
        to: to as u32 + 1,
        marks: merge(marks),
    }
}

/// Appends `s` to `out` with whitespace runs collapsed to one space (none at either end), and
/// returns where `hits` (byte ranges of `s`) landed in `out`.
fn squeeze(s: &str, hits: &[Hit], out: &mut String) -> Vec<(usize, usize)> {
    let base = out.len();
    let mut map = vec![0usize; s.len() + 1];
    let mut space = false;
    for (i, c) in s.char_indices() {
        if c.is_whitespace() {
            map[i] = out.len();
            space = true;
            continue;
        }
        if space && out.len() > base {
            out.push(' ');
        }
        space = false;
        map[i] = out.len();
        out.push(c);
    }
    map[s.len()] = out.len();
    hits.iter()
        .filter(|h| h.1 <= s.len() && s.is_char_boundary(h.0) && s.is_char_boundary(h.1))
        .map(|h| (map[h.0], map[h.1]))
        .filter(|m| m.0 < m.1)
        .collect()
}

/// Hits moved `by` bytes to the left (those starting before are dropped), and kept only when
/// they end within `len`.
fn shift(hits: &[Hit], by: usize, len: usize) -> Vec<Hit> {
    hits.iter()
        .filter(|h| h.0 >= by && h.1 - by <= len)
        .map(|h| (h.0 - by, h.1 - by, h.2))
        .collect()
}

/// About `SNIPPET_CHARS` characters of `line` around byte offset `at`: the text, its marks,
/// and whether the line's start was cut.
fn window(line: &str, at: usize, hits: &[Hit]) -> (String, Vec<(usize, usize)>, bool) {
    let line_chars = line.chars().count();
    let at_char = line[..at].chars().count();
    let mut start = at_char.saturating_sub(SNIPPET_CHARS / 3);
    if line_chars - start < SNIPPET_CHARS {
        start = line_chars.saturating_sub(SNIPPET_CHARS);
    }
    let byte_start = line.char_indices().nth(start).map_or(line.len(), |c| c.0);
    let byte_end = line
        .char_indices()
        .nth(start + SNIPPET_CHARS)
        .map_or(line.len(), |c| c.0);
    let part = &line[byte_start..byte_end];
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    let marks = squeeze(part, &shift(hits, byte_start, part.len()), &mut out);
    if byte_end < line.len() {
        out.push('…');
    }
    (out, marks, start > 0)
}

/// `line` without its leading whitespace, cut to `room` characters at a word when longer.
fn head(line: &str, room: usize) -> (&str, bool) {
    let line = line.trim_start();
    match line.char_indices().nth(room) {
        None => (line, false),
        Some((cut, _)) => {
            let cut = line[..cut]
                .rfind(char::is_whitespace)
                .filter(|&c| c > 0)
                .unwrap_or(cut);
            (&line[..cut], true)
        }
    }
}

fn append(
    text: &mut String,
    marks: &mut Vec<(usize, usize)>,
    line: &str,
    hits: &[Hit],
    room: usize,
) {
    let lead = line.len() - line.trim_start().len();
    let (part, cut) = head(line, room.saturating_sub(1));
    text.push(' ');
    marks.extend(squeeze(part, &shift(hits, lead, part.len()), text));
    if cut {
        text.push('…');
    }
}

/// Puts `line` before `text` when it fits in `room`; false when it does not.
fn prepend(
    text: &mut String,
    marks: &mut Vec<(usize, usize)>,
    line: &str,
    hits: &[Hit],
    room: usize,
) -> bool {
    let lead = line.len() - line.trim_start().len();
    let body = line.trim();
    if body.chars().count() + 1 > room {
        return false;
    }
    let mut before = String::new();
    let mut all = squeeze(body, &shift(hits, lead, body.len()), &mut before);
    before.push(' ');
    let by = before.len();
    all.extend(marks.iter().map(|m| (m.0 + by, m.1 + by)));
    *marks = all;
    before.push_str(text);
    *text = before;
    true
}

/// Marks sorted, with touching or overlapping ones (a CJK word's bigrams) joined.
fn merge(mut marks: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    marks.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::new();
    for m in marks {
        match out.last_mut() {
            Some(last) if m.0 <= last.1 => last.1 = last.1.max(m.1),
            _ => out.push(m),
        }
    }
    out
}

/// The opening of lines `within` (1-based, inclusive; the whole text when `None`): the first
/// lines that are not blank, within the budget. `None` when they are all blank.
pub(crate) fn opening(text: &str, within: Option<(u32, u32)>) -> Option<Passage> {
    let lines: Vec<&str> = text.split('\n').collect();
    let (lo, hi) = bounds(&lines, within)?;
    let first = (lo..=hi).find(|&i| !lines[i].trim().is_empty())?;
    let centre = LineHits {
        number: first,
        hits: Vec::new(),
    };
    Some(build(&lines, &centre, None, first, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn best(text: &str, q: &str) -> Option<(String, u32, u32)> {
        best_passage(text, &QueryTerms::new(q), None).map(|p| (p.marked(), p.from, p.to))
    }

    #[test]
    fn picks_the_line_with_most_terms_and_says_where() {
        let text = "intro\nrust is here\n\nrust and tantivy together\nend";
        assert_eq!(
            best(text, "rust tantivy"),
            Some(("**rust** and **tantivy** together end".into(), 4, 5))
        );
        assert_eq!(best(text, "zzz"), None);
    }

    #[test]
    fn stems_folds_and_cjk_as_the_index_does() {
        let text = "title\nThe Cafés were quantified.\n機械学習の研究所";
        let (s, from, to) = best(text, "cafe quantify").unwrap();
        assert!(s.starts_with("The **Cafés** were **quantified**."), "{s}");
        assert_eq!((from, to), (2, 3));
        let (s, from, _) = best(text, "機械学習").unwrap();
        assert_eq!(s, "**機械学習**の研究所");
        assert_eq!(from, 3);
    }

    #[test]
    fn neighbouring_lines_join_a_phrase() {
        let text = "alpha only\nx\ny\nthe inter-\nnational budget\nbudget alone";
        let (s, from, _) = best(text, "inter budget").unwrap();
        assert_eq!(from, 4, "{s}");
    }

    #[test]
    fn lines_fold_as_the_index_folds() {
        let cache = RefCell::default();
        assert_eq!(
            fold("Les Cafés, ÉCOLE naïve", &cache),
            "les cafes, ecole naive"
        );
        let q = QueryTerms::new("ecole");
        assert!(q.may_match("L'ÉCOLE"));
        assert!(!q.may_match("hacían"));
        assert!(!QueryTerms::new("zanahoria").may_match("hacían"));
    }

    #[test]
    fn long_lines_are_windowed() {
        let line = format!("{} needle {}", "a ".repeat(300), "b ".repeat(300));
        let p = best_passage(&line, &QueryTerms::new("needle"), None).unwrap();
        assert!(
            p.text.contains("needle") && p.text.starts_with('…') && p.text.ends_with('…'),
            "{}",
            p.text
        );
        assert!(p.text.chars().count() <= SNIPPET_CHARS + 2);
        assert_eq!(p.matched_words(), ["needle"]);
        assert_eq!((p.from, p.to), (1, 1));
    }

    #[test]
    fn restricted_to_a_chunk_and_openings() {
        let text = "budget first\n\nmiddle\nbudget later\nend";
        let p = best_passage(text, &QueryTerms::new("budget"), Some((3, 5))).unwrap();
        assert_eq!(p.from, 4);
        let o = opening(text, Some((2, 3))).unwrap();
        assert_eq!((o.text.as_str(), o.from, o.to), ("middle", 3, 3));
        assert!(opening("\n\n", None).is_none());
    }
}
