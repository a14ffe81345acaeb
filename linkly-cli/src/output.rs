//! How results reach the terminal: Markdown verbatim or JSON with a status, errors on stderr
//! (or as JSON on stdout), and the exit codes.

use std::io::Write;
use std::process::ExitCode;

use serde_json::{Value, json};

/// Exit status of a failure without `--exit-code`.
pub(crate) const EXIT_FAILURE_PLAIN: u8 = 1;

/// What a command found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Something was found (or the command is not a finding command).
    Found,
    /// A search, grep, find-paths or list matched nothing.
    NothingMatched,
    /// The command failed.
    Failed,
}

impl Outcome {
    /// Combines the outcomes of several calls (one per id): found if any found.
    pub(crate) fn merge(self, other: Outcome) -> Outcome {
        match (self, other) {
            (Outcome::Found, _) | (_, Outcome::Found) => Outcome::Found,
            (Outcome::NothingMatched, _) | (_, Outcome::NothingMatched) => Outcome::NothingMatched,
            _ => Outcome::Failed,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Printer {
    pub(crate) json: bool,
    pub(crate) exit_code: bool,
}

impl Printer {
    /// Prints a successful tool text: verbatim, or with `--json` as its JSON object plus
    /// `"status": "success"` (a Markdown answer becomes `content`).
    pub(crate) fn success(&self, text: &str) -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        if self.json {
            let line = match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(mut map)) => {
                    map.insert("status".into(), json!("success"));
                    Value::Object(map).to_string()
                }
                _ => json!({"status": "success", "content": text}).to_string(),
            };
            writeln!(out, "{line}")
        } else {
            writeln!(out, "{text}")
        }
    }

    /// Prints an error: `Error: …` on stderr, or `{"status":"error","message"}` on stdout.
    pub(crate) fn error(&self, message: &str) {
        if self.json {
            println!("{}", json!({"status": "error", "message": message}));
        } else {
            eprintln!("Error: {message}");
        }
    }

    /// Prints a warning on stderr (never in JSON's stdout).
    pub(crate) fn warn(&self, message: &str) {
        eprintln!("Warning: {message}");
    }

    /// The exit code for an outcome.
    pub(crate) fn exit(&self, outcome: Outcome) -> ExitCode {
        ExitCode::from(match (outcome, self.exit_code) {
            (Outcome::Found, _) => 0,
            (Outcome::NothingMatched, true) => 1,
            (Outcome::NothingMatched, false) => 0,
            (Outcome::Failed, true) => 2,
            (Outcome::Failed, false) => EXIT_FAILURE_PLAIN,
        })
    }
}
