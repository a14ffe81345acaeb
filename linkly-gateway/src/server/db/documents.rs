//! Published documents, stored so that search runs in the database: each library's documents
//! (their text, counts, keywords and full-text terms), their chunks' vectors, and the
//! library's BM25 posting lists.
//!
//! Rows are versioned by publish. A row is born at the publish that wrote it and dies at the
//! one that replaced or removed it; a library shows the rows visible at its `version` (the last
//! publish committed): `born <= version AND (died IS NULL OR died > version)`. A publish
//! ([`Db::begin_publish`], [`Db::stage_documents`], [`Db::commit_publish`]) writes its documents
//! born at its own number, out of sight; its commit marks the rows it replaces or removes,
//! writes the library's posting lists for the new version (BM25 impacts depend on the whole
//! library: IDF and average lengths, [`linkly_index::bm25_impacts_of`]) and only then moves the
//! library's `version` to it. Rows of a publish that never committed are orphans: the next
//! publish of the library deletes them, and undoes the marks of a commit that was cut off
//! before the version moved. A reader that read the version just before a commit still finds
//! its rows: the rows and posting lists of the version before are kept until the next commit.
//!
//! Document numbers (`cloud://<owner>/<slug>/<n>`) are the library's own: a document keeps its
//! number while it stays at its path.

use std::collections::{BTreeSet, HashMap};

use linkly_index::{DocAnalysis, DocTerms};

use super::rows::{FromRow, Row, Val};
use super::{Db, Tx, now_ms, usage};
use crate::model::{ManifestEntry, PublishedDoc};
use crate::{GatewayError, Result};

/// The condition of the rows visible at the version bound as `$n`.
pub(super) fn visible(n: usize) -> String {
    format!("born <= ${n} AND (died IS NULL OR died > ${n})")
}

/// Rows per multi-row `INSERT` (under both backends' limits on parameters).
const INSERT_ROWS: usize = 200;

/// Posting lists per multi-row `INSERT`.
const POSTING_ROWS: usize = 500;

impl Db {
    /// The library's documents by path and hash, in path order.
    pub fn manifest(&self, library_id: i64) -> Result<Vec<ManifestEntry>> {
        self.tx(false, |tx| {
            let version = library_version(tx, library_id, false)?;
            tx.rows(
                &format!(
                    "SELECT path, hash, vector_model FROM documents WHERE library_id = $1 \
                     AND {} ORDER BY path",
                    visible(2)
                ),
                &[Val::I(library_id), Val::I(version)],
            )
        })
    }

    /// Opens a staged publish of a library and returns its number: the documents it is given
    /// ([`Db::stage_documents`]) stay out of sight until [`Db::commit_publish`] applies them
    /// and removes `gone`. Any other open publish of the library is discarded with its staged
    /// documents (a publish cut off, or one a newer one overtakes), and so is every publish
    /// left open longer than [`PUBLISH_TTL_MS`]. `NotFound` for an unknown library.
    pub fn begin_publish(&self, library_id: i64, gone: &[String]) -> Result<i64> {
        let gone =
            serde_json::to_string(gone).map_err(|e| GatewayError::Database(e.to_string()))?;
        self.tx(true, |tx| {
            // Locks the library's row: two publishes starting at once open in turn.
            let version = library_version(tx, library_id, true)?;
            let now = now_ms();
            tx.exec(
                "DELETE FROM publishes WHERE library_id = $1 OR created_at < $2",
                &[Val::I(library_id), Val::I(now - PUBLISH_TTL_MS)],
            )?;
            forget_orphans(tx, library_id, version, None)?;
            tx.value(
                "INSERT INTO publishes (library_id, created_at, gone) VALUES ($1, $2, $3) \
                 RETURNING id",
                &[Val::I(library_id), Val::I(now), Val::T(gone.clone())],
            )
        })
    }

