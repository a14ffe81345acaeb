//! The SQLite backend: one connection per [`super::Db`] handle (WAL, a busy timeout), write
//! transactions taken `IMMEDIATE` so that two processes never interleave a slot check.

use std::path::Path;
use std::time::Duration;

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, TransactionBehavior};

use super::rows::{Row, Val};
use crate::Result;

/// The schema, idempotent: a database made before a table or column was added gains it at the
/// next open, its data kept (an older `documents` table is migrated by `super::documents`).
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS users (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    plan TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS libraries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_id INTEGER NOT NULL,
    slug TEXT NOT NULL,
    title TEXT NOT NULL,
    description TEXT NOT NULL,
    category TEXT NOT NULL,
    visibility TEXT NOT NULL,
    doc_count INTEGER NOT NULL DEFAULT 0,
    stars INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    content_seq INTEGER NOT NULL DEFAULT 0,
    UNIQUE (owner_id, slug)
);
CREATE INDEX IF NOT EXISTS libraries_updated ON libraries (updated_at DESC);
CREATE INDEX IF NOT EXISTS libraries_owner ON libraries (owner_id);
CREATE TABLE IF NOT EXISTS links (
    user_id INTEGER NOT NULL,
    library_id INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, library_id)
);
CREATE INDEX IF NOT EXISTS links_library ON links (library_id);
CREATE TABLE IF NOT EXISTS invites (
    library_id INTEGER NOT NULL,
    user_id INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (library_id, user_id)
);
CREATE INDEX IF NOT EXISTS invites_user ON invites (user_id);
CREATE TABLE IF NOT EXISTS publishes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    library_id INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    gone TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS publishes_library ON publishes (library_id);
CREATE TABLE IF NOT EXISTS publish_usage (
    user_id INTEGER NOT NULL,
    day INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    PRIMARY KEY (user_id, day)
);
DROP TABLE IF EXISTS staged_documents;
CREATE TABLE IF NOT EXISTS documents (
    library_id INTEGER NOT NULL,
    doc_id INTEGER NOT NULL,
    born INTEGER NOT NULL,
    died INTEGER,
    path TEXT NOT NULL,
    doc_type TEXT NOT NULL,
    hash TEXT NOT NULL,
    size INTEGER NOT NULL,
    modified_at INTEGER NOT NULL,
    indexed_at INTEGER NOT NULL,
    title TEXT,
    body TEXT NOT NULL,
    outline TEXT NOT NULL,
    word_count INTEGER NOT NULL,
    char_count INTEGER NOT NULL,
    total_lines INTEGER NOT NULL,
    keywords TEXT NOT NULL,
    abstract TEXT NOT NULL,
    terms TEXT NOT NULL,
    vector_model TEXT,
    PRIMARY KEY (library_id, doc_id, born)
);
CREATE INDEX IF NOT EXISTS documents_by_path ON documents (library_id, path);
CREATE TABLE IF NOT EXISTS chunks (
    library_id INTEGER NOT NULL,
    doc_id INTEGER NOT NULL,
    born INTEGER NOT NULL,
    died INTEGER,
    chunk_no INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    model TEXT NOT NULL,
    dim INTEGER NOT NULL,
    embedding BLOB NOT NULL,
    PRIMARY KEY (library_id, doc_id, born, chunk_no)
);
CREATE TABLE IF NOT EXISTS postings (
    library_id INTEGER NOT NULL,
    version INTEGER NOT NULL,
    term TEXT NOT NULL,
    docs BLOB NOT NULL,
    PRIMARY KEY (library_id, version, term)
);
";

/// Opens (creating when missing) a database file and its schema.
///
/// Several processes (or threads) may open a new file at the same moment. Switching it to WAL
/// and creating the schema take the write lock, and SQLite answers `SQLITE_BUSY` without calling
/// the busy handler in some of those races (a lock upgrade, a WAL being set up by another
/// opener), so the setup is retried, with a growing pause, for as long as the busy timeout.
pub(super) fn open(path: &Path) -> Result<Connection> {
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        fs_err::create_dir_all(parent)?;
    }
    linkly_core::private_database(path)?;
    let started = std::time::Instant::now();
    let mut pause = Duration::from_millis(2);
    loop {
        match setup(path) {
            Err(Setup::Sqlite(e)) if is_busy(&e) && started.elapsed() < BUSY_TIMEOUT => {
                tracing::debug!(path = %path.display(), error = %e, "database busy while opening; retrying");
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(200));
            }
            Err(Setup::Sqlite(e)) => return Err(e.into()),
            Err(Setup::Gateway(e)) => return Err(e),
            Ok(conn) => return Ok(conn),
        }
    }
}

/// How long a connection waits on another's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// One attempt at opening the file, switching it to WAL and creating (or migrating) the
/// schema, in one write transaction.
fn setup(path: &Path) -> Result<Connection, Setup> {
    let mut conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let has = |table: &str, column: &str| -> rusqlite::Result<bool> {
        tx.query_row(
            "SELECT COUNT(*) FROM pragma_table_info(?1) WHERE name = ?2",
            [table, column],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n > 0)
    };
    if has("documents", "deleted")? {
        // The layout before search moved into the database: set aside, migrated below.
        tx.execute_batch("ALTER TABLE documents RENAME TO documents_v1")?;
    }
    tx.execute_batch(SCHEMA)?;
    for (table, column, kind) in [
        ("publishes", "model", "TEXT"),
        ("publishes", "dim", "INTEGER"),
        ("publishes", "bytes", "INTEGER NOT NULL DEFAULT 0"),
        ("libraries", "version", "INTEGER NOT NULL DEFAULT 0"),
        ("libraries", "next_doc", "INTEGER NOT NULL DEFAULT 0"),
        ("libraries", "roots", "TEXT NOT NULL DEFAULT ''"),
        ("libraries", "vector_model", "TEXT"),
        ("libraries", "vector_dim", "INTEGER NOT NULL DEFAULT 0"),
        ("libraries", "chunk_count", "INTEGER NOT NULL DEFAULT 0"),
    ] {
        if !has(table, column)? {
            tx.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {kind}"))?;
        }
    }
    let mut wrapped = super::Tx::Lite(tx);
    super::documents::migrate(&mut wrapped).map_err(Setup::Gateway)?;
    wrapped.commit().map_err(Setup::Gateway)?;
    Ok(conn)
}

