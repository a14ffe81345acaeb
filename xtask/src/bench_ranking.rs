//! `cargo xtask bench ranking [--docs N] [--model DIR] [--linkly BIN]`: a library published to
//! the gateway ranks as the same folder searched locally (issue 43, point 4).
//!
//! Each folder is indexed in a data directory of its own, once keyword-only (no model) and once
//! hybrid (`--model`, default the test model): the first `--docs` SciFact abstracts (default
//! 1,000) and the cross-language set (`testdata/corpus`). Each publishes both folders to one gateway
//! (SQLite). Then every SciFact test query judged inside the subset, and every cross-language
//! question, is asked of the local library (`linkly call search`) and of the cloud one (the
//! gateway's MCP `search`), limit 10; nDCG@10 and MRR@10 per side, and the largest difference.
//! The binary is the release `linkly` with the gateway server unless `--linkly` names another
//! build (ranking does not depend on the build).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context as _, bail};
use linkly_gateway::model::Plan;
use linkly_gateway::server::db::{Db, DbSpec};
use serde_json::{Value, json};

/// One evaluation set: the questions, each with the file stems that answer it.
struct Set {
    name: &'static str,
    dir: PathBuf,
    questions: Vec<(String, Vec<String>)>,
}

/// The per-side figures of one set and mode.
#[derive(Default)]
struct Scores {
    ndcg: f64,
    mrr: f64,
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let docs: usize = crate::arg(args, "--docs").map_or(Ok(1000), |s| s.parse())?;
    let bin = match crate::arg(args, "--linkly") {
        Some(b) => PathBuf::from(b),
        None => crate::bench::build_cli_with(&["gateway-server"])?,
    };
    let model = match crate::arg(args, "--model") {
        Some(m) => PathBuf::from(m),
        None => crate::test_model::ensure()?,
    };
    let work = crate::target_dir().join("bench").join("ranking");
    let _ = fs_err::remove_dir_all(&work);
    fs_err::create_dir_all(&work)?;
    let sets = [scifact_subset(&work, docs)?, cross_language(&work)?];

    let gw_home = work.join("gateway");
    fs_err::create_dir_all(&gw_home)?;
    let database = gw_home.join("gateway.sqlite");
    let database = database.to_string_lossy().into_owned();
    let (_, token) =
        Db::open(&DbSpec::parse(Some(&database), &gw_home)?)?.add_user("bench", Plan::Pro)?;
    let (gateway, base) =
        crate::bench_gateway::start_with_model(&bin, &gw_home, &database, Some(&model))?;
    let url = format!("{base}/mcp");

    let mut report = format!(
        "Gateway against local search, limit 10: {docs} SciFact abstracts and the cross-language set; model {}.\n\n| set | mode | questions | local nDCG@10 · MRR@10 | gateway nDCG@10 · MRR@10 | largest difference |\n|---|---|---|---|---|---|\n",
        model.display()
    );
    let mut worst: f64 = 0.0;
    for (mode, with_model) in [("keyword", false), ("hybrid", true)] {
        for set in &sets {
            // One data directory per folder: BM25's statistics are then the folder's own, as
            // the published library's are.
            let home = work.join(format!("home-{mode}-{}", set.name));
            let library = format!("{}-{mode}", set.name);
            let env_model = with_model.then_some(model.as_path());
            linkly(
                &bin,
                &home,
                env_model,
                &["index", &set.dir.to_string_lossy()],
            )?;
            linkly(
                &bin,
                &home,
                env_model,
                &["library", "add", &library, &set.dir.to_string_lossy()],
            )?;
            linkly(
                &bin,
                &home,
                None,
                &[
                    "publish",
                    &library,
                    "--gateway",
                    &base,
                    "--token",
                    &token,
                    "--visibility",
                    "private",
                ],
            )?;
            let cloud = format!("cloud://bench/{library}");
            let linked = crate::load::call_once(
                &url,
                Some(&token),
                "library_link",
                &json!({"library": cloud}),
            )?;
            if linked["isError"] == true {
                bail!("library_link {cloud}: {linked}");
            }
            let (mut local, mut remote) = (Scores::default(), Scores::default());
            for (question, relevant) in &set.questions {
                let args = json!({"query": question, "library": library, "limit": 10, "output_format": "json"});
                let here = linkly(
                    &bin,
                    &home,
                    env_model,
                    &["call", "search", &args.to_string()],
                )?;
                let here: Value =
                    serde_json::from_slice(&here.stdout).context("linkly call search")?;
                local.add(&stems(&here), relevant);
                let args = json!({"query": question, "library": cloud, "limit": 10, "output_format": "json"});
                let result = crate::load::call_once(&url, Some(&token), "search", &args)?;
                let text = result["content"][0]["text"].as_str().unwrap_or_default();
                if result["isError"] == true {
                    bail!("gateway search {question:?}: {text}");
                }
                let there: Value =
                    serde_json::from_str(text).context("the gateway's search answer")?;
                remote.add(&stems(&there), relevant);
            }
            let n = set.questions.len().max(1) as f64;
            let (l, r) = (local.mean(n), remote.mean(n));
            let diff = (l.ndcg - r.ndcg).abs().max((l.mrr - r.mrr).abs());
            worst = worst.max(diff);
            report.push_str(&format!(
                "| {} | {mode} | {} | {:.4} · {:.4} | {:.4} · {:.4} | {diff:.4} |\n",
                set.name,
                set.questions.len(),
                l.ndcg,
                l.mrr,
                r.ndcg,
                r.mrr
            ));
        }
    }
    drop(gateway);
    let (cpu, flags) = crate::bench_transcribe::cpu();
    report.push_str(&format!(
        "\nLargest difference {worst:.4} (aim: ≤ 0.01). CPU: {cpu} ({flags}).\n"
    ));
    println!("{report}");
    crate::bench::write_report("report-ranking.md", &report)
}

