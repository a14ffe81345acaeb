//! A published library read from the database as the tools read it ([`Published`], a
//! `linkly_index::Corpus`): its BM25 ranking equals a local index's over the same documents,
//! its filters and catalogue agree with the local ones, and its vectors are searched exactly;
//! on SQLite and, when `LINKLY_TEST_POSTGRES` is set, on PostgreSQL.

use std::sync::Arc;

use linkly_core::{DocId, DocType};
use linkly_extract::Extracted;
use linkly_gateway::model::{LibraryKey, LibraryMeta, Plan, PublishedDoc, PublishedVectors};
use linkly_gateway::server::db::{Db, DbSpec};
use linkly_gateway::server::published::{Models, Published};
use linkly_index::{
    Arms, CatalogSort, Corpus, DocFilter, HybridOptions, Index, IngestDoc, PathGlob,
};

use crate::common::{postgres, sqlite};

#[allow(clippy::print_stderr)]
fn each(body: impl Fn(&DbSpec)) {
    let lite = sqlite();
    body(&lite.spec);
    match postgres(None) {
        Some(pg) => body(&pg.spec),
        None => eprintln!("note: LINKLY_TEST_POSTGRES is unset: PostgreSQL not tested"),
    }
}

/// Documents with titles and without, CJK text, repeated words, nested folders.
fn corpus() -> Vec<PublishedDoc> {
    let mut docs = vec![
        (
            "guide/budget.md",
            Some("Budget 2024"),
            "The budget for the year and the plan.\nBudget lines.",
        ),
        ("guide/plan.md", Some("Plan"), "budget plan"),
        (
            "trips/budget-trip.md",
            None,
            "a trip to Tokyo\nwith a small budget",
        ),
        (
            "guide/ja/東京.txt",
            Some("東京タワー"),
            "新しいコンポーネントを追加した。東京タワーの予算。",
        ),
        (
            "guide/README.md",
            Some("Read me"),
            "How this guide is laid out.",
        ),
        ("empty.txt", None, ""),
    ];
    let generated: Vec<(String, Option<String>, String)> = (0..30)
        .map(|i| {
            (
                format!("gen/sub{}/doc{i}.txt", i % 3),
                (i % 3 == 0).then(|| format!("Report {i}")),
                format!(
                    "{} the annual plan {} and {}",
                    "budget ".repeat(i % 5),
                    "trip ".repeat(i % 7),
                    "word ".repeat(i * 3 + 1)
                ),
            )
        })
        .collect();
    let mut out: Vec<PublishedDoc> = docs
        .drain(..)
        .map(|(p, t, x)| (p.to_string(), t.map(str::to_string), x.to_string()))
        .chain(generated)
        .enumerate()
        .map(|(i, (path, title, text))| PublishedDoc {
            doc_type: if path.ends_with(".md") { "md" } else { "txt" }.into(),
            hash: format!("h{i}"),
            size: text.len() as u64,
            modified_at: 1_700_000_000_000 + i as i64 * 1000,
            title,
            text,
            outline: serde_json::Value::Null,
            vectors: None,
            path,
        })
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The same documents in a local index, at `/<path>`.
fn local(docs: &[PublishedDoc]) -> (tempfile::TempDir, Index) {
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path()).unwrap();
    let ingest = docs
        .iter()
        .map(|d| {
            let t = DocType::from_token(&d.doc_type).unwrap();
            IngestDoc {
                id: None,
                path: format!("/{}", d.path),
                doc_type: t,
                hash: d.hash.clone(),
                size: d.size,
                modified_at: d.modified_at,
                extracted: Extracted {
                    title: d.title.clone(),
                    ..Extracted::text(t, d.text.clone())
                },
            }
        })
        .collect();
    index.ingest(ingest, &[]).unwrap();
    (dir, index)
}

/// A library of `docs` published on `db`, as the tools read it.
fn published(db: &Db, docs: &[PublishedDoc]) -> Published {
    let (alice, _) = db.add_user("alice", Plan::Pro).unwrap();
    let lib = db
        .upsert_library(&alice, "guide", &LibraryMeta::default())
        .unwrap();
    let id = db.begin_publish(lib.id, &[]).unwrap();
    db.stage_documents(lib.id, id, docs).unwrap();
    db.commit_publish(lib.id, id).unwrap();
    let models = Arc::new(Models::new(&std::env::temp_dir().join("linkly-no-models")));
    Published::open(
        db,
        &LibraryKey::parse("cloud://alice/guide").unwrap(),
        &models,
    )
    .unwrap()
    .unwrap()
}

