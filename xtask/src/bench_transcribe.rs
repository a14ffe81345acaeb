//! `cargo xtask bench transcribe [--runs N] [--paths native,avx2]`: Linkly's Whisper against
//! faster-whisper (CTranslate2, int8) on the same model files and the same audio, two threads
//! each, runs alternated: seconds (model load included), the ratio of the two, peak resident
//! memory of the process, and word error rate, for tiny.en and base; per path of the machine:
//! `native` (each engine as it chooses: Linkly's calibrated precision, CTranslate2's widest
//! instruction set) and `avx2` (Linkly calibrating among the paths an AVX2 CPU has,
//! `LINKLY_WHISPER_ENGINE=avx2`; CTranslate2 with `CT2_FORCE_CPU_ISA=AVX2`). The table, with
//! the machine's CPU, its flags, the load average and each path the calibration chose, is
//! printed and written to `target/bench-speech/transcribe.md`.
//!
//! Audio: `beckett.wav` (a person reading, 10 s) and an English paragraph spoken by espeak-ng
//! (synthetic, 21 s), whose texts are known. faster-whisper runs greedy (beam 1), without VAD
//! and without conditioning on the previous text, as Linkly does. It is installed into
//! `target/bench-speech/venv` from PyPI (`faster-whisper`). Each engine runs in its own
//! process, so peak RSS is its own; the model is imported and prepared (calibrated, its
//! prepared weights written) once before the timed runs, as `linkly model import` does.

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
    let precision = model.precision();
    let t = model.transcribe(&sound.samples, &TranscribeOptions::default())?;
    let text: Vec<&str> = t.segments.iter().map(|s| s.text.as_str()).collect();
    let rss = linkly_core::stdx::peak_rss_kb().unwrap_or(0);
    println!(
        "{}",
        json!({"seconds": started.elapsed().as_secs_f64(), "text": text.join(" "),
               "language": t.language, "peak_rss_kb": rss, "precision": precision})
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

/// The CPU's model name and the flags that matter to the kernels, from `/proc/cpuinfo`.
pub(crate) fn cpu() -> (String, String) {
    let info = fs_err::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default()
    };
    let flags = field("flags");
    let wanted: Vec<&str> = flags
        .split_whitespace()
        .filter(|f| {
            matches!(*f, "avx2" | "fma" | "avx_vnni")
                || f.starts_with("avx512")
                || f.starts_with("amx")
        })
        .collect();
    (field("model name"), wanted.join(" "))
}

