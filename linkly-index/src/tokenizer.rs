//! The CJK-aware tokenizer of every text field.
//!
//! CJK runs become overlapping character bigrams (a lone CJK character stays a unigram); runs
//! of other letters and digits become words. Then lower-casing and ASCII folding (`café` and
//! `cafe` meet). Bigrams need no dictionary, treat Chinese and Japanese alike, and a query word
//! inside a CJK run is found because its bigrams are all there (see docs/internals.md).

use linkly_core::is_cjk;
use rustc_hash::FxHashMap;
use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RawTokenizer, RemoveLongFilter, Stemmer,
    TextAnalyzer, Token, TokenStream, Tokenizer,
};

/// The analyzer used for indexing and for queries: words, lower-cased, folded, then English
/// (Snowball) stemming, which raised BM25 nDCG@10 on BEIR SciFact (see docs/models.md). A
/// stemmer leaves CJK bigrams alone, and applies the same way to a query and to the text, so a
/// word of another language is at worst cut the same wrong way on both sides.
pub(crate) fn analyzer() -> TextAnalyzer {
    TextAnalyzer::from(CjkBigramTokenizer::new(true))
}

/// The analyzer of whole words (no stemming), for keywords shown to people.
#[cfg(test)]
fn word_analyzer() -> TextAnalyzer {
    TextAnalyzer::from(CjkBigramTokenizer::new(false))
}

/// The filters applied to each raw token, one token at a time: long tokens dropped,
/// lower-casing, ASCII folding, then (for the index analyzer) stemming.
pub(crate) fn token_filters(stem: bool) -> TextAnalyzer {
    filtered(RawTokenizer::default(), stem)
}

/// `tokenizer`'s tokens through the filters of [`token_filters`].
fn filtered<T: Tokenizer>(tokenizer: T, stem: bool) -> TextAnalyzer {
    let base = TextAnalyzer::builder(tokenizer)
        .filter(RemoveLongFilter::limit(64))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter);
    if stem {
        base.filter(Stemmer::new(Language::English)).build()
    } else {
        base.build()
    }
}

/// Distinct raw tokens a [`Normaliser`] remembers before it starts afresh (about 2 MB).
const NORMALISED_CACHE: usize = 32 * 1024;

/// The filters of [`token_filters`] with a memory of recent answers: a text repeats its words,
/// and the Snowball stemmer, lower-casing and folding cost far more than a hash lookup. Each
/// filter works on one token alone, so the cached answer is the one the filters give.
struct Normaliser {
    filters: TextAnalyzer,
    stem: bool,
    /// Raw token → index of its indexed form in `terms`.
    cache: FxHashMap<Box<str>, u32>,
    /// Indexed forms, `None` for a token that is dropped (too long).
    terms: Vec<Option<Box<str>>>,
}

impl Normaliser {
    fn new(stem: bool) -> Normaliser {
        Normaliser {
            filters: token_filters(stem),
            stem,
            cache: FxHashMap::default(),
            terms: Vec::new(),
        }
    }

    /// The indexed form of one raw token, `None` when it is dropped.
    fn normalise(&mut self, raw: &str) -> Option<&str> {
        let at = match self.cache.get(raw) {
            Some(&at) => at,
            None => {
                if self.terms.len() >= NORMALISED_CACHE {
                    self.cache.clear();
                    self.terms.clear();
                }
                let mut stream = self.filters.token_stream(raw);
                let term = stream
                    .advance()
                    .then(|| stream.token().text.clone().into_boxed_str());
                drop(stream);
                let at = self.terms.len() as u32;
                self.terms.push(term);
                self.cache.insert(raw.into(), at);
                at
            }
        };
        self.terms[at as usize].as_deref()
    }
}

/// Splits text into words and CJK bigrams, then lower-cases, folds and (for the index
/// analyzer) stems each one.
pub(crate) struct CjkBigramTokenizer {
    normaliser: Normaliser,
}

impl CjkBigramTokenizer {
    fn new(stem: bool) -> CjkBigramTokenizer {
        CjkBigramTokenizer {
            normaliser: Normaliser::new(stem),
        }
    }
}

impl Clone for CjkBigramTokenizer {
    /// A clone starts with an empty memory (tantivy clones the analyzer for each segment
    /// writer and field).
    fn clone(&self) -> CjkBigramTokenizer {
        CjkBigramTokenizer::new(self.normaliser.stem)
    }
}

/// The tokens of one text, produced one at a time into one reused [`Token`].
pub(crate) struct CjkTokenStream<'a> {
    raw: RawTokens<'a>,
    normaliser: &'a mut Normaliser,
    token: Token,
}

