//! `cargo xtask bench filter [--docs N] [--runs R] [--cli-runs C]`: latency of filtered
//! `search` calls on a generated index of N documents (default 100,000): no filter, a path
//! glob, a type, a library, a modification window and all of them at once, timed in-process
//! through `linkly_tools::Linkly::call` (R queries each, default 200) and per call of the
//! release `linkly` binary (C queries each, default 20). Keyword mode (no embedding model).
//!
//! The corpus and its index are kept in `target/bench-filter-N` and reused, so two builds (the
//! code before and after a change) time the same index one after the other.

use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::bail;
use linkly_core::{Config, DataDir};
use linkly_index::Index;
use linkly_tools::Linkly;
use serde_json::{Value, json};

use crate::corpus::{self, dir_of, generated_queries};

/// The first file's modification time (2020-01-01T00:00:00Z); file `i` is `i` quarter-hours
/// later, so 100,000 files span 2020-01-01 to 2022-11-06.
const FIRST_MODIFIED: u64 = 1_577_836_800;
const STEP_SECS: u64 = 900;

/// The file name of generated file `i`: every fourth a `.txt`, the others `.md`.
fn name_of(i: usize) -> String {
    if i.is_multiple_of(4) {
        format!("n{i}.txt")
    } else {
        format!("n{i}.md")
    }
}

/// Writes `docs` small files, 10 per directory, each modified a quarter-hour after the last.
fn generate(root: &Path, docs: usize) -> anyhow::Result<()> {
    corpus::write_tree(root, docs, 7, |dir, i, text| {
        let path = dir.join(name_of(i));
        fs_err::write(&path, text)?;
        let modified =
            SystemTime::UNIX_EPOCH + Duration::from_secs(FIRST_MODIFIED + i as u64 * STEP_SECS);
        fs_err::File::options()
            .write(true)
            .open(&path)?
            .set_modified(modified)?;
        Ok(())
    })
}

/// One filtered search: its label, the tool's arguments beside the query and the same as
/// CLI flags.
struct Case {
    label: &'static str,
    args: Value,
    flags: Vec<String>,
}

fn cases(root: &str) -> Vec<Case> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        Case {
            label: "no filter",
            args: json!({}),
            flags: Vec::new(),
        },
        Case {
            label: "path_glob `sub3/` (10%)",
            args: json!({"path_glob": "sub3/"}),
            flags: s(&["--path-glob", "sub3/"]),
        },
        Case {
            label: "path_glob on a directory (5%)",
            args: json!({"path_glob": format!("{root}/area07/")}),
            flags: vec!["--path-glob".into(), format!("{root}/area07/")],
        },
        Case {
            label: "doc_types [txt] (25%)",
            args: json!({"doc_types": ["txt"]}),
            flags: s(&["--type", "txt"]),
        },
        Case {
            label: "library area3 (5%)",
            args: json!({"library": "area3"}),
            flags: s(&["--library", "area3"]),
        },
        Case {
            label: "modified 2021-01-01..2021-03-31 (9%)",
            args: json!({"modified_after": "2021-01-01", "modified_before": "2021-03-31"}),
            flags: s(&[
                "--modified-after",
                "2021-01-01",
                "--modified-before",
                "2021-03-31",
            ]),
        },
        Case {
            label: "all four (library, glob, type, window)",
            args: json!({"library": "area3", "path_glob": "sub3/", "doc_types": ["md"],
                "modified_after": "2020-01-01", "modified_before": "2021-12-31"}),
            flags: s(&[
                "--library",
                "area3",
                "--path-glob",
                "sub3/",
                "--type",
                "md",
                "--modified-after",
                "2020-01-01",
                "--modified-before",
                "2021-12-31",
            ]),
        },
    ]
}

fn in_process(linkly: &Linkly, case: &Case, queries: &[String]) -> anyhow::Result<(f64, f64)> {
    let call = |q: &str| -> anyhow::Result<()> {
        let mut args = case.args.clone();
        args["query"] = json!(q);
        args["limit"] = json!(10);
        args["output_format"] = json!("json");
        let out = linkly.call("search", args)?;
        if out.is_error {
            bail!("search failed: {}", out.text);
        }
        Ok(())
    };
    crate::bench::latency(queries, call)
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let number = |name: &str, default: usize| -> anyhow::Result<usize> {
        Ok(crate::arg(args, name)
            .map(|s| s.parse::<usize>())
            .transpose()?
            .unwrap_or(default))
    };
    let docs = number("--docs", 100_000)?;
    let runs = number("--runs", 200)?.max(1);
    let cli_runs = number("--cli-runs", 20)?;
    if docs < 1000 {
        bail!("--docs must be at least 1000");
    }
    let bin = crate::bench::build_cli()?;
    let work = crate::target_dir().join(format!("bench-filter-{docs}"));
    let root = work.join("docs");
    let home = work.join("home");
    let data = DataDir::new(&home);
    let last = dir_of(&root, docs - 1).join(name_of(docs - 1));
    if !last.exists() {
        let _ = fs_err::remove_dir_all(&work);
        eprintln!("bench: writing {docs} files under {}", root.display());
        generate(&root, docs)?;
    }
    if !data.index_dir().exists() {
        let mut config = Config::default();
        config.add_folder(&root)?;
        config.add_library("area3", "", &[root.join("area03")], &[])?;
        config.save(&data)?;
        let index = Index::open(&data.index_dir())?;
        crate::bench::sync_timed(&index, &config.folders)?;
    }
    let linkly = Linkly::open(data.clone()).map_err(|e| anyhow::anyhow!(e.message))?;
    let n = linkly.index().doc_count()?;
    let root_s = fs_err::canonicalize(&root)?.to_string_lossy().into_owned();
    let queries = generated_queries(runs);
    println!(
        "Filtered search on {n} documents (release, keyword mode, limit 10): in-process \
         Linkly::call over {runs} queries, and per `linkly search` call over {cli_runs}\n"
    );
    println!(
        "| filter | in-process p50 ms | p99 ms | CLI p50 ms | p99 ms |\n|---|---|---|---|---|"
    );
    for case in cases(&root_s) {
        let (p50, p99) = in_process(&linkly, &case, &queries)?;
        let cli = if cli_runs > 0 {
            let (c50, c99) =
                crate::bench::search_cli(&bin, &home, &queries[..cli_runs.min(runs)], &case.flags)?;
            format!("{c50:.1} | {c99:.1}")
        } else {
            "– | –".to_string()
        };
        println!("| {} | {p50:.2} | {p99:.2} | {cli} |", case.label);
    }
    Ok(())
}