/// A search's hits as (path, BM25 score), best first.
fn ranked(corpus: &dyn Corpus, query: &str, filter: &DocFilter) -> (Vec<(String, f32)>, usize) {
    let opts = HybridOptions {
        arms: Arms::Lexical,
        ..HybridOptions::default()
    };
    let out = corpus.hybrid_search(query, 50, filter, &opts).unwrap();
    let ids: Vec<DocId> = out.hits.iter().map(|h| h.id).collect();
    let records = corpus.docs(&ids).unwrap();
    let hits = out
        .hits
        .iter()
        .zip(records)
        .map(|(h, r)| {
            assert_eq!(h.id, r.id);
            (r.path, h.score)
        })
        .collect();
    (hits, out.total)
}

#[test]
fn bm25_in_the_database_ranks_as_the_local_index() {
    let docs = corpus();
    let (_dir, index) = local(&docs);
    each(|spec| {
        let db = Db::open(spec).unwrap();
        let lib = published(&db, &docs);
        let filters = [
            DocFilter::default(),
            DocFilter {
                dirs: Some(vec!["/guide".into()]),
                ..DocFilter::default()
            },
            DocFilter {
                path_glob: Some(PathGlob::new("sub1/").unwrap()),
                doc_types: Some(vec![DocType::Txt]),
                ..DocFilter::default()
            },
        ];
        for query in [
            "budget",
            "budget plan trip",
            "東京",
            "report annual word",
            "gen guide",
        ] {
            for filter in &filters {
                let (want, want_total) = ranked(&index, query, filter);
                let (got, got_total) = ranked(&lib, query, filter);
                assert_eq!(got_total, want_total, "{query} {filter:?}");
                assert_eq!(got.len(), want.len(), "{query} {filter:?}");
                assert!(!got.is_empty() || !filter.is_empty(), "{query}");
                for ((gp, gs), (wp, ws)) in got.iter().zip(&want) {
                    assert!(
                        (gs - ws).abs() <= 1e-4 * ws.max(1.0),
                        "{query}: {gp} {gs} against {wp} {ws}"
                    );
                }
                // Equal scores may come in either order; the documents are the same.
                let mut g: Vec<&String> = got.iter().map(|(p, _)| p).collect();
                let mut w: Vec<&String> = want.iter().map(|(p, _)| p).collect();
                g.sort();
                w.sort();
                assert_eq!(g, w, "{query} {filter:?}");
            }
        }
        assert_eq!(
            lib.keyword_total("budget").unwrap(),
            index.keyword_total("budget").unwrap()
        );
        assert_eq!(lib.doc_count().unwrap(), docs.len() as u64);
    });
}

