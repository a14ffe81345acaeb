//! Linkly's model runtime: Whisper speech-to-text ([`whisper`]), and the sentence-embedding
//! encoder (BERT and XLM-R families) with its
//! f32, int16, int8 and bf16 kernels, the model's weights read from safetensors and kept
//! prepared beside it, the tokenizer, and the model manager with its Hugging Face hub
//! download (feature `download`).
//!
//! It knows no index, store or transport: it turns texts into vectors and sound into
//! timestamped text, and the crates above it
//! (`linkly-index`, and `linkly-extract` when it runs a model) decide what to keep. It depends
//! on `linkly-core` only. None of candle's, tokenizers' or ureq's types appear in its public
//! API.
//!
//! The workspace's one `unsafe` module is here (`x86`: the AVX-512 VNNI and AMX kernels, the
//! direct `gemm` call, and the read-only memory map of prepared files); see
//! `docs/models.md` for the encoder's internals.

pub mod calibration;
mod e5_q4;
mod embedder;
mod encoder;
mod error;
mod int16;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod kernel_timing;
mod kernels;
mod linear;
mod model;
mod model_import;
pub mod prepared;
mod safetensors;
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod test_inputs;
#[cfg(test)]
mod test_matrices;
mod tokenizer_file;
mod unigram;
pub mod whisper;
mod windows;
mod x86;

use x86::{amx, bf16, int8, matmul};

pub use crate::embedder::PreparedState;
pub use crate::error::{Error, ModelError, Result};
pub use crate::kernels::{dot, dot_i8_i16};
pub use crate::model::{
    DEFAULT_MODEL, DownloadProgress, KNOWN_MODELS, ModelChoice, ModelManager, canonical_name,
};
pub use crate::model_import::{ImportOptions, Imported};

use crate::embedder::{Embedder, TextKind};

/// A loaded embedding model on its own, outside any index: embeds queries and passages the way
/// the index does (prefixes, long texts as windows of the model's sequence length, pooling,
/// normalisation).
///
/// ```no_run
/// # fn main() -> linkly_models::Result<()> {
/// use linkly_models::{ModelChoice, TextEmbedder};
/// let model = TextEmbedder::load(&ModelChoice {
///     name: "all-MiniLM-L6-v2".into(),
///     dir: "models/all-MiniLM-L6-v2".into(),
///     from_env: false,
///     cache: None,
/// })?;
/// let passages = model.embed_passages(&["The cat sits on the mat."])?;
/// let query = model.embed_query("where is the cat?")?;
/// let cosine: f32 = passages[0].iter().zip(&query).map(|(a, b)| a * b).sum();
/// # let _ = cosine;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct TextEmbedder {
    embedder: Embedder,
}

impl TextEmbedder {
    /// Loads the model in `choice.dir` (`config.json`, `model.safetensors`, `tokenizer.json`).
    pub fn load(choice: &ModelChoice) -> Result<TextEmbedder> {
        Ok(TextEmbedder {
            embedder: Embedder::load(&choice.dir, &choice.name, choice.cache.as_deref())?,
        })
    }

    /// The vector dimension.
    pub fn dim(&self) -> usize {
        self.embedder.dim()
    }

    /// Whether the model's prepared file (linear layers in the precision that runs, the
    /// tokenizer's vocabulary) is ready for `choice` on this CPU, and where: what a load would
    /// read without computing anything.
    pub fn prepared_state(choice: &ModelChoice) -> PreparedState {
        crate::embedder::prepared_state(&choice.dir, choice.cache.as_deref())
    }

    /// Embeds passages as one batch (padded to the longest; sort by length for speed).
    pub fn embed_passages(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.embedder.embed(texts, TextKind::Passage)
    }

    /// Embeds a search query.
    pub fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self
            .embedder
            .embed(&[text], TextKind::Query)?
            .pop()
            .unwrap_or_default())
    }
}
