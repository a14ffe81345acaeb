//! Per-document keywords and abstracts, computed at index time.
//!
//! Keywords are the most frequent content terms of a document that are not stop words
//! (English, French, Spanish), numbers or markup. CJK text has no spaces, and the bigrams the
//! full-text index uses (see `tokenizer`) are fragments such as `ント` or `コン`; keywords are
//! shown to people and agents, so CJK text is cut into words instead ([`cjk_words`]): runs of one
//! script (katakana loanwords, kanji compounds, Hangul words), Chinese runs split again at
//! function characters (的, 了, 是…), and long runs reduced to the repeated n-grams that are not
//! always part of a longer repeated one. No dictionary: it costs nothing to load, and it finds
//! the words a document repeats, which is what a keyword is.

use std::collections::HashMap;

use linkly_core::{is_cjk, stdx};
#[cfg(test)]
use rustc_hash::FxHashMap;
use rustc_hash::FxHashSet;

#[cfg(test)]
use crate::tokenizer;

/// How many keywords each document keeps.
const KEYWORDS: usize = 8;
/// The abstract's length in characters.
const ABSTRACT_CHARS: usize = 300;
/// Only the start of a long text is scanned for keywords.
pub(crate) const SCAN_BYTES: usize = 256 * 1024;

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
    static SET: std::sync::OnceLock<FxHashSet<&'static str>> = std::sync::OnceLock::new();
    SET.get_or_init(|| STOP_WORDS.iter().copied().collect())
        .contains(term)
}

/// True for a word that may be a keyword: not CJK (see [`cjk_words`]), three characters or
/// more, with a letter, not a hex number, not a stop word.
pub(crate) fn may_be_keyword(term: &str) -> bool {
    !term.chars().any(is_cjk)
        && term.chars().count() >= 3
        && term.chars().any(|c| c.is_alphabetic())
        && !term.chars().all(|c| c.is_ascii_hexdigit())
        && !is_stop_word(term)
}

/// The top keywords of a text, word by word as the rules say: what the sync computes in one
/// pass with the index terms ([`crate::analysis`]), which the tests compare with this.
#[cfg(test)]
pub(crate) fn keywords(text: &str) -> Vec<String> {
    let scan = &text[..stdx::floor_char_boundary(text, SCAN_BYTES)];
    // term → (count, first position in the text)
    // Each word is judged once: `None` for one that cannot be a keyword.
    let mut seen: FxHashMap<String, Option<(u32, usize)>> = FxHashMap::default();
    tokenizer::for_each_word(scan, |order, term| match seen.get_mut(term) {
        Some(Some(entry)) => entry.0 += 1,
        Some(None) => {}
        None => {
            let judged = may_be_keyword(term).then_some((1, order));
            seen.insert(term.to_string(), judged);
        }
    });
    let mut counts: FxHashMap<String, (u32, usize)> = seen
        .into_iter()
        .filter_map(|(term, judged)| judged.map(|j| (term, j)))
        .collect();
    for (term, (n, order)) in cjk_words(scan) {
        let entry = counts.entry(term).or_insert((0, order));
        entry.0 += n;
        entry.1 = entry.1.min(order);
    }
    top_keywords(counts.iter().map(|(t, &(n, at))| (t.as_str(), n, at)))
}

/// The [`KEYWORDS`] best of candidate terms given as (term, count, first byte offset), each
/// term once: those seen twice or more, most frequent first, then earliest. Ties (a CJK word
/// and a longer one from the same place) go to the smaller term, so the keywords do not depend
/// on the order of the candidates.
pub(crate) fn top_keywords<'a>(
    candidates: impl Iterator<Item = (&'a str, u32, usize)>,
) -> Vec<String> {
    let mut ranked: Vec<(&str, u32, usize)> = candidates.filter(|c| c.1 >= 2).collect();
    ranked.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)).then_with(|| a.0.cmp(b.0)));
    ranked
        .into_iter()
        .take(KEYWORDS)
        .map(|(t, _, _)| t.to_string())
        .collect()
}

/// The script of a CJK character, as far as word boundaries go.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Script {
    Han,
    Hiragana,
    Katakana,
    Hangul,
    /// Not CJK, or CJK punctuation such as `・`: a boundary.
    Other,
}

