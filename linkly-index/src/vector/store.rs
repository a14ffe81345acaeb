//! The vector store: `vectors.sqlite` beside the metadata store. It is the source of truth for
//! chunk vectors: which documents were embedded (at which content hash), and each chunk's line
//! span and vector (little-endian f32). The in-memory ANN is rebuilt from it at start.
//!
//! Written only by the process that holds the index writer lock; other processes read it and
//! notice changes through SQLite's `data_version`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};

use crate::Result;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS embedded (doc_id INTEGER PRIMARY KEY, hash TEXT NOT NULL, chunks INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks (doc_id);
";

/// One stored chunk.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StoredChunk {
    pub(crate) id: u64,
    pub(crate) doc_id: u64,
    pub(crate) start_line: u32,
    pub(crate) end_line: u32,
    pub(crate) vector: Vec<f32>,
}

/// Stored chunks read in bulk ([`VectorStore::load_rows_after`]): where each came from, and
/// their vectors side by side (no allocation per chunk).
#[derive(Debug, Default)]
pub(crate) struct ChunkRows {
    /// (chunk id, document id, first line, last line), in id order.
    pub(crate) meta: Vec<(u64, u64, u32, u32)>,
    /// `meta.len() × dim` values.
    pub(crate) data: Vec<f32>,
    pub(crate) dim: usize,
}

/// The chunks of one document to write.
pub(crate) struct DocVectors {
    pub(crate) doc_id: u64,
    pub(crate) hash: String,
    pub(crate) chunks: Vec<(u32, u32, Vec<f32>)>,
}

/// How long a statement waits for another process's write.
const BUSY_TIMEOUT_MS: u64 = 10_000;

pub(crate) struct VectorStore {
    conn: Mutex<Connection>,
    /// This store's identity ([`VectorStore::identity`]).
    id: Option<String>,
}

fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// How many chunks a read of those above `after` will find, when that is cheap to know: all
/// of them (SQLite counts a table through its smallest index); 0 otherwise.
fn self_count_hint(conn: &Connection, after: u64) -> usize {
    if after != 0 {
        return 0;
    }
    conn.query_row("SELECT COUNT(*) FROM chunks", [], |r| r.get::<_, i64>(0))
        .map_or(0, |n| n.max(0) as usize)
}

