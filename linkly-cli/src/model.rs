//! `linkly model status|download|use|import|embed`, and what `linkly index` says of its embedding step (the
//! step itself is `linkly-tools`' keep-fresh engine, which `linkly serve` runs too).

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[cfg(not(feature = "download"))]
use anyhow::bail;
use linkly_core::DataDir;
use linkly_index::vector::{
    ImportOptions, KNOWN_MODELS, ModelChoice, ModelManager, TextEmbedder, canonical_name,
};
use linkly_index::{EmbedProgress, Index, ModelStatus};
use serde_json::json;

use crate::args::ModelCommand;
use crate::output::Printer;

pub(crate) fn run(data: &DataDir, cmd: ModelCommand, printer: Printer) -> anyhow::Result<ExitCode> {
    let manager = ModelManager::new(data.root());
    match cmd {
        ModelCommand::Status => status(data, &manager, printer),
        ModelCommand::Calibrate => calibrate(&manager, printer),
        ModelCommand::Download { name } => {
            if let Some(id) = name.as_deref().and_then(crate::speech::hub_id) {
                let dir = download(&manager, id)?;
                return crate::speech::install_downloaded(data, id, &dir, printer);
            }
            let name = name.map_or_else(|| manager.selected(), |n| canonical_name(&n));
            let dir = download(&manager, &name)?;
            if printer.json {
                println!(
                    "{}",
                    json!({"status": "success", "model": name, "dir": dir})
                );
            } else {
                println!("Downloaded {name} into {}", dir.display());
                if manager.selected() != name {
                    println!("Select it with `linkly model use {name}`.");
                } else {
                    println!("Run `linkly index` to embed your documents with it.");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        ModelCommand::Import { path, .. } if crate::speech::is_whisper(&path) => {
            crate::speech::import(data, &path, printer)
        }
        ModelCommand::Import {
            path,
            name,
            replace,
        } => import(&manager, &path, ImportOptions { name, replace }, printer),
        ModelCommand::Embed { query, texts, .. } => embed(&manager, query, &texts, printer),
        ModelCommand::Use { name } => {
            let name = manager.select(&name)?;
            let present = manager.choice().is_present();
            if printer.json {
                println!(
                    "{}",
                    json!({"status": "success", "model": name, "present": present})
                );
            } else {
                println!("Selected {name}.");
                if !present {
                    println!(
                        "Download it with `linkly model download` (or `linkly serve` does it)."
                    );
                }
                println!(
                    "The next `linkly index` embeds the documents with it; until then search is keyword-only."
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn import(
    manager: &ModelManager,
    path: &std::path::Path,
    options: ImportOptions,
    printer: Printer,
) -> anyhow::Result<ExitCode> {
    if !printer.json {
        eprintln!("Reading {} ...", path.display());
    }
    let imported = manager.import(path, &options).map_err(|e| {
        anyhow::anyhow!(
            "{e}; nor is it a Whisper speech model: {}",
            crate::speech::not_whisper(path)
        )
    })?;
    let selected = manager.selected() == imported.name;
    // Prepared while it was checked: the first search reads it instead of computing it.
    let prepared = TextEmbedder::prepared_state(&ModelChoice {
        name: imported.name.clone(),
        dir: imported.dir.clone(),
        from_env: false,
        cache: Some(manager.cache_of(&imported.name)),
    });
    if printer.json {
        println!(
            "{}",
            json!({
                "status": "success", "model": imported.name, "dir": imported.dir,
                "source": imported.kind, "dim": imported.dim, "selected": selected,
                "prepared": prepared.problem.is_none().then_some(&prepared.path),
            })
        );
    } else {
        println!(
            "Installed {} ({}, {} dimensions) into {}",
            imported.name,
            imported.kind,
            imported.dim,
            imported.dir.display()
        );
        if let (None, Some(path)) = (&prepared.problem, &prepared.path) {
            println!(
                "Prepared for this CPU ({}): {}",
                prepared.precision.as_deref().unwrap_or("?"),
                path.display()
            );
        }
        if selected {
            println!(
                "It is the selected model: run `linkly index` to embed your documents with it."
            );
        } else {
            println!("Select it with `linkly model use {}`.", imported.name);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The model chosen, or an error saying how to get it when it is not on disk.
fn on_disk(manager: &ModelManager) -> anyhow::Result<ModelChoice> {
    let choice = manager.choice();
    if !choice.is_present() {
        anyhow::bail!(
            "the model {} is not on disk in {} (`linkly model download`, or `linkly model import <file>`)",
            choice.name,
            choice.dir.display()
        );
    }
    Ok(choice)
}

fn embed(
    manager: &ModelManager,
    query: bool,
    texts: &[String],
    printer: Printer,
) -> anyhow::Result<ExitCode> {
    let choice = on_disk(manager)?;
    let model = TextEmbedder::load(&choice)?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = if query {
        refs.iter()
            .map(|t| model.embed_query(t))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        model.embed_passages(&refs)?
    };
    let kind = if query { "query" } else { "passage" };
    for (text, v) in texts.iter().zip(&vectors) {
        if printer.json {
            println!(
                "{}",
                json!({"model": choice.name, "kind": kind, "text": text, "dim": v.len(), "vector": v})
            );
        } else {
            let shown: Vec<String> = v.iter().map(|x| format!("{x:.6}")).collect();
            println!("{}", shown.join(" "));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn status(data: &DataDir, manager: &ModelManager, printer: Printer) -> anyhow::Result<ExitCode> {
    let choice = manager.choice();
    let index = Index::open(&data.index_dir())?;
    let model = index.attach_selected_model(data.root());
    let stats = index.vector_stats()?;
    let prepared = TextEmbedder::prepared_state(&choice);
    if printer.json {
        println!(
            "{}",
            json!({
                "status": "success",
                "model": choice.name,
                "dir": choice.dir,
                "from_env": choice.from_env,
                "present": choice.is_present(),
                "state": model.describe(),
                "vectors": {
                    "model": stats.model, "chunks": stats.chunks,
                    "embedded_docs": stats.embedded_docs, "pending_docs": stats.pending_docs,
                },
                "speech": crate::speech::status_json(data),
                "calibration": calibration_of(&choice),
                "prepared": {
                    "precision": prepared.precision, "path": prepared.path,
                    "ready": prepared.problem.is_none(), "problem": prepared.problem,
                },
                "engine": std::env::var(linkly_core::env::LINKLY_EMBED_ENGINE).ok(),
                "known": KNOWN_MODELS.iter().map(|(n, about)| json!({"name": n, "about": about})).collect::<Vec<_>>(),
            })
        );
    } else {
        println!("Model: {}", model.describe());
        println!(
            "Folder: {}{}",
            choice.dir.display(),
            if choice.from_env {
                " (LINKLY_MODEL_DIR)"
            } else {
                ""
            }
        );
        println!(
            "Vectors: {} chunks of {} documents ({} waiting){}",
            stats.chunks,
            stats.embedded_docs,
            stats.pending_docs,
            stats
                .model
                .map(|m| format!(", embedded with {m}"))
                .unwrap_or_default()
        );
        println!(
            "Search mode: {}",
            if matches!(model, ModelStatus::Ready { .. }) && stats.chunks > 0 {
                "hybrid"
            } else {
                "keyword"
            }
        );
        println!("Embedding path: {}", embedding_path(&choice));
        println!(
            "Prepared weights: {}",
            match (&prepared.problem, &prepared.path) {
                (None, Some(path)) => format!(
                    "ready ({}, checksums verified): {}",
                    prepared.precision.as_deref().unwrap_or("?"),
                    path.display()
                ),
                (Some(why), Some(path)) => {
                    format!("not ready ({why}); the next load writes {}", path.display())
                }
                (Some(why), None) => format!("not ready ({why})"),
                (None, None) => "ready".into(),
            }
        );
        println!("Speech model: {}", crate::speech::status(data).1);
        println!("Known models:");
        for (n, about) in KNOWN_MODELS {
            println!("  {n}: {about}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The model's calibration: beside it, or in the data directory's cache when its folder is
/// read-only.
fn calibration_of(choice: &ModelChoice) -> Option<linkly_models::calibration::Calibration> {
    linkly_models::calibration::read(&choice.dir).or_else(|| {
        choice
            .cache
            .as_deref()
            .and_then(linkly_models::calibration::read)
    })
}

/// The path the encoder runs on this CPU: forced by `LINKLY_EMBED_ENGINE`, or the calibration's
/// choice with the figures behind it.
fn embedding_path(choice: &ModelChoice) -> String {
    if let Some(engine) = std::env::var(linkly_core::env::LINKLY_EMBED_ENGINE)
        .ok()
        .filter(|e| !e.is_empty())
    {
        return format!("{engine} (forced by LINKLY_EMBED_ENGINE)");
    }
    let Some(c) = calibration_of(choice) else {
        return "not measured yet (the model's first load measures it)".into();
    };
    let here = linkly_models::calibration::Fingerprint::here();
    let figures: Vec<String> = c
        .paths
        .iter()
        .map(|p| {
            format!(
                "{} {:.1} ms, cosine {:.5}{}",
                p.precision,
                p.ms,
                p.least_cosine,
                if p.kept { "" } else { ", not kept" }
            )
        })
        .collect();
    format!(
        "{}, the fastest that keeps the vectors on this CPU ({}){}",
        c.chosen,
        figures.join("; "),
        if c.fingerprint == here {
            ""
        } else {
            " — measured on another CPU or version: the next load measures again"
        }
    )
}

/// `linkly model calibrate`: the calibration measured again on the selected model.
fn calibrate(manager: &ModelManager, printer: Printer) -> anyhow::Result<ExitCode> {
    if let Ok(engine) = std::env::var(linkly_core::env::LINKLY_EMBED_ENGINE)
        && !engine.is_empty()
    {
        anyhow::bail!(
            "LINKLY_EMBED_ENGINE={engine} forces the embedding path; unset it to calibrate"
        );
    }
    let choice = on_disk(manager)?;
    linkly_models::calibration::forget(&choice.dir)?;
    if let Some(cache) = &choice.cache {
        linkly_models::calibration::forget(cache)?;
    }
    TextEmbedder::load(&choice)?;
    let c = calibration_of(&choice).ok_or_else(|| {
        anyhow::anyhow!(
            "the calibration could not be saved in {}",
            choice.dir.display()
        )
    })?;
    if printer.json {
        println!(
            "{}",
            json!({"status": "success", "model": choice.name, "calibration": c})
        );
    } else {
        println!("{}: {}", choice.name, embedding_path(&choice));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(feature = "download")]
fn download(manager: &ModelManager, name: &str) -> anyhow::Result<std::path::PathBuf> {
    let tty = std::io::stderr().is_terminal();
    let mut meter = DownloadMeter::new(tty);
    let dir = manager.download(name, &mut |p| meter.update(p))?;
    meter.finish();
    Ok(dir)
}

/// The download's progress on stderr: a line rewritten in place on a terminal, else a line
/// every five seconds; each file's start (or resumption) and end on a line of its own.
#[cfg(feature = "download")]
struct DownloadMeter {
    tty: bool,
    /// The file and the attempt (its resume offset) being shown.
    current: Option<(String, u64)>,
    started: Instant,
    last: Instant,
    /// A progress line is on screen (terminal) and needs a newline before the next message.
    open_line: bool,
}

#[cfg(feature = "download")]
impl DownloadMeter {
    fn new(tty: bool) -> DownloadMeter {
        DownloadMeter {
            tty,
            current: None,
            started: Instant::now(),
            last: Instant::now(),
            open_line: false,
        }
    }

    fn update(&mut self, p: &linkly_index::vector::DownloadProgress) {
        let key = (p.file.clone(), p.resumed_from);
        if self.current.as_ref() != Some(&key) {
            self.end_line();
            if p.resumed_from > 0 {
                eprintln!(
                    "{}: resuming at {} of {}",
                    p.file,
                    mb(p.resumed_from),
                    size(p.total)
                );
            } else {
                eprintln!("{}: {}", p.file, size(p.total));
            }
            self.current = Some(key);
            self.started = Instant::now();
            self.last = Instant::now();
        }
        let finished = p.total > 0 && p.done >= p.total;
        let every = Duration::from_millis(if self.tty { 200 } else { 5000 });
        if !finished && self.last.elapsed() < every {
            return;
        }
        self.last = Instant::now();
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let rate = (p.done - p.resumed_from) as f64 / 1e6 / secs;
        let percent = if p.total > 0 {
            format!(" ({:.0}%)", p.done as f64 * 100.0 / p.total as f64)
        } else {
            String::new()
        };
        let line = format!(
            "  {}: {} / {}{percent}, {rate:.1} MB/s",
            p.file,
            mb(p.done),
            size(p.total)
        );
        if self.tty {
            eprint!("\r{line}   ");
            self.open_line = true;
            if finished {
                self.end_line();
            }
        } else {
            eprintln!("{line}");
        }
    }

    fn end_line(&mut self) {
        if self.open_line {
            eprintln!();
            self.open_line = false;
        }
    }

    fn finish(&mut self) {
        self.end_line();
    }
}

/// A byte count for people: `470.1 MB`, `17.1 kB`.
#[cfg(feature = "download")]
fn mb(bytes: u64) -> String {
    if bytes < 1_000_000 {
        format!("{:.1} kB", bytes as f64 / 1e3)
    } else {
        format!("{:.1} MB", bytes as f64 / 1e6)
    }
}

/// A file's size, which the server may not have given.
#[cfg(feature = "download")]
fn size(bytes: u64) -> String {
    if bytes == 0 {
        "size unknown".into()
    } else {
        mb(bytes)
    }
}

#[cfg(not(feature = "download"))]
fn download(manager: &ModelManager, name: &str) -> anyhow::Result<std::path::PathBuf> {
    bail!(
        "this linkly was built without model download; put {name}'s files (config.json, tokenizer.json, model.safetensors) in {} or set LINKLY_MODEL_DIR",
        manager.dir_of(name).display()
    )
}

pub(crate) fn embed_progress() -> impl FnMut(&EmbedProgress) {
    let started = Instant::now();
    let mut last = Instant::now();
    move |p: &EmbedProgress| {
        if p.total > 0 && (last.elapsed() >= Duration::from_secs(5) || p.done == p.total) {
            last = Instant::now();
            let secs = started.elapsed().as_secs_f64().max(1e-3);
            eprintln!(
                "embedding: {}/{} documents, {} chunks ({:.1} chunks/s)",
                p.done,
                p.total,
                p.chunks,
                p.chunks as f64 / secs
            );
        }
    }
}

/// After `linkly index`: says what the embedding step did, or why search stays keyword-only.
pub(crate) fn after_index(done: &linkly_tools::IndexNowReport) {
    match (&done.model, &done.embed) {
        (ModelStatus::Ready { .. }, Some(r)) => {
            if r.docs > 0 || r.removed > 0 {
                eprintln!(
                    "Embedded {} documents ({} chunks) in {:.1}s.",
                    r.docs,
                    r.chunks,
                    r.elapsed_ms as f64 / 1000.0
                );
            }
        }
        (ModelStatus::Broken { reason, .. }, _) => {
            eprintln!(
                "Warning: the embedding model does not load ({reason}); search is keyword-only"
            )
        }
        (other, _) => eprintln!(
            "Note: {}; search is keyword-only (`linkly model download`)",
            other.describe()
        ),
    }
}
