//! Linkly's model runtime: Whisper speech-to-text ([`whisper`]) on candle, from weights in
//! CTranslate2 or Hugging Face layout.
//!
//! It knows no index, store or transport: it turns sound into timestamped text, and the crates
//! above it (`linkly-extract`) decide what to keep. It depends on `linkly-core` only. None of
//! candle's or tokenizers' types appear in its public API.

pub mod whisper;