    /// Stages documents for an open publish (a document sent twice keeps its last version);
    /// nothing of them is visible before [`Db::commit_publish`]. `Conflict` when the publish
    /// is no longer open (committed, or discarded by a newer publish of the library);
    /// `Invalid`, with nothing of the batch stored, when a document's vectors are not of the
    /// publish's model and width (the first vectors of a publish set them) or not of the
    /// width of the library's vectors of that model.
    pub fn stage_documents(
        &self,
        library_id: i64,
        publish_id: i64,
        docs: &[PublishedDoc],
    ) -> Result<()> {
        self.stage_documents_within(library_id, publish_id, docs, None)
    }

    /// [`Db::stage_documents`] under a daily quota of bytes published by the library's owner
    /// (`None`: none; see `usage.rs` for what counts): a batch that would go past it is
    /// refused (`Limit`, saying the quota, the day's use and when it resets) and the publish
    /// is discarded with everything it staged.
    pub fn stage_documents_within(
        &self,
        library_id: i64,
        publish_id: i64,
        docs: &[PublishedDoc],
        quota: Option<u64>,
    ) -> Result<()> {
        check_paths(docs)?;
        let prepared = prepare(docs)?;
        let bytes: u64 = prepared.iter().map(|p| p.bytes).sum();
        let staged = self.tx(true, |tx| {
            usage::check_batch(tx, library_id, publish_id, quota, bytes)?;
            stage(tx, library_id, publish_id, &prepared)?;
            usage::add_staged(tx, publish_id, bytes)
        });
        self.discard_when_over(staged, library_id, publish_id)
    }

    /// Applies an open publish in one transaction: the documents its manifest no longer
    /// lists and those it replaces leave the library's next version, its staged documents
    /// enter it, the posting lists of that version are written and the library moves to it;
    /// then the publish is forgotten. `Conflict` when it is no longer open, `NotFound` for an
    /// unknown library.
    pub fn commit_publish(&self, library_id: i64, publish_id: i64) -> Result<PublishCommit> {
        self.commit_publish_within(library_id, publish_id, None)
    }

    /// [`Db::commit_publish`], its staged bytes added to the owner's day; under a daily
    /// `quota`, refused when they would take the day past it (another publish committed since
    /// its batches were staged): `Limit`, and the publish is discarded.
    pub fn commit_publish_within(
        &self,
        library_id: i64,
        publish_id: i64,
        quota: Option<u64>,
    ) -> Result<PublishCommit> {
        let done = self.tx(true, |tx| {
            usage::charge_commit(tx, library_id, publish_id, quota)?;
            commit(tx, library_id, publish_id)
        });
        if done.is_ok() {
            self.index_vectors_of(library_id);
        }
        self.discard_when_over(done, library_id, publish_id)
    }

    /// `result`, after discarding the publish when it is a refusal over the quota.
    fn discard_when_over<T>(
        &self,
        result: Result<T>,
        library_id: i64,
        publish_id: i64,
    ) -> Result<T> {
        if let Err(GatewayError::Limit(_)) = &result {
            self.tx(true, |tx| discard(tx, library_id, publish_id))?;
        }
        result
    }
}

/// Forgets an open publish and deletes the rows it staged.
fn discard(tx: &mut Tx<'_>, library_id: i64, publish_id: i64) -> Result<()> {
    let version = library_version(tx, library_id, true)?;
    tx.exec(
        "DELETE FROM publishes WHERE id = $1 AND library_id = $2",
        &[Val::I(publish_id), Val::I(library_id)],
    )?;
    forget_orphans(tx, library_id, version, None)
}

/// How long a publish may stay open: one older is discarded when any publish starts.
pub const PUBLISH_TTL_MS: i64 = 24 * 60 * 60 * 1000;

/// What [`Db::commit_publish`] applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublishCommit {
    /// Documents stored (new or changed).
    pub stored: u64,
    /// Documents removed (no longer in the manifest).
    pub removed: u64,
}

