//! Documents extracted elsewhere — a gateway's published libraries — indexed as a sync indexes
//! files (counts, keywords, abstract, store, full-text), without reading any file.

use std::collections::HashSet;

use linkly_core::{DocId, DocType};
use linkly_extract::Extracted;

use crate::indexer::{Prepared, SyncReport, extracted_doc};
use crate::{Index, Result};

/// A document to index whose text was extracted elsewhere.
#[derive(Debug, Clone)]
pub struct IngestDoc {
    /// The id to store it under, when the caller numbers its documents (a gateway numbers them
    /// as its database does, so every process gives a document the same id). A path held
    /// under another id, or an id held by another path, is replaced. `None`: a known path
    /// keeps its id and a new one takes the next, as in a sync.
    pub id: Option<DocId>,
    /// Its path, the key of the store (`/<root>/<relative path>` on a gateway).
    pub path: String,
    /// Its type.
    pub doc_type: DocType,
    /// The content hash of its source.
    pub hash: String,
    /// The source's size in bytes.
    pub size: u64,
    /// The source's modification time, Unix milliseconds.
    pub modified_at: i64,
    /// The text, title and outline.
    pub extracted: Extracted,
}

/// Documents per store transaction and full-text commit.
const INGEST_BATCH: usize = 512;

impl Index {
    /// Indexes documents extracted elsewhere and takes `removed` paths out, under the writer
    /// lock, as a sync does: a crash in between leaves dirty rows that the next
    /// [`Index::rebuild_lexical`] or sync repairs.
    pub fn ingest(&self, docs: Vec<IngestDoc>, removed: &[String]) -> Result<SyncReport> {
        let started = std::time::Instant::now();
        self.with_sync_lock(|| {
            let mut report = SyncReport::default();
            // What goes first: removed paths, and rows that an explicit id or path displaces.
            let mut deletes: Vec<u64> = Vec::new();
            let mut seen = HashSet::new();
            for path in removed {
                if let Some(rec) = self.store.get_by_path(path)? {
                    deletes.push(rec.id.0);
                }
            }
            report.removed = deletes.len() as u64;
            let mut previous = HashSet::new();
            let mut changed = Vec::new();
            for d in &docs {
                let at_path = self.store.get_by_path(&d.path)?;
                if let Some(id) = d.id {
                    if let Some(rec) = &at_path
                        && rec.id != id
                    {
                        deletes.push(rec.id.0);
                    }
                    if let Some(rec) = self.store.get(id)?
                        && rec.path != d.path
                    {
                        deletes.push(rec.id.0);
                    }
                }
                if let Some(rec) = at_path.filter(|r| d.id.is_none_or(|id| id == r.id)) {
                    // Updated in place: its old vectors go.
                    changed.push(rec.id.0);
                    previous.insert(d.path.clone());
                }
            }
            deletes.retain(|id| seen.insert(*id));
            if !deletes.is_empty() {
                self.lexical.stage(&[], &deletes)?;
                self.lexical.commit()?;
                self.store.delete(&deletes)?;
                self.forget_vectors_of(&deletes)?;
            }
            let mut docs = docs.into_iter().peekable();
            while docs.peek().is_some() {
                let batch: Vec<Prepared> = docs
                    .by_ref()
                    .take(INGEST_BATCH)
                    .map(|d| {
                        if previous.contains(&d.path) {
                            report.updated += 1;
                        } else {
                            report.added += 1;
                        }
                        report.bytes += d.size;
                        prepared(d)
                    })
                    .collect();
                self.write_batch(&batch)?;
            }
            self.forget_vectors_of(&changed)?;
            report.elapsed_ms = started.elapsed().as_millis() as u64;
            Ok(report)
        })
    }
}

fn prepared(d: IngestDoc) -> Prepared {
    let (mut doc, content) = extracted_doc(d.path, d.size, d.modified_at, d.hash, d.extracted);
    // The caller's type, and its id when it numbers its documents.
    doc.doc_type = d.doc_type;
    doc.id = d.id.map(|id| id.0);
    Prepared::new(doc, content, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: Option<u64>, path: &str, text: &str) -> IngestDoc {
        IngestDoc {
            id: id.map(DocId),
            path: path.to_string(),
            doc_type: DocType::Md,
            hash: format!("h-{text}"),
            size: text.len() as u64,
            modified_at: 1_700_000_000_000,
            extracted: Extracted::text(DocType::Md, text.to_string()),
        }
    }

    fn hits(index: &Index, word: &str) -> Vec<u64> {
        let opts = crate::HybridOptions {
            arms: crate::Arms::Lexical,
            ..Default::default()
        };
        let mut ids: Vec<u64> = index
            .hybrid_search(word, 10, &crate::DocFilter::default(), &opts)
            .unwrap()
            .hits
            .into_iter()
            .map(|h| h.id.0)
            .collect();
        ids.sort();
        ids
    }

    #[test]
    fn documents_are_indexed_under_the_callers_ids_and_replaced_by_path() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(dir.path()).unwrap();
        let r = index
            .ingest(
                vec![
                    doc(Some(7), "/root/a.md", "alpha zebra\nsecond line"),
                    doc(Some(3), "/root/sub/b.md", "beta zebra"),
                ],
                &[],
            )
            .unwrap();
        assert_eq!((r.added, r.updated, r.removed), (2, 0, 0));
        let a = index.doc_by_path("/root/a.md").unwrap().unwrap();
        assert_eq!(a.id, DocId(7));
        assert_eq!(a.total_lines, 2);
        assert_eq!(index.content(DocId(3)).unwrap().unwrap(), "beta zebra");
        assert_eq!(hits(&index, "zebra"), vec![3, 7]);

        // A new version of a path under the same id: updated in place.
        let r = index
            .ingest(vec![doc(Some(7), "/root/a.md", "gamma only")], &[])
            .unwrap();
        assert_eq!((r.added, r.updated), (0, 1));
        assert_eq!(hits(&index, "zebra"), vec![3]);
        assert_eq!(hits(&index, "gamma"), vec![7]);

        // The path comes back under a new id (removed and published again): the old id is gone.
        index
            .ingest(vec![doc(Some(9), "/root/a.md", "delta")], &[])
            .unwrap();
        assert!(index.doc(DocId(7)).unwrap().is_none());
        assert_eq!(hits(&index, "delta"), vec![9]);
        assert!(hits(&index, "gamma").is_empty());

        // Removal by path; a sync-style caller without ids gets the next free one.
        let r = index
            .ingest(
                vec![doc(None, "/root/c.md", "epsilon")],
                &["/root/sub/b.md".into()],
            )
            .unwrap();
        assert_eq!((r.added, r.removed), (1, 1));
        assert!(index.doc(DocId(3)).unwrap().is_none());
        assert!(hits(&index, "zebra").is_empty());
        assert_eq!(
            index.doc_by_path("/root/c.md").unwrap().unwrap().id,
            DocId(10)
        );
        assert!(index.lexical_consistent().unwrap());
    }
}
