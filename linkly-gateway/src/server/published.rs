//! The published libraries as the document tools read them: a [`Published`] library is a
//! [`linkly_index::Corpus`] over the database at the library's visible version, so `search`,
//! `grep`, `read`, `outline`, `list`, `explore` and `find_paths` answer over it exactly as they
//! answer over a local index, and a gateway process keeps no index of its own: nothing to build
//! or warm up, the first search after a publish is as fast as any other, and any number of
//! processes serve the same libraries.
//!
//! Search runs on what the database keeps: BM25 from the library's posting lists (each term's
//! documents and impacts, written at each publish, [`linkly_index::bm25_impacts_of`]), vectors
//! by pgvector's exact cosine distance on PostgreSQL (a scan of the library's vectors on
//! SQLite), fused as a local search fuses ([`linkly_index::fuse`]). Queries are embedded here
//! with the library's model ([`Models`]).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use linkly_core::{Config, DataDir, DocId, DocType, ErrorCode, OutlineNode};
use linkly_index::vector::{ModelChoice, ModelManager, TextEmbedder, canonical_name};
use linkly_index::{
    Arms, CatalogPage, CatalogSort, Corpus, DocFilter, DocRecord, DocSummary, HybridHit,
    HybridOptions, HybridOutcome, Index, LexicalArm, ModelStatus, SearchMode, VectorArm,
};
use linkly_tools::Linkly;

use crate::GatewayError;
use crate::model::LibraryKey;
use crate::server::db::{Chunk, Db, DocRow, LibraryState, LightRow};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The embedding models of the gateway's data directory, loaded once each on first need: a
/// library whose vectors one of them made is searched by meaning, its queries embedded by it.
pub struct Models {
    data_dir: PathBuf,
    loaded: Mutex<HashMap<String, std::result::Result<Arc<TextEmbedder>, String>>>,
}

impl std::fmt::Debug for Models {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Models")
            .field("data_dir", &self.data_dir)
            .finish_non_exhaustive()
    }
}

impl Models {
    /// The models of the data directory `data_dir` (`<data_dir>/models/`, or
    /// `LINKLY_MODEL_DIR`).
    pub fn new(data_dir: &Path) -> Models {
        Models {
            data_dir: data_dir.to_path_buf(),
            loaded: Mutex::default(),
        }
    }

    /// Where the model `name` lies on this gateway: the selected model (or
    /// `LINKLY_MODEL_DIR`'s) when it has that name, else `<data_dir>/models/<org>--<name>/`.
    fn find(&self, name: &str) -> Option<ModelChoice> {
        let manager = ModelManager::new(&self.data_dir);
        let chosen = manager.choice();
        if chosen.name == name && chosen.is_present() {
            return Some(chosen);
        }
        let stored = ModelChoice {
            name: name.to_string(),
            dir: manager.dir_of(&canonical_name(name)),
            from_env: false,
            cache: None,
        };
        stored.is_present().then_some(stored)
    }

    /// The model `name`, loaded; else why it cannot embed queries here.
    pub fn embedder(&self, name: &str) -> std::result::Result<Arc<TextEmbedder>, String> {
        if let Some(done) = lock(&self.loaded).get(name) {
            return done.clone();
        }
        let Some(choice) = self.find(name) else {
            // Not cached: installed later, it is found at the next look.
            return Err("this gateway does not have it".to_string());
        };
        let loaded = TextEmbedder::load(&choice)
            .map(Arc::new)
            .map_err(|e| format!("it does not load here: {e}"));
        if let Err(e) = &loaded {
            tracing::warn!(model = name, error = %e, "embedding model unusable; libraries of its vectors stay keyword-only");
        }
        lock(&self.loaded).insert(name.to_string(), loaded.clone());
        loaded
    }

    /// The width of the vectors of the model `name`, when this gateway has it.
    pub fn dim(&self, name: &str) -> Option<usize> {
        self.embedder(name).ok().map(|e| e.dim())
    }
}

/// One published library at its visible version, read from the database.
#[derive(Debug)]
pub struct Published {
    db: Db,
    key: LibraryKey,
    state: LibraryState,
    models: Arc<Models>,
}

impl Published {
    /// The library `key` as it stands now; `None` when it does not exist.
    pub fn open(
        db: &Db,
        key: &LibraryKey,
        models: &Arc<Models>,
    ) -> crate::Result<Option<Published>> {
        Ok(db.library_state(key)?.map(|state| Published {
            db: db.clone(),
            key: key.clone(),
            state,
            models: models.clone(),
        }))
    }

    /// Its state (version, counts, roots, vector model).
    pub fn state(&self) -> &LibraryState {
        &self.state
    }

