//! The gateway server in process: publish through the HTTP API, then use the tools over MCP as
//! two users would (visibility, linking, search and read inside a linked library, refusals,
//! limits), and a second process over the same database catching up.

use std::net::{IpAddr, Ipv4Addr};

use linkly_gateway::model::Plan;
use linkly_gateway::server::db::{Db, DbSpec};
use linkly_gateway::{BoundGateway, GatewayOptions};
use linkly_mcp::RemoteClient;
use serde_json::{Value, json};

use crate::common::http;

struct Running {
    base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let _ = self.task.await;
    }
}

async fn start(opts: GatewayOptions) -> Running {
    let bound: BoundGateway = linkly_gateway::bind(opts).await.expect("bind");
    let base = bound.base_url();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        bound
            .serve(async move {
                let _ = rx.await;
            })
            .await
            .expect("serve");
    });
    Running {
        base,
        stop: Some(tx),
        task,
    }
}

/// A gateway database in `dir` (the default, SQLite) with these users: it and their tokens.
fn with_users<const N: usize>(
    dir: &std::path::Path,
    users: [(&str, Plan); N],
) -> (Db, [String; N]) {
    let db = Db::open(&DbSpec::parse(None, dir).unwrap()).unwrap();
    let tokens = users.map(|(name, plan)| db.add_user(name, plan).unwrap().1);
    (db, tokens)
}

fn options(db: &Db, dir: &std::path::Path) -> GatewayOptions {
    let mut o = GatewayOptions::new(db.clone(), dir.to_path_buf());
    o.bind = IpAddr::V4(Ipv4Addr::LOCALHOST);
    o.port = 0;
    // Small limits, so that a request over them still fits the sockets' buffers and the
    // client reads the 413 rather than a broken pipe.
    o.max_body_bytes = 64 << 10;
    o.max_api_body_bytes = 64 << 10;
    o
}

async fn http_async(
    method: &'static str,
    url: String,
    token: Option<String>,
    body: Option<String>,
) -> (u16, Option<String>, Option<String>, Value) {
    tokio::task::spawn_blocking(move || http(method, &url, token.as_deref(), body))
        .await
        .unwrap()
}

/// A POST over a raw connection (`Connection: close`): the status line's code.
async fn raw_post(base: &str, path: &str, token: &str, body: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    // The server may answer (and stop reading) before the body is all sent.
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw).await;
    let text = String::from_utf8_lossy(&raw);
    text.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status: {text:?}"))
}

/// The string at `pointer` (a JSON pointer, `""` for the item itself) in each item of the JSON
/// array `array`.
fn strings_at<'a>(array: &'a Value, pointer: &str) -> Vec<&'a str> {
    let items = array
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {array}"));
    let string = |item: &'a Value| item.pointer(pointer).and_then(Value::as_str);
    items.iter().map(|item| string(item).unwrap()).collect()
}

/// The guide's first document.
const INTRO: &str = "# Intro\n\nThe flux capacitor needs 1.21 gigawatts.";

fn doc(path: &str, text: &str) -> Value {
    json!({
        "path": path, "doc_type": "md", "hash": format!("h-{}", text.len()), "size": text.len(),
        "modified_at": 1_700_000_000_000i64, "title": null, "text": text,
        "outline": [{"title": "Intro", "level": 1, "start_line": 1, "end_line": 3, "children": []}],
    })
}