/// `Invalid` when a document has an empty path.
fn check_paths(docs: &[PublishedDoc]) -> Result<()> {
    match docs.iter().find(|d| d.path.trim().is_empty()) {
        Some(bad) => Err(GatewayError::invalid(format!(
            "a document has an empty path (hash {:?})",
            bad.hash
        ))),
        None => Ok(()),
    }
}

/// A document's vectors as stored: the model, the width and each chunk's lines and vector.
type Vectors = (String, usize, Vec<(u32, u32, Vec<f32>)>);

/// A document ready to store: what the database keeps of it, computed before the transaction
/// (which may run twice on PostgreSQL).
struct Prepared<'a> {
    doc: &'a PublishedDoc,
    analysis: DocAnalysis,
    keywords: String,
    outline: String,
    vectors: Option<Vectors>,
    /// What it counts against its owner's daily quota (`usage.rs`).
    bytes: u64,
}

/// The bytes a document counts against the daily quota: text, path, title, outline (JSON)
/// and vectors (4 bytes a value).
fn stored_bytes(doc: &PublishedDoc, outline: &str, vectors: Option<&Vectors>) -> u64 {
    let values: usize = vectors.map_or(0, |(_, _, chunks)| {
        chunks.iter().map(|(_, _, v)| v.len()).sum()
    });
    (doc.text.len()
        + doc.path.len()
        + doc.title.as_deref().map_or(0, str::len)
        + outline.len()
        + values * 4) as u64
}

fn prepare(docs: &[PublishedDoc]) -> Result<Vec<Prepared<'_>>> {
    use rayon::prelude::*;
    docs.par_iter()
        .map(|doc| {
            let analysis = linkly_index::analyse_document(
                &format!("/{}", doc.path),
                doc.title.as_deref(),
                &doc.text,
            );
            let vectors = match &doc.vectors {
                Some(v) => Some((v.model.clone(), v.dim, v.decode(&doc.path)?)),
                None => None,
            };
            let outline = match &doc.outline {
                serde_json::Value::Null => "[]".to_string(),
                v => v.to_string(),
            };
            Ok(Prepared {
                bytes: stored_bytes(doc, &outline, vectors.as_ref()),
                keywords: serde_json::to_string(&analysis.keywords)
                    .map_err(|e| GatewayError::Database(e.to_string()))?,
                analysis,
                outline,
                vectors,
                doc,
            })
        })
        .collect()
}

/// The open publish `publish_id` of the library, its row locked until commit: its `gone`
/// list (JSON) and the model and width its vectors have, once a batch brought some.
/// `Conflict` when the library has no such open publish.
struct OpenPublish {
    gone: String,
    model: Option<String>,
    dim: Option<i64>,
}

impl FromRow for OpenPublish {
    fn from_row(row: &Row) -> Result<OpenPublish> {
        Ok(OpenPublish {
            gone: row.get("gone")?,
            model: row.get("model")?,
            dim: row.get("dim")?,
        })
    }
}

fn lock_publish(tx: &mut Tx<'_>, library_id: i64, publish_id: i64) -> Result<OpenPublish> {
    let sql = format!(
        "SELECT gone, model, dim FROM publishes WHERE id = $1 AND library_id = $2{}",
        tx.for_update()
    );
    tx.row(&sql, &[Val::I(publish_id), Val::I(library_id)])?
        .ok_or_else(|| {
            GatewayError::Conflict(format!(
                "publish #{publish_id} is no longer open: a newer publish of this library started, or it was committed or left open for a day; publish again"
            ))
        })
}

/// The library's visible version, its row locked until commit when `lock` (PostgreSQL; SQLite
/// holds the write lock already). `NotFound` for an unknown library.
pub(super) fn library_version(tx: &mut Tx<'_>, library_id: i64, lock: bool) -> Result<i64> {
    let sql = format!(
        "SELECT version FROM libraries WHERE id = $1{}",
        if lock { tx.for_update() } else { "" }
    );
    tx.scalar(&sql, &[Val::I(library_id)])?
        .ok_or_else(|| GatewayError::not_found(format!("no library #{library_id}")))
}

