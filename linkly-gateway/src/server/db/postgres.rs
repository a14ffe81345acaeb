//! The PostgreSQL backend: a small pool of synchronous `postgres` clients. The `postgres`
//! crate drives its own Tokio runtime, so it must only be called from blocking threads
//! (`tokio::task::spawn_blocking`), never from inside an async task.

use std::sync::Mutex;
use std::time::Duration;

use ::postgres::types::{ToSql, Type};
use ::postgres::{Client, NoTls};

use super::rows::{Row, Val};
use crate::{GatewayError, Result};

/// Idle connections kept for reuse.
const MAX_IDLE: usize = 8;

/// An arbitrary, fixed key of the advisory lock that serialises schema creation.
const SCHEMA_LOCK: i64 = 0x6c69_6e6b_6c79_0016;

/// The schema, idempotent (run under [`SCHEMA_LOCK`]): a database made before a table or column
/// was added gains it at the next start, its data kept.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS users (
    id BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    plan TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS libraries (
    id BIGSERIAL PRIMARY KEY,
    owner_id BIGINT NOT NULL,
    slug TEXT NOT NULL,
    title TEXT NOT NULL,
    description TEXT NOT NULL,
    category TEXT NOT NULL,
    visibility TEXT NOT NULL,
    doc_count BIGINT NOT NULL DEFAULT 0,
    stars BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    content_seq BIGINT NOT NULL DEFAULT 0,
    UNIQUE (owner_id, slug)
);
CREATE INDEX IF NOT EXISTS libraries_updated ON libraries (updated_at DESC);
CREATE INDEX IF NOT EXISTS libraries_owner ON libraries (owner_id);
CREATE TABLE IF NOT EXISTS links (
    user_id BIGINT NOT NULL,
    library_id BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, library_id)
);
CREATE INDEX IF NOT EXISTS links_library ON links (library_id);
CREATE TABLE IF NOT EXISTS invites (
    library_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (library_id, user_id)
);
CREATE INDEX IF NOT EXISTS invites_user ON invites (user_id);
CREATE TABLE IF NOT EXISTS publishes (
    id BIGSERIAL PRIMARY KEY,
    library_id BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    gone TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS publishes_library ON publishes (library_id);
ALTER TABLE publishes ADD COLUMN IF NOT EXISTS model TEXT;
ALTER TABLE publishes ADD COLUMN IF NOT EXISTS dim BIGINT;
ALTER TABLE publishes ADD COLUMN IF NOT EXISTS bytes BIGINT NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS publish_usage (
    user_id BIGINT NOT NULL,
    day BIGINT NOT NULL,
    bytes BIGINT NOT NULL,
    PRIMARY KEY (user_id, day)
);
DROP TABLE IF EXISTS staged_documents;
ALTER TABLE libraries ADD COLUMN IF NOT EXISTS version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE libraries ADD COLUMN IF NOT EXISTS next_doc BIGINT NOT NULL DEFAULT 0;
ALTER TABLE libraries ADD COLUMN IF NOT EXISTS roots TEXT NOT NULL DEFAULT '';
ALTER TABLE libraries ADD COLUMN IF NOT EXISTS vector_model TEXT;
ALTER TABLE libraries ADD COLUMN IF NOT EXISTS vector_dim BIGINT NOT NULL DEFAULT 0;
ALTER TABLE libraries ADD COLUMN IF NOT EXISTS chunk_count BIGINT NOT NULL DEFAULT 0;
";

/// The published libraries' documents, chunks and postings (see `super::documents`): created
/// after an older `documents` table was set aside for its migration.
const DOCUMENTS: &str = "
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE IF NOT EXISTS documents (
    library_id BIGINT NOT NULL,
    doc_id BIGINT NOT NULL,
    born BIGINT NOT NULL,
    died BIGINT,
    path TEXT NOT NULL,
    doc_type TEXT NOT NULL,
    hash TEXT NOT NULL,
    size BIGINT NOT NULL,
    modified_at BIGINT NOT NULL,
    indexed_at BIGINT NOT NULL,
    title TEXT,
    body TEXT NOT NULL,
    outline TEXT NOT NULL,
    word_count BIGINT NOT NULL,
    char_count BIGINT NOT NULL,
    total_lines BIGINT NOT NULL,
    keywords TEXT NOT NULL,
    abstract TEXT NOT NULL,
    terms TEXT NOT NULL,
    vector_model TEXT,
    PRIMARY KEY (library_id, doc_id, born)
);
CREATE INDEX IF NOT EXISTS documents_by_path ON documents (library_id, path);
CREATE TABLE IF NOT EXISTS chunks (
    library_id BIGINT NOT NULL,
    doc_id BIGINT NOT NULL,
    born BIGINT NOT NULL,
    died BIGINT,
    chunk_no BIGINT NOT NULL,
    start_line BIGINT NOT NULL,
    end_line BIGINT NOT NULL,
    model TEXT NOT NULL,
    dim BIGINT NOT NULL,
    embedding vector NOT NULL,
    PRIMARY KEY (library_id, doc_id, born, chunk_no)
);
CREATE TABLE IF NOT EXISTS postings (
    library_id BIGINT NOT NULL,
    version BIGINT NOT NULL,
    term TEXT NOT NULL,
    docs BYTEA NOT NULL,
    PRIMARY KEY (library_id, version, term)
);
";

/// A few connections to one database.
pub(super) struct Pool {
    url: String,
    /// Where the server is (`host:port`), for errors: the URL without its credentials.
    host: String,
    idle: Mutex<Vec<Client>>,
}

/// How long the check of a failed connection waits for the server's answer.
const VALID_TIMEOUT: Duration = Duration::from_secs(2);

impl Pool {
    /// Connects once and creates the schema when missing; safe when several processes start
    /// at once (the creation holds a transaction-scoped advisory lock).
    pub(super) fn open(url: &str) -> Result<Pool> {
        let pool = Pool::new(url);
        let mut client = pool.take()?;
        {
            let mut tx = client.transaction().map_err(failed)?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
                .map_err(failed)?;
            tx.batch_execute(SCHEMA).map_err(failed)?;
            let older: bool = tx
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM information_schema.columns \
                     WHERE table_schema = current_schema() AND table_name = 'documents' \
                     AND column_name = 'deleted')",
                    &[],
                )
                .map_err(failed)?
                .get(0);
            if older {
                tx.batch_execute(
                    "ALTER TABLE documents RENAME TO documents_v1; DROP INDEX IF EXISTS documents_seq;",
                )
                .map_err(failed)?;
            }
            tx.batch_execute(DOCUMENTS).map_err(|e| {
                let e = failed(e);
                GatewayError::Database(format!(
                    "{e} (the gateway keeps vectors with the pgvector extension: install it on this server, as docs/gateway.md says)"
                ))
            })?;
            let mut wrapped = super::Tx::Pg(tx);
            super::documents::migrate(&mut wrapped)?;
            wrapped.commit()?;
        }
        pool.give(client);
        Ok(pool)
    }

    /// A pool of connections to `url`, none made yet (a standby's: it takes no schema).
    pub(super) fn new(url: &str) -> Pool {
        let host = url.split_once("://").map_or(url, |(_, rest)| rest);
        let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
        Pool {
            url: url.to_string(),
            host: host.split(['/', '?']).next().unwrap_or(host).to_string(),
            idle: Mutex::new(Vec::new()),
        }
    }

    /// An idle connection, or a new one.
    pub(super) fn take(&self) -> Result<Client> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match idle {
            Some(client) if !client.is_closed() => Ok(client),
            _ => self.connect(),
        }
    }

    /// A new connection; when the server cannot be reached, an error that says so.
    pub(super) fn connect(&self) -> Result<Client> {
        Client::connect(&self.url, NoTls).map_err(|e| self.unreachable(&describe(&e)))
    }

    /// The error of a server that cannot be reached (down, restarting, refusing connections).
    pub(super) fn unreachable(&self, why: &str) -> GatewayError {
        GatewayError::Unavailable(format!(
            "PostgreSQL at {} cannot be reached ({why}); the gateway reconnects by itself, try again shortly",
            self.host
        ))
    }

    /// Whether `client` failed with `e` because its connection is gone (the server restarted
    /// or ended it), rather than for what it asked. Only a database error is checked, with
    /// one round trip when the driver has not yet seen the connection close.
    pub(super) fn lost(&self, client: &mut Client, e: &GatewayError) -> bool {
        if !matches!(e, GatewayError::Database(_) | GatewayError::Unavailable(_)) {
            return false;
        }
        client.is_closed() || client.is_valid(VALID_TIMEOUT).is_err()
    }

    /// Drops every idle connection (after one was found lost: a restarted server lost them all).
    pub(super) fn forget_idle(&self) {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Returns a connection for reuse (dropped when closed or the pool is full).
    pub(super) fn give(&self, client: Client) {
        if client.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(client);
        }
    }
}