async fn publish(base: &str, token: &str, slug: &str, visibility: &str, docs: Vec<Value>) {
    let lib = format!("{base}/api/v1/libraries/{slug}");
    let (s, _, _, body) = http_async(
        "PUT",
        lib.clone(),
        Some(token.into()),
        Some(
            json!({"title": slug, "description": format!("about {slug}"), "category": "programming", "visibility": visibility})
                .to_string(),
        ),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let manifest: Vec<Value> = docs
        .iter()
        .map(|d| json!({"path": d["path"], "hash": d["hash"]}))
        .collect();
    let (s, _, _, body) = http_async(
        "POST",
        format!("{lib}/publish"),
        Some(token.into()),
        Some(json!({ "documents": manifest }).to_string()),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let id = body["publish"].as_i64().unwrap();
    // Only what the server lacks is sent.
    let needed = strings_at(&body["needed"], "");
    let docs: Vec<&Value> = docs
        .iter()
        .filter(|d| needed.contains(&d["path"].as_str().unwrap()))
        .collect();
    assert!(!docs.is_empty(), "{body}");
    let (s, _, _, body) = stage(base, token, slug, id, json!(docs)).await;
    assert_eq!(s, 200, "{body}");
    let (s, _, _, body) = http_async(
        "POST",
        format!("{lib}/publish/{id}/commit"),
        Some(token.into()),
        None,
    )
    .await;
    assert_eq!(s, 200, "{body}");
}

/// POSTs `documents` (a JSON array) to the open publish `id` of the library `slug` as
/// `token`'s user.
async fn stage(
    base: &str,
    token: &str,
    slug: &str,
    id: i64,
    documents: Value,
) -> (u16, Option<String>, Option<String>, Value) {
    let url = format!("{base}/api/v1/libraries/{slug}/publish/{id}/documents");
    let body = json!({ "documents": documents }).to_string();
    http_async("POST", url, Some(token.into()), Some(body)).await
}

/// Opens a publish of the library `slug` as `token`'s user and POSTs `documents` (a JSON
/// array) to it: the first refusal, or the batch's answer.
async fn post_documents(
    base: &str,
    token: &str,
    slug: &str,
    documents: Value,
) -> (u16, Option<String>, Option<String>, Value) {
    let url = format!("{base}/api/v1/libraries/{slug}/publish");
    let body = json!({ "documents": [] }).to_string();
    let opened = http_async("POST", url, Some(token.into()), Some(body)).await;
    if opened.0 != 200 {
        return opened;
    }
    let id = opened.3["publish"].as_i64().unwrap();
    stage(base, token, slug, id, documents).await
}

async fn call(c: &RemoteClient, tool: &str, args: Value) -> (bool, String) {
    let out = c.call(tool, args).await.expect("call");
    (out.is_error, out.text)
}

/// A POST to the MCP endpoint `url` as `token`'s user, taking JSON or an event stream.
fn mcp_post(url: &str, token: &str) -> ureq::Request {
    ureq::post(url)
        .set("Content-Type", "application/json")
        .set("Accept", "application/json, text/event-stream")
        .set("Authorization", &format!("Bearer {token}"))
}

/// Calls `tool`, expecting an answer (not an error): its text.
async fn answer(c: &RemoteClient, tool: &str, args: Value) -> String {
    let (err, text) = call(c, tool, args).await;
    assert!(!err, "{tool}: {text}");
    text
}

/// `search` for `query` inside one `library`: whether it was an error, and the text.
async fn search_in(c: &RemoteClient, query: &str, library: &str) -> (bool, String) {
    call(c, "search", json!({"query": query, "library": library})).await
}

/// [`search_in`], expecting an answer (not an error): its text.
async fn found_in(c: &RemoteClient, query: &str, library: &str) -> String {
    let (err, text) = search_in(c, query, library).await;
    assert!(!err, "{query} in {library}: {text}");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn publish_link_search_read_and_refusals() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, [alice, bob]) = with_users(tmp.path(), [("alice", Plan::Pro), ("bob", Plan::Free)]);
    let gw = start(options(&db, &tmp.path().join("a"))).await;
    let base = gw.base.clone();

    // Health needs no token.
    let (s, _, _, health) = http_async("GET", format!("{base}/health"), None, None).await;
    assert_eq!(s, 200);
    assert_eq!(health["role"], "gateway");
    assert_eq!(health["libraries"], 0);

    // Alice's public guide, published again and again.
    let publish_guide = async |docs: Vec<Value>| {
        publish(&base, &alice, "guide", "public", docs).await;
    };
    publish_guide(vec![doc("docs/intro.md", INTRO)]).await;
    publish(
        &base,
        &alice,
        "secret",
        "private",
        vec![doc(
            "notes/plan.md",
            "# Plan\n\nThe hidden treasure lies north.",
        )],
    )
    .await;

    // Bad input is refused with a message.
    let (s, _, _, body) =
        post_documents(&base, &alice, "guide", json!([doc("../etc/passwd", "x")])).await;
    assert_eq!(s, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains(".."), "{body}");
    let mut bad_type = doc("a.md", "x");
    bad_type["doc_type"] = json!("exe");
    let (s, _, _, _) = post_documents(&base, &alice, "guide", json!([bad_type])).await;
    assert_eq!(s, 400);
    let (s, _, _, _) = http_async(
        "PUT",
        format!("{base}/api/v1/libraries/Bad%20Slug"),
        Some(alice.clone()),
        Some("{}".into()),
    )
    .await;
    assert_eq!(s, 400);
    // Someone else's library cannot be written to: it is not theirs (404 for bob's own slug).
    let (s, _, _, _) = post_documents(&base, &bob, "guide", json!([doc("x.md", "x")])).await;
    assert_eq!(s, 404);

    // No or a wrong token: 401 with WWW-Authenticate.
    let (s, www, _, _) = http_async(
        "PUT",
        format!("{base}/api/v1/libraries/guide"),
        None,
        Some("{}".into()),
    )
    .await;
    assert_eq!((s, www.as_deref()), (401, Some("Bearer")));
    let (s, www, _, _) = http_async(
        "POST",
        format!("{base}/mcp"),
        Some("lk_wrong".into()),
        Some("{}".into()),
    )
    .await;
    assert_eq!((s, www.as_deref()), (401, Some("Bearer")));
    assert!(
        RemoteClient::connect(&format!("{base}/mcp"), Some("lk_wrong"))
            .await
            .is_err()
    );

    // Too large: 413.
    let big = "x".repeat(200 << 10);
    let body = json!({"documents": [doc("big.md", &big)]}).to_string();
    let path = "/api/v1/libraries/guide/publish/1/documents";
    assert_eq!(raw_post(&base, path, &alice, &body).await, 413);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": big}});
    assert_eq!(
        raw_post(&base, "/mcp", &alice, &body.to_string()).await,
        413
    );

    // Bob: eleven tools; nothing linked yet.
    let b = RemoteClient::connect(&format!("{base}/mcp"), Some(&bob))
        .await
        .expect("bob connects");
    let mut names = b.tool_names().await.unwrap();
    names.sort();
    assert_eq!(names.len(), 11, "{names:?}");
    assert!(names.contains(&"library_search".to_string()));
    assert!(names.contains(&"library_link".to_string()));
    for t in b.tools().await.unwrap() {
        if !t.name.starts_with("library_") {
            let text = serde_json::to_string(&t).unwrap();
            assert!(!text.contains("local://"), "{text}");
        }
    }
    let text = answer(&b, "list_libraries", json!({})).await;
    assert!(text.contains("No library is linked"), "{text}");

    // Unlinked, private and missing libraries all answer the same.
    let mut refusals = Vec::new();
    for lib in [
        "cloud://alice/guide",
        "cloud://alice/secret",
        "cloud://alice/nope",
    ] {
        let (err, text) = search_in(&b, "flux", lib).await;
        assert!(err, "{text}");
        assert!(text.contains("LIBRARY_NOT_FOUND"), "{text}");
        assert!(text.contains("library_link"), "{text}");
        refusals.push(text.replace(lib, "<lib>"));
    }
    assert!(refusals.windows(2).all(|w| w[0] == w[1]), "{refusals:?}");
    let (err, text) = call(&b, "read", json!({"doc_id": "cloud://alice/secret/1"})).await;
    assert!(err && text.contains("LIBRARY_NOT_FOUND"), "{text}");

    // local:// ids and libraries are refused.
    let (err, text) = call(&b, "read", json!({"doc_id": "local://3"})).await;
    assert!(
        err && text.contains("INVALID_ARGUMENT") && text.contains("cloud://"),
        "{text}"
    );
    let (err, text) = search_in(&b, "flux", "local://1").await;
    assert!(err && text.contains("INVALID_ARGUMENT"), "{text}");

    // The catalogue shows the public library, not the private one.
    let text = answer(&b, "library_search", json!({})).await;
    assert!(text.contains("cloud://alice/guide"), "{text}");
    assert!(!text.contains("cloud://alice/secret"), "{text}");

    // Link, then search, outline and read inside.
    answer(
        &b,
        "library_link",
        json!({"library": "cloud://alice/guide"}),
    )
    .await;
    let text = answer(&b, "list_libraries", json!({})).await;
    assert!(text.contains("cloud://alice/guide"), "{text}");
    let text = answer(
        &b,
        "search",
        json!({"query": "flux capacitor", "library": "cloud://alice/guide", "output_format": "json"}),
    ).await;
    let found: Value = serde_json::from_str(&text).unwrap();
    let hit = &found["results"][0];
    let id = hit["doc_id"].as_str().unwrap().to_string();
    assert!(id.starts_with("cloud://alice/guide/"), "{id}");
    assert_eq!(hit["path"], "/docs/intro.md");
    // Without library: every linked library.
    let text = answer(&b, "search", json!({"query": "gigawatts"})).await;
    assert!(text.contains(&id), "{text}");
    let text = answer(&b, "read", json!({"doc_id": id})).await;
    assert!(text.contains("1.21 gigawatts"), "{text}");
    let text = answer(&b, "grep", json!({"doc_id": id, "pattern": "capacitor"})).await;
    assert!(text.contains("capacitor"), "{text}");
    let text = answer(&b, "outline", json!({"doc_ids": [id]})).await;
    assert!(text.contains("Intro"), "{text}");
    let text = answer(
        &b,
        "list",
        json!({"scope": "library", "library": "cloud://alice/guide"}),
    )
    .await;
    assert!(text.contains("intro.md"), "{text}");
    // The private library stays out of reach.
    let (err, text) = search_in(&b, "treasure", "cloud://alice/secret").await;
    assert!(err && text.contains("LIBRARY_NOT_FOUND"), "{text}");

    // Notes are per user.
    answer(
        &b,
        "note_save",
        json!({"mode": "create", "content": "Bob idea: remember the zeppelin."}),
    )
    .await;
    let text = answer(&b, "search", json!({"query": "zeppelin", "scope": "notes"})).await;
    assert!(text.contains("zeppelin"), "{text}");
    // The note's source is the MCP client's own name, from its `initialize`.
    let text = answer(
        &b,
        "list",
        json!({"scope": "notes", "output_format": "json"}),
    )
    .await;
    let notes: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        notes["items"][0]["source"],
        json!(linkly_mcp::CLIENT_NAME),
        "{text}"
    );
    // Notes have no cloud counterpart: a notes search aimed at a cloud library is refused.
    let (err, text) = call(
        &b,
        "search",
        json!({"query": "zeppelin", "scope": "notes", "library": "cloud://alice/guide"}),
    )
    .await;
    assert!(
        err && text.contains("INVALID_ARGUMENT") && text.contains("no cloud counterpart"),
        "{text}"
    );
    let a = RemoteClient::connect(&format!("{base}/mcp"), Some(&alice))
        .await
        .expect("alice connects");
    let (_, text) = call(&a, "search", json!({"query": "zeppelin", "scope": "notes"})).await;
    assert!(!text.contains("Bob idea"), "{text}");

    // A second process over the same database sees a later publish.
    let gw2 = start(options(&db, &tmp.path().join("b"))).await;
    let b2 = RemoteClient::connect(&format!("{}/mcp", gw2.base), Some(&bob))
        .await
        .unwrap();
    let text = answer(&b2, "read", json!({"doc_id": id})).await;
    assert!(text.contains("gigawatts"), "{text}");
    publish_guide(vec![
        doc("docs/intro.md", INTRO),
        doc("docs/delorean.md", "# Car\n\nA stainless steel delorean."),
    ])
    .await;
    let text = found_in(&b2, "delorean", "cloud://alice/guide").await;
    assert!(text.contains("stainless"), "{text}");
    let text = answer(
        &b2,
        "list",
        json!({"scope": "folder", "library": "cloud://alice/guide", "path": "docs", "output_format": "json"}),
    ).await;
    assert!(
        text.contains("delorean.md") && text.contains("intro.md"),
        "{text}"
    );
    answer(&b2, "explore", json!({"library": "cloud://alice/guide"})).await;

    // A document left out of the manifest is removed everywhere.
    publish_guide(vec![doc(
        "docs/delorean.md",
        "# Car\n\nA stainless steel delorean, rebuilt.",
    )])
    .await;
    let (err, text) = call(&b2, "read", json!({"doc_id": id})).await;
    assert!(err && text.contains("DOC_NOT_FOUND"), "{text}");
    let text = answer(&b, "search", json!({"query": "rebuilt"})).await;
    assert!(text.contains("rebuilt"), "{text}");

    // Alice (pro) links both of hers: search without library covers both.
    for lib in ["cloud://alice/guide", "cloud://alice/secret"] {
        answer(&a, "library_link", json!({ "library": lib })).await;
    }
    let text = answer(
        &a,
        "search",
        json!({"query": "delorean treasure", "output_format": "json"}),
    )
    .await;
    let merged: Value = serde_json::from_str(&text).unwrap();
    let ids = strings_at(&merged["results"], "/doc_id");
    for lib in ["cloud://alice/guide/", "cloud://alice/secret/"] {
        assert!(ids.iter().any(|i| i.starts_with(lib)), "{lib}: {ids:?}");
    }

    // Unpublished: gone for everyone, with the same answer as any unknown library.
    let (s, _, _, body) = http_async(
        "DELETE",
        format!("{base}/api/v1/libraries/guide"),
        Some(alice.clone()),
        None,
    )
    .await;
    assert_eq!((s, &body["deleted"]), (200, &json!(true)), "{body}");
    let (err, text) = search_in(&b2, "delorean", "cloud://alice/guide").await;
    assert!(err && text.contains("LIBRARY_NOT_FOUND"), "{text}");
    let (s, _, _, health) = http_async("GET", format!("{base}/health"), None, None).await;
    assert_eq!((s, &health["libraries"]), (200, &json!(1)), "{health}");

    // Published again under the same address: the other process rebuilds its index.
    publish_guide(vec![doc("v2/zebra.md", "# Zebra\n\nStripes everywhere.")]).await;
    answer(
        &b2,
        "library_link",
        json!({"library": "cloud://alice/guide"}),
    )
    .await;
    let text = found_in(&b2, "stripes", "cloud://alice/guide").await;
    assert!(text.contains("zebra.md"), "{text}");
    let (_, text) = search_in(&b2, "delorean", "cloud://alice/guide").await;
    assert!(!text.contains("delorean.md"), "{text}");

    b.close().await;
    a.close().await;
    b2.close().await;
    gw2.stop().await;
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_answers_429_with_retry_after() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, [alice]) = with_users(tmp.path(), [("alice", Plan::Free)]);
    let mut opts = options(&db, tmp.path());
    opts.rate = 3;
    let gw = start(opts).await;
    let url = format!("{}/api/v1/libraries/nope/publish", gw.base);
    let mut statuses = Vec::new();
    let mut retry = None;
    for _ in 0..5 {
        let (s, _, r, _) = http_async(
            "POST",
            url.clone(),
            Some(alice.clone()),
            Some(json!({"documents": []}).to_string()),
        )
        .await;
        statuses.push(s);
        retry = retry.or(r);
    }
    assert_eq!(&statuses[..3], &[404, 404, 404], "{statuses:?}");
    assert_eq!(statuses[3], 429, "{statuses:?}");
    assert!(retry.unwrap().parse::<u64>().unwrap() >= 1);
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_stays_with_its_user() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, [alice, bob]) = with_users(tmp.path(), [("alice", Plan::Free), ("bob", Plan::Free)]);
    let gw = start(options(&db, tmp.path())).await;
    let url = format!("{}/mcp", gw.base);
    // Alice opens a session by hand.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (u, a) = (url.clone(), alice.clone());
    let session = tokio::task::spawn_blocking(move || {
        let r = mcp_post(&u, &a)
            .send_string(&init.to_string())
            .expect("initialize");
        let id = r.header("mcp-session-id").expect("session id").to_string();
        let _ = r.into_string();
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let _ = mcp_post(&u, &a)
            .set("mcp-session-id", &id)
            .send_string(&note.to_string());
        id
    })
    .await
    .unwrap();
    // Bob's token on Alice's session is refused.
    let (u, b, s) = (url.clone(), bob.clone(), session.clone());
    let text = tokio::task::spawn_blocking(move || {
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_libraries", "arguments": {}}});
        match mcp_post(&u, &b)
            .set("mcp-session-id", &s)
            .send_string(&call.to_string())
        {
            Ok(r) => r.into_string().unwrap_or_default(),
            Err(ureq::Error::Status(_, r)) => r.into_string().unwrap_or_default(),
            Err(e) => e.to_string(),
        }
    })
    .await
    .unwrap();
    assert!(text.contains("another user"), "{text}");
    // Nor can it close it.
    let (u, b, s) = (url.clone(), bob.clone(), session.clone());
    let status = tokio::task::spawn_blocking(move || {
        match ureq::delete(&u)
            .set("Authorization", &format!("Bearer {b}"))
            .set("mcp-session-id", &s)
            .call()
        {
            Ok(r) => r.status(),
            Err(ureq::Error::Status(c, _)) => c,
            Err(e) => panic!("{e}"),
        }
    })
    .await
    .unwrap();
    assert_eq!(status, 403);
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_first_search_after_a_publish_reads_the_database_with_no_index_built() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(&DbSpec::Sqlite(tmp.path().join("gw.sqlite"))).unwrap();
    let (_, token) = db.add_user("pia", Plan::Free).unwrap();
    let dir = tmp.path().join("gw");
    let server = start(options(&db, &dir)).await;
    let docs: Vec<Value> = (0..40)
        .map(|i| doc(&format!("r/n{i}.md"), &format!("note {i} about quokkas\n")))
        .collect();
    publish(&server.base, &token, "quokkas", "public", docs).await;
    let c = RemoteClient::connect(&format!("{}/mcp", server.base), Some(&token))
        .await
        .unwrap();
    answer(
        &c,
        "library_link",
        json!({"library": "cloud://pia/quokkas"}),
    )
    .await;
    // At once, whole: no index to catch up with the publish.
    let text = answer(
        &c,
        "search",
        json!({"query": "quokkas", "library": "cloud://pia/quokkas", "limit": 50, "output_format": "json"}),
    )
    .await;
    let found: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(found["total"], 40, "{text}");
    assert_eq!(found["results"].as_array().unwrap().len(), 40, "{text}");
    assert!(!text.contains("still being indexed"), "{text}");
    // Nothing of the library was written under the gateway's data directory.
    assert!(!dir.join("cache").exists());
    c.close().await;
    server.stop().await;
}

