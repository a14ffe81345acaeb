//! Hybrid ranking: the BM25 arm (tantivy), the vector arm (the nearest chunks, a document's
//! best chunk standing for it) and their fusion ([`Fusion`]: by reciprocal rank, or by a
//! weighted sum of the arms' scores, each scaled to its candidates' range).
//!
//! Both arms apply the filter before their cut, so a filter never starves the list: it is
//! compiled to SQL and run once per search into the set of allowed ids ([`IdSet`]), which the
//! BM25 collector and the vector scan consult per candidate. While
//! vectors are not available, [`Index::hybrid_search`] answers from BM25 alone and says
//! [`SearchMode::Keyword`]; it never waits for a model.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use linkly_core::DocId;

use crate::filter::IdSet;
use crate::{DocFilter, Index, Result, tokenizer};

/// Which arms of the ranking to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Arms {
    /// BM25 and vectors, fused (keyword-only when vectors are not available).
    #[default]
    Both,
    /// BM25 only.
    Lexical,
    /// Vectors only (benchmarks); empty when vectors are not available.
    Vector,
}

/// How the two arms' candidates become one list.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// Reciprocal rank: a document at rank r of an arm scores `weight / (k + r)` there (the
    /// BM25 arm's weight is 1), summed over the arms it appears in. Only ranks count, so a
    /// clear winner of one arm and that arm's tenth document differ by little.
    Rank {
        /// The constant k (60 in the original paper).
        k: f32,
        /// The vector arm's weight.
        vector_weight: f32,
    },
    /// A convex combination of scores: each arm's scores are scaled to 0..1 over its own
    /// candidates (min-max), and a document scores `w · vector + (1 − w) · bm25`, 0 for an
    /// arm it is missing from. Keeps how far apart the candidates are, which ranks forget.
    Score {
        /// The vector arm's weight w, 0..1.
        vector_weight: f32,
    },
}

impl Fusion {
    /// The default: scores, with vectors and BM25 weighed equally. Measured against reciprocal
    /// rank on SciFact (English, two models) and on the cross-language set (docs/models.md,
    /// `cargo xtask bench fusion`).
    pub const DEFAULT: Fusion = Fusion::Score { vector_weight: 0.5 };
}

/// Options of [`Index::hybrid_search`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HybridOptions {
    /// How the arms are fused.
    pub fusion: Fusion,
    /// Candidates taken from each arm before fusion.
    pub candidates: usize,
    /// The arms to use.
    pub arms: Arms,
}

impl Default for HybridOptions {
    fn default() -> Self {
        HybridOptions {
            fusion: Fusion::DEFAULT,
            candidates: 100,
            arms: Arms::Both,
        }
    }
}

/// How a search was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchMode {
    /// BM25 only.
    Keyword,
    /// BM25 and vectors.
    Hybrid,
}

impl SearchMode {
    /// `keyword` or `hybrid`.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Keyword => "keyword",
            SearchMode::Hybrid => "hybrid",
        }
    }
}

/// A document's place in the BM25 arm.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LexicalArm {
    /// 1-based rank.
    pub rank: usize,
    /// BM25 score.
    pub score: f32,
}

/// A document's place in the vector arm, through its best chunk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VectorArm {
    /// 1-based rank among documents.
    pub rank: usize,
    /// Cosine similarity of the best chunk.
    pub score: f32,
    /// The best chunk's first line.
    pub start_line: u32,
    /// Its last line (inclusive).
    pub end_line: u32,
}

/// One document of a hybrid search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HybridHit {
    /// The document.
    pub id: DocId,
    /// The fused score (see [`Fusion`]) in hybrid mode, BM25 in keyword mode, cosine for
    /// vectors alone.
    pub score: f32,
    /// Its BM25 arm, when it was a candidate there.
    pub lexical: Option<LexicalArm>,
    /// Its vector arm, when it was a candidate there.
    pub vector: Option<VectorArm>,
}

