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

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    group_thousands(n, ",")
}

/// The digits of `n` in groups of three, `separator` between them: `1234567` → `1 234 567`.
pub fn group_thousands(n: u64, separator: &str) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push_str(separator);
        }
        out.push(c);
    }
    out
}

/// The process's peak resident set size in KiB (Linux's `VmHWM`); `None` where the system does
/// not say.
pub fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_digits_by_three() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(group_thousands(123_456, "\u{202f}"), "123\u{202f}456");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn reads_the_peak_resident_set_on_linux() {
        let kb = peak_rss_kb().expect("Linux reports VmHWM");
        assert!(kb > 100, "{kb} KiB");
    }

    #[test]
    fn truncates_on_chars() {
        assert_eq!(truncate_chars("東京都", 2), "東京");
        assert_eq!(truncate_chars("ab", 5), "ab");
        assert_eq!(floor_char_boundary("東京", 4), 3);
    }
}
