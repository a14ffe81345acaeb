//! Linkly Cloud, self-hosted, end to end over the real binary: `linkly gateway serve`, users
//! and invitations from the CLI, `linkly publish`, the link rules as a user sees them through the
//! official MCP Python SDK over HTTP (`interop/gateway_scenario.py`), `linkly mcp --remote` over
//! stdio, and two gateway processes sharing one PostgreSQL catalogue (when
//! `LINKLY_TEST_POSTGRES` names a database).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{MEANING, PARAPHRASE, StdioClient, bin, probe_python, repo_dir};
use serde_json::{Value, json};

/// A running `linkly gateway serve`; stopped with SIGTERM when dropped.
pub(crate) struct Gateway {
    child: Option<Child>,
    port: u16,
    log: PathBuf,
}

impl Gateway {
    /// Starts a gateway on a free port with this data directory and optional database.
    pub(crate) fn start(home: &Path, database: Option<&str>) -> Gateway {
        Gateway::start_at(home, database, 0)
    }

    /// Starts a gateway on `port` (0: a free one) with this data directory and database.
    fn start_at(home: &Path, database: Option<&str>, port: u16) -> Gateway {
        Gateway::start_full(home, database, port, None)
    }

    /// Starts a gateway on a free port whose embedding model is `model` (`LINKLY_MODEL_DIR`).
    fn start_with_model(home: &Path, model: &Path) -> Gateway {
        Gateway::start_full(home, None, 0, Some(model))
    }

