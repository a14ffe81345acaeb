//! Semantic and hybrid search over the real test model (all-MiniLM-L6-v2, unpacked by
//! `cargo xtask test-model`, found through `LINKLY_TEST_MODEL_DIR`).

use std::path::{Path, PathBuf};

use linkly_index::vector::ModelChoice;
use linkly_index::{
    Arms, DocFilter, HybridOptions, HybridOutcome, Index, ModelStatus, PathGlob, SearchMode,
    SyncOptions,
};
use linkly_models::test_inputs::TestInput;

/// The test model's folder; fails (never skips) when it is not there.
fn test_model() -> ModelChoice {
    ModelChoice {
        name: "sentence-transformers/all-MiniLM-L6-v2".into(),
        dir: TestInput::MiniLm.path(),
        from_env: false,
        cache: None,
    }
}

const DOCS: &[(&str, &str)] = &[
    (
        "bread.md",
        "# Sourdough at home\n\nMix flour, water and starter, knead the dough, let it rise overnight and bake it in a very hot oven.\n",
    ),
    (
        "revenue.md",
        "# Quarterly results\n\nQuarterly revenue grew by twelve percent thanks to strong sales in Europe; the operating margin improved.\n",
    ),
    (
        "cat.md",
        "# Afternoon\n\nThe cat sleeps on the windowsill all afternoon, purring in the sunshine.\n",
    ),
    (
        "tyre.md",
        "# Flat tyre\n\nLoosen the wheel nuts, jack up the vehicle, swap the wheel for the spare and tighten the nuts again.\n",
    ),
    (
        "heart.md",
        "# Exercise\n\nRegular physical exercise lowers blood pressure and reduces the risk of heart disease.\n",
    ),
    (
        "rust.md",
        "# Ownership\n\nIn Rust every value has a single owner; when the owner goes out of scope the value is dropped.\n",
    ),
];

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    index_dir: PathBuf,
    index: Index,
}

impl Fixture {
    /// Hybrid search with no filter and the default options: the best `limit` documents.
    fn search(&self, query: &str, limit: usize) -> HybridOutcome {
        let (filter, opts) = (DocFilter::default(), HybridOptions::default());
        self.index
            .hybrid_search(query, limit, &filter, &opts)
            .unwrap()
    }
}

fn sync(index: &Index, root: &Path) {
    index
        .sync(
            &SyncOptions::of_roots(vec![root.to_path_buf()]),
            &mut |_| {},
        )
        .unwrap();
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("docs");
    fs_err::create_dir_all(&root).unwrap();
    for (name, text) in DOCS {
        fs_err::write(root.join(name), text).unwrap();
    }
    let index_dir = tmp.path().join("index");
    let index = Index::open(&index_dir).unwrap();
    sync(&index, &root);
    Fixture {
        _tmp: tmp,
        root,
        index_dir,
        index,
    }
}

/// The fixture with every document embedded with `model`.
fn embedded_fixture(model: &ModelChoice) -> Fixture {
    let f = fixture();
    f.index.attach_model(model).unwrap();
    f.index.embed_pending(&mut |_| {}).unwrap();
    f
}

impl Fixture {
    /// A document's id, by its file name.
    fn id_of(&self, name: &str) -> linkly_core::DocId {
        self.index
            .doc_by_path(self.root.join(name).to_str().unwrap())
            .unwrap()
            .unwrap()
            .id
    }
}

fn paths(index: &Index, hits: &[linkly_index::HybridHit]) -> Vec<String> {
    hits.iter()
        .map(|h| {
            let rec = index.doc(h.id).unwrap().unwrap();
            rec.file_name().to_string()
        })
        .collect()
}