impl TokenStream for CjkTokenStream<'_> {
    fn advance(&mut self) -> bool {
        while let Some((from, to, position)) = self.raw.next() {
            if let Some(term) = self.normaliser.normalise(&self.raw.text[from..to]) {
                self.token.text.clear();
                self.token.text.push_str(term);
                self.token.offset_from = from;
                self.token.offset_to = to;
                self.token.position = position;
                self.token.position_length = 1;
                return true;
            }
        }
        false
    }
    fn token(&self) -> &Token {
        &self.token
    }
    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

impl Tokenizer for CjkBigramTokenizer {
    type TokenStream<'a> = CjkTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CjkTokenStream<'a> {
        CjkTokenStream {
            raw: RawTokens::new(text),
            normaliser: &mut self.normaliser,
            token: Token::default(),
        }
    }
}

/// The name of the tokenizer of the full-text index's fields: their text is already the
/// analysed terms (see [`crate::analysis`]), one space after each.
pub(crate) const TERMS_NAME: &str = "linkly-terms";

/// Splits a string of analysed terms (each followed by one space) back into its terms. The
/// analysis runs on the sync's preparing threads, once per document for the index and the
/// keywords together; the index writer's thread only splits and counts.
#[derive(Clone, Default)]
pub(crate) struct TermsTokenizer {
    token: Token,
}

/// The terms of one analysed string.
pub(crate) struct TermsStream<'a> {
    rest: &'a str,
    token: &'a mut Token,
}

impl Tokenizer for TermsTokenizer {
    type TokenStream<'a> = TermsStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> TermsStream<'a> {
        self.token.reset();
        self.token.position = usize::MAX;
        TermsStream {
            rest: text,
            token: &mut self.token,
        }
    }
}

impl TokenStream for TermsStream<'_> {
    fn advance(&mut self) -> bool {
        let rest = self.rest.trim_start_matches(' ');
        if rest.is_empty() {
            self.rest = rest;
            return false;
        }
        let (term, after) = match memchr::memchr(b' ', rest.as_bytes()) {
            Some(at) => (&rest[..at], &rest[at + 1..]),
            None => (rest, ""),
        };
        self.token.text.clear();
        self.token.text.push_str(term);
        self.token.position = self.token.position.wrapping_add(1);
        self.rest = after;
        true
    }
    fn token(&self) -> &Token {
        self.token
    }
    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

/// The raw words and CJK bigrams of a text, as byte ranges with their positions: runs of
/// Han/Kana/Hangul give their overlapping bigrams (a lone CJK character stays a unigram), runs
/// of other letters and digits give words. A token dropped later keeps its position.
pub(crate) struct RawTokens<'a> {
    text: &'a str,
    /// Where the next token is looked for, outside a CJK run.
    pos: usize,
    /// Inside a CJK run: the start of the character that begins the next bigram, if any.
    cjk_at: Option<usize>,
    /// The position of the next token.
    position: usize,
}

impl<'a> RawTokens<'a> {
    pub(crate) fn new(text: &'a str) -> RawTokens<'a> {
        RawTokens {
            text,
            pos: 0,
            cjk_at: None,
            position: 0,
        }
    }

    fn emit(&mut self, from: usize, to: usize) -> Option<(usize, usize, usize)> {
        let position = self.position;
        self.position += 1;
        Some((from, to, position))
    }
}

impl Iterator for RawTokens<'_> {
    /// Start and end byte offsets and position.
    type Item = (usize, usize, usize);

    fn next(&mut self) -> Option<(usize, usize, usize)> {
        let text = self.text;
        let bytes = text.as_bytes();
        let cjk_after = |at: usize| text[at..].chars().next().filter(|&d| is_cjk(d));
        loop {
            if let Some(p) = self.cjk_at {
                let q = p + text[p..].chars().next().map_or(0, char::len_utf8);
                if let Some(d) = cjk_after(q) {
                    self.cjk_at = Some(q);
                    return self.emit(p, q + d.len_utf8());
                }
                self.cjk_at = None;
                self.pos = q;
                continue;
            }
            // ASCII spaces and punctuation are skipped as bytes; an ASCII letter or digit
            // starts a word.
            let mut i = self.pos;
            while i < bytes.len() && bytes[i].is_ascii() && !bytes[i].is_ascii_alphanumeric() {
                i += 1;
            }
            if i >= bytes.len() {
                self.pos = i;
                return None;
            }
            if bytes[i].is_ascii() {
                let end = word_end(text, i + 1);
                self.pos = end;
                return self.emit(i, end);
            }
            let c = text[i..].chars().next()?;
            let after = i + c.len_utf8();
            if is_cjk(c) {
                return match cjk_after(after) {
                    Some(d) => {
                        self.cjk_at = Some(after);
                        self.emit(i, after + d.len_utf8())
                    }
                    None => {
                        self.pos = after;
                        self.emit(i, after)
                    }
                };
            }
            if c.is_alphanumeric() {
                let end = word_end(text, after);
                self.pos = end;
                return self.emit(i, end);
            }
            self.pos = after;
        }
    }
}

