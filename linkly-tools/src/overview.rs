//! What the person's window shows on its first page: the documents by type and the files
//! indexed by name only, with their reasons, next to the index's [`Coverage`].

use serde::Serialize;

use crate::{Coverage, Linkly, Result};

/// Files listed per skip-reason code at most.
pub const SKIPPED_PER_CODE: usize = 50;

/// A file indexed by name only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedFile {
    /// `local://<n>`.
    pub doc_id: String,
    /// The absolute path.
    pub path: String,
    /// The doc-type token.
    pub doc_type: String,
    /// The skip-reason code (`linkly_core::SkipReason::CODES`).
    pub code: String,
    /// What the extractor said (may be empty).
    pub detail: String,
}

/// The index at a glance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Overview {
    /// State, counts, embeddings, model, last syncs.
    pub coverage: Coverage,
    /// Documents per doc-type token, the most common first.
    pub by_type: Vec<(String, u64)>,
    /// Files indexed by name only, by code then path, at most [`SKIPPED_PER_CODE`] per code
    /// (`coverage.skipped` has the full counts).
    pub skipped: Vec<SkippedFile>,
}

impl Linkly {
    /// The index at a glance, for a person's window.
    pub fn overview(&self) -> Result<Overview> {
        let coverage = self.coverage()?;
        let by_type = self
            .local_index()?
            .type_counts()?
            .into_iter()
            .map(|(t, n)| (t.as_str().to_string(), n))
            .collect();
        let skipped = self
            .local_index()?
            .skipped_docs(SKIPPED_PER_CODE)?
            .into_iter()
            .map(|d| SkippedFile {
                doc_id: self.doc_address(d.id),
                path: d.path,
                doc_type: d.doc_type.as_str().to_string(),
                code: d.code,
                detail: d.detail,
            })
            .collect();
        Ok(Overview {
            coverage,
            by_type,
            skipped,
        })
    }
}
