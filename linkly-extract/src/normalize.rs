//! Character normalisation of extracted text, so that what an agent types matches what a
//! document shows: one pass that every format's text, title and outline go through
//! ([`crate::extract_path`] and friends call it after the extractor).
//!
//! What changes, character by character (never a line end, so line numbers stay those of the
//! text `read` shows):
//!
//! - typographic ligatures U+FB00–U+FB06 (ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ) become their letters (`ff fi fl ffi ffl
//!   st st`): PDF fonts often map them to one glyph, and `grep quantified` must find `quantiﬁed`;
//! - soft hyphens (U+00AD) are removed;
//! - non-breaking and fixed-width spaces (U+00A0, U+2007, U+202F, and U+2000–U+200A, U+205F)
//!   become a plain space;
//! - zero-width characters are removed: U+200B, U+2060, U+FEFF always; the joiners U+200C and
//!   U+200D only between two Latin letters or digits (they are meaningful in Persian, Indic
//!   scripts and emoji sequences, where they stay);
//! - non-breaking and Unicode hyphens (U+2010, U+2011) become `-`;
//! - full-width ASCII letters and digits (U+FF10–U+FF19, U+FF21–U+FF3A, U+FF41–U+FF5A) become
//!   ASCII.
//!
//! **Decision — no blanket NFKC.** NFKC would also rewrite what CJK text means to show:
//! half-width katakana become full-width and their separate voicing marks merge (`ｶﾞ` → `ガ`,
//! two characters → one), CJK compatibility ideographs used in names become their unified
//! forms, full-width punctuation (`，（）：`, the ordinary punctuation of Chinese and Japanese)
//! becomes ASCII, and `①`, `㈱`, `㎡` become several characters. An agent greps what it read,
//! so only the characters above, which only ever break matching, are rewritten. The index's
//! tokenizer still folds what it needs for search.
//!
//! PDF only ([`join_hyphenated`]): a word hyphenated at a line end (`quanti-` then `fied ...`,
//! a lowercase letter on both sides) is joined by moving the rest of the word up onto the first
//! line (`quantified` / `...`), keeping the line count.

use std::collections::HashMap;

/// Normalises the characters of `text` (see the module documentation). Returns the text
/// unchanged, without copying, when it holds nothing to rewrite.
pub(crate) fn normalize_chars(text: String) -> String {
    if !any_needs_work(&text) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut prev: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{FB00}' => out.push_str("ff"),
            '\u{FB01}' => out.push_str("fi"),
            '\u{FB02}' => out.push_str("fl"),
            '\u{FB03}' => out.push_str("ffi"),
            '\u{FB04}' => out.push_str("ffl"),
            '\u{FB05}' | '\u{FB06}' => out.push_str("st"),
            '\u{00AD}' | '\u{200B}' | '\u{2060}' | '\u{FEFF}' => continue,
            '\u{200C}' | '\u{200D}' => {
                let latin = |c: Option<char>| c.is_some_and(is_latin_alnum);
                if latin(prev) && latin(chars.peek().copied()) {
                    continue;
                }
                out.push(c);
            }
            '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' => out.push(' '),
            '\u{2010}' | '\u{2011}' => out.push('-'),
            '\u{FF10}'..='\u{FF19}' | '\u{FF21}'..='\u{FF3A}' | '\u{FF41}'..='\u{FF5A}' => {
                out.push(char::from_u32(c as u32 - 0xFF00 + 0x20).unwrap_or(c));
            }
            _ => out.push(c),
        }
        prev = Some(c);
    }
    out
}

/// True when `text` holds a character [`normalize_chars`] rewrites or removes. All of them are
/// two or three bytes long in UTF-8 and start with `C2`, `E2` or `EF`, so only the characters
/// at those bytes are looked at (most text has none, or few).
fn any_needs_work(text: &str) -> bool {
    let bytes = text.as_bytes();
    memchr::memchr3_iter(0xC2, 0xE2, 0xEF, bytes).any(|at| {
        text.get(at..)
            .and_then(|t| t.chars().next())
            .is_some_and(needs_work)
    })
}

/// True for a character [`normalize_chars`] rewrites or removes.
fn needs_work(c: char) -> bool {
    matches!(c,
        '\u{FB00}'..='\u{FB06}'
        | '\u{00AD}' | '\u{00A0}'
        | '\u{2000}'..='\u{200D}'
        | '\u{2010}' | '\u{2011}' | '\u{202F}' | '\u{205F}' | '\u{2060}' | '\u{FEFF}'
        | '\u{FF10}'..='\u{FF19}' | '\u{FF21}'..='\u{FF3A}' | '\u{FF41}'..='\u{FF5A}')
}

/// A Latin letter or digit (ASCII, Latin-1 and Latin Extended), where a zero-width joiner is
/// never meaningful.
fn is_latin_alnum(c: char) -> bool {
    c.is_alphanumeric() && (c as u32) < 0x250
}

