//! A `linkly index` killed midway leaves an index that reopens and catches up.

use crate::common;

use std::time::{Duration, Instant};

use common::Env;
use linkly_index::Index;

const FILES: usize = 6000;

#[test]
fn killed_indexing_catches_up_on_the_next_run() {
    let env = Env::new(&[]);
    for i in 0..FILES {
        let dir = env.docs.join(format!("d{}", i % 50));
        if i < 50 {
            fs_err::create_dir_all(&dir).unwrap();
        }
        fs_err::write(
            dir.join(format!("f{i}.md")),
            format!(
                "# Note {i}\n\ncommonword and uniq{i} in a small file.\n{}\n",
                "filler text ".repeat(40)
            ),
        )
        .unwrap();
    }
    let mut child = env
        .cmd()
        .args(["index", env.docs.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();

    // Kill it (SIGKILL: no cleanup at all) as soon as the store holds part of the files.
    let index_dir = env.home.join("index");
    let started = Instant::now();
    let mut killed_at = None;
    while started.elapsed() < Duration::from_secs(120) {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        let stored = index_dir
            .join("meta.sqlite")
            .exists()
            .then(|| Index::open(&index_dir).ok())
            .flatten()
            .map_or(0, |index| index.doc_count().unwrap_or(0));
        if stored > 0 {
            child.kill().unwrap();
            killed_at = Some(stored);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.wait();
    let killed_at = killed_at.expect("indexing finished before it could be killed midway");
    assert!(
        (killed_at as usize) < FILES,
        "killed after {killed_at} of {FILES}"
    );

    let health = Index::open(&index_dir).unwrap().health().unwrap();
    assert!((health.stored as usize) < FILES, "{health:?}");

    // The next run completes and the store and the lexical index agree.
    let v = env.json(&["index"]);
    assert_eq!(v["doc_count"], FILES, "{v}");
    let health = Index::open(&index_dir).unwrap().health().unwrap();
    assert_eq!(health.stored as usize, FILES, "{health:?}");
    assert_eq!(health.lexical as usize, FILES, "{health:?}");
    assert_eq!(health.dirty, 0, "{health:?}");
    assert_eq!(env.json(&["search", "commonword"])["total"], FILES);
    for i in [0, FILES / 2, FILES - 1] {
        let v = env.json(&["search", &format!("uniq{i}")]);
        assert_eq!(v["total"], 1, "uniq{i}: {v}");
    }
}
