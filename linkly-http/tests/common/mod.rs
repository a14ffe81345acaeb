//! What the host's tests share: a server of the host's own routes over an empty index, and a
//! raw HTTP/1.1 client (one request per connection) that sees exactly what the server sends.
// Each test file uses part of it.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use linkly_core::{Config, DataDir};
use linkly_http::{HttpOptions, IndexStatus, ServerState};
use linkly_index::Index;
use linkly_tools::Linkly;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a test waits for an answer.
pub(crate) const LIMIT: Duration = Duration::from_secs(60);

/// A server of `/health` and `/control/stop` over an empty index; stops when dropped.
pub(crate) struct Server {
    /// Where it listens.
    pub(crate) addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    _tmp: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Binds `opts` on a port the system chooses and serves the host's routes behind its guard.
pub(crate) async fn start(opts: HttpOptions) -> Server {
    let tmp = tempfile::tempdir().unwrap();
    let data = DataDir::new(tmp.path().join("data"));
    let index = Index::open(&data.index_dir()).unwrap();
    let linkly = Arc::new(Linkly::new(Arc::new(index), data, Config::default()));
    let bound = linkly_http::bind(HttpOptions {
        port: 0,
        port_attempts: 1,
        ..opts
    })
    .await
    .unwrap();
    let addr = SocketAddr::new(bound.bind(), bound.port());
    let state = ServerState::new(IndexStatus::Idle);
    let gate = bound.gate(None, Arc::new(Vec::new));
    let app = gate.wrap(bound.host_routes(linkly, state.clone()));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(linkly_http::serve(bound, app, state, async move {
        let _ = stopped.await;
    }));
    Server {
        addr,
        stop: Some(stop),
        _tmp: tmp,
    }
}

/// A reply: its status, head and body.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) head: String,
    pub(crate) body: String,
}

/// A request's bytes (`Connection: close`, a `Content-Length`).
pub(crate) fn request(
    method: &str,
    path: &str,
    host: &str,
    headers: &[&str],
    body: &[u8],
) -> Vec<u8> {
    let mut r = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for h in headers {
        r.push_str(h);
        r.push_str("\r\n");
    }
    r.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut r = r.into_bytes();
    r.extend_from_slice(body);
    r
}

/// Sends one raw request and reads the whole reply (a server's bodies here are not chunked).
pub(crate) async fn send(addr: SocketAddr, request: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(LIMIT, stream.read_to_end(&mut raw))
        .await
        .expect("the server did not answer")
        .unwrap();
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").expect("no header end");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("no status");
    Reply {
        status,
        head: head.to_string(),
        body: body.to_string(),
    }
}
