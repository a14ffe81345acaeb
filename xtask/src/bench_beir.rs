//! `cargo xtask bench beir --dataset ../shared/ir/scifact [--model DIR]`: retrieval quality and
//! cost of BM25, dense and hybrid search on a BEIR dataset (release build).
//!
//! In-process through `linkly_index`: index the corpus (one file per document), embed it with
//! the model (default: `LINKLY_MODEL_DIR`, else `target/test-model`), then for the test queries
//! nDCG@10 and Recall@100 per arm, embedding throughput, query latency (keyword vs hybrid, at
//! the index and through the `search` tool), the HNSW graph (forced on, since SciFact is under
//! the size where it is built by default) and the peak RSS.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::bail;
use linkly_core::{Config, DataDir, DocId};
use linkly_index::{Arms, DocFilter, Fusion, HybridOptions, Index, SyncOptions};
use linkly_tools::Linkly;
use serde_json::json;

use crate::bench::latency;
/// The process's peak resident set size in KiB (the benchmarks of embedding use it too).
pub(crate) use linkly_core::stdx::peak_rss_kb;

pub(crate) struct Dataset {
    pub(crate) queries: Vec<(String, String)>,
    pub(crate) qrels: HashMap<String, Vec<String>>,
}

impl Dataset {
    /// A BEIR dataset's test queries and judgements.
    pub(crate) fn read(dataset: &Path) -> anyhow::Result<Dataset> {
        let (queries, qrels) = crate::corpus::beir_queries(dataset)?;
        Ok(Dataset { queries, qrels })
    }
}

