//! `cargo xtask bench gateway`: the self-hosted gateway at the sizes of issue 16 — a catalogue
//! of 10,000 libraries (`library_search`), one published library of 100,000 documents
//! (`linkly publish` throughput, the first search after it, then `search` latency), all through
//! the real binary over HTTP with the lean Rust MCP client.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use linkly_gateway::model::{CATEGORIES, LibraryMeta, Plan, Visibility};
use linkly_gateway::server::db::{Db, DbSpec};
use serde_json::{Value, json};

pub(crate) struct Gateway(Child);

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const WORDS: &[&str] = &[
    "rust",
    "python",
    "design",
    "systems",
    "biology",
    "finance",
    "cooking",
    "travel",
    "history",
    "physics",
    "machine",
    "learning",
    "notes",
    "papers",
    "guides",
    "recipes",
    "research",
    "handbook",
    "archive",
    "lectures",
    "compilers",
    "databases",
    "networks",
    "gardening",
];

/// Seeds `libraries` catalogue entries owned by 200 users (70% public, 20% showcase, 10%
/// private), returning the seconds it took.
fn seed_catalogue(db: &Db, libraries: usize) -> anyhow::Result<f64> {
    let t = Instant::now();
    let mut owners = Vec::new();
    for i in 0..200 {
        owners.push(db.add_user(&format!("u{i}"), Plan::Free)?.0);
    }
    for i in 0..libraries {
        let w = |k: usize| WORDS[(i * 7 + k * 13) % WORDS.len()];
        let meta = LibraryMeta {
            title: format!("{} {} {}", w(0), w(1), i),
            description: format!("A library of {} and {} for {}", w(2), w(3), w(4)),
            category: CATEGORIES[i % CATEGORIES.len()].to_string(),
            visibility: Some(match i % 10 {
                0 => Visibility::Private,
                1 | 2 => Visibility::Showcase,
                _ => Visibility::Public,
            }),
        };
        db.upsert_library(&owners[i % owners.len()], &format!("lib-{i}"), &meta)?;
    }
    Ok(t.elapsed().as_secs_f64())
}

fn start(bin: &Path, home: &Path, database: &str) -> anyhow::Result<(Gateway, String)> {
    start_with_model(bin, home, database, None)
}

