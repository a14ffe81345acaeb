//! Word error rate, for the tests and the transcription benchmark.

/// Words of a transcript as compared: lower case, punctuation dropped (an apostrophe inside a
/// word is kept), split at whitespace.
pub fn normalised_words(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|w| {
            let w: String = w
                .chars()
                .filter(|c| c.is_alphanumeric() || *c == '\'')
                .flat_map(char::to_lowercase)
                .collect();
            w.trim_matches('\'').to_string()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// The word error rate of `hypothesis` against `reference`: (substitutions + deletions +
/// insertions) / reference words, on [`normalised_words`]. An empty reference gives 0 for an
/// empty hypothesis and 1 otherwise.
pub fn word_error_rate(reference: &str, hypothesis: &str) -> f64 {
    let r = normalised_words(reference);
    let h = normalised_words(hypothesis);
    if r.is_empty() {
        return if h.is_empty() { 0.0 } else { 1.0 };
    }
    // Levenshtein distance over words, one row at a time.
    let mut prev: Vec<usize> = (0..=h.len()).collect();
    let mut cur = vec![0; h.len() + 1];
    for (i, rw) in r.iter().enumerate() {
        cur[0] = i + 1;
        for (j, hw) in h.iter().enumerate() {
            let sub = prev[j] + usize::from(rw != hw);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[h.len()] as f64 / r.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_edits_over_reference_words() {
        let r = "Ever tried. Ever failed. No matter.";
        assert_eq!(
            word_error_rate(r, " ever tried, ever failed; no MATTER"),
            0.0
        );
        // One substitution, one deletion over six words.
        assert!((word_error_rate(r, "ever tired ever failed no") - 2.0 / 6.0).abs() < 1e-12);
        // An insertion.
        assert!((word_error_rate("a b", "a x b") - 0.5).abs() < 1e-12);
        assert_eq!(word_error_rate("", ""), 0.0);
        assert_eq!(word_error_rate("", "thank you"), 1.0);
        assert_eq!(word_error_rate("one two", ""), 1.0);
        assert_eq!(normalised_words("don't 'quoted'"), vec!["don't", "quoted"]);
    }
}