/// The words of a text (lower-cased, folded, not stemmed), in order.
#[cfg(test)]
pub(crate) fn terms(text: &str) -> Vec<String> {
    terms_at(text).into_iter().map(|(_, t)| t).collect()
}

/// Where the run of letters and digits (not CJK) going on at byte `from` ends. ASCII bytes
/// are checked as bytes; others are decoded.
fn word_end(text: &str, from: usize) -> usize {
    let bytes = text.as_bytes();
    let mut at = from;
    while at < bytes.len() {
        let b = bytes[at];
        if ASCII_ALNUM[b as usize] {
            at += 1;
        } else if b.is_ascii() {
            return at;
        } else {
            match text[at..].chars().next() {
                Some(d) if d.is_alphanumeric() && !is_cjk(d) => at += d.len_utf8(),
                _ => return at,
            }
        }
    }
    at
}

/// ASCII letters and digits, by byte.
static ASCII_ALNUM: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 128 {
        table[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    table
};

/// The words of a text (lower-cased, folded, not stemmed), in order, each with the byte offset
/// where it starts.
#[cfg(test)]
pub(crate) fn terms_at(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for_each_word(text, |at, term| out.push((at, term.to_string())));
    out
}

/// Calls `f` with each word of a text (lower-cased, folded, not stemmed), in order, and the
/// byte offset where it starts.
#[cfg(test)]
pub(crate) fn for_each_word(text: &str, mut f: impl FnMut(usize, &str)) {
    thread_local! {
        // One per thread, so that its memory of words serves document after document.
        static WORDS: std::cell::RefCell<TextAnalyzer> = std::cell::RefCell::new(word_analyzer());
    }
    WORDS.with_borrow_mut(|analyzer| {
        let mut stream = analyzer.token_stream(text);
        while stream.advance() {
            let token = stream.token();
            f(token.offset_from, &token.text);
        }
    });
}

/// The terms a text is indexed and searched under (stemmed), in order.
pub(crate) fn index_terms(text: &str) -> Vec<String> {
    analyse(analyzer(), text)
}

/// The indexed terms of a text (stemmed) with the byte range of the word or bigram each comes
/// from, in order.
pub(crate) fn term_spans(text: &str) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    for_each_term_span(text, |start, end, term| {
        out.push((start, end, term.to_string()))
    });
    out
}

/// [`term_spans`], one term at a time, none of them copied.
pub(crate) fn for_each_term_span(text: &str, mut f: impl FnMut(usize, usize, &str)) {
    thread_local! {
        // Built once per thread: callers split many short lines.
        static ANALYZER: std::cell::RefCell<TextAnalyzer> = std::cell::RefCell::new(analyzer());
    }
    let mut run = |analyzer: &mut TextAnalyzer| {
        let mut stream = analyzer.token_stream(text);
        while stream.advance() {
            let t = stream.token();
            f(t.offset_from, t.offset_to, &t.text);
        }
    };
    ANALYZER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut analyzer) => run(&mut analyzer),
        // `f` itself asked for term spans: a fresh analyzer for this inner call.
        Err(_) => run(&mut analyzer()),
    })
}

