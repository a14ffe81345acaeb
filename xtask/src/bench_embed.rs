//! `cargo xtask bench embed [--docs N] [--model DIR]`: embedding throughput and memory on the
//! first N SciFact abstracts (default 400), for Linkly's encoder and for candle-transformers'
//! reference models, each in its own process (so each peak RSS is its own), through the same
//! path as `linkly index`: keyword sync, then `embed_pending` (chunking, batching, storing).
//!
//! `cargo xtask bench embed --vs-pytorch [--docs N] [--rounds R]`: sentence-transformers on
//! PyTorch (installed from PyPI into `target/bench/st-venv` on first use) and Linkly's encoder on
//! the same abstracts, one sequence each cut at the model's window, in one run, alternated
//! R times (default 2): the ratio is measured, not remembered. Linkly runs once per engine: its
//! default (the precision its calibration chose on this machine), f32, int16 (AVX2), int8
//! (AVX-512 VNNI), bf16 on AVX-512 BF16 and bf16 on AMX, each forced with
//! `LINKLY_EMBED_ENGINE` (one this CPU lacks falls back to f32). Each engine runs in its
//! own process (its own peak RSS); every vector is compared with PyTorch's and with Linkly's
//! f32 one (cosine per abstract).
//!
//! `cargo xtask bench embed --paths [--docs N] [--rounds R]`: the same without PyTorch: each of
//! Linkly's paths against its own f32 (speed and least cosine), the CPU's flags, and the
//! precision the calibration chose (`<model>/.linkly/calibration.json`).
//!
//! `cargo xtask bench embed --queries [--dataset DIR]`: the model's load time and the latency of
//! one query embedding (the hybrid search's own cost), over a BEIR set's test queries (default:
//! SciFact in the shared folder).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context as _;
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
    if let Some(file) = crate::arg(args, "--child-vectors") {
        return child_vectors(Path::new(&file), &model);
    }
    if args.iter().any(|a| a == "--queries") {
        return queries(args, &model);
    }
    let docs: usize = crate::arg(args, "--docs").map_or(Ok(400), |d| d.parse())?;
    let paths = args.iter().any(|a| a == "--paths");
    if paths || args.iter().any(|a| a == "--vs-pytorch") {
        let rounds: usize = crate::arg(args, "--rounds").map_or(Ok(2), |d| d.parse())?;
        return vs_pytorch(&subset_of(docs)?, &model, rounds, !paths);
    }
    let subset = subset_of(docs)?;
    let mut rows = Vec::new();
    for (label, engine, mode) in [
        ("Linkly encoder (default), chunks", "", "--child"),
        (
            "Linkly encoder, f32 (`LINKLY_EMBED_ENGINE=f32`), chunks",
            "f32",
            "--child",
        ),
        (
            "Linkly encoder, int8 (`LINKLY_EMBED_ENGINE=int8`), chunks",
            "int8",
            "--child",
        ),
        (
            "Linkly encoder, int16 (`LINKLY_EMBED_ENGINE=int16`), chunks",
            "int16",
            "--child",
        ),
        (
            "Linkly encoder, bf16 on AVX-512 BF16 (`LINKLY_EMBED_ENGINE=bf16-avx512`), chunks",
            "bf16-avx512",
            "--child",
        ),
        (
            "Linkly encoder, bf16 on AMX (`LINKLY_EMBED_ENGINE=bf16-amx`), chunks",
            "bf16-amx",
            "--child",
        ),
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
        let v = crate::child::json(
            Command::new(std::env::current_exe()?)
                .args(["bench", "embed", mode])
                .arg(&subset)
                .arg("--model")
                .arg(&model.dir)
                .env(linkly_core::env::LINKLY_EMBED_ENGINE, engine),
            "embedding child",
        )?;
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
    let secs_of = |prefix: &str| rows.iter().find(|r| r.0.starts_with(prefix)).map(|r| r.3);
    if let (Some(fast), Some(f32), Some(reference)) = (
        secs_of("Linkly encoder (default)"),
        secs_of("Linkly encoder, f32"),
        secs_of("candle-transformers"),
    ) {
        println!(
            "\nLinkly's default encoder is {:.1}× candle-transformers here, and {:.2}× its own f32 path.",
            reference / fast.max(1e-9),
            f32 / fast.max(1e-9)
        );
    }
    Ok(())
}

