//! `cargo xtask bench soak [--docs N] [--minutes M] [--sample-secs S] [--clients K] [--bin P]
//! [--name NAME]`: the daemon's memory over a long run.
//!
//! Starts a release `linkly serve` (or the binary `--bin` names) on an empty data directory over
//! the generated corpus (100,000 documents) and a small folder of live files, waits for its first
//! full index, then for M minutes (60) keeps it busy at once with K MCP clients (16) calling
//! search and read (rounds of 20 calls each, a second apart), a file of the live folder
//! rewritten every second (the watcher re-indexes it) and a note saved every 5 s (`note_save`: a
//! new note, then edits of it). Every S seconds (30) it reads the server's resident memory
//! (`VmRSS` of `/proc/<pid>/status`); it writes every sample to `target/bench/NAME.csv` (NAME:
//! `soak`) and prints a Markdown table and a text curve of them. At the end it checks that a
//! saved file is searchable, so the daemon was still keeping up.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::bench_serve::{proc_kb, start_watching};
use crate::corpus;

/// Files of the live folder that the edits rewrite in turn.
const LIVE_FILES: usize = 200;

/// One sample of the server's memory and of the work done until then.
struct Sample {
    secs: f64,
    rss_kb: u64,
    calls: usize,
    errors: usize,
    edits: usize,
    notes: usize,
}

/// What the soak's threads count, shared with the sampler.
#[derive(Default)]
struct Counters {
    calls: AtomicUsize,
    errors: AtomicUsize,
    edits: AtomicUsize,
    notes: AtomicUsize,
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let num = |name: &str, default: u64| -> anyhow::Result<u64> {
        crate::arg(args, name).map_or(Ok(default), |s| {
            s.parse()
                .with_context(|| format!("{name} expects a whole number, got {s:?}"))
        })
    };
    let docs = num("--docs", 100_000)? as usize;
    let minutes = num("--minutes", 60)?;
    let sample = Duration::from_secs(num("--sample-secs", 30)?.max(1));
    let clients = num("--clients", 16)?.max(1) as usize;

    // `--bin PATH`: another `linkly` binary (an older build, to compare), not this tree's.
    let bin = match crate::arg(args, "--bin") {
        Some(path) => std::path::PathBuf::from(path),
        None => crate::bench::build_cli()?,
    };
    let work = crate::target_dir().join("bench");
    let corpus = corpus::generated(&work, docs)?;
    // `--name NAME` (`soak`): the run's data directory, live folder and outputs, so that two
    // runs (two binaries) can go side by side.
    let name = crate::arg(args, "--name").unwrap_or_else(|| "soak".into());
    let home = work.join(format!("home-{name}"));
    let _ = fs_err::remove_dir_all(&home);
    let live = work.join(format!("{name}-live"));
    let _ = fs_err::remove_dir_all(&live);
    fs_err::create_dir_all(&live)?;
    for i in 0..LIVE_FILES {
        fs_err::write(live.join(format!("live-{i}.md")), live_text(i, 0))?;
    }
    eprintln!("soak: first full index of {docs} documents");
    let (daemon, ready, st, url) = start_watching(&bin, &home, 61706, &[&corpus, &live])?;
    let pid = daemon.0.id();
    let after_index = proc_kb(pid, "VmRSS:");
    let peak_index = proc_kb(pid, "VmHWM:");
    // The memory a sync used, once the daemon is idle again (the tantivy writer closes 1.5 s
    // after a sync; the allocator may give pages back a little later).
    std::thread::sleep(Duration::from_secs(10));
    let settled = proc_kb(pid, "VmRSS:");
    let doc_id = first_doc(&bin, &home)?;
    eprintln!(
        "soak: watching after {:.1} s; RSS {} MB, 10 s later {} MB; {minutes} min of load",
        ready.as_secs_f64(),
        after_index / 1024,
        settled / 1024
    );

