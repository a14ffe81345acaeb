//! The gate against callers who have not signed in: 200 slow clients on `/signin` (the body
//! trickled, a 32 MiB `Content-Length`) do not keep the person's searches from answering, a
//! large body before sign-in is refused, and a wrong or missing secret gets nothing.

use crate::common::{LIMIT, request, send};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::{get, post};
use linkly_http::{Class, HttpOptions, IndexStatus, Routes, ServerState};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const SECRET: &str = "the-local-secret";

/// A server of a public `/signin` (which reads its form) and a `/search` for the person.
async fn start() -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let bound = linkly_http::bind(HttpOptions {
        port: 0,
        port_attempts: 1,
        local_secret: Some(SECRET.into()),
        ..HttpOptions::default()
    })
    .await
    .unwrap();
    let addr = SocketAddr::new(bound.bind(), bound.port());
    let gate = bound.gate(None, Arc::new(Vec::new));
    let routes = Routes::new()
        .route(
            "/signin",
            Class::Public,
            post(|body: String| async move { format!("read {} bytes", body.len()) }),
        )
        .route(
            "/search",
            Class::Read,
            get(|| async { "the budget for 2024" }),
        );
    let app = gate.wrap(routes);
    let state = ServerState::new(IndexStatus::Idle);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(linkly_http::serve(bound, app, state, async move {
        let _ = stopped.await;
    }));
    (addr, stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::print_stderr)] // the figure, for the log
async fn slow_clients_on_signin_do_not_stop_the_persons_searches() {
    let (addr, _stop) = start().await;
    let host = addr.to_string();
    // 200 clients (more than the 128 connections the server keeps) send a sign-in whose body
    // never finishes.
    let mut slow = Vec::new();
    for _ in 0..200 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "POST /signin HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 33554431\r\n\r\ntoken="
        );
        s.write_all(head.as_bytes()).await.unwrap();
        slow.push(s);
    }
    // Keep trickling while the person searches.
    let trickle = tokio::spawn(async move {
        for _ in 0..20 {
            for s in &mut slow {
                let _ = s.write_all(b"a").await;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        slow
    });
    let search = request(
        "GET",
        "/search?q=budget",
        &host,
        &[&format!("Authorization: Bearer {SECRET}")],
        b"",
    );
    let mut slowest = Duration::ZERO;
    for _ in 0..20 {
        let started = Instant::now();
        let reply = tokio::time::timeout(Duration::from_secs(1), send(addr, &search))
            .await
            .expect("a search took more than a second");
        slowest = slowest.max(started.elapsed());
        assert_eq!(reply.status, 200, "{reply:?}");
        assert!(reply.body.contains("budget"));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("the slowest of 20 searches beside 200 slow sign-ins: {slowest:?}");
    drop(trickle.await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_sign_in_a_body_is_small_and_quick() {
    let (addr, _stop) = start().await;
    let host = addr.to_string();
    let big = vec![b'a'; 5 * 1024];
    let reply = send(addr, &request("POST", "/signin", &host, &[], &big)).await;
    assert_eq!(reply.status, 413, "{reply:?}");
    let small = send(addr, &request("POST", "/signin", &host, &[], b"token=x")).await;
    assert_eq!(small.status, 200, "{small:?}");
    // A body that stops coming: 408 after the read timeout, not a connection held forever.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(
        format!("POST /signin HTTP/1.1\r\nHost: {host}\r\nContent-Length: 100\r\n\r\ntoken=")
            .as_bytes(),
    )
    .await
    .unwrap();
    let started = Instant::now();
    let mut raw = Vec::new();
    tokio::time::timeout(
        LIMIT,
        tokio::io::AsyncReadExt::read_to_end(&mut s, &mut raw),
    )
    .await
    .expect("the slow body's connection stayed open")
    .unwrap();
    assert!(String::from_utf8_lossy(&raw).starts_with("HTTP/1.1 408"));
    assert!(started.elapsed() < linkly_http::ANONYMOUS_READ_TIMEOUT + Duration::from_secs(3));
    // A signed-in caller may send more.
    let reply = send(
        addr,
        &request(
            "POST",
            "/signin",
            &host,
            &[&format!("Authorization: Bearer {SECRET}")],
            &big,
        ),
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_secret_the_search_is_refused() {
    let (addr, _stop) = start().await;
    let host = addr.to_string();
    for headers in [vec![], vec!["Authorization: Bearer wrong".to_string()]] {
        let h: Vec<&str> = headers.iter().map(String::as_str).collect();
        let reply = send(addr, &request("GET", "/search?q=budget", &host, &h, b"")).await;
        assert!(reply.status == 401 || reply.status == 303, "{reply:?}");
        assert!(!reply.body.contains("budget"), "{reply:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gates_own_answers_carry_a_strict_policy() {
    let (addr, _stop) = start().await;
    let host = addr.to_string();
    let redirect = send(addr, &request("GET", "/search?q=x", &host, &[], b"")).await;
    let unauthorized = send(
        addr,
        &request(
            "GET",
            "/search?q=x",
            &host,
            &["Authorization: Bearer wrong"],
            b"",
        ),
    )
    .await;
    let wrong_host = send(addr, &request("GET", "/search", "evil.example", &[], b"")).await;
    let admitted = send(
        addr,
        &request(
            "GET",
            "/search",
            &host,
            &[&format!("Authorization: Bearer {SECRET}")],
            b"",
        ),
    )
    .await;
    for (what, reply, status) in [
        ("the sign-in redirect", &redirect, 303),
        ("a wrong secret", &unauthorized, 401),
        ("a foreign Host", &wrong_host, 403),
        ("an answer whose route set no policy", &admitted, 200),
    ] {
        assert_eq!(reply.status, status, "{what}: {reply:?}");
        let head = reply.head.to_ascii_lowercase();
        assert!(
            head.contains(&format!(
                "content-security-policy: {}",
                linkly_http::BASELINE_CSP
            )),
            "{what}: {}",
            reply.head
        );
        assert!(head.contains("x-content-type-options: nosniff"), "{what}");
    }
}