/// Deletes the rows of publishes of the library that never committed (born after `version`,
/// except `keep`'s) and undoes the marks of a commit cut off before the library moved to it.
fn forget_orphans(tx: &mut Tx<'_>, library_id: i64, version: i64, keep: Option<i64>) -> Result<()> {
    let keep = keep.unwrap_or(-1);
    for table in ["documents", "chunks"] {
        tx.exec(
            &format!("DELETE FROM {table} WHERE library_id = $1 AND born > $2 AND born <> $3"),
            &[Val::I(library_id), Val::I(version), Val::I(keep)],
        )?;
        tx.exec(
            &format!("UPDATE {table} SET died = NULL WHERE library_id = $1 AND died > $2"),
            &[Val::I(library_id), Val::I(version)],
        )?;
    }
    tx.exec(
        "DELETE FROM postings WHERE library_id = $1 AND version > $2",
        &[Val::I(library_id), Val::I(version)],
    )?;
    Ok(())
}

/// The library's vectors as they stand: their model, width and chunk count.
#[derive(Debug)]
struct VectorShape {
    model: String,
    dim: i64,
}

impl FromRow for VectorShape {
    fn from_row(row: &Row) -> Result<VectorShape> {
        Ok(VectorShape {
            model: row.get("vector_model")?,
            dim: row.get("vector_dim")?,
        })
    }
}

