//! A lean MCP load generator: K concurrent Streamable HTTP sessions, each on its own thread and
//! keep-alive connection, that `initialize` and then call one tool N times.
//!
//! It exists because the Python SDK's load mode costs more CPU per call than the server does:
//! on a two-core machine, 16 Python sessions measure the client. This one parses only what it
//! needs (the `Mcp-Session-Id` header, the JSON-RPC answer in a JSON or SSE body) and reports
//! the latency percentiles, the throughput, the errors, and the CPU time it and the server spent.

use std::io::Read as _;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

/// What a load run measured.
#[derive(Debug, Clone)]
pub(crate) struct LoadReport {
    /// Calls answered (successfully or not).
    pub(crate) calls: usize,
    /// Calls that failed: transport errors, JSON-RPC errors and tool errors (`isError`).
    pub(crate) errors: usize,
    /// Seconds from the first call to the last answer.
    pub(crate) wall_s: f64,
    /// Median latency, ms.
    pub(crate) p50: f64,
    /// 99th percentile latency, ms.
    pub(crate) p99: f64,
    /// CPU seconds this process spent during the calls.
    pub(crate) client_cpu_s: f64,
    /// CPU seconds the server spent during the calls (when its pid was given).
    pub(crate) server_cpu_s: Option<f64>,
}

impl LoadReport {
    /// Calls per second.
    pub(crate) fn rate(&self) -> f64 {
        self.calls as f64 / self.wall_s.max(1e-9)
    }
}

/// CPU seconds (user + system) of the children this process has waited for, from
/// `/proc/self/stat` (cutime + cstime): a finished load client's share.
pub(crate) fn children_cpu_seconds() -> Option<f64> {
    let stat = fs_err::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(13)?.parse::<f64>().ok()? + fields.get(14)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// CPU seconds (user + system) of a process, from `/proc/<pid>/stat` (clock ticks of 1/100 s).
pub(crate) fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = fs_err::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

struct Session {
    agent: ureq::Agent,
    url: String,
    /// The bearer token sent with every request (a gateway user's, or a LAN token).
    token: Option<String>,
    id: Option<String>,
    next: u64,
}

impl Session {
    fn open(url: &str, token: Option<&str>) -> anyhow::Result<Session> {
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(60))
            .max_idle_connections_per_host(1)
            .build();
        let mut s = Session {
            agent,
            url: url.to_string(),
            token: token.map(str::to_string),
            id: None,
            next: 1,
        };
        let init = s.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "linkly-xtask-load", "version": "0"}
            }),
        )?;
        if init.get("result").is_none() {
            bail!("initialize failed: {init}");
        }
        s.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(s)
    }

    fn post(&mut self, body: &Value) -> anyhow::Result<Option<Value>> {
        let mut req = self
            .agent
            .post(&self.url)
            .set("Content-Type", "application/json")
            .set("Accept", "application/json, text/event-stream")
            .set("MCP-Protocol-Version", "2025-06-18");
        if let Some(id) = &self.id {
            req = req.set("Mcp-Session-Id", id);
        }
        if let Some(token) = &self.token {
            req = req.set("Authorization", &format!("Bearer {token}"));
        }
        let resp = req
            .send_string(&body.to_string())
            .map_err(|e| anyhow::anyhow!("POST failed: {e}"))?;
        if let Some(id) = resp.header("mcp-session-id") {
            self.id = Some(id.to_string());
        }
        let sse = resp
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"));
        let mut text = String::new();
        resp.into_reader()
            .take(64 << 20)
            .read_to_string(&mut text)?;
        answer(&text, sse)
    }

    fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next;
        self.next += 1;
        self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?
            .with_context(|| format!("no answer to {method}"))
    }

    fn call(&mut self, tool: &str, args: &Value) -> anyhow::Result<()> {
        let v = self.request("tools/call", json!({"name": tool, "arguments": args}))?;
        if let Some(e) = v.get("error") {
            bail!("JSON-RPC error: {e}");
        }
        if v["result"]["isError"].as_bool() == Some(true) {
            bail!("tool error: {}", v["result"]);
        }
        Ok(())
    }

    fn close(self) {
        if let Some(id) = &self.id {
            let _ = self
                .agent
                .delete(&self.url)
                .set("Mcp-Session-Id", id)
                .call();
        }
    }
}

/// The JSON-RPC answer in a response body: the JSON itself, or in an SSE stream the first
/// event whose data is a message with an `id` (priming events and notifications are skipped);
/// `None` for an empty body (a notification's 202).
fn answer(body: &str, sse: bool) -> anyhow::Result<Option<Value>> {
    if body.trim().is_empty() {
        return Ok(None);
    }
    if !sse {
        return Ok(Some(serde_json::from_str(body)?));
    }
    Ok(body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|v| v.get("id").is_some()))
}