/// The hyphens that can end a line in the middle of a word: `-`, U+2010 and the soft hyphen
/// (the character normalisation turns the first two into `-` and removes the third, so this
/// runs before it).
fn is_line_end_hyphen(c: char) -> bool {
    matches!(c, '-' | '\u{2010}' | '\u{00AD}')
}

/// A word split across two lines.
struct Split {
    /// Index of the line that ends with the hyphen.
    line: usize,
    /// The part before the hyphen (the last word of the line, hyphen excluded).
    head: String,
    /// The first word of the next line (up to whitespace, trailing punctuation included).
    tail: String,
}

/// Joins words hyphenated across line ends (PDF text): when a line ends with a hyphen that
/// follows a lowercase letter and the next line starts (after spaces) with a lowercase letter,
/// the next line's first word moves up onto the first line and the hyphen goes, so `quanti-` /
/// `fied, threat` becomes `quantified,` / `threat`. The number of lines never changes (a next
/// line that held only that word becomes empty).
///
/// A hyphen that belongs to the word stays: when the hyphenated form (`free-software`) occurs
/// inside a line of the same text more often than the joined one (`freesoftware`), or the first
/// part already holds a hyphen or a slash (`state-of-the-` / `art`, a URL), the word moves up
/// with its hyphen.
/// A next line starting with an uppercase letter, a digit or anything else is left alone.
pub(crate) fn join_hyphenated(text: String) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut splits = Vec::new();
    for i in 0..lines.len().saturating_sub(1) {
        if let Some(split) = split_at(&lines, i) {
            splits.push(split);
        }
    }
    if splits.is_empty() {
        return text;
    }
    let keep = hyphen_kept(&text, &splits);
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_string()).collect();
    // Bottom up, so that in a chain (`ex-` / `tra-` / `ordinary`) the lower join is made first
    // and the upper one moves the whole word: each join changes only the end of its own line
    // and the start of the next, and the tail is read from the line as it is now.
    for (split, keep_hyphen) in splits.iter().zip(keep).rev() {
        let next = out[split.line + 1].trim_start();
        let tail_len = next.find(char::is_whitespace).unwrap_or(next.len());
        let (tail, rest) = (
            next[..tail_len].to_string(),
            next[tail_len..].trim_start().to_string(),
        );
        out[split.line + 1] = rest;
        let first = &mut out[split.line];
        let trimmed = first.trim_end().len();
        first.truncate(trimmed);
        let hyphen_len = first.chars().next_back().map_or(0, char::len_utf8);
        first.truncate(trimmed - hyphen_len);
        if keep_hyphen {
            first.push('-');
        }
        first.push_str(&tail);
    }
    out.join("\n")
}

/// The split word at the end of line `i`, if that line ends in a line-end hyphenation.
fn split_at(lines: &[&str], i: usize) -> Option<Split> {
    let line = lines[i].trim_end();
    let mut rev = line.chars().rev();
    let hyphen = rev.next()?;
    if !is_line_end_hyphen(hyphen) {
        return None;
    }
    let before = rev.next()?;
    if !before.is_lowercase() {
        return None;
    }
    let next = lines[i + 1].trim_start();
    if !next.chars().next()?.is_lowercase() {
        return None;
    }
    let tail_len = next.find(char::is_whitespace).unwrap_or(next.len());
    let tail = &next[..tail_len];
    let body = &line[..line.len() - hyphen.len_utf8()];
    let head_start = body.rfind(char::is_whitespace).map_or(0, |p| {
        p + body[p..].chars().next().map_or(1, char::len_utf8)
    });
    Some(Split {
        line: i,
        head: body[head_start..].to_string(),
        tail: tail.to_string(),
    })
}

