//! The tantivy BM25 index: one tantivy document per file, fields title (×3), file name (×2),
//! content (×1) and directory path (×0.5), all analysed by the CJK-aware analyzer before they
//! get here ([`crate::analysis`]): the index splits the analysed terms and counts them.
//! Frequencies are indexed, not positions: every query is a disjunction of terms.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tantivy::collector::{Count, FilterCollector, TopDocs};
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term, doc};

use crate::filter::IdSet;
use crate::tokenizer;
use crate::{Error, Result};

/// The full-text index's folder in an index directory. Its name changes with its format (the
/// fields' analysis and what they record), so an index of an older format is never opened with
/// this schema: the new folder starts empty, and the next sync fills it from the store without
/// extracting any file again (see `Index::lexical_consistent`).
pub(crate) const DIR: &str = "lexical-2";
/// The folders of older formats, removed when an index is opened.
pub(crate) const OLDER_DIRS: &[&str] = &["lexical"];

/// Field boosts of the ranking contract.
pub(crate) const BOOST_TITLE: f32 = 3.0;
pub(crate) const BOOST_FILENAME: f32 = 2.0;
pub(crate) const BOOST_CONTENT: f32 = 1.0;
pub(crate) const BOOST_PATH: f32 = 0.5;

/// The writer's memory budget.
const WRITER_MEMORY: usize = 64 * 1024 * 1024;

/// Indexing threads of the writer: one core fewer than the machine has (at least one), since
/// a sync prepares the next batch on all cores while the writer indexes this one. Each thread
/// that allocates takes an allocator arena of its own, so fewer threads also keep the peak
/// memory down (docs/benchmarks.md).
fn writer_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get().saturating_sub(1))
        .clamp(1, 8)
}

#[derive(Clone, Copy)]
struct Fields {
    id: Field,
    title: Field,
    filename: Field,
    content: Field,
    path: Field,
}

/// One document for the lexical index: each field as its analysed terms
/// ([`crate::analysis::index_terms_of`], each term followed by a space).
pub(crate) struct LexicalDoc<'a> {
    pub(crate) id: u64,
    pub(crate) title: &'a str,
    pub(crate) filename: &'a str,
    pub(crate) dir: &'a str,
    pub(crate) content: &'a str,
    /// True when the id has never been in the index (a document the store numbered just now,
    /// or a rebuild after `clear`): nothing to replace, so no delete is queued. A delete costs
    /// a look-up in every segment at the commit.
    pub(crate) fresh: bool,
}

pub(crate) struct Lexical {
    dir: PathBuf,
    index: Index,
    reader: IndexReader,
    /// The writer while someone in this process holds it (or held it less than
    /// [`WRITER_LINGER`] ago), and how many hold it: a sync and a background embedding may hold
    /// it at once.
    writer: Arc<Mutex<WriterSlot>>,
    fields: Fields,
    /// `meta.json` as the reader last loaded it (see [`Lexical::catch_up`]).
    seen: Mutex<Option<MetaStamp>>,
}

/// What identifies one version of `meta.json`: tantivy rewrites it (a new file renamed over
/// the old one) at every commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MetaStamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    #[cfg(unix)]
    inode: u64,
}

impl MetaStamp {
    fn of(path: &Path) -> Option<MetaStamp> {
        let m = std::fs::metadata(path).ok()?;
        Some(MetaStamp {
            len: m.len(),
            modified: m.modified().ok(),
            #[cfg(unix)]
            inode: std::os::unix::fs::MetadataExt::ino(&m),
        })
    }
}

/// How long an unused writer is kept open after the last holder let go: a burst of saves (a
/// watcher, `note_save` after `note_save`) reuses one writer instead of opening a new one and
/// waiting for its merges each time. Another process may write once it is dropped.
const WRITER_LINGER: std::time::Duration = std::time::Duration::from_millis(1500);

#[derive(Default)]
struct WriterSlot {
    writer: Option<IndexWriter>,
    holders: usize,
    /// Bumped at each release: a release timer drops the writer only if none came since.
    releases: u64,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(tokenizer::TERMS_NAME)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let id = b.add_u64_field("id", INDEXED | FAST | STORED);
    let title = b.add_text_field("title", text.clone());
    let filename = b.add_text_field("filename", text.clone());
    let content = b.add_text_field("content", text.clone());
    let path = b.add_text_field("path", text);
    (
        b.build(),
        Fields {
            id,
            title,
            filename,
            content,
            path,
        },
    )
}