fn load_average() -> String {
    fs_err::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

/// One engine's runs on one file: seconds, peak RSS (kB), the text, the precision.
#[derive(Default)]
struct Runs {
    seconds: Vec<f64>,
    rss_kb: Vec<f64>,
    text: String,
    precision: String,
}

impl Runs {
    fn add(&mut self, v: &Value) {
        self.seconds.push(v["seconds"].as_f64().unwrap_or(f64::NAN));
        self.rss_kb.push(v["peak_rss_kb"].as_f64().unwrap_or(0.0));
        self.text = v["text"].as_str().unwrap_or_default().to_string();
        if let Some(p) = v["precision"].as_str() {
            self.precision = p.to_string();
        }
    }
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let mut runs = 3usize;
    let mut paths = vec!["native".to_string(), "avx2".to_string()];
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--runs" => runs = it.next().context("--runs N")?.parse()?,
            "--paths" => {
                paths = it
                    .next()
                    .context("--paths native,avx2")?
                    .split(',')
                    .map(str::to_string)
                    .collect()
            }
            other => bail!("unknown argument {other}: --runs N, --paths native,avx2"),
        }
    }
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
    let (model_name, flags) = cpu();
    let mut table = vec![
        format!("CPU: {model_name}; flags: {flags}; load average before: {}", load_average()),
        String::new(),
        "| path | model | audio | Linkly's precision | Linkly | faster-whisper int8 | ratio | peak RSS Linkly · faster-whisper | WER Linkly · faster-whisper |".into(),
        "|---|---|---|---|---|---|---|---|---|".into(),
    ];
    let mut calibrations = Vec::new();
    println!("{}", table.join("\n"));
    for path in &paths {
        let (linkly_env, ct2_isa) = match path.as_str() {
            "native" => (None, None),
            "avx2" => (Some("avx2"), Some("AVX2")),
            other => bail!("unknown path {other}: native, avx2"),
        };
        for model in ["tiny.en", "base"] {
            let ct2 = data.join(model);
            let hf = work.join(format!("{model}-hf"));
            if !whisper::is_ready(&hf) {
                whisper::import(&ct2, &hf)?;
            }
            let linkly = |wav: &Path| -> anyhow::Result<Value> {
                let mut cmd = Command::new(&exe);
                cmd.args(["bench", "transcribe-one"])
                    .arg(&hf)
                    .arg(wav)
                    .env("RAYON_NUM_THREADS", "2");
                match linkly_env {
                    Some(e) => cmd.env("LINKLY_WHISPER_ENGINE", e),
                    None => cmd.env_remove("LINKLY_WHISPER_ENGINE"),
                };
                parse(cmd.output()?, "linkly")
            };
            let faster = |wav: &Path| -> anyhow::Result<Value> {
                let mut cmd = Command::new(&py);
                cmd.args(["-c", FASTER_WHISPER])
                    .arg(&ct2)
                    .arg("int8")
                    .arg(wav)
                    .env("OMP_NUM_THREADS", "2");
                match ct2_isa {
                    Some(isa) => cmd.env("CT2_FORCE_CPU_ISA", isa),
                    None => cmd.env_remove("CT2_FORCE_CPU_ISA"),
                };
                parse(cmd.output()?, "faster-whisper")
            };
            // Untimed: the calibration and the prepared weights, as the import makes them.
            linkly(&audio[0].1)?;
            if let Some(c) = whisper::calibration(&hf) {
                let figures: Vec<String> = c
                    .paths
                    .iter()
                    .map(|p| {
                        format!(
                            "{} {:.0} ms WER {:.3}{}",
                            p.precision,
                            p.ms,
                            p.wer,
                            if p.kept { "" } else { " (not kept)" }
                        )
                    })
                    .collect();
                calibrations.push(format!(
                    "- {path}, {model}: chose **{}** among {}",
                    c.chosen,
                    figures.join(", ")
                ));
            }
            for (name, wav, reference) in &audio {
                let (mut ours, mut theirs) = (Runs::default(), Runs::default());
                for i in 0..runs {
                    // Alternated, each first in turn.
                    if i % 2 == 0 {
                        ours.add(&linkly(wav)?);
                        theirs.add(&faster(wav)?);
                    } else {
                        theirs.add(&faster(wav)?);
                        ours.add(&linkly(wav)?);
                    }
                }
                let (a, b) = (median(ours.seconds.clone()), median(theirs.seconds.clone()));
                let row = format!(
                    "| {path} | {model} | {name} | {} | {a:.2} s | {b:.2} s | **{:.2}** | {:.0} · {:.0} MB | {:.3} · {:.3} |",
                    ours.precision,
                    a / b,
                    median(ours.rss_kb.clone()) / 1024.0,
                    median(theirs.rss_kb.clone()) / 1024.0,
                    word_error_rate(reference, &ours.text),
                    word_error_rate(reference, &theirs.text),
                );
                println!("{row}");
                eprintln!("{path} {model} Linkly: {}", ours.text);
                eprintln!("{path} {model} faster-whisper: {}", theirs.text);
                table.push(row);
            }
        }
    }
    table.push(String::new());
    table.push(format!(
        "Seconds: the median of {runs} alternated runs, each engine in its own process, model load included; ratio: Linkly's over faster-whisper's. Load average after: {}.",
        load_average()
    ));
    table.push(String::new());
    table
        .push("The calibration (the recording's transcription time and WER per precision):".into());
    table.extend(calibrations.iter().cloned());
    for c in &calibrations {
        println!("{c}");
    }
    let out = work.join("transcribe.md");
    fs_err::write(&out, table.join("\n") + "\n")?;
    println!("written to {}", out.display());
    Ok(())
}
