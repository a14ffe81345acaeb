//! Images (`.png .jpg .jpeg .bmp .webp .tif .tiff .gif`): their text comes from OCR
//! ([`crate::ocr`]), one line per recognised line; no title, no outline.
//!
//! An image in which OCR finds no text (upright, turned or skewed: see [`ocr::recognize`]) is
//! skipped as `ocr_found_nothing`. When OCR is off or Tesseract is missing, the image
//! is indexed by name with `skip_reason: ocr_unavailable`, and the indexer extracts it again
//! once OCR can run.

use linkly_core::{DocType, SkipReason};

use crate::{ExtractOptions, Extracted, Extractor, Input, ocr};

/// Image files, read by OCR.
#[derive(Debug, Clone, Copy, Default)]
pub struct Image;

impl Extractor for Image {
    fn doc_type(&self) -> DocType {
        DocType::Image
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["png", "jpg", "jpeg", "bmp", "webp", "tif", "tiff", "gif"]
    }

    fn max_bytes(&self) -> u64 {
        50 * 1024 * 1024
    }

    fn slow(&self) -> bool {
        true
    }

    fn extract(&self, input: &Input<'_>) -> Result<Extracted, SkipReason> {
        self.extract_with(input, &ExtractOptions::default())
    }

    fn extract_with(
        &self,
        input: &Input<'_>,
        options: &ExtractOptions,
    ) -> Result<Extracted, SkipReason> {
        if !looks_like_image(input.bytes) {
            return Err(SkipReason::new(
                SkipReason::CORRUPT,
                "not an image (no PNG, JPEG, GIF, BMP, WebP or TIFF signature)",
            ));
        }
        let text = ocr::recognize(input.bytes, &options.ocr)?;
        // Symbols alone (`| ® |`: a drawing's strokes) are no text either.
        if !text.chars().any(char::is_alphanumeric) {
            return Err(SkipReason::new(
                SkipReason::OCR_FOUND_NOTHING,
                "OCR found no text in the image (read upright, turned and as one skewed block)",
            ));
        }
        Ok(Extracted::text(DocType::Image, text))
    }
}

/// True when the bytes start with the signature of an image format Leptonica reads.
fn looks_like_image(b: &[u8]) -> bool {
    b.starts_with(b"\x89PNG")
        || b.starts_with(b"\xFF\xD8\xFF")
        || b.starts_with(b"GIF8")
        || b.starts_with(b"BM")
        || b.starts_with(b"II*\0")
        || b.starts_with(b"MM\0*")
        || (b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WEBP")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures() {
        assert!(looks_like_image(b"\x89PNG\r\n"));
        assert!(looks_like_image(b"RIFF\0\0\0\0WEBPVP8 "));
        assert!(!looks_like_image(b"hello"));
        let input = Input {
            path: std::path::Path::new("x.png"),
            bytes: b"not an image",
        };
        assert_eq!(Image.extract(&input).unwrap_err().code, SkipReason::CORRUPT);
    }
}