/// A driver error with its causes (the driver's own text is only its kind: "db error"), such
/// as "db error: FATAL: terminating connection due to administrator command".
fn describe(e: &::postgres::Error) -> String {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    text
}

/// A driver error as the gateway's, with its causes.
pub(super) fn failed(e: ::postgres::Error) -> GatewayError {
    GatewayError::Database(describe(&e))
}

/// An embedding as pgvector's binary `vector`: its width and an unused word (16 bits each),
/// then the values as big-endian `f32`s.
#[derive(Debug)]
struct PgVector<'a>(&'a [f32]);

impl ToSql for PgVector<'_> {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> std::result::Result<::postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>>
    {
        let dim = u16::try_from(self.0.len()).map_err(|_| "a vector wider than 65,535")?;
        out.extend_from_slice(&dim.to_be_bytes());
        out.extend_from_slice(&0u16.to_be_bytes());
        for x in self.0 {
            out.extend_from_slice(&x.to_be_bytes());
        }
        Ok(::postgres::types::IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        ty.name() == "vector"
    }

    ::postgres::types::to_sql_checked!();
}

/// A parameter as the driver takes it.
enum Param<'a> {
    Ref(&'a (dyn ToSql + Sync)),
    Vector(PgVector<'a>),
}

/// The parameters as the driver takes them.
fn bind(params: &[Val]) -> Vec<Param<'_>> {
    const NULL: &Option<String> = &None;
    params
        .iter()
        .map(|v| match v {
            Val::I(i) => Param::Ref(i),
            Val::T(s) => Param::Ref(s),
            Val::N => Param::Ref(NULL),
            Val::F(f) => Param::Ref(f),
            Val::B(b) => Param::Ref(b),
            Val::V(v) => Param::Vector(PgVector(v)),
            Val::Texts(t) => Param::Ref(t),
            Val::Ints(i) => Param::Ref(i),
        })
        .collect()
}

