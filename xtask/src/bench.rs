//! `cargo xtask bench index|search|all [--docs N]`.
//!
//! Runs in a release build (re-executing itself when needed). Indexing goes through the release
//! `linkly` binary, which reports its own time, bytes and peak RSS; search is timed in-process
//! through `linkly_tools::Linkly::call` (the full tool: BM25, records, snippets, JSON) and per
//! CLI call (process start, index open, search, print).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::bail;
use linkly_core::DataDir;
use linkly_tools::Linkly;
use serde_json::{Value, json};

use crate::corpus;

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    if args.first().is_some_and(|a| a == "extract") {
        return crate::bench_extract::run(&args[1..]);
    }
    let what = args.first().map(String::as_str).unwrap_or("all");
    let docs = crate::arg(args, "--docs")
        .map(|s| s.parse::<usize>())
        .transpose()?
        .unwrap_or(10_000);
    if what == "gateway" {
        return write_report("report-gateway.md", &crate::bench_gateway::run(args)?);
    }
    if what == "soak" {
        return crate::bench_soak::run(&args[1..]);
    }
    if what == "serve" {
        return write_report("report-serve.md", &crate::bench_serve::run(docs)?);
    }
    if !matches!(what, "index" | "search" | "all") {
        bail!("usage: cargo xtask bench index|search|all|serve|gateway [--docs N]");
    }
    let linkly_bin = build_cli()?;
    let work = crate::target_dir().join("bench");
    fs_err::create_dir_all(&work)?;
    eprintln!("bench: preparing corpora in {}", work.display());
    let corpora = [
        ("generated", corpus::generated(&work, docs)?),
        ("scifact", corpus::scifact(&work)?),
    ];
    let mut report = String::from("| corpus | step | figure |\n|---|---|---|\n");
    for (name, dir) in &corpora {
        let home = work.join(format!("home-{name}"));
        let fresh = what != "search" || !home.join("index").exists();
        if fresh {
            let _ = fs_err::remove_dir_all(&home);
            let v = index(&linkly_bin, &home, dir)?;
            let secs = v["elapsed_ms"].as_f64().unwrap_or(0.0) / 1000.0;
            let seen = v["seen"].as_f64().unwrap_or(0.0);
            let mb = v["bytes"].as_f64().unwrap_or(0.0) / 1_048_576.0;
            report.push_str(&format!(
                "| {name} | index {seen:.0} files, {mb:.1} MB | {secs:.2} s, {:.0} docs/s, {:.1} MB/s, peak RSS {:.0} MB |\n",
                seen / secs.max(1e-9),
                mb / secs.max(1e-9),
                v["peak_rss_kb"].as_f64().unwrap_or(0.0) / 1024.0
            ));
            let v = index(&linkly_bin, &home, dir)?;
            report.push_str(&format!(
                "| {name} | re-index, nothing changed | {:.2} s |\n",
                v["elapsed_ms"].as_f64().unwrap_or(0.0) / 1000.0
            ));
        }
        if what != "index" {
            let queries = if *name == "scifact" {
                corpus::scifact_queries()?
                    .0
                    .into_iter()
                    .map(|(_, q)| q)
                    .collect()
            } else {
                corpus::generated_queries(300)
            };
            let (p50, p99) = search_in_process(&home, &queries)?;
            report.push_str(&format!(
                "| {name} | search in-process ({} queries, limit 10) | p50 {p50:.2} ms, p99 {p99:.2} ms |\n",
                queries.len()
            ));
            let (p50, p99) =
                search_cli(&linkly_bin, &home, &queries[..queries.len().min(40)], &[])?;
            report.push_str(&format!(
                "| {name} | search per CLI call (40 queries) | p50 {p50:.1} ms, p99 {p99:.1} ms |\n"
            ));
            if *name == "scifact" {
                let ndcg = scifact_ndcg(&home)?;
                report.push_str(&format!(
                    "| scifact | keyword-mode nDCG@10 (300 test claims) | {ndcg:.3} |\n"
                ));
            }
        }
    }
    write_report("report.md", &report)
}

/// Indexes `folders` into `index` in-process, saying how many files and how long it took.
pub(crate) fn sync_timed(
    index: &linkly_index::Index,
    folders: &[PathBuf],
) -> anyhow::Result<linkly_index::SyncReport> {
    let t = Instant::now();
    let report = index.sync(
        &linkly_index::SyncOptions {
            roots: folders.to_vec(),
            ..linkly_index::SyncOptions::default()
        },
        &mut |_| {},
    )?;
    eprintln!(
        "bench: sync {} files ({} new) in {:.1} s",
        report.seen,
        report.added,
        t.elapsed().as_secs_f64()
    );
    Ok(report)
}

