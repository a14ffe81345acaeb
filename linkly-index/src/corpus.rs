//! What the tools read of a collection of documents ([`Corpus`]): records, texts, catalogue
//! pages and hybrid search. [`Index`] is the local one; a gateway implements it over its
//! database, so that every tool answers the same way over a published library without any
//! index of its own.

use linkly_core::DocId;

use crate::{
    CatalogPage, CatalogSort, DocFilter, DocRecord, DocSummary, HybridOptions, HybridOutcome,
    Index, ModelStatus, Result,
};

/// A collection of documents the tools read: [`Index`] over a data directory, or another
/// store of documents extracted elsewhere (a gateway's published library). Paths are absolute
/// (`/…`) and document ids are stable; every method means what [`Index`]'s method of the same
/// name means.
pub trait Corpus: Send + Sync + std::fmt::Debug {
    /// One document's record, if the id resolves.
    fn doc(&self, id: DocId) -> Result<Option<DocRecord>>;
    /// The record of the document at a path, if there is one.
    fn doc_by_path(&self, path: &str) -> Result<Option<DocRecord>>;
    /// Records of several documents (ids that do not resolve are left out), in order.
    fn docs(&self, ids: &[DocId]) -> Result<Vec<DocRecord>>;
    /// The extracted text of a document.
    fn content(&self, id: DocId) -> Result<Option<String>>;
    /// The texts of several documents, in the order of `ids` (`None` for an id that does not
    /// resolve): one round trip for a store behind a network.
    fn contents(&self, ids: &[DocId]) -> Result<Vec<Option<String>>> {
        ids.iter().map(|id| self.content(*id)).collect()
    }
    /// How many documents it holds.
    fn doc_count(&self) -> Result<u64>;
    /// How many documents a filter covers.
    fn catalog_count(&self, filter: &DocFilter) -> Result<u64>;
    /// One page of the documents a filter covers, in a stable order, with the total.
    fn catalog_page(
        &self,
        filter: &DocFilter,
        sort: CatalogSort,
        limit: usize,
        offset: usize,
    ) -> Result<CatalogPage>;
    /// The light facts of every document a filter covers, ordered by path.
    fn catalog_summaries(&self, filter: &DocFilter) -> Result<Vec<DocSummary>>;
    /// The path of every document a filter covers, ordered by path.
    fn catalog_paths(&self, filter: &DocFilter) -> Result<Vec<String>>;
    /// The README directly in `dir` (README.md, readme.txt, …; any case), if any.
    fn readme_in(&self, dir: &str) -> Result<Option<(DocId, String)>>;
    /// Hybrid search, as [`Index::hybrid_search`].
    fn hybrid_search(
        &self,
        query: &str,
        limit: usize,
        filter: &DocFilter,
        opts: &HybridOptions,
    ) -> Result<HybridOutcome>;
    /// How many documents BM25 matches for a query, with no filter.
    fn keyword_total(&self, query: &str) -> Result<usize>;
    /// The state of the embedding model that embeds its queries.
    fn model_status(&self) -> ModelStatus;
}

impl Corpus for Index {
    fn doc(&self, id: DocId) -> Result<Option<DocRecord>> {
        Index::doc(self, id)
    }

    fn doc_by_path(&self, path: &str) -> Result<Option<DocRecord>> {
        Index::doc_by_path(self, path)
    }

    fn docs(&self, ids: &[DocId]) -> Result<Vec<DocRecord>> {
        Index::docs(self, ids)
    }

    fn content(&self, id: DocId) -> Result<Option<String>> {
        Index::content(self, id)
    }

    fn doc_count(&self) -> Result<u64> {
        Index::doc_count(self)
    }

    fn catalog_count(&self, filter: &DocFilter) -> Result<u64> {
        Index::catalog_count(self, filter)
    }

    fn catalog_page(
        &self,
        filter: &DocFilter,
        sort: CatalogSort,
        limit: usize,
        offset: usize,
    ) -> Result<CatalogPage> {
        Index::catalog_page(self, filter, sort, limit, offset)
    }

    fn catalog_summaries(&self, filter: &DocFilter) -> Result<Vec<DocSummary>> {
        Index::catalog_summaries(self, filter)
    }

    fn catalog_paths(&self, filter: &DocFilter) -> Result<Vec<String>> {
        Index::catalog_paths(self, filter)
    }

    fn readme_in(&self, dir: &str) -> Result<Option<(DocId, String)>> {
        Index::readme_in(self, dir)
    }

    fn hybrid_search(
        &self,
        query: &str,
        limit: usize,
        filter: &DocFilter,
        opts: &HybridOptions,
    ) -> Result<HybridOutcome> {
        Index::hybrid_search(self, query, limit, filter, opts)
    }

    fn keyword_total(&self, query: &str) -> Result<usize> {
        Index::keyword_total(self, query)
    }

    fn model_status(&self) -> ModelStatus {
        Index::model_status(self)
    }
}