/// Where `bench beir` keeps a dataset's corpus and index for a model: one folder per dataset
/// and model, so runs with two models leave both indexes (`bench fusion` reads them).
pub(crate) fn work_dir(dataset: &Path, model: &linkly_index::vector::ModelChoice) -> PathBuf {
    let name = dataset
        .file_name()
        .map_or("beir".into(), |n| n.to_string_lossy().into_owned());
    crate::target_dir()
        .join("bench")
        .join(format!("beir-{name}-{}", model.name))
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let dataset = crate::arg(args, "--dataset")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::shared_dir().join("ir/scifact"));
    let dataset = if dataset.is_relative() && !dataset.exists() {
        crate::root().join(dataset)
    } else {
        dataset
    };
    let choice = crate::bench_model(args)?;
    let model_dir = choice.dir.clone();
    let name = dataset
        .file_name()
        .map_or("beir".into(), |n| n.to_string_lossy().into_owned());
    let work = work_dir(&dataset, &choice);
    let docs_dir = crate::corpus::beir_corpus(&dataset, &work.join("docs"))?;
    let data = Dataset::read(&dataset)?;
    let home = work.join("home");
    if args.iter().any(|a| a == "--latency") {
        return latency_only(&home, &choice, &data);
    }
    let _ = fs_err::remove_dir_all(&home);
    let out = work.join("report.md");
    let mut report = Report {
        text: format!(
            "| {name} | figure |\n|---|---|\n| queries | {} |\n",
            data.queries.len()
        ),
        path: out.clone(),
    };

    let index = Index::open(&home.join("index"))?;
    let t = Instant::now();
    let sync = index.sync(
        &SyncOptions {
            roots: vec![docs_dir],
            ..SyncOptions::default()
        },
        &mut |_| {},
    )?;
    report.push(&format!(
        "| keyword indexing | {} docs in {:.1} s |\n",
        sync.seen,
        t.elapsed().as_secs_f64()
    ));

    let stems = stems_of(&index)?;
    let (ndcg, recall) = quality(&index, &data, &stems, Arms::Lexical, Fusion::DEFAULT)?;
    report.push(&format!(
        "| bm25 nDCG@10 · Recall@100 | {ndcg:.4} · {recall:.4} |\n"
    ));
    let queries: Vec<&str> = data.queries.iter().map(|(_, q)| q.as_str()).collect();
    let (p50, p99) = index_latency(&index, &queries, Arms::Lexical)?;
    report.push(&format!(
        "| keyword latency, index (limit 10) p50 · p99 | {p50:.1} ms · {p99:.1} ms |\n"
    ));

    let t = Instant::now();
    index.attach_model(&choice)?;
    report.push(&format!(
        "| model load | {:.2} s ({}) |\n",
        t.elapsed().as_secs_f64(),
        model_dir.display()
    ));
    eprintln!("bench: embedding {} documents", sync.seen);
    let mut last = Instant::now();
    let embed = index.embed_pending(&mut |p| {
        if last.elapsed().as_secs() >= 15 {
            last = Instant::now();
            eprintln!(
                "bench: embedded {}/{} docs, {} chunks",
                p.done, p.total, p.chunks
            );
        }
    })?;
    let secs = embed.elapsed_ms as f64 / 1000.0;
    report.push(&format!(
        "| embedding (release, {} threads) | {} docs, {} chunks in {:.1} s: {:.1} chunks/s, {:.1} docs/s |\n",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        embed.docs,
        embed.chunks,
        secs,
        embed.chunks as f64 / secs.max(1e-9),
        embed.docs as f64 / secs.max(1e-9)
    ));

    report.push("| **quality** | nDCG@10 · Recall@100 |\n");
    let rrf = Fusion::Rank {
        k: 60.0,
        vector_weight: 1.0,
    };
    for (label, arms, fusion) in [
        ("dense", Arms::Vector, Fusion::DEFAULT),
        ("hybrid (the default fusion)", Arms::Both, Fusion::DEFAULT),
        ("hybrid (reciprocal rank, k=60)", Arms::Both, rrf),
    ] {
        let (ndcg, recall) = quality(&index, &data, &stems, arms, fusion)?;
        report.push(&format!("| {label} | {ndcg:.4} · {recall:.4} |\n"));
    }

    let index = Arc::new(index);
    report.push("| **latency** (300 queries, limit 10) | p50 · p99 |\n");
    for (label, arms) in [
        ("keyword, index", Arms::Lexical),
        ("hybrid, index (exact scan)", Arms::Both),
    ] {
        let (p50, p99) = index_latency(&index, &queries, arms)?;
        report.push(&format!("| {label} | {p50:.1} ms · {p99:.1} ms |\n"));
    }
    let linkly = Linkly::new(index.clone(), DataDir::new(&home), Config::default());
    let (p50, p99) = tool_latency(&linkly, &queries)?;
    report.push(&format!(
        "| hybrid, `search` tool (exact scan, the default below 100,000 chunks; records + snippets + JSON) | {p50:.1} ms · {p99:.1} ms |\n"
    ));

    // The HNSW graph, forced on.
    index.set_vector_graph_min(1);
    let t = Instant::now();
    index.build_vector_graph();
    report.push(&format!(
        "| HNSW graph build ({} chunks) | {:.1} s |\n",
        embed.chunks,
        t.elapsed().as_secs_f64()
    ));
    for (label, arms) in [("dense, HNSW", Arms::Vector), ("hybrid, HNSW", Arms::Both)] {
        let (ndcg, recall) = quality(&index, &data, &stems, arms, Fusion::DEFAULT)?;
        report.push(&format!("| {label} quality | {ndcg:.4} · {recall:.4} |\n"));
    }
    let (p50, p99) = index_latency(&index, &queries, Arms::Both)?;
    report.push(&format!(
        "| hybrid, index (HNSW) latency | {p50:.1} ms · {p99:.1} ms |\n"
    ));
    let (p50, p99) = tool_latency(&linkly, &queries)?;
    report.push(&format!(
        "| hybrid, `search` tool (HNSW; records + snippets + JSON) | {p50:.1} ms · {p99:.1} ms |\n"
    ));
    report.push(&format!(
        "| peak RSS (whole run) | {:.0} MB |\n",
        peak_rss_kb().unwrap_or(0) as f64 / 1024.0
    ));
    println!("{}", report.text);
    eprintln!("bench: report written to {}", out.display());
    Ok(())
}

