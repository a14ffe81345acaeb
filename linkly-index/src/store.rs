//! The SQLite metadata store: one row per file (path, type, size, times, hash, counts, outline,
//! keywords, abstract, skip reason) and the extracted text that `read` and `grep` serve.
//!
//! A row's `dirty` flag is set in the same transaction that writes new metadata and cleared only
//! after the lexical index has committed that document, so a crash between the two leaves rows
//! that the next sync redoes.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Mutex;

use linkly_core::{DocId, DocType, OutlineNode};
use rusqlite::{Connection, OptionalExtension, params};

use crate::{Error, Result};

/// The on-disk format version of the whole index (store + lexical). A different version is
/// rebuilt from the files.
pub(crate) const INDEX_FORMAT_VERSION: &str = "3";

/// How often the background checkpoints of a sync run ([`Store::background_checkpoints`]).
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(250);
/// The writer's automatic checkpoint, in WAL pages (32 MB of 4 KiB pages; SQLite's default is
/// 1,000).
const AUTO_CHECKPOINT_PAGES: i64 = 8192;

/// Background checkpoints while it lives (see [`Store::background_checkpoints`]).
pub(crate) struct Checkpoints<'a> {
    store: &'a Store,
    stop: std::sync::Arc<(Mutex<bool>, std::sync::Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Checkpoints<'_> {
    fn drop(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        *self.stop.0.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.stop.1.notify_all();
        let _ = thread.join();
        let _ = self
            .store
            .conn()
            .pragma_update(None, "wal_autocheckpoint", AUTO_CHECKPOINT_PAGES);
    }
}

/// The writer connection's page cache, in KiB. 24 MiB held a sync of 100,000 files 16 MB
/// higher and made neither a first index nor a later sync of 35,000 files (the catalog's
/// indexes kept row by row) faster (docs/benchmarks-history.md, tenth pass).
const WRITER_CACHE_KB: i64 = 8 * 1024;