/// The result of [`Index::hybrid_search`].
#[derive(Debug, Clone, PartialEq)]
pub struct HybridOutcome {
    /// How it was answered.
    pub mode: SearchMode,
    /// The best documents, best first.
    pub hits: Vec<HybridHit>,
    /// Documents matched in all (BM25 matches, or the fused candidates when more).
    pub total: usize,
}

/// The hit of document `id` in `fused`: a new one, unscored and in neither arm, the first time.
fn hit_of(fused: &mut HashMap<u64, HybridHit>, id: u64) -> &mut HybridHit {
    fused.entry(id).or_insert(HybridHit {
        id: DocId(id),
        score: 0.0,
        lexical: None,
        vector: None,
    })
}

/// Fuses the arms' candidates into one list of documents, best first, at most `limit` long,
/// and says how many candidates there were.
///
/// With both arms a document scores as [`HybridOptions::fusion`] says; with the vector arm
/// alone it scores its cosine. Ties go to the higher BM25 score, then to the smaller id, so the
/// order is total and repeatable. Every candidate is scaled on one range per arm: a search over
/// several collections (a gateway's libraries) fuses their candidates together with it, so the
/// best hit of a weak collection does not tie with that of a strong one.
pub fn fuse(
    lexical: Vec<(u64, LexicalArm)>,
    vector: Vec<(u64, VectorArm)>,
    opts: &HybridOptions,
    limit: usize,
) -> (Vec<HybridHit>, usize) {
    let lexical_scale = Scale::of(lexical.iter().map(|(_, a)| a.score));
    let vector_scale = Scale::of(vector.iter().map(|(_, a)| a.score));
    // What one arm gives a document, from its rank and score there.
    let part = |vector_arm: bool, rank: usize, score: f32| -> f32 {
        match (opts.arms, opts.fusion) {
            (Arms::Vector, _) if vector_arm => score,
            (Arms::Vector, _) => 0.0,
            (_, Fusion::Rank { k, vector_weight }) => {
                let weight = if vector_arm {
                    vector_weight.max(0.0)
                } else {
                    1.0
                };
                weight / (k.max(0.0) + rank as f32)
            }
            (_, Fusion::Score { vector_weight }) => {
                let w = vector_weight.clamp(0.0, 1.0);
                if vector_arm {
                    w * vector_scale.unit(score)
                } else {
                    (1.0 - w) * lexical_scale.unit(score)
                }
            }
        }
    };
    let mut fused: HashMap<u64, HybridHit> = HashMap::new();
    for (id, arm) in lexical {
        let e = hit_of(&mut fused, id);
        e.score += part(false, arm.rank, arm.score);
        e.lexical = Some(arm);
    }
    for (id, arm) in vector {
        let e = hit_of(&mut fused, id);
        e.score += part(true, arm.rank, arm.score);
        e.vector = Some(arm);
    }
    let candidates = fused.len();
    let mut hits: Vec<HybridHit> = fused.into_values().collect();
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| {
                let la = a.lexical.map_or(0.0, |l| l.score);
                let lb = b.lexical.map_or(0.0, |l| l.score);
                lb.total_cmp(&la)
            })
            .then_with(|| a.id.0.cmp(&b.id.0))
    });
    hits.truncate(limit);
    (hits, candidates)
}

/// The range of one arm's scores over its candidates, to scale them to 0..1.
#[derive(Debug, Clone, Copy)]
struct Scale {
    min: f32,
    max: f32,
}

impl Scale {
    fn of(scores: impl Iterator<Item = f32>) -> Scale {
        scores.fold(
            Scale {
                min: f32::INFINITY,
                max: f32::NEG_INFINITY,
            },
            |s, x| Scale {
                min: s.min.min(x),
                max: s.max.max(x),
            },
        )
    }