impl Drop for Lexical {
    fn drop(&mut self) {
        // A lingering writer goes with the index, so that the index can be opened again at once.
        let writer = self
            .writer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .writer
            .take();
        if let Some(w) = writer
            && let Err(e) = w.wait_merging_threads()
        {
            tracing::warn!(error = %e, "closing the index writer");
        }
    }
}

impl Lexical {
    pub(crate) fn open(dir: &Path) -> Result<Lexical> {
        fs_err::create_dir_all(dir)?;
        let (schema, fields) = schema();
        let directory = tantivy::directory::MmapDirectory::open(dir)?;
        Lexical::over(Index::open_or_create(directory, schema)?, fields, dir)
    }

    /// An index held in memory only (tantivy's `RamDirectory`), for tests.
    #[cfg(test)]
    pub(crate) fn in_ram() -> Result<Lexical> {
        let (schema, fields) = schema();
        Lexical::over(Index::create_in_ram(schema), fields, Path::new(":memory:"))
    }

    fn over(index: Index, fields: Fields, dir: &Path) -> Result<Lexical> {
        index.tokenizers().register(
            tokenizer::TERMS_NAME,
            TextAnalyzer::from(tokenizer::TermsTokenizer::default()),
        );
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::OnCommitWithDelay)
            .try_into()?;
        Ok(Lexical {
            dir: dir.to_path_buf(),
            index,
            reader,
            writer: Arc::new(Mutex::new(WriterSlot::default())),
            fields,
            seen: Mutex::new(MetaStamp::of(&dir.join("meta.json"))),
        })
    }

    fn with_writer<T>(&self, f: impl FnOnce(&mut IndexWriter, Fields) -> Result<T>) -> Result<T> {
        let mut guard = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if guard.writer.is_none() {
            guard.writer = Some(self.open_writer()?);
        }
        let writer = guard.writer.as_mut().expect("writer was just set");
        f(writer, self.fields)
    }

    fn open_writer(&self) -> Result<IndexWriter> {
        self.index
            .writer_with_num_threads(writer_threads(), WRITER_MEMORY)
            .map_err(|e| match e {
                tantivy::TantivyError::LockFailure(..) => Error::Locked(self.dir.clone()),
                other => Error::from(other),
            })
    }

    /// Takes the writer lock now, so that a second writer process fails early with
    /// [`Error::Locked`]. Holders in this process share it: each `acquire_writer` is paired
    /// with one `release_writer`.
    pub(crate) fn acquire_writer(&self) -> Result<()> {
        let mut guard = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if guard.writer.is_none() {
            guard.writer = Some(self.open_writer()?);
        }
        guard.holders += 1;
        Ok(())
    }

    /// `f` with the writer lock held ([`Lexical::acquire_writer`]), released whatever `f`
    /// returns, so another process may write: `f`'s error first, then the release's.
    pub(crate) fn holding_writer<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.acquire_writer()?;
        let result = f();
        let released = self.release_writer();
        let value = result?;
        released?;
        Ok(value)
    }

    /// Releases one hold of the writer lock. When the last one goes, the writer stays open for
    /// [`WRITER_LINGER`] in case another sync follows, then is dropped (its merges finished),
    /// so another process may write.
    pub(crate) fn release_writer(&self) -> Result<()> {
        let mut guard = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        guard.holders = guard.holders.saturating_sub(1);
        if guard.holders > 0 || guard.writer.is_none() {
            return Ok(());
        }
        guard.releases += 1;
        let release = guard.releases;
        let slot = self.writer.clone();
        let spawned = std::thread::Builder::new()
            .name("linkly-writer-release".into())
            .spawn(move || {
                std::thread::sleep(WRITER_LINGER);
                let writer = {
                    let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
                    if guard.holders > 0 || guard.releases != release {
                        return;
                    }
                    guard.writer.take()
                };
                if let Some(w) = writer
                    && let Err(e) = w.wait_merging_threads()
                {
                    tracing::warn!(error = %e, "closing the index writer");
                }
            });
        if spawned.is_err() {
            // No thread to wait with: release now.
            if let Some(w) = guard.writer.take() {
                w.wait_merging_threads()?;
            }
        }
        Ok(())
    }

    /// Replaces (or adds) documents and deletes others; nothing is visible until `commit`.
    pub(crate) fn stage(&self, docs: &[LexicalDoc<'_>], deletes: &[u64]) -> Result<()> {
        self.with_writer(|w, f| {
            for id in deletes {
                w.delete_term(Term::from_field_u64(f.id, *id));
            }
            for d in docs {
                if !d.fresh {
                    w.delete_term(Term::from_field_u64(f.id, d.id));
                }
                w.add_document(doc!(
                    f.id => d.id,
                    f.title => d.title,
                    f.filename => d.filename,
                    f.content => d.content,
                    f.path => d.dir,
                ))?;
            }
            Ok(())
        })
    }

    /// Makes staged changes durable and visible.
    pub(crate) fn commit(&self) -> Result<()> {
        self.with_writer(|w, _| {
            w.commit()?;
            Ok(())
        })?;
        self.reloaded()
    }

    /// Drops every document (used when rebuilding after a format change).
    pub(crate) fn clear(&self) -> Result<()> {
        self.with_writer(|w, _| {
            w.delete_all_documents()?;
            w.commit()?;
            Ok(())
        })?;
        self.reloaded()
    }

    /// Reloads the reader after this process's own commit, noting the `meta.json` it saw.
    fn reloaded(&self) -> Result<()> {
        let now = MetaStamp::of(&self.dir.join("meta.json"));
        self.reader.reload()?;
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = now;
        Ok(())
    }

    /// Loads what another process committed since the reader last looked, before a search:
    /// one `stat` of `meta.json` when nothing changed. Tantivy's own reload (a watcher polling
    /// every half second) would leave a search made right after another process's sync on
    /// the older documents while the store already holds the new ones. A search that finds
    /// a reload under way goes on with the reader as it is (searches never wait on it).
    fn catch_up(&self) -> Result<()> {
        let Ok(mut seen) = self.seen.try_lock() else {
            return Ok(());
        };
        let now = MetaStamp::of(&self.dir.join("meta.json"));
        if now.is_some() && now != *seen {
            self.reader.reload()?;
            *seen = now;
        }
        Ok(())
    }

    /// BM25 search over the boosted fields. Terms are OR-ed, so documents matching more terms
    /// rank higher. `allowed`, when given, is applied inside the collector, before the top-K
    /// cut. Returns the hits (id, score) and the total number of matching documents.
    pub(crate) fn search(
        &self,
        terms: &[String],
        limit: usize,
        allowed: Option<Arc<IdSet>>,
    ) -> Result<(Vec<(u64, f32)>, usize)> {
        if terms.is_empty() || limit == 0 {
            return Ok((Vec::new(), 0));
        }
        self.catch_up()?;
        let f = self.fields;
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for term in terms {
            for (field, boost) in [
                (f.title, BOOST_TITLE),
                (f.filename, BOOST_FILENAME),
                (f.content, BOOST_CONTENT),
                (f.path, BOOST_PATH),
            ] {
                let q = TermQuery::new(
                    Term::from_field_text(field, term),
                    IndexRecordOption::WithFreqs,
                );
                clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(q), boost))));
            }
        }
        let query = BooleanQuery::new(clauses);
        let searcher = self.reader.searcher();
        let top = TopDocs::with_limit(limit).order_by_score();
        let (total, top) = match allowed {
            None => searcher.search(&query, &(Count, top))?,
            Some(set) => {
                let pred = move |id: u64| set.contains(id);
                let collector = FilterCollector::new("id".to_string(), pred, (Count, top));
                searcher.search(&query, &collector)?
            }
        };
        let mut hits = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let d: TantivyDocument = searcher.doc(addr)?;
            if let Some(id) = d.get_first(f.id).and_then(|v| v.as_u64()) {
                hits.push((id, score));
            }
        }
        Ok((hits, total))
    }

    /// The number of live documents in the lexical index.
    pub(crate) fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// The largest document id the index holds or held (deleted documents included), 0 when
    /// empty.
    pub(crate) fn max_id(&self) -> u64 {
        self.reader
            .searcher()
            .segment_readers()
            .iter()
            .filter_map(|s| s.fast_fields().u64("id").ok())
            .map(|c| c.max_value())
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::index_terms_of;

    /// A document as its raw fields: (id, title, file name, content).
    type Raw<'a> = (u64, &'a str, &'a str, &'a str);

    /// Analyses the raw fields as the sync does, then stages them.
    fn stage(lex: &Lexical, docs: &[Raw<'_>], deletes: &[u64]) -> Result<()> {
        let analysed: Vec<[String; 4]> = docs
            .iter()
            .map(|(_, title, filename, content)| {
                [title, filename, &"/home/me/docs", content].map(|t| index_terms_of(t))
            })
            .collect();
        let docs: Vec<LexicalDoc<'_>> = docs
            .iter()
            .zip(&analysed)
            .map(|(d, [title, filename, dir, content])| LexicalDoc {
                id: d.0,
                title,
                filename,
                dir,
                content,
                fresh: false,
            })
            .collect();
        lex.stage(&docs, deletes)
    }

    fn terms(q: &str) -> Vec<String> {
        tokenizer::index_terms(q)
    }

    fn ids(hits: &[(u64, f32)]) -> Vec<u64> {
        hits.iter().map(|h| h.0).collect()
    }

    fn corpus() -> Lexical {
        let lex = Lexical::in_ram().unwrap();
        stage(
            &lex,
            &[
                (
                    1,
                    "Notes",
                    "notes.md",
                    "the budget for the year and the plan",
                ),
                (2, "Budget", "b.md", "numbers"),
                (3, "Trip", "budget-trip.md", "a trip"),
                (4, "Other", "o.md", "nothing to see here"),
                (5, "Plan", "p.md", "budget plan"),
            ],
            &[],
        )
        .unwrap();
        lex.commit().unwrap();
        lex
    }

    #[test]
    fn terms_are_ored_and_fields_boosted() {
        let lex = corpus();
        let (hits, total) = lex.search(&terms("budget"), 10, None).unwrap();
        assert_eq!(total, 4);
        // Title ×3 beats file name ×2, which beats content ×1.
        assert_eq!(ids(&hits)[..2], [2, 3], "{hits:?}");
        let (hits, total) = lex.search(&terms("budget plan"), 10, None).unwrap();
        assert_eq!(total, 4);
        // Both terms (one in the title) before one.
        assert_eq!(ids(&hits)[0], 5, "{hits:?}");
        assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1));
        assert_eq!(lex.search(&[], 10, None).unwrap(), (Vec::new(), 0));
        assert_eq!(lex.search(&terms("budget"), 0, None).unwrap().1, 0);
    }

    #[test]
    fn the_filter_applies_before_the_cut() {
        let lex = corpus();
        // The best documents are filtered out; the cut of 1 still finds one.
        let allowed = Arc::new(IdSet::from_iter([1u64, 4]));
        let (hits, total) = lex.search(&terms("budget"), 1, Some(allowed)).unwrap();
        assert_eq!((ids(&hits), total), (vec![1], 1));
        let none = Arc::new(IdSet::default());
        assert_eq!(lex.search(&terms("budget"), 5, Some(none)).unwrap().1, 0);
    }

    #[test]
    fn staging_replaces_by_id_and_deletes() {
        let lex = corpus();
        assert_eq!((lex.num_docs(), lex.max_id()), (5, 5));
        // Nothing is visible before the commit.
        stage(&lex, &[(2, "Renamed", "r.md", "zebra")], &[3]).unwrap();
        assert_eq!(lex.search(&terms("zebra"), 5, None).unwrap().1, 0);
        lex.commit().unwrap();
        assert_eq!(lex.num_docs(), 4);
        assert_eq!(ids(&lex.search(&terms("zebra"), 5, None).unwrap().0), [2]);
        let (hits, _) = lex.search(&terms("budget"), 5, None).unwrap();
        let mut found = ids(&hits);
        found.sort_unstable();
        assert_eq!(found, [1, 5], "2 was replaced, 3 deleted");
        // Staging the same document twice is idempotent (a redone batch).
        stage(&lex, &[(2, "Renamed", "r.md", "zebra")], &[]).unwrap();
        lex.commit().unwrap();
        assert_eq!(lex.num_docs(), 4);
        lex.clear().unwrap();
        assert_eq!(lex.num_docs(), 0);
    }

    #[test]
    fn cjk_words_are_found_inside_running_text() {
        let lex = Lexical::in_ram().unwrap();
        stage(
            &lex,
            &[(7, "", "ja.txt", "新しいコンポーネントを追加した")],
            &[],
        )
        .unwrap();
        lex.commit().unwrap();
        assert_eq!(
            ids(&lex.search(&terms("コンポーネント"), 5, None).unwrap().0),
            [7]
        );
        assert_eq!(
            lex.search(&terms("ポーネ追"), 5, None).unwrap().1,
            1,
            "bigrams OR-ed"
        );
    }
}
