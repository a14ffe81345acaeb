//! The full-text index's BM25 ranking as stored numbers: for each document of a collection,
//! what each of its terms adds to the score of a query holding that term (its *impact*). A
//! query's score of a document is then the sum of the impacts of the query's distinct terms
//! ([`crate::Index::query_terms`]): the same score, to the float rounding, as the tantivy index
//! of the same documents gives (fields title ×3, file name ×2, content ×1, folder ×0.5, each
//! with its own length normalisation and IDF, lengths quantised as tantivy stores them).
//!
//! A database that cannot run tantivy (a gateway's, sharded over PostgreSQL servers) stores the
//! impacts and ranks with a sum; they depend on the whole collection (IDF, average lengths), so
//! they are recomputed when it changes.

use std::collections::HashMap;

use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::Bm25Weight;

use crate::indexer::{FieldTerms, LEXICAL_TEXT_BYTES, searchable};
use crate::{analysis, keywords, lexical};

/// One document as [`bm25_impacts`] takes it: what the index's four fields are made of.
#[derive(Debug, Clone, Copy)]
pub struct ImpactDoc<'a> {
    /// Its path as stored (the folder and file name fields come from it).
    pub path: &'a str,
    /// Its title, when it declares one.
    pub title: Option<&'a str>,
    /// Its extracted text (the first 8 MiB are indexed, as locally).
    pub text: &'a str,
}

/// One field's terms in one document: each distinct term with its count (sorted by term), and
/// the field's length in terms.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct FieldCounts {
    counts: Vec<(String, u32)>,
    len: u32,
}

impl FieldCounts {
    fn of(analysed: &str) -> FieldCounts {
        let mut counts: HashMap<&str, u32> = HashMap::new();
        let mut len = 0u32;
        for term in analysed.split(' ').filter(|t| !t.is_empty()) {
            *counts.entry(term).or_default() += 1;
            len += 1;
        }
        let mut counts: Vec<(String, u32)> = counts
            .into_iter()
            .map(|(t, n)| (t.to_string(), n))
            .collect();
        counts.sort_unstable();
        FieldCounts { counts, len }
    }
}

/// The boosts of the four fields, in the order [`DocTerms`] keeps them.
const BOOSTS: [f32; 4] = [
    lexical::BOOST_TITLE,
    lexical::BOOST_FILENAME,
    lexical::BOOST_CONTENT,
    lexical::BOOST_PATH,
];

/// A document's full-text terms as counts, per field (title, file name, content, folder): what
/// its BM25 impacts are computed from. A store that cannot keep a full-text index (a gateway's
/// database) keeps these per document, compactly ([`DocTerms::encode`]), and recomputes every
/// document's impacts from them when its collection changes ([`bm25_impacts_of`]), without
/// analysing any text again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocTerms {
    fields: [FieldCounts; 4],
}

impl DocTerms {
    /// The terms of a document, its text analysed as the index analyses it.
    pub fn of(doc: &ImpactDoc<'_>) -> DocTerms {
        let content = analysis::index_terms_of(searchable(doc.text, LEXICAL_TEXT_BYTES));
        DocTerms::of_fields(&FieldTerms::of(doc.path, doc.title, content))
    }

    fn of_fields(t: &FieldTerms) -> DocTerms {
        DocTerms {
            fields: [
                FieldCounts::of(&t.title),
                FieldCounts::of(&t.filename),
                FieldCounts::of(&t.content),
                FieldCounts::of(&t.dir),
            ],
        }
    }

    /// A compact text form: one line per field, its length then each term and its count,
    /// separated by spaces (analysed terms hold no whitespace).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        for (i, f) in self.fields.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str(&f.len.to_string());
            for (term, n) in &f.counts {
                out.push(' ');
                out.push_str(term);
                out.push(' ');
                out.push_str(&n.to_string());
            }
        }
        out
    }

    /// The terms back from [`DocTerms::encode`]'s form; `None` when it is not that form.
    pub fn decode(text: &str) -> Option<DocTerms> {
        let mut fields: [FieldCounts; 4] = Default::default();
        let mut lines = text.split('\n');
        for field in &mut fields {
            let mut parts = lines.next()?.split(' ');
            field.len = parts.next()?.parse().ok()?;
            while let Some(term) = parts.next() {
                let n: u32 = parts.next()?.parse().ok()?;
                if term.is_empty() || n == 0 {
                    return None;
                }
                field.counts.push((term.to_string(), n));
            }
        }
        lines.next().is_none().then_some(DocTerms { fields })
    }
}

