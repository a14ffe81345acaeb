//! Note versions: the lowercase hex SHA-256 of a note file's bytes, the compare-and-swap
//! token of `note_save`.

use sha2::{Digest, Sha256};

/// The version of a note file's bytes.
pub(crate) fn version_of(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// A `base_version` as given, normalised to lowercase; `None` when it cannot be a version.
pub(crate) fn parse(base: &str) -> Option<String> {
    let t = base.trim();
    (t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit())).then(|| t.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_hex() {
        assert_eq!(
            version_of(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            parse(" BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD ").unwrap(),
            version_of(b"abc")
        );
        assert!(parse("abc").is_none());
        assert!(parse(&"g".repeat(64)).is_none());
    }
}
