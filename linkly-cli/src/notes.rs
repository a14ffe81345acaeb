//! `linkly note-save`: the one write, as a subcommand. Local checks first (all before stdin is
//! read), then one `note_save` tool call.

use std::io::Read as _;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use linkly_core::DataDir;
use serde_json::{Map, Value, json};

use crate::commands::{normalise_tags, open_tools, tool_error_message};
use crate::output::{Outcome, Printer};

/// The largest body read from stdin (the tool's own cap): 10 MiB.
const MAX_STDIN_BYTES: u64 = 10 * 1024 * 1024;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum NoteMode {
    Create,
    Edit,
}

#[derive(Debug, Args)]
pub(crate) struct NoteSaveArgs {
    /// `create` a note or `edit` one.
    #[arg(long, value_enum)]
    pub(crate) mode: NoteMode,
    /// The Markdown body without front matter (on edit, the full revised body); `-` reads it
    /// from stdin.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) content: String,
    /// The note's UUID (required for edit; from `linkly list --scope notes`).
    #[arg(long)]
    pub(crate) note_id: Option<String>,
    /// The version last read (required for edit).
    #[arg(long)]
    pub(crate) base_version: Option<String>,
    /// Tags to add, comma-separated (the server appends the missing #tag tokens).
    #[arg(long)]
    pub(crate) tags: Option<String>,
    /// The host app's display name, stored as the note's source.
    #[arg(long)]
    pub(crate) app_name: Option<String>,
}

fn read_stdin() -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_STDIN_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_STDIN_BYTES {
        anyhow::bail!("Note content on stdin exceeds 10 MiB ({MAX_STDIN_BYTES} bytes)");
    }
    String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("Note content on stdin is not valid UTF-8"))
}

/// Runs `note-save`.
pub(crate) fn note_save(
    data: &DataDir,
    a: NoteSaveArgs,
    printer: Printer,
) -> anyhow::Result<ExitCode> {
    let fail = |message: &str| {
        printer.error(message);
        Ok(printer.exit(Outcome::Failed))
    };
    // Local checks, all before stdin is read.
    if matches!(a.mode, NoteMode::Edit) {
        let missing: Vec<&str> = [
            ("--note-id", a.note_id.is_none()),
            ("--base-version", a.base_version.is_none()),
        ]
        .into_iter()
        .filter_map(|(flag, absent)| absent.then_some(flag))
        .collect();
        if !missing.is_empty() {
            return fail(&format!(
                "--mode edit requires {} (get both from `linkly list --scope notes`).",
                missing.join(", ")
            ));
        }
    }
    let tags = match a.tags.as_deref().map(normalise_tags).transpose() {
        Ok(t) => t,
        Err(e) => return fail(&e.to_string()),
    };
    if a.app_name.as_deref().is_some_and(|n| n.trim().is_empty()) {
        return fail("--app-name must not be blank");
    }
    let content = if a.content == "-" {
        match read_stdin() {
            Ok(c) => c,
            Err(e) => return fail(&e.to_string()),
        }
    } else {
        a.content
    };
    if content.trim().is_empty() {
        return fail("Note content cannot be empty");
    }

    let mut args = Map::new();
    args.insert(
        "mode".into(),
        json!(match a.mode {
            NoteMode::Create => "create",
            NoteMode::Edit => "edit",
        }),
    );
    args.insert("content".into(), json!(content));
    for (key, value) in [
        ("note_id", a.note_id.map(Value::from)),
        ("base_version", a.base_version.map(Value::from)),
        ("tags", tags.map(Value::from)),
        ("app_name", a.app_name.map(Value::from)),
    ] {
        if let Some(v) = value {
            args.insert(key.into(), v);
        }
    }
    // note_save takes no output_format: its answer is always JSON.
    let linkly = open_tools(data)?;
    let outcome = match linkly.call("note_save", Value::Object(args)) {
        Ok(out) if !out.is_error => printer.success("note_save", &out.text)?,
        Ok(out) => {
            printer.error(&format!("Tool error: {}", tool_error_message(&out.text)));
            Outcome::Failed
        }
        Err(unknown) => {
            printer.error(&unknown.to_string());
            Outcome::Failed
        }
    };
    Ok(printer.exit(outcome))
}
