//! `cargo xtask bench fusion [--model DIR] [--dataset DIR]`: how the hybrid search's two arms
//! are best fused, on two sets that pull different ways (release build).
//!
//! - SciFact (English claims, BEIR judgements): nDCG@10 and Recall@100, on the index `bench
//!   beir` left for the same model and dataset (run it first).
//! - The cross-language set (`testdata/eval/cross-language.tsv`: English questions whose answer
//!   is only in a French, Spanish, Chinese, Japanese or Czech document of `testdata/corpus`):
//!   hit@5 and MRR@10, on an index of the corpus' text folders made here once per model.
//!
//! Each fusion of [`Fusion`] is scored on both, with BM25 and vectors alone beside them, so a
//! default that helps one set and hurts the other shows.

use std::path::{Path, PathBuf};

use anyhow::bail;
use linkly_index::{Arms, DocFilter, Fusion, HybridOptions, Index, SyncOptions};

use crate::bench_beir::{Dataset, quality, stems_of, work_dir};

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let choice = crate::bench_model(args)?;
    let dataset = crate::arg(args, "--dataset")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::shared_dir().join("ir/scifact"));
    let scifact_home = work_dir(&dataset, &choice).join("home");
    let scifact = if scifact_home.join("index").is_dir() {
        let index = Index::open(&scifact_home.join("index"))?;
        index.attach_model(&choice)?;
        let pending = index.embed_pending(&mut |_| {})?;
        if pending.docs > 0 {
            bail!(
                "the index at {} was not fully embedded: run `cargo xtask bench beir --model {}` first",
                scifact_home.display(),
                choice.dir.display()
            );
        }
        let stems = stems_of(&index)?;
        Some((index, Dataset::read(&dataset)?, stems))
    } else {
        eprintln!(
            "bench: no SciFact index for this model at {} (run `cargo xtask bench beir --model {}`); the cross-language set only",
            scifact_home.display(),
            choice.dir.display()
        );
        None
    };
    let xlang = cross_language_index(&choice)?;
    let questions = cross_language_questions()?;

    let mut rows: Vec<(String, Arms, Fusion)> = vec![
        ("BM25 alone".into(), Arms::Lexical, Fusion::DEFAULT),
        ("vectors alone".into(), Arms::Vector, Fusion::DEFAULT),
    ];
    for k in [10.0, 30.0, 60.0] {
        for w in [1.0, 2.0] {
            rows.push((
                format!("reciprocal rank, k={k}, vector weight {w}"),
                Arms::Both,
                Fusion::Rank {
                    k,
                    vector_weight: w,
                },
            ));
        }
    }
    for w in [0.3, 0.4, 0.5, 0.6, 0.7] {
        rows.push((
            format!("scores (min-max), vector weight {w}"),
            Arms::Both,
            Fusion::Score { vector_weight: w },
        ));
    }
    println!(
        "Model: {} ({}); default fusion: {:?}\n\n| fusion | SciFact nDCG@10 · Recall@100 | cross-language hit@5 · MRR@10 |\n|---|---|---|",
        choice.name,
        choice.dir.display(),
        Fusion::DEFAULT
    );
    for (label, arms, fusion) in rows {
        let sci = match &scifact {
            Some((index, data, stems)) => {
                let (ndcg, recall) = quality(index, data, stems, arms, fusion)?;
                format!("{ndcg:.4} · {recall:.4}")
            }
            None => "–".into(),
        };
        let (hit, mrr) = cross_language(&xlang, &questions, arms, fusion)?;
        println!("| {label} | {sci} | {hit:.3} · {mrr:.3} |");
    }
    Ok(())
}

/// The corpus' text folders (md, txt, csv, html: no OCR, no long PDFs), indexed and embedded
/// with the model once under `target/bench/fusion-<model>`.
fn cross_language_index(choice: &linkly_index::vector::ModelChoice) -> anyhow::Result<Index> {
    let work = crate::target_dir()
        .join("bench")
        .join(format!("fusion-{}", choice.name));
    let docs = cross_language_corpus(&work.join("docs"))?;
    let index = Index::open(&work.join("index"))?;
    index.sync(
        &SyncOptions {
            roots: vec![docs],
            ..SyncOptions::default()
        },
        &mut |_| {},
    )?;
    index.attach_model(choice)?;
    index.embed_pending(&mut |_| {})?;
    Ok(index)
}

/// The cross-language set's pages (`testdata/corpus`'s text formats) copied into `docs`, once.
pub(crate) fn cross_language_corpus(docs: &Path) -> anyhow::Result<PathBuf> {
    for sub in ["md", "txt", "csv", "html"] {
        let from = crate::root().join("testdata/corpus").join(sub);
        let to = docs.join(sub);
        fs_err::create_dir_all(&to)?;
        for e in fs_err::read_dir(&from)? {
            let p = e?.path();
            let target = to.join(p.file_name().unwrap_or_default());
            if p.is_file() && !target.exists() {
                fs_err::copy(&p, target)?;
            }
        }
    }
    Ok(docs.to_path_buf())
}

/// `testdata/eval/cross-language.tsv`: (question, the files that answer it).
pub(crate) fn cross_language_questions() -> anyhow::Result<Vec<(String, Vec<String>)>> {
    let path = crate::root().join("testdata/eval/cross-language.tsv");
    let mut out = Vec::new();
    for line in fs_err::read_to_string(&path)?.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let Some((q, files)) = line.split_once('\t') else {
            bail!("{}: a line without a tab: {line}", path.display());
        };
        out.push((
            q.to_string(),
            files.split(',').map(|f| f.trim().to_string()).collect(),
        ));
    }
    Ok(out)
}

/// Hit@5 and MRR@10 over the cross-language questions.
fn cross_language(
    index: &Index,
    questions: &[(String, Vec<String>)],
    arms: Arms,
    fusion: Fusion,
) -> anyhow::Result<(f64, f64)> {
    let opts = HybridOptions {
        arms,
        fusion,
        ..HybridOptions::default()
    };
    let (mut hits, mut rr) = (0usize, 0f64);
    for (q, want) in questions {
        let out = index.hybrid_search(q, 10, &DocFilter::default(), &opts)?;
        let mut rank = None;
        for (i, h) in out.hits.iter().enumerate() {
            let Some(doc) = index.doc(h.id)? else {
                continue;
            };
            if want.iter().any(|w| w == doc.file_name()) {
                rank = Some(i);
                break;
            }
        }
        if rank.is_some_and(|r| r < 5) {
            hits += 1;
        }
        if let Some(r) = rank {
            rr += 1.0 / (r + 1) as f64;
        }
    }
    let n = questions.len().max(1) as f64;
    Ok((hits as f64 / n, rr / n))
}
