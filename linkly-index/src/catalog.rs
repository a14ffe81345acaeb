//! The catalog: queries over the metadata store that enumerate documents without full-text
//! matching — paged listings with stable sorts, counts, light per-document summaries and
//! paths — for `list`, `explore`, `find_paths` and `list_libraries`.
//!
//! Which documents a query covers is a [`DocFilter`], compiled to SQL (`crate::filter`):
//! directory restrictions are path ranges, which SQLite answers from the unique index on
//! `path`. Sorts have their own indexes
//! (modification time both ways, file name), each continuing with the full path, so
//! `ORDER BY … LIMIT … OFFSET …` pages are stable and never skip or repeat a row, and holding
//! every filtered column (path, type, time), so that skipping 90,000 rows reads no table row.

use linkly_core::{DocId, DocType};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, params_from_iter};

use crate::filter::{DocFilter, IdSet, dir_range};
use crate::store::{DocRecord, Store};
use crate::{Index, Result};

/// The file name of `path`, as an SQL expression (the part after the last `/`).
const NAME_EXPR: &str = "substr(path, length(rtrim(path, replace(path, '/', ''))) + 1)";

/// A selection of at least 1/`BROAD` of all documents is paged along the sort's index.
const BROAD: u64 = 10;

/// Creates the catalog's indexes if they are missing (once per store; cheap afterwards): the
/// three sorts', one on the type (the counts by type) and one holding only the skipped files
/// (their counts by reason and the list of them), so that the window's overview reads no table
/// row: at 100,000 documents its queries took 25 and 30 ms by scanning, 5 and under 1 with
/// these (built in 0.1 s after a first index).
pub(crate) fn ensure_indexes(store: &Store) -> Result<()> {
    store.conn().execute_batch(&indexes_sql())?;
    Ok(())
}

/// The SQL that creates the catalog's indexes where they are missing ([`ensure_indexes`]; the
/// store's open runs it too, among the steps it retries while another opener holds the lock).
pub(crate) fn indexes_sql() -> String {
    format!(
        "CREATE INDEX IF NOT EXISTS catalog_oldest ON docs(modified_at, path, doc_type);
         CREATE INDEX IF NOT EXISTS catalog_recent ON docs(modified_at DESC, path, doc_type);
         CREATE INDEX IF NOT EXISTS catalog_name ON docs({NAME_EXPR}, path, doc_type, modified_at);
         CREATE INDEX IF NOT EXISTS catalog_type ON docs(doc_type);
         CREATE INDEX IF NOT EXISTS catalog_skipped ON docs(skip_reason, path, doc_type)
             WHERE skip_reason IS NOT NULL;"
    )
}

/// Drops the catalog's indexes, for a first index of many documents: inserting into three
/// indexes keyed by path in random order cost a sync more than its inserts otherwise, and
/// building them afterwards from sorted rows takes a second per 100,000 documents.
/// [`ensure_indexes`] puts them back (a sync does it when it ends, whatever happened, and
/// every open of the index does it too, so a crash in between loses nothing); catalog queries
/// run meanwhile, by scanning.
pub(crate) fn drop_indexes(store: &Store) -> Result<()> {
    store.conn().execute_batch(
        "DROP INDEX IF EXISTS catalog_oldest;
         DROP INDEX IF EXISTS catalog_recent;
         DROP INDEX IF EXISTS catalog_name;
         DROP INDEX IF EXISTS catalog_type;
         DROP INDEX IF EXISTS catalog_skipped;",
    )?;
    Ok(())
}

/// The order of a catalog page. Every order ends with the full path (A→Z by code point).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CatalogSort {
    /// Newest modification first.
    #[default]
    Recent,
    /// Oldest modification first.
    Oldest,
    /// File name A→Z by code point.
    Name,
}

/// One page of a catalog listing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CatalogPage {
    /// Documents in the whole filtered set.
    pub total: u64,
    /// The page, in order.
    pub docs: Vec<DocRecord>,
}

/// The light facts of a document that overviews aggregate.
#[derive(Debug, Clone, PartialEq)]
pub struct DocSummary {
    /// The document.
    pub id: DocId,
    /// The absolute path.
    pub path: String,
    /// The document type.
    pub doc_type: DocType,
    /// Words of the extracted text.
    pub word_count: u64,
    /// Modification time, Unix ms.
    pub modified_at: i64,
    /// Whether the document has an outline.
    pub has_outline: bool,
    /// The document's keywords, computed at index time.
    pub keywords: Vec<String>,
    /// Whether the document is indexed by name only.
    pub skipped: bool,
}

