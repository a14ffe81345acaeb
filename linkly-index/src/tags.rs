//! Note tags kept in the store (`doc_tags`, one row per document and tag, and
//! `doc_tag_stamps`, the `docs.hash` each document's tags were read at), so that a tag filter
//! is one SQL query instead of a read of every note.
//!
//! The index does not parse tags itself: what a tag is belongs to the notes (`linkly-tools`).
//! [`Index::catch_up_tags`] asks the caller for the tags of the Markdown documents under a
//! folder that were indexed (or re-indexed) since their tags were stored; every other document
//! is answered from the table. A store made before the tables existed gets them empty at open,
//! so its notes are read once, at the first catch-up. Deleting a document deletes its tags.

use rusqlite::params;

use crate::filter::dir_range;
use crate::store::write_tx;
use crate::{Index, Result};

/// The stored type of the documents that may carry tags.
fn markdown() -> &'static str {
    linkly_core::DocType::Md.as_str()
}

impl Index {
    /// Brings the stored tags of the Markdown documents under `dir` up to date: `read` is
    /// called with the path of each one whose indexed bytes (its `docs.hash`) changed since its
    /// tags were stored, or that has none stored, and returns its tags (normalised; `None`:
    /// unreadable, stored as no tags until it is indexed again). Returns how many were read:
    /// none when nothing under `dir` was indexed since the last catch-up.
    pub fn catch_up_tags(
        &self,
        dir: &str,
        mut read: impl FnMut(&str) -> Option<Vec<String>>,
    ) -> Result<usize> {
        let (lo, hi) = dir_range(dir);
        let stale: Vec<(i64, String, String)> = {
            let conn = self.store.reader();
            let mut stmt = conn.prepare_cached(
                "SELECT d.id, d.path, d.hash FROM docs d \
                 LEFT JOIN doc_tag_stamps s ON s.doc_id = d.id \
                 WHERE d.path >= ?1 AND d.path < ?2 AND d.doc_type = ?3 \
                 AND (s.hash IS NULL OR s.hash != d.hash)",
            )?;
            let rows = stmt.query_map(params![lo, hi, markdown()], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        if stale.is_empty() {
            return Ok(0);
        }
        let read: Vec<(i64, String, Vec<String>)> = stale
            .into_iter()
            .map(|(id, path, hash)| (id, hash, read(&path).unwrap_or_default()))
            .collect();
        let mut conn = self.store.conn();
        let tx = write_tx(&mut conn)?;
        {
            let mut clear = tx.prepare_cached("DELETE FROM doc_tags WHERE doc_id = ?1")?;
            let mut add =
                tx.prepare_cached("INSERT OR IGNORE INTO doc_tags (doc_id, tag) VALUES (?1, ?2)")?;
            let mut stamp = tx.prepare_cached(
                "INSERT OR REPLACE INTO doc_tag_stamps (doc_id, hash) VALUES (?1, ?2)",
            )?;
            for (id, hash, tags) in &read {
                clear.execute([id])?;
                for tag in tags {
                    add.execute(params![id, tag])?;
                }
                stamp.execute(params![id, hash])?;
            }
        }
        tx.commit()?;
        tracing::debug!(dir, read = read.len(), "note tags caught up");
        Ok(read.len())
    }

    /// The paths of the Markdown documents under `dir` whose stored tags include every tag of
    /// `tags` (compared as given: pass them normalised), ordered by path; with no tags, every
    /// Markdown document under `dir` whose tags are stored. Reads no file: call
    /// [`Index::catch_up_tags`] first.
    pub fn tagged_paths(&self, dir: &str, tags: &[String]) -> Result<Vec<String>> {
        let (lo, hi) = dir_range(dir);
        let mut sql = String::from(
            "SELECT d.path FROM docs d JOIN doc_tag_stamps s ON s.doc_id = d.id \
             WHERE d.path >= ?1 AND d.path < ?2 AND d.doc_type = ?3",
        );
        let mut values: Vec<rusqlite::types::Value> =
            vec![lo.into(), hi.into(), markdown().to_string().into()];
        let mut wanted: Vec<&String> = tags.iter().collect();
        wanted.sort();
        wanted.dedup();
        if !wanted.is_empty() {
            let marks: Vec<String> = wanted
                .iter()
                .enumerate()
                .map(|(i, _)| format!("?{}", i + 4))
                .collect();
            sql.push_str(&format!(
                " AND d.id IN (SELECT doc_id FROM doc_tags WHERE tag IN ({}) \
                 GROUP BY doc_id HAVING COUNT(*) = {})",
                marks.join(", "),
                wanted.len()
            ));
            values.extend(
                wanted
                    .iter()
                    .map(|t| rusqlite::types::Value::Text((*t).clone())),
            );
        }
        sql.push_str(" ORDER BY d.path");
        let conn = self.store.reader();
        let mut stmt = conn.prepare(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(values), |r| {
            r.get::<_, String>(0)
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