    let stop = Arc::new(AtomicBool::new(false));
    let counters = Arc::new(Counters::default());
    let mut threads = Vec::new();
    {
        // K clients: rounds of search (varied queries) and read.
        let (stop, counters, url) = (stop.clone(), counters.clone(), url.clone());
        threads.push(std::thread::spawn(move || -> anyhow::Result<()> {
            let queries = corpus::generated_queries(64);
            let mut round = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let (tool, targs) = if round.is_multiple_of(2) {
                    let q = &queries[(round / 2) % queries.len()];
                    ("search", json!({"query": q, "limit": 10}))
                } else {
                    let offset = 1 + (round % 40) * 10;
                    (
                        "read",
                        json!({"doc_id": doc_id, "offset": offset, "limit": 50}),
                    )
                };
                let r = crate::load::run(&url, clients, 20, tool, &targs, None, None)?;
                counters.calls.fetch_add(r.calls, Ordering::Relaxed);
                counters.errors.fetch_add(r.errors, Ordering::Relaxed);
                round += 1;
                // A pause between rounds: agents at work, not a flood that would hold both
                // cores of a shared machine for an hour.
                std::thread::sleep(Duration::from_secs(1));
            }
            Ok(())
        }));
    }
    {
        // Edits: one live file rewritten every second.
        let (stop, counters, live) = (stop.clone(), counters.clone(), live.clone());
        threads.push(std::thread::spawn(move || -> anyhow::Result<()> {
            let mut n = 0usize;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let i = n % LIVE_FILES;
                fs_err::write(live.join(format!("live-{i}.md")), live_text(i, n))?;
                counters.edits.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_secs(1));
            }
            Ok(())
        }));
    }
    {
        // Note saves: a new note every tenth save, edits of the last one between.
        let (stop, counters, url) = (stop.clone(), counters.clone(), url.clone());
        threads.push(std::thread::spawn(move || -> anyhow::Result<()> {
            let mut n = 0usize;
            let mut current: Option<(String, String)> = None;
            while !stop.load(Ordering::Relaxed) {
                let content = format!(
                    "Soak note {n}: the **daemon** keeps its memory.\n\nsoakword{n} #soak\n"
                );
                let targs = match &current {
                    Some((id, version)) if !n.is_multiple_of(10) => json!({
                        "mode": "edit", "note_id": id, "base_version": version,
                        "content": content, "app_name": "soak"
                    }),
                    _ => json!({"mode": "create", "content": content, "app_name": "soak"}),
                };
                let result = crate::load::call_once(&url, None, "note_save", &targs)?;
                let saved = note_answer(&result)?;
                current = Some((
                    saved["note_id"].as_str().unwrap_or_default().to_string(),
                    saved["version"].as_str().unwrap_or_default().to_string(),
                ));
                counters.notes.fetch_add(1, Ordering::Relaxed);
                n += 1;
                std::thread::sleep(Duration::from_secs(5));
            }
            Ok(())
        }));
    }

    let began = Instant::now();
    let total = Duration::from_secs(minutes * 60);
    let mut samples = Vec::new();
    let take = |samples: &mut Vec<Sample>| {
        samples.push(Sample {
            secs: began.elapsed().as_secs_f64(),
            rss_kb: proc_kb(pid, "VmRSS:"),
            calls: counters.calls.load(Ordering::Relaxed),
            errors: counters.errors.load(Ordering::Relaxed),
            edits: counters.edits.load(Ordering::Relaxed),
            notes: counters.notes.load(Ordering::Relaxed),
        });
    };
    take(&mut samples);
    while began.elapsed() < total {
        std::thread::sleep(sample.min(total.saturating_sub(began.elapsed())));
        take(&mut samples);
        let s = samples.last().expect("a sample was just taken");
        eprintln!(
            "soak: {:>5.0} s  RSS {:>4} MB  calls {} (errors {})  edits {}  notes {}",
            s.secs,
            s.rss_kb / 1024,
            s.calls,
            s.errors,
            s.edits,
            s.notes
        );
        if threads.iter().any(|t| t.is_finished()) {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join()
            .map_err(|_| anyhow::anyhow!("a soak thread panicked"))??;
    }
    if began.elapsed() + sample < total {
        bail!("the soak stopped early");
    }
    let loaded = proc_kb(pid, "VmRSS:");
    // The steady state once the load stops: what the allocator kept.
    std::thread::sleep(Duration::from_secs(30));
    let idle = proc_kb(pid, "VmRSS:");

    // Still fresh: the last edit is searchable.
    let word = "soakfinalword";
    fs_err::write(live.join("live-final.md"), format!("# Final\n\n{word}\n"))?;
    let t = Instant::now();
    crate::bench_serve::wait_searchable(
        &bin,
        &home,
        word,
        Duration::from_millis(50),
        "after the soak, a saved file",
    )?;
    let fresh = t.elapsed();
    let end_peak = proc_kb(pid, "VmHWM:");
    drop(daemon);

    let mut csv = String::from("seconds,rss_kb,calls,errors,edits,notes\n");
    for s in &samples {
        let _ = writeln!(
            csv,
            "{:.0},{},{},{},{},{}",
            s.secs, s.rss_kb, s.calls, s.errors, s.edits, s.notes
        );
    }
    fs_err::write(work.join(format!("{name}.csv")), &csv)?;
    let mut report = format!(
        "`linkly serve`, first full index of {} documents: watching after {:.1} s, RSS {} MB \
         (peak {} MB), 10 s later {} MB. Soak: {minutes} min, {clients} MCP clients (search and \
         read in turn), a file rewritten every second, a note saved every 5 s; RSS every {} s \
         (all samples in `target/bench/{name}.csv`); peak over the whole run {} MB; after it, a \
         saved file searchable in {} ms. RSS when the load stopped {} MB, 30 s later (idle) {} \
         MB.\n\n",
        st["doc_count"],
        ready.as_secs_f64(),
        after_index / 1024,
        peak_index / 1024,
        settled / 1024,
        sample.as_secs(),
        end_peak / 1024,
        fresh.as_millis(),
        loaded / 1024,
        idle / 1024
    );
    report.push_str(&summary(&samples));
    report.push('\n');
    report.push_str(&curve(&samples));
    println!("{report}");
    fs_err::write(work.join(format!("report-{name}.md")), &report)?;
    Ok(())
}

