//! What the MCP tests share: a stdio session with an in-memory server, as a client sees it.
// Each test binary uses part of it.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use linkly_core::{Config, DataDir};
use linkly_index::Index;
use linkly_mcp::{LinklyServer, StdioTransport};
use linkly_tools::Linkly;
use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, ReadHalf, WriteHalf};

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
        let (client, server) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server);
        tokio::spawn(async move {
            let service = LinklyServer::new(linkly)
                .serve(StdioTransport::new(server_read, server_write))
                .await
                .unwrap();
            let _ = service.waiting().await;
        });
        let (read, write) = tokio::io::split(client);
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
        let data = DataDir::new(tmp.path().join("data"));
        let index = Index::open(&data.index_dir()).unwrap();
        let linkly = Arc::new(Linkly::new(Arc::new(index), data, Config::default()));
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