    /// Why its search is keyword-only, when it is: published without vectors, or with a
    /// model this gateway cannot embed queries with.
    pub fn keyword_notice(&self) -> Option<String> {
        let Some(model) = self.vector_model() else {
            return Some(
                "Keyword-only search: this library was published without vectors (its \
                 publisher's index had no embedding model), so it is found by its words only."
                    .to_string(),
            );
        };
        match self.models.embedder(model) {
            Ok(_) => None,
            Err(reason) => Some(format!(
                "Keyword-only search: this library's vectors were made by the model {model}, \
                 and this gateway cannot embed queries with it ({reason}); its administrator \
                 can install it (`linkly --home <gateway data dir> model download {model}`)."
            )),
        }
    }

    fn vector_model(&self) -> Option<&str> {
        self.state
            .vector_model
            .as_deref()
            .filter(|_| self.state.chunk_count > 0)
    }

    /// The tools over it: document ids `cloud://<owner>/<slug>/<n>`, its roots as the folders
    /// (`/<root>`), `data_dir` the gateway's (nothing is written there).
    pub fn tools(self, data_dir: &Path) -> Arc<Linkly> {
        let config = Config {
            folders: self
                .state
                .roots
                .iter()
                .map(|r| PathBuf::from(format!("/{r}")))
                .collect(),
            ..Config::default()
        };
        let notice = self.keyword_notice();
        let prefix = self.key.doc_prefix();
        Arc::new(
            Linkly::over(
                Arc::new(self),
                prefix,
                DataDir::new(data_dir.to_path_buf()),
                config,
            )
            .with_keyword_notice(notice),
        )
    }

    /// A database failure as the index's error, naming the library.
    fn failed(&self, e: GatewayError) -> linkly_index::Error {
        let code = match &e {
            GatewayError::Invalid(_) => ErrorCode::InvalidArgument,
            _ => ErrorCode::Internal,
        };
        linkly_index::Error::External {
            code,
            message: match e {
                GatewayError::Unavailable(why) => {
                    format!("library {} is unavailable: {why}", self.key)
                }
                other => format!("library {}: {other}", self.key),
            },
        }
    }

    fn record(&self, row: DocRow) -> linkly_index::Result<DocRecord> {
        let corrupt = |what: &str, e: &dyn std::fmt::Display| {
            linkly_index::Error::Corrupt(format!(
                "{what} of {} in library {}: {e}",
                row.path, self.key
            ))
        };
        let doc_type = DocType::from_token(&row.doc_type).map_err(|e| corrupt("the type", &e))?;
        let outline: Vec<OutlineNode> =
            serde_json::from_str(&row.outline).map_err(|e| corrupt("the outline", &e))?;
        let keywords: Vec<String> =
            serde_json::from_str(&row.keywords).map_err(|e| corrupt("the keywords", &e))?;
        Ok(DocRecord {
            id: doc_id(row.doc_id),
            path: format!("/{}", row.path),
            doc_type,
            size: row.size,
            modified_at: row.modified_at,
            title: row.title,
            word_count: row.word_count,
            char_count: row.char_count,
            total_lines: u32::try_from(row.total_lines).unwrap_or(u32::MAX),
            outline,
            keywords,
            abstract_text: row.abstract_text,
            skip_reason: None,
            encoding: None,
            indexed_at: row.indexed_at,
        })
    }

    /// The documents a filter covers (every one without a filter), in path order.
    fn filtered(&self, filter: &DocFilter) -> linkly_index::Result<Vec<LightRow>> {
        let rows = self
            .db
            .light_rows(&self.state)
            .map_err(|e| self.failed(e))?;
        if filter.is_empty() {
            return Ok(rows);
        }
        Ok(rows
            .into_iter()
            .filter(|r| {
                DocType::from_token(&r.doc_type)
                    .is_ok_and(|t| filter.matches(&format!("/{}", r.path), t, r.modified_at))
            })
            .collect())
    }

    /// The BM25 arm: every document holding a query term, scored by the sum of its terms'
    /// impacts, among `allowed`; the best `depth` and how many matched.
    fn lexical_arm(
        &self,
        query: &str,
        depth: usize,
        allowed: Option<&HashSet<i64>>,
    ) -> linkly_index::Result<(Vec<(u64, LexicalArm)>, usize)> {
        let mut terms = Index::query_terms(query);
        let mut seen = HashSet::new();
        terms.retain(|t| seen.insert(t.clone()));
        let lists = self
            .db
            .postings(&self.state, &terms)
            .map_err(|e| self.failed(e))?;
        let mut scores: HashMap<u32, f32> = HashMap::new();
        for (_, list) in &lists {
            for &(id, impact) in list {
                if allowed.is_none_or(|a| a.contains(&i64::from(id))) {
                    *scores.entry(id).or_default() += impact;
                }
            }
        }
        let total = scores.len();
        let mut ranked: Vec<(u32, f32)> = scores.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(depth);
        Ok((
            ranked
                .into_iter()
                .enumerate()
                .map(|(i, (id, score))| (u64::from(id), LexicalArm { rank: i + 1, score }))
                .collect(),
            total,
        ))
    }
}

