//! `linkly serve` for real: live watching observed through an MCP client, catch-up after a
//! restart, the single-writer lock, LAN tokens, and CLI client mode.

use crate::common;

use std::time::Duration;

use common::{Env, Proc as Server, free_port, wait_until};
use linkly_mcp::RemoteClient;
use serde_json::{Value, json};

fn status(env: &Env) -> Value {
    let out = env.run(&["--json", "status"]);
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

fn start(env: &Env, extra: &[&str]) -> (Server, u16) {
    env.serve_watching(extra)
}

struct Mcp {
    rt: tokio::runtime::Runtime,
    client: RemoteClient,
}

impl Mcp {
    fn connect(env: &Env, port: u16) -> Mcp {
        let (rt, client) = common::connect_remote(env, port);
        Mcp { rt, client }
    }

    fn search(&self, query: &str) -> Value {
        let out = self
            .rt
            .block_on(
                self.client
                    .call("search", json!({"query": query, "output_format": "json"})),
            )
            .unwrap();
        assert!(!out.is_error, "{}", out.text);
        serde_json::from_str(&out.text).unwrap()
    }

    fn paths(&self, query: &str) -> Vec<String> {
        common::result_paths(&self.search(query))
            .into_iter()
            .map(str::to_string)
            .collect()
    }
}

#[test]
fn changes_are_followed_live_and_caught_up_after_a_restart() {
    let env = Env::sample();
    env.run(&["folders", "add", env.docs.to_str().unwrap()]);
    let (server, port) = start(&env, &[]);
    let mcp = Mcp::connect(&env, port);
    let limit = Duration::from_secs(10);
    let docs = env.docs.clone();
    let ends = |paths: Vec<String>, file: &str| paths.iter().any(|p| p.ends_with(file));

    // Create.
    fs_err::write(docs.join("new.md"), "# New\n\naardvark sighting\n").unwrap();
    wait_until("a created file", limit, || {
        ends(mcp.paths("aardvark"), "new.md")
    });
    // Modify.
    fs_err::write(docs.join("new.md"), "# New\n\nokapi sighting instead\n").unwrap();
    wait_until("a modified file", limit, || {
        ends(mcp.paths("okapi"), "new.md") && mcp.paths("aardvark").is_empty()
    });
    // Rename.
    fs_err::rename(docs.join("new.md"), docs.join("renamed.md")).unwrap();
    wait_until("a renamed file", limit, || {
        let p = mcp.paths("okapi");
        p.len() == 1 && p[0].ends_with("renamed.md")
    });
    // An editor's atomic save: write a temporary file, then rename it over the original.
    fs_err::write(docs.join(".renamed.md.tmp"), "# New\n\nquokka now\n").unwrap();
    fs_err::rename(docs.join(".renamed.md.tmp"), docs.join("renamed.md")).unwrap();
    wait_until("an atomic save", limit, || {
        ends(mcp.paths("quokka"), "renamed.md")
    });
    // Delete.
    fs_err::remove_file(docs.join("renamed.md")).unwrap();
    wait_until("a deleted file", limit, || mcp.paths("quokka").is_empty());
    // A burst: many files at once settle into few syncs.
    for i in 0..300 {
        fs_err::write(
            docs.join(format!("burst-{i}.txt")),
            format!("burstword number{i}\n"),
        )
        .unwrap();
    }
    wait_until("a burst", Duration::from_secs(30), || {
        mcp.search("burstword")["total"] == 300
    });

    // Stop, change files while down, restart: the start-up sync catches up.
    drop(mcp);
    server.stop();
    assert!(
        !env.home.join("port").exists(),
        "the port file is removed at shutdown"
    );
    fs_err::write(docs.join("while-down.md"), "pangolin\n").unwrap();
    fs_err::remove_file(docs.join("burst-0.txt")).unwrap();
    let (_server, port) = start(&env, &[]);
    let mcp = Mcp::connect(&env, port);
    assert!(ends(mcp.paths("pangolin"), "while-down.md"));
    assert_eq!(mcp.search("burstword")["total"], 299);
}

#[test]
fn one_server_per_data_directory_and_cli_client_mode() {
    let env = Env::sample();
    env.run(&["folders", "add", env.docs.to_str().unwrap()]);
    let (server, port) = start(&env, &[]);
    // The port file and /health are the types linkly-mcp writes and the CLI reads.
    let file: linkly_http::PortFile =
        serde_json::from_str(&fs_err::read_to_string(env.home.join("port")).unwrap()).unwrap();
    assert_eq!((file.port, file.pid), (port, server.0.id()));
    let response = health_from("127.0.0.1", port, None);
    let body = response.split_once("\r\n\r\n").unwrap().1;
    let health: linkly_http::Health = serde_json::from_str(body).unwrap();
    assert_eq!(health.index_status, linkly_http::IndexStatus::Watching);
    assert_eq!(health.mcp_endpoint, format!("http://127.0.0.1:{port}/mcp"));
    assert_eq!(health.version, env!("CARGO_PKG_VERSION"));
    let st = status(&env);
    assert_eq!(st["server"], "running");
    assert_eq!(st["index_status"], "watching");
    assert_eq!(st["doc_count"], health.doc_count);
    assert_eq!(
        st["coverage"]["documents"],
        health.coverage.as_ref().unwrap().documents
    );
    let out = env.run(&["serve", "--port", &free_port().to_string()]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already running"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Tool commands go to the running server.
    let v = env.json(&["search", "budget"]);
    assert_eq!(v["total"], 2);
    let out = env.run(&["--json", "read", "../../etc/passwd"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("doc_id must be a document id"));
    // Every path check holds through the daemon too: list paths, note ids.
    let out = env.run(&["--json", "list", "--scope", "folder", "--path", "/etc"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("PATH_NOT_ALLOWED"));
    let sneaky = format!("{}/../../..", env.docs.display());
    let out = env.run(&["--json", "list", "--scope", "folder", "--path", &sneaky]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("PATH_NOT_ALLOWED"));
    let out = env.run(&[
        "--json",
        "note-save",
        "--mode",
        "edit",
        "--note-id",
        "../../etc/passwd",
        "--base-version",
        "0",
        "--content",
        "x",
    ]);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("note_id"), "{text}");
    assert!(!env.home.join("etc").exists());
    // And to an explicit endpoint, with the agent token from the environment (not argv).
    let endpoint = format!("http://127.0.0.1:{port}/mcp");
    let out = env.run(&["--json", "--endpoint", &endpoint, "search", "budget"]);
    assert!(!out.status.success(), "no token: refused");
    let agent = fs_err::read_to_string(env.home.join("agent-token")).unwrap();
    let out = env
        .cmd()
        .env("LINKLY_TOKEN", agent.trim())
        .args(["--json", "--endpoint", &endpoint, "search", "budget"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["total"], 2, "{v}");
    let s = status(&env);
    assert_eq!(s["server"], "running");
    let out = env.run(&["--json", "doctor"]);
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(d["status"], "ok", "{d}");
    assert!(out.status.success());
}

/// Sends GET /health from a given local source address.
fn health_from(source: &str, port: u16, token: Option<&str>) -> String {
    get_from(source, port, "/health", token)
}

/// Sends GET `path` from a given local source address.
fn get_from(source: &str, port: u16, path: &str, token: Option<&str>) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
        let mut s = socket
            .connect(format!("127.0.0.1:{port}").parse().unwrap())
            .await
            .unwrap();
        let auth = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        s.write_all(
            format!(
                "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Connection: close\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    })
}

#[test]
fn lan_mode_requires_the_token_from_other_hosts() {
    let env = Env::sample();
    env.run(&["folders", "add", env.docs.to_str().unwrap()]);
    let (server, port) = start(&env, &["--lan"]);
    let token = status(&env)["lan_token"].as_str().unwrap().to_string();
    assert_eq!(token.len(), 32);
    let config = fs_err::read_to_string(env.home.join("config.toml")).unwrap();
    assert!(config.contains(&token), "the token is kept in the config");
    // 127.0.0.2 stands for another host: /mcp without a token → 401, a wrong token → 401
    // (anywhere, /health included), with the token → through; /health is public.
    assert!(get_from("127.0.0.2", port, "/mcp", None).starts_with("HTTP/1.1 401"));
    assert!(health_from("127.0.0.2", port, Some("wrong")).starts_with("HTTP/1.1 401"));
    assert!(health_from("127.0.0.2", port, Some(&token)).starts_with("HTTP/1.1 200"));
    assert!(health_from("127.0.0.2", port, None).starts_with("HTTP/1.1 200"));
    // Loopback is no proof either: /mcp without a token → 401, the window → the sign-in.
    assert!(get_from("127.0.0.1", port, "/mcp", None).starts_with("HTTP/1.1 401"));
    let page = get_from("127.0.0.1", port, "/search?q=budget", None);
    assert!(
        page.starts_with("HTTP/1.1 303") && page.contains("location: /signin"),
        "{page}"
    );
    // The CLI reaches it with --endpoint and the token (from the environment), like a LAN
    // client: refused while the person shares nothing on the LAN, then through.
    let endpoint = format!("http://127.0.0.1:{port}");
    let search = || {
        env.cmd()
            .env("LINKLY_TOKEN", &token)
            .args(["--json", "--endpoint", &endpoint, "search", "budget"])
            .output()
            .unwrap()
    };
    let out = search();
    assert!(!out.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("403"), "{said}");
    // Shared from the next start on.
    drop(server);
    env.run_ok(&["library", "add", "docs", env.docs.to_str().unwrap()]);
    let config = fs_err::read_to_string(env.home.join("config.toml")).unwrap();
    assert!(config.contains("lan_shared_libraries = []"), "{config}");
    fs_err::write(
        env.home.join("config.toml"),
        config.replace(
            "lan_shared_libraries = []",
            "lan_shared_libraries = [\"docs\"]",
        ),
    )
    .unwrap();
    // A watched folder that is not shared: the person finds its file, the visitor never.
    let private = env.tmp.path().join("private");
    fs_err::create_dir_all(&private).unwrap();
    fs_err::write(
        private.join("salary.md"),
        "# Salary\n\nMy budget, private.\n",
    )
    .unwrap();
    env.run_ok(&["folders", "add", private.to_str().unwrap()]);
    env.index();
    let mine: Value =
        serde_json::from_slice(&env.run_ok(&["--json", "search", "budget"]).stdout).unwrap();
    assert_eq!(mine["total"], 3, "{mine}");
    let (_server, port) = start(&env, &["--lan"]);
    let endpoint = format!("http://127.0.0.1:{port}");
    let visitor = |args: &[&str]| {
        env.cmd()
            .env("LINKLY_TOKEN", &token)
            .args(["--json", "--endpoint", &endpoint])
            .args(args)
            .output()
            .unwrap()
    };
    let v: Value = serde_json::from_slice(&visitor(&["search", "budget"]).stdout).unwrap();
    assert_eq!(v["total"], 2, "{v}");
    assert!(!v.to_string().contains("salary"), "{v}");
    // Its document by id: not found for the visitor.
    let id = mine["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"].as_str().unwrap().ends_with("salary.md"))
        .unwrap()["doc_id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = visitor(&["read", &id]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("DOC_NOT_FOUND") && !said.contains("private."),
        "{said}"
    );
}

/// A server runs with the allocators' settings for a long run (`src/allocator.rs`): it
/// started again with them, as the same process; a setting already given is kept.
#[cfg(target_os = "linux")]
#[test]
fn the_server_runs_with_the_allocators_settings_for_a_long_run() {
    let env = Env::sample();
    let (server, _port) = start(&env, &[]);
    let environ = fs_err::read(format!("/proc/{}/environ", server.0.id())).unwrap();
    let vars: Vec<String> = environ
        .split(|b| *b == 0)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect();
    for (name, default) in [("MIMALLOC_PURGE_DELAY", "0"), ("MALLOC_ARENA_MAX", "2")] {
        let want = format!(
            "{name}={}",
            std::env::var(name).unwrap_or_else(|_| default.to_string())
        );
        assert!(vars.contains(&want), "{want} not among {vars:?}");
    }
}

/// This computer's network address, as the server finds it (see `linkly-cli/src/lan.rs`).
fn network_address() -> Option<std::net::IpAddr> {
    [
        "192.0.2.1:9",
        "10.255.255.254:9",
        "172.31.255.254:9",
        "192.168.255.254:9",
    ]
    .into_iter()
    .find_map(|probe| {
        let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
        socket.connect(probe).ok()?;
        let ip = socket.local_addr().ok()?.ip();
        (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
    })
}

#[test]
#[allow(clippy::print_stderr)]
fn lan_access_opens_and_closes_while_the_server_runs() {
    let Some(ip) = network_address() else {
        eprintln!("note: this machine has no network address: LAN access not tested");
        return;
    };
    let env = Env::sample();
    env.run_ok(&["library", "add", "docs", env.docs.to_str().unwrap()]);
    env.run_ok(&["config", "add", "lan_shared_libraries", "docs"]);
    let (_server, port) = start(&env, &[]);
    let lan = std::net::SocketAddr::new(ip, port);
    let reachable = || std::net::TcpStream::connect_timeout(&lan, Duration::from_secs(2)).is_ok();
    assert!(
        !reachable(),
        "a server started for this computer is closed to the network"
    );

    // Turned on while it runs: the network address opens within a second or so, with the
    // token made for it.
    env.run_ok(&["config", "set", "lan_enabled", "true"]);
    let token = String::from_utf8_lossy(&env.run_ok(&["config", "get", "lan_token"]).stdout)
        .trim()
        .to_string();
    assert_eq!(token.len(), 32, "{token}");
    wait_until("the LAN listener opens", Duration::from_secs(20), reachable);
    let endpoint = format!("http://{lan}");
    let visitor = |token: Option<&str>| {
        let mut cmd = env.cmd();
        match token {
            Some(t) => cmd.env("LINKLY_TOKEN", t),
            None => cmd.env_remove("LINKLY_TOKEN"),
        };
        cmd.args(["--json", "--endpoint", &endpoint, "search", "budget"])
            .output()
            .unwrap()
    };
    let out = visitor(Some(&token));
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["total"].as_u64().unwrap() >= 1, "{v}");
    assert!(!visitor(None).status.success(), "no token, no search");

    // Turned off: closed again, and this computer is served as ever.
    env.run_ok(&["config", "set", "lan_enabled", "false"]);
    wait_until("the LAN listener closes", Duration::from_secs(20), || {
        !reachable()
    });
    assert!(!visitor(Some(&token)).status.success());
    assert_eq!(status(&env)["server"], "running", "{}", status(&env));
}
