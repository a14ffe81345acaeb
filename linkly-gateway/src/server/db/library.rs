//! What the tools read of one published library at its visible version: its state, its
//! documents' rows, their texts, its posting lists and its nearest chunks. Every read names
//! the version, so a library's reads during a publish keep seeing the version they started
//! with (see `super::documents`).

use super::documents::{PostingList, decode_postings, visible};
use super::rows::{FromRow, Row, Val};
use super::{Db, Tx};
use crate::model::LibraryKey;
use crate::{GatewayError, Result};

/// A library as its searches need it: which version they read and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryState {
    /// Its id.
    pub id: i64,
    /// The visible version (the last publish committed; 0 before any).
    pub version: i64,
    /// Its live documents.
    pub doc_count: u64,
    /// The first segment of its documents' paths, sorted.
    pub roots: Vec<String>,
    /// The model of its vectors, when it has some.
    pub vector_model: Option<String>,
    /// Their width.
    pub vector_dim: usize,
    /// Its chunks of that model.
    pub chunk_count: u64,
}

impl FromRow for LibraryState {
    fn from_row(row: &Row) -> Result<LibraryState> {
        let roots: String = row.get("roots")?;
        Ok(LibraryState {
            id: row.get("id")?,
            version: row.get("version")?,
            doc_count: row.get("doc_count")?,
            roots: roots
                .split('\n')
                .filter(|r| !r.is_empty())
                .map(str::to_string)
                .collect(),
            vector_model: row.get("vector_model")?,
            vector_dim: row.get::<u64>("vector_dim")? as usize,
            chunk_count: row.get("chunk_count")?,
        })
    }
}

/// A document's row, without its text (paths as published: relative, without a leading `/`).
#[derive(Debug, Clone, PartialEq)]
pub struct DocRow {
    /// Its number in the library.
    pub doc_id: i64,
    /// Its path.
    pub path: String,
    /// Its type token.
    pub doc_type: String,
    /// Its source's size.
    pub size: u64,
    /// Its source's modification time, Unix ms.
    pub modified_at: i64,
    /// When the gateway stored it, Unix ms.
    pub indexed_at: i64,
    /// Its declared title.
    pub title: Option<String>,
    /// Its outline, as JSON.
    pub outline: String,
    /// Words of its text.
    pub word_count: u64,
    /// Characters of its text.
    pub char_count: u64,
    /// Lines of its text.
    pub total_lines: u64,
    /// Its keywords, as a JSON array.
    pub keywords: String,
    /// The start of its text.
    pub abstract_text: String,
}

const DOC_COLS: &str = "doc_id, path, doc_type, size, modified_at, indexed_at, title, outline, \
    word_count, char_count, total_lines, keywords, abstract";

impl FromRow for DocRow {
    fn from_row(row: &Row) -> Result<DocRow> {
        Ok(DocRow {
            doc_id: row.get("doc_id")?,
            path: row.get("path")?,
            doc_type: row.get("doc_type")?,
            size: row.get("size")?,
            modified_at: row.get("modified_at")?,
            indexed_at: row.get("indexed_at")?,
            title: row.get("title")?,
            outline: row.get("outline")?,
            word_count: row.get("word_count")?,
            char_count: row.get("char_count")?,
            total_lines: row.get("total_lines")?,
            keywords: row.get("keywords")?,
            abstract_text: row.get("abstract")?,
        })
    }
}

/// What a filter is tested on: a document's number, path, type and time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LightRow {
    /// Its number.
    pub doc_id: i64,
    /// Its path (relative).
    pub path: String,
    /// Its type token.
    pub doc_type: String,
    /// Its modification time.
    pub modified_at: i64,
}

impl FromRow for LightRow {
    fn from_row(row: &Row) -> Result<LightRow> {
        Ok(LightRow {
            doc_id: row.get("doc_id")?,
            path: row.get("path")?,
            doc_type: row.get("doc_type")?,
            modified_at: row.get("modified_at")?,
        })
    }
}

/// What an overview aggregates of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryRow {
    /// The filter's columns.
    pub light: LightRow,
    /// Words of its text.
    pub word_count: u64,
    /// Whether it has an outline.
    pub has_outline: bool,
    /// Its keywords, as a JSON array.
    pub keywords: String,
}

impl FromRow for SummaryRow {
    fn from_row(row: &Row) -> Result<SummaryRow> {
        let outline: String = row.get("outline")?;
        Ok(SummaryRow {
            light: LightRow::from_row(row)?,
            word_count: row.get("word_count")?,
            has_outline: outline.trim() != "[]",
            keywords: row.get("keywords")?,
        })
    }
}

