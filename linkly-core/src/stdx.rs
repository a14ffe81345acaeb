//! Small helpers that "should be in std".

/// The longest prefix of `s` with at most `max` chars.
pub fn truncate_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The largest char boundary of `s` at or below `i`.
pub fn floor_char_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    let mut i = i;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_on_chars() {
        assert_eq!(truncate_chars("東京都", 2), "東京");
        assert_eq!(truncate_chars("ab", 5), "ab");
        assert_eq!(floor_char_boundary("東京", 4), 3);
    }
}
