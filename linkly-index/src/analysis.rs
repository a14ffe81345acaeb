//! One pass over a document's text for everything the index derives from its words: the terms
//! of the full-text index and the counts its keywords come from.
//!
//! The sync runs this on its preparing threads (all cores), so the full-text index's writer
//! thread only splits the analysed string back into terms ([`crate::tokenizer::TermsTokenizer`])
//! and counts them. Before, the same text was tokenized twice, once for the keywords on the
//! preparing threads and once more (with stemming) on the writer's one thread.
//!
//! Each thread remembers the forms of the raw tokens it met (lower-cased, folded, stemmed for
//! the index; not stemmed for the keywords), so a word a corpus repeats is normalised once: the
//! filters work on one token alone, so a remembered answer is the one they give. The result is
//! the same as [`crate::tokenizer::index_terms`] and [`crate::keywords`]' rules give, which the
//! tests check on the repository's corpus.

use std::cell::RefCell;

use linkly_core::{is_cjk, stdx};
use rustc_hash::FxHashMap;
use tantivy::tokenizer::{TextAnalyzer, TokenStream};

use crate::keywords;
use crate::tokenizer::{RawTokens, token_filters};

/// Raw tokens a thread remembers from one document to the next; past this, it starts afresh
/// before the next document (a few MB).
const FORGET_AFTER: usize = 32 * 1024;
/// Raw tokens remembered within one document beyond the keyword scan: past this, the rest of a
/// huge document is normalised without remembering (it cannot hold the thread's memory).
const REMEMBER_AT_MOST: usize = 2 * FORGET_AFTER;
/// The word id of a token the filters drop (too long).
const DROPPED: u32 = u32::MAX;

/// What the index derives from one document's words.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Analysis {
    /// The full-text index terms of the text (stemmed; CJK bigrams), each followed by a space.
    pub(crate) terms: String,
    /// The document's keywords (see [`keywords`]).
    pub(crate) keywords: Vec<String>,
}

/// Analyses a document: the index terms of its first `index_bytes` and the keywords of its
/// first [`keywords::SCAN_BYTES`].
pub(crate) fn analyse_document(text: &str, index_bytes: usize) -> Analysis {
    let indexed = &text[..stdx::floor_char_boundary(text, index_bytes.min(text.len()))];
    let scan = &text[..stdx::floor_char_boundary(text, keywords::SCAN_BYTES.min(text.len()))];
    with_table(|table| {
        let mut terms = String::with_capacity(indexed.len() + indexed.len() / 8);
        // A text the scan covers whole is counted in the same pass; a longer one is counted
        // over the scan apart, since its tokens at the scan's end are those of the cut text.
        let whole = scan.len() == text.len();
        table.pass(indexed, Some(&mut terms), whole);
        if !whole {
            table.pass(scan, None, true);
        }
        let keywords = table.take_keywords(scan);
        Analysis { terms, keywords }
    })
}

/// The index terms of a short text (a title, a file name, a folder), each followed by a space.
pub(crate) fn index_terms_of(text: &str) -> String {
    with_table(|table| {
        let mut terms = String::with_capacity(text.len() + 8);
        table.pass(text, Some(&mut terms), false);
        terms
    })
}

fn with_table<T>(f: impl FnOnce(&mut Table) -> T) -> T {
    thread_local! {
        // One per thread: its memory of words serves document after document.
        static TABLE: RefCell<Table> = RefCell::new(Table::new());
    }
    TABLE.with_borrow_mut(|table| {
        table.forget_if_full();
        f(table)
    })
}

/// A raw token's forms.
#[derive(Clone, Copy)]
struct Form {
    /// Where its index term lies in [`Table::stems`] (empty when dropped).
    stem_at: u32,
    stem_len: u32,
    /// The word id of its unstemmed form, or [`DROPPED`].
    word: u32,
}

/// Entries of the front cache: a direct-mapped memory of the short tokens met last, small
/// enough to stay in a core's cache (the frequent words of a corpus hit it; the hash map
/// behind it is looked up on a miss).
const FRONT: usize = 8192;

