//! Bad input and faults: a publish cut off halfway leaves the library as it was (SQLite, and
//! PostgreSQL when `LINKLY_TEST_POSTGRES` holds a URL), a database made before the staged
//! publish keeps its documents, and a PostgreSQL whose connections die (a restart) or that is
//! down for a while is survived: the gateway says the database cannot be reached, then
//! recovers by itself.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use linkly_gateway::model::{LibraryKey, Plan};
use linkly_gateway::server::db::{Db, DbSpec};
use linkly_gateway::{BoundGateway, GatewayOptions};
use linkly_mcp::RemoteClient;
use serde_json::{Value, json};

use crate::common::{self, Fresh, postgres, sqlite};

/// A gateway served on its own runtime until dropped.
struct Gateway {
    rt: tokio::runtime::Runtime,
    base: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

fn start(db: &Db, dir: &std::path::Path) -> Gateway {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut opts = GatewayOptions::new(db.clone(), dir.to_path_buf());
    opts.bind = IpAddr::V4(Ipv4Addr::LOCALHOST);
    opts.port = 0;
    let bound: BoundGateway = rt.block_on(linkly_gateway::bind(opts)).expect("bind");
    let base = bound.base_url();
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    rt.spawn(async move {
        let _ = bound
            .serve(async move {
                let _ = rx.await;
            })
            .await;
    });
    Gateway {
        rt,
        base,
        _stop: stop,
    }
}

/// A blocking HTTP call: (status, JSON body).
fn http(method: &str, url: &str, token: Option<&str>, body: Option<Value>) -> (u16, Value) {
    let (status, _, _, json) = common::http(method, url, token, body.map(|b| b.to_string()));
    (status, json)
}

fn doc(path: &str, text: &str) -> Value {
    json!({
        "path": path, "doc_type": "md", "hash": format!("h-{text}"), "size": text.len(),
        "modified_at": 1_700_000_000_000i64, "title": null, "text": text, "outline": [],
    })
}

/// Opens a staged publish of `docs`: its number and the paths needed.
fn open_publish(base: &str, token: &str, slug: &str, docs: &[Value]) -> (i64, Vec<String>) {
    let manifest: Vec<Value> = docs
        .iter()
        .map(|d| json!({"path": d["path"], "hash": d["hash"]}))
        .collect();
    let (s, body) = http(
        "POST",
        &format!("{base}/api/v1/libraries/{slug}/publish"),
        Some(token),
        Some(json!({ "documents": manifest })),
    );
    assert_eq!(s, 200, "{body}");
    let needed = body["needed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    (body["publish"].as_i64().unwrap(), needed)
}

fn stage(base: &str, token: &str, slug: &str, publish: i64, docs: &[&Value]) -> (u16, Value) {
    http(
        "POST",
        &format!("{base}/api/v1/libraries/{slug}/publish/{publish}/documents"),
        Some(token),
        Some(json!({ "documents": docs })),
    )
}

fn commit(base: &str, token: &str, slug: &str, publish: i64) -> (u16, Value) {
    http(
        "POST",
        &format!("{base}/api/v1/libraries/{slug}/publish/{publish}/commit"),
        Some(token),
        None,
    )
}

/// A whole publish, one batch per needed document: what the commit answered.
fn publish_all(base: &str, token: &str, slug: &str, docs: &[Value]) -> Value {
    let (id, needed) = open_publish(base, token, slug, docs);
    for d in docs
        .iter()
        .filter(|d| needed.iter().any(|p| d["path"] == **p))
    {
        let (s, body) = stage(base, token, slug, id, &[d]);
        assert_eq!(s, 200, "{body}");
    }
    let (s, body) = commit(base, token, slug, id);
    assert_eq!(s, 200, "{body}");
    body
}

/// One tool call's text; a failed call is an error.
/// An MCP client of alice's that has linked her library `guide`.
fn linked(gw: &Gateway, alice: &str) -> RemoteClient {
    let c = gw
        .rt
        .block_on(RemoteClient::connect(
            &format!("{}/mcp", gw.base),
            Some(alice),
        ))
        .expect("connect");
    call(
        gw,
        &c,
        "library_link",
        json!({"library": "cloud://alice/guide"}),
    )
    .unwrap();
    c
}

fn call(gw: &Gateway, c: &RemoteClient, tool: &str, args: Value) -> Result<String, String> {
    match gw.rt.block_on(c.call(tool, args)) {
        Ok(out) if !out.is_error => Ok(out.text),
        Ok(out) => Err(out.text),
        Err(e) => Err(e.to_string()),
    }
}

/// The library's documents as search and list show them: the paths `list` names, and whether
/// each of `words` is found.
fn seen(gw: &Gateway, c: &RemoteClient, words: &[&str]) -> (Vec<String>, Vec<bool>) {
    let text = call(
        gw,
        c,
        "list",
        json!({"scope": "library", "library": "cloud://alice/guide", "output_format": "json"}),
    )
    .unwrap();
    let mut paths: Vec<String> = ["a.md", "b.md", "c.md", "d.md"]
        .into_iter()
        .filter(|p| text.contains(p))
        .map(str::to_string)
        .collect();
    paths.sort();
    let found = words
        .iter()
        .map(|w| {
            let text = call(
                gw,
                c,
                "search",
                json!({"query": w, "library": "cloud://alice/guide", "output_format": "json"}),
            )
            .unwrap();
            let v: Value = serde_json::from_str(&text).unwrap();
            !v["results"].as_array().unwrap().is_empty()
        })
        .collect();
    (paths, found)
}

/// `fresh` opened, and a gateway on it whose one user, alice (her token returned), owns the public library
/// `guide`, still empty.
fn alice_and_her_guide(fresh: &Fresh) -> (Db, Gateway, String) {
    let db = Db::open(&fresh.spec).unwrap();
    let (_, alice) = db.add_user("alice", Plan::Pro).unwrap();
    let gw = start(&db, fresh.dir.path());
    let (s, body) = http(
        "PUT",
        &format!("{}/api/v1/libraries/guide", gw.base),
        Some(&alice),
        Some(json!({"title": "guide", "description": "", "category": "", "visibility": "public"})),
    );
    assert_eq!(s, 200, "{body}");
    (db, gw, alice)
}

fn a_cut_off_publish_changes_nothing(fresh: &Fresh) {
    let (db, gw, alice) = alice_and_her_guide(fresh);
    let base = gw.base.clone();
    let old = [
        doc("r/a.md", "alpha apples"),
        doc("r/b.md", "bravo bananas"),
        doc("r/c.md", "charlie cherries"),
    ];
    let done = publish_all(&base, &alice, "guide", &old);
    assert_eq!(
        (done["stored"].as_u64(), done["removed"].as_u64()),
        (Some(3), Some(0))
    );
    let c = linked(&gw, &alice);
    let words = ["apples", "bananas", "avocados", "dates"];
    let before = seen(&gw, &c, &words);
    assert_eq!(before.1, [true, true, false, false], "{before:?}");
    assert_eq!(before.0, ["a.md", "b.md", "c.md"]);
    let key = LibraryKey {
        owner: "alice".into(),
        slug: "guide".into(),
    };
    let lib = db.library(&key).unwrap().unwrap();
    let manifest = db.manifest(lib.id).unwrap();

    // The next version: a.md changed, b.md gone, d.md new; cut off after one batch.
    let new = [
        doc("r/a.md", "alpha avocados"),
        doc("r/c.md", "charlie cherries"),
        doc("r/d.md", "delta dates"),
    ];
    let (cut, needed) = open_publish(&base, &alice, "guide", &new);
    assert_eq!(needed, ["r/a.md", "r/d.md"]);
    let (s, body) = stage(&base, &alice, "guide", cut, &[&new[0]]);
    assert_eq!((s, &body["staged"]), (200, &json!(1)), "{body}");
    let during = db.library(&key).unwrap().unwrap();
    assert_eq!(db.manifest(lib.id).unwrap(), manifest, "nothing moved");
    assert_eq!((during.content_seq, during.doc_count), (lib.content_seq, 3));
    assert_eq!(seen(&gw, &c, &words), before);

    // A newer publish discards the cut-off one: its batches and commit are refused (409).
    let (id, needed) = open_publish(&base, &alice, "guide", &new);
    assert!(id != cut && needed.len() == 2, "{needed:?}");
    let (s, body) = stage(&base, &alice, "guide", cut, &[&new[2]]);
    assert_eq!(s, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("no longer open"),
        "{body}"
    );
    let (s, body) = commit(&base, &alice, "guide", cut);
    assert_eq!(s, 409, "{body}");
    assert_eq!(seen(&gw, &c, &words), before);

    // The whole publish lands at its commit, at once.
    for d in [&new[0], &new[2]] {
        let (s, body) = stage(&base, &alice, "guide", id, &[d]);
        assert_eq!(s, 200, "{body}");
    }
    assert_eq!(seen(&gw, &c, &words), before, "staged, not yet committed");
    let (s, done) = commit(&base, &alice, "guide", id);
    assert_eq!(s, 200, "{done}");
    assert_eq!(
        (done["stored"].as_u64(), done["removed"].as_u64()),
        (Some(2), Some(1))
    );
    let after = seen(&gw, &c, &words);
    assert_eq!(after.1, [false, false, true, true], "{after:?}");
    assert_eq!(after.0, ["a.md", "c.md", "d.md"]);
    let lib2 = db.library(&key).unwrap().unwrap();
    assert_eq!((lib2.content_seq, lib2.doc_count), (lib.content_seq + 3, 3));
    // A commit is used once.
    assert_eq!(commit(&base, &alice, "guide", id).0, 409);
    // Someone else's publish number is not theirs to use.
    let (_, bob) = db.add_user("bob", Plan::Free).unwrap();
    assert_eq!(commit(&base, &bob, "guide", id).0, 404);
}

#[test]
fn a_publish_cut_off_halfway_leaves_the_library_as_it_was_on_sqlite() {
    a_cut_off_publish_changes_nothing(&sqlite());
}

#[test]
fn a_publish_cut_off_halfway_leaves_the_library_as_it_was_on_postgres() {
    match postgres(None) {
        Some(fresh) => a_cut_off_publish_changes_nothing(&fresh),
        #[allow(clippy::print_stderr)]
        None => eprintln!("note: LINKLY_TEST_POSTGRES is unset: PostgreSQL not tested"),
    }
}

/// The tables of a gateway database from before search moved into it (documents replayed
/// into each process's own index), with one library of two documents, one of them removed.
const OLDER_DATABASE: &str = "
CREATE TABLE users (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE,
    plan TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL);
CREATE TABLE libraries (id INTEGER PRIMARY KEY AUTOINCREMENT, owner_id INTEGER NOT NULL,
    slug TEXT NOT NULL, title TEXT NOT NULL, description TEXT NOT NULL, category TEXT NOT NULL,
    visibility TEXT NOT NULL, doc_count INTEGER NOT NULL DEFAULT 0,
    stars INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    content_seq INTEGER NOT NULL DEFAULT 0, UNIQUE (owner_id, slug));
CREATE TABLE documents (id INTEGER PRIMARY KEY AUTOINCREMENT, library_id INTEGER NOT NULL,
    path TEXT NOT NULL, doc_type TEXT NOT NULL, hash TEXT NOT NULL, size INTEGER NOT NULL,
    modified_at INTEGER NOT NULL, title TEXT, body TEXT NOT NULL, outline TEXT NOT NULL,
    seq INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0, vector_model TEXT, vectors TEXT,
    UNIQUE (library_id, path));
CREATE INDEX documents_seq ON documents (library_id, seq);
CREATE TABLE publishes (id INTEGER PRIMARY KEY AUTOINCREMENT, library_id INTEGER NOT NULL,
    created_at INTEGER NOT NULL, gone TEXT NOT NULL);
CREATE TABLE staged_documents (publish_id INTEGER NOT NULL, path TEXT NOT NULL,
    doc_type TEXT NOT NULL, hash TEXT NOT NULL, size INTEGER NOT NULL,
    modified_at INTEGER NOT NULL, title TEXT, body TEXT NOT NULL, outline TEXT NOT NULL,
    vector_model TEXT, vectors TEXT, PRIMARY KEY (publish_id, path));
INSERT INTO users VALUES (1, 'alice', 'pro', 'hash-of-a-token', 1);
INSERT INTO libraries VALUES (1, 1, 'guide', 'Guide', '', 'other', 'public', 1, 0, 1, 2, 3);
INSERT INTO documents VALUES
    (1, 1, 'r/a.md', 'md', 'ha', 5, 10, 'Alpha', 'alpha apples', '[]', 1, 0, NULL, NULL),
    (2, 1, 'r/b.md', 'md', 'hb', 5, 10, NULL, '', '[]', 3, 1, NULL, NULL);
";

#[test]
fn a_database_from_before_search_moved_into_it_keeps_its_documents() {
    let fresh = sqlite();
    let DbSpec::Sqlite(path) = &fresh.spec else {
        unreachable!()
    };
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch(OLDER_DATABASE)
        .unwrap();
    let db = Db::open(&fresh.spec).unwrap();
    let key = LibraryKey {
        owner: "alice".into(),
        slug: "guide".into(),
    };
    let lib = db.library(&key).unwrap().unwrap();
    let manifest = db.manifest(lib.id).unwrap();
    assert_eq!(
        manifest.iter().map(|m| m.path.as_str()).collect::<Vec<_>>(),
        ["r/a.md"],
        "the live document moved, the removed one did not"
    );
    let state = db.library_state(&key).unwrap().unwrap();
    assert_eq!(
        (state.doc_count, state.roots.clone()),
        (1, vec!["r".to_string()])
    );
    let found = db
        .postings(&state, &linkly_index::Index::query_terms("apples"))
        .unwrap();
    assert_eq!(found.len(), 1, "searchable by its words: {found:?}");
    // Opened again: nothing more to migrate, nothing lost.
    drop(db);
    let db = Db::open(&fresh.spec).unwrap();
    assert_eq!(db.manifest(lib.id).unwrap().len(), 1);
    let publish = db.begin_publish(lib.id, &["r/a.md".into()]).unwrap();
    let done = db.commit_publish(lib.id, publish).unwrap();
    assert_eq!((done.stored, done.removed), (0, 1));
    assert!(db.manifest(lib.id).unwrap().is_empty());
}

#[test]
fn an_unreachable_postgres_says_so() {
    // Port 1 on loopback: nothing listens there.
    let e = Db::open(&DbSpec::Postgres(
        "postgres://nobody:secret@127.0.0.1:1/none".into(),
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("PostgreSQL at 127.0.0.1:1 cannot be reached"),
        "{e}"
    );
    assert!(!e.contains("secret"), "{e}");
}

/// A TCP relay in front of PostgreSQL that can drop every connection and refuse new ones (the
/// server going down), then let them through again (back up).
struct Relay {
    addr: String,
    up: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    fn start(target: String) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let up = Arc::new(AtomicBool::new(true));
        let open = Arc::new(Mutex::new(Vec::<TcpStream>::new()));
        let (u, o) = (up.clone(), open.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if !u.load(Ordering::SeqCst) {
                    continue; // Dropped at once: the connection ends before the handshake.
                }
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                let mut conns = o.lock().unwrap();
                conns.push(client.try_clone().unwrap());
                conns.push(server.try_clone().unwrap());
                drop(conns);
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 16 << 10];
                        while let Ok(n) = from.read(&mut buf) {
                            if n == 0 || to.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                        let _ = to.shutdown(Shutdown::Both);
                        let _ = from.shutdown(Shutdown::Both);
                    });
                }
            }
        });
        Relay { addr, up, open }
    }

    /// Drops every connection; new ones are refused until [`Relay::resume`].
    fn stop(&self) {
        self.up.store(false, Ordering::SeqCst);
        for c in self.open.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }

    fn resume(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

#[test]
fn searches_survive_a_postgres_restart() {
    let Ok(url) = std::env::var("LINKLY_TEST_POSTGRES") else {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("note: LINKLY_TEST_POSTGRES is unset: the PostgreSQL restart is not tested");
        }
        return;
    };
    let target = url.split_once("://").unwrap().1;
    let target = target.rsplit_once('@').map_or(target, |(_, h)| h);
    let target = target.split(['/', '?']).next().unwrap().to_string();
    let relay = Relay::start(target);
    let fresh = postgres(Some(&relay.addr)).unwrap();
    let (_db, gw, alice) = alice_and_her_guide(&fresh);
    let base = gw.base.clone();
    publish_all(
        &base,
        &alice,
        "guide",
        &[
            doc("r/a.md", "alpha apples"),
            doc("r/b.md", "bravo bananas"),
        ],
    );
    let c = linked(&gw, &alice);
    let words = ["apples", "bananas"];
    let expected = (
        vec!["a.md".to_string(), "b.md".to_string()],
        vec![true, true],
    );
    assert_eq!(seen(&gw, &c, &words), expected);

    // Every backend of the gateway's database terminated, as a restart does: the next calls
    // answer as before (the pool drops the dead connections and runs the reads again).
    let (admin_url, name) = fresh.pg.clone().unwrap();
    let mut admin = postgres::Client::connect(&admin_url, postgres::NoTls).unwrap();
    for _ in 0..3 {
        let killed = admin
            .query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 \
                 AND pid <> pg_backend_pid()",
                &[&name],
            )
            .unwrap()
            .len();
        assert!(killed > 0, "the gateway holds connections");
        assert_eq!(seen(&gw, &c, &words), expected);
    }

    // Down: the error says the database cannot be reached, then it recovers by itself.
    relay.stop();
    let (s, body) = http("GET", &format!("{base}/health"), None, None);
    assert_eq!(s, 503, "{body}");
    let e = body["error"].as_str().unwrap();
    assert!(e.contains("cannot be reached"), "{e}");
    let e = call(&gw, &c, "list_libraries", json!({})).unwrap_err();
    assert!(e.contains("cannot be reached"), "{e}");
    relay.resume();
    assert_eq!(seen(&gw, &c, &words), expected);
    let (s, body) = http("GET", &format!("{base}/health"), None, None);
    assert_eq!((s, &body["libraries"]), (200, &json!(1)), "{body}");
}
