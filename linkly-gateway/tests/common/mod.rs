//! What the gateway's tests share: a fresh, empty database on SQLite or PostgreSQL, and a
//! blocking HTTP call that keeps the headers the tests check.
// Each test file uses part of it.
#![allow(dead_code)]

use linkly_gateway::server::db::DbSpec;
use serde_json::Value;

/// A fresh, empty database: a SQLite file in a temporary directory, or a new PostgreSQL
/// database dropped afterwards. `dir` is a temporary directory either way (the gateway's
/// data directory in the server tests).
pub(crate) struct Fresh {
    pub(crate) spec: DbSpec,
    pub(crate) dir: tempfile::TempDir,
    /// The admin URL and the database's name, for PostgreSQL.
    pub(crate) pg: Option<(String, String)>,
}

impl Drop for Fresh {
    fn drop(&mut self) {
        if let Some((admin_url, name)) = &self.pg
            && let Ok(mut c) = postgres::Client::connect(admin_url, postgres::NoTls)
        {
            let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
        }
    }
}

/// A new SQLite database in a temporary directory.
pub(crate) fn sqlite() -> Fresh {
    let dir = tempfile::tempdir().unwrap();
    Fresh {
        spec: DbSpec::Sqlite(dir.path().join("gateway.sqlite")),
        dir,
        pg: None,
    }
}

/// A new PostgreSQL database on the server `LINKLY_TEST_POSTGRES` names (`None` without it:
/// the caller says what goes untested); `via` replaces the server's `host:port` in the
/// gateway's URL (a relay in front of it).
pub(crate) fn postgres(via: Option<&str>) -> Option<Fresh> {
    let url = std::env::var("LINKLY_TEST_POSTGRES").ok()?;
    let name = format!("linkly_test_{}", uuid::Uuid::new_v4().simple());
    let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("LINKLY_TEST_POSTGRES");
    c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
    Some(Fresh {
        spec: DbSpec::Postgres(with_database(&url, via, &name)),
        dir: tempfile::tempdir().unwrap(),
        pg: Some((url, name)),
    })
}

/// `url` naming the database `db`, at `via` instead of its `host:port` when given (the user
/// and the query string kept).
fn with_database(url: &str, via: Option<&str>, db: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a postgres:// URL");
    let (host, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let (user, host) = match host.rsplit_once('@') {
        Some((user, host)) => (format!("{user}@"), host),
        None => (String::new(), host),
    };
    let query = tail.find('?').map_or("", |i| &tail[i..]);
    let host = via.unwrap_or(host);
    format!("{scheme}://{user}{host}/{db}{query}")
}

/// A blocking HTTP call: (status, `WWW-Authenticate`, `Retry-After`, JSON body, or the text
/// as a JSON string when it is not JSON).
pub(crate) fn http(
    method: &str,
    url: &str,
    token: Option<&str>,
    body: Option<String>,
) -> (u16, Option<String>, Option<String>, Value) {
    let mut req = ureq::request(method, url).set("Content-Type", "application/json");
    if let Some(t) = token {
        req = req.set("Authorization", &format!("Bearer {t}"));
    }
    let res = match body {
        Some(b) => req.send_string(&b),
        None => req.call(),
    };
    let resp = match res {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {url}: {e}"),
    };
    let status = resp.status();
    let www = resp.header("WWW-Authenticate").map(str::to_string);
    let retry = resp.header("Retry-After").map(str::to_string);
    let text = resp.into_string().unwrap_or_default();
    let json = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, www, retry, json)
}

#[test]
fn a_database_url_names_another_database_and_host() {
    let url = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable";
    assert_eq!(
        with_database(url, None, "t1"),
        "postgres://postgres@127.0.0.1:5432/t1?sslmode=disable"
    );
    assert_eq!(
        with_database("postgres://h:1", Some("127.0.0.1:9"), "t2"),
        "postgres://127.0.0.1:9/t2"
    );
}

/// The number the query `sql` counts (`SELECT COUNT(*) …`), read straight from the database
/// of `spec`, past the gateway's API. Blocking: call it off async threads.
pub(crate) fn count(spec: &DbSpec, sql: &str) -> i64 {
    match spec {
        DbSpec::Sqlite(path) => rusqlite::Connection::open(path)
            .unwrap()
            .query_row(sql, [], |r| r.get(0))
            .unwrap(),
        DbSpec::Postgres(url) => postgres::Client::connect(url, postgres::NoTls)
            .unwrap()
            .query_one(sql, &[])
            .unwrap()
            .get(0),
    }
}
