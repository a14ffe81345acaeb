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
    /// Prints a successful tool text and classifies it.
    pub(crate) fn success(&self, tool: &str, text: &str) -> std::io::Result<Outcome> {
        let mut out = std::io::stdout().lock();
        if self.json {
            let line = match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(mut map)) => {
                    map.insert("status".into(), json!("success"));
                    Value::Object(map).to_string()
                }
                _ => json!({"status": "success", "content": text}).to_string(),
            };
            writeln!(out, "{line}")?;
        } else {
            writeln!(out, "{text}")?;
        }
        Ok(if nothing_matched(tool, text) {
            Outcome::NothingMatched
        } else {
            Outcome::Found
        })
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

/// Whether a finding tool's text says nothing matched (JSON counts, else the Markdown header).
pub(crate) fn nothing_matched(tool: &str, text: &str) -> bool {
    if let Ok(Value::Object(v)) = serde_json::from_str::<Value>(text) {
        let zero = |key: &str| v.get(key).and_then(Value::as_u64) == Some(0);
        return match tool {
            "search" | "list" => zero("total"),
            "grep" => zero("total_matches"),
            "find_paths" => v
                .get("directories")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty),
            _ => false,
        };
    }
    match tool {
        "search" => {
            text.contains("No results found for")
                || text.lines().any(|l| {
                    l.strip_prefix("Showing top ")
                        .and_then(|rest| rest.split(" of ").nth(1))
                        .and_then(|rest| rest.split_whitespace().next())
                        .is_some_and(|m| m == "0")
                })
        }
        "grep" => text.lines().any(|l| l.starts_with("Found 0 matches")),
        "find_paths" => text.contains("No folder candidates matched"),
        // `Showing N of M files` / `… notes`: M, so an empty page past the end still found.
        "list" => text.lines().any(|l| {
            l.strip_prefix("Showing ")
                .and_then(|rest| rest.split(" of ").nth(1))
                .and_then(|rest| rest.split_whitespace().next())
                .is_some_and(|m| m == "0")
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_nothing_matched() {
        assert!(nothing_matched(
            "search",
            "# Search Results\n\nNo results found for \"x\"."
        ));
        assert!(!nothing_matched(
            "search",
            "Showing top 2 of 5 results for \"x\""
        ));
        assert!(nothing_matched("search", r#"{"total":0,"results":[]}"#));
        assert!(nothing_matched(
            "grep",
            "# Grep Results\n\nFound 0 matches in a (local://1) for `x`"
        ));
        assert!(!nothing_matched("grep", r#"{"total_matches":3}"#));
        assert!(!nothing_matched("read", "anything"));
        assert!(nothing_matched(
            "list",
            "# Files\n\nShowing 0 of 0 files (sort: recent, offset: 0) — target: /x"
        ));
        assert!(!nothing_matched(
            "list",
            "# Files\n\nShowing 0 of 12 files (sort: recent, offset: 50) — target: /x"
        ));
        assert!(nothing_matched(
            "find_paths",
            "# Find Paths\n\nNo folder candidates matched."
        ));
    }
}
