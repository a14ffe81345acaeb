//! One server per data directory, for months: a background server (`linkly mcp`) hands over to
//! one started by hand while an MCP client keeps working through it, `linkly stop` stops the
//! server, and `linkly status` says which process serves, since when, started by whom and with
//! which options. All through the real binary.

use crate::common;

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Env, Proc, StdioClient, bin, free_port, wait_until};
use serde_json::{Value, json};

fn status(env: &Env) -> Value {
    let out = env.run(&["--json", "status"]);
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

fn port_file(env: &Env) -> Value {
    fs_err::read_to_string(env.home.join("port"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null)
}

fn log(env: &Env) -> String {
    fs_err::read_to_string(env.home.join("serve.log")).unwrap_or_default()
}

/// Whether process `pid` still runs (Linux: `/proc`; a zombie counts as gone).
fn alive(pid: u64) -> bool {
    fs_err::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

#[test]
fn a_background_server_hands_over_to_one_started_by_hand_and_clients_follow() {
    let env = Env::sample();
    env.run(&["folders", "add", env.docs.to_str().unwrap()]);
    // An MCP client starts the background server and searches through it.
    let mut client = StdioClient::start(env.cmd().arg("mcp"));
    wait_until(
        "the background server's first sync",
        Duration::from_secs(60),
        || status(&env)["index_status"] == "watching",
    );
    assert_eq!(client.search("budget")["total"], 2);
    let background = status(&env);
    assert_eq!(background["server"], "running", "{background}");
    let process = &background["process"];
    assert_eq!(process["started_by"], "background", "{background}");
    assert_eq!(
        process["options"],
        json!(["--exit-when-unused", "300"]),
        "{background}"
    );
    let old_pid = process["pid"].as_u64().unwrap();
    assert_eq!(port_file(&env)["pid"], old_pid);
    assert!(
        process["started_at"].as_str().unwrap().ends_with('Z'),
        "{process}"
    );

    // The person starts a server by hand with their own options: it takes over.
    let port = free_port();
    let hand_log = env.tmp.path().join("hand.log");
    let hand = Proc(
        env.cmd()
            .args(["serve", "--port", &port.to_string(), "--no-model-download"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&hand_log).unwrap())
            .spawn()
            .unwrap(),
    );
    let hand_pid = u64::from(hand.0.id());
    wait_until(
        "the server started by hand",
        Duration::from_secs(90),
        || {
            let s = status(&env);
            s["process"]["pid"] == hand_pid && s["index_status"] == "watching"
        },
    );
    let st = status(&env);
    assert_eq!(st["process"]["started_by"], "hand", "{st}");
    assert_eq!(
        st["process"]["options"],
        json!(["--port", port.to_string(), "--no-model-download"]),
        "{st}"
    );
    assert_eq!(
        st["mcp_endpoint"],
        format!("http://127.0.0.1:{port}/mcp"),
        "{st}"
    );
    wait_until(
        "the background server to exit",
        Duration::from_secs(30),
        || !alive(old_pid),
    );
    let said = fs_err::read_to_string(&hand_log).unwrap();
    assert!(said.contains("hands over to this one"), "{said}");
    assert!(
        log(&env).contains(&format!(
            "Handing over to the server started by hand (pid {hand_pid})"
        )),
        "{}",
        log(&env)
    );
    assert!(!env.home.join("handover").exists());

    // The client carries on, now through the server started by hand; no other server started.
    assert_eq!(client.search("budget")["total"], 2);
    assert_eq!(client.search("epsilon")["total"], 1);
    assert_eq!(port_file(&env)["pid"], hand_pid);
    let text = String::from_utf8_lossy(&env.run(&["status"]).stdout).into_owned();
    assert!(
        text.contains(&format!("Process: pid {hand_pid}, started by hand at ")),
        "{text}"
    );
    assert!(
        text.contains(&format!("options: --port {port} --no-model-download")),
        "{text}"
    );

    // A second server by hand is refused, naming the one running and `linkly stop`.
    let err = env.run_failing(&["serve", "--port", &free_port().to_string()]);
    assert!(err.contains("already running"), "{err}");
    assert!(err.contains("started by hand"), "{err}");
    assert!(err.contains("`linkly stop`"), "{err}");

    // `linkly stop` stops it gracefully; the client is closed before it could start another.
    drop(client);
    let out = env.run_ok(&["stop"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!(
            "Stopped the server (pid {hand_pid}, started by hand"
        )),
        "{said}"
    );
    let mut hand = hand;
    let code = hand.0.wait().unwrap();
    assert!(code.success(), "{code:?}");
    assert_eq!(status(&env)["server"], "not running");
    assert!(!env.home.join("port").exists());
}

#[test]
fn linkly_stop_stops_the_server_and_says_so_when_none_runs() {
    let env = Env::sample();
    env.run(&["folders", "add", env.docs.to_str().unwrap()]);
    let out = env.run(&["--json", "stop"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["stopped"], false, "{v}");
    assert!(
        v["message"].as_str().unwrap().contains("No server runs"),
        "{v}"
    );

    // A background server, as `linkly mcp` starts it.
    let port = free_port();
    let server = Proc(
        env.cmd()
            .args([
                "serve",
                "--exit-when-unused",
                "600",
                "--port",
                &port.to_string(),
                "--no-model-download",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until("the server", Duration::from_secs(60), || {
        status(&env)["process"]["pid"] == server.0.id()
    });
    let file = port_file(&env);
    assert_eq!(file["port"], port);
    // The port file is the owner's only: it holds the control token.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = fs_err::metadata(env.home.join("port"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }
    // Without the token, or with a wrong one, the control request is refused.
    let secret = env.local_secret();
    for header in [None, Some("not-the-token")] {
        let answer = control_stop(port, header, Some(&secret));
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    }
    // The right control token without the local secret: the stop is the person's, 401.
    let control = file["control"].as_str().unwrap();
    let answer = control_stop(port, Some(control), None);
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(alive(u64::from(server.0.id())));

    let out = env.run_ok(&["--json", "stop"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["stopped"], true, "{v}");
    assert_eq!(v["server"]["started_by"], "background", "{v}");
    assert_eq!(v["server"]["pid"], server.0.id(), "{v}");
    let mut server = server;
    assert!(server.0.wait().unwrap().success());
    assert_eq!(status(&env)["server"], "not running");
    // A stale port file (a server that crashed) is cleaned up, not obeyed.
    fs_err::write(
        env.home.join("port"),
        json!({"port": free_port(), "pid": 1, "control": "x"}).to_string(),
    )
    .unwrap();
    let out = env.run(&["stop"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("did not stop cleanly"));
    assert!(!env.home.join("port").exists());
}

/// `POST /control/stop` by hand, with a `Linkly-Control` header or none, as the person (with
/// the local secret) or not: the raw answer.
fn control_stop(port: u16, token: Option<&str>, secret: Option<&str>) -> String {
    use std::io::Read as _;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let header = token
        .map(|t| format!("Linkly-Control: {t}\r\n"))
        .unwrap_or_default()
        + &secret
            .map(|s| format!("Authorization: Bearer {s}\r\n"))
            .unwrap_or_default();
    write!(
        s,
        "POST /control/stop HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{header}Content-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// `linkly` is what the tests above drive; this keeps `bin` and `Command` in use here.
#[test]
fn the_stop_command_is_documented() {
    let out = Command::new(bin())
        .args(["stop", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("gracefully"));
}