fn refs<'a>(params: &'a [Param<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    params
        .iter()
        .map(|p| match p {
            Param::Ref(r) => *r,
            Param::Vector(v) => v as &(dyn ToSql + Sync),
        })
        .collect()
}

/// Runs a query and reads every row, its columns by name (integers, booleans as 0/1, text).
pub(super) fn query(
    tx: &mut ::postgres::Transaction<'_>,
    sql: &str,
    params: &[Val],
) -> Result<Vec<Row>> {
    let bound = bind(params);
    let rows = tx.query(sql, &refs(&bound)).map_err(failed)?;
    let mut out = Vec::with_capacity(rows.len());
    let mut names: Option<std::sync::Arc<[String]>> = None;
    for row in rows {
        let names = names
            .get_or_insert_with(|| row.columns().iter().map(|c| c.name().to_string()).collect())
            .clone();
        let mut vals = Vec::with_capacity(row.len());
        for (i, col) in row.columns().iter().enumerate() {
            let t = col.type_();
            let v = if *t == Type::INT8 {
                row.try_get::<_, Option<i64>>(i)?.map(Val::I)
            } else if *t == Type::INT4 {
                row.try_get::<_, Option<i32>>(i)?
                    .map(|v| Val::I(i64::from(v)))
            } else if *t == Type::INT2 {
                row.try_get::<_, Option<i16>>(i)?
                    .map(|v| Val::I(i64::from(v)))
            } else if *t == Type::BOOL {
                row.try_get::<_, Option<bool>>(i)?
                    .map(|v| Val::I(i64::from(v)))
            } else if *t == Type::TEXT || *t == Type::VARCHAR || *t == Type::NAME {
                row.try_get::<_, Option<String>>(i)?.map(Val::T)
            } else if *t == Type::FLOAT8 {
                row.try_get::<_, Option<f64>>(i)?.map(Val::F)
            } else if *t == Type::FLOAT4 {
                row.try_get::<_, Option<f32>>(i)?
                    .map(|v| Val::F(f64::from(v)))
            } else if *t == Type::BYTEA {
                row.try_get::<_, Option<Vec<u8>>>(i)?.map(Val::B)
            } else {
                return Err(GatewayError::Database(format!(
                    "unexpected column type {t} of {}",
                    col.name()
                )));
            };
            vals.push(v.unwrap_or(Val::N));
        }
        out.push(Row::new(names, vals));
    }
    Ok(out)
}

/// Runs a statement; the rows it changed.
pub(super) fn execute(
    tx: &mut ::postgres::Transaction<'_>,
    sql: &str,
    params: &[Val],
) -> Result<u64> {
    let bound = bind(params);
    tx.execute(sql, &refs(&bound)).map_err(failed)
}