impl Scores {
    /// Adds one question: nDCG@10 (binary relevance) and the reciprocal rank of the first
    /// relevant answer within 10.
    fn add(&mut self, ranked: &[String], relevant: &[String]) {
        let hit = |id: &String| relevant.iter().any(|r| r == id);
        let dcg: f64 = ranked
            .iter()
            .take(10)
            .enumerate()
            .filter(|(_, id)| hit(id))
            .map(|(rank, _)| 1.0 / ((rank + 2) as f64).log2())
            .sum();
        let ideal: f64 = (0..relevant.len().min(10))
            .map(|i| 1.0 / ((i + 2) as f64).log2())
            .sum();
        if ideal > 0.0 {
            self.ndcg += dcg / ideal;
        }
        if let Some(rank) = ranked.iter().take(10).position(hit) {
            self.mrr += 1.0 / (rank + 1) as f64;
        }
    }

    fn mean(&self, n: f64) -> Scores {
        Scores {
            ndcg: self.ndcg / n,
            mrr: self.mrr / n,
        }
    }
}

/// The file names of a `search` JSON answer's results, in order (a SciFact file is
/// `<doc id>.txt`: its stem is the judged id; the cross-language set judges file names).
fn stems(answer: &Value) -> Vec<String> {
    answer["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["path"].as_str())
        .map(|p| {
            let name = p.rsplit('/').next().unwrap_or(p);
            match name.strip_suffix(".txt") {
                Some(stem) if name.bytes().take_while(u8::is_ascii_digit).count() == stem.len() => {
                    stem.to_string()
                }
                _ => name.to_string(),
            }
        })
        .collect()
}

/// The first `docs` SciFact abstracts by name, and the test queries judged inside them.
fn scifact_subset(work: &Path, docs: usize) -> anyhow::Result<Set> {
    let all = crate::corpus::scifact(&crate::target_dir().join("bench"))?;
    let mut names: Vec<PathBuf> = fs_err::read_dir(&all)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    names.sort();
    names.truncate(docs);
    let dir = work.join("scifact");
    fs_err::create_dir_all(&dir)?;
    for p in &names {
        fs_err::copy(p, dir.join(p.file_name().unwrap_or_default()))?;
    }
    let kept: std::collections::HashSet<String> = names
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    let (queries, qrels) = crate::corpus::scifact_queries()?;
    let questions = queries
        .into_iter()
        .filter_map(|(qid, text)| {
            let relevant: Vec<String> = qrels
                .get(&qid)?
                .iter()
                .filter(|d| kept.contains(*d))
                .cloned()
                .collect();
            (!relevant.is_empty()).then_some((text, relevant))
        })
        .collect();
    Ok(Set {
        name: "scifact",
        dir,
        questions,
    })
}

/// The cross-language set: `testdata/corpus`'s text formats and `testdata/eval/cross-language.tsv`.
fn cross_language(work: &Path) -> anyhow::Result<Set> {
    Ok(Set {
        name: "xlang",
        dir: crate::bench_fusion::cross_language_corpus(&work.join("xlang"))?,
        questions: crate::bench_fusion::cross_language_questions()?,
    })
}

/// `linkly --home HOME ARGS` with `model` as the model folder (none: keyword only).
fn linkly(bin: &Path, home: &Path, model: Option<&Path>, args: &[&str]) -> anyhow::Result<Output> {
    let mut cmd = Command::new(bin);
    cmd.env_remove("LINKLY_MODEL_DIR")
        .env_remove("LINKLY_LOG")
        .arg("--home")
        .arg(home)
        .args(args);
    if let Some(m) = model {
        cmd.env("LINKLY_MODEL_DIR", m);
    }
    crate::child::output(&mut cmd, &format!("linkly {args:?}"))
}