#[test]
fn a_paraphrase_with_no_shared_word_finds_its_document() {
    let f = fixture();
    f.index.attach_model(&test_model()).unwrap();
    let report = f.index.embed_pending(&mut |_| {}).unwrap();
    assert_eq!(report.docs, DOCS.len() as u64);
    let query = "automobile puncture repair";
    let target = Index::query_terms(&fs_err::read_to_string(f.root.join("tyre.md")).unwrap());
    assert!(
        Index::query_terms(query)
            .iter()
            .all(|t| !target.contains(t)),
        "the query must share no word with its target"
    );
    // BM25 alone finds nothing.
    let keyword = f
        .index
        .hybrid_search(
            query,
            3,
            &DocFilter::default(),
            &HybridOptions {
                arms: Arms::Lexical,
                ..HybridOptions::default()
            },
        )
        .unwrap();
    assert!(keyword.hits.is_empty());
    let out = f.search(query, 3);
    assert_eq!(out.mode, SearchMode::Hybrid);
    let found = paths(&f.index, &out.hits);
    assert!(found.contains(&"tyre.md".to_string()), "{found:?}");
    let hit = out
        .hits
        .iter()
        .find(|h| h.vector.is_some_and(|v| v.start_line >= 1))
        .unwrap();
    assert!(hit.vector.unwrap().end_line <= 3);

    // Another: the cat document for a query about a feline napping.
    let out = f.search("kitten napping", 3);
    assert_eq!(paths(&f.index, &out.hits)[0], "cat.md");
}

#[test]
fn without_a_model_search_is_keyword_only() {
    let f = fixture();
    let tmp = tempfile::tempdir().unwrap();
    // An empty data directory has no model: the status says so and nothing waits.
    let status = f.index.attach_selected_model(tmp.path());
    assert!(matches!(status, ModelStatus::Missing { .. }), "{status:?}");
    let out = f.search("cat windowsill", 5);
    assert_eq!(out.mode, SearchMode::Keyword);
    assert_eq!(paths(&f.index, &out.hits), ["cat.md"]);
    assert!(out.hits[0].vector.is_none() && out.hits[0].lexical.is_some());
    // A broken model is reported, and search stays keyword-only.
    let broken = tmp.path().join("broken");
    fs_err::create_dir_all(&broken).unwrap();
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        fs_err::write(broken.join(f), "{}").unwrap();
    }
    let choice = ModelChoice {
        name: "broken".into(),
        dir: broken,
        from_env: false,
        cache: None,
    };
    assert!(f.index.attach_model(&choice).is_err());
    assert!(matches!(f.index.model_status(), ModelStatus::Broken { .. }));
    let out = f.search("cat", 5);
    assert_eq!(out.mode, SearchMode::Keyword);
}

#[test]
fn deleting_a_file_removes_its_vectors_and_a_restart_reloads_them() {
    let model = test_model();
    let f = embedded_fixture(&model);
    let before = f.index.vector_stats().unwrap();
    assert_eq!(before.embedded_docs, DOCS.len() as u64);
    assert_eq!(before.pending_docs, 0);
    let tyre = f.id_of("tyre.md");

    fs_err::remove_file(f.root.join("tyre.md")).unwrap();
    sync(&f.index, &f.root);
    let after = f.index.vector_stats().unwrap();
    assert!(after.chunks < before.chunks, "{before:?} → {after:?}");
    assert_eq!(after.loaded, after.chunks);
    let out = f
        .index
        .hybrid_search(
            "automobile puncture repair",
            10,
            &DocFilter::default(),
            &HybridOptions {
                arms: Arms::Vector,
                ..HybridOptions::default()
            },
        )
        .unwrap();
    assert!(out.hits.iter().all(|h| h.id != tyre));

    // A changed file loses its old vectors and is embedded again.
    fs_err::write(
        f.root.join("cat.md"),
        "# Afternoon\n\nThe dog chews a bone in the garden.\n",
    )
    .unwrap();
    sync(&f.index, &f.root);
    assert_eq!(f.index.vector_stats().unwrap().pending_docs, 1);
    assert_eq!(f.index.embed_pending(&mut |_| {}).unwrap().docs, 1);

    // Restart: the vectors come back from disk; nothing is embedded again.
    let stats = f.index.vector_stats().unwrap();
    drop(f.index);
    let index = Index::open(&f.index_dir).unwrap();
    let reopened = index.vector_stats().unwrap();
    assert_eq!(reopened.loaded, stats.chunks);
    assert_eq!(reopened.pending_docs, 0);
    index.attach_model(&model).unwrap();
    let mut progress = Vec::new();
    let report = index.embed_pending(&mut |p| progress.push(*p)).unwrap();
    assert_eq!(report.docs, 0, "nothing re-embedded");
    let out = index
        .hybrid_search(
            "a puppy gnawing",
            3,
            &DocFilter::default(),
            &HybridOptions::default(),
        )
        .unwrap();
    assert_eq!(out.mode, SearchMode::Hybrid);
    assert_eq!(paths(&index, &out.hits)[0], "cat.md");
}

