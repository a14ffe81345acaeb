//! `cargo xtask bench serve`: the daemon under load.
//!
//! Indexes the generated corpus with a release `linkly serve`, then drives it with K concurrent
//! MCP clients over HTTP calling search and read — the lean Rust client of `load.rs`, then the
//! official Python SDK's load mode in `mcp-probe`, each with the CPU time client and server
//! spent — measures the time from a file save to the change being searchable, and reads the
//! daemon's resident memory.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::bench::{build_cli, percentiles};
use crate::corpus;

/// Polls `linkly search WORD` (keyword mode, data directory `home`) every `poll` until it
/// finds one document; an error saying `what` was not searchable after 30 s.
pub(crate) fn wait_searchable(
    bin: &Path,
    home: &Path,
    word: &str,
    poll: Duration,
    what: &str,
) -> anyhow::Result<()> {
    let t = Instant::now();
    loop {
        let out = keyword_only(bin)
            .args(["--json", "--home"])
            .arg(home)
            .args(["search", word])
            .output()?;
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if v["total"].as_u64() == Some(1) {
            return Ok(());
        }
        if t.elapsed() > Duration::from_secs(30) {
            bail!("{what} was not searchable after 30 s");
        }
        std::thread::sleep(poll);
    }
}

/// A `linkly` command that sees no test model: the daemon's figures are those of keyword search
/// over the generated corpus, whatever `LINKLY_MODEL_DIR` the bench was started with (with a
/// model, the daemon would embed the whole corpus while it is measured).
pub(crate) fn keyword_only(bin: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env_remove("LINKLY_MODEL_DIR");
    cmd
}

pub(crate) struct Daemon(pub(crate) Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
    }
}

pub(crate) fn status(bin: &Path, home: &Path) -> Value {
    keyword_only(bin)
        .args(["--json", "--home"])
        .arg(home)
        .arg("status")
        .output()
        .ok()
        .and_then(|o| serde_json::from_slice(&o.stdout).ok())
        .unwrap_or(Value::Null)
}

