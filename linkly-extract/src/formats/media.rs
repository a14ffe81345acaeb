//! Audio (`.mp3 .wav .m4a .aac .flac .ogg .oga .opus .wma`) and video (`.mp4 .m4v .mov .mkv
//! .webm .avi`): their sound transcribed by Whisper ([`linkly_models::whisper`]) into one line
//! per segment, `[mm:ss] text` (`[h:mm:ss]` past an hour), so that `read` by line range is
//! read by time and `grep` and `search` snippets carry the moment.
//!
//! The outline has one entry per few minutes (a new one after three minutes, or after a pause
//! of ten seconds once the entry holds a minute), titled by its start time and first words.
//! The title names the file, says it is a transcript and gives the language the model heard
//! and the length. Without a speech model the file is `transcription_unavailable` (the indexer
//! transcribes it at the first sync that has one); a file the model hears no words in is
//! `no_speech`.
//!
//! Budgets: at most [`MAX_SECONDS`] of sound are decoded (memory: 4 bytes a sample at 16 kHz);
//! transcription stops at a deadline of [`time_budget`] of the sound's length, and the parent
//! kills a worker at [`worker_timeout`]. A transcript cut short by either says so in its title
//! and its last line.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use linkly_core::{DocType, OutlineNode, SkipReason};
use linkly_models::whisper::{self, TranscribeOptions, Transcript, Whisper};

use crate::{ExtractOptions, Extracted, Extractor, Input, audio};

/// Audio files, transcribed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Audio;

/// Video files, their sound track transcribed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Video;

/// The longest stretch of sound decoded and transcribed (3 hours: 690 MB of samples).
pub const MAX_SECONDS: f64 = 3.0 * 3600.0;
/// Media files larger than this are indexed by name (`too_large`).
const MAX_BYTES: u64 = 1024 * 1024 * 1024;

/// Audio and video differ only in their type and extensions: one implementation for both.
macro_rules! media_extractor {
    ($ty:ident, $doc_type:expr, [$($ext:literal),* $(,)?]) => {
        impl Extractor for $ty {
            fn doc_type(&self) -> DocType {
                $doc_type
            }
            fn extensions(&self) -> &'static [&'static str] {
                &[$($ext),*]
            }
            fn max_bytes(&self) -> u64 {
                MAX_BYTES
            }
            fn isolate(&self) -> bool {
                true
            }
            fn slow(&self) -> bool {
                true
            }
            fn worker_timeout(&self, input: &Input<'_>) -> Option<Duration> {
                Some(worker_timeout(input))
            }
            fn extract(&self, input: &Input<'_>) -> Result<Extracted, SkipReason> {
                self.extract_with(input, &ExtractOptions::default())
            }
            fn extract_with(
                &self,
                input: &Input<'_>,
                options: &ExtractOptions,
            ) -> Result<Extracted, SkipReason> {
                transcribe($doc_type, input, options)
            }
        }
    };
}

media_extractor!(
    Audio,
    DocType::Audio,
    [
        "mp3", "wav", "m4a", "aac", "flac", "ogg", "oga", "opus", "wma"
    ]
);
media_extractor!(
    Video,
    DocType::Video,
    ["mp4", "m4v", "mov", "mkv", "webm", "avi"]
);

/// How long transcribing `seconds` of sound may take: a minute (model load, decoding) plus
/// twice the sound's length (Whisper base runs at about a third of real time on two cores),
/// counted for at most [`MAX_SECONDS`].
pub fn time_budget(seconds: f64) -> Duration {
    Duration::from_secs_f64(60.0 + 2.0 * seconds.clamp(0.0, MAX_SECONDS))
}

/// The worker's hard limit for a media file: the budget of the longest sound such a file can
/// hold by its size (at 8 kB/s, the lowest bit rate worth transcribing... capped at
/// [`MAX_SECONDS`]) plus a minute. The worker stops itself at its own deadline first, from the
/// sound's real length, and returns what it transcribed.
pub fn worker_timeout(input: &Input<'_>) -> Duration {
    let most_seconds = input.bytes.len() as f64 / 1000.0;
    time_budget(most_seconds) + Duration::from_secs(60)
}

