//! `linkly config get|set|add|remove` (issue 44): every setting of config.toml by its key, bad
//! values refused naming the key and what is allowed with nothing saved, and a running server
//! that applies a change without a restart (a folder added is watched and indexed, an
//! exclusion's documents leave search).

use std::time::Duration;

use crate::common::{self, Env};

/// The search hits' paths for a query (through the running server when there is one).
fn found(env: &Env, query: &str) -> Vec<String> {
    let v = env.json(&["search", query]);
    common::result_paths(&v)
        .into_iter()
        .map(str::to_string)
        .collect()
}

#[test]
fn settings_by_key_refuse_bad_values_and_save_nothing() {
    let env = Env::new(&[("a.md", "alpha\n")]);
    let docs = env.docs.to_str().unwrap();
    // Defaults, one per line with their keys.
    let out = env.run_ok(&["config", "get"]);
    let all = String::from_utf8_lossy(&out.stdout);
    assert!(all.contains("transcription.audio = false"), "{all}");
    assert!(all.contains("ocr.enabled = true"), "{all}");

    env.run_ok(&["config", "add", "folders", docs]);
    env.run_ok(&["config", "set", "transcription.audio", "on"]);
    env.run_ok(&["config", "add", "exclude", "drafts/**"]);
    let before = fs_err::read_to_string(env.home.join("config.toml")).unwrap();
    assert!(before.contains("audio = true"), "{before}");

    for (args, must) in [
        (
            vec!["config", "set", "transcription.video", "maybe"],
            vec!["transcription.video", "true or false"],
        ),
        (
            vec!["config", "add", "folders", "/no/such/folder"],
            vec!["folders", "does not exist"],
        ),
        (
            vec!["config", "add", "exclude", "drafts/["],
            vec!["exclude", "drafts/["],
        ),
        (
            vec!["config", "set", "ocr.languages", "eng,klingon"],
            vec!["ocr.languages", "klingon"],
        ),
        (
            vec!["config", "set", "ocr.langs", "eng"],
            vec!["unknown setting", "ocr.languages"],
        ),
        (
            vec!["config", "set", "libraries", "x"],
            vec!["libraries", "linkly library"],
        ),
        (
            vec!["config", "remove", "exclude", "*.tmp"],
            vec!["exclude", "current items"],
        ),
    ] {
        let err = env.run_failing(&args);
        for m in must {
            assert!(err.contains(m), "{args:?}: {err}");
        }
        assert_eq!(
            fs_err::read_to_string(env.home.join("config.toml")).unwrap(),
            before,
            "{args:?} saved something"
        );
    }

    let out = env.run_ok(&["config", "get", "folders"]);
    let folders = String::from_utf8_lossy(&out.stdout);
    let canonical = fs_err::canonicalize(&env.docs).unwrap();
    assert_eq!(folders.trim(), canonical.to_str().unwrap());
    env.run_ok(&["config", "remove", "folders", docs]);
    let out = env.run_ok(&["--json", "config", "get", "folders"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["value"], "", "{v}");
}

#[test]
fn a_running_server_applies_config_changes_at_once() {
    let env = Env::new(&[
        ("keep/alpha.md", "The zanzibarite report.\n"),
        ("drafts/beta.md", "A quokkaflux draft.\n"),
    ]);
    let (_server, _port) = env.serve_watching(&["--no-model-download"]);
    assert!(found(&env, "quokkaflux").is_empty());
    // A folder added by another program: watched and indexed without a restart.
    env.run_ok(&["config", "add", "folders", env.docs.to_str().unwrap()]);
    let took = common::wait_until("the new folder indexed", Duration::from_secs(30), || {
        found(&env, "quokkaflux").len() == 1
    });
    assert!(took < Duration::from_secs(30));
    // Watched: a file written there afterwards is indexed too.
    fs_err::write(env.docs.join("keep/gamma.md"), "A xylophonist memo.\n").unwrap();
    common::wait_until("the new file indexed", Duration::from_secs(30), || {
        found(&env, "xylophonist").len() == 1
    });
    // An exclusion: its documents leave search, the others stay.
    env.run_ok(&["config", "add", "exclude", "drafts/**"]);
    common::wait_until("the draft gone", Duration::from_secs(30), || {
        found(&env, "quokkaflux").is_empty()
    });
    assert_eq!(found(&env, "zanzibarite").len(), 1);
    // And back.
    env.run_ok(&["config", "remove", "exclude", "drafts/**"]);
    common::wait_until("the draft back", Duration::from_secs(30), || {
        found(&env, "quokkaflux").len() == 1
    });
}