/// Runs `clients` sessions of `calls` calls each of `tool` with `args` against `url`; the
/// sessions all initialise first, then call at once. `server_pid` adds the server's CPU time.
pub(crate) fn run(
    url: &str,
    clients: usize,
    calls: usize,
    tool: &str,
    args: &Value,
    server_pid: Option<u32>,
    token: Option<&str>,
) -> anyhow::Result<LoadReport> {
    let start = Arc::new(Barrier::new(clients + 1));
    let done = Arc::new(Barrier::new(clients + 1));
    let mut handles = Vec::with_capacity(clients);
    for _ in 0..clients {
        let (url, tool, args) = (url.to_string(), tool.to_string(), args.clone());
        let token = token.map(str::to_string);
        let (start, done) = (start.clone(), done.clone());
        handles.push(std::thread::spawn(move || {
            let session = Session::open(&url, token.as_deref());
            start.wait();
            let mut ms = Vec::with_capacity(calls);
            let mut errors = 0usize;
            let mut first_error = None;
            match session {
                Ok(mut s) => {
                    for _ in 0..calls {
                        let t = Instant::now();
                        if let Err(e) = s.call(&tool, &args) {
                            errors += 1;
                            first_error.get_or_insert_with(|| e.to_string());
                        }
                        ms.push(t.elapsed().as_secs_f64() * 1000.0);
                    }
                    done.wait();
                    s.close();
                }
                Err(e) => {
                    errors = calls;
                    first_error = Some(format!("session: {e}"));
                    done.wait();
                }
            }
            (ms, errors, first_error)
        }));
    }
    start.wait();
    let server = server_pid.map(|p| p.to_string());
    let cpu0 = (cpu_seconds("self"), server.as_deref().and_then(cpu_seconds));
    let t = Instant::now();
    done.wait();
    let wall_s = t.elapsed().as_secs_f64();
    let cpu1 = (cpu_seconds("self"), server.as_deref().and_then(cpu_seconds));
    let mut all = Vec::with_capacity(clients * calls);
    let mut errors = 0;
    for h in handles {
        let (ms, e, first) = h.join().map_err(|_| anyhow::anyhow!("a client panicked"))?;
        if let Some(first) = first {
            eprintln!("load: {first}");
        }
        all.extend(ms);
        errors += e;
    }
    if all.is_empty() {
        bail!("no call was made");
    }
    let calls = all.len();
    let (p50, p99) = crate::bench::percentiles(all);
    Ok(LoadReport {
        calls,
        errors,
        wall_s,
        p50,
        p99,
        client_cpu_s: cpu1.0.zip(cpu0.0).map_or(0.0, |(b, a)| b - a),
        server_cpu_s: cpu1.1.zip(cpu0.1).map(|(b, a)| b - a),
    })
}

/// One tool call on a session of its own: the JSON-RPC `result` (`isError` answers included).
pub(crate) fn call_once(
    url: &str,
    token: Option<&str>,
    tool: &str,
    args: &Value,
) -> anyhow::Result<Value> {
    let mut s = Session::open(url, token)?;
    let v = s.request("tools/call", json!({"name": tool, "arguments": args}))?;
    s.close();
    if let Some(e) = v.get("error") {
        bail!("JSON-RPC error: {e}");
    }
    Ok(v["result"].clone())
}

/// `cargo xtask bench load --url URL [--clients K] [--calls N] [--tool T] [--args JSON]
/// [--pid P]`: one load run against a running server, printed as a table row.
pub(crate) fn cli(args: &[String]) -> anyhow::Result<()> {
    let url = crate::arg(args, "--url").context("--url URL (the server's /mcp endpoint)")?;
    let clients: usize = crate::arg(args, "--clients").map_or(Ok(16), |s| s.parse())?;
    let calls: usize = crate::arg(args, "--calls").map_or(Ok(100), |s| s.parse())?;
    let tool = crate::arg(args, "--tool").unwrap_or_else(|| "search".into());
    let targs: Value = crate::arg(args, "--args")
        .map_or(Ok(json!({"query": "section", "limit": 10})), |s| {
            serde_json::from_str(&s)
        })?;
    let pid = crate::arg(args, "--pid").map(|s| s.parse()).transpose()?;
    let token = crate::arg(args, "--token");
    let r = run(&url, clients, calls, &tool, &targs, pid, token.as_deref())?;
    println!("{}", row(clients, calls, &tool, &r));
    Ok(())
}

/// A Markdown table row for a run.
pub(crate) fn row(clients: usize, calls: usize, tool: &str, r: &LoadReport) -> String {
    format!(
        "| {clients} client(s) × {calls} {tool} | {:.0} calls/s, p50 {:.1} ms, p99 {:.1} ms, errors {} | CPU: server {}, client {:.2} s |",
        r.rate(),
        r.p50,
        r.p99,
        r.errors,
        r.server_cpu_s
            .map_or("?".to_string(), |s| format!("{s:.2} s")),
        r.client_cpu_s
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_found_in_json_and_in_sse() {
        let json = r#"{"jsonrpc":"2.0","id":3,"result":{}}"#;
        assert_eq!(answer(json, false).unwrap().unwrap()["id"], 3);
        let sse = "id: 0\nretry: 3000\ndata:\n\n\
                   data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n\
                   id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"isError\":false}}\n\n";
        let v = answer(sse, true).unwrap().unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["result"]["isError"], false);
        assert!(answer("", true).unwrap().is_none());
        assert!(answer("data: {}\n\n", true).unwrap().is_none());
        assert!(answer("not json", false).is_err());
    }

    #[test]
    fn cpu_time_is_read_from_proc() {
        let before = cpu_seconds("self").expect("/proc/self/stat");
        let mut x = 0u64;
        for i in 0..50_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
        assert!(cpu_seconds("self").unwrap() >= before);
        assert!(children_cpu_seconds().is_some());
        assert!(cpu_seconds("0").is_none());
    }
}