/// The speech model of the options, when one is there.
fn model_dir(options: &ExtractOptions) -> Option<&Path> {
    options
        .speech
        .model
        .as_deref()
        .filter(|d| whisper::is_ready(d))
}

/// True when the options name a speech model that is on disk.
pub fn speech_ready(options: &ExtractOptions) -> bool {
    model_dir(options).is_some()
}

/// The skip reason of media without a speech model.
fn unavailable() -> SkipReason {
    SkipReason::new(
        SkipReason::TRANSCRIPTION_UNAVAILABLE,
        "no speech model is installed: run `linkly model download whisper-base` (or `linkly model import <folder>`), then `linkly index`",
    )
}

/// The model, kept loaded in this process while the same folder is asked for.
static MODEL: Mutex<Option<(PathBuf, Whisper)>> = Mutex::new(None);

fn transcribe(
    doc_type: DocType,
    input: &Input<'_>,
    options: &ExtractOptions,
) -> Result<Extracted, SkipReason> {
    if !options.speech.allows(doc_type) {
        let (kind, key) = if doc_type == DocType::Video {
            ("video", "transcription.video")
        } else {
            ("audio", "transcription.audio")
        };
        return Err(SkipReason::new(
            SkipReason::TRANSCRIPTION_OFF,
            format!(
                "{kind} transcription is turned off: turn it on in the window's Settings or with `linkly config set {key} true`"
            ),
        ));
    }
    let Some(dir) = model_dir(options) else {
        return Err(unavailable());
    };
    let started = Instant::now();
    let sound = audio::decode(
        input.path,
        input.bytes,
        MAX_SECONDS,
        time_budget(MAX_SECONDS),
    )?;
    let length = sound.seconds();
    let deadline = started + time_budget(length);
    let mut guard = MODEL.lock().unwrap_or_else(|p| p.into_inner());
    if guard.as_ref().is_none_or(|(d, _)| d != dir) {
        *guard = None;
        let model = Whisper::load(dir).map_err(|e| {
            SkipReason::new(
                SkipReason::EXTRACTOR_FAILED,
                format!("cannot load the speech model: {e}"),
            )
        })?;
        *guard = Some((dir.to_path_buf(), model));
    }
    let Some((_, model)) = guard.as_mut() else {
        return Err(unavailable());
    };
    let transcript = model
        .transcribe(
            &sound.samples,
            &TranscribeOptions {
                language: None,
                deadline: Some(deadline),
            },
        )
        .map_err(|e| {
            SkipReason::new(
                SkipReason::EXTRACTOR_FAILED,
                format!("transcription failed: {e}"),
            )
        })?;
    drop(guard);
    tracing::debug!(
        path = %input.path.display(),
        seconds = length,
        elapsed_ms = started.elapsed().as_millis() as u64,
        segments = transcript.segments.len(),
        "transcribed"
    );
    let cut = transcript.cut_short.clone().or(sound.cut.clone());
    render(doc_type, input.path, &transcript, length, cut)
}

