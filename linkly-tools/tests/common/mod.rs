//! What the tool tests share: an index over files written for the test, calling a tool and
//! reading its answer.
// Each test binary uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use linkly_core::{Config, DataDir};
use linkly_index::{Index, SyncOptions};
use linkly_tools::Linkly;
use serde_json::{Value, json};

/// Writes each (relative path, text) of `files` under `root`, making the folders.
pub(crate) fn write_files(root: &Path, files: &[(&str, &str)]) {
    for (rel, text) in files {
        let p = root.join(rel);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(&p, text).unwrap();
    }
}

/// An index in `home/home` synced over `roots`, and its data directory.
pub(crate) fn synced_index(home: &Path, roots: &[PathBuf]) -> (DataDir, Index) {
    let data = DataDir::new(home.join("home"));
    let index = Index::open(&data.index_dir()).unwrap();
    index
        .sync(
            &SyncOptions {
                roots: roots.to_vec(),
                ..SyncOptions::default()
            },
            &mut |_| {},
        )
        .unwrap();
    (data, index)
}

/// An index in `home/home` synced over `roots`, and the tools over it with `config`.
pub(crate) fn open_synced(home: &Path, roots: &[PathBuf], config: Config) -> Linkly {
    let (data, index) = synced_index(home, roots);
    Linkly::new(Arc::new(index), data, config)
}

/// A data directory in `home/home` whose configuration watches `docs`.
pub(crate) fn watching(home: &Path, docs: &Path) -> DataDir {
    let data = DataDir::new(home.join("home"));
    let mut config = Config::default();
    config.add_folder(docs).unwrap();
    config.save(&data).unwrap();
    data
}

/// The tools over a data directory in `home/home` that watches `docs`, indexed once.
pub(crate) fn indexed(home: &Path, docs: &Path) -> Arc<Linkly> {
    let linkly = Arc::new(Linkly::open(watching(home, docs)).unwrap());
    linkly.index_now(&mut |_| {}).unwrap();
    linkly
}

/// Calls `tool`: its text and whether it is an error.
pub(crate) fn call(l: &Linkly, tool: &str, args: Value) -> (String, bool) {
    let out = l.call(tool, args).unwrap();
    (out.text, out.is_error)
}

/// Calls `tool` with `output_format: json`; the parsed answer, which must not be an error.
pub(crate) fn json_call(l: &Linkly, tool: &str, mut args: Value) -> Value {
    args["output_format"] = json!("json");
    let (text, err) = call(l, tool, args);
    assert!(!err, "{tool} failed: {text}");
    serde_json::from_str(&text).unwrap()
}

/// Calls `tool`, which must answer with an error; its message.
pub(crate) fn err_call(l: &Linkly, tool: &str, args: Value) -> String {
    let (text, err) = call(l, tool, args);
    assert!(err, "{tool} should fail: {text}");
    text
}

/// The string `key` of every item of the array `list` in an answer: the paths of `results`,
/// the titles of `items`.
pub(crate) fn column<'a>(answer: &'a Value, list: &str, key: &str) -> Vec<&'a str> {
    answer[list]
        .as_array()
        .unwrap_or_else(|| panic!("no array {list} in {answer}"))
        .iter()
        .map(|item| item[key].as_str().unwrap())
        .collect()
}

/// The item of the array `list` in an answer whose string `key` is `value`.
pub(crate) fn item_where<'a>(answer: &'a Value, list: &str, key: &str, value: &str) -> &'a Value {
    answer[list]
        .as_array()
        .unwrap_or_else(|| panic!("no array {list} in {answer}"))
        .iter()
        .find(|item| item[key] == value)
        .unwrap_or_else(|| panic!("no {key} {value:?} in {list} of {answer}"))
}

/// Asserts that a Markdown answer ends with the meta footer: `---`, then `[meta] now=…`.
pub(crate) fn assert_footer(md: &str) {
    let tail: Vec<&str> = md.trim_end().lines().rev().take(2).collect();
    assert!(
        tail.len() == 2 && tail[0].starts_with("[meta] now=") && tail[1] == "---",
        "no meta footer: {md}"
    );
}

/// Asserts that an answer holds each of `parts`.
pub(crate) fn assert_holds(answer: &str, parts: &[&str]) {
    for part in parts {
        assert!(answer.contains(part), "no {part:?} in: {answer}");
    }
}