/// Prints a benchmark's report and writes it to `<target>/bench/<file>`, saying where.
pub(crate) fn write_report(file: &str, report: &str) -> anyhow::Result<()> {
    println!("{report}");
    let work = crate::target_dir().join("bench");
    fs_err::create_dir_all(&work)?;
    let path = work.join(file);
    fs_err::write(&path, report)?;
    eprintln!("bench: report written to {}", path.display());
    Ok(())
}

pub(crate) fn build_cli() -> anyhow::Result<PathBuf> {
    build_cli_with(&[])
}

/// The release `linkly` with these features of linkly-cli on besides the default ones
/// (`gateway-server` for `linkly gateway serve`).
pub(crate) fn build_cli_with(features: &[&str]) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(crate::root())
        .args(["build", "--release", "--quiet", "-p", "linkly-cli"]);
    if !features.is_empty() {
        build.args(["--features", &features.join(",")]);
    }
    let ok = build.status()?.success();
    if !ok {
        bail!("building the release linkly binary failed");
    }
    Ok(crate::target_dir().join("release/linkly"))
}

fn index(bin: &Path, home: &Path, dir: &Path) -> anyhow::Result<Value> {
    crate::child::json(
        Command::new(bin)
            .args(["--json", "--home"])
            .arg(home)
            .arg("index")
            .arg(dir),
        "indexing",
    )
}

pub(crate) fn percentiles(mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| ms[((p * (ms.len() - 1) as f64).round() as usize).min(ms.len() - 1)];
    (at(0.5), at(0.99))
}

/// p50 and p99 in ms of `f` over `queries`, after the first ten run once to warm up.
pub(crate) fn latency<Q: AsRef<str>>(
    queries: &[Q],
    mut f: impl FnMut(&str) -> anyhow::Result<()>,
) -> anyhow::Result<(f64, f64)> {
    for q in queries.iter().take(10) {
        f(q.as_ref())?;
    }
    let mut ms = Vec::with_capacity(queries.len());
    for q in queries {
        let t = Instant::now();
        f(q.as_ref())?;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(percentiles(ms))
}

fn search_in_process(home: &Path, queries: &[String]) -> anyhow::Result<(f64, f64)> {
    let linkly = Linkly::open(DataDir::new(home)).map_err(|e| anyhow::anyhow!(e.message))?;
    latency(queries, |q| {
        let out = linkly.call(
            "search",
            json!({"query": q, "limit": 10, "output_format": "json"}),
        )?;
        if out.is_error {
            bail!("search failed: {}", out.text);
        }
        Ok(())
    })
}

/// p50 and p99 in ms of `linkly search QUERY --limit 10 FLAGS`, a process per query.
pub(crate) fn search_cli(
    bin: &Path,
    home: &Path,
    queries: &[String],
    flags: &[String],
) -> anyhow::Result<(f64, f64)> {
    let mut ms = Vec::with_capacity(queries.len());
    for q in queries {
        let t = Instant::now();
        crate::child::output(
            Command::new(bin)
                .arg("--home")
                .arg(home)
                .args(["search", q, "--limit", "10"])
                .args(flags),
            "CLI search",
        )?;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(percentiles(ms))
}

/// nDCG@10 with binary relevance over SciFact's judged test claims.
fn scifact_ndcg(home: &Path) -> anyhow::Result<f64> {
    let (queries, qrels) = corpus::scifact_queries()?;
    let linkly = Linkly::open(DataDir::new(home)).map_err(|e| anyhow::anyhow!(e.message))?;
    let mut total = 0.0;
    for (qid, text) in &queries {
        let out = linkly.call(
            "search",
            json!({"query": text, "limit": 10, "output_format": "json"}),
        )?;
        let v: Value = serde_json::from_str(&out.text)?;
        let relevant = &qrels[qid];
        let mut dcg = 0.0;
        for (rank, r) in v["results"].as_array().into_iter().flatten().enumerate() {
            let stem = Path::new(r["path"].as_str().unwrap_or(""))
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("")
                .to_string();
            if relevant.contains(&stem) {
                dcg += 1.0 / ((rank + 2) as f64).log2();
            }
        }
        let ideal: f64 = (0..relevant.len().min(10))
            .map(|i| 1.0 / ((i + 2) as f64).log2())
            .sum();
        total += dcg / ideal;
    }
    Ok(total / queries.len() as f64)
}
