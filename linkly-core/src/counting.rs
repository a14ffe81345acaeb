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
    let mut count = 0;
    let mut in_word = false;
    for c in text.chars() {
        if is_cjk(c) {
            count += 1;
            in_word = false;
        } else if c.is_whitespace() {
            in_word = false;
        } else if !in_word {
            count += 1;
            in_word = true;
        }
    }
    count
}

/// Counts Unicode scalar values, `\r` excluded.
pub fn char_count(text: &str) -> u64 {
    text.chars().filter(|&c| c != '\r').count() as u64
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

    #[test]
    fn chars() {
        assert_eq!(char_count("a\r\nb"), 3);
        assert_eq!(char_count("東京"), 2);
        assert_eq!(char_count("**x**"), 5);
    }
}