#[test]
fn a_model_put_off_loads_at_the_first_search_over_what_the_store_holds_then() {
    let model = test_model();
    let f = embedded_fixture(&model);
    let tyre = f.id_of("tyre.md");
    // A second process: neither its model nor its vectors are read at open.
    let later = Index::open(&f.index_dir).unwrap();
    later.attach_model_when_needed(model);
    // Before it reads them, another process drops a document's vectors and changes another.
    fs_err::remove_file(f.root.join("tyre.md")).unwrap();
    sync(&f.index, &f.root);
    fs_err::write(
        f.root.join("cat.md"),
        "# Afternoon\n\nThe dog chews a bone in the garden.\n",
    )
    .unwrap();
    sync(&f.index, &f.root);
    assert_eq!(f.index.embed_pending(&mut |_| {}).unwrap().docs, 1);
    // A keyword search needs neither.
    let keyword = later
        .hybrid_search(
            "windowsill",
            5,
            &DocFilter::default(),
            &HybridOptions {
                arms: Arms::Lexical,
                ..HybridOptions::default()
            },
        )
        .unwrap();
    assert_eq!(keyword.mode, SearchMode::Keyword);
    // The first hybrid search loads both, and sees the store as it is now.
    let out = later
        .hybrid_search(
            "a puppy gnawing",
            10,
            &DocFilter::default(),
            &HybridOptions::default(),
        )
        .unwrap();
    assert_eq!(out.mode, SearchMode::Hybrid);
    assert_eq!(paths(&later, &out.hits)[0], "cat.md");
    assert!(out.hits.iter().all(|h| h.id != tyre));
    assert!(matches!(later.model_status(), ModelStatus::Ready { .. }));
    let stats = later.vector_stats().unwrap();
    assert_eq!(stats.loaded, stats.chunks);
    assert_eq!(stats.pending_docs, 0);

    // A status asked first loads the model too, so it is never reported missing or loading.
    let third = Index::open(&f.index_dir).unwrap();
    third.attach_model_when_needed(test_model());
    assert!(matches!(third.model_status(), ModelStatus::Ready { .. }));
    assert_eq!(third.vector_stats().unwrap().loaded, stats.chunks);
}

#[test]
fn filters_apply_before_the_cut_in_both_arms() {
    let f = fixture();
    f.index.attach_model(&test_model()).unwrap();
    f.index.embed_pending(&mut |_| {}).unwrap();
    let only_rust = DocFilter {
        path_glob: Some(PathGlob::new("/rust.md").unwrap()),
        ..DocFilter::default()
    };
    let out = f
        .index
        .hybrid_search(
            "automobile puncture repair",
            5,
            &only_rust,
            &HybridOptions::default(),
        )
        .unwrap();
    assert_eq!(out.mode, SearchMode::Hybrid);
    assert_eq!(paths(&f.index, &out.hits), ["rust.md"]);
}

#[test]
fn text_embedder_embeds_queries_and_passages_on_its_own() {
    use linkly_index::vector::TextEmbedder;
    let model = TextEmbedder::load(&test_model()).unwrap();
    assert_eq!(model.dim(), 384);
    let passages = model
        .embed_passages(&[
            "The cat sleeps on the windowsill all afternoon.",
            "Quarterly revenue grew by twelve percent.",
        ])
        .unwrap();
    let query = model.embed_query("where does the kitten nap?").unwrap();
    let cos = |v: &[f32]| v.iter().zip(&query).map(|(a, b)| a * b).sum::<f32>();
    assert!(
        cos(&passages[0]) > cos(&passages[1]) + 0.2,
        "cat {} vs revenue {}",
        cos(&passages[0]),
        cos(&passages[1])
    );
    for v in passages.iter().chain([&query]) {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4);
    }
    assert!(model.embed_passages(&[]).unwrap().is_empty());
}