/// Checks a batch's vectors against the publish's and the library's model and width, and
/// records the publish's when this batch is the first to bring vectors.
fn check_vectors(
    tx: &mut Tx<'_>,
    library_id: i64,
    publish_id: i64,
    open: &OpenPublish,
    docs: &[Prepared<'_>],
) -> Result<()> {
    let Some((first_model, first_dim)) = docs
        .iter()
        .find_map(|d| d.vectors.as_ref().map(|(m, w, _)| (m.clone(), *w as i64)))
    else {
        return Ok(());
    };
    let model = open.model.clone().unwrap_or(first_model);
    let library: Option<VectorShape> = tx.row(
        "SELECT vector_model, vector_dim FROM libraries WHERE id = $1 AND vector_model IS NOT NULL",
        &[Val::I(library_id)],
    )?;
    let dim = match (open.dim, &library) {
        (Some(d), _) => d,
        (None, Some(lib)) if lib.model == model && lib.dim > 0 => lib.dim,
        _ => first_dim,
    };
    for d in docs {
        let Some((m, w, _)) = &d.vectors else {
            continue;
        };
        if *m != model {
            return Err(GatewayError::invalid(format!(
                "the vectors of {:?} were made by {m}, but this publish's are {model}'s: one publish carries one model's vectors; nothing of this batch was stored",
                d.doc.path
            )));
        }
        if *w as i64 != dim {
            return Err(GatewayError::invalid(format!(
                "the vectors of {:?} are {w}-dimensional, but {model}'s in this library are {dim}-dimensional: nothing of this batch was stored",
                d.doc.path
            )));
        }
    }
    if open.model.is_none() {
        tx.exec(
            "UPDATE publishes SET model = $2, dim = $3 WHERE id = $1",
            &[Val::I(publish_id), Val::T(model), Val::I(dim)],
        )?;
    }
    Ok(())
}

/// A row that holds a path's number: visible now, or staged by this publish already.
struct Held {
    path: String,
    doc_id: i64,
    born: i64,
}

impl FromRow for Held {
    fn from_row(row: &Row) -> Result<Held> {
        Ok(Held {
            path: row.get("path")?,
            doc_id: row.get("doc_id")?,
            born: row.get("born")?,
        })
    }
}

fn stage(tx: &mut Tx<'_>, library_id: i64, publish_id: i64, docs: &[Prepared<'_>]) -> Result<()> {
    let version = library_version(tx, library_id, true)?;
    let open = lock_publish(tx, library_id, publish_id)?;
    check_vectors(tx, library_id, publish_id, &open, docs)?;
    // The last of a path sent twice in one batch wins, as a later batch's does.
    let mut last: HashMap<&str, usize> = HashMap::new();
    for (i, d) in docs.iter().enumerate() {
        last.insert(d.doc.path.as_str(), i);
    }
    let docs: Vec<&Prepared<'_>> = docs
        .iter()
        .enumerate()
        .filter(|(i, d)| last[d.doc.path.as_str()] == *i)
        .map(|(_, d)| d)
        .collect();
    let paths: Vec<String> = docs.iter().map(|d| d.doc.path.clone()).collect();
    let held: Vec<Held> = tx.rows(
        &format!(
            "SELECT path, doc_id, born FROM documents WHERE library_id = $1 AND path {} \
             AND (born = $3 OR ({}))",
            tx.in_list(2),
            visible(4)
        ),
        &[
            Val::I(library_id),
            Val::Texts(paths),
            Val::I(publish_id),
            Val::I(version),
        ],
    )?;
    let mut numbers: HashMap<&str, i64> = HashMap::new();
    let mut restaged = Vec::new();
    for h in &held {
        numbers.insert(h.path.as_str(), h.doc_id);
        if h.born == publish_id {
            restaged.push(h.doc_id);
        }
    }
    if !restaged.is_empty() {
        for table in ["documents", "chunks"] {
            tx.exec(
                &format!(
                    "DELETE FROM {table} WHERE library_id = $1 AND born = $2 AND doc_id {}",
                    tx.in_list(3)
                ),
                &[
                    Val::I(library_id),
                    Val::I(publish_id),
                    Val::Ints(restaged.clone()),
                ],
            )?;
        }
    }
    let new = docs
        .iter()
        .filter(|d| !numbers.contains_key(d.doc.path.as_str()))
        .count() as i64;
    if new > 0 {
        let last: i64 = tx.value(
            "UPDATE libraries SET next_doc = next_doc + $2 WHERE id = $1 RETURNING next_doc",
            &[Val::I(library_id), Val::I(new)],
        )?;
        let mut next = last - new;
        for d in &docs {
            if !numbers.contains_key(d.doc.path.as_str()) {
                next += 1;
                numbers.insert(d.doc.path.as_str(), next);
            }
        }
    }
    let now = now_ms();
    let mut rows = Vec::with_capacity(docs.len());
    let mut chunks = Vec::new();
    for d in &docs {
        let doc_id = numbers[d.doc.path.as_str()];
        let a = &d.analysis;
        rows.push(vec![
            Val::I(library_id),
            Val::I(doc_id),
            Val::I(publish_id),
            Val::T(d.doc.path.clone()),
            Val::T(d.doc.doc_type.clone()),
            Val::T(d.doc.hash.clone()),
            Val::I(i64::try_from(d.doc.size).unwrap_or(i64::MAX)),
            Val::I(d.doc.modified_at),
            Val::I(now),
            a.title.clone().map_or(Val::N, Val::T),
            Val::T(d.doc.text.clone()),
            Val::T(d.outline.clone()),
            Val::I(a.word_count as i64),
            Val::I(a.char_count as i64),
            Val::I(i64::from(a.total_lines)),
            Val::T(d.keywords.clone()),
            Val::T(a.abstract_text.clone()),
            Val::T(a.terms.encode()),
            d.vectors
                .as_ref()
                .map_or(Val::N, |(m, _, _)| Val::T(m.clone())),
        ]);
        if let Some((model, dim, vectors)) = &d.vectors {
            for (n, (start, end, v)) in vectors.iter().enumerate() {
                chunks.push(vec![
                    Val::I(library_id),
                    Val::I(doc_id),
                    Val::I(publish_id),
                    Val::I(n as i64),
                    Val::I(i64::from(*start)),
                    Val::I(i64::from(*end)),
                    Val::T(model.clone()),
                    Val::I(*dim as i64),
                    Val::V(v.clone()),
                ]);
            }
        }
    }
    tx.insert(
        "documents",
        "library_id, doc_id, born, path, doc_type, hash, size, modified_at, indexed_at, title, \
         body, outline, word_count, char_count, total_lines, keywords, abstract, terms, \
         vector_model",
        rows,
        INSERT_ROWS,
    )?;
    tx.insert(
        "chunks",
        "library_id, doc_id, born, chunk_no, start_line, end_line, model, dim, embedding",
        chunks,
        INSERT_ROWS,
    )?;
    Ok(())
}

