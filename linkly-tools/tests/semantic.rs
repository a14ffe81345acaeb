//! `search` in hybrid mode over the real test model (`cargo xtask test-model`), and in keyword
//! mode without one.

use std::sync::Arc;

use linkly_core::Config;
use linkly_index::vector::ModelChoice;
use linkly_models::test_inputs::TestInput;
use linkly_tools::Linkly;
use serde_json::{Value, json};

use crate::common;

fn test_model() -> ModelChoice {
    ModelChoice {
        name: "sentence-transformers/all-MiniLM-L6-v2".into(),
        dir: TestInput::MiniLm.path(),
        from_env: false,
        cache: None,
    }
}

fn linkly(with_model: bool) -> (tempfile::TempDir, Linkly) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("docs");
    let files = [
        (
            "tyre.md",
            "# Flat tyre\n\nFirst some context.\n\nLoosen the wheel nuts, jack up the vehicle, swap the wheel for the spare and tighten the nuts again.\n",
        ),
        (
            "cat.md",
            "# Afternoon\n\nThe cat sleeps on the windowsill all afternoon, purring in the sunshine.\n",
        ),
        (
            "bread.md",
            "# Sourdough\n\nMix flour, water and starter, knead the dough and bake it in a hot oven.\n",
        ),
    ];
    common::write_files(&root, &files);
    let (data, index) = common::synced_index(tmp.path(), &[root]);
    if with_model {
        index.attach_model(&test_model()).unwrap();
        index.embed_pending(&mut |_| {}).unwrap();
    }
    (tmp, Linkly::new(Arc::new(index), data, Config::default()))
}

fn search(l: &Linkly, args: Value) -> Value {
    let out = l.call("search", args).unwrap();
    assert!(!out.is_error, "{}", out.text);
    serde_json::from_str(&out.text).unwrap()
}

#[test]
fn hybrid_search_finds_a_paraphrase_and_explains_it() {
    let (_tmp, l) = linkly(true);
    let v = search(
        &l,
        json!({"query": "automobile puncture repair", "limit": 3, "explain": true, "output_format": "json"}),
    );
    assert_eq!(v["mode"], "hybrid");
    let results = v["results"].as_array().unwrap();
    let first = &results[0];
    assert!(first["path"].as_str().unwrap().ends_with("tyre.md"), "{v}");
    assert_eq!(first["relevance"], 1.0);
    assert!(results.iter().all(|r| {
        let x = r["relevance"].as_f64().unwrap();
        (0.0..=1.0).contains(&x)
    }));
    // The snippet is the best chunk's text; explain gives the arms.
    assert!(
        first["snippet"].as_str().unwrap().contains("wheel"),
        "{first}"
    );
    let e = &first["explain"];
    assert_eq!(e["vector"]["rank"], 1, "{e}");
    assert!(e["bm25"].is_null(), "no shared word, no BM25 rank: {e}");
    assert!(e["vector"]["chunk_lines"][0].as_u64().unwrap() >= 1);
    assert!(e["fused"].as_f64().unwrap() > 0.0);
    // No query word is in it: the snippet says it is the passage closest in meaning, and its
    // lines are the chunk's first ones.
    assert_eq!(first["snippet_kind"], "semantic", "{first}");
    assert_eq!(
        first["snippet_from"], e["vector"]["chunk_lines"][0],
        "{first}"
    );
    assert!(
        first["snippet_to"].as_u64().unwrap() <= e["vector"]["chunk_lines"][1].as_u64().unwrap()
    );
    // Without explain there is no explain field.
    let v = search(&l, json!({"query": "tyre", "output_format": "json"}));
    assert!(v["results"][0].get("explain").is_none());
    assert_eq!(
        v["results"][0]["path"].as_str().unwrap().rsplit('/').next(),
        Some("tyre.md")
    );
}

#[test]
fn without_a_model_search_says_keyword() {
    let (_tmp, l) = linkly(false);
    let v = search(
        &l,
        json!({"query": "cat windowsill", "explain": true, "output_format": "json"}),
    );
    assert_eq!(v["mode"], "keyword");
    assert_eq!(v["total"], 1);
    assert_eq!(v["results"][0]["explain"]["bm25"]["rank"], 1);
    assert!(v["results"][0]["explain"]["vector"].is_null());
}