fn analyse(mut analyzer: TextAnalyzer, text: &str) -> Vec<String> {
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tokenizer as it was before tokens were produced one at a time and normalised
    /// through a cache: every token eagerly, then tantivy's filter chain over the stream.
    #[derive(Clone)]
    struct Reference;

    struct ReferenceStream {
        tokens: Vec<Token>,
        index: usize,
    }

    impl TokenStream for ReferenceStream {
        fn advance(&mut self) -> bool {
            self.index += 1;
            self.index <= self.tokens.len()
        }
        fn token(&self) -> &Token {
            &self.tokens[self.index - 1]
        }
        fn token_mut(&mut self) -> &mut Token {
            &mut self.tokens[self.index - 1]
        }
    }

    impl Tokenizer for Reference {
        type TokenStream<'a> = ReferenceStream;
        fn token_stream<'a>(&'a mut self, text: &'a str) -> ReferenceStream {
            ReferenceStream {
                tokens: reference_tokenize(text),
                index: 0,
            }
        }
    }

    fn reference_tokenize(text: &str) -> Vec<Token> {
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        let end_of = |i: usize| chars.get(i + 1).map_or(text.len(), |c| c.0);
        let mut tokens = Vec::new();
        let push = |from: usize, to: usize, tokens: &mut Vec<Token>| {
            let position = tokens.len();
            tokens.push(Token {
                offset_from: from,
                offset_to: to,
                position,
                text: text[from..to].to_string(),
                position_length: 1,
            });
        };
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i].1;
            if is_cjk(c) {
                let start = i;
                while i < chars.len() && is_cjk(chars[i].1) {
                    i += 1;
                }
                if i - start == 1 {
                    push(chars[start].0, end_of(start), &mut tokens);
                } else {
                    for (k, &(from, _)) in chars.iter().enumerate().take(i - 1).skip(start) {
                        push(from, end_of(k + 1), &mut tokens);
                    }
                }
            } else if c.is_alphanumeric() {
                let start = i;
                while i < chars.len() && chars[i].1.is_alphanumeric() && !is_cjk(chars[i].1) {
                    i += 1;
                }
                push(chars[start].0, end_of(i - 1), &mut tokens);
            } else {
                i += 1;
            }
        }
        tokens
    }

    fn reference_analyzer(stem: bool) -> TextAnalyzer {
        filtered(Reference, stem)
    }

    fn all_tokens(analyzer: &mut TextAnalyzer, text: &str) -> Vec<(String, usize, usize, usize)> {
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            let t = stream.token();
            out.push((t.text.clone(), t.offset_from, t.offset_to, t.position));
        }
        out
    }

    #[test]
    fn tokens_are_those_of_the_reference_pipeline() {
        let long = "x".repeat(70);
        let mut texts: Vec<String> = vec![
            String::new(),
            "東".into(),
            "a東b".into(),
            "東京 Tokyo 京".into(),
            "コンポーネントの基礎、機械学習と東京。".into(),
            format!("before {long} after Running runners ran"),
            "Ĳssel Straße ﬁnal ΣΊΣΥΦΟΣ naïve CAFÉS 123abc 4.5e6 x_y".into(),
            "한국어 텍스트 mixed한글text".into(),
            "trailing 機".into(),
        ];
        // Real documents the repository carries, in several languages and formats.
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/corpus");
        for entry in walkdir(&corpus) {
            if let Ok(text) = std::fs::read_to_string(&entry) {
                texts.push(text);
            }
        }
        assert!(texts.len() > 20, "the corpus was read");
        for stem in [true, false] {
            // One analyzer for all texts: its memory carries over from text to text.
            let mut new = TextAnalyzer::from(CjkBigramTokenizer::new(stem));
            for text in &texts {
                let mut reference = reference_analyzer(stem);
                assert_eq!(
                    all_tokens(&mut new, text),
                    all_tokens(&mut reference, text),
                    "stem={stem}: {}",
                    text.chars().take(60).collect::<String>()
                );
            }
        }
    }

    fn walkdir(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walkdir(&p));
            } else {
                out.push(p);
            }
        }
        out
    }

    #[test]
    fn the_cache_starts_afresh_when_full_and_keeps_answering_the_same() {
        let mut n = Normaliser::new(true);
        for i in 0..NORMALISED_CACHE + 10 {
            let word = format!("Walking{i}");
            let expected = analyse(token_filters(true), &word);
            assert_eq!(
                n.normalise(&word).map(str::to_string),
                expected.first().cloned()
            );
        }
        assert!(n.cache.len() <= NORMALISED_CACHE);
        assert_eq!(n.normalise("Running"), Some("run"));
        assert_eq!(n.normalise(&"y".repeat(64)), None);
    }

    #[test]
    fn cjk_bigrams_and_words() {
        assert_eq!(terms("機械学習 Rust"), ["機械", "械学", "学習", "rust"]);
        assert_eq!(terms("東"), ["東"]);
        assert_eq!(terms("Café au lait"), ["cafe", "au", "lait"]);
        assert_eq!(
            terms("コンポーネントの基礎"),
            [
                "コン", "ンポ", "ポー", "ーネ", "ネン", "ント", "トの", "の基", "基礎"
            ]
        );
        assert_eq!(terms("abc東京def"), ["abc", "東京", "def"]);
        assert_eq!(index_terms("Sleeping cats"), ["sleep", "cat"]);
        assert_eq!(index_terms("機械学習"), ["機械", "械学", "学習"]);
    }

    #[test]
    fn term_spans_may_be_asked_for_inside_term_spans() {
        let mut inner = Vec::new();
        for_each_term_span("Cafés quantified", |_, _, term| {
            inner.push((term.to_string(), index_terms(term)));
            for_each_term_span(term, |_, _, again| assert_eq!(again, term));
        });
        assert_eq!(inner.len(), 2);
        assert_eq!(inner[0].0, "cafe");
    }

    #[test]
    fn term_spans_point_at_the_words() {
        let text = "Les Cafés quantified 機械学習";
        let spans = term_spans(text);
        let shown: Vec<(&str, &str)> = spans
            .iter()
            .map(|(a, b, t)| (&text[*a..*b], t.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                ("Les", "les"),
                ("Cafés", "cafe"),
                ("quantified", "quantifi"),
                ("機械", "機械"),
                ("械学", "械学"),
                ("学習", "学習")
            ]
        );
    }
}