    /// `x` scaled so the arm's best candidate is 1 and its last 0; 1 when all are equal.
    fn unit(self, x: f32) -> f32 {
        let span = self.max - self.min;
        if span > f32::EPSILON && span.is_finite() {
            ((x - self.min) / span).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }
}

/// Keeps each document's best chunk, in order, ranked 1.. among documents, at most `depth`.
fn best_chunk_per_doc(chunks: Vec<(u64, f32, u32, u32)>, depth: usize) -> Vec<(u64, VectorArm)> {
    let mut out: Vec<(u64, VectorArm)> = Vec::new();
    let mut seen = HashSet::new();
    for (doc_id, score, start_line, end_line) in chunks {
        if out.len() >= depth {
            break;
        }
        if !seen.insert(doc_id) {
            continue;
        }
        out.push((
            doc_id,
            VectorArm {
                rank: out.len() + 1,
                score,
                start_line,
                end_line,
            },
        ));
    }
    out
}

impl Index {
    /// The documents a filter allows, from one SQL query; `None` without a filter.
    fn allowed_ids(&self, filter: &DocFilter) -> Result<Option<Arc<IdSet>>> {
        if filter.is_empty() {
            return Ok(None);
        }
        Ok(Some(Arc::new(self.filter_ids(filter)?)))
    }

