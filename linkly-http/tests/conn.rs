//! The accept loop against slow and silent clients: the connection cap evicts the oldest idle
//! connection, and a client that does not finish its headers is closed.

use crate::common::{LIMIT, request, send, start};

use std::time::Duration;

use linkly_http::HttpOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_connections_cannot_lock_out_health() {
    let server = start(HttpOptions {
        max_connections: 50,
        header_read_timeout: Duration::from_secs(60),
        ..HttpOptions::default()
    })
    .await;
    let mut slow = Vec::new();
    for _ in 0..300 {
        let mut s = TcpStream::connect(server.addr).await.unwrap();
        s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            .await
            .unwrap();
        slow.push(s);
    }
    let health = request("GET", "/health", &server.addr.to_string(), &[], b"");
    let reply = send(server.addr, &health).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let health: serde_json::Value = serde_json::from_str(&reply.body).unwrap();
    assert!(health["version"].is_string());
    // The oldest slow ones were closed to make room: at most the cap stay open. Closing is
    // asynchronous (each evicted connection's task closes its socket), so poll until enough
    // are seen closed, or the deadline passes on a machine too loaded to tell.
    let mut open: Vec<bool> = vec![true; slow.len()];
    let mut closed = 0;
    let deadline = tokio::time::Instant::now() + LIMIT;
    while closed < 250 && tokio::time::Instant::now() < deadline {
        for (s, still_open) in slow.iter_mut().zip(open.iter_mut()) {
            if !*still_open {
                continue;
            }
            let mut byte = [0u8; 1];
            // End of stream or a reset: the server closed it.
            match tokio::time::timeout(Duration::from_millis(5), s.read(&mut byte)).await {
                Ok(Ok(0)) | Ok(Err(_)) => {
                    *still_open = false;
                    closed += 1;
                }
                _ => {}
            }
        }
    }
    assert!(
        closed >= 250,
        "only {closed} of 300 slow connections closed within {LIMIT:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_does_not_finish_its_headers_is_closed() {
    let server = start(HttpOptions {
        header_read_timeout: Duration::from_millis(500),
        ..HttpOptions::default()
    })
    .await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(LIMIT, s.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the connection stayed open");
    // An idle keep-alive connection is closed too.
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let read = tokio::time::timeout(LIMIT, s.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the idle keep-alive connection stayed open");
    assert!(String::from_utf8_lossy(&rest).contains("200 OK"));
}