/// The first `docs` SciFact abstracts as files, made once.
fn subset_of(docs: usize) -> anyhow::Result<PathBuf> {
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
    Ok(subset)
}

/// The Python side of `--vs-pytorch`: the same texts, in the same order, in batches of 16,
/// through sentence-transformers; timing, peak RSS and the vectors as JSON.
const ST_SCRIPT: &str = r#"
import json, resource, sys, time
texts = json.load(open(sys.argv[2]))
t0 = time.time()
from sentence_transformers import SentenceTransformer
import torch
model = SentenceTransformer(sys.argv[1], device="cpu")
load = time.time() - t0
t = time.time()
vecs = model.encode(texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)
secs = time.time() - t
json.dump({"docs": len(texts), "secs": secs, "load_secs": load,
           "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "threads": torch.get_num_threads(), "torch": torch.__version__,
           "vectors": vecs.tolist()}, sys.stdout)
"#;

/// The abstracts as `child_whole` embeds them: whitespace collapsed, longest first.
fn whole_texts(docs: &Path) -> anyhow::Result<Vec<String>> {
    let mut texts = Vec::new();
    for entry in fs_err::read_dir(docs)? {
        let path = entry?.path();
        if path.extension().is_some_and(|x| x == "txt") {
            let text = fs_err::read_to_string(&path)?;
            texts.push(text.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    texts.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    Ok(texts)
}

/// A Python with sentence-transformers, installed from PyPI on first use.
fn st_python() -> anyhow::Result<PathBuf> {
    let venv = crate::target_dir().join("bench/st-venv");
    let py = venv.join("bin/python");
    let ready = py.exists()
        && Command::new(&py)
            .args(["-c", "import sentence_transformers"])
            .status()
            .is_ok_and(|s| s.success());
    if !ready {
        eprintln!(
            "bench: installing sentence-transformers (and PyTorch) into {}",
            venv.display()
        );
        crate::venv::install(&venv, "sentence-transformers", ["sentence-transformers"])?;
    }
    Ok(py)
}

/// sentence-transformers and Linkly's encoder on the same abstracts, alternated.
fn vs_pytorch(
    subset: &Path,
    model: &ModelChoice,
    rounds: usize,
    with_pytorch: bool,
) -> anyhow::Result<()> {
    let py = if with_pytorch {
        Some(st_python()?)
    } else {
        None
    };
    let texts = whole_texts(subset)?;
    let work = subset.with_file_name("vs-pytorch");
    fs_err::create_dir_all(&work)?;
    let texts_file = work.join("texts.json");
    fs_err::write(&texts_file, serde_json::to_string(&texts)?)?;
    let script = work.join("st_encode.py");
    fs_err::write(&script, ST_SCRIPT)?;
    let mut st = Vec::new();
    // Linkly's engines: label, `LINKLY_EMBED_ENGINE`, the runs, the least cosine to PyTorch.
    let mut ours: Vec<(&str, &str, Vec<serde_json::Value>, f64)> = vec![
        (
            "Linkly's encoder, the default (the calibration's choice here)",
            "",
            Vec::new(),
            1.0,
        ),
        (
            "Linkly's encoder, f32 (`LINKLY_EMBED_ENGINE=f32`)",
            "f32",
            Vec::new(),
            1.0,
        ),
        (
            "Linkly's encoder, int8 (`LINKLY_EMBED_ENGINE=int8`; f32 without AVX-512 VNNI)",
            "int8",
            Vec::new(),
            1.0,
        ),
        (
            "Linkly's encoder, int16 (`LINKLY_EMBED_ENGINE=int16`; f32 without AVX2)",
            "int16",
            Vec::new(),
            1.0,
        ),
        (
            "Linkly's encoder, bf16 on AVX-512 BF16 (`LINKLY_EMBED_ENGINE=bf16-avx512`; f32 without it)",
            "bf16-avx512",
            Vec::new(),
            1.0,
        ),
        (
            "Linkly's encoder, bf16 on AMX tiles (`LINKLY_EMBED_ENGINE=bf16-amx`; f32 without AMX)",
            "bf16-amx",
            Vec::new(),
            1.0,
        ),
    ];
    for round in 0..rounds.max(1) {
        let v: serde_json::Value = match &py {
            Some(py) => {
                eprintln!(
                    "bench: round {} of {rounds}: sentence-transformers",
                    round + 1
                );
                crate::child::json(
                    Command::new(py)
                        .arg(&script)
                        .arg(&model.dir)
                        .arg(&texts_file),
                    "sentence-transformers",
                )?
            }
            None => serde_json::Value::Null,
        };
        for (label, engine, runs, min_cos) in &mut ours {
            eprintln!("bench: round {} of {rounds}: {label}", round + 1);
            let l = crate::child::json(
                Command::new(std::env::current_exe()?)
                    .args(["bench", "embed", "--child-vectors"])
                    .arg(&texts_file)
                    .arg("--model")
                    .arg(&model.dir)
                    .env(linkly_core::env::LINKLY_EMBED_ENGINE, *engine),
                label,
            )?;
            if round == 0 {
                *min_cos = least_cosine(&v["vectors"], &l["vectors"]);
            }
            runs.push(l);
        }
        st.push(v);
    }
    let med = |rows: &[serde_json::Value], k: &str| {
        let mut xs: Vec<f64> = rows.iter().map(|r| r[k].as_f64().unwrap_or(0.0)).collect();
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    };
    let n = texts.len() as f64;
    if py.is_none() {
        return paths_table(model, &ours, n, rounds);
    }
    let st_s = med(&st, "secs");
    println!(
        "| engine ({} abstracts, one sequence each, batches of 16; median of {rounds} alternated runs) | time | docs/s | × PyTorch | least cosine to PyTorch | least cosine to Linkly's f32 | peak RSS |\n|---|---|---|---|---|---|---|",
        texts.len()
    );
    println!(
        "| sentence-transformers (PyTorch {}, {} threads) | {st_s:.1} s | {:.1} | 1.00 | | | {:.0} MB |",
        st[0]["torch"].as_str().unwrap_or("?"),
        st[0]["threads"],
        n / st_s.max(1e-9),
        med(&st, "rss_mb")
    );
    let f32_vectors = ours
        .iter()
        .find(|o| o.1 == "f32")
        .map(|o| o.2[0]["vectors"].clone())
        .unwrap_or_default();
    for (label, _, runs, min_cos) in &ours {
        let s = med(runs, "secs");
        println!(
            "| {label} | {s:.1} s | {:.1} | {:.2} | {min_cos:.5} | {:.5} | {:.0} MB |",
            n / s.max(1e-9),
            st_s / s.max(1e-9),
            least_cosine(&f32_vectors, &runs[0]["vectors"]),
            med(runs, "rss_mb")
        );
    }
    Ok(())
}

/// `--paths`: each of Linkly's paths against its f32 one, the CPU, and the calibration's choice.
fn paths_table(
    model: &ModelChoice,
    ours: &[(&str, &str, Vec<serde_json::Value>, f64)],
    n: f64,
    rounds: usize,
) -> anyhow::Result<()> {
    let med = |rows: &[serde_json::Value], k: &str| {
        let mut xs: Vec<f64> = rows.iter().map(|r| r[k].as_f64().unwrap_or(0.0)).collect();
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    };
    let f32_run = ours.iter().find(|o| o.1 == "f32").context("no f32 run")?;
    let f32_s = med(&f32_run.2, "secs");
    println!(
        "| engine ({n} abstracts, one sequence each, batches of 16; median of {rounds} alternated runs) | time | docs/s | × f32 | least cosine to f32 | peak RSS |\n|---|---|---|---|---|---|"
    );
    for (label, _, runs, _) in ours {
        let s = med(runs, "secs");
        println!(
            "| {label} | {s:.2} s | {:.1} | {:.2} | {:.5} | {:.0} MB |",
            n / s.max(1e-9),
            f32_s / s.max(1e-9),
            least_cosine(&f32_run.2[0]["vectors"], &runs[0]["vectors"]),
            med(runs, "rss_mb")
        );
    }
    let info = fs_err::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split_once(':'))
            .map_or("", |(_, v)| v.trim())
    };
    let flags: Vec<&str> = field("flags")
        .split_whitespace()
        .filter(|f| ["avx2", "fma"].contains(f) || f.starts_with("avx512") || f.starts_with("amx"))
        .collect();
    println!(
        "\nCPU: {} ({}); flags: {}",
        field("model name"),
        field("vendor_id"),
        flags.join(" ")
    );
    let calibration = model.dir.join(".linkly/calibration.json");
    match fs_err::read_to_string(&calibration) {
        Ok(text) => {
            let c: serde_json::Value = serde_json::from_str(&text)?;
            let paths: Vec<String> = c["paths"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    format!(
                        "{} {:.1} ms (cosine {:.5}{})",
                        p["precision"].as_str().unwrap_or("?"),
                        p["ms"].as_f64().unwrap_or(0.0),
                        p["least_cosine"].as_f64().unwrap_or(0.0),
                        if p["kept"].as_bool() == Some(true) {
                            ""
                        } else {
                            ", not kept"
                        }
                    )
                })
                .collect();
            println!(
                "Calibration ({} texts, {} tokens): chose **{}**; {}",
                c["texts"],
                c["tokens"],
                c["chosen"].as_str().unwrap_or("?"),
                paths.join(", ")
            );
        }
        Err(_) => println!("No calibration at {}", calibration.display()),
    }
    Ok(())
}

