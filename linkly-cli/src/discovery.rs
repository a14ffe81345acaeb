//! Discovery commands: `library add|remove|list|edit` (the config's libraries) and the tool
//! commands `list-libraries`, `explore`, `find-paths` and `list`.

use std::process::ExitCode;

use linkly_core::{DataDir, LibraryEdit};
use linkly_tools::{ExploreParams, FindPathsParams, ListLibrariesParams, ListParams};
use serde_json::{Value, json};

use crate::args::{LibraryCommand, ListArgs};
use crate::call::{self, comma_list, read_once};
use crate::output::Printer;

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
            // The config normalises tags (`#`, case, blanks).
            let tags = tags.as_deref().map(comma_list);
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
                tags: tags.as_deref().map(comma_list),
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

/// `linkly list-libraries`: `--json` wraps the Markdown as `content` (the tool has no JSON).
pub(crate) fn list_libraries(data: &DataDir, printer: Printer) -> anyhow::Result<ExitCode> {
    read_once(data, printer, &ListLibrariesParams {})
}

/// `linkly explore`.
pub(crate) fn explore(
    data: &DataDir,
    params: ExploreParams,
    printer: Printer,
) -> anyhow::Result<ExitCode> {
    read_once(data, printer, &params)
}

/// `linkly find-paths`.
pub(crate) fn find_paths(
    data: &DataDir,
    params: FindPathsParams,
    printer: Printer,
) -> anyhow::Result<ExitCode> {
    read_once(data, printer, &params)
}

/// `linkly list`.
pub(crate) fn list(data: &DataDir, a: ListArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    // A relative path is taken from the current directory; the tool checks the rest.
    let path = match a.params.path {
        Some(p) if std::path::Path::new(&p).is_relative() => Some(
            std::env::current_dir()?
                .join(p)
                .to_string_lossy()
                .into_owned(),
        ),
        p => p,
    };
    let doc_types = match call::doc_types(a.doc_types.as_deref(), printer) {
        Ok(types) => types,
        Err(code) => return Ok(code),
    };
    let params = ListParams {
        path,
        doc_types,
        snippet: if a.no_snippet {
            Some(false)
        } else {
            a.params.snippet
        },
        ..a.params
    };
    read_once(data, printer, &params)
}
