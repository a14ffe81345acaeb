//! The client configurations of `docs/clients.md` and the commands of the README work with the
//! real command line: every JSON snippet parses and names `linkly` with arguments the binary
//! accepts, every `claude mcp add` and `linkly …` line parses, and the install line points at
//! the crate that builds `linkly`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The fenced blocks of a Markdown file: (info string, body).
fn fenced_blocks(text: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        match &mut current {
            None if trimmed.starts_with("```") => {
                current = Some((
                    trimmed.trim_start_matches('`').trim().to_string(),
                    String::new(),
                ));
            }
            Some(_) if trimmed.starts_with("```") => blocks.push(current.take().unwrap()),
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    assert!(current.is_none(), "an unclosed code block");
    blocks
}

/// Splits a shell line into words (single and double quotes; `#` outside quotes starts a
/// comment); `|`, `&&` and `;` end a command. Returns the commands.
fn shell_commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = vec![Vec::new()];
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    w.push(c);
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\' | '$')) => {
                            w.push(chars.next().unwrap())
                        }
                        c => w.push(c),
                    }
                }
            }
            '#' if word.is_none() => break,
            c if c.is_whitespace() => {
                if let Some(w) = word.take() {
                    commands.last_mut().unwrap().push(w);
                }
            }
            '|' | ';' | '&' if word.is_none() => {
                if c == '&' && chars.peek() == Some(&'&') {
                    chars.next();
                }
                if chars.peek() == Some(&'|') {
                    chars.next();
                }
                commands.push(Vec::new());
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    if let Some(w) = word {
        commands.last_mut().unwrap().push(w);
    }
    commands.retain(|c| !c.is_empty());
    commands
}

/// Asserts that the real binary accepts `args` (parsed with `--help` appended, so nothing
/// runs): a wrong subcommand, flag or value fails.
fn assert_parses(args: &[String], origin: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_linkly"))
        .args(args)
        .arg("--help")
        .env(
            "LINKLY_HOME",
            std::env::temp_dir().join("linkly-clients-test-unused"),
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{origin}: `linkly {}` does not parse: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn assert_mcp_url(url: &str, origin: &str) {
    assert!(
        url.starts_with("http://") && url.ends_with(":60606/mcp"),
        "{origin}: unexpected MCP URL {url}"
    );
}

/// Checks one server entry of a client configuration; returns its kind.
fn check_server(entry: &Value, vscode: bool, origin: &str) -> &'static str {
    let kind = entry.get("type").and_then(Value::as_str);
    if vscode {
        assert!(
            matches!(kind, Some("stdio" | "http")),
            "{origin}: VS Code servers need \"type\": \"stdio\" or \"http\""
        );
    }
    if let Some(command) = entry.get("command") {
        assert!(matches!(kind, None | Some("stdio")), "{origin}");
        let mut args: Vec<String> = entry["args"]
            .as_array()
            .unwrap_or_else(|| panic!("{origin}: args must be a list"))
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        // `uvx linkly …`: uv runs the `linkly` wheel's entry point with the rest.
        let uvx = command == "uvx";
        if uvx {
            assert_eq!(args.first().map(String::as_str), Some("linkly"), "{origin}");
            args.remove(0);
        } else {
            assert_eq!(command, "linkly", "{origin}");
        }
        assert_eq!(args.first().map(String::as_str), Some("mcp"), "{origin}");
        assert_parses(&args, origin);
        if let Some(env) = entry.get("env") {
            assert!(
                env.as_object().unwrap().values().all(Value::is_string),
                "{origin}: env values are strings"
            );
        }
        if uvx { "uvx" } else { "stdio" }
    } else {
        let url = entry["url"]
            .as_str()
            .unwrap_or_else(|| panic!("{origin}: a server needs a command or a url"));
        assert!(matches!(kind, None | Some("http")), "{origin}");
        assert_mcp_url(url, origin);
        if let Some(headers) = entry.get("headers") {
            let auth = headers["Authorization"].as_str().unwrap();
            assert!(auth.starts_with("Bearer "), "{origin}: {auth}");
        }
        "http"
    }
}

/// Checks a command line of a `sh` block; returns what it was.
fn check_command(words: &[String], origin: &str) -> Option<&'static str> {
    let words: Vec<String> = words.to_vec();
    match words.first().map(String::as_str) {
        Some("linkly") => {
            assert_parses(&words[1..], origin);
            Some("linkly")
        }
        Some("claude") => {
            assert_eq!(words[1..3], ["mcp", "add"], "{origin}");
            if let Some(dash) = words.iter().position(|w| w == "--") {
                assert_eq!(words[dash - 1], "linkly", "{origin}: the server's name");
                let uvx = words[dash + 1] == "uvx";
                let at = dash + 1 + usize::from(uvx);
                assert_eq!(words[at], "linkly", "{origin}: the command");
                assert_parses(&words[at + 1..], origin);
                Some(if uvx { "claude-uvx" } else { "claude-stdio" })
            } else {
                let t = words.iter().position(|w| w == "--transport").unwrap();
                assert_eq!(words[t + 1], "http", "{origin}");
                let url = words.iter().find(|w| w.starts_with("http://")).unwrap();
                assert_mcp_url(url, origin);
                Some("claude-http")
            }
        }
        // The wheel: `uvx linkly …` runs it, `uv tool install linkly` and `pipx install linkly`
        // install it (pyproject.toml names the package).
        Some("uvx") => {
            assert_eq!(words.get(1).map(String::as_str), Some("linkly"), "{origin}");
            assert_parses(&words[2..], origin);
            Some("uvx")
        }
        Some("uv" | "pipx") if words.contains(&"install".to_string()) => {
            let pyproject = fs_err::read_to_string(repo().join("pyproject.toml")).unwrap();
            assert!(pyproject.contains("name = \"linkly\""), "{origin}");
            assert_eq!(words.last().map(String::as_str), Some("linkly"), "{origin}");
            Some("wheel-install")
        }
        Some("cargo") if words.get(1).is_some_and(|w| w == "install") => {
            let path = words
                .iter()
                .position(|w| w == "--path")
                .map(|i| &words[i + 1]);
            if let Some(path) = path {
                let manifest =
                    fs_err::read_to_string(repo().join(path).join("Cargo.toml")).unwrap();
                assert!(
                    manifest.contains("name = \"linkly\""),
                    "{origin}: {path} does not build the linkly binary"
                );
            } else {
                assert_eq!(
                    words.get(2).map(String::as_str),
                    Some("linkly-cli"),
                    "{origin}"
                );
            }
            assert!(
                words.iter().any(|w| w == "--locked") || path.is_none(),
                "{origin}"
            );
            Some("install")
        }
        _ => None,
    }
}