/// One thread's memory of raw tokens, words, and the counts of the document at hand.
struct Table {
    /// The front cache: keys ([`short_key`], 0 for none) and form indexes.
    front_keys: Vec<u128>,
    front_forms: Vec<u32>,
    /// Raw tokens of up to 15 bytes by their bytes packed in an integer ([`short_key`]):
    /// compared as integers, not strings.
    short_forms_of: FxHashMap<u128, u32>,
    /// Longer raw tokens.
    forms_of: FxHashMap<Box<str>, u32>,
    forms: Vec<Form>,
    /// The index terms of the forms, side by side (the frequent ones, met first, together).
    stems: String,
    word_ids: FxHashMap<Box<str>, u32>,
    /// Per word id: whether it may be a keyword, and this document's count and first byte
    /// offset; the words themselves in `word_text`.
    words: Vec<Word>,
    word_text: Vec<Box<str>>,
    /// Word ids counted in this document.
    touched: Vec<u32>,
    index_filters: TextAnalyzer,
    word_filters: TextAnalyzer,
}

#[derive(Clone, Copy)]
struct Word {
    keyword: bool,
    count: u32,
    first: usize,
}

/// A token of 1 to 15 bytes as one integer: its bytes (read as overlapping words, the overlap
/// shifted out) and its length in the top byte. Two tokens have the same key exactly when they
/// have the same bytes; no token has the key 0.
fn short_key(b: &[u8]) -> Option<u128> {
    let n = b.len();
    let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
    let half = |at: usize| {
        u64::from(u32::from_le_bytes(
            b[at..at + 4].try_into().unwrap_or([0; 4]),
        ))
    };
    let (lo, hi) = match n {
        1..=3 => (
            u64::from(b[0]) | u64::from(b[n / 2]) << 8 | u64::from(b[n - 1]) << 16,
            0,
        ),
        4..=7 => (half(0), half(n - 4)),
        // The last eight bytes, without those the first eight already hold.
        // (Eight bytes: none; a shift by 64 is none too.)
        8..=15 => (
            word(0),
            word(n - 8).checked_shr(8 * (16 - n) as u32).unwrap_or(0),
        ),
        _ => return None,
    };
    Some(u128::from(lo) | u128::from(hi) << 64 | (n as u128) << 120)
}

/// The front cache's slot of a short key.
fn front_slot(key: u128) -> usize {
    let mixed =
        ((key as u64) ^ ((key >> 64) as u64).rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> (64 - FRONT.trailing_zeros())) as usize
}

/// The first token the filters make of `raw` (they make one or none).
fn filtered(filters: &mut TextAnalyzer, raw: &str) -> Option<Box<str>> {
    let mut stream = filters.token_stream(raw);
    stream
        .advance()
        .then(|| stream.token().text.as_str().into())
}

impl Table {
    fn new() -> Table {
        Table {
            front_keys: vec![0; FRONT],
            front_forms: vec![0; FRONT],
            short_forms_of: FxHashMap::default(),
            forms_of: FxHashMap::default(),
            forms: Vec::new(),
            stems: String::new(),
            word_ids: FxHashMap::default(),
            words: Vec::new(),
            word_text: Vec::new(),
            touched: Vec::new(),
            index_filters: token_filters(true),
            word_filters: token_filters(false),
        }
    }

    /// Starts afresh when the memory is full (between documents only: word ids stay valid
    /// while a document is counted).
    fn forget_if_full(&mut self) {
        debug_assert!(self.touched.is_empty());
        if self.forms.len() > FORGET_AFTER {
            self.front_keys.fill(0);
            self.short_forms_of.clear();
            self.forms_of.clear();
            self.forms.clear();
            self.stems.clear();
            self.word_ids.clear();
            self.words.clear();
            self.word_text.clear();
        }
    }

    /// Remembers `raw`'s forms; returns their index.
    fn remember(&mut self, raw: &str, key: Option<u128>) -> usize {
        let stem = filtered(&mut self.index_filters, raw);
        let word = match filtered(&mut self.word_filters, raw) {
            None => DROPPED,
            Some(w) => match self.word_ids.get(&w) {
                Some(&id) => id,
                None => {
                    let id = self.words.len() as u32;
                    self.words.push(Word {
                        keyword: keywords::may_be_keyword(&w),
                        count: 0,
                        first: 0,
                    });
                    self.word_text.push(w.clone());
                    self.word_ids.insert(w, id);
                    id
                }
            },
        };
        let stem = stem.unwrap_or_default();
        let form = Form {
            stem_at: self.stems.len() as u32,
            stem_len: stem.len() as u32,
            word,
        };
        self.stems.push_str(&stem);
        let at = self.forms.len();
        self.forms.push(form);
        match key {
            Some(key) => self.short_forms_of.insert(key, at as u32),
            None => self.forms_of.insert(raw.into(), at as u32),
        };
        at
    }

