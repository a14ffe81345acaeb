//! The gateway's one store: accounts (`users.rs`), the catalogue with its links and invitations
//! (`catalog.rs`) and published documents (`documents.rs`), in SQLite (one process) or
//! PostgreSQL (several processes sharing one catalogue). See docs/gateway.md for the rules.
//!
//! Every query reads its rows by column name into one row type (`rows.rs`); a value the schema
//! does not allow is an error naming its column, never a default.
//!
//! Every query is written once, with `$1`-style placeholders (SQLite's backend numbers them
//! `?1`); only the schemas differ. Race-free rules (the slot check of [`Db::link`], document
//! sequence numbers) hold across processes: SQLite write transactions take the write lock
//! at once (`BEGIN IMMEDIATE`), PostgreSQL ones lock the row they depend on
//! (`SELECT … FOR UPDATE`).

mod catalog;
mod documents;
mod library;
mod postgres;
mod rows;
mod sqlite;
mod usage;
mod users;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::{GatewayError, Result};

pub use self::documents::{PUBLISH_TTL_MS, PostingList, PublishCommit};
pub use self::library::{Chunk, DocRow, LibraryState, LightRow, SummaryRow};
use self::rows::{Column, FromRow, One, Row, Val};
pub use self::usage::human_bytes;

/// Where the store lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbSpec {
    /// A SQLite file (one gateway process).
    Sqlite(PathBuf),
    /// A PostgreSQL URL, `postgres://user:password@host:port/database` (several processes).
    Postgres(String),
}

impl DbSpec {
    /// `None` → `<data_dir>/gateway.sqlite`; `postgres://…` or `postgresql://…` → PostgreSQL;
    /// `sqlite://<path>` or any other text → a SQLite file at that path.
    pub fn parse(database: Option<&str>, data_dir: &Path) -> Result<DbSpec> {
        let Some(raw) = database.map(str::trim) else {
            return Ok(DbSpec::Sqlite(data_dir.join("gateway.sqlite")));
        };
        if raw.is_empty() {
            return Err(GatewayError::invalid(
                "--database is empty: give a SQLite file path or a postgres:// URL",
            ));
        }
        if raw.starts_with("postgres://") || raw.starts_with("postgresql://") {
            return Ok(DbSpec::Postgres(raw.to_string()));
        }
        let path = raw.strip_prefix("sqlite://").unwrap_or(raw);
        Ok(DbSpec::Sqlite(PathBuf::from(path)))
    }

    /// A description without any password: the SQLite path, or the PostgreSQL URL with its
    /// password replaced by `***`.
    pub fn redacted(&self) -> String {
        match self {
            DbSpec::Sqlite(p) => p.display().to_string(),
            DbSpec::Postgres(url) => {
                let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
                match rest.split_once('@') {
                    Some((auth, host)) => match auth.split_once(':') {
                        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
                        None => url.clone(),
                    },
                    None => url.clone(),
                }
            }
        }
    }
}