/// `--latency`: the query latencies again on the index the last full run left (indexed and
/// embedded), without indexing or embedding anything: keyword and hybrid at the index, and the
/// `search` tool, on the exact scan.
fn latency_only(
    home: &Path,
    choice: &linkly_index::vector::ModelChoice,
    data: &Dataset,
) -> anyhow::Result<()> {
    if !home.join("index").is_dir() {
        bail!(
            "no index at {}: run `cargo xtask bench beir` once first",
            home.display()
        );
    }
    let index = Index::open(&home.join("index"))?;
    index.attach_model(choice)?;
    let pending = index.embed_pending(&mut |_| {})?;
    if pending.docs > 0 {
        bail!(
            "the index at {} was not fully embedded ({} documents were pending): run `cargo xtask bench beir` first",
            home.display(),
            pending.docs
        );
    }
    let queries: Vec<&str> = data.queries.iter().map(|(_, q)| q.as_str()).collect();
    let index = Arc::new(index);
    println!(
        "| latency ({} queries, limit 10, exact scan) | p50 · p99 |\n|---|---|",
        queries.len()
    );
    for (label, arms) in [
        ("keyword, index", Arms::Lexical),
        ("dense, index", Arms::Vector),
        ("hybrid, index", Arms::Both),
    ] {
        let (p50, p99) = index_latency(&index, &queries, arms)?;
        println!("| {label} | {p50:.1} ms · {p99:.1} ms |");
    }
    // Retrieval on the index as it is (the scan reads the 8-bit copies from the second
    // search on): the figures the full run reports, without indexing again.
    let stems = stems_of(&index)?;
    for (label, arms) in [
        ("bm25", Arms::Lexical),
        ("dense", Arms::Vector),
        ("hybrid", Arms::Both),
    ] {
        let (ndcg, recall) = quality(&index, data, &stems, arms, Fusion::DEFAULT)?;
        println!("| {label} nDCG@10 · Recall@100 | {ndcg:.4} · {recall:.4} |");
    }
    // The query's embedding alone: what the dense arm pays before it scans.
    let embedder = linkly_index::vector::TextEmbedder::load(choice)?;
    let (p50, p99) = latency(&queries, |q| {
        embedder.embed_query(q).map(drop).map_err(Into::into)
    })?;
    println!("| query embedding alone | {p50:.1} ms · {p99:.1} ms |");
    drop(embedder);
    let linkly = Linkly::new(index.clone(), DataDir::new(home), Config::default());
    let (p50, p99) = tool_latency(&linkly, &queries)?;
    println!("| hybrid, `search` tool (records + snippets + JSON) | {p50:.1} ms · {p99:.1} ms |");
    // What the tool adds to the index's search: each query through both, one after the other,
    // and the median of the differences (steadier than the difference of two medians, since
    // both pay the same query embedding, whose time drifts with the machine).
    let mut added = Vec::with_capacity(queries.len());
    for q in &queries {
        let t = Instant::now();
        index.hybrid_search(q, 10, &DocFilter::default(), &HybridOptions::default())?;
        let search = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let out = linkly
            .call(
                "search",
                json!({"query": q, "limit": 10, "output_format": "json"}),
            )
            .map_err(|e| anyhow::anyhow!(e))?;
        let tool = t.elapsed().as_secs_f64();
        if out.is_error {
            bail!("search tool failed: {}", out.text);
        }
        added.push((tool - search) * 1000.0);
    }
    added.sort_by(|a, b| a.total_cmp(b));
    println!(
        "| the tool's records + snippets + JSON over the index's search, median of {} paired differences | {:.2} ms |",
        added.len(),
        added[added.len() / 2]
    );
    drop((linkly, index));
    // What an agent calling the CLI from a shell pays with no server running: a process that
    // opens the index, loads the model and the stored vectors, searches, prints and exits.
    let bin = crate::bench::build_cli()?;
    let cli: Vec<&str> = queries.iter().copied().take(60).collect();
    let (p50, p99) = latency(&cli, |q| {
        let answer = crate::child::json(
            std::process::Command::new(&bin)
                .env("LINKLY_MODEL_DIR", &choice.dir)
                .arg("--json")
                .arg("--home")
                .arg(home)
                .args(["search", q, "--limit", "10"]),
            &format!("linkly search {q:?}"),
        )?;
        if answer["mode"] != "hybrid" {
            bail!("linkly search {q:?} answered in {} mode", answer["mode"]);
        }
        Ok(())
    })?;
    println!(
        "| hybrid, `linkly --json search` per CLI call, no server ({} calls after 10 to warm the page cache) | {p50:.1} ms · {p99:.1} ms |",
        cli.len()
    );
    Ok(())
}

