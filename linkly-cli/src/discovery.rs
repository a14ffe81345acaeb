//! Discovery commands: `library add|remove|list|edit` (the config's libraries) and the tool
//! commands `list-libraries`, `explore`, `find-paths` and `list`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use clap::{Args, Subcommand, ValueEnum};
use linkly_core::{DataDir, DocType, LibraryEdit};
use serde_json::{Map, Value, json};

use crate::commands::{
    call_once, check_limit, comma_list, normalise_tags, open_tools, put, tool_error_message,
};
use crate::output::{Outcome, Printer};

#[derive(Debug, Subcommand)]
pub(crate) enum LibraryCommand {
    /// Define a library: a name and its folders (folders not watched yet become watched).
    Add {
        /// The library's name.
        name: String,
        /// Its folders.
        folders: Vec<PathBuf>,
        /// What it holds (shown to agents).
        #[arg(long)]
        description: Option<String>,
        /// Notes carrying all these tags belong to it, comma-separated.
        #[arg(long)]
        tags: Option<String>,
    },
    /// Remove a library (its folders stay watched).
    Remove {
        /// A name or `local://<id>`.
        library: String,
    },
    /// List the libraries of the config.
    List,
    /// Change a library.
    Edit {
        /// A name or `local://<id>`.
        library: String,
        /// A new name.
        #[arg(long)]
        name: Option<String>,
        /// A new description.
        #[arg(long)]
        description: Option<String>,
        /// A folder to add (repeatable).
        #[arg(long = "add-folder", value_name = "DIR")]
        add_folders: Vec<PathBuf>,
        /// A folder to remove (repeatable).
        #[arg(long = "remove-folder", value_name = "DIR")]
        remove_folders: Vec<PathBuf>,
        /// The new tag filter over notes, comma-separated (replaces the old one).
        #[arg(long)]
        tags: Option<String>,
    },
}

