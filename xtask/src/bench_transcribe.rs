//! `cargo xtask bench transcribe`: Linkly's Whisper (candle) against faster-whisper
//! (CTranslate2) on the same model files and the same audio, two threads each, one run side by
//! side: real-time factor (seconds of work per second of sound, model load included), peak
//! resident memory of the process, and word error rate, for tiny.en and base.
//!
//! Audio: `beckett.wav` (a person reading, 10 s) and an English paragraph spoken by espeak-ng
//! (synthetic, about 40 s), whose texts are known. faster-whisper runs greedy (beam 1),
//! without VAD and without conditioning on the previous text, as Linkly does, in int8 (its
//! fastest CPU mode) and in float32. It is installed into `target/bench-speech/venv` from PyPI
//! (`faster-whisper`). Each engine runs in its own process, so peak RSS is its own.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, bail};
use linkly_models::whisper::{self, TranscribeOptions, Whisper, word_error_rate};
use serde_json::{Value, json};

const PARAGRAPH: &str = "The committee met on Tuesday morning to review the budget for the new library. \
After a long discussion, the members agreed to spend more on books and less on furniture. \
The director thanked everyone for their patience and promised a final report by the end of the month. \
The next meeting will take place in the town hall at nine o'clock.";

const BECKETT: &str = "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better.";

const FASTER_WHISPER: &str = r#"
import json, resource, sys, time
t0 = time.time()
from faster_whisper import WhisperModel
model_dir, compute, wav = sys.argv[1], sys.argv[2], sys.argv[3]
model = WhisperModel(model_dir, device="cpu", compute_type=compute, cpu_threads=2, num_workers=1)
segments, info = model.transcribe(wav, beam_size=1, best_of=1, vad_filter=False,
    condition_on_previous_text=False, temperature=[0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
text = " ".join(s.text.strip() for s in segments)
print(json.dumps({"seconds": time.time() - t0, "text": text, "language": info.language,
    "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"#;

/// The child process's side: transcribes `wav` with the model folder and prints JSON.
pub(crate) fn one(args: &[String]) -> anyhow::Result<()> {
    let [model, wav] = args else {
        bail!("usage: bench transcribe-one MODEL_DIR WAV");
    };
    let started = Instant::now();
    let bytes = fs_err::read(wav)?;
    let sound = linkly_extract::audio::decode(
        Path::new(wav),
        &bytes,
        3.0 * 3600.0,
        std::time::Duration::from_secs(600),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut model = Whisper::load(Path::new(model))?;
    let t = model.transcribe(&sound.samples, &TranscribeOptions::default())?;
    let text: Vec<&str> = t.segments.iter().map(|s| s.text.as_str()).collect();
    let rss = linkly_core::stdx::peak_rss_kb().unwrap_or(0);
    println!(
        "{}",
        json!({"seconds": started.elapsed().as_secs_f64(), "text": text.join(" "),
               "language": t.language, "peak_rss_kb": rss})
    );
    Ok(())
}

fn venv() -> anyhow::Result<PathBuf> {
    let dir = crate::target_dir().join("bench-speech/venv");
    let py = dir.join("bin/python");
    if py.is_file()
        && Command::new(&py)
            .args(["-c", "import faster_whisper"])
            .status()?
            .success()
    {
        return Ok(py);
    }
    crate::venv::install(&dir, "faster-whisper", ["faster-whisper"])
}

fn parse(out: std::process::Output, what: &str) -> anyhow::Result<Value> {
    if !out.status.success() {
        bail!("{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .context("no JSON line")?;
    Ok(serde_json::from_str(line)?)
}

pub(crate) fn run(_args: &[String]) -> anyhow::Result<()> {
    let data = crate::test_speech::ensure()?;
    let work = crate::target_dir().join("bench-speech");
    fs_err::create_dir_all(&work)?;
    let paragraph = work.join("paragraph.wav");
    if !paragraph.is_file() {
        let ok = Command::new("espeak-ng")
            .args(["-v", "en-us", "-s", "150", "-w"])
            .arg(&paragraph)
            .arg(PARAGRAPH)
            .status()
            .context("espeak-ng is installed")?
            .success();
        if !ok {
            bail!("espeak-ng failed");
        }
    }
    let audio = [
        ("beckett.wav", data.join("beckett.wav"), BECKETT),
        ("paragraph.wav (espeak-ng)", paragraph.clone(), PARAGRAPH),
    ];
    let py = venv()?;
    let exe = std::env::current_exe()?;
    println!("| model | audio | engine | real-time factor | peak RSS | WER |");
    println!("|---|---|---|---|---|---|");
    for model in ["tiny.en", "base"] {
        let ct2 = data.join(model);
        let hf = work.join(format!("{model}-hf"));
        if !whisper::is_ready(&hf) {
            whisper::import(&ct2, &hf)?;
        }
        for (name, wav, reference) in &audio {
            let bytes = fs_err::read(wav)?;
            let seconds = linkly_extract::audio::decode(
                wav,
                &bytes,
                3600.0,
                std::time::Duration::from_secs(60),
            )
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .seconds();
            let mut rows = Vec::new();
            let out = Command::new(&exe)
                .args(["bench", "transcribe-one"])
                .arg(&hf)
                .arg(wav)
                .env("RAYON_NUM_THREADS", "2")
                .output()?;
            rows.push(("Linkly (candle, f32)", parse(out, "linkly")?));
            for compute in ["int8", "float32"] {
                let out = Command::new(&py)
                    .args(["-c", FASTER_WHISPER])
                    .arg(&ct2)
                    .arg(compute)
                    .arg(wav)
                    .env("OMP_NUM_THREADS", "2")
                    .output()?;
                rows.push((
                    if compute == "int8" {
                        "faster-whisper (int8)"
                    } else {
                        "faster-whisper (float32)"
                    },
                    parse(out, "faster-whisper")?,
                ));
            }
            for (engine, v) in rows {
                let secs = v["seconds"].as_f64().unwrap_or(f64::NAN);
                let text = v["text"].as_str().unwrap_or_default();
                println!(
                    "| {model} | {name} | {engine} | {:.3} ({secs:.1} s for {seconds:.1} s) | {:.0} MB | {:.3} |",
                    secs / seconds,
                    v["peak_rss_kb"].as_f64().unwrap_or(0.0) / 1024.0,
                    word_error_rate(reference, text)
                );
                eprintln!("{model} {engine}: {text}");
            }
        }
    }
    Ok(())
}