/// A document indexed by name only, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedDoc {
    /// The document.
    pub id: DocId,
    /// The absolute path.
    pub path: String,
    /// The document type.
    pub doc_type: DocType,
    /// The skip-reason code (`linkly_core::SkipReason::CODES`).
    pub code: String,
    /// What the extractor said, after the code (may be empty).
    pub detail: String,
}

fn count(conn: &Connection, f: &DocFilter) -> Result<u64> {
    let (clause, params) = f.where_clause();
    let sql = format!("SELECT COUNT(*) FROM docs WHERE {clause}");
    let n: i64 = conn.query_row(&sql, params_from_iter(params), |r| r.get(0))?;
    Ok(n as u64)
}

impl Index {
    /// How many documents a filter covers.
    pub fn catalog_count(&self, filter: &DocFilter) -> Result<u64> {
        count(&self.store.reader(), filter)
    }

    /// One page of the documents a filter covers, in a stable order, with the total.
    pub fn catalog_page(
        &self,
        filter: &DocFilter,
        sort: CatalogSort,
        limit: usize,
        offset: usize,
    ) -> Result<CatalogPage> {
        let (total, ids) = {
            let conn = self.store.reader();
            let total = count(&conn, filter)?;
            if offset as u64 >= total || limit == 0 {
                return Ok(CatalogPage {
                    total,
                    docs: Vec::new(),
                });
            }
            let (order, index) = match sort {
                CatalogSort::Recent => ("modified_at DESC, path".to_string(), "catalog_recent"),
                CatalogSort::Oldest => ("modified_at, path".to_string(), "catalog_oldest"),
                CatalogSort::Name => (format!("{NAME_EXPR}, path"), "catalog_name"),
            };
            // A broad selection walks the sort's index (no sort step; rows come in page
            // order); a narrow one is left to the planner (the path range, then a small sort).
            // Without statistics SQLite takes every range for a narrow one.
            let all: i64 = conn.query_row("SELECT COUNT(*) FROM docs", [], |r| r.get(0))?;
            let indexed_by = if total.saturating_mul(BROAD) >= all as u64 {
                format!("INDEXED BY {index}")
            } else {
                String::new()
            };
            let (clause, mut params) = filter.where_clause();
            params.push(SqlValue::Integer(limit as i64));
            params.push(SqlValue::Integer(offset as i64));
            let sql = format!(
                "SELECT id FROM docs {indexed_by} WHERE {clause} ORDER BY {order} LIMIT ?{} OFFSET ?{}",
                params.len() - 1,
                params.len()
            );
            let mut stmt = conn.prepare(&sql)?;
            let rows = stmt.query_map(params_from_iter(params), |r| r.get::<_, i64>(0))?;
            let mut ids = Vec::new();
            for id in rows {
                ids.push(id? as u64);
            }
            (total, ids)
        };
        Ok(CatalogPage {
            total,
            docs: self.store.get_many(&ids)?,
        })
    }

