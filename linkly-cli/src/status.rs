//! `linkly status` and `linkly doctor`.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use linkly_core::DataDir;
use linkly_http::IndexStatus;
use linkly_index::vector::{ModelChoice, ModelManager};
use linkly_index::{Index, ModelStatus};
use serde_json::{Value, json};

use crate::backend::{connection, runtime, server_target};
use crate::health::{Target, describe, read_port_file_full};
use crate::output::Printer;

fn index_label(status: IndexStatus) -> &'static str {
    match status {
        IndexStatus::Watching => "Up to date (watching)",
        IndexStatus::Scanning => "Scanning...",
        IndexStatus::Indexing => "Indexing...",
        IndexStatus::Idle => "Idle",
        IndexStatus::Rebuilding => "Rebuilding the full-text index from the store...",
        IndexStatus::Error => "Error",
    }
}

/// `doctor --fix`: rebuilds the full-text index from the store when the two disagree, then
/// finishes any interrupted sync.
fn repair(data: &DataDir, index: &Index) -> anyhow::Result<String> {
    let mut done = Vec::new();
    if !index.lexical_consistent()? {
        let n = index.rebuild_lexical(&mut |_| {})?;
        done.push(format!(
            "rebuilt the full-text index from the store: {n} documents"
        ));
    }
    if index.health()?.dirty > 0 {
        let config = linkly_core::Config::load(data)?;
        let mut opts = linkly_tools::sync_options(&config, data);
        opts.sandbox = linkly_tools::sandbox_for(&config);
        index.sync(&opts, &mut |_| {})?;
        done.push("finished the interrupted sync".into());
    }
    Ok(if done.is_empty() {
        "nothing to repair".into()
    } else {
        done.join("; ")
    })
}

/// `1234` → `1,234`; a million and more → `1.2M`.
fn count(n: u64) -> String {
    if n >= 1_000_000 {
        return format!("{:.1}M", n as f64 / 1e6);
    }
    linkly_core::stdx::thousands(n)
}