/// One chunk near a query: its document, its cosine similarity and its lines.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Chunk {
    /// Its document's number.
    pub doc_id: i64,
    /// Cosine similarity to the query.
    pub score: f32,
    /// Its first line.
    pub start_line: u32,
    /// Its last line.
    pub end_line: u32,
}

struct Body {
    doc_id: i64,
    body: String,
}

impl FromRow for Body {
    fn from_row(row: &Row) -> Result<Body> {
        Ok(Body {
            doc_id: row.get("doc_id")?,
            body: row.get("body")?,
        })
    }
}

struct Posting {
    term: String,
    docs: Vec<u8>,
}

impl FromRow for Posting {
    fn from_row(row: &Row) -> Result<Posting> {
        Ok(Posting {
            term: row.get("term")?,
            docs: row.get("docs")?,
        })
    }
}

/// A chunk's row on SQLite, whose vectors are scanned here.
struct StoredChunk {
    doc_id: i64,
    start_line: i64,
    end_line: i64,
    embedding: Vec<u8>,
}

impl FromRow for StoredChunk {
    fn from_row(row: &Row) -> Result<StoredChunk> {
        Ok(StoredChunk {
            doc_id: row.get("doc_id")?,
            start_line: row.get("start_line")?,
            end_line: row.get("end_line")?,
            embedding: row.get("embedding")?,
        })
    }
}

struct Near {
    doc_id: i64,
    start_line: i64,
    end_line: i64,
    distance: f64,
}

impl FromRow for Near {
    fn from_row(row: &Row) -> Result<Near> {
        Ok(Near {
            doc_id: row.get("doc_id")?,
            start_line: row.get("start_line")?,
            end_line: row.get("end_line")?,
            distance: row.get("distance")?,
        })
    }
}

impl Near {
    /// The chunk, its cosine similarity from the distance.
    fn chunk(self) -> Chunk {
        Chunk {
            doc_id: self.doc_id,
            score: (1.0 - self.distance) as f32,
            start_line: line(self.start_line),
            end_line: line(self.end_line),
        }
    }
}

fn line(v: i64) -> u32 {
    u32::try_from(v.max(0)).unwrap_or(u32::MAX)
}

impl Db {
    /// A library's state, when it exists.
    pub fn library_state(&self, key: &LibraryKey) -> Result<Option<LibraryState>> {
        self.tx(false, |tx| {
            tx.row(
                "SELECT l.id AS id, l.version AS version, l.doc_count AS doc_count, \
                 l.roots AS roots, l.vector_model AS vector_model, l.vector_dim AS vector_dim, \
                 l.chunk_count AS chunk_count FROM libraries l JOIN users u ON u.id = l.owner_id \
                 WHERE u.name = $1 AND l.slug = $2",
                &[Val::T(key.owner.clone()), Val::T(key.slug.clone())],
            )
        })
    }

