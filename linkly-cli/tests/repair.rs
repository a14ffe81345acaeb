//! Lost index files through the real binary: `doctor` sees a lost full-text index, `doctor
//! --fix` and `index --rebuild` rebuild it from the store, and a server started on it repairs
//! it before it says `watching`.

use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::Env;

fn total(env: &Env) -> u64 {
    env.json(&["search", "zebra", "--limit", "50"])["total"]
        .as_u64()
        .unwrap()
}

fn lose_lexical(env: &Env) {
    fs_err::remove_dir_all(env.home.join("index/lexical-2")).unwrap();
}

#[test]
fn a_lost_full_text_index_is_seen_and_rebuilt() {
    let files: Vec<(String, String)> = (0..40)
        .map(|i| {
            (
                format!("d{i:02}.md"),
                format!("# Doc {i}\n\nzebra number {i}\n"),
            )
        })
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let env = Env::new(&refs);
    env.index();
    assert_eq!(total(&env), 40);

    lose_lexical(&env);
    let out = env.run(&["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "doctor fails on a lost index:\n{text}"
    );
    assert!(
        text.contains("40 stored, 0 in the full-text index"),
        "{text}"
    );
    assert!(text.contains("linkly doctor --fix"), "{text}");
    let out = env.run(&["doctor", "--fix"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("rebuilt the full-text index from the store: 40 documents"),
        "{text}"
    );
    assert_eq!(total(&env), 40);

    lose_lexical(&env);
    let out = env.run_ok(&["index", "--rebuild"]);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("Rebuilt the full-text index from the store: 40 documents")
    );
    assert_eq!(total(&env), 40);

    // A server repairs it by itself before it watches.
    lose_lexical(&env);
    let mut server = env
        .cmd()
        .args(["serve", "--no-model-download", "--port", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        let v = env.json(&["status"]);
        if v["index_status"] == "watching" {
            break v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "not watching: {v}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status["coverage"]["documents"], 40, "{status}");
    assert_eq!(total(&env), 40, "searched through the server");
    let _ = server.kill();
    let _ = server.wait();
}