/// Runs the checks over a Markdown file; returns the kinds of snippets seen.
fn check_markdown(rel: &str) -> Vec<&'static str> {
    let text = fs_err::read_to_string(repo().join(rel)).unwrap();
    let mut seen = Vec::new();
    for (i, (info, body)) in fenced_blocks(&text).into_iter().enumerate() {
        let origin = format!("{rel}, code block {}", i + 1);
        match info.as_str() {
            "json" => {
                let v: Value = serde_json::from_str(&body)
                    .unwrap_or_else(|e| panic!("{origin}: not JSON: {e}\n{body}"));
                let (servers, vscode) = match (v.get("mcpServers"), v.get("servers")) {
                    (Some(s), None) => (s, false),
                    (None, Some(s)) => (s, true),
                    _ => panic!("{origin}: expected mcpServers or servers"),
                };
                let servers = servers.as_object().unwrap();
                assert!(servers.contains_key("linkly"), "{origin}");
                for entry in servers.values() {
                    let kind = check_server(entry, vscode, &origin);
                    seen.push(match (vscode, kind) {
                        (_, "uvx") => "json-uvx",
                        (true, "stdio") => "vscode-stdio",
                        (true, _) => "vscode-http",
                        (false, "stdio") => "json-stdio",
                        (false, _) => "json-http",
                    });
                }
            }
            "sh" => {
                for line in body.lines() {
                    for words in shell_commands(line) {
                        if let Some(kind) = check_command(&words, &format!("{origin}: {line}")) {
                            seen.push(kind);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    seen
}

#[test]
fn shell_words_are_split_like_a_shell() {
    assert_eq!(
        shell_commands(r#"linkly note-save --content "Call #todo" # comment"#),
        vec![vec!["linkly", "note-save", "--content", "Call #todo"]]
    );
    assert_eq!(
        shell_commands("linkly status && linkly --json doctor | jq ."),
        vec![
            vec!["linkly", "status"],
            vec!["linkly", "--json", "doctor"],
            vec!["jq", "."]
        ]
    );
}

#[test]
fn a_wrong_snippet_is_caught() {
    let wrong = std::panic::catch_unwind(|| {
        assert_parses(&["mcp".into(), "--no-such-flag".into()], "test")
    });
    assert!(wrong.is_err());
    let wrong = std::panic::catch_unwind(|| assert_parses(&["mcpp".into()], "test"));
    assert!(wrong.is_err());
}

#[test]
fn client_configurations_work_with_the_real_cli() {
    let seen = check_markdown("docs/clients.md");
    for kind in [
        "json-stdio",
        "json-http",
        "vscode-stdio",
        "vscode-http",
        "claude-stdio",
        "claude-http",
        "linkly",
        "install",
        "json-uvx",
        "claude-uvx",
        "wheel-install",
    ] {
        assert!(
            seen.contains(&kind),
            "docs/clients.md has no {kind} snippet: {seen:?}"
        );
    }
}

#[test]
fn readme_commands_work_with_the_real_cli() {
    let seen = check_markdown("README.md");
    assert!(seen.contains(&"install"), "{seen:?}");
    assert!(
        seen.iter().filter(|k| **k == "linkly").count() >= 10,
        "{seen:?}"
    );
}
