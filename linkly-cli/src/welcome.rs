//! `linkly` alone on a terminal: what to do next (add a folder, open the window, connect an
//! agent), from where this data directory stands, instead of a usage error. Without a terminal
//! (a script, a pipe) `linkly` alone stays the usage error it always was, with its exit code 2.

use std::fmt::Write as _;
use std::io::IsTerminal as _;

use linkly_core::{Config, DataDir};

/// Whether `linkly` runs with no argument at all, for a person at a terminal: both standard
/// input and output are one.
pub(crate) fn wanted() -> bool {
    std::env::args_os().len() == 1
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
}

/// The first-run guide for this data directory.
pub(crate) fn text(data: &DataDir) -> String {
    let mut out = String::new();
    let version = env!("CARGO_PKG_VERSION");
    let _ = writeln!(
        out,
        "Linkly {version}: your documents, searchable by you and by your AI agents.\n"
    );
    let root = data.root().display();
    let config = Config::load(data);
    let folders = config
        .as_ref()
        .map(|c| c.folders.clone())
        .unwrap_or_default();
    match &config {
        Err(e) => {
            let _ = writeln!(out, "Data directory {root}: {e}\n");
        }
        Ok(_) if folders.is_empty() => {
            let _ = writeln!(out, "Data directory {root}: no folder watched yet.\n");
        }
        Ok(_) => {
            let list: Vec<String> = folders.iter().map(|f| f.display().to_string()).collect();
            let _ = writeln!(
                out,
                "Data directory {root}: watching {} ({}).\n",
                plural(folders.len(), "folder"),
                list.join(", ")
            );
        }
    }
    let _ = writeln!(out, "What next:");
    if folders.is_empty() {
        let _ = writeln!(
            out,
            "  1. Add a folder and index it:   linkly index ~/Documents"
        );
    } else {
        let _ = writeln!(
            out,
            "  1. Bring the index up to date:  linkly index       (more folders: linkly folders add DIR)"
        );
    }
    let _ = writeln!(
        out,
        "  2. Search it:                   linkly search \"quarterly budget\""
    );
    let _ = writeln!(
        out,
        "  3. Open the window:             linkly open        (search, read, folders, agents)"
    );
    let _ = writeln!(
        out,
        "  4. Connect an agent (Claude Desktop, Cursor, VS Code: see the window's Agents page):"
    );
    let _ = writeln!(out, "       claude mcp add linkly -- linkly mcp");
    let _ = writeln!(
        out,
        "       {{\"command\": \"linkly\", \"args\": [\"mcp\"]}}           (linkly on the client's PATH)"
    );
    let _ = writeln!(
        out,
        "       {{\"command\": \"uvx\", \"args\": [\"linkly\", \"mcp\"]}}    (uv runs it, nothing installed first)"
    );
    let _ = writeln!(
        out,
        "\nEvery command: linkly --help. Check the installation: linkly doctor."
    );
    out
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}