fn commit(tx: &mut Tx<'_>, library_id: i64, publish_id: i64) -> Result<PublishCommit> {
    let version = library_version(tx, library_id, true)?;
    let open = lock_publish(tx, library_id, publish_id)?;
    let gone: Vec<String> = serde_json::from_str(&open.gone).map_err(|e| {
        GatewayError::Database(format!("column \"gone\" of publish #{publish_id}: {e}"))
    })?;
    forget_orphans(tx, library_id, version, Some(publish_id))?;
    let lib = Val::I(library_id);
    let (p, v) = (Val::I(publish_id), Val::I(version));
    let stored: i64 = tx.value(
        "SELECT COUNT(*) AS n FROM documents WHERE library_id = $1 AND born = $2",
        &[lib.clone(), p.clone()],
    )?;
    // The rows that this publish replaces, then those its manifest no longer lists.
    tx.exec(
        "UPDATE documents SET died = $2 WHERE library_id = $1 AND born <= $3 AND died IS NULL \
         AND path IN (SELECT path FROM documents WHERE library_id = $1 AND born = $2)",
        &[lib.clone(), p.clone(), v.clone()],
    )?;
    let removed = if gone.is_empty() {
        0
    } else {
        tx.exec(
            &format!(
                "UPDATE documents SET died = $2 WHERE library_id = $1 AND born <= $3 \
                 AND died IS NULL AND path {}",
                tx.in_list(4)
            ),
            &[lib.clone(), p.clone(), v.clone(), Val::Texts(gone)],
        )?
    };
    tx.exec(
        "UPDATE chunks SET died = $2 WHERE library_id = $1 AND born <= $3 AND died IS NULL \
         AND doc_id IN (SELECT doc_id FROM documents WHERE library_id = $1 AND died = $2)",
        &[lib.clone(), p.clone(), v.clone()],
    )?;
    if stored > 0 || removed > 0 {
        index_version(tx, library_id, publish_id, stored + removed as i64)?;
        // What no reader can see any more: dead at the version before, or older lists.
        for table in ["documents", "chunks"] {
            tx.exec(
                &format!("DELETE FROM {table} WHERE library_id = $1 AND died <= $2"),
                &[lib.clone(), v.clone()],
            )?;
        }
        tx.exec(
            "DELETE FROM postings WHERE library_id = $1 AND version < $2",
            &[lib.clone(), v.clone()],
        )?;
    }
    tx.exec("DELETE FROM publishes WHERE id = $1", &[p])?;
    Ok(PublishCommit {
        stored: stored as u64,
        removed,
    })
}

/// One visible document's full-text terms and path.
struct TermsRow {
    doc_id: i64,
    path: String,
    terms: String,
}

impl FromRow for TermsRow {
    fn from_row(row: &Row) -> Result<TermsRow> {
        Ok(TermsRow {
            doc_id: row.get("doc_id")?,
            path: row.get("path")?,
            terms: row.get("terms")?,
        })
    }
}

