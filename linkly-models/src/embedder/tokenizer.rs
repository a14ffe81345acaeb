//! The model's tokenizer, as `tokenizer.json` gives it or as the prepared file maps it.

use tokenizers::Tokenizer;

use crate::tokenizer_file::MappedTokenizer;

/// The model's tokenizer: its `tokenizer.json` as is, or its Unigram vocabulary left in the
/// prepared file (`unigram.rs`).
pub(super) enum TextTokenizer {
    Json(Box<Tokenizer>),
    Mapped(Box<MappedTokenizer>),
}

impl TextTokenizer {
    /// No padding, no truncation: `embed` makes windows.
    pub(super) fn unpadded(&mut self) -> tokenizers::Result<()> {
        match self {
            TextTokenizer::Json(t) => {
                t.with_padding(None);
                t.with_truncation(None)?;
            }
            TextTokenizer::Mapped(t) => {
                t.with_padding(None);
                t.with_truncation(None)?;
            }
        }
        Ok(())
    }

    pub(super) fn token_to_id(&self, token: &str) -> Option<u32> {
        match self {
            TextTokenizer::Json(t) => t.token_to_id(token),
            TextTokenizer::Mapped(t) => t.token_to_id(token),
        }
    }

    /// Each text's ids, special tokens added.
    pub(super) fn ids(&self, texts: Vec<String>) -> tokenizers::Result<Vec<Vec<u32>>> {
        let encodings = match self {
            TextTokenizer::Json(t) => t.encode_batch(texts, true)?,
            TextTokenizer::Mapped(t) => t.encode_batch(texts, true)?,
        };
        Ok(encodings
            .into_iter()
            .map(|e| e.get_ids().to_vec())
            .collect())
    }

    /// Whether the vocabulary came from the prepared file.
    #[cfg(test)]
    pub(super) fn is_mapped(&self) -> bool {
        matches!(self, TextTokenizer::Mapped(_))
    }
}