#[derive(Debug, Args)]
pub(crate) struct ExploreArgs {
    /// Only this library (name or `local://<id>`).
    #[arg(long)]
    pub(crate) library: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct FindPathsArgs {
    /// Folder keywords, comma-separated (OR-ed).
    #[arg(long, required = true)]
    pub(crate) patterns: String,
    /// Only this library (name or `local://<id>`).
    #[arg(long)]
    pub(crate) library: Option<String>,
    /// Folders returned (1–50, default 10).
    #[arg(long)]
    pub(crate) limit: Option<i64>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum ListSort {
    Recent,
    Oldest,
    Name,
}

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// `folder`, `library` or `notes` (checked by the tool).
    #[arg(long, required = true)]
    pub(crate) scope: String,
    /// A library name or `local://<id>` (scope library).
    #[arg(long)]
    pub(crate) library: Option<String>,
    /// A directory inside the watched folders (scopes folder and library).
    #[arg(long)]
    pub(crate) path: Option<PathBuf>,
    /// Document types, comma-separated (scopes folder and library).
    #[arg(long = "type", value_name = "TYPES")]
    pub(crate) doc_types: Option<String>,
    /// Modified at or after (ISO 8601, UTC, inclusive).
    #[arg(long)]
    pub(crate) modified_after: Option<String>,
    /// Modified at or before (ISO 8601, UTC, inclusive).
    #[arg(long)]
    pub(crate) modified_before: Option<String>,
    /// Note tags, comma-separated (AND; scope notes).
    #[arg(long)]
    pub(crate) tags: Option<String>,
    /// Items per page (1–200, default 50; at most 50 with snippets).
    #[arg(long)]
    pub(crate) limit: Option<i64>,
    /// Items skipped.
    #[arg(long)]
    pub(crate) offset: Option<i64>,
    /// Order: recent (default), oldest or name.
    #[arg(long, value_enum)]
    pub(crate) sort: Option<ListSort>,
    /// Include snippets.
    #[arg(long, conflicts_with = "no_snippet")]
    pub(crate) snippet: bool,
    /// Leave snippets out.
    #[arg(long)]
    pub(crate) no_snippet: bool,
}

fn fail(printer: Printer, message: &str) -> ExitCode {
    printer.error(message);
    printer.exit(Outcome::Failed)
}

/// `linkly library …`: edits the config's libraries.
pub(crate) fn library(
    data: &DataDir,
    cmd: LibraryCommand,
    printer: Printer,
) -> anyhow::Result<ExitCode> {
    let mut config = linkly_core::Config::load(data)?;
    let watched_before = config.folders.len();
    match cmd {
        LibraryCommand::Add {
            name,
            folders,
            description,
            tags,
        } => {
            let tags = tags.map(|t| normalise_tags(&t)).transpose()?;
            let id = config.add_library(
                &name,
                description.as_deref().unwrap_or(""),
                &folders,
                tags.as_deref().unwrap_or(&[]),
            )?;
            config.save(data)?;
            println!("Added library {name} (local://{id})");
        }
        LibraryCommand::Remove { library } => {
            let lib = config.remove_library(&library)?;
            config.save(data)?;
            println!(
                "Removed library {} ({}); its folders stay watched",
                lib.name,
                lib.address()
            );
        }
        LibraryCommand::Edit {
            library,
            name,
            description,
            add_folders,
            remove_folders,
            tags,
        } => {
            let edit = LibraryEdit {
                name,
                description,
                add_folders,
                remove_folders,
                tags: tags.map(|t| normalise_tags(&t)).transpose()?,
            };
            let lib = config.edit_library(&library, &edit)?;
            println!("Updated library {} ({})", lib.name, lib.address());
            config.save(data)?;
        }
        LibraryCommand::List => {
            if printer.json {
                let libs: Vec<Value> = config
                    .libraries
                    .iter()
                    .map(|l| {
                        json!({"name": l.name, "id": l.address(), "description": l.description,
                               "folders": l.folders, "tags": l.tags})
                    })
                    .collect();
                println!("{}", json!({"status": "success", "libraries": libs}));
            } else if config.libraries.is_empty() {
                println!("No libraries. Define one with `linkly library add <name> <folder>…`.");
            } else {
                for l in &config.libraries {
                    println!("{} ({}): {}", l.name, l.address(), l.description);
                    for f in &l.folders {
                        println!("  {}", f.display());
                    }
                    if !l.tags.is_empty() {
                        println!("  notes tagged: {}", l.tags.join(", "));
                    }
                }
            }
        }
    }
    for f in &config.folders[watched_before.min(config.folders.len())..] {
        println!(
            "Watching {} (library folders are watched); run `linkly index` to index it",
            f.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `linkly list-libraries`: sends `{}` only, so `--json` wraps the Markdown as `content`.
pub(crate) fn list_libraries(data: &DataDir, printer: Printer) -> anyhow::Result<ExitCode> {
    let linkly = open_tools(data)?;
    let outcome = match linkly.call("list_libraries", json!({})) {
        Ok(out) if !out.is_error => printer.success("list_libraries", &out.text)?,
        Ok(out) => {
            printer.error(&format!("Tool error: {}", tool_error_message(&out.text)));
            Outcome::Failed
        }
        Err(e) => {
            printer.error(&e.to_string());
            Outcome::Failed
        }
    };
    Ok(printer.exit(outcome))
}

pub(crate) fn explore(
    data: &DataDir,
    a: ExploreArgs,
    printer: Printer,
) -> anyhow::Result<ExitCode> {
    let mut args = Map::new();
    put(&mut args, "library", a.library.map(|v| json!(v)));
    let linkly = open_tools(data)?;
    Ok(printer.exit(call_once(&linkly, printer, "explore", args)))
}

pub(crate) fn find_paths(
    data: &DataDir,
    a: FindPathsArgs,
    printer: Printer,
) -> anyhow::Result<ExitCode> {
    if let Err(e) = check_limit(a.limit) {
        return Ok(fail(printer, &e.to_string()));
    }
    let patterns = comma_list(&a.patterns);
    if patterns.is_empty() {
        return Ok(fail(
            printer,
            "--patterns was given but contains no keyword (use e.g. --patterns notion,export)",
        ));
    }
    let mut args = Map::new();
    args.insert("patterns".into(), json!(patterns));
    put(&mut args, "library", a.library.map(|v| json!(v)));
    put(&mut args, "limit", a.limit.map(|v| json!(v)));
    let linkly = open_tools(data)?;
    Ok(printer.exit(call_once(&linkly, printer, "find_paths", args)))
}

/// Lower-cases and checks `--type` tokens against the supported ones.
fn doc_types(raw: &str) -> anyhow::Result<Vec<String>> {
    let types: Vec<String> = comma_list(raw)
        .iter()
        .map(|t| t.to_ascii_lowercase())
        .collect();
    let bad: Vec<&str> = types
        .iter()
        .filter(|t| DocType::from_token(t).is_err())
        .map(String::as_str)
        .collect();
    if !bad.is_empty() {
        bail!(
            "Unknown document type(s): {}. Supported: {}",
            bad.join(", "),
            DocType::supported_list()
        );
    }
    Ok(types)
}

pub(crate) fn list(data: &DataDir, a: ListArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    if let Err(e) = check_limit(a.limit) {
        return Ok(fail(printer, &e.to_string()));
    }
    let mut args = Map::new();
    args.insert("scope".into(), json!(a.scope));
    put(&mut args, "library", a.library.map(|v| json!(v)));
    if let Some(p) = a.path {
        // A relative path is taken from the current directory; the tool checks the rest.
        let p = if p.is_relative() {
            std::env::current_dir()?.join(p)
        } else {
            p
        };
        args.insert("path".into(), json!(p.to_string_lossy()));
    }
    if let Some(t) = &a.doc_types {
        match doc_types(t) {
            Ok(types) => {
                args.insert("doc_types".into(), json!(types));
            }
            Err(e) => return Ok(fail(printer, &e.to_string())),
        }
    }
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
    if let Some(t) = &a.tags {
        match normalise_tags(t) {
            Ok(tags) => {
                args.insert("tags".into(), json!(tags));
            }
            Err(e) => return Ok(fail(printer, &e.to_string())),
        }
    }
    put(&mut args, "limit", a.limit.map(|v| json!(v)));
    put(&mut args, "offset", a.offset.map(|v| json!(v)));
    put(
        &mut args,
        "sort",
        a.sort.map(|s| {
            json!(match s {
                ListSort::Recent => "recent",
                ListSort::Oldest => "oldest",
                ListSort::Name => "name",
            })
        }),
    );
    if a.snippet {
        args.insert("snippet".into(), json!(true));
    } else if a.no_snippet {
        args.insert("snippet".into(), json!(false));
    }
    // `list` always says which format it wants (the default differs by scope).
    args.insert(
        "output_format".into(),
        json!(if printer.json { "json" } else { "markdown" }),
    );
    let linkly = open_tools(data)?;
    Ok(printer.exit(call_once(&linkly, printer, "list", args)))
}