/// The least cosine between two JSON lists of unit vectors, pair by pair.
fn least_cosine(a: &serde_json::Value, b: &serde_json::Value) -> f64 {
    let (a, b) = (a.as_array(), b.as_array());
    a.into_iter()
        .flatten()
        .zip(b.into_iter().flatten())
        .map(|(x, y)| {
            x.as_array()
                .into_iter()
                .flatten()
                .zip(y.as_array().into_iter().flatten())
                .map(|(p, q)| p.as_f64().unwrap_or(0.0) * q.as_f64().unwrap_or(0.0))
                .sum::<f64>()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Linkly's side of `--vs-pytorch`: the texts of a JSON file, in order, in batches of 16.
fn child_vectors(texts_file: &Path, model: &ModelChoice) -> anyhow::Result<()> {
    let texts: Vec<String> = serde_json::from_str(&fs_err::read_to_string(texts_file)?)?;
    let embedder = TextEmbedder::load(model)?;
    let t = std::time::Instant::now();
    let mut vectors = Vec::with_capacity(texts.len());
    for batch in texts.chunks(16) {
        let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
        vectors.extend(embedder.embed_passages(&refs)?);
    }
    let secs = t.elapsed().as_secs_f64();
    let rss_kb = crate::bench_beir::peak_rss_kb().unwrap_or(0) as f64;
    println!(
        "{}",
        serde_json::json!({"docs": vectors.len(), "secs": secs, "rss_mb": rss_kb / 1024.0, "vectors": vectors})
    );
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
    let texts = whole_texts(docs)?;
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