    /// The rows of these documents (numbers not in the library are left out), in number
    /// order.
    pub fn doc_rows(&self, lib: &LibraryState, ids: &[i64]) -> Result<Vec<DocRow>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.tx(false, |tx| {
            let sql = format!(
                "SELECT {DOC_COLS} FROM documents WHERE library_id = $1 AND {} AND doc_id {} \
                 ORDER BY doc_id",
                visible(2),
                tx.in_list(3)
            );
            tx.rows(
                &sql,
                &[Val::I(lib.id), Val::I(lib.version), Val::Ints(ids.to_vec())],
            )
        })
    }

    /// The row of the document at a path (relative), if any.
    pub fn doc_row_by_path(&self, lib: &LibraryState, path: &str) -> Result<Option<DocRow>> {
        self.tx(false, |tx| {
            tx.row(
                &format!(
                    "SELECT {DOC_COLS} FROM documents WHERE library_id = $1 AND {} AND path = $3",
                    visible(2)
                ),
                &[
                    Val::I(lib.id),
                    Val::I(lib.version),
                    Val::T(path.to_string()),
                ],
            )
        })
    }

    /// The texts of these documents, in the order asked (`None` for a number not in it).
    pub fn bodies(&self, lib: &LibraryState, ids: &[i64]) -> Result<Vec<Option<String>>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut found: std::collections::HashMap<i64, String> = self
            .tx(false, |tx| {
                let sql = format!(
                    "SELECT doc_id, body FROM documents WHERE library_id = $1 AND {} AND doc_id {}",
                    visible(2),
                    tx.in_list(3)
                );
                tx.rows::<Body>(
                    &sql,
                    &[Val::I(lib.id), Val::I(lib.version), Val::Ints(ids.to_vec())],
                )
            })?
            .into_iter()
            .map(|b| (b.doc_id, b.body))
            .collect();
        Ok(ids.iter().map(|id| found.remove(id)).collect())
    }

    /// Every document's number, path, type and time, in path order.
    pub fn light_rows(&self, lib: &LibraryState) -> Result<Vec<LightRow>> {
        self.tx(false, |tx| {
            tx.rows(
                &format!(
                    "SELECT doc_id, path, doc_type, modified_at FROM documents \
                     WHERE library_id = $1 AND {} ORDER BY path",
                    visible(2)
                ),
                &[Val::I(lib.id), Val::I(lib.version)],
            )
        })
    }

    /// Every document's light facts, in path order.
    pub fn summary_rows(&self, lib: &LibraryState) -> Result<Vec<SummaryRow>> {
        self.tx(false, |tx| {
            tx.rows(
                &format!(
                    "SELECT doc_id, path, doc_type, modified_at, word_count, outline, keywords \
                     FROM documents WHERE library_id = $1 AND {} ORDER BY path",
                    visible(2)
                ),
                &[Val::I(lib.id), Val::I(lib.version)],
            )
        })
    }

    /// The posting lists of these terms (a term no document holds has none): each document's
    /// number and the term's BM25 impact in it.
    pub fn postings(
        &self,
        lib: &LibraryState,
        terms: &[String],
    ) -> Result<Vec<(String, PostingList)>> {
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<Posting> = self.tx(false, |tx| {
            let sql = format!(
                "SELECT term, docs FROM postings WHERE library_id = $1 AND version = $2 \
                 AND term {}",
                tx.in_list(3)
            );
            tx.rows(
                &sql,
                &[
                    Val::I(lib.id),
                    Val::I(lib.version),
                    Val::Texts(terms.to_vec()),
                ],
            )
        })?;
        rows.into_iter()
            .map(|p| {
                let list = decode_postings(&p.docs).ok_or_else(|| {
                    GatewayError::Database(format!(
                        "the posting list of {:?} is damaged ({} bytes)",
                        p.term,
                        p.docs.len()
                    ))
                })?;
                Ok((p.term, list))
            })
            .collect()
    }

    /// The `k` chunks of the model `model` closest to `query` by cosine similarity, best
    /// first, among the documents `allowed` (all without it): exactly, by PostgreSQL's
    /// pgvector in the database, by a scan of the library's vectors on SQLite.
    pub fn nearest_chunks(
        &self,
        lib: &LibraryState,
        model: &str,
        query: &[f32],
        k: usize,
        allowed: Option<&[i64]>,
    ) -> Result<Vec<Chunk>> {
        let hnsw = (lib.chunk_count >= self.hnsw_from()
            && lib.vector_model.as_deref() == Some(model))
        .then(|| hnsw_width(lib.vector_dim))
        .flatten();
        self.tx(false, |tx| {
            if tx.is_pg() {
                nearest_in_postgres(tx, lib, model, query, k, allowed, hnsw)
            } else {
                nearest_by_scan(tx, lib, model, query, k, allowed)
            }
        })
    }

    /// Makes the HNSW index of the vectors of `model` at `width` on PostgreSQL, when missing:
    /// one partial index per model and width over every library's chunks, built without
    /// blocking publishes (`CONCURRENTLY`). Nothing on SQLite, or for a width pgvector's HNSW
    /// cannot index (over 2,000).
    pub fn ensure_hnsw(&self, model: &str, width: usize) -> Result<()> {
        let Some(dim) = hnsw_width(width) else {
            return Ok(());
        };
        let (name, predicate) = hnsw_index(model, dim);
        self.pg_outside_tx(&format!(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON chunks \
             USING hnsw ((embedding::vector({dim})) vector_cosine_ops) WHERE {predicate}"
        ))
    }

    /// After a publish of `library_id` committed: on PostgreSQL, the HNSW index of its vectors'
    /// model is built in the background once the library reaches [`super::HNSW_FROM_CHUNKS`]
    /// chunks of it (until it exists, those searches are exact scans).
    pub(super) fn index_vectors_of(&self, library_id: i64) {
        if !matches!(self.spec(), super::DbSpec::Postgres(_)) {
            return;
        }
        let state = self.tx(false, |tx| {
            tx.row::<LibraryState>(
                "SELECT id, version, doc_count, roots, vector_model, vector_dim, chunk_count \
                 FROM libraries WHERE id = $1",
                &[Val::I(library_id)],
            )
        });
        let Ok(Some(LibraryState {
            vector_model: Some(model),
            vector_dim,
            chunk_count,
            ..
        })) = state
        else {
            return;
        };
        if chunk_count < self.hnsw_from() {
            return;
        }
        let db = self.clone();
        std::thread::spawn(move || {
            if let Err(e) = db.ensure_hnsw(&model, vector_dim) {
                tracing::warn!(%model, error = %e, "building the HNSW index of a model's vectors failed; their searches stay exact scans");
            }
        });
    }
}