pub(crate) fn proc_kb(pid: u32, key: &str) -> u64 {
    fs_err::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// One run of the Python SDK's load mode: its report, and the CPU seconds the client process
/// spent (the setup check before it excluded).
fn load(
    url: &str,
    k: usize,
    repeat: usize,
    tool: &str,
    args: &Value,
) -> anyhow::Result<(Value, f64)> {
    let harness = crate::harness::probe_setup()?;
    let report = std::env::temp_dir().join(format!("linkly-load-{k}-{tool}.json"));
    let client0 = crate::load::children_cpu_seconds().unwrap_or(0.0);
    let out = Command::new(harness.join("venv/bin/python"))
        .arg(crate::shared_dir().join("tools/mcp-probe/probe.py"))
        .args(["--http", url, "--concurrency", &k.to_string()])
        .args(["--repeat", &repeat.to_string(), "--tool", tool])
        .args([
            "--args",
            &args.to_string(),
            "--max-seconds",
            "300",
            "--json-report",
        ])
        .arg(&report)
        .output()?;
    let client = crate::load::children_cpu_seconds().unwrap_or(0.0) - client0;
    if !report.exists() {
        bail!(
            "load run failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok((
        serde_json::from_str(&fs_err::read_to_string(&report)?)?,
        client,
    ))
}

pub(crate) fn run(docs: usize) -> anyhow::Result<String> {
    let bin = build_cli()?;
    let work = crate::target_dir().join("bench");
    let corpus = corpus::generated(&work, docs)?;
    let home = work.join("home-serve");
    let _ = fs_err::remove_dir_all(&home);
    let watched = work.join("serve-live");
    let _ = fs_err::remove_dir_all(&watched);
    fs_err::create_dir_all(&watched)?;
    let port = 61606u16;
    let (daemon, ready, st, url) = start_watching(&bin, &home, port, &[&corpus, &watched])?;
    let pid = daemon.0.id();
    let rss = proc_kb(pid, "VmRSS:");
    let hwm = proc_kb(pid, "VmHWM:");
    let mut report = String::from("| serve | step | figure |\n|---|---|---|\n");
    report.push_str(&format!(
        "| serve | index {} docs then watch | ready in {:.1} s; RSS {:.0} MB (peak {:.0} MB) |\n",
        st["doc_count"],
        ready.as_secs_f64(),
        rss as f64 / 1024.0,
        hwm as f64 / 1024.0
    ));

    // A document id for read.
    let out = keyword_only(&bin)
        .args(["--json", "--home"])
        .arg(&home)
        .args(["search", "section", "--limit", "1"])
        .output()?;
    let v: Value = serde_json::from_slice(&out.stdout)?;
    let doc_id = v["results"][0]["doc_id"]
        .as_str()
        .context("no document")?
        .to_string();
    let queries = corpus::generated_queries(1);
    let cpu = |pid: &str| crate::load::cpu_seconds(pid).unwrap_or(0.0);
    for k in [1usize, 4, 16] {
        for (tool, args) in [
            ("search", json!({"query": queries[0], "limit": 10})),
            ("read", json!({"doc_id": doc_id, "offset": 1, "limit": 50})),
        ] {
            // The lean Rust client first: it measures the server.
            let calls = (1600 / k).max(100);
            let r = crate::load::run(&url, k, calls, tool, &args, Some(pid), None)?;
            report.push_str(&format!(
                "| serve | Rust client (`bench load`): {} |\n",
                crate::load::row(k, calls, tool, &r)
                    .trim_matches('|')
                    .trim()
            ));
            // Then the Python SDK's load mode, whose client costs more CPU than the server.
            let repeat = (400 / k).max(25);
            let server0 = cpu(&pid.to_string());
            let (r, client) = load(&url, k, repeat, tool, &args)?;
            let server = cpu(&pid.to_string()) - server0;
            let wall = r["wall_s"].as_f64().unwrap_or(1.0);
            report.push_str(&format!(
                "| serve | Python SDK client: {k} client(s) × {repeat} {tool} | {:.0} calls/s, p50 {:.1} ms, p99 {:.1} ms, errors {}; CPU: server {:.2} s, client {:.2} s |\n",
                r["calls"].as_f64().unwrap_or(0.0) / wall,
                r["p50"].as_f64().unwrap_or(0.0),
                r["p99"].as_f64().unwrap_or(0.0),
                r["errors"].as_object().map_or(0, |e| e
                    .iter()
                    .filter(|(k, _)| k.as_str() != "deadline")
                    .map(|(_, v)| v.as_u64().unwrap_or(0))
                    .sum::<u64>()),
                server,
                client,
            ));
        }
    }

    // Save → searchable.
    let mut ms = Vec::new();
    for i in 0..20 {
        let word = format!("freshword{i}x{}", std::process::id());
        let t = Instant::now();
        fs_err::write(
            watched.join(format!("live-{i}.md")),
            format!("# Live\n\n{word}\n"),
        )?;
        wait_searchable(
            &bin,
            &home,
            &word,
            Duration::from_millis(25),
            "a saved file",
        )?;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let (p50, _) = percentiles(ms.clone());
    ms.sort_by(|a, b| a.total_cmp(b));
    let p95 = ms[((0.95 * (ms.len() - 1) as f64).round()) as usize];
    report.push_str(&format!(
        "| serve | file save → searchable (20 saves) | p50 {p50:.0} ms, p95 {p95:.0} ms |\n"
    ));
    report.push_str(&format!(
        "| serve | daemon RSS after the load and the saves | {:.0} MB |\n",
        proc_kb(pid, "VmRSS:") as f64 / 1024.0
    ));

    // A restart on an up-to-date index: how long until it watches again.
    drop(daemon);
    let (daemon, ready) = start(&bin, &home, port, &[])?;
    report.push_str(&format!(
        "| serve | restart on the up-to-date index until `watching` | {:.2} s; RSS {:.0} MB |\n",
        ready.as_secs_f64(),
        proc_kb(daemon.0.id(), "VmRSS:") as f64 / 1024.0
    ));
    drop(daemon);

    // A lost full-text index, rebuilt from the store (no file extracted again).
    fs_err::remove_dir_all(home.join("index/lexical-2"))?;
    let t = Instant::now();
    crate::child::output(
        keyword_only(&bin)
            .arg("--home")
            .arg(&home)
            .args(["index", "--rebuild"]),
        "index --rebuild",
    )?;
    report.push_str(&format!(
        "| serve | lost full-text index: `linkly index --rebuild` ({} docs) | {:.1} s |\n",
        st["doc_count"],
        t.elapsed().as_secs_f64()
    ));
    Ok(report)
}

/// Starts `linkly serve` (adding `folders`) and waits until `/health` says `watching`.
/// Starts the daemon ([`start`]); once it watches, its status and its MCP endpoint too.
pub(crate) fn start_watching(
    bin: &Path,
    home: &Path,
    port: u16,
    folders: &[&Path],
) -> anyhow::Result<(Daemon, Duration, Value, String)> {
    let (daemon, ready) = start(bin, home, port, folders)?;
    let status = status(bin, home);
    let url = status["mcp_endpoint"]
        .as_str()
        .context("the daemon's status names no MCP endpoint")?
        .to_string();
    Ok((daemon, ready, status, url))
}

pub(crate) fn start(
    bin: &Path,
    home: &Path,
    port: u16,
    folders: &[&Path],
) -> anyhow::Result<(Daemon, Duration)> {
    let started = Instant::now();
    let child = keyword_only(bin)
        .arg("--home")
        .arg(home)
        .args(["serve", "--no-model-download", "--port", &port.to_string()])
        .args(folders)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let daemon = Daemon(child);
    while status(bin, home)["index_status"] != "watching" {
        if started.elapsed() > Duration::from_secs(600) {
            bail!("the daemon did not finish indexing in 10 minutes");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok((daemon, started.elapsed()))
}
