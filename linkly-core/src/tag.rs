//! Tag normalisation: the one rule by which note tags, library tag filters and search filters
//! compare tags.

/// Normalises a tag: surrounding whitespace and leading `#`s stripped, ASCII lower-cased
/// (other letters kept as written). Idempotent; an empty result means "no tag".
pub fn normalise_tag(tag: &str) -> String {
    tag.trim_start_matches(|c: char| c.is_whitespace() || c == '#')
        .trim_end()
        .to_ascii_lowercase()
}

/// Normalises a list of tags with [`normalise_tag`]: empties dropped, duplicates removed (the
/// first occurrence kept), order kept.
pub fn normalise_tags<S: AsRef<str>>(tags: &[S]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in tags {
        let n = normalise_tag(t.as_ref());
        if !n.is_empty() && !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises() {
        assert_eq!(normalise_tag("  #Work "), "work");
        assert_eq!(normalise_tag("##A"), "a");
        assert_eq!(normalise_tag("# #a"), "a");
        assert_eq!(normalise_tag("   "), "");
        assert_eq!(normalise_tag("Ünï"), "Ünï", "only ASCII is lower-cased");
        assert_eq!(normalise_tags(&["#A", "a", " ", "b", "# B "]), ["a", "b"]);
        let none: [&str; 0] = [];
        assert!(normalise_tags(&none).is_empty());
    }
}