fn doc_id(n: i64) -> DocId {
    DocId(u64::try_from(n).unwrap_or(0))
}

fn as_numbers(ids: &[DocId]) -> Vec<i64> {
    ids.iter().filter_map(|d| i64::try_from(d.0).ok()).collect()
}

/// Each document's best chunk, in order, ranked 1.. among documents, at most `depth` (as the
/// local vector arm keeps them).
fn best_chunk_per_doc(chunks: Vec<Chunk>, depth: usize) -> Vec<(u64, VectorArm)> {
    let mut out: Vec<(u64, VectorArm)> = Vec::new();
    let mut seen = HashSet::new();
    for c in chunks {
        if out.len() >= depth {
            break;
        }
        if !seen.insert(c.doc_id) {
            continue;
        }
        out.push((
            doc_id(c.doc_id).0,
            VectorArm {
                rank: out.len() + 1,
                score: c.score,
                start_line: c.start_line,
                end_line: c.end_line,
            },
        ));
    }
    out
}

/// The README file names `list` points to, lower-cased.
const READMES: &[&str] = &[
    "readme.md",
    "readme.markdown",
    "readme.mdx",
    "readme.txt",
    "readme",
    "readme.rst",
    "readme.html",
    "readme.htm",
];

impl Corpus for Published {
    fn doc(&self, id: DocId) -> linkly_index::Result<Option<DocRecord>> {
        Ok(self.docs(&[id])?.into_iter().next())
    }

    fn doc_by_path(&self, path: &str) -> linkly_index::Result<Option<DocRecord>> {
        let Some(relative) = path.strip_prefix('/') else {
            return Ok(None);
        };
        self.db
            .doc_row_by_path(&self.state, relative)
            .map_err(|e| self.failed(e))?
            .map(|r| self.record(r))
            .transpose()
    }

    fn docs(&self, ids: &[DocId]) -> linkly_index::Result<Vec<DocRecord>> {
        let mut rows: HashMap<i64, DocRow> = self
            .db
            .doc_rows(&self.state, &as_numbers(ids))
            .map_err(|e| self.failed(e))?
            .into_iter()
            .map(|r| (r.doc_id, r))
            .collect();
        as_numbers(ids)
            .into_iter()
            .filter_map(|id| rows.remove(&id))
            .map(|r| self.record(r))
            .collect()
    }

    fn content(&self, id: DocId) -> linkly_index::Result<Option<String>> {
        Ok(self.contents(&[id])?.into_iter().next().flatten())
    }

    fn contents(&self, ids: &[DocId]) -> linkly_index::Result<Vec<Option<String>>> {
        let numbers: Vec<i64> = ids
            .iter()
            .map(|d| i64::try_from(d.0).unwrap_or(-1))
            .collect();
        self.db
            .bodies(&self.state, &numbers)
            .map_err(|e| self.failed(e))
    }

    fn doc_count(&self) -> linkly_index::Result<u64> {
        Ok(self.state.doc_count)
    }

    fn catalog_count(&self, filter: &DocFilter) -> linkly_index::Result<u64> {
        if filter.is_empty() {
            return Ok(self.state.doc_count);
        }
        Ok(self.filtered(filter)?.len() as u64)
    }

    fn catalog_page(
        &self,
        filter: &DocFilter,
        sort: CatalogSort,
        limit: usize,
        offset: usize,
    ) -> linkly_index::Result<CatalogPage> {
        let mut rows = self.filtered(filter)?;
        let total = rows.len() as u64;
        let name = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
        match sort {
            CatalogSort::Recent => rows.sort_by(|a, b| {
                b.modified_at
                    .cmp(&a.modified_at)
                    .then_with(|| a.path.cmp(&b.path))
            }),
            CatalogSort::Oldest => rows.sort_by(|a, b| {
                a.modified_at
                    .cmp(&b.modified_at)
                    .then_with(|| a.path.cmp(&b.path))
            }),
            CatalogSort::Name => rows.sort_by(|a, b| {
                name(&a.path)
                    .cmp(&name(&b.path))
                    .then_with(|| a.path.cmp(&b.path))
            }),
        }
        let page: Vec<DocId> = rows
            .into_iter()
            .skip(offset)
            .take(limit)
            .map(|r| doc_id(r.doc_id))
            .collect();
        Ok(CatalogPage {
            total,
            docs: self.docs(&page)?,
        })
    }

