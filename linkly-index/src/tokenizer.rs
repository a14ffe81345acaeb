//! The CJK-aware tokenizer of every text field.
//!
//! CJK runs become overlapping character bigrams (a lone CJK character stays a unigram); runs
//! of other letters and digits become words. Then lower-casing and ASCII folding (`café` and
//! `cafe` meet). Bigrams need no dictionary, treat Chinese and Japanese alike, and a query word
//! inside a CJK run is found because its bigrams are all there (see ARCHITECTURE.md).

use linkly_core::is_cjk;
use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, Stemmer, TextAnalyzer, Token,
    TokenStream, Tokenizer,
};

/// The name under which the analyzer is registered on every index handle.
pub(crate) const NAME: &str = "linkly";

/// The analyzer used for indexing and for queries: words, lower-cased, folded, then English
/// (Snowball) stemming, which raised BM25 nDCG@10 on BEIR SciFact (see docs/models.md). A
/// stemmer leaves CJK bigrams alone, and applies the same way to a query and to the text, so a
/// word of another language is at worst cut the same wrong way on both sides.
pub(crate) fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(CjkBigramTokenizer)
        .filter(RemoveLongFilter::limit(64))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .filter(Stemmer::new(Language::English))
        .build()
}

/// The analyzer of whole words (no stemming), for keywords shown to people.
fn word_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(CjkBigramTokenizer)
        .filter(RemoveLongFilter::limit(64))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build()
}

/// Splits text into words and CJK bigrams.
#[derive(Clone, Default)]
pub(crate) struct CjkBigramTokenizer;

/// The tokens of one text, produced eagerly.
pub(crate) struct VecTokenStream {
    tokens: Vec<Token>,
    index: usize,
}

impl TokenStream for VecTokenStream {
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

impl Tokenizer for CjkBigramTokenizer {
    type TokenStream<'a> = VecTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> VecTokenStream {
        VecTokenStream {
            tokens: tokenize(text),
            index: 0,
        }
    }
}

/// The raw tokens (before lower-casing and folding) of a text.
pub(crate) fn tokenize(text: &str) -> Vec<Token> {
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

/// The words of a text (lower-cased, folded, not stemmed), in order.
#[cfg(test)]
pub(crate) fn terms(text: &str) -> Vec<String> {
    terms_at(text).into_iter().map(|(_, t)| t).collect()
}

/// The words of a text (lower-cased, folded, not stemmed), in order, each with the byte offset
/// where it starts.
pub(crate) fn terms_at(text: &str) -> Vec<(usize, String)> {
    let mut analyzer = word_analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while stream.advance() {
        let token = stream.token();
        out.push((token.offset_from, token.text.clone()));
    }
    out
}

/// The terms a text is indexed and searched under (stemmed), in order.
pub(crate) fn index_terms(text: &str) -> Vec<String> {
    analyse(analyzer(), text)
}

/// The indexed terms of a text (stemmed) with the byte range of the word or bigram each comes
/// from, in order.
pub(crate) fn term_spans(text: &str) -> Vec<(usize, usize, String)> {
    thread_local! {
        // Built once per thread: callers split many short lines.
        static ANALYZER: std::cell::RefCell<TextAnalyzer> = std::cell::RefCell::new(analyzer());
    }
    ANALYZER.with_borrow_mut(|analyzer| {
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            let t = stream.token();
            out.push((t.offset_from, t.offset_to, t.text.clone()));
        }
        out
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