    /// The light facts of every document a filter covers, ordered by path.
    pub fn catalog_summaries(&self, filter: &DocFilter) -> Result<Vec<DocSummary>> {
        let conn = self.store.reader();
        let (clause, params) = filter.where_clause();
        let sql = format!(
            "SELECT id, path, doc_type, word_count, modified_at, outline != '[]', keywords, \
             skip_reason IS NOT NULL FROM docs WHERE {clause} ORDER BY path"
        );
        let mut stmt = conn.prepare(&sql)?;
        let mut rows = stmt.query(params_from_iter(params))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let doc_type: String = r.get(2)?;
            let keywords: String = r.get(6)?;
            out.push(DocSummary {
                id: DocId(r.get::<_, i64>(0)? as u64),
                path: r.get(1)?,
                doc_type: DocType::from_token(&doc_type).unwrap_or(DocType::Txt),
                word_count: r.get::<_, i64>(3)? as u64,
                modified_at: r.get(4)?,
                has_outline: r.get(5)?,
                keywords: serde_json::from_str(&keywords).unwrap_or_default(),
                skipped: r.get(7)?,
            });
        }
        Ok(out)
    }

    /// How many documents of each type the index holds, the most common first (answered from
    /// the catalog's covering index, no table row read).
    pub fn type_counts(&self) -> Result<Vec<(DocType, u64)>> {
        let conn = self.store.reader();
        let mut stmt = conn.prepare("SELECT doc_type, COUNT(*) FROM docs GROUP BY doc_type")?;
        let mut out = Vec::new();
        for r in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
            let (token, n) = r?;
            if let Ok(t) = DocType::from_token(&token) {
                out.push((t, n as u64));
            }
        }
        out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.as_str().cmp(b.0.as_str())));
        Ok(out)
    }

    /// Documents indexed by name only, grouped by skip-reason code (the stored reason's part
    /// before `:`) and ordered by path within a code: at most `per_code` of each code.
    pub fn skipped_docs(&self, per_code: usize) -> Result<Vec<SkippedDoc>> {
        let conn = self.store.reader();
        let mut stmt = conn.prepare(
            "SELECT id, path, doc_type, skip_reason FROM (
                 SELECT id, path, doc_type, skip_reason, ROW_NUMBER() OVER (
                     PARTITION BY rtrim(substr(skip_reason, 1, instr(skip_reason || ':', ':') - 1))
                     ORDER BY path) AS n
                 FROM docs WHERE skip_reason IS NOT NULL)
             WHERE n <= ?1 ORDER BY skip_reason, path",
        )?;
        let mut out = Vec::new();
        let rows = stmt.query_map([per_code as i64], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
            ))
        })?;
        for r in rows {
            let (id, path, doc_type, reason) = r?;
            let (code, detail) = match reason.split_once(':') {
                Some((c, d)) => (c.trim().to_string(), d.trim().to_string()),
                None => (reason.trim().to_string(), String::new()),
            };
            out.push(SkippedDoc {
                id: DocId(id as u64),
                path,
                doc_type: DocType::from_token(&doc_type).unwrap_or(DocType::Txt),
                code,
                detail,
            });
        }
        out.sort_by(|a, b| a.code.cmp(&b.code).then_with(|| a.path.cmp(&b.path)));
        Ok(out)
    }

    /// The ids of every document a filter covers, from one SQL query (the covering indexes
    /// hold every filtered column, so no table row is read): what a filtered search allows.
    pub(crate) fn filter_ids(&self, filter: &DocFilter) -> Result<IdSet> {
        let conn = self.store.reader();
        let (clause, params) = filter.ids_clause();
        let mut stmt = conn.prepare(&format!("SELECT id FROM docs WHERE {clause}"))?;
        let mut rows = stmt.query(params_from_iter(params))?;
        let mut ids = IdSet::default();
        while let Some(r) = rows.next()? {
            ids.insert(r.get::<_, i64>(0)? as u64);
        }
        Ok(ids)
    }

    /// The path of every document a filter covers, ordered by path.
    pub fn catalog_paths(&self, filter: &DocFilter) -> Result<Vec<String>> {
        let conn = self.store.reader();
        let (clause, params) = filter.where_clause();
        let sql = format!("SELECT path FROM docs WHERE {clause} ORDER BY path");
        let mut stmt = conn.prepare(&sql)?;
        let rows = stmt.query_map(params_from_iter(params), |r| r.get::<_, String>(0))?;
        let mut out = Vec::new();
        for p in rows {
            out.push(p?);
        }
        Ok(out)
    }

    /// The indexed README directly in `dir` (README.md, readme.txt, …; any case), if any.
    pub fn readme_in(&self, dir: &str) -> Result<Option<(DocId, String)>> {
        let conn = self.store.reader();
        let (lo, hi) = dir_range(dir);
        let mut stmt = conn.prepare_cached(
            "SELECT id, path FROM docs WHERE path >= ?1 AND path < ?2 \
             AND instr(substr(path, length(?1) + 1), '/') = 0 \
             AND lower(substr(path, length(?1) + 1)) IN \
             ('readme.md', 'readme.markdown', 'readme.mdx', 'readme.txt', 'readme', \
              'readme.rst', 'readme.html', 'readme.htm') \
             ORDER BY path LIMIT 1",
        )?;
        let mut rows = stmt.query([lo, hi])?;
        Ok(match rows.next()? {
            Some(r) => Some((DocId(r.get::<_, i64>(0)? as u64), r.get(1)?)),
            None => None,
        })
    }
}
