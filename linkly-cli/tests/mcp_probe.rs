//! The real `linkly` binary driven by an independent MCP client (the official Python SDK, via
//! `interop/client.py`) over stdio and over Streamable HTTP.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Env, Proc as Server, free_port};
use serde_json::{Value, json};

fn scenario(env: &Env) -> Value {
    let guide = env.doc_id("guide");
    let txt = env.doc_id("epsilon");
    json!({
        "require_tools": ["search", "outline", "grep", "read"],
        "steps": [
            {"name": "search finds the guide", "tool": "search", "arguments": {"query": "budget"},
             "expect": {"is_error": false, "contains": ["# Search Results", "Budget guide", "[meta] now="]}},
            {"name": "search in JSON", "tool": "search", "arguments": {"query": "機械学習", "output_format": "json"},
             "expect": {"json_paths": {"$._json.total": 1, "$._json.mode": "keyword", "$._json.results[0].doc_id": {"regex": "^local://\\d+$"}}}},
            {"name": "outline", "tool": "outline", "arguments": {"doc_ids": [guide]},
             "expect": {"contains": ["[1.1] Planning [L5-9, 5 lines]"]}},
            {"name": "grep", "tool": "grep", "arguments": {"pattern": "budget", "doc_id": guide, "context": 0},
             "expect": {"contains": ["Found 2 matches", "   7>\tThe budget for 2024 is set."]}},
            {"name": "read", "tool": "read", "arguments": {"doc_id": txt, "offset": 2, "limit": 1},
             "expect": {"contains": ["     2\tgamma budget delta"]}},
            {"name": "nulls are accepted", "tool": "search", "arguments": {"query": "budget", "limit": null},
             "expect": {"is_error": false}},
            {"name": "invalid limit names the parameter (the schema says the bound too)", "tool": "search", "arguments": {"query": "x", "limit": 80},
             "expect": {"args_schema_valid": false, "is_error": true, "contains": ["[INVALID_ARGUMENT] limit must be between 1 and 50 (got 80)"]}},
            {"name": "unknown field rejected", "tool": "read", "arguments": {"doc_id": txt, "max_lines": 3},
             "expect": {"args_schema_valid": false, "is_error": true, "contains": ["max_lines"]}},
            {"name": "stale id", "tool": "read", "arguments": {"doc_id": "local://999999"},
             "expect": {"is_error": true, "contains": ["[DOC_NOT_FOUND]"]}},
            {"name": "unknown tool is a JSON-RPC error", "tool": "no_such_tool", "arguments": {},
             "expect": {"rpc_error": -32602}}
        ]
    })
}

fn run_probe(env: &Env, target: &[String]) {
    let stdout = env.probe("scenario", target, &scenario(env));
    common::assert_passed(
        &stdout,
        &[
            "[check] initialize",
            "[check] tools/list",
            "[check] wire",
            "[check] schema read",
        ],
    );
}

#[test]
fn stdio_with_the_python_sdk_client() {
    let env = Env::sample();
    env.index();
    run_probe(&env, &env.stdio_target());
}

fn http(port: u16, request: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn start_server(env: &Env, port: u16) -> (Server, u16) {
    let child = env
        .cmd()
        .args([
            "serve",
            "--port",
            &port.to_string(),
            env.docs.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server(child);
    let port_file = env.home.join("port");
    wait_for("the port file", || port_file.exists());
    let v: Value = serde_json::from_str(&fs_err::read_to_string(&port_file).unwrap()).unwrap();
    let port = v["port"].as_u64().unwrap() as u16;
    wait_for("indexing to finish", || {
        let health = http(
            port,
            "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        );
        health.contains("\"index_status\":\"watching\"")
            || health.contains("\"index_status\":\"idle\"")
    });
    (server, port)
}

#[test]
fn http_with_the_python_sdk_client() {
    let env = Env::sample();
    let (mut server, port) = start_server(&env, free_port());
    let health = http(
        port,
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    let body: Value = serde_json::from_str(health.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["doc_count"], 4);
    assert_eq!(body["mcp_endpoint"], format!("http://127.0.0.1:{port}/mcp"));
    assert!(body["version"].is_string());
    run_probe(
        &env,
        &[
            "--http".into(),
            format!("http://127.0.0.1:{port}/mcp"),
            "--bearer-env".into(),
            "LINKLY_AGENT_TOKEN".into(),
        ],
    );

    // A browser page from another origin is refused (DNS-rebinding protection).
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let agent = fs_err::read_to_string(env.home.join("agent-token")).unwrap();
    let req = |origin: &str, token: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: {origin}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{init}",
            init.len(),
            token = token.trim(),
        )
    };
    let evil = http(port, &req("http://evil.example", &agent));
    assert!(evil.starts_with("HTTP/1.1 403"), "{evil}");
    let local = http(port, &req(&format!("http://localhost:{port}"), &agent));
    assert!(local.starts_with("HTTP/1.1 200"), "{local}");
    // Without the agent token (or the local secret), nothing: 401.
    let stranger = http(
        port,
        &req(&format!("http://localhost:{port}"), "not-the-token"),
    );
    assert!(stranger.starts_with("HTTP/1.1 401"), "{stranger}");

    // A second server on a busy port takes the next one.
    let port_file = env.home.join("port");
    #[cfg(unix)]
    {
        // SIGTERM: graceful shutdown removes the port file.
        let _ = Command::new("kill").arg(server.0.id().to_string()).status();
        let _ = server.0.wait();
        assert!(
            !Path::new(&port_file).exists(),
            "the port file is removed at shutdown"
        );
    }
}

#[test]
fn a_busy_port_moves_to_the_next_one() {
    let env = Env::sample();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port();
    let (_server, chosen) = start_server(&env, port);
    assert_ne!(chosen, port);
    assert!(chosen > port && chosen <= port + 20);
}
