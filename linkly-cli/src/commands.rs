//! The commands: each builds tool arguments or runs the system, then hands output to
//! `output`.

use std::io::BufRead;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use linkly_core::{Config, DataDir, DocType};
use linkly_index::Index;
use linkly_tools::{FreshEvent, Linkly};
use serde_json::{Map, Value, json};

use crate::args::{
    Cli, Command, FoldersCommand, GrepArgs, GrepMode, ImageText, IndexArgs, OutlineArgs, ReadArgs,
    SearchArgs, TimeSort,
};
use crate::backend::{self, Backend};
use crate::output::{Outcome, Printer};
use crate::progress::Reporter;
use crate::{daemon, status};

pub(crate) fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let data = cli
        .home
        .clone()
        .map(DataDir::new)
        .unwrap_or_else(DataDir::from_env);
    let printer = Printer {
        json: cli.json,
        exit_code: cli.exit_code,
    };
    backend::set_connection(backend::Connection {
        endpoint: cli.endpoint.clone(),
        token: cli.token.clone(),
    });
    match cli.command {
        Command::Folders(cmd) => folders(&data, cmd, printer),
        Command::Index(args) => index(&data, args, printer),
        Command::Search(args) => search(&data, args, printer),
        Command::Outline(args) => outline(&data, args, printer),
        Command::Grep(args) => grep(&data, args, printer),
        Command::Read(args) => read(&data, args, printer),
        Command::ListLibraries => crate::discovery::list_libraries(&data, printer),
        Command::Explore(args) => crate::discovery::explore(&data, args, printer),
        Command::FindPaths(args) => crate::discovery::find_paths(&data, args, printer),
        Command::List(args) => crate::discovery::list(&data, args, printer),
        Command::Library(cmd) => crate::discovery::library(&data, cmd, printer),
        Command::Serve(args) => daemon::serve(&data, args),
        Command::Mcp(args) => crate::shared::mcp(&data, args),
        Command::Model(cmd) => crate::model::run(&data, cmd, printer),
        Command::NoteSave(args) => crate::notes::note_save(&data, args, printer),
        Command::Status => status::status(&data, printer),
        Command::Doctor(args) => status::doctor(&data, args.fix, printer),
        Command::ExtractWorker => Ok(ExitCode::from(
            u8::try_from(linkly_extract::run_worker()).unwrap_or(2),
        )),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "linkly", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir } => {
            use clap::CommandFactory;
            match dir {
                Some(dir) => clap_mangen::generate_to(Cli::command(), dir)?,
                None => clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout())?,
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

pub(crate) fn load_config(data: &DataDir) -> anyhow::Result<Config> {
    Ok(Config::load(data)?)
}

fn folders(data: &DataDir, cmd: FoldersCommand, printer: Printer) -> anyhow::Result<ExitCode> {
    let mut config = load_config(data)?;
    match cmd {
        FoldersCommand::Add { paths } => {
            for p in paths {
                let added = config
                    .add_folder(&p)
                    .with_context(|| format!("cannot watch {}", p.display()))?;
                let shown = fs_err::canonicalize(&p)?;
                if added {
                    println!("Watching {}", shown.display());
                } else {
                    println!("Already watching {}", shown.display());
                }
            }
            config.save(data)?;
            println!("Run `linkly index` to index the watched folders.");
        }
        FoldersCommand::Remove { paths } => {
            for p in paths {
                if config.remove_folder(&p) {
                    println!("Stopped watching {}", p.display());
                } else {
                    bail!("{} is not a watched folder", p.display());
                }
            }
            config.save(data)?;
        }
        FoldersCommand::List => {
            if printer.json {
                println!(
                    "{}",
                    json!({"status": "success", "folders": config.folders, "exclude": config.exclude})
                );
            } else if config.folders.is_empty() {
                println!("No watched folders. Add one with `linkly folders add <path>`.");
            } else {
                for f in &config.folders {
                    println!("{}", f.display());
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn index(data: &DataDir, args: IndexArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let mut config = load_config(data)?;
    let mut changed = false;
    for p in &args.paths {
        changed |= config
            .add_folder(p)
            .with_context(|| format!("cannot watch {}", p.display()))?;
    }
    for e in args.exclude {
        if !config.exclude.contains(&e) {
            config.exclude.push(e);
            changed = true;
        }
    }
    if changed || !data.config_file().exists() {
        config.save(data)?;
    }
    if config.folders.is_empty() && !config.notes_dir(data).is_dir() {
        bail!(
            "no watched folders: give one (`linkly index ~/Documents`) or add one with `linkly folders add <path>`"
        );
    }
    let linkly = Linkly::new(
        Arc::new(Index::open(&data.index_dir())?),
        data.clone(),
        config,
    );
    let index = linkly.index().clone();
    if args.rebuild {
        let mut reporter = Reporter::new();
        let n = index.rebuild_lexical(&mut |p| reporter.update(p))?;
        eprintln!("Rebuilt the full-text index from the store: {n} documents.");
    }
    let done = index_now(&linkly)?;
    let report = done.sync;
    let secs = report.elapsed_ms as f64 / 1000.0;
    if printer.json {
        println!(
            "{}",
            json!({
                "status": "success", "seen": report.seen, "added": report.added,
                "updated": report.updated, "unchanged": report.unchanged,
                "removed": report.removed, "skipped": report.skipped,
                "bytes": report.bytes, "elapsed_ms": report.elapsed_ms,
                "doc_count": index.doc_count()?,
                "peak_rss_kb": peak_rss_kb(),
            })
        );
    } else {
        println!(
            "Indexed {} files in {secs:.1}s: {} new, {} changed, {} unchanged, {} removed ({} by name only: see skip_reason). {} documents in the index.",
            report.seen,
            report.added,
            report.updated,
            report.unchanged,
            report.removed,
            report.skipped,
            index.doc_count()?
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs the one-shot form of the keep-fresh engine with progress on stderr. When another
/// process writes the index (a server's watcher syncing right now), waits for it.
fn index_now(linkly: &Linkly) -> anyhow::Result<linkly_tools::IndexNowReport> {
    let started = std::time::Instant::now();
    let mut waited = false;
    loop {
        let mut reporter = Reporter::new();
        let mut embed = crate::model::embed_progress();
        let result = linkly.index_now(&mut |event| match event {
            FreshEvent::Sync(p) => reporter.update(p),
            FreshEvent::Embedding(p) => embed(p),
            _ => {}
        });
        match result {
            Ok(done) => {
                crate::model::after_index(&done);
                return Ok(done);
            }
            Err(e)
                if e.code == linkly_core::ErrorCode::IndexBusy
                    && started.elapsed() < std::time::Duration::from_secs(60) =>
            {
                if !waited {
                    eprintln!("Another Linkly process is writing the index; waiting for it…");
                    waited = true;
                }
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            Err(e) => bail!("{}", e.message),
        }
    }
}

/// The process's peak resident set (Linux `VmHWM`), for benchmarks.
pub(crate) fn peak_rss_kb() -> Option<u64> {
    let status = fs_err::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// The tools: the running server's when there is one (or `--endpoint`), else embedded.
pub(crate) fn open_tools(data: &DataDir) -> anyhow::Result<Backend> {
    backend::open(data)
}

/// Reads ids, replacing a lone `-` with the ids on stdin (one per line).
fn expand_ids(ids: Vec<String>) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for id in ids {
        if id == "-" {
            for line in std::io::stdin().lock().lines() {
                let line = line?;
                let t = line.trim();
                if !t.is_empty() {
                    out.push(t.to_string());
                }
            }
        } else {
            out.push(id);
        }
    }
    if out.is_empty() {
        bail!("no document ids given");
    }
    Ok(out)
}

pub(crate) fn comma_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

pub(crate) fn normalise_tags(s: &str) -> anyhow::Result<Vec<String>> {
    let tags = linkly_core::normalise_tags(&s.split(',').collect::<Vec<_>>());
    if tags.is_empty() {
        bail!("--tags was given but contains no usable tag (use e.g. --tags work,ideas)");
    }
    Ok(tags)
}

pub(crate) fn check_limit(limit: Option<i64>) -> anyhow::Result<()> {
    if limit.is_some_and(|l| l < 1) {
        bail!("--limit must be at least 1");
    }
    Ok(())
}

/// Sets a key when the value is present (options never become `null`).
pub(crate) fn put(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        map.insert(key.to_string(), v);
    }
}

/// Calls a tool once, prints the result, and classifies it.
pub(crate) fn call_once(
    linkly: &Backend,
    printer: Printer,
    tool: &str,
    mut args: Map<String, Value>,
) -> Outcome {
    if printer.json {
        args.insert("output_format".into(), json!("json"));
    }
    match linkly.call(tool, Value::Object(args)) {
        Ok(out) if !out.is_error => match printer.success(tool, &out.text) {
            Ok(o) => o,
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Outcome::Found,
            Err(e) => {
                printer.error(&e.to_string());
                Outcome::Failed
            }
        },
        Ok(out) => {
            printer.error(&format!("Tool error: {}", tool_error_message(&out.text)));
            Outcome::Failed
        }
        Err(unknown) => {
            printer.error(&unknown.to_string());
            Outcome::Failed
        }
    }
}

pub(crate) fn tool_error_message(text: &str) -> String {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| {
            let e = v.get("error")?;
            Some(format!(
                "[{}] {}",
                e.get("code")?.as_str()?,
                e.get("message")?.as_str()?
            ))
        })
        .unwrap_or_else(|| text.to_string())
}

fn search(data: &DataDir, a: SearchArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    if a.query.trim().is_empty() {
        printer.error("Search query cannot be empty");
        return Ok(printer.exit(Outcome::Failed));
    }
    if let Err(e) = check_limit(a.limit) {
        printer.error(&e.to_string());
        return Ok(printer.exit(Outcome::Failed));
    }
    let mut args = Map::new();
    args.insert("query".into(), json!(a.query));
    put(&mut args, "limit", a.limit.map(|v| json!(v)));
    if let Some(types) = &a.doc_types {
        let types: Vec<String> = comma_list(types)
            .iter()
            .map(|t| t.to_ascii_lowercase())
            .collect();
        let bad: Vec<&String> = types
            .iter()
            .filter(|t| DocType::from_token(t).is_err())
            .collect();
        if !bad.is_empty() {
            printer.error(&format!(
                "Unknown document type(s): {}. Supported: {}",
                bad.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                DocType::supported_list()
            ));
            return Ok(printer.exit(Outcome::Failed));
        }
        args.insert("doc_types".into(), json!(types));
    }
    put(&mut args, "library", a.library.map(|v| json!(v)));
    put(&mut args, "path_glob", a.path_glob.map(|v| json!(v)));
    put(
        &mut args,
        "modified_after",
        a.modified_after.map(|v| json!(v)),
    );
    put(
        &mut args,
        "modified_before",
        a.modified_before.map(|v| json!(v)),
    );
    put(
        &mut args,
        "time_sort",
        a.time_sort.map(|t| {
            json!(match t {
                TimeSort::Default => "default",
                TimeSort::Newest => "newest",
                TimeSort::Oldest => "oldest",
            })
        }),
    );
    put(&mut args, "scope", a.scope.map(|v| json!(v)));
    if let Some(tags) = &a.tags {
        match normalise_tags(tags) {
            Ok(t) => {
                args.insert("tags".into(), json!(t));
            }
            Err(e) => {
                printer.error(&e.to_string());
                return Ok(printer.exit(Outcome::Failed));
            }
        }
    }
    let linkly = open_tools(data)?;
    Ok(printer.exit(call_once(&linkly, printer, "search", args)))
}

fn outline(data: &DataDir, a: OutlineArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let ids = expand_ids(a.ids)?;
    let mut args = Map::new();
    args.insert("doc_ids".into(), json!(ids));
    put(&mut args, "expand", a.expand.map(|e| json!(comma_list(&e))));
    let linkly = open_tools(data)?;
    Ok(printer.exit(call_once(&linkly, printer, "outline", args)))
}

/// Calls a one-document tool for each id: successes printed, failures collected.
fn per_id(
    linkly: &Backend,
    printer: Printer,
    tool: &str,
    verb: &str,
    ids: &[String],
    build: impl Fn(&str) -> Map<String, Value>,
) -> ExitCode {
    let mut outcome: Option<Outcome> = None;
    let mut failures = Vec::new();
    for id in ids {
        let mut args = build(id);
        if printer.json {
            args.insert("output_format".into(), json!("json"));
        }
        match linkly.call(tool, Value::Object(args)) {
            Ok(out) if !out.is_error => {
                let o = printer.success(tool, &out.text).unwrap_or(Outcome::Found);
                outcome = Some(outcome.map_or(o, |prev| prev.merge(o)));
            }
            Ok(out) => failures.push(format!("{id}: {}", tool_error_message(&out.text))),
            Err(e) => failures.push(format!("{id}: {e}")),
        }
    }
    if failures.is_empty() {
        return printer.exit(outcome.unwrap_or(Outcome::Found));
    }
    if ids.len() == 1 {
        printer.error(&format!(
            "Tool error: {}",
            failures[0]
                .split_once(": ")
                .map_or(failures[0].as_str(), |x| x.1)
        ));
        return printer.exit(Outcome::Failed);
    }
    if outcome.is_none() {
        printer.error(&format!(
            "Could not {verb} any of the {} documents: {}",
            ids.len(),
            failures.join("; ")
        ));
        return printer.exit(Outcome::Failed);
    }
    printer.warn(&format!(
        "{} of {} documents could not be {}: {}",
        failures.len(),
        ids.len(),
        if verb == "grep" { "searched" } else { "read" },
        failures.join("; ")
    ));
    printer.exit(outcome.unwrap_or(Outcome::Found))
}

fn grep(data: &DataDir, a: GrepArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    check_limit(a.limit)?;
    let ids = expand_ids(a.ids.clone())?;
    let linkly = open_tools(data)?;
    Ok(per_id(&linkly, printer, "grep", "grep", &ids, |id| {
        let mut args = Map::new();
        args.insert("pattern".into(), json!(a.pattern));
        args.insert("doc_id".into(), json!(id));
        put(&mut args, "context", a.context.map(|v| json!(v)));
        put(&mut args, "before", a.before.map(|v| json!(v)));
        put(&mut args, "after", a.after.map(|v| json!(v)));
        if a.ignore_case {
            args.insert("case_insensitive".into(), json!(true));
        }
        put(
            &mut args,
            "output_mode",
            a.mode.map(|m| {
                json!(match m {
                    GrepMode::Content => "content",
                    GrepMode::Count => "count",
                })
            }),
        );
        put(&mut args, "limit", a.limit.map(|v| json!(v)));
        put(&mut args, "offset", a.offset.map(|v| json!(v)));
        put(
            &mut args,
            "fuzzy_whitespace",
            a.fuzzy_whitespace.map(|v| json!(v)),
        );
        args
    }))
}

fn read(data: &DataDir, a: ReadArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    check_limit(a.limit)?;
    let ids = expand_ids(a.ids.clone())?;
    let linkly = open_tools(data)?;
    Ok(per_id(&linkly, printer, "read", "read", &ids, |id| {
        let mut args = Map::new();
        args.insert("doc_id".into(), json!(id));
        put(&mut args, "offset", a.offset.map(|v| json!(v)));
        put(&mut args, "limit", a.limit.map(|v| json!(v)));
        put(
            &mut args,
            "image_text",
            a.image_text.map(|m| {
                json!(match m {
                    ImageText::None => "none",
                    ImageText::Abstract => "abstract",
                    ImageText::Full => "full",
                })
            }),
        );
        args
    }))
}

pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}