/// The text of live file `i` at its `n`th edit.
fn live_text(i: usize, n: usize) -> String {
    format!(
        "# Live file {i}\n\nEdit {n} of the soak: the watcher indexes it again.\n\nliveword{i}x{n}\n"
    )
}

/// A document id to read: the first hit for a word every generated document holds.
fn first_doc(bin: &Path, home: &Path) -> anyhow::Result<String> {
    let out = crate::bench_serve::keyword_only(bin)
        .args(["--json", "--home"])
        .arg(home)
        .args(["search", "section", "--limit", "1"])
        .output()?;
    let v: Value = serde_json::from_slice(&out.stdout)?;
    Ok(v["results"][0]["doc_id"]
        .as_str()
        .context("no document to read")?
        .to_string())
}

/// `note_save`'s answer: its structured content, or the JSON of its text.
fn note_answer(result: &Value) -> anyhow::Result<Value> {
    if result["isError"].as_bool() == Some(true) {
        bail!("note_save failed: {result}");
    }
    if result["structuredContent"].is_object() {
        return Ok(result["structuredContent"].clone());
    }
    let text = result["content"][0]["text"]
        .as_str()
        .context("note_save answered no text")?;
    serde_json::from_str(text).with_context(|| format!("note_save's answer is not JSON: {text}"))
}

/// A Markdown table of the samples, one row about every five minutes (and the last).
fn summary(samples: &[Sample]) -> String {
    let mut out = String::from(
        "| minute | RSS | calls (errors) | edits | notes saved |\n|---|---|---|---|---|\n",
    );
    let mut next = 0.0;
    for (i, s) in samples.iter().enumerate() {
        if s.secs + 1.0 >= next || i + 1 == samples.len() {
            let _ = writeln!(
                out,
                "| {:.1} | {} MB | {} ({}) | {} | {} |",
                s.secs / 60.0,
                s.rss_kb / 1024,
                s.calls,
                s.errors,
                s.edits,
                s.notes
            );
            next = s.secs + 300.0;
        }
    }
    let rss: Vec<u64> = samples.iter().map(|s| s.rss_kb / 1024).collect();
    let _ = writeln!(
        out,
        "\nRSS over the soak: min {} MB, max {} MB, last {} MB ({} samples).",
        rss.iter().min().unwrap_or(&0),
        rss.iter().max().unwrap_or(&0),
        rss.last().unwrap_or(&0),
        rss.len()
    );
    out
}

/// The RSS curve as text: one line per sample (at most 60, evenly picked), a bar of `#` on a
/// scale from 0 to the largest sample rounded up to 50 MB.
fn curve(samples: &[Sample]) -> String {
    let max = samples.iter().map(|s| s.rss_kb / 1024).max().unwrap_or(0);
    let top = max.div_ceil(50).max(1) * 50;
    let step = samples.len().div_ceil(60).max(1);
    let mut out = format!("```text\nminute  RSS MB  0{:>59}\n", format!("{top} MB"));
    for (i, s) in samples.iter().enumerate() {
        if i % step != 0 && i + 1 != samples.len() {
            continue;
        }
        let mb = s.rss_kb / 1024;
        let bar = (mb * 60 / top) as usize;
        let _ = writeln!(out, "{:>6.1}  {mb:>6}  {}", s.secs / 60.0, "#".repeat(bar));
    }
    out.push_str("```\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(rss_mb: &[u64]) -> Vec<Sample> {
        rss_mb
            .iter()
            .enumerate()
            .map(|(i, &mb)| Sample {
                secs: i as f64 * 30.0,
                rss_kb: mb * 1024,
                calls: i * 100,
                errors: 0,
                edits: i * 30,
                notes: i * 6,
            })
            .collect()
    }

    #[test]
    fn the_curve_scales_bars_to_the_largest_sample() {
        let text = curve(&samples(&[100, 150, 50]));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].ends_with("150 MB"), "{}", lines[1]);
        // 150 MB is the top of the scale: a full bar of 60; 100 MB is 40, 50 MB is 20.
        assert_eq!(lines[2].matches('#').count(), 40);
        assert_eq!(lines[3].matches('#').count(), 60);
        assert_eq!(lines[4].matches('#').count(), 20);
    }

    #[test]
    fn the_summary_keeps_a_row_every_five_minutes_and_the_last() {
        // 121 samples 30 s apart: an hour.
        let rss: Vec<u64> = (0..121).map(|i| 100 + i % 7).collect();
        let text = summary(&samples(&rss));
        let rows = text
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| minute"))
            .count();
        assert_eq!(rows, 13, "{text}");
        assert!(text.contains("min 100 MB, max 106 MB"), "{text}");
    }
}