/// Why one attempt at [`setup`] failed: SQLite (perhaps busy: retried), or the migration.
#[derive(Debug)]
enum Setup {
    Sqlite(rusqlite::Error),
    Gateway(crate::GatewayError),
}

impl From<rusqlite::Error> for Setup {
    fn from(e: rusqlite::Error) -> Setup {
        Setup::Sqlite(e)
    }
}

/// Whether an error is another connection's lock (worth waiting out), not a fault.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Idle read connections kept at most.
const IDLE_READERS: usize = 8;

/// One writing connection and a pool of reading ones: in WAL mode reads run beside each other
/// and beside the write, so concurrent tool calls do not queue on one connection.
pub(super) struct Pool {
    path: std::path::PathBuf,
    writer: std::sync::Mutex<Connection>,
    readers: std::sync::Mutex<Vec<Connection>>,
}

impl Pool {
    /// Opens the database (creating it and its schema when missing).
    pub(super) fn open(path: &Path) -> Result<Pool> {
        Ok(Pool {
            path: path.to_path_buf(),
            writer: std::sync::Mutex::new(open(path)?),
            readers: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// The writing connection.
    pub(super) fn writer(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A reading connection: an idle one, or a new one.
    pub(super) fn reader(&self) -> Result<Connection> {
        if let Some(c) = self.readers.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Ok(c);
        }
        let conn = Connection::open(&self.path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        Ok(conn)
    }

    /// Returns a reading connection to the pool.
    pub(super) fn give(&self, conn: Connection) {
        let mut idle = self.readers.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < IDLE_READERS {
            idle.push(conn);
        }
    }
}

/// Starts a transaction: `IMMEDIATE` for writes (the database's write lock is taken at once,
/// so a read-then-write never races another process), `DEFERRED` for reads.
pub(super) fn begin(conn: &mut Connection, write: bool) -> Result<rusqlite::Transaction<'_>> {
    let behavior = if write {
        TransactionBehavior::Immediate
    } else {
        TransactionBehavior::Deferred
    };
    Ok(conn.transaction_with_behavior(behavior)?)
}

/// `$1`-style placeholders as SQLite's numbered `?1` (the same numbers, in any order).
pub(super) fn placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

impl rusqlite::ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        let json = |v: serde_json::Result<String>| {
            v.map(ToSqlOutput::from)
                .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
        };
        Ok(match self {
            Val::I(v) => ToSqlOutput::from(*v),
            Val::T(s) => ToSqlOutput::from(s.as_str()),
            Val::N => ToSqlOutput::from(rusqlite::types::Null),
            Val::F(f) => ToSqlOutput::from(*f),
            Val::B(b) => ToSqlOutput::from(b.as_slice()),
            Val::V(v) => {
                ToSqlOutput::from(v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>())
            }
            Val::Texts(t) => json(serde_json::to_string(t))?,
            Val::Ints(i) => json(serde_json::to_string(i))?,
        })
    }
}

/// Runs a query and reads every row, its columns by name.
pub(super) fn query(tx: &rusqlite::Transaction<'_>, sql: &str, params: &[Val]) -> Result<Vec<Row>> {
    let mut stmt = tx.prepare_cached(&placeholders(sql))?;
    let names: std::sync::Arc<[String]> = stmt.column_names().map(str::to_string).collect();
    let mut rows = stmt.query(rusqlite::params_from_iter(params.iter()))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let mut vals = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            vals.push(match row.get_ref(i)? {
                ValueRef::Null => Val::N,
                ValueRef::Integer(v) => Val::I(v),
                ValueRef::Text(t) => Val::T(String::from_utf8(t.to_vec()).map_err(|_| {
                    crate::GatewayError::Database(format!("column {name:?} is not UTF-8"))
                })?),
                ValueRef::Real(f) => Val::F(f),
                ValueRef::Blob(b) => Val::B(b.to_vec()),
            });
        }
        out.push(Row::new(names.clone(), vals));
    }
    Ok(out)
}

/// Runs a statement; the rows it changed.
pub(super) fn execute(tx: &rusqlite::Transaction<'_>, sql: &str, params: &[Val]) -> Result<u64> {
    let mut stmt = tx.prepare_cached(&placeholders(sql))?;
    Ok(stmt.execute(rusqlite::params_from_iter(params.iter()))? as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollar_placeholders_become_numbered() {
        assert_eq!(
            placeholders("SELECT $2, $1 WHERE a = $10"),
            "SELECT ?2, ?1 WHERE a = ?10"
        );
        assert_eq!(placeholders("SELECT '$'"), "SELECT '$'");
    }

    #[test]
    fn numbered_placeholders_bind_out_of_order_and_twice() {
        let mut conn = Connection::open_in_memory().unwrap();
        let tx = begin(&mut conn, false).unwrap();
        let rows = query(
            &tx,
            "SELECT $2 || $1 || $2 AS v",
            &[Val::T("a".into()), Val::T("b".into())],
        )
        .unwrap();
        assert_eq!(rows[0].get::<String>("v").unwrap(), "bab");
    }
}