    /// Where `raw`'s forms are remembered, if they are.
    fn find(&mut self, raw: &str, key: Option<u128>) -> Option<usize> {
        let Some(key) = key else {
            return self.forms_of.get(raw).map(|&at| at as usize);
        };
        let slot = front_slot(key);
        if self.front_keys[slot] == key {
            return Some(self.front_forms[slot] as usize);
        }
        let at = *self.short_forms_of.get(&key)?;
        self.front_keys[slot] = key;
        self.front_forms[slot] = at;
        Some(at as usize)
    }

    /// Tokenizes `text`: appends its index terms to `terms` when given, and counts its words
    /// for the keywords when `count`.
    fn pass(&mut self, text: &str, mut terms: Option<&mut String>, count: bool) {
        for (from, to, _) in RawTokens::new(text) {
            let raw = &text[from..to];
            let bytes = raw.as_bytes();
            // A number is its own term (nothing to fold or stem), and never a keyword: it
            // needs no memory (file names are full of numbers met once).
            if bytes.len() < 16 && bytes.iter().all(u8::is_ascii_digit) {
                if let Some(out) = terms.as_deref_mut() {
                    out.push_str(raw);
                    out.push(' ');
                }
                continue;
            }
            let key = short_key(bytes);
            let at = match self.find(raw, key) {
                Some(at) => at,
                None if count || self.forms.len() < REMEMBER_AT_MOST => self.remember(raw, key),
                None => {
                    // Not remembered: only the index needs it.
                    if let Some(out) = terms.as_deref_mut()
                        && let Some(stem) = filtered(&mut self.index_filters, raw)
                    {
                        out.push_str(&stem);
                        out.push(' ');
                    }
                    continue;
                }
            };
            let form = self.forms[at];
            if form.word == DROPPED {
                continue;
            }
            if let Some(out) = terms.as_deref_mut() {
                let stem_at = form.stem_at as usize;
                out.push_str(&self.stems[stem_at..stem_at + form.stem_len as usize]);
                out.push(' ');
            }
            if count {
                let word = &mut self.words[form.word as usize];
                if word.count == 0 {
                    word.first = from;
                    self.touched.push(form.word);
                }
                word.count += 1;
            }
        }
    }

    /// The keywords of the words counted (and of the CJK words of `scan`), clearing the counts.
    fn take_keywords(&mut self, scan: &str) -> Vec<String> {
        let cjk = if !scan.is_ascii() && scan.chars().any(is_cjk) {
            keywords::cjk_words(scan)
        } else {
            Default::default()
        };
        let (words, text) = (&self.words, &self.word_text);
        let candidates = self
            .touched
            .iter()
            .map(|&id| (&words[id as usize], &*text[id as usize]))
            .filter(|(w, _)| w.keyword)
            .map(|(w, t)| (t, w.count, w.first))
            .chain(cjk.iter().map(|(t, &(n, at))| (t.as_str(), n, at)));
        let top = keywords::top_keywords(candidates);
        for &id in &self.touched {
            self.words[id as usize].count = 0;
        }
        self.touched.clear();
        top
    }
}