/// What a store keeps of one document extracted elsewhere, as a sync would compute it for the
/// same text (counts, keywords, abstract), with its full-text terms: a gateway serves the
/// tools' answers from these without an index of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocAnalysis {
    /// The title, when it declares a non-blank one.
    pub title: Option<String>,
    /// Words of the text (a CJK character is one word).
    pub word_count: u64,
    /// Characters of the text, `\r` excluded.
    pub char_count: u64,
    /// Lines of the text.
    pub total_lines: u32,
    /// The document's top keywords.
    pub keywords: Vec<String>,
    /// The start of the text, whitespace collapsed.
    pub abstract_text: String,
    /// Its full-text terms.
    pub terms: DocTerms,
}

/// Analyses a document extracted elsewhere, stored at `path` (`/<root>/…`), as a sync or
/// [`crate::Index::ingest`] analyses one.
pub fn analyse_document(path: &str, title: Option<&str>, text: &str) -> DocAnalysis {
    let analysis = analysis::analyse_document(text, LEXICAL_TEXT_BYTES);
    let title = title.filter(|t| !t.trim().is_empty());
    DocAnalysis {
        title: title.map(str::to_string),
        word_count: linkly_core::word_count(text),
        char_count: linkly_core::char_count(text),
        total_lines: linkly_extract::Extracted::text(linkly_core::DocType::Txt, text.to_string())
            .total_lines(),
        keywords: analysis.keywords,
        abstract_text: keywords::abstract_of(text),
        terms: DocTerms::of_fields(&FieldTerms::of(path, title, analysis.terms)),
    }
}