#[test]
fn the_catalogue_and_records_agree_with_the_local_index() {
    let docs = corpus();
    let (_dir, index) = local(&docs);
    each(|spec| {
        let db = Db::open(spec).unwrap();
        let lib = published(&db, &docs);
        let filter = DocFilter {
            dirs: Some(vec!["/gen".into()]),
            modified_after: Some(1_700_000_010_000),
            ..DocFilter::default()
        };
        for f in [DocFilter::default(), filter] {
            assert_eq!(
                lib.catalog_paths(&f).unwrap(),
                index.catalog_paths(&f).unwrap()
            );
            assert_eq!(
                lib.catalog_count(&f).unwrap(),
                index.catalog_count(&f).unwrap()
            );
            for sort in [CatalogSort::Recent, CatalogSort::Oldest, CatalogSort::Name] {
                let paths = |c: &dyn Corpus| -> (u64, Vec<String>) {
                    let page = c.catalog_page(&f, sort, 7, 3).unwrap();
                    (page.total, page.docs.into_iter().map(|d| d.path).collect())
                };
                assert_eq!(paths(&lib), paths(&index), "{sort:?}");
            }
            let summaries = |c: &dyn Corpus| -> Vec<(String, u64, Vec<String>)> {
                c.catalog_summaries(&f)
                    .unwrap()
                    .into_iter()
                    .map(|s| (s.path, s.word_count, s.keywords))
                    .collect()
            };
            assert_eq!(summaries(&lib), summaries(&index));
        }
        let mine = lib.doc_by_path("/guide/budget.md").unwrap().unwrap();
        let theirs = index.doc_by_path("/guide/budget.md").unwrap().unwrap();
        assert_eq!(
            (
                &mine.title,
                mine.word_count,
                mine.char_count,
                mine.total_lines,
                &mine.keywords,
                &mine.abstract_text
            ),
            (
                &theirs.title,
                theirs.word_count,
                theirs.char_count,
                theirs.total_lines,
                &theirs.keywords,
                &theirs.abstract_text
            )
        );
        assert_eq!(
            lib.content(mine.id).unwrap(),
            index.content(theirs.id).unwrap()
        );
        assert_eq!(
            lib.readme_in("/guide").unwrap().map(|r| r.1),
            Some("/guide/README.md".to_string())
        );
        assert_eq!(lib.readme_in("/gen").unwrap(), None);
        assert!(
            lib.doc_by_path("guide/budget.md").unwrap().is_none(),
            "paths are absolute"
        );
        assert!(lib.doc(DocId(9999)).unwrap().is_none());
    });
}

/// A unit vector along axis `i` of 4, turned by `t` towards the next axis.
fn vector(i: usize, t: f32) -> Vec<f32> {
    let mut v = vec![0.0; 4];
    v[i % 4] = 1.0 - t;
    v[(i + 1) % 4] = t;
    v
}

/// Eight documents of the corpus, each with two chunk vectors of the model `test-model`: the
/// first along axis `i`, the second along axis `i + 2` (of 4), each turned a little.
fn with_vectors() -> Vec<PublishedDoc> {
    let mut docs = corpus();
    docs.truncate(8);
    for (i, d) in docs.iter_mut().enumerate() {
        let (a, b) = (vector(i, 0.1), vector(i + 2, 0.3));
        d.vectors = Some(PublishedVectors::encode(
            "test-model",
            &[(1, 1, a.as_slice()), (2, 2, b.as_slice())],
        ));
    }
    docs
}

#[test]
fn vectors_are_searched_exactly_within_the_visible_version() {
    each(|spec| {
        let db = Db::open(spec).unwrap();
        let docs = with_vectors();
        let lib = published(&db, &docs);
        let state = lib.state().clone();
        assert_eq!(state.vector_model.as_deref(), Some("test-model"));
        assert_eq!((state.vector_dim, state.chunk_count), (4, 16));
        // Along axis 0: documents 0 and 4 (first chunk), then 2 and 6 (second chunk).
        let near = db
            .nearest_chunks(&state, "test-model", &[1.0, 0.0, 0.0, 0.0], 5, None)
            .unwrap();
        let ids: Vec<(i64, u32)> = near.iter().map(|c| (c.doc_id, c.start_line)).collect();
        assert_eq!(&ids[..4], &[(1, 1), (5, 1), (3, 2), (7, 2)], "{near:?}");
        assert!(
            (near[0].score - 0.9 / (0.82f32).sqrt()).abs() < 1e-4,
            "{near:?}"
        );
        let only = db
            .nearest_chunks(
                &state,
                "test-model",
                &[1.0, 0.0, 0.0, 0.0],
                3,
                Some(&[5, 7]),
            )
            .unwrap();
        assert_eq!(only.iter().map(|c| c.doc_id).collect::<Vec<_>>(), [5, 7, 5]);
        assert!(
            db.nearest_chunks(&state, "other-model", &[1.0, 0.0, 0.0, 0.0], 3, None)
                .unwrap()
                .is_empty()
        );
        // Without the model here, search is keyword-only, and says why.
        assert!(lib.keyword_notice().unwrap().contains("test-model"));
    });
}