/// The vectors of a version: the model of most chunks, its width and its chunks.
struct ModelCount {
    model: String,
    dim: i64,
    n: i64,
}

impl FromRow for ModelCount {
    fn from_row(row: &Row) -> Result<ModelCount> {
        Ok(ModelCount {
            model: row.get("model")?,
            dim: row.get("dim")?,
            n: row.get("n")?,
        })
    }
}

/// Writes the posting lists of the library's documents visible at `version` and moves the
/// library to it, with its counts, roots and vector model, `changes` more changes counted.
fn index_version(tx: &mut Tx<'_>, library_id: i64, version: i64, changes: i64) -> Result<()> {
    let rows: Vec<TermsRow> = tx.rows(
        &format!(
            "SELECT doc_id, path, terms FROM documents WHERE library_id = $1 AND {}",
            visible(2)
        ),
        &[Val::I(library_id), Val::I(version)],
    )?;
    let mut terms = Vec::with_capacity(rows.len());
    let mut roots = BTreeSet::new();
    for r in &rows {
        terms.push(DocTerms::decode(&r.terms).ok_or_else(|| {
            GatewayError::Database(format!(
                "column \"terms\" of {:?} is not a document's terms",
                r.path
            ))
        })?);
        roots.insert(r.path.split('/').next().unwrap_or_default().to_string());
    }
    let impacts = linkly_index::bm25_impacts_of(&terms);
    drop(terms);
    let mut lists: HashMap<String, Vec<(u32, f32)>> = HashMap::new();
    for (r, doc) in rows.iter().zip(impacts) {
        let id = u32::try_from(r.doc_id).map_err(|_| {
            GatewayError::Database(format!("document number {} out of range", r.doc_id))
        })?;
        for (term, impact) in doc {
            lists.entry(term).or_default().push((id, impact));
        }
    }
    let mut postings = Vec::with_capacity(lists.len());
    for (term, mut list) in lists {
        list.sort_unstable_by_key(|(id, _)| *id);
        postings.push(vec![
            Val::I(library_id),
            Val::I(version),
            Val::T(term),
            Val::B(encode_postings(&list)),
        ]);
    }
    tx.insert(
        "postings",
        "library_id, version, term, docs",
        postings,
        POSTING_ROWS,
    )?;
    let shape: Option<ModelCount> = tx.row(
        &format!(
            "SELECT model, dim, COUNT(*) AS n FROM chunks WHERE library_id = $1 AND {} \
             GROUP BY model, dim ORDER BY n DESC, model LIMIT 1",
            visible(2)
        ),
        &[Val::I(library_id), Val::I(version)],
    )?;
    let (model, dim, chunks) = match shape {
        Some(s) => (Val::T(s.model), s.dim, s.n),
        None => (Val::N, 0, 0),
    };
    let roots: Vec<String> = roots.into_iter().filter(|r| !r.is_empty()).collect();
    tx.exec(
        "UPDATE libraries SET version = $2, doc_count = $3, roots = $4, vector_model = $5, \
         vector_dim = $6, chunk_count = $7, updated_at = $8, content_seq = content_seq + $9 \
         WHERE id = $1",
        &[
            Val::I(library_id),
            Val::I(version),
            Val::I(rows.len() as i64),
            Val::T(roots.join("\n")),
            model,
            Val::I(dim),
            Val::I(chunks),
            Val::I(now_ms()),
            Val::I(changes),
        ],
    )?;
    Ok(())
}

/// A term's posting list: each document's number and the term's impact in it.
pub type PostingList = Vec<(u32, f32)>;

/// A posting list as stored: each document's number (`u32`) and impact (`f32`), little-endian,
/// in number order.
pub(crate) fn encode_postings(list: &[(u32, f32)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(list.len() * 8);
    for (id, impact) in list {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&impact.to_le_bytes());
    }
    out
}

