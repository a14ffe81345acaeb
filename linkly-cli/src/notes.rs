//! `linkly note-save`: the one write, as a subcommand: one `note_save` tool call.
//!
//! The tool checks every parameter. The few checks here are about the command line itself and
//! run before stdin is read, so that a wrong invocation fails at once instead of waiting for a
//! body on stdin: edit's two required flags, and `--tags`/`--app-name` that hold nothing.

use std::io::Read as _;
use std::process::ExitCode;

use linkly_core::DataDir;
use linkly_tools::NoteSaveParams;

use linkly_tools::NoteMode;

use crate::backend;
use crate::call::call_once;
use crate::output::{Outcome, Printer};

/// The largest body read from stdin (the tool's own cap): 10 MiB.
const MAX_STDIN_BYTES: u64 = 10 * 1024 * 1024;

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
    a: NoteSaveParams,
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
    if a.tags
        .as_deref()
        .is_some_and(|t| linkly_core::normalise_tags(t).is_empty())
    {
        return fail("--tags was given but contains no usable tag (use e.g. --tags work,ideas)");
    }
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
    let params = NoteSaveParams { content, ..a };
    let linkly = backend::open(data)?;
    Ok(printer.exit(call_once(&linkly, printer, &params)))
}