impl VectorStore {
    pub(crate) fn open(path: &Path) -> Result<VectorStore> {
        linkly_core::private_database(path)?;
        let conn = crate::store::retry_while_busy(path, || {
            let conn = Connection::open(path)?;
            conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS))?;
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            // Reading the vectors at a process's first vector search is most of what a CLI
            // search without a server does after loading the model: pages mapped, not copied.
            conn.pragma_update(None, "mmap_size", 1i64 << 30)?;
            conn.execute_batch(SCHEMA)?;
            Ok(conn)
        })?;
        let id = Self::identity(&conn);
        Ok(VectorStore {
            conn: Mutex::new(conn),
            id,
        })
    }

    /// A random id kept in `meta`, made by the first open: chunk ids only grow within one
    /// store, and a store deleted and made again starts them over, so a snapshot of the
    /// vectors names its store too. `None` when it can be neither read nor made (then no
    /// snapshot is used).
    fn identity(conn: &Connection) -> Option<String> {
        let read = || {
            conn.query_row("SELECT value FROM meta WHERE key = 'store_id'", [], |r| {
                r.get::<_, String>(0)
            })
            .optional()
        };
        if let Ok(Some(id)) = read() {
            return Some(id);
        }
        // Made once per store (a store older than this asks here at its next open). A write:
        // while another process writes, it is not waited for; the next open makes it.
        let wait = |ms| conn.busy_timeout(std::time::Duration::from_millis(ms)).ok();
        wait(0)?;
        let made = conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('store_id', lower(hex(randomblob(16))))",
            [],
        );
        wait(BUSY_TIMEOUT_MS)?;
        made.ok()?;
        read().ok().flatten()
    }

    /// Whose vectors a snapshot holds: this store's, of `model`; `None` when this store has
    /// no identity.
    pub(crate) fn snapshot_owner(&self, model: &str) -> Option<String> {
        self.id.as_ref().map(|id| format!("{id} {model}"))
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes when another connection (another process) commits.
    pub(crate) fn data_version(&self) -> Result<i64> {
        Ok(self
            .conn()
            .query_row("PRAGMA data_version", [], |r| r.get(0))?)
    }

    /// The model the stored vectors belong to.
    pub(crate) fn model(&self) -> Result<Option<String>> {
        Ok(self
            .conn()
            .query_row("SELECT value FROM meta WHERE key = 'model'", [], |r| {
                r.get(0)
            })
            .optional()?)
    }

    /// Records the model; vectors of another model are dropped. Returns true when they were.
    pub(crate) fn set_model(&self, key: &str) -> Result<bool> {
        let current = self.model()?;
        if current.as_deref() == Some(key) {
            return Ok(false);
        }
        let mut conn = self.conn();
        let tx = crate::store::write_tx(&mut conn)?;
        tx.execute("DELETE FROM chunks", [])?;
        tx.execute("DELETE FROM embedded", [])?;
        tx.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('model', ?1)",
            [key],
        )?;
        tx.commit()?;
        Ok(current.is_some())
    }

    /// Embedded documents and the content hash they were embedded at.
    pub(crate) fn embedded(&self) -> Result<HashMap<u64, String>> {
        let conn = self.conn();
        let mut stmt = conn.prepare("SELECT doc_id, hash FROM embedded")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)))?;
        let mut out = HashMap::new();
        for row in rows {
            let (id, hash) = row?;
            out.insert(id, hash);
        }
        Ok(out)
    }

    /// Replaces the chunks of documents, in one transaction. Returns the ids of the chunks
    /// removed and the stored new chunks.
    pub(crate) fn write(&self, docs: &[DocVectors]) -> Result<(Vec<u64>, Vec<StoredChunk>)> {
        let mut conn = self.conn();
        let tx = crate::store::write_tx(&mut conn)?;
        let mut removed = Vec::new();
        let mut added = Vec::new();
        {
            let mut old = tx.prepare_cached("SELECT id FROM chunks WHERE doc_id = ?1")?;
            let mut del = tx.prepare_cached("DELETE FROM chunks WHERE doc_id = ?1")?;
            let mut ins = tx.prepare_cached(
                "INSERT INTO chunks (doc_id, start_line, end_line, vector) VALUES (?1, ?2, ?3, ?4) RETURNING id",
            )?;
            let mut mark = tx.prepare_cached(
                "INSERT OR REPLACE INTO embedded (doc_id, hash, chunks) VALUES (?1, ?2, ?3)",
            )?;
            for d in docs {
                let ids = old.query_map([d.doc_id as i64], |r| r.get::<_, i64>(0))?;
                for id in ids {
                    removed.push(id? as u64);
                }
                del.execute([d.doc_id as i64])?;
                for (start, end, v) in &d.chunks {
                    let id: i64 = ins.query_row(
                        params![d.doc_id as i64, *start as i64, *end as i64, to_blob(v)],
                        |r| r.get(0),
                    )?;
                    added.push(StoredChunk {
                        id: id as u64,
                        doc_id: d.doc_id,
                        start_line: *start,
                        end_line: *end,
                        vector: v.clone(),
                    });
                }
                mark.execute(params![d.doc_id as i64, d.hash, d.chunks.len() as i64])?;
            }
        }
        tx.commit()?;
        Ok((removed, added))
    }

    /// Forgets documents (deleted, or changed and waiting to be embedded again). Returns the ids
    /// of the chunks removed.
    pub(crate) fn remove(&self, doc_ids: &[u64]) -> Result<Vec<u64>> {
        let mut conn = self.conn();
        let tx = crate::store::write_tx(&mut conn)?;
        let mut removed = Vec::new();
        {
            let mut old = tx.prepare_cached("SELECT id FROM chunks WHERE doc_id = ?1")?;
            let mut del = tx.prepare_cached("DELETE FROM chunks WHERE doc_id = ?1")?;
            let mut unmark = tx.prepare_cached("DELETE FROM embedded WHERE doc_id = ?1")?;
            for id in doc_ids {
                let ids = old.query_map([*id as i64], |r| r.get::<_, i64>(0))?;
                for c in ids {
                    removed.push(c? as u64);
                }
                del.execute([*id as i64])?;
                unmark.execute([*id as i64])?;
            }
        }
        tx.commit()?;
        Ok(removed)
    }

    /// The chunks with an id above `after`, in id order, the vectors decoded straight into
    /// one array.
    /// Chunks whose vector has another width than the first one's are left out.
    pub(crate) fn load_rows_after(&self, after: u64) -> Result<ChunkRows> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT id, doc_id, start_line, end_line, vector FROM chunks WHERE id > ?1 ORDER BY id",
        )?;
        let mut rows = stmt.query([after as i64])?;
        let mut out = ChunkRows::default();
        while let Some(r) = rows.next()? {
            let blob = r.get_ref(4)?.as_blob().map_err(|e| {
                rusqlite::Error::FromSqlConversionFailure(4, rusqlite::types::Type::Blob, e.into())
            })?;
            if blob.is_empty() || blob.len() % 4 != 0 {
                continue;
            }
            let dim = blob.len() / 4;
            if out.meta.is_empty() {
                out.dim = dim;
                let hint = self_count_hint(&conn, after);
                out.meta.reserve(hint);
                out.data.reserve(hint * dim);
            }
            if dim != out.dim {
                continue;
            }
            out.meta.push((
                r.get::<_, i64>(0)? as u64,
                r.get::<_, i64>(1)? as u64,
                r.get::<_, i64>(2)? as u32,
                r.get::<_, i64>(3)? as u32,
            ));
            out.data.extend(
                blob.chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            );
        }
        Ok(out)
    }

    /// The chunks of one document with the content hash it was embedded at, in line order;
    /// `None` when it has no vectors.
    pub(crate) fn doc_chunks(&self, doc_id: u64) -> Result<Option<(String, Vec<StoredChunk>)>> {
        let conn = self.conn();
        let hash: Option<String> = conn
            .query_row(
                "SELECT hash FROM embedded WHERE doc_id = ?1",
                [doc_id as i64],
                |r| r.get(0),
            )
            .optional()?;
        let Some(hash) = hash else {
            return Ok(None);
        };
        let mut stmt = conn.prepare_cached(
            "SELECT id, start_line, end_line, vector FROM chunks WHERE doc_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([doc_id as i64], |r| {
            let blob: Vec<u8> = r.get(3)?;
            Ok(StoredChunk {
                id: r.get::<_, i64>(0)? as u64,
                doc_id,
                start_line: r.get::<_, i64>(1)? as u32,
                end_line: r.get::<_, i64>(2)? as u32,
                vector: blob
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            })
        })?;
        let mut chunks = Vec::new();
        for row in rows {
            chunks.push(row?);
        }
        Ok(Some((hash, chunks)))
    }

    /// Every chunk id.
    pub(crate) fn chunk_ids(&self) -> Result<Vec<u64>> {
        crate::store::select_ids(&self.conn(), "SELECT id FROM chunks")
    }

    /// The key of a snapshot of the stored chunks as they are now, for `owner`
    /// ([`VectorStore::snapshot_owner`], [`crate::vector::ann::Ann::snapshot_key`]).
    pub(crate) fn snapshot_key(&self, owner: &str) -> Result<String> {
        let (count, max, sum): (i64, i64, i64) = self.conn().query_row(
            // SUM fails past 2^63 (ids would have to average 10^9 over 10^9 chunks): then
            // there is no key, and no snapshot.
            "SELECT COUNT(*), COALESCE(MAX(id), 0), COALESCE(SUM(id), 0) FROM chunks",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        Ok(crate::vector::ann::snapshot_key(
            owner,
            count as u64,
            max as u64,
            sum as u64,
        ))
    }

    /// The number of stored chunks.
    pub(crate) fn chunk_count(&self) -> Result<u64> {
        Ok(self
            .conn()
            .query_row("SELECT COUNT(*) FROM chunks", [], |r| r.get::<_, i64>(0))?
            as u64)
    }
}