/// The width pgvector's HNSW indexes (`vector` up to 2,000 dimensions), as `u32`.
fn hnsw_width(width: usize) -> Option<u32> {
    u32::try_from(width).ok().filter(|w| (1..=2000).contains(w))
}

/// The name of the HNSW index of `model` at `dim` and the predicate of the rows it holds (the
/// queries repeat it word for word, so the planner sees the index applies). The model name is
/// a publisher's text: it is quoted as an SQL literal, and the index is named by its hash.
fn hnsw_index(model: &str, dim: u32) -> (String, String) {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in model.bytes().chain(dim.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let literal = format!("'{}'", model.replace('\'', "''"));
    (
        format!("chunks_hnsw_{h:016x}"),
        format!("model = {literal} AND dim = {dim}"),
    )
}

/// [`Db::nearest_chunks`] on PostgreSQL: exactly, by distance over the library's rows; or,
/// with `hnsw` (the width of the model's HNSW index), through that index: pgvector's iterative
/// scan walks the graph until `k` rows of this library and version (and `allowed`) are found,
/// in relaxed order, and they are then sorted by their exact distance.
fn nearest_in_postgres(
    tx: &mut Tx<'_>,
    lib: &LibraryState,
    model: &str,
    query: &[f32],
    k: usize,
    allowed: Option<&[i64]>,
    hnsw: Option<u32>,
) -> Result<Vec<Chunk>> {
    let mut params = vec![
        Val::I(lib.id),
        Val::I(lib.version),
        Val::V(query.to_vec()),
        Val::I(k as i64),
    ];
    let only = match allowed {
        Some(ids) => {
            params.push(Val::Ints(ids.to_vec()));
            format!(" AND doc_id {}", tx.in_list(params.len()))
        }
        None => String::new(),
    };
    let sql = match hnsw {
        Some(dim) => {
            tx.exec("SET LOCAL hnsw.iterative_scan = relaxed_order", &[])?;
            tx.exec(
                &format!("SET LOCAL hnsw.ef_search = {}", (2 * k).clamp(40, 1000)),
                &[],
            )?;
            let (_, predicate) = hnsw_index(model, dim);
            format!(
                "WITH near AS MATERIALIZED (SELECT doc_id, start_line, end_line, \
                 embedding::vector({dim}) <=> $3::vector({dim}) AS distance FROM chunks \
                 WHERE {predicate} AND library_id = $1 AND {}{only} ORDER BY distance LIMIT $4) \
                 SELECT doc_id, start_line, end_line, distance FROM near ORDER BY distance, doc_id",
                visible(2)
            )
        }
        None => {
            params.push(Val::T(model.to_string()));
            format!(
                "SELECT doc_id, start_line, end_line, embedding <=> $3 AS distance FROM chunks \
                 WHERE library_id = $1 AND {} AND model = ${}{only} \
                 ORDER BY distance, doc_id LIMIT $4",
                visible(2),
                params.len()
            )
        }
    };
    let rows: Vec<Near> = tx.rows(&sql, &params)?;
    Ok(rows.into_iter().map(Near::chunk).collect())
}

fn nearest_by_scan(
    tx: &mut Tx<'_>,
    lib: &LibraryState,
    model: &str,
    query: &[f32],
    k: usize,
    allowed: Option<&[i64]>,
) -> Result<Vec<Chunk>> {
    let allowed: Option<std::collections::HashSet<i64>> =
        allowed.map(|a| a.iter().copied().collect());
    let rows: Vec<StoredChunk> = tx.rows(
        &format!(
            "SELECT doc_id, start_line, end_line, embedding FROM chunks \
             WHERE library_id = $1 AND {} AND model = $3",
            visible(2)
        ),
        &[
            Val::I(lib.id),
            Val::I(lib.version),
            Val::T(model.to_string()),
        ],
    )?;
    let norm = |v: &mut dyn Iterator<Item = f32>| v.map(|x| x * x).sum::<f32>().sqrt();
    let qn = norm(&mut query.iter().copied()).max(f32::MIN_POSITIVE);
    let mut scored: Vec<Chunk> = rows
        .into_iter()
        .filter(|r| allowed.as_ref().is_none_or(|a| a.contains(&r.doc_id)))
        .filter(|r| r.embedding.len() == query.len() * 4)
        .map(|r| {
            let values = r
                .embedding
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            let (mut dot, mut sq) = (0f32, 0f32);
            for (x, q) in values.zip(query) {
                dot += x * q;
                sq += x * x;
            }
            Chunk {
                doc_id: r.doc_id,
                score: dot / (sq.sqrt().max(f32::MIN_POSITIVE) * qn),
                start_line: line(r.start_line),
                end_line: line(r.end_line),
            }
        })
        .collect();
    scored.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc_id.cmp(&b.doc_id)));
    scored.truncate(k);
    Ok(scored)
}