/// An open transaction on either backend.
enum Tx<'a> {
    Lite(rusqlite::Transaction<'a>),
    Pg(::postgres::Transaction<'a>),
}

impl Tx<'_> {
    fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Row>> {
        match self {
            Tx::Lite(tx) => sqlite::query(tx, sql, params),
            Tx::Pg(tx) => postgres::query(tx, sql, params),
        }
    }

    /// Every row, as the query's row type.
    fn rows<T: FromRow>(&mut self, sql: &str, params: &[Val]) -> Result<Vec<T>> {
        self.query(sql, params)?.iter().map(T::from_row).collect()
    }

    /// The first row, as the query's row type.
    fn row<T: FromRow>(&mut self, sql: &str, params: &[Val]) -> Result<Option<T>> {
        self.query(sql, params)?
            .first()
            .map(T::from_row)
            .transpose()
    }

    /// The only column of the first row.
    fn scalar<T: Column>(&mut self, sql: &str, params: &[Val]) -> Result<Option<T>> {
        Ok(self.row::<One<T>>(sql, params)?.map(|One(v)| v))
    }

    /// The only column of the only row of an aggregate or `RETURNING` (an error when none).
    fn value<T: Column>(&mut self, sql: &str, params: &[Val]) -> Result<T> {
        self.scalar(sql, params)?
            .ok_or_else(|| GatewayError::Database("the statement returned no row".into()))
    }

    fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64> {
        match self {
            Tx::Lite(tx) => sqlite::execute(tx, sql, params),
            Tx::Pg(tx) => postgres::execute(tx, sql, params),
        }
    }

    /// True on PostgreSQL.
    fn is_pg(&self) -> bool {
        matches!(self, Tx::Pg(_))
    }

    /// `IN` the list bound as `$n` ([`Val::Texts`] or [`Val::Ints`]): `= ANY($n)` on
    /// PostgreSQL, a JSON array read by `json_each` on SQLite (one parameter however long).
    fn in_list(&self, n: usize) -> String {
        match self {
            Tx::Lite(_) => format!("IN (SELECT value FROM json_each(${n}))"),
            Tx::Pg(_) => format!("= ANY(${n})"),
        }
    }

    /// Inserts rows of values for `columns`, `per` rows to a statement.
    fn insert(
        &mut self,
        table: &str,
        columns: &str,
        rows: Vec<Vec<Val>>,
        per: usize,
    ) -> Result<()> {
        let mut rows = rows.into_iter().peekable();
        while rows.peek().is_some() {
            let batch: Vec<Vec<Val>> = rows.by_ref().take(per.max(1)).collect();
            let mut sql = format!("INSERT INTO {table} ({columns}) VALUES ");
            let mut params = Vec::new();
            for (i, row) in batch.into_iter().enumerate() {
                if i > 0 {
                    sql.push_str(", ");
                }
                sql.push('(');
                for (j, v) in row.into_iter().enumerate() {
                    if j > 0 {
                        sql.push_str(", ");
                    }
                    params.push(v);
                    sql.push_str(&format!("${}", params.len()));
                }
                sql.push(')');
            }
            self.exec(&sql, &params)?;
        }
        Ok(())
    }

    /// ` FOR UPDATE` on PostgreSQL (a row lock until commit); nothing on SQLite, whose write
    /// transactions already hold the database's write lock.
    fn for_update(&self) -> &'static str {
        match self {
            Tx::Lite(_) => "",
            Tx::Pg(_) => " FOR UPDATE",
        }
    }

    fn commit(self) -> Result<()> {
        match self {
            Tx::Lite(tx) => Ok(tx.commit()?),
            Tx::Pg(tx) => tx.commit().map_err(postgres::failed),
        }
    }
}

enum Backend {
    Sqlite(sqlite::Pool),
    Postgres(postgres::Pool),
}

struct Inner {
    spec: DbSpec,
    backend: Backend,
    /// A streaming standby that read-only transactions go to (PostgreSQL only).
    standby: Option<Standby>,
    /// From this many chunks of its model up, a library's nearest chunks are found through
    /// the model's HNSW index on PostgreSQL ([`HNSW_FROM_CHUNKS`] unless changed).
    hnsw_from: std::sync::atomic::AtomicU64,
}

/// From this many chunks of one model up, PostgreSQL finds a library's nearest chunks through
/// that model's HNSW index (approximate, pgvector's iterative scan keeping the library's rows);
/// below, exactly by distance, which is as fast at that size and never misses.
pub const HNSW_FROM_CHUNKS: u64 = 20_000;

/// A PostgreSQL standby of the database and where it is, for messages.
struct Standby {
    pool: postgres::Pool,
    redacted: String,
}

