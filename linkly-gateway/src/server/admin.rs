//! Account administration helpers: access tokens.
//!
//! A token is `lk_` followed by 64 hex digits: the bytes of two version-4 UUIDs (244 bits
//! from the system's generator); the database keeps only its SHA-256, so a token is shown
//! once.

use sha2::{Digest, Sha256};

/// The prefix of every user token.
pub const TOKEN_PREFIX: &str = "lk_";

/// A new random token: `lk_` + 64 hex digits.
pub fn new_token() -> String {
    let mut token = String::with_capacity(TOKEN_PREFIX.len() + 64);
    token.push_str(TOKEN_PREFIX);
    for _ in 0..2 {
        for b in uuid::Uuid::new_v4().as_bytes() {
            token.push_str(&format!("{b:02x}"));
        }
    }
    token
}

/// The SHA-256 of a token, lowercase hex: what the database stores and looks up.
pub fn token_hash(token: &str) -> String {
    Sha256::digest(token.trim().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_prefixed_hex_and_differ() {
        let a = new_token();
        let b = new_token();
        assert_ne!(a, b);
        assert_eq!(a.len(), 3 + 64);
        assert!(a.starts_with("lk_"));
        assert!(a[3..].bytes().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn hash_is_sha256_hex() {
        assert_eq!(
            token_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
