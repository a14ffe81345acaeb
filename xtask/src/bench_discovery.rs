//! `cargo xtask bench discovery [--docs N]`: latency of `explore`, `find_paths` and `list`
//! pages (offset 0 and offset 90,000) on a generated index of N documents (default 100,000)
//! in nested folders, timed in-process through `linkly_tools::Linkly::call` (release build).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::bail;
use linkly_core::{Config, DataDir};
use linkly_index::Index;
use linkly_tools::Linkly;
use serde_json::{Value, json};

use crate::corpus::{self, dir_of};

/// Writes `docs` small Markdown files, 10 per directory, under `area*/project*/sub*/`.
fn generate(root: &Path, docs: usize) -> anyhow::Result<()> {
    corpus::write_tree(root, docs, 42, |dir, i, text| {
        Ok(fs_err::write(dir.join(format!("n{i}.md")), text)?)
    })
}

fn time(linkly: &Linkly, tool: &str, args: Value, runs: usize) -> (f64, f64, usize) {
    let mut ms = Vec::with_capacity(runs);
    let mut bytes = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let out = linkly.call(tool, args.clone()).expect("known tool");
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(!out.is_error, "{tool} {args}: {}", out.text);
        bytes = out.text.len();
    }
    ms.sort_by(f64::total_cmp);
    (ms[ms.len() / 2], ms[0], bytes)
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let docs = crate::arg(args, "--docs")
        .map(|s| s.parse::<usize>())
        .transpose()?
        .unwrap_or(100_000);
    if docs < 1000 {
        bail!("--docs must be at least 1000");
    }
    let work = crate::target_dir().join(format!("bench-discovery-{docs}"));
    let root = work.join("docs");
    let data = DataDir::new(work.join("home"));
    if !dir_of(&root, docs - 1)
        .join(format!("n{}.md", docs - 1))
        .exists()
    {
        let _ = fs_err::remove_dir_all(&work);
        eprintln!("bench: writing {docs} files under {}", root.display());
        generate(&root, docs)?;
    }
    let mut config = Config::default();
    config.add_folder(&root)?;
    let index = Index::open(&data.index_dir())?;
    crate::bench::sync_timed(&index, &config.folders)?;
    let n = index.doc_count()?;
    let root_s = fs_err::canonicalize(&root)?.to_string_lossy().into_owned();
    config.add_library("area3", "", &[root.join("area03")], &[])?;
    let linkly = Linkly::new(Arc::new(index), data, config);

    let cases: Vec<(&str, &str, Value)> = vec![
        ("explore (markdown)", "explore", json!({})),
        (
            "explore (json)",
            "explore",
            json!({"output_format": "json"}),
        ),
        (
            "explore library (5% of docs)",
            "explore",
            json!({"library": "area3"}),
        ),
        (
            "find_paths [project01] (1,000+ folders match)",
            "find_paths",
            json!({"patterns": ["project01"]}),
        ),
        (
            "find_paths [zzz] (nothing)",
            "find_paths",
            json!({"patterns": ["zzz"]}),
        ),
        (
            "list folder recent, offset 0",
            "list",
            json!({"scope": "folder", "limit": 50}),
        ),
        (
            "list folder recent, offset 90,000",
            "list",
            json!({"scope": "folder", "limit": 50, "offset": 90_000}),
        ),
        (
            "list folder name, offset 0",
            "list",
            json!({"scope": "folder", "sort": "name", "limit": 50}),
        ),
        (
            "list folder name, offset 90,000",
            "list",
            json!({"scope": "folder", "sort": "name", "limit": 50, "offset": 90_000}),
        ),
        (
            "list path=area07 oldest, offset 4,000, snippets",
            "list",
            json!({"scope": "folder", "path": format!("{root_s}/area07"), "sort": "oldest", "limit": 50, "offset": 4_000, "snippet": true}),
        ),
        (
            "list folder type md + time bound, offset 90,000",
            "list",
            json!({"scope": "folder", "doc_types": ["md"], "modified_after": "2000-01-01", "limit": 200, "offset": 90_000}),
        ),
    ];
    println!(
        "Discovery on {n} documents (release, in-process Linkly::call; median and best of 5)\n"
    );
    println!("| call | median ms | best ms | response bytes |\n|---|---|---|---|");
    for (label, tool, args) in cases {
        let (median, best, bytes) = time(&linkly, tool, args, 5);
        println!("| {label} | {median:.1} | {best:.1} | {bytes} |");
    }
    Ok(())
}