    fn start_full(home: &Path, database: Option<&str>, port: u16, model: Option<&Path>) -> Gateway {
        fs_err::create_dir_all(home).unwrap();
        let port_file = home.join("gateway.port");
        let _ = fs_err::remove_file(&port_file);
        let log = home.join("gateway.log");
        let mut cmd = Command::new(bin());
        cmd.env_remove("LINKLY_LOG")
            .env_remove("LINKLY_GATEWAY_DATABASE")
            .env_remove("LINKLY_MODEL_DIR")
            .arg("--home")
            .arg(home)
            .args([
                "gateway",
                "serve",
                "--port",
                &port.to_string(),
                "--port-file",
            ])
            .arg(&port_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&log).unwrap()));
        if let Some(db) = database {
            cmd.args(["--database", db]);
        }
        if let Some(model) = model {
            cmd.env("LINKLY_MODEL_DIR", model);
        }
        let mut child = cmd.spawn().unwrap();
        let started = Instant::now();
        let port = loop {
            if let Some(p) = fs_err::read_to_string(&port_file)
                .ok()
                .and_then(|s| s.trim().parse::<u16>().ok())
            {
                break p;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "the gateway exited ({status}): {}",
                    fs_err::read_to_string(&log).unwrap_or_default()
                );
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the gateway did not start: {}",
                fs_err::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        Gateway {
            child: Some(child),
            port,
            log,
        }
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(crate) fn mcp(&self) -> String {
        format!("{}/mcp", self.base())
    }

    /// Stops it with SIGTERM and returns whether it exited cleanly (status 0) in time.
    fn stop(&mut self) -> bool {
        let Some(mut child) = self.child.take() else {
            return true;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(20) {
            if let Ok(Some(status)) = child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        false
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `linkly --home <home> args…`.
fn linkly(home: &Path, args: &[&str]) -> Output {
    linkly_with_model(home, None, args)
}

/// `linkly --home <home> args…` with `model` as its embedding model (none: keyword only).
fn linkly_with_model(home: &Path, model: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(bin());
    match model {
        Some(m) => cmd.env("LINKLY_MODEL_DIR", m),
        None => cmd.env_remove("LINKLY_MODEL_DIR"),
    };
    cmd.env_remove("LINKLY_LOG")
        .env_remove("LINKLY_GATEWAY_TOKEN")
        .env_remove("LINKLY_GATEWAY_DATABASE")
        .env_remove("LINKLY_GATEWAY")
        .arg("--home")
        .arg(home)
        .args(args)
        .output()
        .unwrap()
}

/// `linkly --json --home <home> args…`, asserting success.
fn linkly_json(home: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = linkly(home, &all);
    assert!(
        out.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Adds a gateway user and returns their token.
pub(crate) fn add_user(gw_home: &Path, name: &str, database: Option<&str>) -> String {
    let mut args = vec!["gateway", "user", "add", name, "--plan", "free"];
    if let Some(db) = database {
        args.extend(["--database", db]);
    }
    let v = linkly_json(gw_home, &args);
    assert_eq!(v["user"], name);
    let token = v["token"].as_str().unwrap().to_string();
    assert!(token.starts_with("lk_"), "{token}");
    token
}

/// Writes files under `dir`.
fn write_files(dir: &Path, files: &[(&str, &str)]) {
    for (rel, text) in files {
        let p = dir.join(rel);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(p, text).unwrap();
    }
}

/// A local data directory with one library per `(name, files)`, indexed.
pub(crate) fn local_libraries(home: &Path, root: &Path, libraries: &[(&str, &[(&str, &str)])]) {
    for (name, files) in libraries {
        let dir = root.join(name);
        write_files(&dir, files);
        let out = linkly(home, &["index", dir.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "index: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = linkly(home, &["library", "add", name, dir.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "library add: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Runs a mode of `interop/gateway_scenario.py`; asserts it passed and returns its output.
fn scenario(args: &[&str], gateway: &Gateway) -> String {
    let out = Command::new(probe_python())
        .arg(repo_dir().join("interop/gateway_scenario.py"))
        .args(args)
        .env_remove("LINKLY_GATEWAY_TOKEN")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "gateway_scenario.py {}:\n{stdout}\n{}\ngateway log:\n{}",
        args[0],
        String::from_utf8_lossy(&out.stderr),
        fs_err::read_to_string(&gateway.log).unwrap_or_default()
    );
    let last = stdout.trim_end().lines().last().unwrap_or_default();
    assert!(last.ends_with(" 0 failed"), "{last}\n{stdout}");
    stdout
}

const PUBLIC: &[(&str, &str)] = &[
    (
        "stars.md",
        "# Stars\n\nA quasar outshines its galaxy.\n\n## Nebulae\n\nGas and dust.\n",
    ),
    ("deep/far.txt", "The farthest quasar seen so far.\n"),
];
const SHOWCASE: &[(&str, &str)] = &[("airships.md", "# Airships\n\nThe zeppelin era.\n")];
const PRIVATE: &[(&str, &str)] = &[("diary.md", "# Diary\n\nAn obsidian secret.\n")];
const BOB_LOCAL: &[(&str, &str)] = &[("maps.md", "# Maps\n\nThe prime meridian.\n")];

#[test]
fn a_gateway_serves_published_libraries_by_the_link_rules() {
    let tmp = tempfile::tempdir().unwrap();
    let gw_home = tmp.path().join("gateway-home");
    let mut gateway = Gateway::start(&gw_home, None);

    let alice = add_user(&gw_home, "alice", None);
    let bob = add_user(&gw_home, "bob", None);
    let users = linkly_json(&gw_home, &["gateway", "user", "list"]);
    let names: Vec<&str> = users["users"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|u| u["user"].as_str())
        .collect();
    assert_eq!(names.len(), 2, "{users}");
    assert!(
        names.contains(&"alice") && names.contains(&"bob"),
        "{users}"
    );
    let again = linkly(&gw_home, &["gateway", "user", "add", "alice"]);
    assert!(!again.status.success(), "a second alice is refused");

    // Alice publishes three libraries from her own data directory.
    let alice_home = tmp.path().join("alice-home");
    let docs = tmp.path().join("alice-docs");
    local_libraries(
        &alice_home,
        &docs,
        &[
            ("public-docs", PUBLIC),
            ("showcase-docs", SHOWCASE),
            ("private-docs", PRIVATE),
        ],
    );
    let base = gateway.base();
    for (name, visibility) in [
        ("public-docs", "public"),
        ("showcase-docs", "showcase"),
        ("private-docs", "private"),
    ] {
        let v = linkly_json(
            &alice_home,
            &[
                "publish",
                name,
                "--gateway",
                &base,
                "--token",
                &alice,
                "--visibility",
                visibility,
                "--category",
                "science",
            ],
        );
        assert_eq!(v["library"], format!("cloud://alice/{name}"), "{v}");
        assert_eq!(v["created"], true, "{v}");
        assert!(v["sent"].as_u64().unwrap() >= 1, "{v}");
    }
    // Publishing again sends nothing unchanged; a changed file goes again, a removed one goes.
    let v = linkly_json(
        &alice_home,
        &[
            "publish",
            "public-docs",
            "--gateway",
            &base,
            "--token",
            &alice,
        ],
    );
    assert_eq!(
        (v["sent"].as_u64(), v["unchanged"].as_u64()),
        (Some(0), Some(2)),
        "{v}"
    );
    assert_eq!(v["created"], false, "{v}");
    write_files(
        &docs.join("public-docs"),
        &[(
            "stars.md",
            "# Stars\n\nA quasar outshines its galaxy; so does a blazar.\n",
        )],
    );
    fs_err::remove_file(docs.join("public-docs/deep/far.txt")).unwrap();
    let out = linkly(&alice_home, &["index"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = linkly_json(
        &alice_home,
        &[
            "publish",
            "public-docs",
            "--gateway",
            &base,
            "--token",
            &alice,
        ],
    );
    assert_eq!(
        (
            v["sent"].as_u64(),
            v["unchanged"].as_u64(),
            v["removed"].as_u64()
        ),
        (Some(1), Some(0), Some(1)),
        "{v}"
    );
    // A wrong token is refused with a message that says so.
    let out = linkly(
        &alice_home,
        &[
            "publish",
            "public-docs",
            "--gateway",
            &base,
            "--token",
            "lk_nope",
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("token"), "{err}");
    // An unreachable gateway too.
    let out = linkly(
        &alice_home,
        &[
            "publish",
            "public-docs",
            "--gateway",
            "http://127.0.0.1:9",
            "--token",
            &alice,
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot reach the gateway"), "{err}");

    // Bob, through the Python SDK over HTTP.
    scenario(
        &[
            "http",
            bin().to_str().unwrap(),
            gw_home.to_str().unwrap(),
            &gateway.mcp(),
            &bob,
            "alice",
        ],
        &gateway,
    );

    // Bob's own library and the cloud one through `linkly mcp --remote` over stdio.
    let bob_home = tmp.path().join("bob-home");
    local_libraries(
        &bob_home,
        &tmp.path().join("bob-docs"),
        &[("maps", BOB_LOCAL)],
    );
    scenario(
        &[
            "remote",
            bin().to_str().unwrap(),
            bob_home.to_str().unwrap(),
            &base,
            &bob,
            "alice",
        ],
        &gateway,
    );

    // A refused token stops `linkly mcp --remote` at once, saying so.
    let out = Command::new(bin())
        .env_remove("LINKLY_LOG")
        .env_remove("LINKLY_GATEWAY_TOKEN")
        .arg("--home")
        .arg(&bob_home)
        .args(["mcp", "--remote", &base, "--token", "lk_wrong"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("refused the token"),
        "{err}"
    );

    // Unpublish takes a library down.
    let v = linkly_json(
        &alice_home,
        &[
            "publish",
            "private-docs",
            "--gateway",
            &base,
            "--token",
            &alice,
            "--unpublish",
        ],
    );
    assert_eq!(v["deleted"], true, "{v}");
    let out = linkly(
        &gw_home,
        &["gateway", "invite", "cloud://alice/private-docs", "bob"],
    );
    assert!(
        !out.status.success(),
        "an unpublished library cannot be invited to"
    );
    let v = linkly_json(&gw_home, &["gateway", "user", "remove", "bob"]);
    assert_eq!(v["removed"], "bob");

    // SIGTERM stops it cleanly.
    assert!(
        gateway.stop(),
        "the gateway did not exit cleanly on SIGTERM: {}",
        fs_err::read_to_string(&gateway.log).unwrap_or_default()
    );
}

#[test]
#[allow(clippy::print_stderr)] // the note that says the test was skipped
fn two_gateway_processes_share_a_postgresql_catalogue() {
    let Ok(url) = std::env::var("LINKLY_TEST_POSTGRES") else {
        eprintln!(
            "note: LINKLY_TEST_POSTGRES is not set: skipping the PostgreSQL test (.ci/run starts a throwaway cluster and sets it)"
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // Names of their own, so that runs against one database do not meet.
    let suffix = uuid::Uuid::new_v4().simple().to_string()[..10].to_string();
    let (owner, reader) = (format!("pgo{suffix}"), format!("pgr{suffix}"));
    let one = Gateway::start(&tmp.path().join("gw1"), Some(&url));
    let two = Gateway::start(&tmp.path().join("gw2"), Some(&url));
    let owner_token = add_user(&tmp.path().join("admin"), &owner, Some(&url));
    let reader_token = add_user(&tmp.path().join("admin"), &reader, Some(&url));

    let home = tmp.path().join("owner-home");
    local_libraries(
        &home,
        &tmp.path().join("owner-docs"),
        &[("shared-docs", PUBLIC)],
    );
    let v = linkly_json(
        &home,
        &[
            "publish",
            "shared-docs",
            "--visibility",
            "public",
            "--gateway",
            &one.base(),
            "--token",
            &owner_token,
        ],
    );
    let library = format!("cloud://{owner}/shared-docs");
    assert_eq!(v["library"], library, "{v}");
    scenario(
        &["link-search", &two.mcp(), &reader_token, &library, "quasar"],
        &two,
    );
}

/// Whether the gateway's `/mcp` accepts this token (an MCP session opens).
fn token_works(gateway: &Gateway, token: &str) -> bool {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        match linkly_mcp::RemoteClient::connect(&gateway.mcp(), Some(token)).await {
            Ok(c) => {
                c.close().await;
                true
            }
            Err(_) => false,
        }
    })
}

/// Publishes a local library (`name`) of `home` to `gateway` with `token`.
pub(crate) fn publish(
    home: &Path,
    name: &str,
    gateway: &Gateway,
    token: &str,
    visibility: &str,
) -> Value {
    linkly_json(
        home,
        &[
            "publish",
            name,
            "--gateway",
            &gateway.base(),
            "--token",
            token,
            "--visibility",
            visibility,
        ],
    )
}

#[test]
fn an_administrator_rotates_tokens_withdraws_invitations_and_removes_libraries() {
    let tmp = tempfile::tempdir().unwrap();
    let gw_home = tmp.path().join("gateway-home");
    let gateway = Gateway::start(&gw_home, None);
    let alice = add_user(&gw_home, "alice", None);
    let bob = add_user(&gw_home, "bob", None);
    let alice_home = tmp.path().join("alice-home");
    local_libraries(
        &alice_home,
        &tmp.path().join("alice-docs"),
        &[("private-docs", PRIVATE), ("public-docs", PUBLIC)],
    );
    publish(&alice_home, "private-docs", &gateway, &alice, "private");
    publish(&alice_home, "public-docs", &gateway, &alice, "public");

    // Every library, private ones included, for the administrator.
    let v = linkly_json(&gw_home, &["gateway", "library", "list"]);
    let listed: Vec<(&str, &str, u64)> = v["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["library"].as_str().unwrap(),
                l["visibility"].as_str().unwrap(),
                l["documents"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("cloud://alice/private-docs", "private", 1),
            ("cloud://alice/public-docs", "public", 2)
        ],
        "{v}"
    );

    // Bob is invited, links the private library and searches it; the invitation is withdrawn:
    // the library is gone for him at once.
    let library = "cloud://alice/private-docs";
    linkly_json(&gw_home, &["gateway", "invite", library, "bob"]);
    let bob_home = tmp.path().join("bob-home");
    fs_err::create_dir_all(&bob_home).unwrap();
    let mut client = StdioClient::start(
        Command::new(bin())
            .env_remove("LINKLY_LOG")
            .arg("--home")
            .arg(&bob_home)
            .args(["mcp", "--remote", &gateway.base(), "--token", &bob]),
    );
    let (text, error) = client.call("library_link", json!({"library": library}));
    assert!(!error, "{text}");
    let (text, error) = client.call("search", json!({"query": "obsidian", "library": library}));
    assert!(!error && text.contains("diary"), "{text}");
    let v = linkly_json(&gw_home, &["gateway", "invite", library, "bob", "--remove"]);
    assert_eq!(v["removed"], true, "{v}");
    let (text, error) = client.call("search", json!({"query": "obsidian", "library": library}));
    assert!(error && text.contains("LIBRARY_NOT_FOUND"), "{text}");
    let out = linkly(&gw_home, &["gateway", "invite", library, "bob", "--remove"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to withdraw"));

    // A rotated token: the old one stops at once, the new one works.
    assert!(token_works(&gateway, &alice));
    let v = linkly_json(&gw_home, &["gateway", "token", "rotate", "alice"]);
    let new = v["token"].as_str().unwrap().to_string();
    assert!(!token_works(&gateway, &alice), "the old token still works");
    assert!(token_works(&gateway, &new));
    let out = linkly(
        &alice_home,
        &[
            "publish",
            "public-docs",
            "--gateway",
            &gateway.base(),
            "--token",
            &alice,
        ],
    );
    assert!(!out.status.success());
    let out = linkly(&gw_home, &["gateway", "token", "rotate", "nobody"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no user \"nobody\""));

    // Removing a library takes it away from the gateway.
    let v = linkly_json(
        &gw_home,
        &["gateway", "library", "remove", "cloud://alice/public-docs"],
    );
    assert_eq!(v["removed"], "cloud://alice/public-docs", "{v}");
    let v = linkly_json(&gw_home, &["gateway", "library", "list"]);
    assert_eq!(v["libraries"].as_array().unwrap().len(), 1, "{v}");
    let out = linkly(
        &gw_home,
        &["gateway", "library", "remove", "cloud://alice/public-docs"],
    );
    assert!(!out.status.success());
    let (text, _) = client.call("library_search", json!({"query": "public"}));
    assert!(!text.contains("public-docs"), "{text}");
}

#[test]
fn a_remote_session_carries_on_across_a_gateway_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let gw_home = tmp.path().join("gateway-home");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut gateway = Gateway::start_at(&gw_home, None, port);
    let ann = add_user(&gw_home, "ann", None);
    let home = tmp.path().join("ann-home");
    local_libraries(&home, &tmp.path().join("ann-docs"), &[("stars", PUBLIC)]);
    publish(&home, "stars", &gateway, &ann, "public");
    let library = "cloud://ann/stars";
    let mut client = StdioClient::start(
        Command::new(bin())
            .env_remove("LINKLY_LOG")
            .arg("--home")
            .arg(&home)
            .args(["mcp", "--remote", &gateway.base(), "--token", &ann]),
    );
    let (text, error) = client.call("library_link", json!({"library": library}));
    assert!(!error, "{text}");
    let search = json!({"query": "quasar", "library": library, "output_format": "json"});
    let (before, error) = client.call("search", search.clone());
    assert!(!error, "{before}");
    let total = serde_json::from_str::<Value>(&before).unwrap()["total"].clone();
    assert_eq!(total, 2, "{before}");

    // The gateway restarts on the same port: the session carries on.
    assert!(gateway.stop());
    let gateway = Gateway::start_at(&gw_home, None, port);
    let (after, error) = client.call("search", search);
    assert!(
        !error,
        "{after}\ngateway log: {}",
        fs_err::read_to_string(&gateway.log).unwrap_or_default()
    );
    assert_eq!(
        serde_json::from_str::<Value>(&after).unwrap()["total"],
        total
    );
    let (text, error) = client.call("library_search", json!({"query": "stars"}));
    assert!(!error && text.contains(library), "{text}");
    // Local tools answer throughout.
    let (text, error) = client.call("list_libraries", json!({}));
    assert!(!error && text.contains("stars"), "{text}");
}

#[test]
fn notes_are_saved_by_every_process_of_a_gateway() {
    let tmp = tempfile::tempdir().unwrap();
    // Two processes on one data directory and one database (SQLite here; PostgreSQL in
    // two_gateway_processes_share_a_postgresql_catalogue).
    let gw_home = tmp.path().join("gateway-home");
    let one = Gateway::start(&gw_home, None);
    let two = Gateway::start_at(&gw_home, None, 0);
    let token = add_user(&gw_home, "nia", None);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let clients: Vec<linkly_mcp::RemoteClient> = [&one, &two]
        .iter()
        .map(|g| {
            rt.block_on(linkly_mcp::RemoteClient::connect(&g.mcp(), Some(&token)))
                .unwrap()
        })
        .collect();
    // Turn by turn, with no pause: each process saves while the other has just written.
    for round in 0..3 {
        for (i, client) in clients.iter().enumerate() {
            let out = rt
                .block_on(client.call(
                    "note_save",
                    json!({
                        "mode": "create",
                        "content": format!("Note {round} {i}: zeppelin{round}x{i} saved through process {i}"),
                    }),
                ))
                .unwrap();
            assert!(!out.is_error, "round {round}, process {i}: {}", out.text);
        }
    }
    // The gateway names the app each note came from, as the client named itself.
    let listed = rt
        .block_on(clients[0].call("list", json!({"scope": "notes", "output_format": "json"})))
        .unwrap();
    let v: Value = serde_json::from_str(&listed.text).unwrap();
    let sources: Vec<&str> = v["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .filter_map(|n| n["source"].as_str())
        .collect();
    assert_eq!(sources.len(), 6, "{v}");
    assert!(sources.iter().all(|s| *s == linkly_mcp::CLIENT_NAME), "{v}");
    // Each process finds every note, whichever process saved it.
    for client in &clients {
        for round in 0..3 {
            for i in 0..2 {
                let out = rt
                    .block_on(client.call(
                        "search",
                        json!({"query": format!("zeppelin{round}x{i}"), "scope": "notes", "output_format": "json"}),
                    ))
                    .unwrap();
                assert!(!out.is_error, "{}", out.text);
                let v: Value = serde_json::from_str(&out.text).unwrap();
                assert_eq!(v["total"], 1, "zeppelin{round}x{i}: {}", out.text);
            }
        }
    }
}

/// The test embedding model's folder (all-MiniLM-L6-v2 from `cargo xtask test-model`); fails,
/// never skips, when it is missing.
fn test_model() -> PathBuf {
    let dir = std::env::var_os("LINKLY_TEST_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_dir().join("target/test-model"));
    assert!(
        dir.join("model.safetensors").is_file(),
        "the test embedding model is missing at {}: run `cargo xtask test-model`",
        dir.display()
    );
    dir
}

/// Indexes `files` as the library `name` of a local data directory, with `model` embedding
/// them (none: no vectors), and publishes it; returns the publish report.
fn publish_library(
    home: &Path,
    docs: &Path,
    name: &str,
    model: Option<&Path>,
    gateway: &Gateway,
    token: &str,
) -> Value {
    let dir = docs.join(name);
    write_files(&dir, MEANING);
    for args in [
        vec!["index", dir.to_str().unwrap()],
        vec!["library", "add", name, dir.to_str().unwrap()],
    ] {
        let out = linkly_with_model(home, model, &args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The publish itself needs no model: the vectors are read from the index.
    let out = linkly_with_model(
        home,
        None,
        &[
            "--json",
            "publish",
            name,
            "--gateway",
            &gateway.base(),
            "--token",
            token,
        ],
    );
    assert!(
        out.status.success(),
        "publish: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Links `library` and searches it for [`PARAPHRASE`] through `linkly mcp --remote`.
fn search_by_meaning(home: &Path, gateway: &Gateway, token: &str, library: &str) -> Value {
    let mut client = StdioClient::start(
        Command::new(bin())
            .env_remove("LINKLY_LOG")
            .env_remove("LINKLY_MODEL_DIR")
            .arg("--home")
            .arg(home)
            .args(["mcp", "--remote", &gateway.base(), "--token", token]),
    );
    let (text, error) = client.call("library_link", json!({"library": library}));
    assert!(!error, "{text}");
    let (text, error) = client.call(
        "search",
        json!({"query": PARAPHRASE, "library": library, "output_format": "json", "limit": 3}),
    );
    assert!(
        !error,
        "{text}\ngateway log: {}",
        fs_err::read_to_string(&gateway.log).unwrap_or_default()
    );
    serde_json::from_str(&text).unwrap()
}

/// POSTs JSON to the gateway's publish API; the status and the answer's JSON.
fn api_post(gateway: &Gateway, token: &str, tail: &str, body: &Value) -> (u16, Value) {
    let url = format!("{}/api/v1/libraries/{tail}", gateway.base());
    let answer = ureq::post(&url)
        .set("Authorization", &format!("Bearer {token}"))
        .set("Content-Type", "application/json")
        .send_string(&body.to_string());
    let (status, response) = match answer {
        Ok(r) => (r.status(), r),
        Err(ureq::Error::Status(code, r)) => (code, r),
        Err(e) => panic!("{url}: {e}"),
    };
    (
        status,
        serde_json::from_str(&response.into_string().unwrap()).unwrap(),
    )
}

#[test]
fn a_library_published_with_vectors_is_searched_by_meaning_on_the_gateway() {
    let model = test_model();
    let tmp = tempfile::tempdir().unwrap();
    let gw_home = tmp.path().join("gateway-home");
    let gateway = Gateway::start_with_model(&gw_home, &model);
    let ann = add_user(&gw_home, "ann", None);
    let docs = tmp.path().join("docs");

    // Published with the vectors of the local index: found by meaning, in hybrid mode.
    let home = tmp.path().join("ann-home");
    let report = publish_library(&home, &docs, "baking", Some(&model), &gateway, &ann);
    assert_eq!(report["sent"], 3, "{report}");
    assert_eq!(report["sent_with_vectors"], 3, "{report}");
    let vector_model = report["vector_model"].as_str().unwrap().to_string();
    let found = search_by_meaning(&home, &gateway, &ann, "cloud://ann/baking");
    assert_eq!(found["mode"], "hybrid", "{found}");
    let first = found["results"][0]["path"].as_str().unwrap_or_default();
    assert!(first.ends_with("bread.md"), "{found}");

    // Published without vectors (the publisher has no model): keyword, saying why.
    let bare = tmp.path().join("bare-home");
    // (Another user: a free plan links one library.)
    let cy = add_user(&gw_home, "cy", None);
    let report = publish_library(&bare, &docs, "plain", None, &gateway, &cy);
    assert!(report["vector_model"].is_null(), "{report}");
    let found = search_by_meaning(&bare, &gateway, &cy, "cloud://cy/plain");
    assert_eq!(found["mode"], "keyword", "{found}");
    assert!(
        found["notices"]
            .to_string()
            .contains("published without vectors"),
        "{found}"
    );

    // A vector of the wrong width is refused with a clear error, and nothing is stored.
    let (status, opened) = api_post(
        &gateway,
        &ann,
        "baking/publish",
        &json!({"documents": [{"path": "baking/odd.md", "hash": "h1"}]}),
    );
    assert_eq!(status, 200, "{opened}");
    let batch = format!("baking/publish/{}/documents", opened["publish"]);
    let short = json!({
        "path": "baking/odd.md", "doc_type": "md", "hash": "h1", "size": 4,
        "modified_at": 0, "title": null, "text": "odd\n", "outline": [],
        "vectors": {"model": vector_model, "dim": 384,
                    "chunks": [{"start_line": 1, "end_line": 1, "vector": "AACAPwAAAEAAAEBA"}]}
    });
    let (status, answer) = api_post(&gateway, &ann, &batch, &json!({"documents": [short]}));
    assert_eq!(status, 400, "{answer}");
    let error = answer["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("baking/odd.md") && error.contains("3 values") && error.contains("384"),
        "{answer}"
    );
    // Consistent in itself, but not the width of the model of that name this gateway has.
    let narrow = json!({
        "path": "baking/odd.md", "doc_type": "md", "hash": "h1", "size": 4,
        "modified_at": 0, "title": null, "text": "odd\n", "outline": [],
        "vectors": {"model": vector_model, "dim": 3,
                    "chunks": [{"start_line": 1, "end_line": 1, "vector": "AACAPwAAAEAAAEBA"}]}
    });
    let (status, answer) = api_post(&gateway, &ann, &batch, &json!({"documents": [narrow]}));
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap_or_default()
            .contains("384-dimensional"),
        "{answer}"
    );
    let (_, manifest) = api_post(
        &gateway,
        &ann,
        "baking/publish",
        &json!({"documents": [{"path": "baking/odd.md", "hash": "h1"}]}),
    );
    assert_eq!(
        manifest["needed"],
        json!(["baking/odd.md"]),
        "nothing was stored: {manifest}"
    );

    // A gateway without the model: keyword, saying why.
    let bare_gw_home = tmp.path().join("bare-gateway-home");
    let bare_gateway = Gateway::start(&bare_gw_home, None);
    let bob = add_user(&bare_gw_home, "bob", None);
    let bob_home = tmp.path().join("bob-home");
    let report = publish_library(
        &bob_home,
        &tmp.path().join("bob-docs"),
        "baking",
        Some(&model),
        &bare_gateway,
        &bob,
    );
    assert_eq!(report["sent_with_vectors"], 3, "{report}");
    let found = search_by_meaning(&bob_home, &bare_gateway, &bob, "cloud://bob/baking");
    assert_eq!(found["mode"], "keyword", "{found}");
    let notices = found["notices"].to_string();
    assert!(
        notices.contains(&vector_model) && notices.contains("does not have it"),
        "{found}"
    );
}

/// A TCP relay to `port` that cuts the connection carrying a request whose line names `cut`
/// (`/commit `: a `linkly publish` cut off after its last batch; `/documents `: while it sends
/// its batches).
fn relay_cutting(port: u16, cut: &'static [u8]) -> u16 {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let relay = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { continue };
            let Ok(mut server) = TcpStream::connect(("127.0.0.1", port)) else {
                continue;
            };
            let (mut back_from, mut back_to) =
                (server.try_clone().unwrap(), client.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut back_from, &mut back_to);
                let _ = back_to.shutdown(Shutdown::Both);
            });
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 64 << 10];
                while let Ok(n) = client.read(&mut buf) {
                    let chunk = &buf[..n];
                    if n == 0 || chunk.windows(cut.len()).any(|w| w == cut) {
                        break;
                    }
                    if server.write_all(chunk).is_err() {
                        break;
                    }
                }
                let _ = client.shutdown(Shutdown::Both);
                let _ = server.shutdown(Shutdown::Both);
            });
        }
    });
    relay
}

/// Whether a search of `library` for `word` finds something, as its owner sees it over MCP.
fn finds(gateway: &Gateway, token: &str, library: &str, word: &str) -> bool {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = linkly_mcp::RemoteClient::connect(&gateway.mcp(), Some(token))
            .await
            .unwrap();
        let linked = c
            .call("library_link", json!({ "library": library }))
            .await
            .unwrap();
        assert!(!linked.is_error, "{}", linked.text);
        let out = c
            .call(
                "search",
                json!({"query": word, "library": library, "output_format": "json"}),
            )
            .await
            .unwrap();
        assert!(!out.is_error, "{}", out.text);
        c.close().await;
        let v: Value = serde_json::from_str(&out.text).unwrap();
        !v["results"].as_array().unwrap().is_empty()
    })
}

#[test]
#[allow(clippy::print_stderr)] // the note that says PostgreSQL was skipped
fn a_publish_cut_off_before_its_commit_leaves_the_library_as_it_was() {
    let postgres = std::env::var("LINKLY_TEST_POSTGRES").ok();
    if postgres.is_none() {
        eprintln!("note: LINKLY_TEST_POSTGRES is not set: the cut-off publish runs on SQLite only");
    }
    let databases = std::iter::once(None).chain(postgres.as_deref().map(Some));
    for database in databases {
        let tmp = tempfile::tempdir().unwrap();
        let gw_home = tmp.path().join("gateway-home");
        let gateway = Gateway::start(&gw_home, database);
        // A name of its own, so that runs against one PostgreSQL database do not meet.
        let owner = format!("cut{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
        let token = add_user(&gw_home, &owner, database);
        let home = tmp.path().join("home");
        let docs = tmp.path().join("docs");
        local_libraries(
            &home,
            &docs,
            &[(
                "orchard",
                &[
                    ("a.md", "# A\n\nThe apples ripen.\n"),
                    ("b.md", "# B\n\nThe bananas ripen.\n"),
                ],
            )],
        );
        let library = format!("cloud://{owner}/orchard");
        let v = publish(&home, "orchard", &gateway, &token, "public");
        assert_eq!(
            (v["library"].as_str(), v["sent"].as_u64()),
            (Some(library.as_str()), Some(2)),
            "{v}"
        );

        // The next version: a.md changed, b.md gone, d.md new; its commit never arrives.
        let dir = docs.join("orchard");
        write_files(
            &dir,
            &[
                ("a.md", "# A\n\nThe avocados ripen.\n"),
                ("d.md", "# D\n\nThe dates ripen.\n"),
            ],
        );
        fs_err::remove_file(dir.join("b.md")).unwrap();
        let out = linkly(&home, &["index", dir.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Which of the words of both versions a search of the library finds.
        let seen = || -> Vec<bool> {
            ["apples", "bananas", "avocados", "dates"]
                .iter()
                .map(|w| finds(&gateway, &token, &library, w))
                .collect()
        };
        // Cut while its batches go (the sending thread fails), then before its commit.
        for cut in [&b"/documents "[..], b"/commit "] {
            let relay = relay_cutting(gateway.port, cut);
            let out = linkly(
                &home,
                &[
                    "publish",
                    "orchard",
                    "--gateway",
                    &format!("http://127.0.0.1:{relay}"),
                    "--token",
                    &token,
                ],
            );
            let cut = String::from_utf8_lossy(cut);
            assert!(!out.status.success(), "the publish was cut at {cut}");
            let said = String::from_utf8_lossy(&out.stderr);
            assert!(said.contains("cannot reach the gateway"), "{cut}: {said}");
            assert_eq!(
                seen(),
                [true, true, false, false],
                "cut at {cut}: the library is as it was"
            );
        }

        // The next full publish commits the new version whole.
        let v = publish(&home, "orchard", &gateway, &token, "public");
        assert_eq!(
            (v["sent"].as_u64(), v["removed"].as_u64()),
            (Some(2), Some(1)),
            "{v}"
        );
        assert_eq!(
            seen(),
            [false, false, true, true],
            "the library is the new one"
        );
    }
}
