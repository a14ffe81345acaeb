//! What the MCP tests share: a server over an empty index, on an in-memory stdio pipe or on
//! loopback HTTP, and a stdio session with it as a client sees it.
// Each test binary uses part of it.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use linkly_core::{Config, DataDir};
use linkly_http::{HttpOptions, IndexStatus, ServerState};
use linkly_index::Index;
use linkly_mcp::{McpOptions, OpenSessions};
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

/// An HTTP server of `/mcp` and `/health` (as `linkly serve` composes them, without the window)
/// on a port the system chooses; it stops when dropped.
pub(crate) struct HttpServer {
    /// The address it listens on.
    pub(crate) addr: std::net::SocketAddr,
    /// Its MCP endpoint.
    pub(crate) endpoint: String,
    /// Its MCP sessions.
    pub(crate) sessions: OpenSessions,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Binds `opts` (any free port) and serves `/mcp` and `/health` over these tools.
pub(crate) async fn serve_http(
    opts: HttpOptions,
    mcp: McpOptions,
    linkly: Arc<Linkly>,
) -> HttpServer {
    let bound = linkly_http::bind(HttpOptions {
        port: 0,
        port_attempts: 1,
        ..opts
    })
    .await
    .unwrap();
    let addr = std::net::SocketAddr::new(bound.bind(), bound.port());
    let endpoint = bound.endpoint();
    let state = ServerState::new(IndexStatus::Idle);
    let routes = linkly_mcp::router(linkly.clone(), bound.bind(), &mcp);
    let sessions = routes.sessions();
    let close = routes.closer();
    // This harness tests the transport: a LAN visitor may read (something is shared).
    let gate = bound.gate(None, std::sync::Arc::new(|| vec!["shared".to_string()]));
    let app = gate.wrap(bound.host_routes(linkly, state.clone()).mount(
        &["/mcp", "/mcp/{*rest}"],
        linkly_http::Class::Read,
        routes.router,
    ));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(linkly_http::serve(bound, app, state, async move {
        let _ = stopped.await;
        close();
    }));
    HttpServer {
        addr,
        endpoint,
        sessions,
        stop: Some(stop),
    }
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