/// `[mm:ss]`, or `[h:mm:ss]` from an hour on.
pub fn stamp(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    if s >= 3600 {
        format!("[{}:{:02}:{:02}]", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("[{:02}:{:02}]", s / 60, s % 60)
    }
}

/// How long a transcript is, for its title: `0:42`, `1:02:03`.
fn length_text(seconds: f64) -> String {
    let s = seconds.round().max(0.0) as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// An outline entry starts after this long...
const SECTION_SECONDS: f64 = 180.0;
/// ...or after a pause this long, once the entry holds [`SECTION_MIN_SECONDS`].
const PAUSE_SECONDS: f64 = 10.0;
const SECTION_MIN_SECONDS: f64 = 60.0;

/// The text, title and outline of a transcript.
pub(crate) fn render(
    doc_type: DocType,
    path: &Path,
    t: &Transcript,
    length: f64,
    cut: Option<String>,
) -> Result<Extracted, SkipReason> {
    if t.segments.is_empty() {
        return Err(SkipReason::new(
            SkipReason::NO_SPEECH,
            format!(
                "the speech model heard no words in {} of sound",
                length_text(length)
            ),
        ));
    }
    let mut lines: Vec<String> = t
        .segments
        .iter()
        .map(|s| format!("{} {}", stamp(s.start), s.text))
        .collect();
    let mut outline: Vec<OutlineNode> = Vec::new();
    let mut section: Option<(usize, f64)> = None; // first line (0-based), start time
    let mut prev_end = 0.0;
    for (i, s) in t.segments.iter().enumerate() {
        let new_section = match section {
            None => true,
            Some((_, start)) => {
                s.start - start >= SECTION_SECONDS
                    || (s.start - prev_end >= PAUSE_SECONDS
                        && s.start - start >= SECTION_MIN_SECONDS)
            }
        };
        if new_section {
            if let Some((first, _)) = section {
                close(&mut outline, t, first, i);
            }
            section = Some((i, s.start));
        }
        prev_end = s.end;
    }
    if let Some((first, _)) = section {
        close(&mut outline, t, first, t.segments.len());
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let language = t.language.as_deref().unwrap_or("unknown language");
    let title = match &cut {
        Some(_) => format!(
            "{name} (partial transcript, {language}, {} of {})",
            length_text(t.covered.min(length)),
            length_text(length)
        ),
        None => format!("{name} (transcript, {language}, {})", length_text(length)),
    };
    if let Some(why) = &cut {
        let at = t.covered.min(length);
        lines.push(format!("{} [transcript incomplete: {why}]", stamp(at)));
    }
    Ok(Extracted {
        doc_type,
        text: lines.join("\n"),
        title: Some(title),
        outline,
        encoding: None,
    })
}

/// Adds the outline entry of segments `first..end` (0-based), titled by its start time and its
/// first words.
fn close(outline: &mut Vec<OutlineNode>, t: &Transcript, first: usize, end: usize) {
    let start = &t.segments[first];
    let words: Vec<&str> = start.text.split_whitespace().take(8).collect();
    let more = start.text.split_whitespace().count() > words.len();
    let title = format!(
        "{} {}{}",
        stamp(start.start),
        words.join(" "),
        if more { "…" } else { "" }
    );
    outline.push(OutlineNode::new(title, first as u32 + 1, end as u32));
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkly_models::whisper::Segment;

    fn seg(start: f64, end: f64, text: &str) -> Segment {
        Segment {
            start,
            end,
            text: text.into(),
        }
    }

    #[test]
    fn lines_carry_their_time_and_sections_their_start() {
        let t = Transcript {
            language: Some("fr".into()),
            segments: vec![
                seg(0.0, 4.0, "Bonjour à tous."),
                seg(4.0, 9.5, "Le budget est adopté."),
                seg(75.0, 80.0, "Après une pause."),
                seg(200.0, 210.0, "Trois minutes plus tard."),
                seg(3725.0, 3730.0, "Une heure après."),
            ],
            covered: 3730.0,
            cut_short: None,
        };
        let e = render(
            DocType::Audio,
            Path::new("/r/réunion.mp3"),
            &t,
            3731.0,
            None,
        )
        .unwrap();
        assert_eq!(
            e.text,
            "[00:00] Bonjour à tous.\n[00:04] Le budget est adopté.\n[01:15] Après une pause.\n[03:20] Trois minutes plus tard.\n[1:02:05] Une heure après."
        );
        assert_eq!(
            e.title.as_deref(),
            Some("réunion.mp3 (transcript, fr, 1:02:11)")
        );
        let outline: Vec<(String, u32, u32)> = e
            .outline
            .iter()
            .map(|n| (n.title.clone(), n.start_line, n.end_line))
            .collect();
        assert_eq!(
            outline,
            vec![
                ("[00:00] Bonjour à tous.".to_string(), 1, 2),
                ("[01:15] Après une pause.".to_string(), 3, 3),
                ("[03:20] Trois minutes plus tard.".to_string(), 4, 4),
                ("[1:02:05] Une heure après.".to_string(), 5, 5),
            ]
        );
    }

    #[test]
    fn a_cut_transcript_says_so_and_silence_is_no_speech() {
        let t = Transcript {
            language: Some("en".into()),
            segments: vec![seg(1.0, 2.0, "Hello.")],
            covered: 7200.0,
            cut_short: None,
        };
        let e = render(
            DocType::Video,
            Path::new("talk.mp4"),
            &t,
            36_000.0,
            Some("only the first 3 h are transcribed".into()),
        )
        .unwrap();
        assert_eq!(
            e.title.as_deref(),
            Some("talk.mp4 (partial transcript, en, 2:00:00 of 10:00:00)")
        );
        assert!(
            e.text
                .ends_with("[2:00:00] [transcript incomplete: only the first 3 h are transcribed]")
        );
        let silent = Transcript {
            covered: 30.0,
            ..Transcript::default()
        };
        let r = render(DocType::Audio, Path::new("s.wav"), &silent, 30.0, None).unwrap_err();
        assert_eq!(r.code, SkipReason::NO_SPEECH);
    }

    /// A ten-hour file: decoding stops at three hours, transcription gets a deadline in
    /// proportion, and the worker's hard limit stays above that deadline.
    #[test]
    fn budgets_grow_with_length_and_stop_at_the_cap() {
        assert_eq!(time_budget(10.0), Duration::from_secs(80));
        assert_eq!(time_budget(36_000.0), time_budget(MAX_SECONDS));
        assert_eq!(
            time_budget(MAX_SECONDS),
            Duration::from_secs(60 + 2 * 10_800)
        );
        // A 16 kHz 16-bit WAV (32 kB/s) of an hour: its worker limit covers its budget.
        let bytes = vec![0u8; 10];
        let small = Input {
            path: Path::new("a.wav"),
            bytes: &bytes,
        };
        assert!(worker_timeout(&small) >= time_budget(0.0));
        assert!(
            time_budget(3600.0)
                < worker_timeout(&Input {
                    path: Path::new("b.wav"),
                    bytes: &vec![0u8; 3600 * 32_000],
                })
        );
    }

    #[test]
    fn without_a_model_media_waits_for_one() {
        let bytes = crate::audio::tests::wav(16_000, 1, 1.0, 300.0);
        let input = Input {
            path: Path::new("memo.wav"),
            bytes: &bytes,
        };
        let r = Audio.extract(&input).unwrap_err();
        assert_eq!(r.code, SkipReason::TRANSCRIPTION_UNAVAILABLE);
        assert!(
            r.detail.contains("linkly model download whisper-base"),
            "{r}"
        );
        let mut options = ExtractOptions::default();
        options.speech.model = Some(PathBuf::from("/nonexistent/speech"));
        assert!(!speech_ready(&options));
        let r = Video.extract_with(&input, &options).unwrap_err();
        assert_eq!(r.code, SkipReason::TRANSCRIPTION_UNAVAILABLE);
        // A switch turned off wins over the model: the file waits for the switch.
        options.speech.video = false;
        let r = Video.extract_with(&input, &options).unwrap_err();
        assert_eq!(r.code, SkipReason::TRANSCRIPTION_OFF);
        assert!(r.detail.contains("transcription.video"), "{r}");
        assert_eq!(
            Audio.extract_with(&input, &options).unwrap_err().code,
            SkipReason::TRANSCRIPTION_UNAVAILABLE
        );
    }
}