/// `meta` key: the next document id to hand out.
const NEXT_ID: &str = "next_id";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT NOT NULL UNIQUE,
    doc_type TEXT NOT NULL,
    size INTEGER NOT NULL,
    modified_at INTEGER NOT NULL,
    hash TEXT NOT NULL,
    title TEXT,
    word_count INTEGER NOT NULL DEFAULT 0,
    char_count INTEGER NOT NULL DEFAULT 0,
    total_lines INTEGER NOT NULL DEFAULT 0,
    outline TEXT NOT NULL DEFAULT '[]',
    keywords TEXT NOT NULL DEFAULT '[]',
    abstract TEXT NOT NULL DEFAULT '',
    skip_reason TEXT,
    encoding TEXT,
    indexed_at INTEGER NOT NULL,
    dirty INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS content (id INTEGER PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS doc_tags (
    doc_id INTEGER NOT NULL,
    tag TEXT NOT NULL,
    PRIMARY KEY (doc_id, tag)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS doc_tags_by_tag ON doc_tags (tag, doc_id);
CREATE TABLE IF NOT EXISTS doc_tag_stamps (doc_id INTEGER PRIMARY KEY, hash TEXT NOT NULL);
";

/// Everything the store knows of one document, except its text.
#[derive(Debug, Clone, PartialEq)]
pub struct DocRecord {
    /// The stable id.
    pub id: DocId,
    /// The absolute path.
    pub path: String,
    /// The document type.
    pub doc_type: DocType,
    /// The file size in bytes.
    pub size: u64,
    /// Modification time, Unix milliseconds.
    pub modified_at: i64,
    /// The declared or derived title, if any.
    pub title: Option<String>,
    /// Words of the extracted text (a CJK character is one word).
    pub word_count: u64,
    /// Characters of the extracted text, `\r` excluded.
    pub char_count: u64,
    /// Lines of the extracted text.
    pub total_lines: u32,
    /// The outline (empty when there is none).
    pub outline: Vec<OutlineNode>,
    /// The document's top keywords.
    pub keywords: Vec<String>,
    /// The start of the text, whitespace collapsed (for list snippets).
    pub abstract_text: String,
    /// Why the content is unreadable, when it is.
    pub skip_reason: Option<String>,
    /// The encoding the text was decoded from, when that was a question.
    pub encoding: Option<String>,
    /// When the document was last (re)indexed, Unix milliseconds.
    pub indexed_at: i64,
}

impl DocRecord {
    /// The title to show: the declared one, else the file name.
    pub fn display_title(&self) -> String {
        self.title
            .clone()
            .unwrap_or_else(|| self.file_name().to_string())
    }

    /// The file name part of the path.
    pub fn file_name(&self) -> &str {
        self.path.rsplit(['/', '\\']).next().unwrap_or(&self.path)
    }
}

/// What the sync needs to know about a stored file to decide whether it changed.
#[derive(Debug, Clone)]
pub(crate) struct FileState {
    pub(crate) id: u64,
    pub(crate) size: u64,
    pub(crate) modified_at: i64,
    pub(crate) hash: String,
    pub(crate) dirty: bool,
}

/// A document to write, as the indexer prepared it.
#[derive(Debug, Clone)]
pub(crate) struct NewDoc {
    /// The id a new path takes, when the caller numbers its documents (a gateway); `None`: the
    /// next of the store's counter.
    pub(crate) id: Option<u64>,
    pub(crate) path: String,
    pub(crate) doc_type: DocType,
    pub(crate) size: u64,
    pub(crate) modified_at: i64,
    pub(crate) hash: String,
    pub(crate) title: Option<String>,
    pub(crate) word_count: u64,
    pub(crate) char_count: u64,
    pub(crate) total_lines: u32,
    pub(crate) outline: Vec<OutlineNode>,
    pub(crate) keywords: Vec<String>,
    pub(crate) abstract_text: String,
    pub(crate) skip_reason: Option<String>,
    pub(crate) encoding: Option<String>,
    pub(crate) text: StoredText,
}

/// A document's extracted text as the store keeps it: LZ4-compressed (a block, its length
/// first) when that makes it smaller, else as it is. Compressing halves what a sync writes (the
/// text goes through the WAL and then into the database), and the preparing threads do it, on
/// all cores; reading it back costs a few microseconds per page of text. Texts written as
/// plain text by earlier versions read as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoredText {
    Plain(String),
    Lz4(Vec<u8>),
}

/// Texts shorter than this are kept as they are.
const COMPRESS_FROM: usize = 256;

impl StoredText {
    pub(crate) fn of(text: String) -> StoredText {
        if text.len() < COMPRESS_FROM {
            return StoredText::Plain(text);
        }
        let packed = lz4_flex::block::compress_prepend_size(text.as_bytes());
        if packed.len() < text.len() {
            StoredText::Lz4(packed)
        } else {
            StoredText::Plain(text)
        }
    }

    /// The bytes it takes.
    pub(crate) fn stored_len(&self) -> usize {
        match self {
            StoredText::Plain(t) => t.len(),
            StoredText::Lz4(b) => b.len(),
        }
    }

    /// The text back from a `content.text` value (a TEXT, or the BLOB of a compressed one).
    fn decode(value: rusqlite::types::ValueRef<'_>) -> Result<String> {
        use rusqlite::types::ValueRef;
        let bytes = match value {
            ValueRef::Text(t) => t.to_vec(),
            ValueRef::Blob(b) => lz4_flex::block::decompress_size_prepended(b)
                .map_err(|e| Error::Corrupt(format!("stored text: {e}")))?,
            other => {
                return Err(Error::Corrupt(format!(
                    "stored text of type {}",
                    other.data_type()
                )));
            }
        };
        String::from_utf8(bytes).map_err(|e| Error::Corrupt(format!("stored text: {e}")))
    }
}

impl rusqlite::ToSql for StoredText {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(match self {
            StoredText::Plain(t) => t.as_str().into(),
            StoredText::Lz4(b) => b.as_slice().into(),
        })
    }
}

pub(crate) struct Store {
    /// The one connection that writes (and the indexer's reads, which follow its writes).
    conn: Mutex<Connection>,
    /// Connections that only read, for the tools: see [`Store::reader`].
    readers: Readers,
}

/// Idle read-only connections, checked out one per call. SQLite in WAL mode lets any number
/// of readers run beside the writer, so concurrent tool calls (a server with many agents) do
/// not queue behind one connection's lock, nor behind a sync that is writing.
pub(crate) struct Readers {
    path: std::path::PathBuf,
    idle: Mutex<Vec<Connection>>,
}

/// How many idle read connections are kept (more are opened while more calls run at once).
const IDLE_READERS: usize = 8;

/// A connection to read with: a pooled one, or the writer's when none could be opened.
pub(crate) enum Reader<'a> {
    Pooled(Option<Connection>, &'a Readers),
    Writer(std::sync::MutexGuard<'a, Connection>),
}

impl std::ops::Deref for Reader<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        match self {
            Reader::Pooled(conn, _) => conn.as_ref().expect("present until dropped"),
            Reader::Writer(guard) => guard,
        }
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        if let Reader::Pooled(conn, readers) = self
            && let Some(conn) = conn.take()
        {
            let mut idle = readers.idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < IDLE_READERS {
                idle.push(conn);
            }
        }
    }
}

