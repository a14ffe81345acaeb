use std::fmt;

/// Why a file is indexed by name only: its content could not be extracted.
///
/// The token (`as_str`) is what tools show as `skip_reason`; the detail says more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkipReason {
    /// A stable machine token, e.g. `empty_file`.
    pub code: &'static str,
    /// A human explanation.
    pub detail: String,
}

impl SkipReason {
    /// The file has no bytes, or no text: only whitespace, markup, empty parts or pages (an
    /// extractor that finds nothing to show says so with this code rather than empty text).
    pub const EMPTY: &'static str = "empty";
    /// The file is over the size cap of its format.
    pub const TOO_LARGE: &'static str = "too_large";
    /// The file's text encoding could not be determined.
    pub const UNKNOWN_ENCODING: &'static str = "encoding_unknown";
    /// The file is damaged or not what its extension says.
    pub const CORRUPT: &'static str = "corrupt";
    /// The file is password-protected.
    pub const ENCRYPTED: &'static str = "encrypted";
    /// The file type is not supported by this build (no extractor for it).
    pub const UNSUPPORTED: &'static str = "unsupported_format";
    /// A variant of a supported family that is not read (`.xls`, `.xlsb`, `.ods`, WordPerfect
    /// named `.doc`, an EPUB without the `epub` feature).
    pub const UNSUPPORTED_VARIANT: &'static str = "unsupported_variant";
    /// A PDF (or scan) without a text layer; OCR may fill it.
    pub const NO_TEXT_LAYER: &'static str = "no_text_layer";
    /// An image or scanned PDF whose text needs OCR, which is off or not installed; a sync
    /// after the engine is installed (or turned on) extracts it again.
    pub const OCR_UNAVAILABLE: &'static str = "ocr_unavailable";
    /// An image or scanned page that OCR read (upright, turned by OSD, and as one skewed
    /// block) without finding any text.
    pub const OCR_FOUND_NOTHING: &'static str = "ocr_found_nothing";
    /// An audio or video file whose sound needs a speech model, and none is installed; a sync
    /// after one is (`linkly model download whisper-base`, `linkly model import <folder>`)
    /// transcribes it.
    pub const TRANSCRIPTION_UNAVAILABLE: &'static str = "transcription_unavailable";
    /// An audio or video file whose kind of transcription is turned off (`[transcription]`
    /// in config.toml, off by default); a sync after it is turned on transcribes it.
    pub const TRANSCRIPTION_OFF: &'static str = "transcription_off";
    /// An audio or video file whose sound the speech model heard no words in (silence, music).
    pub const NO_SPEECH: &'static str = "no_speech";
    /// A video (or other media file) without a sound track.
    pub const NO_SOUND_TRACK: &'static str = "no_sound_track";
    /// A sound track in a codec or container this build does not decode (and no `ffmpeg` on
    /// the PATH to decode it); the detail names it.
    pub const CODEC_UNSUPPORTED: &'static str = "codec_unsupported";
    /// The extractor took too long.
    pub const TIMEOUT: &'static str = "timeout";
    /// The extractor failed unexpectedly.
    pub const EXTRACTOR_FAILED: &'static str = "extractor_failed";
    /// The file's name is not valid UTF-8: it is listed (under a lossy name, `\u{FFFD}` for
    /// the bad bytes) but its content is not read, since no tool could name the file back.
    pub const NON_UTF8_PATH: &'static str = "non_utf8_path";

    /// Every code above: what a worker process may send back, and what tools may show.
    pub const CODES: &'static [&'static str] = &[
        SkipReason::EMPTY,
        SkipReason::TOO_LARGE,
        SkipReason::UNKNOWN_ENCODING,
        SkipReason::CORRUPT,
        SkipReason::ENCRYPTED,
        SkipReason::UNSUPPORTED,
        SkipReason::UNSUPPORTED_VARIANT,
        SkipReason::NO_TEXT_LAYER,
        SkipReason::OCR_UNAVAILABLE,
        SkipReason::OCR_FOUND_NOTHING,
        SkipReason::TRANSCRIPTION_UNAVAILABLE,
        SkipReason::TRANSCRIPTION_OFF,
        SkipReason::NO_SPEECH,
        SkipReason::NO_SOUND_TRACK,
        SkipReason::CODEC_UNSUPPORTED,
        SkipReason::TIMEOUT,
        SkipReason::EXTRACTOR_FAILED,
        SkipReason::NON_UTF8_PATH,
    ];

    /// Builds a reason.
    pub fn new(code: &'static str, detail: impl Into<String>) -> SkipReason {
        SkipReason {
            code,
            detail: detail.into(),
        }
    }

    /// The text stored and shown as `skip_reason`: `code: detail`.
    pub fn to_display_string(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.detail.is_empty() {
            f.write_str(self.code)
        } else {
            write!(f, "{}: {}", self.code, self.detail)
        }
    }
}
