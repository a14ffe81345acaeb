//! Plain text: decoded text, no outline.

use linkly_core::{DocType, SkipReason};

use crate::encoding;
use crate::formats::normalize_newlines;
use crate::{Extracted, Extractor, Input};

/// Plain text files (`.txt`, `.text`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Txt;

impl Extractor for Txt {
    fn doc_type(&self) -> DocType {
        DocType::Txt
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["txt", "text"]
    }

    fn extract(&self, input: &Input<'_>) -> Result<Extracted, SkipReason> {
        let decoded = encoding::decode(input.bytes);
        let encoding = decoded.name();
        let mut out = Extracted::text(DocType::Txt, normalize_newlines(decoded.text));
        out.encoding = Some(encoding);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn run(bytes: &[u8]) -> Extracted {
        Txt.extract(&Input {
            path: Path::new("a.txt"),
            bytes,
        })
        .unwrap()
    }

    #[test]
    fn decodes_and_normalises_lines() {
        let out = run(b"one\r\ntwo\rthree\n");
        assert_eq!(out.text, "one\ntwo\nthree\n");
        assert_eq!(out.encoding, Some("UTF-8"));
        assert!(out.outline.is_empty());
        assert_eq!(out.title, None);
    }

    #[test]
    fn legacy_bytes() {
        let (bytes, _, _) = encoding_rs::WINDOWS_1250
            .encode("Příliš žluťoučký kůň úpěl ďábelské ódy. Řeka teče přes město.");
        let out = run(&bytes);
        assert!(out.text.contains("ř"), "{} {:?}", out.text, out.encoding);
    }
}