impl Readers {
    /// An idle connection, or a new one. Never creates the database: a store whose file
    /// went away keeps answering through the writer's open handle.
    fn open(&self) -> Option<Connection> {
        if let Some(conn) = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Some(conn);
        }
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
            | rusqlite::OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(&self.path, flags).ok()?;
        conn.busy_timeout(std::time::Duration::from_secs(10)).ok()?;
        // It only reads: a bug that writes through it fails loudly.
        conn.pragma_update(None, "query_only", true).ok()?;
        crate::filter::register_functions(&conn).ok()?;
        Some(conn)
    }
}

/// How long opening a store retries a lock another opener holds.
const OPEN_RETRY: std::time::Duration = std::time::Duration::from_secs(10);

/// One attempt at opening the store: the connection (WAL, the writer's settings, the schema, the
/// filter functions) and whether its format version differs from ours.
fn setup(path: &Path, indexes: &str) -> rusqlite::Result<(Connection, bool)> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // The writer's pages: the B-trees a sync inserts into (records, the catalog's indexes)
    // stay in memory instead of being spilled and read back (the default is 2 MB);
    // statement journals in memory; checkpoints every 32 MB of WAL instead of every 4.
    conn.pragma_update(None, "cache_size", -WRITER_CACHE_KB)?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.pragma_update(None, "wal_autocheckpoint", AUTO_CHECKPOINT_PAGES)?;
    conn.execute_batch(SCHEMA)?;
    conn.execute_batch(indexes)?;
    crate::filter::register_functions(&conn)?;
    let version: Option<String> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'format_version'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    let mismatch = match version {
        Some(v) => v != INDEX_FORMAT_VERSION,
        None => {
            // Another opener of a new store may have written it meanwhile.
            conn.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('format_version', ?1)",
                [INDEX_FORMAT_VERSION],
            )?;
            false
        }
    };
    Ok((conn, mismatch))
}

/// Starts a write transaction that takes the write lock at once (`BEGIN IMMEDIATE`), waiting
/// for it under the busy timeout. A deferred transaction that reads first and then writes fails
/// with `SQLITE_BUSY` at once, without waiting, when another connection (another process's
/// `linkly status` on a new data directory, say) committed in between; an immediate one cannot
/// meet that.
pub(crate) fn write_tx(conn: &mut Connection) -> rusqlite::Result<rusqlite::Transaction<'_>> {
    conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
}

/// Runs the setup of a database file (`path`) again, with a growing pause, while it fails on a
/// lock another opener holds, for up to [`OPEN_RETRY`].
///
/// Several processes may open a new database at the same moment (`linkly serve` and `linkly
/// status` on a new data directory). Switching it to WAL and creating the schema take the
/// write lock, and SQLite answers `SQLITE_BUSY` at once, without the busy timeout, in some of
/// those races (a lock upgrade, a WAL another opener is setting up).
pub(crate) fn retry_while_busy<T>(
    path: &Path,
    mut setup: impl FnMut() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let started = std::time::Instant::now();
    let mut pause = std::time::Duration::from_millis(2);
    loop {
        match setup() {
            Err(e) if is_busy(&e) && started.elapsed() < OPEN_RETRY => {
                tracing::debug!(path = %path.display(), error = %e, "database busy while opening; retrying");
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(100));
            }
            done => return done,
        }
    }
}

/// Whether an error is another connection's lock (worth waiting out), not a fault.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

const RECORD_COLUMNS: &str = "id, path, doc_type, size, modified_at, title, word_count, char_count, \
     total_lines, outline, keywords, abstract, skip_reason, encoding, indexed_at";

impl Store {
    /// Opens (creating if needed) the store at `path`, with the schema and the extra `indexes`
    /// (SQL; the catalog's), retrying while another opener holds the lock
    /// ([`retry_while_busy`]). Returns the store, whether its format version differed from ours
    /// (then the caller rebuilds) and whether it was just created.
    pub(crate) fn open(path: &Path, indexes: &str) -> Result<(Store, bool, bool)> {
        let fresh = !path.exists();
        linkly_core::private_database(path)?;
        let (conn, mismatch) = retry_while_busy(path, || setup(path, indexes))?;
        Ok((
            Store {
                conn: Mutex::new(conn),
                readers: Readers {
                    path: path.to_path_buf(),
                    idle: Mutex::new(Vec::new()),
                },
            },
            mismatch,
            fresh,
        ))
    }