/// For each split, whether its hyphen is part of the word (see [`join_hyphenated`]).
fn hyphen_kept(text: &str, splits: &[Split]) -> Vec<bool> {
    let word = |s: &str| -> String {
        s.trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase()
    };
    let forms: Vec<(String, String)> = splits
        .iter()
        .map(|s| {
            let (head, tail) = (word(&s.head), word(&s.tail));
            (format!("{head}-{tail}"), format!("{head}{tail}"))
        })
        .collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for (hyphenated, joined) in &forms {
        counts.insert(hyphenated, 0);
        counts.insert(joined, 0);
    }
    let mut lower = String::new();
    for token in text.split(|c: char| !(c.is_alphanumeric() || c == '-')) {
        let token = token.trim_matches('-');
        if token.is_empty() {
            continue;
        }
        lower.clear();
        lower.extend(token.chars().flat_map(char::to_lowercase));
        if let Some(n) = counts.get_mut(lower.as_str()) {
            *n += 1;
        }
    }
    splits
        .iter()
        .zip(&forms)
        .map(|(s, (hyphenated, joined))| {
            s.head.contains(['-', '/']) || counts[hyphenated.as_str()] > counts[joined.as_str()]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_byte_scan_finds_every_character_to_rewrite() {
        // Every character of the Basic Multilingual Plane and a few beyond, in text.
        for c in (0u32..0x3_0000).filter_map(char::from_u32) {
            let text = format!("ab{c}é");
            assert_eq!(any_needs_work(&text), needs_work(c), "U+{:04X}", c as u32);
        }
    }

    fn n(s: &str) -> String {
        normalize_chars(s.to_string())
    }

    fn j(s: &str) -> String {
        join_hyphenated(s.to_string())
    }

    #[test]
    fn ligatures_become_letters() {
        assert_eq!(
            n("quanti\u{FB01}ed \u{FB02}ow e\u{FB00}ort o\u{FB03}ce ba\u{FB04}e \u{FB05}\u{FB06}"),
            "quantified flow effort office baffle stst"
        );
    }

    #[test]
    fn soft_hyphens_are_removed() {
        assert_eq!(n("extra\u{AD}ordinary"), "extraordinary");
    }

    #[test]
    fn non_breaking_spaces_become_spaces() {
        assert_eq!(
            n("10\u{A0}km, 5\u{202F}%, 1\u{2007}000, a\u{2009}b"),
            "10 km, 5 %, 1 000, a b"
        );
    }

    #[test]
    fn zero_width_characters_are_removed() {
        assert_eq!(n("\u{FEFF}zero\u{200B}width\u{2060}word"), "zerowidthword");
        // Joiners go between Latin letters, stay in Persian and in emoji sequences.
        assert_eq!(n("ab\u{200C}cd e\u{200D}f"), "abcd ef");
        let persian = "\u{645}\u{6CC}\u{200C}\u{62E}\u{648}\u{627}\u{647}\u{645}";
        assert_eq!(n(persian), persian);
        let family = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}";
        assert_eq!(n(family), family);
    }

    #[test]
    fn unicode_hyphens_become_ascii() {
        assert_eq!(
            n("well\u{2010}known non\u{2011}breaking"),
            "well-known non-breaking"
        );
    }

    #[test]
    fn full_width_letters_and_digits_only() {
        assert_eq!(n("ＡＢＣ１２３ｘｙｚ"), "ABC123xyz");
        // CJK punctuation, full-width space, half-width katakana, compatibility ideographs and
        // enclosed forms stay as they are.
        let cjk = "東京（とうきょう）、　ｶﾞｲﾄﾞ 﨑 ① ㈱ ㎡ ！";
        assert_eq!(n(cjk), cjk);
    }

    #[test]
    fn line_ends_are_never_touched() {
        let text = "a\u{A0}\n\u{200B}\n\u{FEFF}\n\u{AD}\nb";
        assert_eq!(n(text).split('\n').count(), 5);
        assert_eq!(n(text), "a \n\n\n\nb");
    }

    #[test]
    fn plain_text_is_not_copied() {
        let text = "plain ASCII text\nand 日本語".to_string();
        let ptr = text.as_ptr();
        let out = normalize_chars(text);
        assert_eq!(out.as_ptr(), ptr);
    }

    #[test]
    fn hyphenated_words_are_joined_in_place() {
        assert_eq!(
            j("a real, if not yet quanti-\nfied, threat to the\nnext line"),
            "a real, if not yet quantified,\nthreat to the\nnext line"
        );
        // The next line held only the rest of the word: it stays, empty.
        assert_eq!(j("pur-\nchase\nend"), "purchase\n\nend");
        // Spaces at the ends of lines do not matter.
        assert_eq!(j("  con-  \n  trol of it"), "  control\nof it");
        // A soft hyphen and U+2010 at a line end are hyphenations too.
        assert_eq!(j("quanti\u{AD}\nfied x"), "quantified\nx");
        assert_eq!(j("quanti\u{2010}\nfied x"), "quantified\nx");
    }

    #[test]
    fn chains_of_hyphenations() {
        assert_eq!(j("re-\nal-\nity check"), "reality\n\ncheck");
        assert_eq!(j("one ex-\ntra-\nordinary day"), "one extraordinary\n\nday");
    }

    #[test]
    fn what_is_not_joined() {
        for text in [
            "see Chapter-\nTwo",
            "in 2004-\n2005 already",
            "CD-\nrom",
            "a well-known word\nand more",
            "ends with -\nnothing",
            "be-\n\n1 note",
            "last line-",
            "page end-\n--- page 2 ---",
        ] {
            assert_eq!(j(text), text, "{text:?}");
        }
    }

    #[test]
    fn compound_words_keep_their_hyphen() {
        // The document writes `free-software` inside a line: the split keeps its hyphen.
        assert_eq!(
            j("the free-software movement and the free-\nsoftware licence"),
            "the free-software movement and the free-software\nlicence"
        );
        // A first part that is already a compound keeps it.
        assert_eq!(j("state-of-the-\nart work"), "state-of-the-art\nwork");
        assert_eq!(
            j("see https://example.org/some-\npath/index.html for more"),
            "see https://example.org/some-path/index.html\nfor more"
        );
    }

    #[test]
    fn line_count_is_kept() {
        let text = "x quanti-\nfied\ny pur-\nchase z\nw-\nX";
        assert_eq!(j(text).split('\n').count(), text.split('\n').count());
    }
}