/// `linkly gateway serve` on a free port over `database`, embedding queries with `model`
/// (none: keyword search only); the gateway and its base URL.
pub(crate) fn start_with_model(
    bin: &Path,
    home: &Path,
    database: &str,
    model: Option<&Path>,
) -> anyhow::Result<(Gateway, String)> {
    let port_file = home.join("gateway.port");
    let _ = fs_err::remove_file(&port_file);
    let mut cmd = Command::new(bin);
    cmd.env_remove("LINKLY_MODEL_DIR");
    if let Some(m) = model {
        cmd.env("LINKLY_MODEL_DIR", m);
    }
    let child = cmd
        .arg("--home")
        .arg(home)
        .args(["gateway", "serve", "--port", "0", "--port-file"])
        .arg(&port_file)
        .arg("--database")
        .arg(database)
        // The per-user limits would measure themselves: the load comes from one user (a new
        // session per call, a large corpus published).
        .args(["--rate", "100000000"])
        .args(["--max-sessions-per-user", "0"])
        .args(["--max-publish-bytes-per-day", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::from(
            fs_err::File::create(home.join("gateway.log"))?
                .into_parts()
                .0,
        ))
        .spawn()
        .context("starting linkly gateway serve")?;
    let gateway = Gateway(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(port) = fs_err::read_to_string(&port_file)
            && let Ok(port) = port.trim().parse::<u16>()
        {
            return Ok((gateway, format!("http://127.0.0.1:{port}")));
        }
        if Instant::now() > deadline {
            bail!(
                "the gateway did not write its port file (see {})",
                home.join("gateway.log").display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn linkly(bin: &Path, home: &Path, args: &[&str]) -> anyhow::Result<Value> {
    crate::child::json(
        Command::new(bin)
            .arg("--json")
            .arg("--home")
            .arg(home)
            .args(args),
        &format!("linkly {args:?}"),
    )
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<String> {
    let libraries: usize = crate::arg(args, "--libraries").map_or(Ok(10_000), |s| s.parse())?;
    let docs: usize = crate::arg(args, "--docs").map_or(Ok(100_000), |s| s.parse())?;
    // The server half is behind linkly-cli's `gateway-server` feature.
    let bin = crate::bench::build_cli_with(&["gateway-server"])?;
    let work = crate::target_dir().join("bench");
    fs_err::create_dir_all(&work)?;
    let home: PathBuf = work.join("home-gateway");
    let _ = fs_err::remove_dir_all(&home);
    fs_err::create_dir_all(&home)?;
    // `--database postgres://…` (an empty database: the bench writes its own users): the
    // PostgreSQL back end; else a SQLite file in the bench's home.
    let database = crate::arg(args, "--database")
        .unwrap_or_else(|| home.join("gateway.sqlite").to_string_lossy().into_owned());
    let db = Db::open(&DbSpec::parse(Some(&database), &home)?)?;
    eprintln!("bench gateway: seeding a catalogue of {libraries} libraries");
    let seed_s = seed_catalogue(&db, libraries)?;
    let (_, token_text) = db.add_user("bench", Plan::Pro)?;
    let mut report = format!(
        "| step | figure |\n|---|---|\n| catalogue of {libraries} libraries written (200 owners, one upsert each) | {seed_s:.1} s, {:.0} libraries/s |\n",
        libraries as f64 / seed_s.max(1e-9)
    );
    let (gateway, base) = start(&bin, &home, &database)?;
    let pid = gateway.0.id();
    let url = format!("{base}/mcp");
    let token = Some(token_text.as_str());
    // Every load below goes to this gateway as this user, its CPU counted.
    let load = |clients: usize, calls: usize, tool: &str, args: &Value| {
        crate::load::run(&url, clients, calls, tool, args, Some(pid), token)
    };
    let call = |tool: &str, args: &Value| crate::load::call_once(&url, token, tool, args);

    for (what, a) in [
        ("browse, newest first", json!({})),
        ("query \"rust\"", json!({"query": "rust"})),
        (
            "query \"gardening\", category science, limit 50",
            json!({"query": "gardening", "category": "science", "limit": 50}),
        ),
        ("owner u7", json!({"owner": "u7"})),
        ("offset 9,000", json!({"offset": 9000})),
    ] {
        let r = load(1, 200, "library_search", &a)?;
        report.push_str(&format!(
            "| library_search, {what} (1 client × 200) | p50 {:.2} ms, p99 {:.2} ms, errors {} |\n",
            r.p50, r.p99, r.errors
        ));
    }
    let r = load(16, 50, "library_search", &json!({"query": "rust"}))?;
    report.push_str(&format!(
        "| library_search, 16 clients × 50 | {:.0} calls/s, p50 {:.1} ms, p99 {:.1} ms, errors {} |\n",
        r.rate(),
        r.p50,
        r.p99,
        r.errors
    ));

    if docs == 0 {
        return Ok(report);
    }
    // One library of `docs` generated Markdown files, indexed here, then published.
    eprintln!("bench gateway: generating and indexing {docs} documents");
    let corpus = crate::corpus::generated(&work, docs)?;
    let local = home.join("local");
    let indexed = linkly(&bin, &local, &["index", &corpus.to_string_lossy()])?;
    crate::child::output(
        Command::new(&bin)
            .arg("--home")
            .arg(&local)
            .args(["library", "add", "big"])
            .arg(&corpus),
        "linkly library add",
    )?;
    let publish = || {
        let args = [
            "publish",
            "big",
            "--gateway",
            &base,
            "--token",
            &token_text,
            "--slug",
            "big",
        ];
        linkly(&bin, &local, &args)
    };
    let t = Instant::now();
    let published = publish()?;
    let publish_s = t.elapsed().as_secs_f64();
    let sent = published["sent"].as_u64().unwrap_or(0);
    report.push_str(&format!(
        "| `linkly publish` of {} documents (indexed locally in {:.1} s first) | {publish_s:.1} s, {:.0} docs/s |\n",
        sent,
        indexed["elapsed_ms"].as_f64().unwrap_or(0.0) / 1000.0,
        sent as f64 / publish_s.max(1e-9)
    ));
    let t = Instant::now();
    let again = publish()?;
    report.push_str(&format!(
        "| `linkly publish` again, nothing changed ({} sent) | {:.2} s |\n",
        again["sent"].as_u64().unwrap_or(0),
        t.elapsed().as_secs_f64()
    ));
    let linked = call(
        "library_link",
        &json!({"library": "cloud://bench/big", "output_format": "json"}),
    )?;
    if linked["isError"].as_bool() == Some(true) {
        bail!("library_link failed: {linked}");
    }
    let queries = crate::corpus::generated_queries(200);
    // What the first query matches locally: the gateway must match as many.
    let first_total = linkly(&bin, &local, &["search", &queries[0]])?["total"]
        .as_u64()
        .unwrap_or(0);
    // The first search right after the publish: the gateway keeps no index of the library,
    // so it must answer whole at once.
    let t = Instant::now();
    let r = call(
        "search",
        &json!({"query": queries[0], "library": "cloud://bench/big", "output_format": "json"}),
    )?;
    let first_ms = t.elapsed().as_secs_f64() * 1000.0;
    let text = r["content"][0]["text"].as_str().unwrap_or_default();
    let found = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v["total"].as_u64())
        .unwrap_or(0);
    if found != first_total {
        bail!(
            "the first search after the publish matched {found} documents, the local index {first_total}: {text}"
        );
    }
    report.push_str(&format!(
        "| first search right after the publish ({sent} documents, {found} matches, as locally) | {first_ms:.1} ms |\n"
    ));
    let mut ms = Vec::new();
    for q in &queries {
        let t = Instant::now();
        let r = call(
            "search",
            &json!({"query": q, "library": "cloud://bench/big", "limit": 10}),
        )?;
        if r["isError"].as_bool() == Some(true) {
            bail!("search failed: {r}");
        }
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let (p50, p99) = crate::bench::percentiles(ms);
    report.push_str(&format!(
        "| search in the linked library, a new session per call (200 queries) | p50 {p50:.1} ms, p99 {p99:.1} ms |\n"
    ));
    let r = load(
        1,
        200,
        "search",
        &json!({"query": queries[1], "library": "cloud://bench/big", "limit": 10}),
    )?;
    report.push_str(&format!(
        "| search in the linked library, one session (1 client × 200) | p50 {:.1} ms, p99 {:.1} ms, errors {} |\n",
        r.p50, r.p99, r.errors
    ));
    let r = load(
        16,
        25,
        "search",
        &json!({"query": queries[2], "library": "cloud://bench/big", "limit": 10}),
    )?;
    report.push_str(&format!(
        "| search in the linked library, 16 clients × 25 | {:.0} calls/s, p50 {:.1} ms, p99 {:.1} ms, errors {} |\n",
        r.rate(),
        r.p50,
        r.p99,
        r.errors
    ));
    drop(gateway);
    Ok(report)
}
