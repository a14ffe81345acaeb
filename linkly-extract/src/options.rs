//! Settings that change what an extraction produces, passed along the extract call (no globals).
//!
//! The front end reads them from `config.toml` (`linkly_core::Config`), the indexer hands them to
//! [`crate::extract_loaded_with`] for every file, and [`crate::Sandbox::options`] carries them to
//! a worker process. Formats that have no settings ignore them ([`crate::Extractor::extract`]).

use crate::ocr::OcrOptions;

/// What the extractors may be told: how to OCR, and which speech model transcribes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtractOptions {
    /// OCR of images and scanned PDF pages.
    pub ocr: OcrOptions,
    /// Transcription of audio and video.
    pub speech: SpeechOptions,
}

/// How audio and video are transcribed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpeechOptions {
    /// The speech model's folder (Whisper in Hugging Face layout); `None`, or a folder without
    /// a model, leaves audio and video indexed by name (`transcription_unavailable`).
    pub model: Option<std::path::PathBuf>,
    /// Whether audio files are transcribed; when false they are indexed by name
    /// (`transcription_off`). Default here: true (a caller that names a model wants it used);
    /// the app's config turns it off by default ([`ExtractOptions::from_config`]).
    pub audio: bool,
    /// Whether the sound of video files is transcribed (as `audio`).
    pub video: bool,
}

impl Default for SpeechOptions {
    fn default() -> Self {
        SpeechOptions {
            model: None,
            audio: true,
            video: true,
        }
    }
}

impl SpeechOptions {
    /// Whether media of this type may be transcribed (its switch is on).
    pub fn allows(&self, doc_type: linkly_core::DocType) -> bool {
        match doc_type {
            linkly_core::DocType::Audio => self.audio,
            linkly_core::DocType::Video => self.video,
            _ => false,
        }
    }
}

impl ExtractOptions {
    /// The options a config file asks for.
    pub fn from_config(config: &linkly_core::Config) -> ExtractOptions {
        ExtractOptions {
            ocr: OcrOptions::from_config(&config.ocr),
            speech: SpeechOptions {
                model: None,
                audio: config.transcription.audio,
                video: config.transcription.video,
            },
        }
    }
}