    /// Ids of every stored document, in order.
    pub(crate) fn ids(&self) -> Result<Vec<u64>> {
        select_ids(&self.conn(), "SELECT id FROM docs ORDER BY id")
    }

    /// Makes every id handed out from now on at least `floor` (ids are never recycled, even
    /// across a lost store: see `Index::open`).
    pub(crate) fn raise_next_id(&self, floor: u64) -> Result<()> {
        let current: u64 = self
            .meta(NEXT_ID)?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if floor > current {
            self.set_meta(NEXT_ID, &floor.to_string())?;
        }
        Ok(())
    }

    /// Records that the store now holds the current format (after a rebuild cleared it).
    pub(crate) fn mark_current_version(&self) -> Result<()> {
        self.conn().execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('format_version', ?1)",
            [INDEX_FORMAT_VERSION],
        )?;
        Ok(())
    }

    pub(crate) fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A connection for a read that does not follow a write of this process (what the tools
    /// ask): it runs beside other reads and beside the writer.
    pub(crate) fn reader(&self) -> Reader<'_> {
        match self.readers.open() {
            Some(conn) => Reader::Pooled(Some(conn), &self.readers),
            None => Reader::Writer(self.conn()),
        }
    }

    /// Every stored file, by path.
    pub(crate) fn file_states(&self) -> Result<HashMap<String, FileState>> {
        let conn = self.conn();
        let mut stmt = conn.prepare("SELECT path, id, size, modified_at, hash, dirty FROM docs")?;
        let rows = stmt.query_map([], state_row)?;
        let mut out = HashMap::new();
        for row in rows {
            let (path, state) = row?;
            out.insert(path, state);
        }
        Ok(out)
    }

    /// The stored files at these exact paths and below these directories (`dir/…`), by path.
    pub(crate) fn file_states_in(
        &self,
        exact: &[String],
        dirs: &[String],
    ) -> Result<HashMap<String, FileState>> {
        let conn = self.conn();
        let mut out = HashMap::new();
        let mut one = conn.prepare_cached(
            "SELECT path, id, size, modified_at, hash, dirty FROM docs WHERE path = ?1",
        )?;
        for p in exact {
            if let Some((path, state)) = one.query_row([p], state_row).optional()? {
                out.insert(path, state);
            }
        }
        let mut under = conn.prepare_cached(
            "SELECT path, id, size, modified_at, hash, dirty FROM docs WHERE path >= ?1 AND path < ?2",
        )?;
        for d in dirs {
            let d = d.trim_end_matches('/');
            let (lo, hi) = (format!("{d}/"), format!("{d}0"));
            for r in under.query_map([lo, hi], state_row)? {
                let (path, state) = r?;
                out.insert(path, state);
            }
        }
        Ok(out)
    }

    /// The content hashes of these documents (ids not stored are left out).
    pub(crate) fn hashes(&self, ids: &[u64]) -> Result<HashMap<u64, String>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT hash FROM docs WHERE id = ?1")?;
        let mut out = HashMap::new();
        for id in ids {
            if let Some(h) = stmt
                .query_row([*id as i64], |r| r.get::<_, String>(0))
                .optional()?
            {
                out.insert(*id, h);
            }
        }
        Ok(out)
    }

    /// A value of the `meta` table.
    pub(crate) fn meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn()
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    /// Sets a value of the `meta` table.
    pub(crate) fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.conn().execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
            params![key, value],
        )?;
        Ok(())
    }

    /// Documents indexed by name only, counted by skip-reason code.
    pub(crate) fn skip_counts(&self) -> Result<Vec<(String, u64)>> {
        let conn = self.reader();
        let mut stmt = conn.prepare(
            "SELECT skip_reason, COUNT(*) FROM docs WHERE skip_reason IS NOT NULL GROUP BY skip_reason",
        )?;
        let mut by_code: HashMap<String, u64> = HashMap::new();
        for r in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
            let (reason, n) = r?;
            let code = reason.split(':').next().unwrap_or("").trim().to_string();
            *by_code.entry(code).or_default() += n as u64;
        }
        let mut out: Vec<(String, u64)> = by_code.into_iter().collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(out)
    }

    /// Writes a batch of documents (dirty) in one transaction and returns their ids, in order.
    #[cfg(test)]
    pub(crate) fn upsert_batch(&self, docs: &[&NewDoc], now: i64) -> Result<Vec<u64>> {
        Ok(self
            .upsert_batch_marked(&docs.iter().map(|d| (*d, false)).collect::<Vec<_>>(), now)?
            .into_iter()
            .map(|(id, _)| id)
            .collect())
    }

    /// Writes a batch of documents (dirty) in one transaction and returns their ids, in order,
    /// each with `true` when the id is new: given now, so no index has ever held it.
    /// Writes documents as dirty rows in one transaction; returns each one's id and whether
    /// the id is new. A document flagged `known_new` is a path the store does not hold (the
    /// sync saw no row for it): it is inserted without looking for one.
    pub(crate) fn upsert_batch_marked(
        &self,
        docs: &[(&NewDoc, bool)],
        now: i64,
    ) -> Result<Vec<(u64, bool)>> {
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        let mut ids = Vec::with_capacity(docs.len());
        // Ids are handed out from a counter that only grows: a deleted file's id is never given
        // to another file, so an agent's stale id answers DOC_NOT_FOUND, never someone else's
        // document.
        let mut next: i64 = {
            let recorded: i64 = tx
                .query_row("SELECT value FROM meta WHERE key = ?1", [NEXT_ID], |r| {
                    r.get::<_, String>(0)
                })
                .optional()?
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let max: i64 =
                tx.query_row("SELECT COALESCE(MAX(id), 0) FROM docs", [], |r| r.get(0))?;
            recorded.max(max + 1)
        };
        {
            const COLUMNS: &str = "path, doc_type, size, modified_at, hash, title, word_count, \
                 char_count, total_lines, outline, keywords, abstract, skip_reason, encoding, \
                 indexed_at, dirty, id";
            const VALUES: &str =
                "?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, 1, ?16";
            let mut existing = tx.prepare_cached("SELECT id FROM docs WHERE path = ?1")?;
            let mut insert =
                tx.prepare_cached(&format!("INSERT INTO docs ({COLUMNS}) VALUES ({VALUES})"))?;
            let mut upsert = tx.prepare_cached(&format!(
                "INSERT INTO docs ({COLUMNS}) VALUES ({VALUES}) \
                 ON CONFLICT(path) DO UPDATE SET doc_type = excluded.doc_type, size = excluded.size, \
                 modified_at = excluded.modified_at, hash = excluded.hash, title = excluded.title, \
                 word_count = excluded.word_count, char_count = excluded.char_count, \
                 total_lines = excluded.total_lines, outline = excluded.outline, \
                 keywords = excluded.keywords, abstract = excluded.abstract, \
                 skip_reason = excluded.skip_reason, encoding = excluded.encoding, \
                 indexed_at = excluded.indexed_at, dirty = 1 \
                 RETURNING id"
            ))?;
            // `OR REPLACE`: an orphan text left under a new id (it cannot be, but) is replaced.
            let mut content =
                tx.prepare_cached("INSERT OR REPLACE INTO content (id, text) VALUES (?1, ?2)")?;
            for &(d, known_new) in docs {
                let outline = serde_json::to_string(&d.outline)?;
                let keywords = serde_json::to_string(&d.keywords)?;
                // A known path keeps its id (NULL: the row's own); a new one takes the next.
                let held = if known_new {
                    false
                } else {
                    existing
                        .query_row([&d.path], |r| r.get::<_, i64>(0))
                        .optional()?
                        .is_some()
                };
                let new_id: Option<i64> = match (held, d.id) {
                    (true, _) => None,
                    (false, Some(id)) => {
                        next = next.max(id as i64 + 1);
                        Some(id as i64)
                    }
                    (false, None) => {
                        next += 1;
                        Some(next - 1)
                    }
                };
                let values = params![
                    d.path,
                    d.doc_type.as_str(),
                    d.size as i64,
                    d.modified_at,
                    d.hash,
                    d.title,
                    d.word_count as i64,
                    d.char_count as i64,
                    d.total_lines as i64,
                    outline,
                    keywords,
                    d.abstract_text,
                    d.skip_reason,
                    d.encoding,
                    now,
                    new_id,
                ];
                let id: i64 = match new_id {
                    // A path the store does not hold, under an id no row has: a plain insert,
                    // which needs no statement journal.
                    Some(id) if known_new || d.id.is_none() => {
                        insert.execute(values)?;
                        id
                    }
                    _ => upsert.query_row(values, |r| r.get(0))?,
                };
                content.execute(params![id, d.text])?;
                ids.push((id as u64, new_id.is_some()));
            }
        }
        tx.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
            params![NEXT_ID, next.to_string()],
        )?;
        tx.commit()?;
        Ok(ids)
    }

    /// Moves the WAL's checkpoints off the writer while the returned guard lives: a thread of
    /// its own copies committed pages into the database every [`CHECKPOINT_EVERY`] (its
    /// writes and their syncs overlap the sync's work), and the writer's own automatic
    /// checkpoint, which would stop it for each one, is off. Dropping the guard stops the
    /// thread and turns the automatic checkpoint back on. Without a thread (none could start,
    /// or the database cannot be opened again), the writer checkpoints as usual.
    pub(crate) fn background_checkpoints(&self) -> Checkpoints<'_> {
        let path = self.readers.path.clone();
        let stop = std::sync::Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        let thread = Connection::open(&path).ok().and_then(|conn| {
            conn.busy_timeout(std::time::Duration::from_secs(1)).ok()?;
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("linkly-checkpoint".into())
                .spawn(move || {
                    let (stopped, wake) = &*stop;
                    let mut guard = stopped.lock().unwrap_or_else(|e| e.into_inner());
                    while !*guard {
                        guard = wake
                            .wait_timeout(guard, CHECKPOINT_EVERY)
                            .unwrap_or_else(|e| e.into_inner())
                            .0;
                        if *guard {
                            break;
                        }
                        drop(guard);
                        if let Err(e) =
                            conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                        {
                            tracing::debug!(error = %e, "background checkpoint");
                        }
                        guard = stopped.lock().unwrap_or_else(|e| e.into_inner());
                    }
                })
                .ok()
        });
        if thread.is_some() {
            let _ = self.conn().pragma_update(None, "wal_autocheckpoint", 0);
        }
        Checkpoints {
            store: self,
            stop,
            thread,
        }
    }

    /// Records a new modification time for files whose bytes did not change.
    pub(crate) fn touch(&self, updates: &[(u64, i64)]) -> Result<()> {
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        {
            let mut stmt = tx.prepare_cached("UPDATE docs SET modified_at = ?2 WHERE id = ?1")?;
            for (id, mtime) in updates {
                stmt.execute(params![*id as i64, mtime])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Clears the dirty flag once the lexical index holds these documents: one statement per
    /// run of consecutive ids (a first index numbers its documents in a row).
    pub(crate) fn mark_clean(&self, ids: &[u64]) -> Result<()> {
        let mut sorted = ids.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        {
            let mut stmt =
                tx.prepare_cached("UPDATE docs SET dirty = 0 WHERE id BETWEEN ?1 AND ?2")?;
            let mut run = sorted.iter().copied().peekable();
            while let Some(first) = run.next() {
                let mut last = first;
                while let Some(next) = run.next_if(|&n| n == last + 1) {
                    last = next;
                }
                stmt.execute(params![first as i64, last as i64])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Removes documents and their text.
    pub(crate) fn delete(&self, ids: &[u64]) -> Result<()> {
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        {
            let mut docs = tx.prepare_cached("DELETE FROM docs WHERE id = ?1")?;
            let mut content = tx.prepare_cached("DELETE FROM content WHERE id = ?1")?;
            let mut tags = tx.prepare_cached("DELETE FROM doc_tags WHERE doc_id = ?1")?;
            let mut stamps = tx.prepare_cached("DELETE FROM doc_tag_stamps WHERE doc_id = ?1")?;
            for id in ids {
                docs.execute([*id as i64])?;
                content.execute([*id as i64])?;
                tags.execute([*id as i64])?;
                stamps.execute([*id as i64])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// One document's record.
    pub(crate) fn get(&self, id: DocId) -> Result<Option<DocRecord>> {
        let conn = self.reader();
        let sql = format!("SELECT {RECORD_COLUMNS} FROM docs WHERE id = ?1");
        conn.query_row(&sql, [id.0 as i64], read_record)
            .optional()?
            .transpose()
    }

    /// The record of the document at a path.
    pub(crate) fn get_by_path(&self, path: &str) -> Result<Option<DocRecord>> {
        let conn = self.reader();
        let sql = format!("SELECT {RECORD_COLUMNS} FROM docs WHERE path = ?1");
        conn.query_row(&sql, [path], read_record)
            .optional()?
            .transpose()
    }

    /// Records for several ids (missing ids are left out), in the order given.
    pub(crate) fn get_many(&self, ids: &[u64]) -> Result<Vec<DocRecord>> {
        let conn = self.reader();
        let sql = format!("SELECT {RECORD_COLUMNS} FROM docs WHERE id = ?1");
        let mut stmt = conn.prepare_cached(&sql)?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(rec) = stmt.query_row([*id as i64], read_record).optional()? {
                out.push(rec?);
            }
        }
        Ok(out)
    }

    /// Every record, ordered by path.
    pub(crate) fn all(&self) -> Result<Vec<DocRecord>> {
        let conn = self.reader();
        let sql = format!("SELECT {RECORD_COLUMNS} FROM docs ORDER BY path");
        let mut stmt = conn.prepare(&sql)?;
        let rows = stmt.query_map([], read_record)?;
        let mut out = Vec::new();
        for row in rows {
            out.push(row??);
        }
        Ok(out)
    }

    /// The extracted text of a document.
    pub(crate) fn content(&self, id: DocId) -> Result<Option<String>> {
        let conn = self.reader();
        conn.query_row(
            "SELECT text FROM content WHERE id = ?1",
            [id.0 as i64],
            |r| Ok(StoredText::decode(r.get_ref(0)?)),
        )
        .optional()?
        .transpose()
    }

    /// The number of documents.
    pub(crate) fn count(&self) -> Result<u64> {
        let conn = self.reader();
        Ok(conn.query_row("SELECT COUNT(*) FROM docs", [], |r| r.get::<_, i64>(0))? as u64)
    }

    /// Forgets what every stored file looked like (its time stamp and content hash), so that
    /// the next sync reads and extracts every file again. Returns how many files.
    pub(crate) fn forget_file_states(&self) -> Result<u64> {
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        let n = tx.execute("UPDATE docs SET modified_at = -1, hash = ''", [])?;
        tx.commit()?;
        Ok(n as u64)
    }

    /// Ids of rows still marked dirty.
    pub(crate) fn dirty_ids(&self) -> Result<HashSet<u64>> {
        select_ids(&self.conn(), "SELECT id FROM docs WHERE dirty = 1")
    }
}

/// A `(path, FileState)` from `SELECT path, id, size, modified_at, hash, dirty`.
fn state_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(String, FileState)> {
    Ok((
        r.get::<_, String>(0)?,
        FileState {
            id: r.get::<_, i64>(1)? as u64,
            size: r.get::<_, i64>(2)? as u64,
            modified_at: r.get(3)?,
            hash: r.get(4)?,
            dirty: r.get::<_, i64>(5)? != 0,
        },
    ))
}

fn read_record(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<DocRecord>> {
    let doc_type: String = r.get(2)?;
    let outline: String = r.get(9)?;
    let keywords: String = r.get(10)?;
    let build = || -> Result<DocRecord> {
        Ok(DocRecord {
            id: DocId(r.get::<_, i64>(0)? as u64),
            path: r.get(1)?,
            doc_type: DocType::from_token(&doc_type).map_err(|e| Error::Corrupt(e.to_string()))?,
            size: r.get::<_, i64>(3)? as u64,
            modified_at: r.get(4)?,
            title: r.get(5)?,
            word_count: r.get::<_, i64>(6)? as u64,
            char_count: r.get::<_, i64>(7)? as u64,
            total_lines: r.get::<_, i64>(8)? as u32,
            outline: serde_json::from_str(&outline)?,
            keywords: serde_json::from_str(&keywords)?,
            abstract_text: r.get(11)?,
            skip_reason: r.get(12)?,
            encoding: r.get(13)?,
            indexed_at: r.get(14)?,
        })
    };
    Ok(build())
}

/// The ids (first column) of the rows `sql` selects, in its order, collected into `C`.
pub(crate) fn select_ids<C: FromIterator<u64>>(conn: &Connection, sql: &str) -> Result<C> {
    let mut stmt = conn.prepare(sql)?;
    let ids = stmt.query_map([], |r| r.get::<_, i64>(0))?;
    Ok(ids
        .map(|id| id.map(|id| id as u64))
        .collect::<rusqlite::Result<C>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_doc(path: &str, text: &str) -> NewDoc {
        NewDoc {
            id: None,
            path: path.into(),
            doc_type: DocType::Md,
            size: text.len() as u64,
            modified_at: 1_700_000_000_000,
            hash: format!("h:{text}"),
            title: Some(path.rsplit('/').next().unwrap_or(path).into()),
            word_count: linkly_core::word_count(text),
            char_count: linkly_core::char_count(text),
            total_lines: text.lines().count() as u32,
            outline: Vec::new(),
            keywords: vec!["k".into()],
            abstract_text: String::new(),
            skip_reason: None,
            encoding: None,
            text: StoredText::of(text.into()),
        }
    }

    fn open(dir: &tempfile::TempDir) -> Store {
        let (store, mismatch, _) = Store::open(&dir.path().join("store.sqlite"), "").unwrap();
        assert!(!mismatch);
        store
    }

    #[test]
    fn a_path_keeps_its_id_and_rows_are_dirty_until_marked_clean() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _, fresh) = Store::open(&dir.path().join("store.sqlite"), "").unwrap();
        assert!(fresh);
        let a = new_doc("/d/a.md", "alpha\nbeta");
        let b = new_doc("/d/b.md", "gamma");
        let ids = store.upsert_batch(&[&a, &b], 1).unwrap();
        assert_eq!(ids, [1, 2]);
        assert_eq!(store.dirty_ids().unwrap(), HashSet::from([1, 2]));
        store.mark_clean(&ids).unwrap();
        assert!(store.dirty_ids().unwrap().is_empty());

        let a2 = new_doc("/d/a.md", "alpha changed");
        assert_eq!(
            store.upsert_batch(&[&a2], 2).unwrap(),
            [1],
            "same path, same id"
        );
        assert_eq!(store.dirty_ids().unwrap(), HashSet::from([1]));
        let rec = store.get(DocId(1)).unwrap().unwrap();
        assert_eq!((rec.path.as_str(), rec.total_lines), ("/d/a.md", 1));
        assert_eq!(
            store.content(DocId(1)).unwrap().as_deref(),
            Some("alpha changed")
        );
        assert_eq!(store.get_by_path("/d/b.md").unwrap().unwrap().id, DocId(2));
        let states = store.file_states().unwrap();
        assert_eq!(states["/d/a.md"].hash, "h:alpha changed");
        assert!(states["/d/a.md"].dirty && !states["/d/b.md"].dirty);
        assert_eq!(store.count().unwrap(), 2);
    }

    #[test]
    fn ids_are_never_recycled() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        let ids = store
            .upsert_batch(&[&new_doc("/d/a.md", "a"), &new_doc("/d/b.md", "b")], 1)
            .unwrap();
        store.delete(&[ids[1]]).unwrap();
        assert!(store.get(DocId(ids[1])).unwrap().is_none());
        assert!(store.content(DocId(ids[1])).unwrap().is_none());
        // The largest id was deleted: the next file still takes a new one.
        assert_eq!(
            store.upsert_batch(&[&new_doc("/d/c.md", "c")], 2).unwrap(),
            [3]
        );
        store.raise_next_id(10).unwrap();
        assert_eq!(
            store.upsert_batch(&[&new_doc("/d/d.md", "d")], 3).unwrap(),
            [10]
        );
        assert_eq!(store.ids().unwrap(), [1, 3, 10]);
        // Ids survive a reopen.
        drop(store);
        let store = open(&dir);
        assert_eq!(
            store.upsert_batch(&[&new_doc("/d/e.md", "e")], 4).unwrap(),
            [11]
        );
    }

    #[test]
    fn many_openers_of_a_new_store_all_succeed() {
        // `linkly serve` and `linkly status` opening a new data directory at the same moment:
        // the switch to WAL and the schema may meet another opener's lock.
        for round in 0..12 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("store.sqlite");
            let start = std::sync::Arc::new(std::sync::Barrier::new(8));
            let openers: Vec<_> = (0..8)
                .map(|_| {
                    let (path, start) = (path.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        Store::open(&path, "").map(|(_, mismatch, _)| mismatch)
                    })
                })
                .collect();
            for o in openers {
                let opened = o.join().unwrap();
                assert!(
                    matches!(opened, Ok(false)),
                    "round {round}: {:?}",
                    opened.err()
                );
            }
        }
    }

    #[test]
    fn a_store_of_another_format_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.sqlite");
        {
            let (store, _, _) = Store::open(&path, "").unwrap();
            store.set_meta("format_version", "0-old").unwrap();
        }
        let (store, mismatch, fresh) = Store::open(&path, "").unwrap();
        assert!(mismatch && !fresh);
        store.mark_current_version().unwrap();
        drop(store);
        assert!(!Store::open(&path, "").unwrap().1);
    }

    #[test]
    fn filters_and_ranges_read_light_rows() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        let mut skipped = new_doc("/d/sub/x.png", "");
        skipped.doc_type = DocType::Image;
        skipped.skip_reason = Some("empty".into());
        store
            .upsert_batch(&[&new_doc("/d/a.md", "a"), &skipped], 1)
            .unwrap();
        let rows = store.all().unwrap();
        assert_eq!(rows.len(), 2);
        assert!(
            rows.iter()
                .any(|r| r.path == "/d/sub/x.png" && r.doc_type == DocType::Image)
        );
        assert_eq!(store.skip_counts().unwrap(), [("empty".to_string(), 1)]);
        assert_eq!(store.get_many(&[2, 99, 1]).unwrap().len(), 2);
    }
}