pub(crate) fn status(data: &DataDir, printer: Printer) -> anyhow::Result<ExitCode> {
    let config = linkly_core::Config::load(data)?;
    let cli_version = env!("CARGO_PKG_VERSION");
    let target = server_target(data)?;
    let health = target
        .as_ref()
        .map(|t| t.health_json(Duration::from_secs(5)));
    let remote = connection().endpoint.is_some();
    // Without a server, report the embedded index.
    let embedded = if target.is_none() {
        Index::open(&data.index_dir()).ok().map(|i| {
            let linkly =
                linkly_tools::Linkly::new(std::sync::Arc::new(i), data.clone(), config.clone());
            linkly.index().attach_selected_model(data.root());
            linkly
        })
    } else {
        None
    };
    let embedded_docs = embedded.as_ref().and_then(|l| l.index().doc_count().ok());
    let embedded_coverage = embedded.as_ref().and_then(|l| l.coverage().ok());
    if printer.json {
        let mut v = json!({
            "status": "success",
            "cli_version": cli_version,
            "data_dir": data.root(),
            "folders": config.folders,
        });
        match (&target, &health) {
            (Some(t), Some(Ok(h))) => {
                v["server"] = json!("running");
                v["app_version"] = json!(h.version);
                v["mcp_endpoint"] = json!(h.mcp_endpoint);
                v["doc_count"] = json!(h.doc_count);
                v["index_status"] = json!(h.index_status);
                v["coverage"] = json!(h.coverage);
                v["base"] = json!(t.base);
                // Which process, since when, started by whom, with which options.
                v["process"] = json!(h.server);
            }
            (Some(_), Some(Err(e))) => {
                v["status"] = json!("error");
                v["server"] = json!("unreachable");
                v["message"] = json!(e.to_string());
            }
            _ => {
                v["server"] = json!("not running");
                v["doc_count"] = json!(embedded_docs);
                v["index_status"] = json!("idle");
                v["coverage"] = json!(embedded_coverage);
            }
        }
        if let Some(t) = &config.lan_token {
            v["lan_token"] = json!(t);
        }
        println!("{v}");
        return Ok(ExitCode::from(u8::from(v["status"] == "error")));
    }
    println!("Linkly Status");
    println!("  CLI:    v{cli_version}");
    println!("  Data:   {}", data.root().display());
    println!(
        "  Folders: {}",
        if config.folders.is_empty() {
            "none (add one with `linkly folders add <path>`)".to_string()
        } else {
            config
                .folders
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    match (&target, health) {
        (Some(_), Some(Ok(h))) => {
            println!("  Server: v{}", h.version);
            if let Some(info) = &h.server {
                println!("  Process: {}", describe(info));
            }
            println!("  MCP:    {}", h.mcp_endpoint);
            println!("  Docs:   {} indexed", count(h.doc_count));
            println!("  Index:  {}", index_label(h.index_status));
            if let Some(c) = &h.coverage {
                println!("  Fresh:  {}", c.one_line());
            }
        }
        (Some(t), Some(Err(e))) => {
            eprintln!("  Server: unreachable at {} ({e})", t.base);
            return Ok(ExitCode::FAILURE);
        }
        _ => {
            println!(
                "  Server: not running{}",
                if remote {
                    ""
                } else {
                    " (tool commands run embedded; start one with `linkly serve`)"
                }
            );
            println!("  Docs:   {} indexed", count(embedded_docs.unwrap_or(0)));
            if let Some(c) = &embedded_coverage {
                println!("  Fresh:  {}", c.one_line());
            }
        }
    }
    if let Some(t) = &config.lan_token {
        println!("  LAN token: {t}");
    }
    Ok(ExitCode::SUCCESS)
}

struct Check {
    name: &'static str,
    ok: bool,
    /// Works, but not fully (e.g. search is keyword-only): shown with advice, not an issue.
    warn: bool,
    detail: String,
    latency_ms: Option<u64>,
    advice: Option<String>,
}

impl Check {
    fn ok(name: &'static str, detail: impl Into<String>) -> Check {
        Check {
            name,
            ok: true,
            warn: false,
            detail: detail.into(),
            latency_ms: None,
            advice: None,
        }
    }
    fn warn(name: &'static str, detail: impl Into<String>, advice: impl Into<String>) -> Check {
        Check {
            name,
            ok: true,
            warn: true,
            detail: detail.into(),
            latency_ms: None,
            advice: Some(advice.into()),
        }
    }
    fn fail(name: &'static str, detail: impl Into<String>, advice: impl Into<String>) -> Check {
        Check {
            name,
            ok: false,
            warn: false,
            detail: detail.into(),
            latency_ms: None,
            advice: Some(advice.into()),
        }
    }
}

fn server_checks(target: &Target, checks: &mut Vec<Check>) -> bool {
    let started = Instant::now();
    match target.health(Duration::from_secs(5)) {
        Ok((200..=299, body, _)) => {
            let mut c = Check::ok("Server", format!("{} answers /health", target.base));
            c.latency_ms = Some(started.elapsed().as_millis() as u64);
            checks.push(c);
            if target.token.is_some() {
                checks.push(Check::ok("Auth", "bearer token accepted"));
            }
            let h: Value = serde_json::from_str(&body).unwrap_or_default();
            checks.push(Check::ok(
                "App",
                format!(
                    "v{}, {} docs, index: {}",
                    h["version"].as_str().unwrap_or("?"),
                    h["doc_count"],
                    h["index_status"].as_str().unwrap_or("?")
                ),
            ));
            true
        }
        Ok((401, body, _)) => {
            checks.push(Check::ok("Server", format!("{} is up", target.base)));
            checks.push(Check::fail(
                "Auth",
                format!("401: {}", body.trim()),
                "pass the server's LAN token with --token (shown by `linkly status` on that machine)",
            ));
            false
        }
        Ok((code, body, _)) => {
            checks.push(Check::fail(
                "Server",
                format!("HTTP {code}: {}", body.trim()),
                "is another program using this port? check the port file and restart `linkly serve`",
            ));
            false
        }
        Err(e) => {
            checks.push(Check::fail(
                "Server",
                format!("cannot connect to {}: {e}", target.base),
                "start it with `linkly serve` (or check --endpoint and that LAN access is on there)",
            ));
            false
        }
    }
}

pub(crate) fn doctor(data: &DataDir, fix: bool, printer: Printer) -> anyhow::Result<ExitCode> {
    let conn = connection();
    let mut checks = Vec::new();
    let mut target = None;
    let mode = if conn.endpoint.is_some() {
        "lan"
    } else {
        "local"
    };
    if let Some(endpoint) = &conn.endpoint {
        match Target::parse(endpoint, conn.token.clone()) {
            Ok(t) => target = Some(t),
            Err(e) => checks.push(Check::fail("Connection", e.to_string(), "fix --endpoint")),
        }
    } else {
        match read_port_file_full(&data.port_file()) {
            Ok(Some(file)) => {
                checks.push(Check::ok(
                    "Port file",
                    format!("{} → {}", data.port_file().display(), file.port),
                ));
                target = Some(Target::of_port_file(&file));
            }
            Ok(None) => checks.push(Check::fail(
                "Port file",
                format!(
                    "{} is missing: no server is running",
                    data.port_file().display()
                ),
                "start the server with `linkly serve` (tool commands still work embedded)",
            )),
            Err(e) => checks.push(Check::fail(
                "Port file",
                e.to_string(),
                "remove the port file and restart `linkly serve`",
            )),
        }
    }
    let mut server_ok = false;
    if let Some(t) = &target {
        server_ok = server_checks(t, &mut checks);
    }
    // The index (local mode only: it lives in this data directory).
    if conn.endpoint.is_none() {
        let index = Index::open(&data.index_dir());
        let mut repaired = None;
        if fix && let Ok(i) = &index {
            repaired = Some(repair(data, i));
        }
        match index.as_ref().map_err(|e| e.to_string()).and_then(|i| i.health().map_err(|e| e.to_string())) {
            Ok(h) if h.stored == h.lexical && h.dirty == 0 => checks.push(Check::ok(
                "Index",
                match repaired {
                    Some(Ok(what)) => format!("{} documents, store and full-text index agree ({what})", h.stored),
                    _ => format!("{} documents, store and full-text index agree", h.stored),
                },
            )),
            Ok(h) => checks.push(Check::fail(
                "Index",
                format!(
                    "{} stored, {} in the full-text index, {} unfinished{}",
                    h.stored,
                    h.lexical,
                    h.dirty,
                    match &repaired {
                        Some(Err(e)) => format!("; repair failed: {e}"),
                        _ => String::new(),
                    }
                ),
                "run `linkly doctor --fix` (rebuilds the full-text index from the store and finishes the interrupted sync) or `linkly index`; a running server repairs it when it restarts",
            )),
            Err(e) => checks.push(Check::fail(
                "Index",
                e,
                format!("remove {} and run `linkly index` to rebuild it", data.index_dir().display()),
            )),
        }
        model_checks(data, index.ok().as_ref(), &mut checks);
    }
    if let (Some(t), true) = (&target, server_ok) {
        let started = Instant::now();
        let listed = runtime().and_then(|rt| {
            rt.block_on(async {
                tokio::time::timeout(Duration::from_secs(10), async {
                    let c =
                        linkly_mcp::RemoteClient::connect(&t.mcp_url(), t.token.as_deref()).await?;
                    let names = c.tool_names().await?;
                    c.close().await;
                    Ok::<_, linkly_mcp::RemoteError>(names)
                })
                .await
                .map_err(|_| anyhow::anyhow!("timed out after 10 s"))?
                .map_err(anyhow::Error::from)
            })
        });
        match listed {
            Ok(names) => {
                let mut c = Check::ok(
                    "MCP",
                    format!("{} tools: {}", names.len(), names.join(", ")),
                );
                c.latency_ms = Some(started.elapsed().as_millis() as u64);
                checks.push(c);
            }
            Err(e) => checks.push(Check::fail(
                "MCP",
                e.to_string(),
                "the server answers /health but not MCP: restart `linkly serve`",
            )),
        }
    }
    let issues = checks.iter().filter(|c| !c.ok).count();
    let warnings = checks.iter().filter(|c| c.warn).count();
    if printer.json {
        let v = json!({
            "status": if issues == 0 { "ok" } else { "error" },
            "mode": mode,
            "checks": checks.iter().map(|c| {
                let mut o = json!({"name": c.name, "ok": c.ok, "detail": c.detail});
                if c.warn { o["warning"] = json!(true); }
                if let Some(l) = c.latency_ms { o["latency_ms"] = json!(l); }
                if let Some(a) = &c.advice { o["advice"] = json!(a); }
                o
            }).collect::<Vec<_>>(),
            "issues": issues,
            "hard_failures": issues,
            "warnings": warnings,
            "advice": checks.iter().filter(|c| !c.ok).chain(checks.iter().filter(|c| c.warn)).find_map(|c| c.advice.clone()),
        });
        println!("{v}");
    } else {
        println!("Linkly Doctor");
        for c in &checks {
            let latency = c
                .latency_ms
                .map(|l| format!(" ({l} ms)"))
                .unwrap_or_default();
            println!(
                "  {}:  [{}] {}{latency}",
                c.name,
                match (c.ok, c.warn) {
                    (false, _) => "FAIL",
                    (true, true) => "warn",
                    (true, false) => "ok",
                },
                c.detail
            );
        }
        for c in checks.iter().filter(|c| !c.ok || c.warn) {
            if let Some(a) = &c.advice {
                println!("  → {}: {a}", c.name);
            }
        }
        if issues == 0 && warnings > 0 {
            println!("All checks passed ({warnings} warning(s)).");
        } else if issues == 0 {
            println!("All checks passed.");
        } else {
            println!("{issues} issue(s) found.");
        }
    }
    Ok(if issues == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The embedding model: the selected one, on disk or not, loading or not, and the vectors
/// waiting. A missing model is a warning (search works, keyword-only); one that does not load
/// is a failure.
fn model_checks(data: &DataDir, index: Option<&Index>, checks: &mut Vec<Check>) {
    let choice = ModelManager::new(data.root()).choice();
    let keyword_only = "search is keyword-only until then";
    // Whether the model loads: None when it is not on disk.
    let loads = if !choice.is_present() {
        if choice.from_env {
            checks.push(Check::fail(
                "Model",
                format!(
                    "LINKLY_MODEL_DIR={} lacks config.json, tokenizer.json or model.safetensors",
                    choice.dir.display()
                ),
                "point LINKLY_MODEL_DIR at a sentence-transformers folder, or unset it to use the downloaded model",
            ));
        } else {
            let kept = partial_bytes(&choice);
            checks.push(Check::warn(
                "Model",
                if kept > 0 {
                    format!(
                        "{} is not downloaded ({:.1} MB of an interrupted download kept)",
                        choice.name,
                        kept as f64 / 1e6
                    )
                } else {
                    format!("{} is not downloaded", choice.name)
                },
                format!(
                    "run `linkly model download` (it resumes; `linkly serve` also fetches it); {keyword_only}"
                ),
            ));
        }
        None
    } else if let Some(index) = index {
        let started = Instant::now();
        match index.attach_model(&choice).map(|()| index.model_status()) {
            Ok(ModelStatus::Ready { name, dim }) => {
                let mut c = Check::ok(
                    "Model",
                    format!(
                        "{name} loads ({dim} dimensions) from {}",
                        choice.dir.display()
                    ),
                );
                c.latency_ms = Some(started.elapsed().as_millis() as u64);
                checks.push(c);
                Some(true)
            }
            Ok(other) => {
                checks.push(Check::fail(
                    "Model",
                    other.describe(),
                    "run `linkly doctor` again",
                ));
                Some(false)
            }
            Err(e) => {
                checks.push(Check::fail(
                    "Model",
                    format!("{} does not load: {e}", choice.name),
                    if choice.from_env {
                        format!("fix the files in LINKLY_MODEL_DIR or unset it; {keyword_only}")
                    } else {
                        format!(
                            "remove {} and run `linkly model download` again (or choose another model with `linkly model use`); {keyword_only}",
                            choice.dir.display()
                        )
                    },
                ));
                Some(false)
            }
        }
    } else {
        checks.push(Check::ok(
            "Model",
            format!("{} is on disk in {}", choice.name, choice.dir.display()),
        ));
        None
    };
    let Some(index) = index else { return };
    match index.vector_stats() {
        Ok(s) if s.pending_docs > 0 => checks.push(Check::warn(
            "Vectors",
            format!(
                "{} documents embedded ({} chunks), {} waiting",
                s.embedded_docs, s.chunks, s.pending_docs
            ),
            match loads {
                Some(true) => {
                    "run `linkly index` (or let `linkly serve` embed them in the background); until then they are found by keywords only"
                }
                Some(false) => "fix the model first; the waiting documents are found by keywords only",
                None => "they are embedded once the model is downloaded (`linkly model download`, then `linkly index`)",
            },
        )),
        Ok(s) => checks.push(Check::ok(
            "Vectors",
            format!("{} documents embedded ({} chunks), none waiting", s.embedded_docs, s.chunks),
        )),
        Err(e) => checks.push(Check::fail(
            "Vectors",
            e.to_string(),
            format!("remove {} and run `linkly index` to embed again", data.index_dir().display()),
        )),
    }
}

/// Bytes kept by an interrupted download of the model (its `.partial` folder).
fn partial_bytes(choice: &ModelChoice) -> u64 {
    let mut partial = choice.dir.clone().into_os_string();
    partial.push(".partial");
    dir_size(std::path::Path::new(&partial))
}

fn dir_size(path: &std::path::Path) -> u64 {
    let Ok(entries) = fs_err::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}
