//! Keeps a folder fresh and searches it, as a Rust program embedding Linkly would.
//!
//! ```sh
//! cargo run -p linkly-tools --example keep_fresh            # a scratch folder, checked end to end
//! cargo run -p linkly-tools --example keep_fresh -- ~/Notes # your folder: index, watch, search
//! ```
//!
//! With no argument it makes a scratch folder and data directory, starts the keep-fresh engine,
//! writes a file while the engine runs and waits until `search` finds it (exit 1 if it never
//! does), then saves a note and finds it by its tag. With a folder, it indexes it, watches it,
//! and answers queries typed on stdin until end of input.

// An example prints its results.
#![allow(clippy::print_stdout, clippy::print_stderr, missing_docs)]

use std::io::BufRead;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use linkly_core::{Config, DataDir};
use linkly_tools::{
    FreshEvent, KeepFreshOptions, Linkly, NoteSaveParams, SearchParams, extraction_worker_hook,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // First thing: lets Linkly run risky extractions (PDF) in a child copy of this program.
    extraction_worker_hook();

    let scratch = tempfile::tempdir()?;
    let folder = match std::env::args_os().nth(1) {
        Some(f) => PathBuf::from(f),
        None => {
            let f = scratch.path().join("docs");
            fs_err::create_dir_all(&f)?;
            fs_err::write(f.join("plan.md"), "# Plan\n\nThe budget for 2024 is set.\n")?;
            f
        }
    };
    let interactive = std::env::args_os().nth(1).is_some();

    // A data directory (index, config, notes) watching the folder.
    let data = DataDir::new(scratch.path().join("home"));
    let mut config = Config::default();
    config.add_folder(&folder)?;
    config.save(&data)?;
    let linkly = Arc::new(Linkly::open(data)?);

    // The continuous form: reconcile, then watch; embeddings follow when a model is on disk.
    let engine = linkly.keep_fresh(
        KeepFreshOptions {
            watch: true,
            fetch_model: false,
        },
        |event| match event {
            FreshEvent::Synced { report, full } => eprintln!(
                "{} sync: {} new, {} changed, {} removed in {} ms",
                if *full { "full" } else { "watcher" },
                report.added,
                report.updated,
                report.removed,
                report.elapsed_ms
            ),
            FreshEvent::Failed(m) => eprintln!("error: {m}"),
            _ => {}
        },
    )?;
    if !engine.wait_ready(Duration::from_secs(60)) {
        return Err("the first reconcile did not finish in 60 s".into());
    }
    println!("ready: {}", linkly.coverage()?.one_line());

    if interactive {
        println!("type a query per line (end of input stops)");
        for line in std::io::stdin().lock().lines() {
            let query = line?;
            if query.trim().is_empty() {
                continue;
            }
            let found = linkly.search(SearchParams {
                query,
                limit: Some(5),
                ..Default::default()
            })?;
            for hit in found.results {
                println!("{} {} — {}", hit.doc_id, hit.path, hit.snippet);
            }
        }
        return Ok(());
    }

    // A file written while the engine runs becomes searchable without any call to index.
    let written = Instant::now();
    fs_err::write(
        folder.join("trip.md"),
        "# Trip\n\nThe ferry to the island leaves at nine.\n",
    )?;
    let mut found = None;
    while written.elapsed() < Duration::from_secs(10) {
        let r = linkly.search(SearchParams {
            query: "ferry island".into(),
            ..Default::default()
        })?;
        if let Some(hit) = r.results.into_iter().find(|h| h.path.ends_with("trip.md")) {
            found = Some(hit);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let Some(hit) = found else {
        return Err("the new file was not searchable within 10 s".into());
    };
    println!(
        "found {} ({}) {} ms after it was written",
        hit.path,
        hit.doc_id,
        written.elapsed().as_millis()
    );

    // A note is indexed before note_save answers: its tag finds it in the next call.
    let saved = linkly.note_save(NoteSaveParams {
        mode: linkly_tools::NoteMode::Create,
        content: "Call the ferry company #travel".into(),
        ..Default::default()
    })?;
    let by_tag = linkly.search(SearchParams {
        query: "ferry".into(),
        scope: Some(linkly_tools::SearchScope::Notes),
        tags: Some(vec!["travel".into()]),
        ..Default::default()
    })?;
    if saved.doc_id.is_none() || by_tag.results.len() != 1 {
        return Err(format!("the note was not searchable at once: {saved:?} / {by_tag:?}").into());
    }
    println!("note {} found by its tag", saved.doc_id.unwrap_or_default());
    drop(engine);
    Ok(())
}
