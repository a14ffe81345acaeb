//! Turns one document file into line-numbered text, an outline with line ranges and a title —
//! or a [`SkipReason`] saying why its content cannot be had.
//!
//! One module per format under `formats/`, each implementing [`Extractor`] and listed once in
//! the [`formats::FORMATS`] registry. This crate is a functional core: same bytes in, same text
//! out, and no writes. It knows nothing of indexes and depends on no search engine or transport
//! crate; models run through `linkly-models`. Images and scanned PDF pages get their text from OCR ([`ocr`]: Tesseract
//! in a child process), told which languages through [`ExtractOptions`]. Audio and video get
//! theirs from Whisper ([`audio`] decodes the sound; `linkly-models` runs the model named by
//! [`SpeechOptions`]), the one model this crate runs.

pub mod audio;
mod child;
mod detect;
mod encoding;
mod error;
pub mod formats;
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod hand_made_pdf;
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod hand_made_wav;
mod isolate;
mod normalize;
pub mod ocr;
mod options;
mod registry;

pub use crate::detect::{Detected, detect};
pub use crate::error::{Error, Result};
pub use crate::isolate::{ISOLATE_ABOVE, Sandbox, extract_detected, extract_isolated, run_worker};
pub use crate::options::{ExtractOptions, SpeechOptions};
pub use crate::registry::{
    Extracted, Extractor, Input, MAX_TEXT_BYTES, NAME_ONLY, doc_type_for, extract_loaded,
    extract_loaded_with, extract_path, extract_path_with, extractor_for, too_large, unsupported,
};
pub use linkly_core::SkipReason;
