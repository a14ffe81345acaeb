use std::fmt;

use crate::Error;

/// The type of a document, as the `doc_types` tokens of the tool contract name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DocType {
    /// PDF.
    Pdf,
    /// Word (Office Open XML).
    Docx,
    /// Word 97–2003.
    Doc,
    /// PowerPoint (Office Open XML).
    Pptx,
    /// Excel (Office Open XML).
    Xlsx,
    /// Comma-separated values.
    Csv,
    /// EPUB book.
    Epub,
    /// Rich Text Format.
    Rtf,
    /// Markdown and MDX.
    Md,
    /// Plain text.
    Txt,
    /// HTML.
    Html,
    /// An image (its text comes from OCR).
    Image,
    /// Audio (indexed by name).
    Audio,
    /// Video (indexed by name).
    Video,
}

impl DocType {
    /// Every doc type, in the order of the contract.
    pub const ALL: [DocType; 14] = [
        DocType::Pdf,
        DocType::Docx,
        DocType::Doc,
        DocType::Pptx,
        DocType::Xlsx,
        DocType::Csv,
        DocType::Epub,
        DocType::Rtf,
        DocType::Md,
        DocType::Txt,
        DocType::Html,
        DocType::Image,
        DocType::Audio,
        DocType::Video,
    ];

    /// The token of this type (`pdf`, `md`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            DocType::Pdf => "pdf",
            DocType::Docx => "docx",
            DocType::Doc => "doc",
            DocType::Pptx => "pptx",
            DocType::Xlsx => "xlsx",
            DocType::Csv => "csv",
            DocType::Epub => "epub",
            DocType::Rtf => "rtf",
            DocType::Md => "md",
            DocType::Txt => "txt",
            DocType::Html => "html",
            DocType::Image => "image",
            DocType::Audio => "audio",
            DocType::Video => "video",
        }
    }

    /// Parses a token, case-insensitively.
    pub fn from_token(token: &str) -> Result<DocType, Error> {
        let t = token.trim().to_ascii_lowercase();
        DocType::ALL
            .into_iter()
            .find(|d| d.as_str() == t)
            .ok_or_else(|| Error::UnknownDocType(token.to_string()))
    }

    /// The supported tokens joined by `, `, for error messages.
    pub fn supported_list() -> String {
        DocType::ALL.map(DocType::as_str).join(", ")
    }
}

/// Written as its token (`"pdf"`).
impl serde::Serialize for DocType {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Read from its token, in any case ([`DocType::from_token`]).
impl<'de> serde::Deserialize<'de> for DocType {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let token = String::deserialize(deserializer)?;
        DocType::from_token(&token).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for DocType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip() {
        for d in DocType::ALL {
            assert_eq!(DocType::from_token(d.as_str()).unwrap(), d);
        }
        assert_eq!(DocType::from_token("PDF").unwrap(), DocType::Pdf);
        let err = DocType::from_token("exe").unwrap_err().to_string();
        assert!(err.contains("pdf, docx"), "{err}");
        let types: Vec<DocType> = serde_json::from_str(r#"["PDF", "md"]"#).unwrap();
        assert_eq!(types, [DocType::Pdf, DocType::Md]);
        assert_eq!(serde_json::to_string(&types).unwrap(), r#"["pdf","md"]"#);
        let err = serde_json::from_str::<DocType>(r#""exe""#).unwrap_err();
        assert!(err.to_string().contains("pdf, docx"), "{err}");
    }
}