    /// Hybrid search: BM25 and vector candidates fused as [`HybridOptions::fusion`] says (by
    /// default scaled scores, [`Fusion::DEFAULT`]), one result per document (its best chunk for the vector arm), the filter applied before the cut.
    /// Keyword-only (and says so) while vectors are not available; never waits for a model.
    pub fn hybrid_search(
        &self,
        query: &str,
        limit: usize,
        filter: &DocFilter,
        opts: &HybridOptions,
    ) -> Result<HybridOutcome> {
        let embedder = match opts.arms {
            Arms::Lexical => None,
            _ => {
                self.prepare_vector_arm();
                self.vectors.usable_embedder()
            }
        };
        let allowed = self.allowed_ids(filter)?;
        if allowed.as_ref().is_some_and(|a| a.is_empty()) {
            return Ok(HybridOutcome {
                mode: if embedder.is_some() {
                    SearchMode::Hybrid
                } else {
                    SearchMode::Keyword
                },
                hits: Vec::new(),
                total: 0,
            });
        }
        let Some(embedder) = embedder else {
            if opts.arms == Arms::Vector {
                return Ok(HybridOutcome {
                    mode: SearchMode::Keyword,
                    hits: Vec::new(),
                    total: 0,
                });
            }
            let (hits, total) = self.lexical_arm(query, limit, allowed)?;
            return Ok(HybridOutcome {
                mode: SearchMode::Keyword,
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
            self.lexical_arm(query, depth, allowed.clone())?
        };
        // Several chunks may belong to one document: ask for more chunks than documents.
        let chunks =
            self.vectors
                .nearest_chunks(&embedder, query, depth * 3, allowed.as_deref())?;
        let vector = best_chunk_per_doc(chunks, depth);
        let (hits, candidates) = fuse(lexical, vector, opts, limit);
        Ok(HybridOutcome {
            mode: SearchMode::Hybrid,
            hits,
            total: total.max(candidates),
        })
    }

    /// How many documents BM25 matches for a query, with no filter (what an empty filtered
    /// search reports as `unfiltered_total`).
    pub fn keyword_total(&self, query: &str) -> Result<usize> {
        Ok(self.lexical_arm(query, 1, None)?.1)
    }

    fn lexical_arm(
        &self,
        query: &str,
        depth: usize,
        allowed: Option<Arc<IdSet>>,
    ) -> Result<(Vec<(u64, LexicalArm)>, usize)> {
        let mut terms = tokenizer::index_terms(query);
        let mut seen = HashSet::new();
        terms.retain(|t| seen.insert(t.clone()));
        let (hits, total) = self.lexical.search(&terms, depth, allowed)?;
        Ok((
            hits.into_iter()
                .enumerate()
                .map(|(i, (id, score))| (id, LexicalArm { rank: i + 1, score }))
                .collect(),
            total,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex(ranked: &[(u64, f32)]) -> Vec<(u64, LexicalArm)> {
        ranked
            .iter()
            .enumerate()
            .map(|(i, &(id, score))| (id, LexicalArm { rank: i + 1, score }))
            .collect()
    }

    fn vec_arm(ranked: &[(u64, f32)]) -> Vec<(u64, VectorArm)> {
        ranked
            .iter()
            .enumerate()
            .map(|(i, &(id, score))| {
                (
                    id,
                    VectorArm {
                        rank: i + 1,
                        score,
                        start_line: 1,
                        end_line: 2,
                    },
                )
            })
            .collect()
    }

    fn ids(hits: &[HybridHit]) -> Vec<u64> {
        hits.iter().map(|h| h.id.0).collect()
    }

    const RRF: HybridOptions = HybridOptions {
        fusion: Fusion::Rank {
            k: 60.0,
            vector_weight: 1.0,
        },
        candidates: 100,
        arms: Arms::Both,
    };

    fn rrf(k: f32) -> HybridOptions {
        HybridOptions {
            fusion: Fusion::Rank {
                k,
                vector_weight: 1.0,
            },
            ..RRF
        }
    }

    #[test]
    fn reciprocal_rank_fusion_rewards_both_arms() {
        let opts = RRF;
        let (hits, candidates) = fuse(
            lex(&[(1, 9.0), (2, 8.0), (3, 7.0)]),
            vec_arm(&[(4, 0.9), (2, 0.8)]),
            &opts,
            10,
        );
        assert_eq!(candidates, 4);
        // 2 is in both arms; 1 and 4 are first of one arm each (tie broken by BM25: 1 has it).
        assert_eq!(ids(&hits), [2, 1, 4, 3]);
        let k = 60.0;
        assert!((hits[0].score - (1.0 / (k + 2.0) + 1.0 / (k + 2.0))).abs() < 1e-6);
        assert!((hits[1].score - 1.0 / (k + 1.0)).abs() < 1e-6);
        assert_eq!(hits[0].lexical.map(|l| l.rank), Some(2));
        assert_eq!(hits[0].vector.map(|v| v.rank), Some(2));
        assert!(hits[2].lexical.is_none() && hits[2].vector.is_some());
    }

    #[test]
    fn ties_are_broken_by_bm25_then_id_and_the_list_is_cut() {
        let opts = RRF;
        // Equal fused scores, no BM25 score on either side: the smaller id first.
        let (hits, _) = fuse(Vec::new(), vec_arm(&[(7, 0.5)]), &opts, 10);
        assert_eq!(ids(&hits), [7]);
        let (hits, _) = fuse(lex(&[(1, 0.0)]), vec_arm(&[(0, 0.5)]), &opts, 10);
        assert_eq!(ids(&hits), [0, 1]);
        let (hits, _) = fuse(
            lex(&[(9, 1.0)]),
            vec_arm(&[(5, 0.5), (3, 0.4)]),
            &rrf(0.0),
            10,
        );
        // k = 0: 9 and 5 both score 1, 9 wins on BM25; 3 scores 1/2.
        assert_eq!(ids(&hits), [9, 5, 3]);
        let (hits, candidates) = fuse(lex(&[(1, 3.0), (2, 2.0), (3, 1.0)]), Vec::new(), &opts, 2);
        assert_eq!((ids(&hits), candidates), (vec![1, 2], 3));
        // A negative k is treated as 0 (scores stay finite and ordered).
        let (hits, _) = fuse(lex(&[(1, 3.0), (2, 2.0)]), Vec::new(), &rrf(-5.0), 5);
        assert_eq!(ids(&hits), [1, 2]);
        assert!(hits.iter().all(|h| h.score.is_finite()));
    }

    #[test]
    fn a_weighted_vector_arm_counts_more() {
        let heavy = HybridOptions {
            fusion: Fusion::Rank {
                k: 0.0,
                vector_weight: 3.0,
            },
            ..RRF
        };
        // 1 is first for BM25 (1/1), 5 second for vectors (3/2): the vectors' weight decides.
        let (hits, _) = fuse(lex(&[(1, 9.0)]), vec_arm(&[(4, 0.9), (5, 0.8)]), &heavy, 10);
        assert_eq!(ids(&hits), [4, 5, 1]);
    }

    #[test]
    fn score_fusion_keeps_how_far_apart_candidates_are() {
        let opts = HybridOptions {
            fusion: Fusion::Score { vector_weight: 0.5 },
            ..RRF
        };
        // BM25: 1 far ahead of 2 and 3. Vectors: 3 barely ahead of 2, both far ahead of 4.
        let lexical = lex(&[(1, 10.0), (2, 2.0), (3, 1.0)]);
        let vector = vec_arm(&[(3, 0.90), (2, 0.89), (4, 0.50)]);
        let (hits, candidates) = fuse(lexical.clone(), vector.clone(), &opts, 10);
        assert_eq!(candidates, 4);
        // 1: 0.5·1 = 0.5; 2: 0.5·(1/9) + 0.5·(0.39/0.40); 3: 0 + 0.5·1; 4: 0.
        assert_eq!(ids(&hits), [2, 1, 3, 4]);
        assert!((hits[1].score - 0.5).abs() < 1e-6 && hits[3].score.abs() < 1e-6);
        // Reciprocal rank would put 3 first (ranks 3 and 1) though BM25 barely matched it.
        let (by_rank, _) = fuse(lexical, vector, &rrf(60.0), 10);
        assert_eq!(ids(&by_rank), [3, 2, 1, 4]);
        // Weights at the ends give one arm's order; one candidate, or equal scores, scale to 1.
        let only = |w| HybridOptions {
            fusion: Fusion::Score { vector_weight: w },
            ..RRF
        };
        for (weight, want) in [(1.0, [2, 1]), (0.0, [1, 2])] {
            let (hits, _) = fuse(
                lex(&[(1, 5.0), (2, 4.0)]),
                vec_arm(&[(2, 0.9), (1, 0.1)]),
                &only(weight),
                10,
            );
            assert_eq!(ids(&hits), want, "vector weight {weight}");
        }
        let (hits, _) = fuse(lex(&[(7, 3.0)]), vec_arm(&[(7, 0.4)]), &opts, 10);
        assert!((hits[0].score - 1.0).abs() < 1e-6);
    }

    #[test]
    fn vectors_alone_rank_by_cosine() {
        let opts = HybridOptions {
            arms: Arms::Vector,
            ..HybridOptions::default()
        };
        let (hits, _) = fuse(Vec::new(), vec_arm(&[(3, 0.9), (8, 0.7)]), &opts, 5);
        assert_eq!(ids(&hits), [3, 8]);
        assert_eq!(hits[0].score, 0.9);
    }

    #[test]
    fn a_document_is_represented_by_its_best_chunk() {
        let chunks = vec![
            (4, 0.95, 10, 20),
            (4, 0.90, 30, 40),
            (6, 0.80, 1, 5),
            (4, 0.70, 50, 60),
            (2, 0.60, 3, 4),
            (9, 0.50, 1, 1),
        ];
        let arm = best_chunk_per_doc(chunks.clone(), 10);
        let got: Vec<(u64, usize, u32)> = arm
            .iter()
            .map(|(id, a)| (*id, a.rank, a.start_line))
            .collect();
        assert_eq!(got, [(4, 1, 10), (6, 2, 1), (2, 3, 3), (9, 4, 1)]);
        assert_eq!(best_chunk_per_doc(chunks, 2).len(), 2);
        assert!(best_chunk_per_doc(Vec::new(), 3).is_empty());
    }
}
