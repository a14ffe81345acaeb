//! `cargo xtask bench embed [--docs N] [--model DIR]`: embedding throughput and memory on the
//! first N SciFact abstracts (default 400), for Linkly's encoder and for candle-transformers'
//! reference models, each in its own process (so each peak RSS is its own), through the same
//! path as `linkly index`: keyword sync, then `embed_pending` (chunking, batching, storing).
//!
//! `cargo xtask bench embed --queries [--dataset DIR]`: the model's load time and the latency of
//! one query embedding (the hybrid search's own cost), over a BEIR set's test queries (default:
//! SciFact in the shared folder).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};
use linkly_index::vector::{ModelChoice, TextEmbedder};
use linkly_index::{Index, SyncOptions};

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let model = crate::bench_model(args)?;
    if let Some(dir) = crate::arg(args, "--child") {
        return child(Path::new(&dir), &model);
    }
    if let Some(dir) = crate::arg(args, "--child-whole") {
        return child_whole(Path::new(&dir), &model);
    }
    if args.iter().any(|a| a == "--queries") {
        return queries(args, &model);
    }
    let docs: usize = crate::arg(args, "--docs").map_or(Ok(400), |d| d.parse())?;
    let all = crate::corpus::scifact(&crate::target_dir().join("bench"))?;
    let work = crate::target_dir().join("bench").join("embed");
    let subset = work.join(format!("scifact-{docs}"));
    if !subset.join(".complete").exists() {
        let _ = fs_err::remove_dir_all(&subset);
        fs_err::create_dir_all(&subset)?;
        let mut names: Vec<PathBuf> = fs_err::read_dir(&all)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "txt"))
            .collect();
        names.sort();
        for p in names.iter().take(docs) {
            fs_err::copy(p, subset.join(p.file_name().context("file name")?))?;
        }
        fs_err::write(subset.join(".complete"), "ok")?;
    }
    let mut rows = Vec::new();
    for (label, engine, mode) in [
        ("Linkly encoder (default), chunks", "", "--child"),
        (
            "candle-transformers `bert`, chunks",
            "candle-transformers",
            "--child",
        ),
        (
            "Linkly encoder, one sequence per abstract cut at the model's 256 tokens (sentence-transformers' workload)",
            "",
            "--child-whole",
        ),
    ] {
        eprintln!("bench: embedding {docs} abstracts with {label}");
        let out = Command::new(std::env::current_exe()?)
            .args(["bench", "embed", mode])
            .arg(&subset)
            .arg("--model")
            .arg(&model.dir)
            .env(linkly_core::env::LINKLY_EMBED_ENGINE, engine)
            .output()?;
        if !out.status.success() {
            bail!(
                "embedding child failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        let f = |k: &str| v[k].as_f64().unwrap_or(0.0);
        rows.push((label, f("docs"), f("chunks"), f("secs"), f("rss_mb")));
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "| engine ({threads} threads, release) | docs | chunks | time | chunks/s | docs/s | peak RSS |\n|---|---|---|---|---|---|---|"
    );
    for (label, docs, chunks, secs, rss) in &rows {
        println!(
            "| {label} | {docs} | {chunks} | {secs:.1} s | {:.1} | {:.1} | {rss:.0} MB |",
            chunks / secs.max(1e-9),
            docs / secs.max(1e-9)
        );
    }
    if let [(_, _, _, fast, _), (_, _, _, reference, _), ..] = rows[..] {
        println!(
            "\nLinkly's encoder is {:.1}× candle-transformers here.",
            reference / fast.max(1e-9)
        );
    }
    Ok(())
}

/// One engine: sync the subset into a fresh index, attach the model, embed; JSON on stdout.
fn child(docs: &Path, model: &ModelChoice) -> anyhow::Result<()> {
    let home = docs.with_file_name(format!("home-{}", std::process::id()));
    let _ = fs_err::remove_dir_all(&home);
    let index = Index::open(&home.join("index"))?;
    index.sync(
        &SyncOptions {
            roots: vec![docs.to_path_buf()],
            ..SyncOptions::default()
        },
        &mut |_| {},
    )?;
    index.attach_model(model)?;
    let report = index.embed_pending(&mut |_| {})?;
    drop(index);
    let _ = fs_err::remove_dir_all(&home);
    let rss_kb = crate::bench_beir::peak_rss_kb().unwrap_or(0) as f64;
    println!(
        "{}",
        serde_json::json!({
            "docs": report.docs,
            "chunks": report.chunks,
            "secs": report.elapsed_ms as f64 / 1000.0,
            "rss_mb": rss_kb / 1024.0,
        })
    );
    Ok(())
}

/// sentence-transformers' workload: each abstract (title and text) as one sequence, truncated
/// at the model's length, longest first in batches of 16, through the public `TextEmbedder`.
fn child_whole(docs: &Path, model: &ModelChoice) -> anyhow::Result<()> {
    let mut texts = Vec::new();
    for entry in fs_err::read_dir(docs)? {
        let path = entry?.path();
        if path.extension().is_some_and(|x| x == "txt") {
            let text = fs_err::read_to_string(&path)?;
            texts.push(text.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    texts.sort_by_key(|t| std::cmp::Reverse(t.len()));
    let embedder = TextEmbedder::load(model)?;
    let t = std::time::Instant::now();
    let mut n = 0;
    for batch in texts.chunks(16) {
        let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
        n += embedder.embed_passages(&refs)?.len();
    }
    let secs = t.elapsed().as_secs_f64();
    let rss_kb = crate::bench_beir::peak_rss_kb().unwrap_or(0) as f64;
    println!(
        "{}",
        serde_json::json!({"docs": n, "chunks": n, "secs": secs, "rss_mb": rss_kb / 1024.0})
    );
    Ok(())
}

/// Model load time and one-query embedding latency over a BEIR set's test queries.
fn queries(args: &[String], model: &ModelChoice) -> anyhow::Result<()> {
    let dataset = crate::arg(args, "--dataset")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::shared_dir().join("ir/scifact"));
    let (queries, _) = crate::corpus::beir_queries(&dataset)?;
    let t = std::time::Instant::now();
    let embedder = TextEmbedder::load(model)?;
    let load_ms = t.elapsed().as_secs_f64() * 1000.0;
    for (_, q) in queries.iter().take(10) {
        embedder.embed_query(q)?;
    }
    let mut ms = Vec::with_capacity(queries.len());
    for (_, q) in &queries {
        let t = std::time::Instant::now();
        embedder.embed_query(q)?;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let n = ms.len();
    let (p50, p99) = crate::bench::percentiles(ms);
    println!(
        "| query embedding ({n} queries, {}) | model load {load_ms:.0} ms; p50 {p50:.2} ms, p99 {p99:.2} ms |",
        model.dir.display()
    );
    Ok(())
}