/// The gateway's store. Cheap to clone (an `Arc` inside); every method is synchronous and
/// blocks on the database, so async code calls it from blocking threads
/// (`tokio::task::spawn_blocking`). On PostgreSQL this is required: the `postgres` driver
/// runs its own runtime and panics inside another one.
#[derive(Clone)]
pub struct Db {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("spec", &self.inner.spec.redacted())
            .finish()
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// `%text%` for a case-insensitive `LIKE … ESCAPE '\'`.
fn like_pattern(text: &str) -> String {
    let mut p = String::from("%");
    for c in text.to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}

fn count(n: i64) -> u32 {
    u32::try_from(n.max(0)).unwrap_or(u32::MAX)
}

impl Db {
    /// Opens the store, creating its schema when missing (idempotent; on PostgreSQL safe when
    /// several processes start at once).
    pub fn open(spec: &DbSpec) -> Result<Db> {
        Db::open_with_standby(spec, None)
    }

    /// [`Db::open`], with the read-only transactions (tool calls, catalogue pages, sign-in)
    /// sent to a streaming standby of the PostgreSQL database at `standby`, when given; writes
    /// stay on the primary. A standby that cannot be reached is passed over: reads go to the
    /// primary until it answers again (it is not contacted here, so a gateway starts while it
    /// is down). Reads see the primary's last commits only when the standby is synchronous with
    /// `synchronous_commit = remote_apply` (docs/gateway.md).
    pub fn open_with_standby(spec: &DbSpec, standby: Option<&str>) -> Result<Db> {
        let standby = match standby.map(str::trim) {
            None => None,
            Some(url) => {
                if !matches!(spec, DbSpec::Postgres(_)) {
                    return Err(GatewayError::invalid(
                        "--read-database needs a PostgreSQL --database: a SQLite file has no standby",
                    ));
                }
                let DbSpec::Postgres(url) = DbSpec::parse(Some(url), Path::new(""))? else {
                    return Err(GatewayError::invalid(format!(
                        "--read-database must be a postgres:// URL (got {url:?})"
                    )));
                };
                Some(Standby {
                    redacted: DbSpec::Postgres(url.clone()).redacted(),
                    pool: postgres::Pool::new(&url),
                })
            }
        };
        let backend = match spec {
            DbSpec::Sqlite(path) => Backend::Sqlite(sqlite::Pool::open(path)?),
            DbSpec::Postgres(url) => Backend::Postgres(postgres::Pool::open(url)?),
        };
        tracing::debug!(database = %spec.redacted(), "gateway database open");
        Ok(Db {
            inner: Arc::new(Inner {
                spec: spec.clone(),
                backend,
                standby,
                hnsw_from: HNSW_FROM_CHUNKS.into(),
            }),
        })
    }

    /// From how many chunks of its model a library is searched through the model's HNSW index
    /// on PostgreSQL ([`HNSW_FROM_CHUNKS`] by default; `0`: always, `u64::MAX`: never).
    pub fn set_hnsw_from(&self, chunks: u64) {
        self.inner
            .hnsw_from
            .store(chunks, std::sync::atomic::Ordering::Relaxed);
    }