/// p50 and p99 of `Index::hybrid_search` with these arms (limit 10, no filter).
fn index_latency(index: &Index, queries: &[&str], arms: Arms) -> anyhow::Result<(f64, f64)> {
    latency(queries, |q| {
        index.hybrid_search(
            q,
            10,
            &DocFilter::default(),
            &HybridOptions {
                arms,
                ..HybridOptions::default()
            },
        )?;
        Ok(())
    })
}

/// p50 and p99 of the `search` tool in hybrid mode (JSON output) over the queries.
fn tool_latency(linkly: &Linkly, queries: &[&str]) -> anyhow::Result<(f64, f64)> {
    latency(queries, |q| {
        let out = linkly
            .call(
                "search",
                json!({"query": q, "limit": 10, "output_format": "json"}),
            )
            .map_err(|e| anyhow::anyhow!(e))?;
        if out.is_error || !out.text.contains("\"mode\":\"hybrid\"") {
            bail!("search tool did not answer in hybrid mode: {}", out.text);
        }
        Ok(())
    })
}

/// The report, written out after every row so a long run shows its figures as they come.
struct Report {
    text: String,
    path: PathBuf,
}

impl Report {
    fn push(&mut self, row: &str) {
        eprint!("bench: {row}");
        self.text.push_str(row);
        let _ = fs_err::write(&self.path, &self.text);
    }
}

/// Index ids to corpus ids (file stems).
pub(crate) fn stems_of(index: &Index) -> anyhow::Result<HashMap<DocId, String>> {
    Ok(index
        .all_docs()?
        .into_iter()
        .map(|r| {
            let stem = Path::new(&r.path)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            (r.id, stem)
        })
        .collect())
}

/// nDCG@10 and Recall@100 over the dataset's judged queries.
pub(crate) fn quality(
    index: &Index,
    data: &Dataset,
    stems: &HashMap<DocId, String>,
    arms: Arms,
    fusion: Fusion,
) -> anyhow::Result<(f64, f64)> {
    let (mut ndcg, mut recall) = (0.0, 0.0);
    let opts = HybridOptions {
        arms,
        fusion,
        candidates: 100,
    };
    for (qid, text) in &data.queries {
        let out = index.hybrid_search(text, 100, &DocFilter::default(), &opts)?;
        let relevant = &data.qrels[qid];
        let ranked: Vec<&str> = out
            .hits
            .iter()
            .filter_map(|h| stems.get(&h.id).map(String::as_str))
            .collect();
        let dcg: f64 = ranked
            .iter()
            .take(10)
            .enumerate()
            .filter(|(_, id)| relevant.iter().any(|r| r == *id))
            .map(|(rank, _)| 1.0 / ((rank + 2) as f64).log2())
            .sum();
        let ideal: f64 = (0..relevant.len().min(10))
            .map(|i| 1.0 / ((i + 2) as f64).log2())
            .sum();
        ndcg += dcg / ideal;
        let found = relevant
            .iter()
            .filter(|r| ranked.iter().take(100).any(|id| id == r))
            .count();
        recall += found as f64 / relevant.len() as f64;
    }
    let n = data.queries.len() as f64;
    Ok((ndcg / n, recall / n))
}