    fn catalog_summaries(&self, filter: &DocFilter) -> linkly_index::Result<Vec<DocSummary>> {
        let rows = self
            .db
            .summary_rows(&self.state)
            .map_err(|e| self.failed(e))?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let Ok(doc_type) = DocType::from_token(&r.light.doc_type) else {
                continue;
            };
            let path = format!("/{}", r.light.path);
            if !filter.matches(&path, doc_type, r.light.modified_at) {
                continue;
            }
            out.push(DocSummary {
                id: doc_id(r.light.doc_id),
                path,
                doc_type,
                word_count: r.word_count,
                modified_at: r.light.modified_at,
                has_outline: r.has_outline,
                keywords: serde_json::from_str(&r.keywords).unwrap_or_default(),
                skipped: false,
            });
        }
        Ok(out)
    }

    fn catalog_paths(&self, filter: &DocFilter) -> linkly_index::Result<Vec<String>> {
        Ok(self
            .filtered(filter)?
            .into_iter()
            .map(|r| format!("/{}", r.path))
            .collect())
    }

    fn readme_in(&self, dir: &str) -> linkly_index::Result<Option<(DocId, String)>> {
        let Some(dir) = dir.strip_prefix('/') else {
            return Ok(None);
        };
        let dir = dir.trim_end_matches('/');
        Ok(self
            .db
            .light_rows(&self.state)
            .map_err(|e| self.failed(e))?
            .into_iter()
            .find(|r| {
                let (parent, name) = match r.path.rsplit_once('/') {
                    Some((p, n)) => (p, n),
                    None => ("", r.path.as_str()),
                };
                parent == dir && READMES.contains(&name.to_lowercase().as_str())
            })
            .map(|r| (doc_id(r.doc_id), format!("/{}", r.path))))
    }

    fn hybrid_search(
        &self,
        query: &str,
        limit: usize,
        filter: &DocFilter,
        opts: &HybridOptions,
    ) -> linkly_index::Result<HybridOutcome> {
        let embedder = match (opts.arms, self.vector_model()) {
            (Arms::Lexical, _) | (_, None) => None,
            (_, Some(model)) => self
                .models
                .embedder(model)
                .ok()
                .map(|e| (model.to_string(), e)),
        };
        let mode = if embedder.is_some() {
            SearchMode::Hybrid
        } else {
            SearchMode::Keyword
        };
        let allowed: Option<HashSet<i64>> = if filter.is_empty() {
            None
        } else {
            Some(self.filtered(filter)?.iter().map(|r| r.doc_id).collect())
        };
        let none = HybridOutcome {
            mode,
            hits: Vec::new(),
            total: 0,
        };
        if allowed.as_ref().is_some_and(HashSet::is_empty) {
            return Ok(none);
        }
        let Some((model, embedder)) = embedder else {
            if opts.arms == Arms::Vector {
                return Ok(none);
            }
            let (hits, total) = self.lexical_arm(query, limit, allowed.as_ref())?;
            return Ok(HybridOutcome {
                mode,
                hits: hits
                    .into_iter()
                    .map(|(id, arm)| HybridHit {
                        id: DocId(id),
                        score: arm.score,
                        lexical: Some(arm),
                        vector: None,
                    })
                    .collect(),
                total,
            });
        };
        let depth = opts.candidates.max(limit);
        let (lexical, total) = if opts.arms == Arms::Vector {
            (Vec::new(), 0)
        } else {
            self.lexical_arm(query, depth, allowed.as_ref())?
        };
        let q = embedder.embed_query(query)?;
        let only: Option<Vec<i64>> = allowed.map(|a| a.into_iter().collect());
        // Several chunks may belong to one document: ask for more chunks than documents.
        let chunks = self
            .db
            .nearest_chunks(&self.state, &model, &q, depth * 3, only.as_deref())
            .map_err(|e| self.failed(e))?;
        let vector = best_chunk_per_doc(chunks, depth);
        let (hits, candidates) = linkly_index::fuse(lexical, vector, opts, limit);
        Ok(HybridOutcome {
            mode,
            hits,
            total: total.max(candidates),
        })
    }

    fn keyword_total(&self, query: &str) -> linkly_index::Result<usize> {
        Ok(self.lexical_arm(query, 1, None)?.1)
    }

    fn model_status(&self) -> ModelStatus {
        match self.vector_model() {
            Some(model) => match self.models.embedder(model) {
                Ok(e) => ModelStatus::Ready {
                    name: model.to_string(),
                    dim: e.dim(),
                },
                Err(_) => ModelStatus::Missing {
                    name: model.to_string(),
                },
            },
            None => ModelStatus::Missing {
                name: "none".to_string(),
            },
        }
    }
}
