/// True for a Han, Hiragana, Katakana or Hangul character (and their compatibility and
/// extension blocks): each counts as one word, and is tokenized as CJK.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF      // Hangul Jamo
        | 0x2E80..=0x2FDF    // CJK radicals, Kangxi
        | 0x3005..=0x3007    // 々 〆 〇
        | 0x3040..=0x30FF    // Hiragana, Katakana
        | 0x3130..=0x318F    // Hangul compatibility Jamo
        | 0x31F0..=0x31FF    // Katakana phonetic extensions
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF66..=0xFF9F    // half-width Katakana
        | 0x20000..=0x3134F) // CJK extensions B–G
}

/// Counts words: whitespace-separated runs, except that every CJK character is one word.
pub fn word_count(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let mut words = Words::default();
    let mut at = 0;
    while at < bytes.len() {
        let b = bytes[at];
        if b.is_ascii() {
            // Without branches: a word starts where a non-space follows a space.
            let word = !ASCII_SPACE[b as usize];
            words.count += u64::from(word && !words.in_word);
            words.in_word = word;
            at += 1;
            continue;
        }
        let c = text[at..].chars().next().unwrap_or(' ');
        at += c.len_utf8();
        words.push(c);
    }
    words.count
}

/// The words counted so far, character by character: the definition that [`word_count`]
/// follows (its ASCII path is a branch-free table of the same rule).
#[derive(Default)]
struct Words {
    count: u64,
    in_word: bool,
}

impl Words {
    /// Takes the next character: a CJK character is a word of its own, whitespace ends a word,
    /// anything else starts one unless a word is open.
    fn push(&mut self, c: char) {
        if is_cjk(c) {
            self.count += 1;
            self.in_word = false;
        } else if c.is_whitespace() {
            self.in_word = false;
        } else if !self.in_word {
            self.count += 1;
            self.in_word = true;
        }
    }
}

/// ASCII whitespace as `char::is_whitespace` has it: tab to carriage return, and space.
static ASCII_SPACE: [bool; 128] = {
    let mut table = [false; 128];
    let mut b = 9;
    while b <= 13 {
        table[b] = true;
        b += 1;
    }
    table[32] = true;
    table
};

/// Counts Unicode scalar values, `\r` excluded.
pub fn char_count(text: &str) -> u64 {
    let returns = text.bytes().filter(|&b| b == b'\r').count();
    (text.chars().count() - returns) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words() {
        assert_eq!(word_count("hello  world\n"), 2);
        assert_eq!(word_count("機械学習です"), 6);
        assert_eq!(word_count("Rust と 東京"), 4);
        assert_eq!(word_count("abc東京def"), 4);
        assert_eq!(word_count(""), 0);
        assert_eq!(word_count("한국어 text"), 4);
    }

    /// The definitions, character by character.
    fn words_plain(text: &str) -> u64 {
        let mut words = Words::default();
        text.chars().for_each(|c| words.push(c));
        words.count
    }

    #[test]
    fn the_fast_counts_are_the_definitions() {
        let texts = [
            "",
            " a\tb\u{0B}c\u{0C}d\re\u{1C}f\u{85}g\u{A0}h\u{3000}i 東京x ",
            "naïve café — Straße\r\n東京は晴れ。한국어 text\u{2028}end",
            "\u{1F600}emoji\u{200B}zero width",
        ];
        for t in texts {
            assert_eq!(word_count(t), words_plain(t), "{t:?}");
            assert_eq!(
                char_count(t),
                t.chars().filter(|&c| c != '\r').count() as u64,
                "{t:?}"
            );
        }
    }

    #[test]
    fn chars() {
        assert_eq!(char_count("a\r\nb"), 3);
        assert_eq!(char_count("東京"), 2);
        assert_eq!(char_count("**x**"), 5);
    }
}
