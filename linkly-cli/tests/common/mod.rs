//! Helpers shared by the tests that drive the real `linkly` binary.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A data directory and a folder of documents, both temporary.
pub struct Env {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub docs: PathBuf,
}

pub const GUIDE: &str = "# Budget guide\n\nIntro line.\n\n## Planning\n\nThe budget for 2024 is set.\nMore planning text.\n\n## Spending\n\nSpending rules here.\nbudget again\n";

impl Env {
    /// The interop client's target for `linkly mcp` over stdio on this data directory.
    pub fn stdio_target(&self) -> Vec<String> {
        vec![
            "--stdio".into(),
            format!("{} mcp", bin().display()),
            "--env".into(),
            format!("LINKLY_HOME={}", self.home.display()),
        ]
    }

    /// Runs the repository's MCP interop client (`interop/client.py`, on the official Python
    /// SDK) on `scenario` against `target` (`--stdio …` or `--http URL`), strict; asserts that
    /// it passed with 0 failures and returns its output. `name` labels the scenario file and
    /// the failure messages.
    pub fn probe(&self, name: &str, target: &[String], scenario: &Value) -> String {
        let file = self.tmp.path().join(format!("{name}.json"));
        fs_err::write(&file, scenario.to_string()).unwrap();
        let mut probe = Command::new(probe_python());
        // An HTTP target authenticates as a configured MCP client does: the agent token, from
        // the environment.
        if let Ok(token) = fs_err::read_to_string(self.home.join("agent-token")) {
            probe.env("LINKLY_AGENT_TOKEN", token.trim());
        }
        let out = probe
            .arg(repo_dir().join("interop/client.py"))
            .args(target)
            .arg("--scenario")
            .arg(&file)
            .args(["--strict", "--no-schemas"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{name}: probe failed:\n{stdout}\n{stderr}"
        );
        let last = stdout.trim_end().lines().last().unwrap_or_default();
        assert!(last.ends_with(" 0 failed"), "{name}: {last}\n{stdout}");
        stdout
    }

    /// An environment with these files under `docs/`.
    pub fn new(files: &[(&str, &str)]) -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let docs = tmp.path().join("docs");
        fs_err::create_dir_all(&docs).unwrap();
        for (rel, text) in files {
            let p = docs.join(rel);
            fs_err::create_dir_all(p.parent().unwrap()).unwrap();
            fs_err::write(p, text).unwrap();
        }
        Env { tmp, home, docs }
    }

    /// The standard sample.
    pub fn sample() -> Env {
        let lines: Vec<String> = (1..=40)
            .map(|i| {
                if i % 5 == 0 {
                    format!("hit {i}")
                } else {
                    format!("line {i}")
                }
            })
            .collect();
        Env::new(&[
            ("guide.md", GUIDE),
            (
                "notes/plain.txt",
                "alpha beta\ngamma budget delta\nepsilon\n",
            ),
            ("g.txt", &lines.join("\n")),
            (
                "jp/東京.md",
                "# 東京の案内\n\n機械学習の研究所が東京にあります。\n",
            ),
        ])
    }

    /// A `linkly` command with this environment's data directory.
    pub fn cmd(&self) -> Command {
        let mut c = Command::new(bin());
        c.env("LINKLY_HOME", &self.home).env_remove("LINKLY_LOG");
        c
    }

    /// Runs `linkly` with arguments.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }

    /// Runs `linkly` with arguments, asserts it failed and returns its stderr.
    #[track_caller]
    pub fn run_failing(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// Runs `linkly` with arguments, asserts it exited with `code` and returns its stderr.
    #[track_caller]
    pub fn stderr_of_exit(&self, code: i32, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        stderr
    }

    /// Runs `linkly --json` with arguments that a tool refuses: asserts it failed with a JSON
    /// answer of status `error` and returns that answer's message.
    #[track_caller]
    pub fn json_refusal(&self, args: &[&str]) -> String {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.run(&all);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(!out.status.success(), "{args:?} succeeded: {v}");
        assert_eq!(v["status"], "error", "{v}");
        v["message"].as_str().unwrap().to_string()
    }

    /// Starts `linkly` with arguments and its stdin, stdout and stderr piped.
    pub fn spawn_piped(&self, args: &[&str]) -> Child {
        self.cmd()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Runs `linkly` with arguments and asserts it exited 0 ([`succeeded`]).
    #[track_caller]
    pub fn run_ok(&self, args: &[&str]) -> Output {
        succeeded(self.run(args))
    }

    /// Starts `linkly serve` on a free port with `extra` arguments (its log, at `info`, in
    /// `serve.log` of the data directory) and waits until `linkly status` says it watches;
    /// returns it and the port its port file names.
    pub fn serve_watching(&self, extra: &[&str]) -> (Proc, u16) {
        let port = free_port().to_string();
        fs_err::create_dir_all(&self.home).unwrap();
        let log = std::fs::File::create(self.home.join("serve.log")).unwrap();
        let child = self
            .cmd()
            .args(["serve", "--port", &port])
            .args(extra)
            .env("LINKLY_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let server = Proc(child);
        let status = || {
            let out = self.run(&["--json", "status"]);
            serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null)
        };
        let start = Instant::now();
        let mut last = status();
        while last["index_status"] != "watching" {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "timed out waiting for the server to watch; last status: {last}; server log: {}",
                fs_err::read_to_string(self.home.join("serve.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
            last = status();
        }
        let port_file: Value =
            serde_json::from_str(&fs_err::read_to_string(self.home.join("port")).unwrap()).unwrap();
        (server, port_file["port"].as_u64().unwrap() as u16)
    }

    /// Runs a Python SDK scenario of `tests/` (`fresh_stdio.py`, `agent_scenario.py`) with
    /// the binary, the data directory and `extra` as arguments; asserts it succeeded (showing
    /// its output and the shared server's log otherwise) and returns its summary line
    /// (`N passed, M failed`) and its whole output.
    pub fn stdio_scenario(&self, script: &str, extra: &[&Path]) -> (String, String) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests")
            .join(script);
        let out = Command::new(probe_python())
            .arg(&path)
            .arg(bin())
            .arg(&self.home)
            .args(extra)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let log = fs_err::read_to_string(self.home.join("serve.log")).unwrap_or_default();
        assert!(
            out.status.success(),
            "{script} failed:\n{stdout}\n{stderr}\nserver log:\n{log}"
        );
        let last = stdout
            .trim_end()
            .lines()
            .last()
            .unwrap_or_default()
            .to_string();
        (last, stdout)
    }

    /// Runs `linkly index <docs>` and asserts success.
    pub fn index(&self) {
        let out = self.run(&["index", self.docs.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "index failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `linkly --json ...` parsed, asserting exit 0.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.run(&all);
        assert!(
            out.status.success(),
            "{args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// The first search result's id.
    pub fn doc_id(&self, query: &str) -> String {
        let v = self.json(&["search", query, "--limit", "1"]);
        v["results"][0]["doc_id"].as_str().unwrap().to_string()
    }
}

/// Three documents for the semantic search tests; [`PARAPHRASE`] shares no word with the
/// bread one, which only an embedding model finds for it.
pub const MEANING: &[(&str, &str)] = &[
    (
        "bread.md",
        "# Sourdough at home\n\nMix flour, water and starter, knead the dough, let it rise overnight and bake it in a very hot oven.\n",
    ),
    (
        "revenue.md",
        "# Quarterly results\n\nQuarterly revenue grew by twelve percent thanks to strong sales in Europe.\n",
    ),
    (
        "cat.md",
        "# Afternoon\n\nThe cat sleeps on the windowsill all afternoon, purring in the sunshine.\n",
    ),
];
pub const PARAPHRASE: &str = "making loaves of bread";

impl Env {
    /// The running server's per-start secret, from its port file (what the person's clients
    /// send as a bearer token).
    pub fn local_secret(&self) -> String {
        let file: Value =
            serde_json::from_str(&fs_err::read_to_string(self.home.join("port")).unwrap()).unwrap();
        file["secret"]
            .as_str()
            .expect("the port file holds the secret")
            .to_string()
    }
}

/// A runtime and an MCP client connected to `env`'s `linkly serve` on `port` (Streamable HTTP),
/// with the server's local secret, as `linkly mcp` connects.
pub fn connect_remote(env: &Env, port: u16) -> (tokio::runtime::Runtime, linkly_mcp::RemoteClient) {
    let secret = env.local_secret();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = rt
        .block_on(linkly_mcp::RemoteClient::connect(
            &format!("http://127.0.0.1:{port}/mcp"),
            Some(&secret),
        ))
        .unwrap();
    (rt, client)
}

/// Asserts that a probe's output (`Env::probe`) has a `PASS` line for each of `checks`.
#[track_caller]
pub fn assert_passed(stdout: &str, checks: &[&str]) {
    for check in checks {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("PASS") && l.contains(check)),
            "missing a PASS for {check}:\n{stdout}"
        );
    }
}

/// The paths of a `search` or `list` answer's results, in order.
pub fn result_paths(answer: &Value) -> Vec<&str> {
    answer["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results: {answer}"))
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect()
}

/// The result of a `search` or `list` answer whose path ends with `name`, if any.
pub fn result_ending<'a>(answer: &'a Value, name: &str) -> Option<&'a Value> {
    answer["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results: {answer}"))
        .iter()
        .find(|r| r["path"].as_str().unwrap().ends_with(name))
}

/// The strings of a JSON array.
pub fn strings(array: &Value) -> Vec<&str> {
    array
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {array}"))
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

/// Asserts that a finished command exited 0, showing its exit status and stderr otherwise;
/// returns its output for the checks that follow.
#[track_caller]
pub fn succeeded(out: Output) -> Output {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The built binary.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_linkly"))
}

/// The repository's root.
pub fn repo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The real test documents the repository carries (`testdata/corpus/<format>/`, sources and
/// licences in `testdata/MANIFEST.md`).
pub fn corpus_dir() -> PathBuf {
    repo_dir().join("testdata/corpus")
}

/// The Python that has the interop client's requirements (installed by `cargo xtask test`).
pub fn probe_python() -> PathBuf {
    if let Some(p) = std::env::var_os("LINKLY_PROBE_PYTHON") {
        return PathBuf::from(p);
    }
    let home = std::env::var_os("MCP_HARNESS_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/mcp-harness"));
    let py = home.join("venv/bin/python");
    assert!(
        py.exists(),
        "the MCP interop client's Python is missing at {}: run `cargo xtask test` (it installs it from interop/requirements.lock.txt), or set LINKLY_PROBE_PYTHON",
        py.display()
    );
    py
}

/// A child process killed when dropped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proc {
    /// Asks the process to stop (SIGTERM, as a person would) and waits for it to exit.
    pub fn stop(mut self) {
        let _ = Command::new("kill").arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
    }
}

/// A TCP port free on 127.0.0.1 at the moment of asking.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Polls `ok` every 100 ms until it holds; fails naming `what` after `limit`. How long it took.
pub fn wait_until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    start.elapsed()
}