    fn hnsw_from(&self) -> u64 {
        self.inner
            .hnsw_from
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Runs `sql` outside any transaction on the primary (PostgreSQL), as statements such as
    /// `CREATE INDEX CONCURRENTLY` require; nothing on SQLite.
    fn pg_outside_tx(&self, sql: &str) -> Result<()> {
        let Backend::Postgres(pool) = &self.inner.backend else {
            return Ok(());
        };
        let mut client = pool.take()?;
        let done = client.batch_execute(sql).map_err(postgres::failed);
        pool.give(client);
        done
    }

    /// Where it lives.
    pub fn spec(&self) -> &DbSpec {
        &self.inner.spec
    }

    /// The standby that read-only transactions go to, without its password.
    pub fn read_database(&self) -> Option<&str> {
        self.inner.standby.as_ref().map(|s| s.redacted.as_str())
    }

    /// Runs `f` in one transaction (a write one takes its locks up front on SQLite) and
    /// commits when it succeeds.
    ///
    /// On PostgreSQL a connection the server closed (a restart, a terminated backend) is
    /// dropped with every idle one, and `f` runs once more on a fresh connection when nothing
    /// of the first run can have been kept: it failed before its commit was sent, or it only
    /// read. A write whose commit was lost is not run again (it may have been applied).
    fn tx<T>(&self, write: bool, mut f: impl FnMut(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        match &self.inner.backend {
            Backend::Sqlite(pool) if write => {
                let mut conn = pool.writer();
                let mut tx = Tx::Lite(sqlite::begin(&mut conn, true)?);
                let out = f(&mut tx)?;
                tx.commit()?;
                Ok(out)
            }
            Backend::Sqlite(pool) => {
                // Reads run beside each other and beside the writer (WAL).
                let mut conn = pool.reader()?;
                let out = (|| {
                    let mut tx = Tx::Lite(sqlite::begin(&mut conn, false)?);
                    let out = f(&mut tx)?;
                    tx.commit()?;
                    Ok(out)
                })();
                pool.give(conn);
                out
            }
            Backend::Postgres(pool) => {
                if !write && let Some(standby) = &self.inner.standby {
                    match pg_tx(&standby.pool, false, &mut f) {
                        Err(GatewayError::Unavailable(why)) => {
                            tracing::warn!(standby = %standby.redacted, error = %why, "the read standby cannot be reached; reading from the primary");
                        }
                        done => return done,
                    }
                }
                pg_tx(pool, write, &mut f)
            }
        }
    }
}

/// Runs `f` in one transaction on `pool` (see [`Db::tx`]).
fn pg_tx<T>(
    pool: &postgres::Pool,
    write: bool,
    f: &mut impl FnMut(&mut Tx<'_>) -> Result<T>,
) -> Result<T> {
    let mut fresh = false;
    loop {
        let mut client = if fresh { pool.connect()? } else { pool.take()? };
        let mut committing = false;
        let out = (|| {
            let mut tx = Tx::Pg(client.transaction().map_err(postgres::failed)?);
            let out = f(&mut tx)?;
            committing = true;
            tx.commit()?;
            Ok(out)
        })();
        let Err(e) = out else {
            pool.give(client);
            return out;
        };
        if !pool.lost(&mut client, &e) {
            pool.give(client);
            return Err(e);
        }
        pool.forget_idle();
        if committing && write {
            return Err(GatewayError::Database(format!(
                "the connection to PostgreSQL was lost while committing: the change may or may not have been saved ({e})"
            )));
        }
        if fresh {
            let why = match &e {
                GatewayError::Database(m) | GatewayError::Unavailable(m) => m.clone(),
                other => other.to_string(),
            };
            return Err(pool.unreachable(&why));
        }
        tracing::warn!(error = %e, "the connection to PostgreSQL was lost; running the transaction again on a new one");
        fresh = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_parses_paths_and_urls() {
        let dir = Path::new("/data");
        assert_eq!(
            DbSpec::parse(None, dir).unwrap(),
            DbSpec::Sqlite(PathBuf::from("/data/gateway.sqlite"))
        );
        assert_eq!(
            DbSpec::parse(Some("postgresql://u:p@h/db"), dir).unwrap(),
            DbSpec::Postgres("postgresql://u:p@h/db".into())
        );
        assert_eq!(
            DbSpec::parse(Some("sqlite:///tmp/g.db"), dir).unwrap(),
            DbSpec::Sqlite(PathBuf::from("/tmp/g.db"))
        );
        assert!(DbSpec::parse(Some(" "), dir).is_err());
        assert_eq!(
            DbSpec::Postgres("postgres://u:secret@h:5432/db".into()).redacted(),
            "postgres://u:***@h:5432/db"
        );
    }

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(like_pattern("Rust_50%"), "%rust\\_50\\%%");
    }
}