/// The analysis pass over one document as the indexer runs it, for `cargo xtask bench
/// analysis`: the length of the index terms it made. Not API.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub fn analyse_for_bench(text: &str) -> usize {
    analyse_document(text, usize::MAX).terms.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer;

    fn corpus_texts() -> Vec<String> {
        let mut texts: Vec<String> = vec![
            String::new(),
            "東".into(),
            "The tantivy index. The tantivy writer and the index reader. 2024 2024".into(),
            "東京の天気。東京は晴れ。".into(),
            format!("before {} after Running runners ran", "x".repeat(70)),
            "Ĳssel Straße ﬁnal ΣΊΣΥΦΟΣ naïve CAFÉS 123abc 4.5e6 x_y Café café".into(),
            "한국어 텍스트 mixed한글text".into(),
        ];
        // Longer than the keyword scan, with a word and a CJK run across its end.
        let mut long = "budget plan ".repeat(keywords::SCAN_BYTES / 12);
        long.truncate(keywords::SCAN_BYTES - 3);
        long.push_str("crossing 東京東京 tail words tail words");
        texts.push(long.clone());
        let mut long_cjk = "人工智能的研究".repeat(keywords::SCAN_BYTES / 21 + 1);
        long_cjk.push_str(" end");
        texts.push(long_cjk);
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/corpus");
        let mut stack = vec![corpus];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if let Ok(text) = std::fs::read_to_string(&p) {
                    texts.push(text);
                }
            }
        }
        assert!(texts.len() > 20, "the corpus was read");
        texts
    }

    #[test]
    fn one_pass_gives_the_terms_and_keywords_of_the_analyzers() {
        // Twice over: the second time every form comes from the thread's memory.
        for _ in 0..2 {
            for text in corpus_texts() {
                let a = analyse_document(&text, usize::MAX);
                let terms: Vec<&str> = a.terms.split_terminator(' ').collect();
                assert_eq!(
                    terms,
                    tokenizer::index_terms(&text),
                    "{}",
                    text.chars().take(60).collect::<String>()
                );
                assert_eq!(
                    a.keywords,
                    keywords::keywords(&text),
                    "{}",
                    text.chars().take(60).collect::<String>()
                );
            }
        }
    }

    #[test]
    fn short_keys_tell_tokens_apart() {
        let mut seen = std::collections::HashMap::new();
        let alphabet = ["a", "b", "é", "東"];
        // Every string of these pieces up to 15 bytes (and a few lengths past it).
        let mut frontier = vec![String::new()];
        while let Some(s) = frontier.pop() {
            for piece in alphabet {
                let t = format!("{s}{piece}");
                if t.len() > 15 {
                    assert_eq!(short_key(t.as_bytes()), None);
                    continue;
                }
                let key = short_key(t.as_bytes()).unwrap();
                assert_ne!(key, 0, "0 is the front cache's empty slot");
                assert!(front_slot(key) < FRONT);
                if let Some(other) = seen.insert(key, t.clone()) {
                    panic!("{t:?} and {other:?} share a key");
                }
                if t.len() <= 9 || t.len() >= 13 {
                    frontier.push(t);
                }
            }
        }
        assert!(seen.len() > 10_000, "{}", seen.len());
        assert_eq!(short_key(b""), None);
    }

    #[test]
    fn the_index_terms_stop_at_the_searchable_start() {
        let text = "alpha beta gamma delta";
        let a = analyse_document(text, 10);
        assert_eq!(a.terms, "alpha beta ");
        assert_eq!(index_terms_of("Sleeping Cats/東京"), "sleep cat 東京 ");
        assert_eq!(index_terms_of("doc-00042.md 2024"), "doc 00042 md 2024 ");
        assert_eq!(index_terms_of(""), "");
    }

    #[test]
    fn a_thread_forgets_when_full_and_answers_the_same() {
        let words: String = (0..FORGET_AFTER + 100)
            .map(|i| format!("Walking{i} "))
            .collect();
        let first = analyse_document(&words, usize::MAX);
        assert!(
            with_table(|t| t.forms.is_empty()),
            "forgotten before the next"
        );
        let again = analyse_document(&words, usize::MAX);
        assert_eq!(first, again);
        assert_eq!(index_terms_of("Running"), "run ");
        assert_eq!(index_terms_of(&"y".repeat(64)), "");
    }

    #[test]
    fn a_huge_document_is_indexed_whole_without_remembering_it_all() {
        let words: String = (0..REMEMBER_AT_MOST * 2)
            .map(|i| format!("w{i} "))
            .collect();
        let a = analyse_document(&words, usize::MAX);
        assert_eq!(a.terms.split_terminator(' ').count(), REMEMBER_AT_MOST * 2);
        assert!(with_table(
            |t| t.forms.len() <= REMEMBER_AT_MOST + FORGET_AFTER
        ));
    }
}
