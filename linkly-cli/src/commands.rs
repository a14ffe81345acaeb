//! The dispatch from subcommand to module, and the system commands of the data directory:
//! `folders` and `index`.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use linkly_core::{Config, DataDir, SettingOp};
use linkly_index::Index;
use linkly_tools::{FreshEvent, Linkly};
use serde_json::json;

use crate::args::{self, Cli, Command, ConfigCommand, FoldersCommand, IndexArgs};
use crate::backend;
#[cfg(feature = "gateway-server")]
use crate::gateway;
use crate::output::Printer;
use crate::progress::Reporter;
use crate::{daemon, discovery, documents, model, notes, open, publish, shared, status};

pub(crate) fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let data = cli
        .home
        .clone()
        .map(DataDir::new)
        .unwrap_or_else(DataDir::from_env);
    // Every command opens the data directory the one way: created 0700, or tightened to it.
    data.ensure()?;
    let printer = Printer {
        json: cli.json,
        exit_code: cli.exit_code,
    };
    // --token goes with --endpoint, except for the gateway clients, where it is the user's
    // gateway token.
    let gateway_client = matches!(&cli.command, Command::Publish(_))
        || matches!(&cli.command, Command::Mcp(a) if a.remote.is_some());
    if cli.token.is_some() && cli.endpoint.is_none() && !gateway_client {
        bail!("--token goes with --endpoint (or with `publish` and `mcp --remote`)");
    }
    // A token in the environment rather than on the command line (`ps` shows argv to every
    // local account).
    let token = cli.token.clone().or_else(|| {
        cli.endpoint
            .as_ref()
            .and_then(|_| std::env::var("LINKLY_TOKEN").ok())
            .filter(|t| !t.is_empty())
    });
    backend::set_connection(backend::Connection {
        endpoint: cli.endpoint.clone(),
        token,
    });
    match cli.command {
        Command::Folders(cmd) => folders(&data, cmd, printer),
        Command::Config(cmd) => config(&data, cmd, printer),
        Command::Index(args) => index(&data, args, printer),
        Command::Search(args) => documents::search(&data, args, printer),
        Command::Outline(args) => documents::outline(&data, args, printer),
        Command::Grep(args) => documents::grep(&data, args, printer),
        Command::Read(args) => documents::read(&data, args, printer),
        Command::ListLibraries => discovery::list_libraries(&data, printer),
        Command::Explore(args) => discovery::explore(&data, args, printer),
        Command::FindPaths(args) => discovery::find_paths(&data, args, printer),
        Command::List(args) => discovery::list(&data, args, printer),
        Command::Library(cmd) => discovery::library(&data, cmd, printer),
        Command::Serve(args) => daemon::serve(&data, args),
        Command::Mcp(args) => shared::mcp(&data, args),
        Command::Open(args) => open::open(&data, args),
        #[cfg(feature = "gateway-server")]
        Command::Gateway(cmd) => gateway::run(&data, cmd, printer),
        #[cfg(not(feature = "gateway-server"))]
        Command::Gateway(_) => bail!(
            "this linkly is the desktop build, without the gateway server (nor PostgreSQL): a host \
             installs it with `cargo install linkly-cli --locked --features gateway-server` \
             (`linkly publish` and `linkly mcp --remote`, the gateway's clients, are here)"
        ),
        Command::Publish(args) => publish::publish(&data, args, cli.token.clone(), printer),
        Command::Model(cmd) => model::run(&data, cmd, printer),
        Command::NoteSave(args) => notes::note_save(&data, args, printer),
        Command::Call(args) => crate::call::by_name(&data, args, printer),
        Command::Status => status::status(&data, printer),
        Command::Stop => daemon::stop(&data, printer),
        Command::Doctor(args) => status::doctor(&data, args.fix, printer),
        Command::ExtractWorker => Ok(ExitCode::from(
            u8::try_from(linkly_extract::run_worker()).unwrap_or(2),
        )),
        Command::Completions { shell } => {
            let mut cmd = args::command();
            clap_complete::generate(shell, &mut cmd, "linkly", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir } => {
            match dir {
                Some(dir) => clap_mangen::generate_to(args::command(), dir)?,
                None => clap_mangen::Man::new(args::command()).render(&mut std::io::stdout())?,
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `linkly config get|set|add|remove`: one setting through the same checks as the window's
/// Settings page; a refused value leaves config.toml untouched.
fn config(data: &DataDir, cmd: ConfigCommand, printer: Printer) -> anyhow::Result<ExitCode> {
    let mut config = Config::load(data)?;
    let (key, op) = match cmd {
        ConfigCommand::Get { key: None } => {
            let mut all = serde_json::Map::new();
            for s in linkly_core::SETTINGS {
                let value = config.setting(s.key)?;
                if printer.json {
                    all.insert(s.key.to_string(), json!(value));
                } else {
                    println!("{} = {}", s.key, value.replace('\n', ", "));
                }
            }
            if printer.json {
                println!("{}", json!({"status": "success", "settings": all}));
            }
            return Ok(ExitCode::SUCCESS);
        }
        ConfigCommand::Get { key: Some(key) } => {
            let value = config.setting(&key)?;
            if printer.json {
                println!(
                    "{}",
                    json!({"status": "success", "key": key, "value": value})
                );
            } else if !value.is_empty() {
                println!("{value}");
            }
            return Ok(ExitCode::SUCCESS);
        }
        ConfigCommand::Set { key, value } => (key, SettingOp::Set(value)),
        ConfigCommand::Add { key, value } => (key, SettingOp::Add(value)),
        ConfigCommand::Remove { key, value } => (key, SettingOp::Remove(value)),
    };
    linkly_tools::check_setting(&key, &op)?;
    config.change_setting(&key, op)?;
    config.save(data)?;
    let value = config.setting(&key)?;
    if printer.json {
        println!(
            "{}",
            json!({"status": "success", "key": key, "value": value})
        );
    } else {
        println!("{key} = {}", value.replace('\n', ", "));
    }
    Ok(ExitCode::SUCCESS)
}

fn folders(data: &DataDir, cmd: FoldersCommand, printer: Printer) -> anyhow::Result<ExitCode> {
    let mut config = Config::load(data)?;
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
    let mut config = Config::load(data)?;
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
                "peak_rss_kb": linkly_core::stdx::peak_rss_kb(),
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
        let mut embed = model::embed_progress();
        let result = linkly.index_now(&mut |event| match event {
            FreshEvent::Sync(p) => reporter.update(p),
            FreshEvent::Embedding(p) => embed(p),
            _ => {}
        });
        match result {
            Ok(done) => {
                model::after_index(&done);
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