fn script(c: char) -> Script {
    match c as u32 {
        // 々 〆 〇 behave as kanji; ー (U+30FC) sits in the katakana block.
        0x3005..=0x3007 | 0x2E80..=0x2FDF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF => {
            Script::Han
        }
        0x20000..=0x3134F => Script::Han,
        0x3040..=0x309F => Script::Hiragana,
        // The middle dot between the parts of a foreign name separates words.
        0x30FB => Script::Other,
        0x30A0..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9F => Script::Katakana,
        0x1100..=0x11FF | 0x3130..=0x318F | 0xAC00..=0xD7AF => Script::Hangul,
        _ => Script::Other,
    }
}

/// Characters that are (almost) always grammar, never part of a Chinese word: a Chinese run is
/// cut at them, as kana cut a Japanese one. Only applied to text without kana.
const CHINESE_FUNCTION_CHARS: &[char] = &[
    '的', '了', '是', '在', '和', '与', '及', '或', '也', '就', '都', '而', '被', '把', '这', '那',
    '之', '其', '于', '着', '过', '吗', '呢', '吧', '啊', '我', '你', '他', '她', '它', '们',
];

/// The longest run treated as one word without looking inside it.
const WHOLE_RUN_CHARS: usize = 4;
/// The longest n-gram looked for inside a longer run.
const MAX_GRAM: usize = 4;

/// The CJK words of a text with their counts and first positions (byte offsets).
///
/// Katakana and Hangul runs are words as they stand (a katakana run is a loanword or a
/// compound of them). Kanji runs of up to four characters are words; longer ones, common in
/// Chinese, give the n-grams (two to four characters) that repeat and are not always inside
/// the same longer repeated n-gram: `人工智能` repeated keeps `人工智能`, not `工智`. Hiragana
/// is grammar (particles, endings) and gives no word.
pub(crate) fn cjk_words(text: &str) -> HashMap<String, (u32, usize)> {
    let japanese = has_hiragana(text);
    let mut words: HashMap<String, (u32, usize)> = HashMap::new();
    let mut long_runs: Vec<(usize, Vec<char>)> = Vec::new();
    let add = |words: &mut HashMap<String, (u32, usize)>, word: String, at: usize, n: u32| {
        let entry = words.entry(word).or_insert((0, at));
        entry.0 += n;
        entry.1 = entry.1.min(at);
    };
    let mut run: Vec<char> = Vec::new();
    let mut run_at = 0;
    let mut run_script = Script::Other;
    let mut flush = |run: &mut Vec<char>, at: usize, s: Script, words: &mut HashMap<_, _>| {
        let len = run.len();
        match s {
            // A run of only prolonged-sound marks is not a word.
            Script::Katakana | Script::Hangul
                if len >= 2 && run.iter().any(|&c| c != 'ー' && c != 'ｰ') =>
            {
                add(words, run.iter().collect(), at, 1);
            }
            Script::Han if (2..=WHOLE_RUN_CHARS).contains(&len) => {
                add(words, run.iter().collect(), at, 1);
            }
            Script::Han if len > WHOLE_RUN_CHARS => long_runs.push((at, std::mem::take(run))),
            _ => {}
        }
        run.clear();
    };
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at].is_ascii() {
            // ASCII is never CJK: a run ends here, and the ASCII after it is skipped whole.
            if run_script != Script::Other {
                flush(&mut run, run_at, run_script, &mut words);
                run_at = at;
                run_script = Script::Other;
            }
            at += bytes[at..]
                .iter()
                .position(|b| !b.is_ascii())
                .unwrap_or(bytes.len() - at);
            continue;
        }
        let Some(c) = text[at..].chars().next() else {
            break;
        };
        let char_at = at;
        at += c.len_utf8();
        let at = char_at;
        let mut s = script(c);
        if s == Script::Han && !japanese && CHINESE_FUNCTION_CHARS.contains(&c) {
            s = Script::Other;
        }
        // A prolonged-sound mark continues the katakana or hiragana before it.
        if (c == 'ー' || c == 'ｰ') && run_script == Script::Hiragana {
            s = Script::Hiragana;
        }
        if s != run_script {
            flush(&mut run, run_at, run_script, &mut words);
            run_at = at;
            run_script = s;
        }
        if s != Script::Other {
            run.push(c);
        }
    }
    flush(&mut run, run_at, run_script, &mut words);
    for (word, (n, at)) in repeated_grams(&long_runs) {
        add(&mut words, word, at, n);
    }
    words
}