/// `linkly mcp` over its stdio, as an MCP client drives it.
pub struct StdioClient {
    pub proc: Proc,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

impl StdioClient {
    /// Starts `cmd` (a `linkly mcp …` command) and initialises an MCP session over its stdio.
    pub fn start(cmd: &mut Command) -> StdioClient {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut client = StdioClient {
            proc: Proc(child),
            stdin,
            lines,
            next_id: 1,
        };
        let init = client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "handover-test", "version": "0"}
            }),
        );
        assert!(init["result"]["serverInfo"].is_object(), "{init}");
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    pub fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and waits (60 s at most) for the answer with its id.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no answer to {method} (id {id}): {e}"));
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    }

    /// Calls a tool: its text and whether it is an error.
    pub fn call(&mut self, name: &str, arguments: Value) -> (String, bool) {
        let v = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        let result = &v["result"];
        assert!(result.is_object(), "{name}: {v}");
        (
            result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            result["isError"] == true,
        )
    }

    /// `search` in JSON through the bridge: the parsed answer.
    pub fn search(&mut self, query: &str) -> Value {
        let v = self.request(
            "tools/call",
            json!({"name": "search", "arguments": {"query": query, "output_format": "json"}}),
        );
        let result = &v["result"];
        assert_eq!(result["isError"], false, "{v}");
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
    }
}
