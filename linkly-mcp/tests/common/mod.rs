//! What the MCP tests share: a server over an empty index, on an in-memory stdio pipe or on
//! loopback HTTP, and a stdio session with it as a client sees it.
// Each test binary uses part of it.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use linkly_core::{Config, DataDir};
use linkly_index::Index;
use linkly_mcp::{BoundHttp, IndexStatus, ServerState, serve_http};
use linkly_tools::Linkly;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, ReadHalf, WriteHalf};

/// Tools over an empty index in `tmp`'s `data` folder.
pub(crate) fn empty_linkly(tmp: &tempfile::TempDir) -> Arc<Linkly> {
    let data = DataDir::new(tmp.path().join("data"));
    let index = Index::open(&data.index_dir()).unwrap();
    Arc::new(Linkly::new(Arc::new(index), data, Config::default()))
}

/// Starts the stdio server over these tools on an in-memory pipe; the client's end of it
/// (not yet initialised).
pub(crate) fn serve_stdio(linkly: Arc<Linkly>) -> tokio::io::DuplexStream {
    let (client, server) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server);
    tokio::spawn(linkly_mcp::serve_streams(linkly, server_read, server_write));
    client
}

/// Starts the HTTP server on a bound listener, idle, until the returned sender is used or
/// dropped.
pub(crate) fn serve_http_until_stopped(
    bound: BoundHttp,
    linkly: Arc<Linkly>,
) -> tokio::sync::oneshot::Sender<()> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve_http(
        bound,
        linkly,
        ServerState::new(IndexStatus::Idle),
        async move {
            let _ = stopped.await;
        },
    ));
    stop
}

/// One initialised MCP session over an in-memory stdio pipe.
pub(crate) struct Session {
    read: BufReader<ReadHalf<tokio::io::DuplexStream>>,
    write: WriteHalf<tokio::io::DuplexStream>,
    next_id: u64,
    /// The `initialize` result.
    pub(crate) init: Value,
}

impl Session {
    /// A session with a server over these tools, initialised.
    pub(crate) async fn start(linkly: Arc<Linkly>) -> Session {
        let (read, write) = tokio::io::split(serve_stdio(linkly));
        let mut session = Session {
            read: BufReader::new(read),
            write,
            next_id: 1,
            init: Value::Null,
        };
        let init = session
            .request(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "tests", "version": "0"}}),
            )
            .await;
        session
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        session.init = init["result"].clone();
        session
    }

    /// A session over an empty index in a temporary data directory.
    pub(crate) async fn empty() -> (tempfile::TempDir, Session) {
        let tmp = tempfile::tempdir().unwrap();
        let linkly = empty_linkly(&tmp);
        (tmp, Session::start(linkly).await)
    }

    async fn send(&mut self, message: &Value) {
        let line = serde_json::to_string(message).unwrap();
        self.write.write_all(line.as_bytes()).await.unwrap();
        self.write.write_all(b"\n").await.unwrap();
    }

    /// Sends a request; the whole JSON-RPC answer.
    pub(crate) async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let mut out = String::new();
        tokio::time::timeout(Duration::from_secs(60), self.read.read_line(&mut out))
            .await
            .expect("no answer")
            .unwrap();
        let answer: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }

    /// The `tools/list` result.
    pub(crate) async fn tools_list(&mut self) -> Value {
        self.request("tools/list", json!({})).await["result"].clone()
    }

    /// Calls a tool: its text and `isError`.
    pub(crate) async fn call(&mut self, tool: &str, arguments: Value) -> (String, bool) {
        let answer = self
            .request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await;
        let result = &answer["result"];
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text in {answer}"))
            .to_string();
        (text, result["isError"] == true)
    }
}