/// The BM25 impacts of every document of a collection, in the order given: each document's
/// distinct terms with what each adds to a query's score, sorted by term.
pub fn bm25_impacts(docs: &[ImpactDoc<'_>]) -> Vec<Vec<(String, f32)>> {
    let terms: Vec<DocTerms> = docs.iter().map(DocTerms::of).collect();
    bm25_impacts_of(&terms)
}

/// [`bm25_impacts`] of documents kept as their terms.
pub fn bm25_impacts_of(docs: &[DocTerms]) -> Vec<Vec<(String, f32)>> {
    let n = docs.len() as u64;
    // Per field: documents holding each term, and the terms in all.
    let mut doc_freq: [HashMap<&str, u64>; 4] = Default::default();
    let mut tokens = [0u64; 4];
    for doc in docs {
        for (f, field) in doc.fields.iter().enumerate() {
            tokens[f] += u64::from(field.len);
            for (term, _) in &field.counts {
                *doc_freq[f].entry(term.as_str()).or_default() += 1;
            }
        }
    }
    let average = tokens.map(|t| if n == 0 { 0.0 } else { t as f32 / n as f32 });
    // One weight per field and document frequency (their cache of 256 length factors is the
    // costly part; frequencies repeat).
    let mut weights: [HashMap<u64, Bm25Weight>; 4] = Default::default();
    docs.iter()
        .map(|doc| {
            let mut impacts: HashMap<&str, f32> = HashMap::new();
            for (f, field) in doc.fields.iter().enumerate() {
                let norm = FieldNormReader::fieldnorm_to_id(field.len);
                for (term, tf) in &field.counts {
                    let df = doc_freq[f][term.as_str()];
                    let weight = weights[f].entry(df).or_insert_with(|| {
                        Bm25Weight::for_one_term_without_explain(df, n, average[f])
                            .boost_by(BOOSTS[f])
                    });
                    *impacts.entry(term.as_str()).or_default() += weight.score(norm, *tf);
                }
            }
            let mut out: Vec<(String, f32)> = impacts
                .into_iter()
                .map(|(t, s)| (t.to_string(), s))
                .collect();
            out.sort_by(|a, b| a.0.cmp(&b.0));
            out
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexical::{Lexical, LexicalDoc};

    /// Documents with titles and without, CJK text, repeated words, one long and one empty.
    fn corpus() -> Vec<(String, Option<String>, String)> {
        let mut docs = vec![
            (
                "/notes/budget.md".to_string(),
                Some("Budget 2024".to_string()),
                "The budget for the year and the plan. Budget lines.".to_string(),
            ),
            (
                "/notes/plan.md".to_string(),
                Some("Plan".to_string()),
                "budget plan".to_string(),
            ),
            (
                "/trips/budget-trip.md".to_string(),
                None,
                "a trip to Tokyo".to_string(),
            ),
            (
                "/ja/東京.txt".to_string(),
                Some("東京タワー".to_string()),
                "新しいコンポーネントを追加した。東京タワーの予算。".to_string(),
            ),
            ("/empty.txt".to_string(), None, String::new()),
        ];
        for i in 0..40 {
            docs.push((
                format!("/gen/doc{i}.txt"),
                (i % 3 == 0).then(|| format!("Report {i}")),
                format!(
                    "{} the annual plan {} and {}",
                    "budget ".repeat(i % 5),
                    "trip ".repeat(i % 7),
                    "word ".repeat(i * 3)
                ),
            ));
        }
        docs
    }

    #[test]
    fn summed_impacts_are_the_full_text_index_scores() {
        let docs = corpus();
        let lex = Lexical::in_ram().unwrap();
        let fields: Vec<FieldTerms> = docs
            .iter()
            .map(|(path, title, text)| {
                FieldTerms::of(path, title.as_deref(), analysis::index_terms_of(text))
            })
            .collect();
        let staged: Vec<LexicalDoc<'_>> = fields
            .iter()
            .enumerate()
            .map(|(i, t)| LexicalDoc {
                id: i as u64 + 1,
                title: &t.title,
                filename: &t.filename,
                dir: &t.dir,
                content: &t.content,
                fresh: true,
            })
            .collect();
        lex.stage(&staged, &[]).unwrap();
        lex.commit().unwrap();
        let impacts = bm25_impacts(
            &docs
                .iter()
                .map(|(path, title, text)| ImpactDoc {
                    path,
                    title: title.as_deref(),
                    text,
                })
                .collect::<Vec<_>>(),
        );
        for query in [
            "budget",
            "budget plan trip",
            "東京",
            "report annual word",
            "notes",
        ] {
            let mut terms = crate::Index::query_terms(query);
            let mut seen = std::collections::HashSet::new();
            terms.retain(|t| seen.insert(t.clone()));
            let (hits, _) = lex.search(&terms, 100, None).unwrap();
            assert!(!hits.is_empty(), "{query}");
            for (id, score) in hits {
                let doc = &impacts[id as usize - 1];
                let summed: f32 = terms
                    .iter()
                    .filter_map(|t| doc.iter().find(|(d, _)| d == t).map(|(_, s)| s))
                    .sum();
                assert!(
                    (summed - score).abs() <= 1e-4 * score.max(1.0),
                    "{query}: document {id}: tantivy {score}, impacts {summed}"
                );
            }
        }
        assert!(bm25_impacts(&[]).is_empty());
        assert!(
            impacts
                .iter()
                .flatten()
                .all(|(_, s)| s.is_finite() && *s > 0.0)
        );
    }

    #[test]
    fn stored_terms_give_the_same_impacts_as_the_texts() {
        let docs = corpus();
        let views: Vec<ImpactDoc<'_>> = docs
            .iter()
            .map(|(path, title, text)| ImpactDoc {
                path,
                title: title.as_deref(),
                text,
            })
            .collect();
        let terms: Vec<DocTerms> = views
            .iter()
            .map(|d| DocTerms::decode(&DocTerms::of(d).encode()).expect("decodes"))
            .collect();
        assert_eq!(bm25_impacts_of(&terms), bm25_impacts(&views));
        assert_eq!(terms[0], DocTerms::of(&views[0]));
        for bad in ["", "1 a", "x\n0\n0\n0", "0 a 0\n0\n0\n0", "0\n0\n0\n0\n0"] {
            assert!(DocTerms::decode(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn a_published_documents_analysis_is_what_an_ingest_stores() {
        let dir = tempfile::tempdir().unwrap();
        let index = crate::Index::open(dir.path()).unwrap();
        let text = "# Budget\n\nThe budget for 2024, the budget lines and the 東京タワー plan.\n";
        index
            .ingest(
                vec![crate::IngestDoc {
                    id: Some(linkly_core::DocId(4)),
                    path: "/notes/budget.md".into(),
                    doc_type: linkly_core::DocType::Md,
                    hash: "h".into(),
                    size: text.len() as u64,
                    modified_at: 5,
                    extracted: linkly_extract::Extracted {
                        title: Some("Budget".into()),
                        ..linkly_extract::Extracted::text(linkly_core::DocType::Md, text.into())
                    },
                }],
                &[],
            )
            .unwrap();
        let stored = index.doc(linkly_core::DocId(4)).unwrap().unwrap();
        let a = analyse_document("/notes/budget.md", Some("Budget"), text);
        assert_eq!(a.title, stored.title);
        assert_eq!(
            (a.word_count, a.char_count, a.total_lines),
            (stored.word_count, stored.char_count, stored.total_lines)
        );
        assert_eq!(a.keywords, stored.keywords);
        assert_eq!(a.abstract_text, stored.abstract_text);
        assert_eq!(
            a.terms,
            DocTerms::of(&ImpactDoc {
                path: "/notes/budget.md",
                title: Some("Budget"),
                text,
            })
        );
        assert_eq!(analyse_document("/a.md", Some("  "), "").title, None);
    }
}
