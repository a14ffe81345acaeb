use std::fmt;
use std::str::FromStr;

use crate::Error;

/// The stable id of an indexed document, shown as `local://<integer>`.
///
/// An id stays the same while its file stays at its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DocId(pub u64);

impl DocId {
    /// The prefix of every local document id.
    pub const PREFIX: &'static str = "local://";

    /// Parses `local://N` or a bare `N` (surrounding whitespace ignored).
    pub fn parse(s: &str) -> Result<DocId, Error> {
        let t = s.trim();
        let digits = t.strip_prefix(Self::PREFIX).unwrap_or(t);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Error::InvalidDocId(s.to_string()));
        }
        digits
            .parse::<u64>()
            .map(DocId)
            .map_err(|_| Error::InvalidDocId(s.to_string()))
    }
}

impl fmt::Display for DocId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", Self::PREFIX, self.0)
    }
}

impl FromStr for DocId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        DocId::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_prefixed_and_bare() {
        assert_eq!(DocId::parse("local://42").unwrap(), DocId(42));
        assert_eq!(DocId::parse(" 7 ").unwrap(), DocId(7));
        assert_eq!(DocId(3).to_string(), "local://3");
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "",
            "local://",
            "local://-1",
            "abc",
            "cloud://x/y",
            "1.5",
            "local://99999999999999999999999",
        ] {
            assert!(DocId::parse(bad).is_err(), "{bad}");
        }
    }
}