/// True when the text holds a hiragana character (U+3040–U+309F: `E3 81 80`–`E3 82 9F` in
/// UTF-8), found by its bytes.
fn has_hiragana(text: &str) -> bool {
    let bytes = text.as_bytes();
    memchr::memchr_iter(0xE3, bytes).any(|i| match bytes.get(i + 1..i + 3) {
        Some([0x81, b]) => (0x80..=0xBF).contains(b),
        Some([0x82, b]) => (0x80..=0x9F).contains(b),
        _ => false,
    })
}

/// The n-grams (2 to [`MAX_GRAM`] characters) of long kanji runs that repeat and are complete:
/// not always found inside one longer n-gram that repeats as often.
fn repeated_grams(runs: &[(usize, Vec<char>)]) -> HashMap<String, (u32, usize)> {
    let mut grams: HashMap<String, (u32, usize)> = HashMap::new();
    for (at, run) in runs {
        for n in 2..=MAX_GRAM.min(run.len()) {
            for (i, window) in run.windows(n).enumerate() {
                let entry = grams.entry(window.iter().collect()).or_insert((0, at + i));
                entry.0 += 1;
            }
        }
    }
    let count = |g: &str| grams.get(g).map_or(0, |e| e.0);
    let mut complete = HashMap::new();
    for (gram, &(n, at)) in &grams {
        if n < 2 {
            continue;
        }
        let chars: Vec<char> = gram.chars().collect();
        // Inside a longer repeated n-gram every time: a fragment of it.
        let mut inside = false;
        if chars.len() < MAX_GRAM {
            for (_, run) in runs {
                for w in run.windows(chars.len() + 1) {
                    if (w[..chars.len()] == chars[..] || w[1..] == chars[..])
                        && count(&w.iter().collect::<String>()) == n
                    {
                        inside = true;
                        break;
                    }
                }
                if inside {
                    break;
                }
            }
        }
        // Made of a repeated shorter n-gram and one more character that does not belong to
        // it as often: two words or a word and grammar, not one word.
        if !inside && chars.len() > 2 {
            let head: String = chars[..chars.len() - 1].iter().collect();
            let tail: String = chars[1..].iter().collect();
            if count(&head) > n && count(&tail) > n {
                continue;
            }
        }
        if !inside {
            complete.insert(gram.clone(), (n, at));
        }
    }
    complete
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
    fn japanese_keywords_are_words_not_kana_fragments() {
        let text = "コンポーネントの基礎。コンポーネントは部品です。\
            ソフトウェアのコンポーネントを検索エンジンで探す。検索エンジンは速い。";
        let kw = keywords(text);
        assert_eq!(kw[0], "コンポーネント", "{kw:?}");
        assert!(kw.contains(&"検索".to_string()), "{kw:?}");
        assert!(kw.contains(&"エンジン".to_string()), "{kw:?}");
        for fragment in ["ント", "コン", "ポー", "ーネ", "の基"] {
            assert!(!kw.contains(&fragment.to_string()), "{fragment} in {kw:?}");
        }
        // Half-width katakana (legacy CSV files) are words too.
        let kw = keywords("ｻｯﾎﾟﾛｼ,ｻｯﾎﾟﾛｼ,ﾎｯｶｲﾄﾞｳ");
        assert_eq!(kw, ["ｻｯﾎﾟﾛｼ"]);
    }

    #[test]
    fn chinese_keywords_are_words() {
        let text = "人工智能正在改变世界。人工智能的研究需要数据。我们的数据来自医院。\
            人工智能和数据科学。";
        let kw = keywords(text);
        assert_eq!(kw[0], "人工智能", "{kw:?}");
        assert!(kw.contains(&"数据".to_string()), "{kw:?}");
        for fragment in ["工智", "智能", "人工", "能正"] {
            assert!(!kw.contains(&fragment.to_string()), "{fragment} in {kw:?}");
        }
    }

    #[test]
    fn hiragana_is_found_by_its_bytes() {
        for c in ['\u{3040}', 'ぁ', 'の', 'ゟ', '\u{309F}'] {
            assert!(has_hiragana(&format!("ab{c}")), "{c}");
        }
        for t in ["", "abc", "カタカナ", "東京", "\u{30A0}", "\u{303F}"] {
            assert!(!has_hiragana(t), "{t}");
        }
    }

    #[test]
    fn cjk_words_keep_first_positions() {
        let words = cjk_words("abc 東京 def 東京");
        assert_eq!(words["東京"], (2, 4));
        assert!(cjk_words("ーー ーー").is_empty());
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