/// An MCP initialize POSTed as `token`'s user: the status, the session it opened, the
/// `Retry-After` header and the answer's text.
async fn initialize(url: &str, token: &str) -> (u16, Option<String>, Option<String>, String) {
    let (url, token) = (url.to_string(), token.to_string());
    tokio::task::spawn_blocking(move || {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let r = match mcp_post(&url, &token).send_string(&init.to_string()) {
            Ok(r) | Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("initialize: {e}"),
        };
        let status = r.status();
        let session = r.header("mcp-session-id").map(str::to_string);
        let retry = r.header("Retry-After").map(str::to_string);
        (status, session, retry, r.into_string().unwrap_or_default())
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_past_their_session_limit_gets_429_while_another_opens_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, [alice, bob]) = with_users(tmp.path(), [("alice", Plan::Free), ("bob", Plan::Free)]);
    let mut opts = options(&db, tmp.path());
    opts.max_sessions_per_user = 2;
    let gw = start(opts).await;
    let url = format!("{}/mcp", gw.base);
    let (s, first, _, text) = initialize(&url, &alice).await;
    assert_eq!(s, 200, "{text}");
    let (s, _, _, text) = initialize(&url, &alice).await;
    assert_eq!(s, 200, "{text}");
    // The third is refused, saying the limit, how many are open and what to do.
    let (s, session, retry, text) = initialize(&url, &alice).await;
    assert_eq!(s, 429, "{text}");
    assert!(session.is_none(), "no session was opened");
    assert!(text.contains("2 open, at most 2 per user"), "{text}");
    assert!(text.contains("close an unused session"), "{text}");
    assert!(text.contains("wait 10 minute"), "{text}");
    assert!(
        text.contains("\"id\":1"),
        "a JSON-RPC error answering it: {text}"
    );
    assert!(retry.unwrap().parse::<u64>().unwrap() > 500);
    // Bob is not affected.
    let (s, _, _, text) = initialize(&url, &bob).await;
    assert_eq!(s, 200, "{text}");
    // Alice closes one, and may open another.
    let (u, a, id) = (url.clone(), alice.clone(), first.unwrap());
    let closed = tokio::task::spawn_blocking(move || {
        ureq::delete(&u)
            .set("Authorization", &format!("Bearer {a}"))
            .set("mcp-session-id", &id)
            .call()
            .map_or_else(|e| e.to_string(), |r| r.status().to_string())
    })
    .await
    .unwrap();
    assert_eq!(closed, "200");
    let (s, _, _, text) = initialize(&url, &alice).await;
    assert_eq!(s, 200, "{text}");
    gw.stop().await;
}

/// A fresh SQLite database, and a PostgreSQL one when `LINKLY_TEST_POSTGRES` names a server.
#[allow(clippy::print_stderr)]
fn every_backend() -> Vec<crate::common::Fresh> {
    let mut all = vec![crate::common::sqlite()];
    match crate::common::postgres(None) {
        Some(pg) => all.push(pg),
        None => eprintln!("note: LINKLY_TEST_POSTGRES is unset: PostgreSQL not tested"),
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_publish_past_the_daily_quota_is_refused_and_nothing_of_it_is_stored() {
    // The PostgreSQL client blocks: its databases are made and dropped off the async threads.
    let backends = tokio::task::spawn_blocking(every_backend).await.unwrap();
    for fresh in backends {
        let spec = fresh.spec.clone();
        let (db, alice, bob) = tokio::task::spawn_blocking(move || {
            let db = Db::open(&spec).unwrap();
            let (alice, a) = db.add_user("alice", Plan::Free).unwrap();
            let (_, b) = db.add_user("bob", Plan::Free).unwrap();
            (db, (alice.id, a), b)
        })
        .await
        .unwrap();
        let (alice_id, alice) = alice;
        let mut opts = options(&db, fresh.dir.path());
        opts.max_publish_bytes_per_day = 4096;
        let gw = start(opts).await;
        let base = gw.base.clone();
        publish(
            &base,
            &alice,
            "small",
            "public",
            vec![doc("r/otters.md", "otters swim")],
        )
        .await;
        // A document of some 4,000 bytes fits a day, but not what is left of her 4 KiB.
        let lib = format!("{base}/api/v1/libraries/big");
        let meta =
            json!({"title": "big", "description": "", "category": "", "visibility": "public"});
        let meta = meta.to_string();
        let (s, _, _, body) = http_async("PUT", lib.clone(), Some(alice.clone()), Some(meta)).await;
        assert_eq!(s, 200, "{body}");
        let big = doc("r/narwhals.md", &"narwhals ".repeat(440));
        let (s, _, _, body) = post_documents(&base, &alice, "big", json!([big.clone()])).await;
        assert_eq!(s, 429, "{body}");
        let said = body["error"].as_str().unwrap_or_default();
        assert!(said.contains("daily publish quota reached"), "{said}");
        assert!(said.contains("4.0 KiB per day"), "{said}");
        assert!(said.contains("93 B of this user's"), "{said}");
        assert!(said.contains("resets at 00:00 UTC"), "{said}");
        assert!(
            said.contains("nothing of this publish was stored"),
            "{said}"
        );
        // Nothing of it is stored, and its publish is closed.
        let spec = fresh.spec.clone();
        let stored = tokio::task::spawn_blocking(move || {
            let sql = "SELECT COUNT(*) FROM documents WHERE path = 'r/narwhals.md'";
            (
                crate::common::count(&spec, sql),
                crate::common::count(&spec, "SELECT COUNT(*) FROM publishes"),
            )
        })
        .await
        .unwrap();
        assert_eq!(stored, (0, 0));
        let d = db.clone();
        let used = tokio::task::spawn_blocking(move || d.published_today(alice_id).unwrap())
            .await
            .unwrap();
        assert_eq!(used, 93, "only the small publish counts");
        // Bob publishes the same document: his day is his own.
        publish(&base, &bob, "big", "public", vec![big]).await;
        gw.stop().await;
        tokio::task::spawn_blocking(move || drop((fresh, db)))
            .await
            .unwrap();
    }
}