/// A stored posting list back; `None` when its length is not a whole number of entries.
pub(crate) fn decode_postings(bytes: &[u8]) -> Option<PostingList> {
    if !bytes.len().is_multiple_of(8) {
        return None;
    }
    Some(
        bytes
            .chunks_exact(8)
            .map(|c| {
                (
                    u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                    f32::from_le_bytes([c[4], c[5], c[6], c[7]]),
                )
            })
            .collect(),
    )
}

/// One live document of the layout before search moved into the database.
struct OldDoc {
    doc: PublishedDoc,
}

impl FromRow for OldDoc {
    fn from_row(row: &Row) -> Result<OldDoc> {
        let path: String = row.get("path")?;
        let outline: String = row.get("outline")?;
        let outline = serde_json::from_str(&outline)
            .map_err(|e| GatewayError::Database(format!("column \"outline\" of {path:?}: {e}")))?;
        let vectors = row
            .get::<Option<String>>("vectors")?
            .map(|v| serde_json::from_str(&v))
            .transpose()
            .map_err(|e| GatewayError::Database(format!("column \"vectors\" of {path:?}: {e}")))?;
        Ok(OldDoc {
            doc: PublishedDoc {
                path,
                doc_type: row.get("doc_type")?,
                hash: row.get("hash")?,
                size: row.get("size")?,
                modified_at: row.get("modified_at")?,
                title: row.get("title")?,
                text: row.get("body")?,
                outline,
                vectors,
            },
        })
    }
}

/// Moves the documents of a database from before search moved into it (set aside as
/// `documents_v1` by the schema's creation) into the new layout, each library as one publish,
/// in the caller's transaction; then drops the old table. Nothing to do on a newer database.
pub(super) fn migrate(tx: &mut Tx<'_>) -> Result<()> {
    let exists: i64 = if tx.is_pg() {
        tx.value(
            "SELECT CASE WHEN to_regclass('documents_v1') IS NULL THEN 0 ELSE 1 END AS n",
            &[],
        )?
    } else {
        tx.value(
            "SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'documents_v1'",
            &[],
        )?
    };
    if exists == 0 {
        return Ok(());
    }
    let libraries: Vec<super::rows::One<i64>> = tx.rows(
        "SELECT DISTINCT library_id FROM documents_v1 WHERE deleted = 0 ORDER BY library_id",
        &[],
    )?;
    for super::rows::One(library_id) in libraries {
        let old: Vec<OldDoc> = tx.rows(
            "SELECT path, doc_type, hash, size, modified_at, title, body, outline, vectors \
             FROM documents_v1 WHERE library_id = $1 AND deleted = 0 ORDER BY path",
            &[Val::I(library_id)],
        )?;
        if tx
            .scalar::<i64>(
                "SELECT id FROM libraries WHERE id = $1",
                &[Val::I(library_id)],
            )?
            .is_none()
        {
            continue;
        }
        let publish: i64 = tx.value(
            "INSERT INTO publishes (library_id, created_at, gone) VALUES ($1, $2, '[]') \
             RETURNING id",
            &[Val::I(library_id), Val::I(now_ms())],
        )?;
        let docs: Vec<PublishedDoc> = old.into_iter().map(|o| o.doc).collect();
        for batch in docs.chunks(500) {
            stage(tx, library_id, publish, &prepare(batch)?)?;
        }
        commit(tx, library_id, publish)?;
        tracing::info!(
            library = library_id,
            documents = docs.len(),
            "migrated a library's documents to search in the database"
        );
    }
    tx.exec("DROP TABLE documents_v1", &[])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posting_lists_round_trip() {
        let list = vec![(1, 0.5), (7, 2.25), (u32::MAX, f32::MIN_POSITIVE)];
        assert_eq!(decode_postings(&encode_postings(&list)).unwrap(), list);
        assert!(decode_postings(&[0; 7]).is_none());
        assert_eq!(decode_postings(&[]).unwrap(), Vec::new());
    }
}