#[test]
#[allow(clippy::print_stderr)]
fn a_large_library_is_searched_through_its_models_hnsw_index_on_postgresql() {
    let Some(pg) = postgres(None) else {
        eprintln!("note: LINKLY_TEST_POSTGRES is unset: the HNSW path not tested");
        return;
    };
    let db = Db::open(&pg.spec).unwrap();
    let docs = with_vectors();
    // Every library counts as large: the publish builds the index in the background; built
    // here too, and waited for.
    db.set_hnsw_from(0);
    let lib = published(&db, &docs);
    let state = lib.state().clone();
    db.ensure_hnsw("test-model", 4).unwrap();
    let DbSpec::Postgres(url) = &pg.spec else {
        unreachable!()
    };
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    c.batch_execute("SET enable_seqscan = off").unwrap();
    let index: String = c
        .query_one(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'chunks' AND indexdef LIKE '%hnsw%'",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(
        index.contains("vector(4)") && index.contains("'test-model'"),
        "{index}"
    );
    // The gateway's query has this shape (its predicate word for word, the cast on both
    // sides): the planner may take the index for it, as it does on a large table (on these 16
    // rows only with sequential scans off).
    let plan: Vec<String> = c
        .query(
            "EXPLAIN SELECT doc_id FROM chunks WHERE model = 'test-model' AND dim = 4 \
             AND library_id = 1 ORDER BY embedding::vector(4) <=> '[1,0,0,0]'::vector(4) LIMIT 5",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(plan.iter().any(|l| l.contains("chunks_hnsw_")), "{plan:#?}");
    // Through the HNSW path, the same answers as the exact scan, filters included.
    let near = |k, only: Option<&[i64]>| {
        db.nearest_chunks(&state, "test-model", &[1.0, 0.0, 0.0, 0.0], k, only)
            .unwrap()
            .iter()
            .map(|c| (c.doc_id, c.start_line, (c.score * 1e4).round() as i64))
            .collect::<Vec<_>>()
    };
    let by_index = (near(5, None), near(3, Some(&[5, 7])));
    db.set_hnsw_from(u64::MAX);
    let exact = (near(5, None), near(3, Some(&[5, 7])));
    assert_eq!(by_index, exact);
    assert_eq!(
        by_index.0[..4]
            .iter()
            .map(|c| (c.0, c.1))
            .collect::<Vec<_>>(),
        [(1, 1), (5, 1), (3, 2), (7, 2)]
    );
    // Another model's vectors are not in it: nothing found, no error.
    db.set_hnsw_from(0);
    assert!(
        db.nearest_chunks(&state, "other-model", &[1.0, 0.0, 0.0, 0.0], 3, None)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn vectors_of_another_model_or_width_are_refused_whole() {
    each(|spec| {
        let db = Db::open(spec).unwrap();
        let mut docs = corpus();
        docs.truncate(3);
        let with = |d: &PublishedDoc, model: &str, width: usize| {
            let mut d = d.clone();
            let v = vec![0.5; width];
            d.vectors = Some(PublishedVectors::encode(model, &[(1, 1, v.as_slice())]));
            d
        };
        let lib = published(&db, &[with(&docs[0], "m1", 4)]);
        let id = lib.state().id;
        let k = LibraryKey::parse("cloud://alice/guide").unwrap();
        let p = db.begin_publish(id, &[]).unwrap();
        // The library's m1 vectors are 4 wide: 3 is refused, with the batch.
        let e = db
            .stage_documents(id, p, &[with(&docs[1], "m1", 4), with(&docs[2], "m1", 3)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("3-dimensional") && e.contains("nothing"), "{e}");
        db.stage_documents(id, p, &[with(&docs[1], "m1", 4)])
            .unwrap();
        // One publish, one model.
        let e = db
            .stage_documents(id, p, &[with(&docs[2], "m2", 4)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("m2") && e.contains("m1"), "{e}");
        db.commit_publish(id, p).unwrap();
        let state = db.library_state(&k).unwrap().unwrap();
        assert_eq!((state.doc_count, state.chunk_count), (2, 2));
        // Another publish may move the library to another model and width.
        let p = db.begin_publish(id, &[]).unwrap();
        db.stage_documents(id, p, &[with(&docs[0], "m2", 3), with(&docs[1], "m2", 3)])
            .unwrap();
        db.commit_publish(id, p).unwrap();
        let state = db.library_state(&k).unwrap().unwrap();
        assert_eq!(
            (
                state.vector_model.as_deref(),
                state.vector_dim,
                state.chunk_count
            ),
            (Some("m2"), 3, 2)
        );
    });
}
