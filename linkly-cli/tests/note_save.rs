//! `linkly note-save` over the real binary: the anchor's local checks, stdin, and the
//! compare-and-swap contract under concurrent writers in threads and in separate processes.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Env, succeeded};
use linkly_core::{DataDir, ErrorCode};
use linkly_tools::{Linkly, NoteSaveParams};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Waits for a child at most `secs`; kills it and fails if it is still running (a command
/// that reads stdin would block here, since the test never writes or closes it).
fn wait_or_kill(mut child: Child, secs: u64) -> std::process::Output {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the command waited on stdin");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn local_checks_run_before_stdin_is_read() {
    let env = Env::new(&[]);
    let cases: [(&[&str], &str); 4] = [
        (
            &["--mode", "edit", "--content", "-"],
            "Error: --mode edit requires --note-id, --base-version (get both from `linkly list --scope notes`).",
        ),
        (
            &["--mode", "edit", "--content", "-", "--note-id", "x"],
            "Error: --mode edit requires --base-version (get both",
        ),
        (
            &["--mode", "create", "--content", "-", "--tags", " #, ,"],
            "Error: --tags was given but contains no usable tag",
        ),
        (
            &["--mode", "create", "--content", "-", "--app-name", "  "],
            "Error: --app-name must not be blank",
        ),
    ];
    for (args, expected) in cases {
        let child = env.spawn_piped(&[&["note-save"][..], args].concat());
        let out = wait_or_kill(child, 20);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.starts_with(expected), "{args:?}: {stderr}");
    }
    // --mode is a closed set, checked by clap.
    let out = env.run(&["note-save", "--mode", "delete", "--content", "x"]);
    assert!(!out.status.success());
    assert!(!env.home.join("notes").exists(), "nothing was written");
}

fn with_stdin(env: &Env, args: &[&str], input: &[u8]) -> std::process::Output {
    let mut child = env.spawn_piped(args);
    let mut stdin = child.stdin.take().unwrap();
    // The command may stop reading early (over the cap); a broken pipe is fine.
    let _ = stdin.write_all(input);
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[test]
fn stdin_bodies_caps_and_tool_errors() {
    let env = Env::new(&[]);
    let out = succeeded(with_stdin(
        &env,
        &[
            "--json",
            "note-save",
            "--mode",
            "create",
            "--content",
            "-",
            "--tags",
            "Work,#ideas",
            "--app-name",
            "Terminal",
        ],
        "Shopping list\n- milk\n- **bread**\n".as_bytes(),
    ));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "success");
    assert_eq!(
        v["content"],
        "Shopping list\n- milk\n- **bread**\n\n#work #ideas\n"
    );
    let path = PathBuf::from(v["path"].as_str().unwrap());
    assert_eq!(path, env.home.join("notes/Shopping list.md"));
    assert_eq!(v["version"], sha(&path));

    let blank = with_stdin(
        &env,
        &["note-save", "--mode", "create", "--content", "-"],
        b" \n\t\n",
    );
    assert_eq!(blank.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&blank.stderr)
            .contains("[NOTE_INVALID_INPUT] content must not be blank")
    );
    let blank_arg = env.stderr_of_exit(1, &["note-save", "--mode", "create", "--content", "  "]);
    assert!(blank_arg.contains("[NOTE_INVALID_INPUT] content must not be blank"));

    let big = vec![b'a'; 10 * 1024 * 1024 + 1];
    let over = with_stdin(
        &env,
        &["note-save", "--mode", "create", "--content", "-"],
        &big,
    );
    assert_eq!(over.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&over.stderr).contains("exceeds 10 MiB"));
    let bad = with_stdin(
        &env,
        &["note-save", "--mode", "create", "--content", "-"],
        b"\xff\xfe bad",
    );
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not valid UTF-8"));

    // A server-side refusal keeps its code; --exit-code makes it 2.
    let stderr = env.stderr_of_exit(
        2,
        &[
            "--exit-code",
            "note-save",
            "--mode",
            "create",
            "--content",
            "# Heading",
        ],
    );
    assert!(stderr.starts_with("Error: Tool error: [NOTE_INVALID_INPUT] content uses Markdown that notes do not allow: heading (line 1)"), "{stderr}");
    let message = env.json_refusal(&[
        "note-save",
        "--mode",
        "edit",
        "--content",
        "x",
        "--note-id",
        "../../etc/passwd",
        "--base-version",
        &"0".repeat(64),
    ]);
    assert!(
        message.contains("[NOTE_INVALID_INPUT] note_id must be a UUID"),
        "{message}"
    );

    // Listed at once, and already indexed: note-save answers once the note is searchable.
    let listed = env.json(&["list", "--scope", "notes"]);
    assert_eq!(listed["total"], 1, "{listed}");
    assert_eq!(listed["items"][0]["indexed"], true);
    assert_eq!(
        listed["items"][0]["tags"],
        serde_json::json!(["work", "ideas"])
    );

    // A note written through the CLI is indexed by `linkly index` (the notes folder is a root
    // of its own, inside the hidden-or-not data directory) and found by search --scope notes.
    env.index();
    let found = env.json(&["search", "bread", "--scope", "notes"]);
    assert_eq!(found["total"], 1, "{found}");
    let tagged = env.json(&["search", "milk", "--tags", "WORK"]);
    assert_eq!(tagged["total"], 1, "{tagged}");
}

fn sha(path: &Path) -> String {
    format!("{:x}", Sha256::digest(fs_err::read(path).unwrap()))
}

/// A consistent snapshot of a note: its version and its body (front matter removed).
fn snapshot(path: &Path) -> (String, String) {
    let bytes = fs_err::read(path).unwrap();
    let version = format!("{:x}", Sha256::digest(&bytes));
    let text = String::from_utf8(bytes).unwrap();
    let body = text.split_once("\n---\n").unwrap().1.to_string();
    (version, body)
}

/// How one attempt ended.
enum Attempt {
    Won,
    Conflict,
}

const CYCLES: usize = 100;
const THREAD_WRITERS: usize = 6;
const PROCESS_WRITERS: usize = 2;

/// A writer in another process: each cycle runs the real `linkly note-save` binary.
fn process_writer(env: &Env, w: usize, id: &str, path: &Path) -> Vec<(String, Attempt)> {
    (0..CYCLES)
        .map(|c| {
            let (version, body) = snapshot(path);
            let line = format!("p{w}c{c}");
            let content = format!("{body}\n{line}");
            let out = with_stdin(
                env,
                &[
                    "--json",
                    "note-save",
                    "--mode",
                    "edit",
                    "--note-id",
                    id,
                    "--base-version",
                    &version,
                    "--content",
                    "-",
                ],
                content.as_bytes(),
            );
            let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
                panic!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                )
            });
            let attempt = match v["status"].as_str() {
                Some("success") => Attempt::Won,
                _ => {
                    let message = v["message"].as_str().unwrap_or_default();
                    assert!(
                        message.contains("[NOTE_VERSION_CONFLICT]"),
                        "unexpected failure: {v}"
                    );
                    Attempt::Conflict
                }
            };
            (line, attempt)
        })
        .collect()
}

/// A writer in this process: each cycle calls the library.
fn thread_writer(linkly: &Linkly, w: usize, id: &str, path: &Path) -> Vec<(String, Attempt)> {
    (0..CYCLES)
        .map(|c| {
            let (version, body) = snapshot(path);
            let line = format!("t{w}c{c}");
            let result = linkly.note_save(NoteSaveParams {
                mode: linkly_tools::NoteMode::Edit,
                note_id: Some(id.to_string()),
                base_version: Some(version),
                content: format!("{body}\n{line}"),
                ..Default::default()
            });
            let attempt = match result {
                Ok(_) => Attempt::Won,
                Err(e) => {
                    assert_eq!(
                        e.code,
                        ErrorCode::NoteVersionConflict,
                        "unexpected failure: {e}"
                    );
                    Attempt::Conflict
                }
            };
            // Let the slower process writers in now and then.
            if c % 10 == 9 {
                std::thread::sleep(Duration::from_millis(15));
            }
            (line, attempt)
        })
        .collect()
}

#[test]
#[allow(clippy::print_stderr)]
fn eight_writers_in_threads_and_processes_never_lose_an_update() {
    let started = Instant::now();
    let env = Arc::new(Env::new(&[]));
    let created = env.json(&["note-save", "--mode", "create", "--content", "Shared log"]);
    let id = created["note_id"].as_str().unwrap().to_string();
    let path = PathBuf::from(created["path"].as_str().unwrap());
    let linkly = Arc::new(Linkly::open(DataDir::new(&env.home)).unwrap());

    let mut handles = Vec::new();
    for w in 0..PROCESS_WRITERS {
        let (env, id, path) = (env.clone(), id.clone(), path.clone());
        handles.push(std::thread::spawn(move || {
            process_writer(&env, w, &id, &path)
        }));
    }
    for w in 0..THREAD_WRITERS {
        let (linkly, id, path) = (linkly.clone(), id.clone(), path.clone());
        handles.push(std::thread::spawn(move || {
            thread_writer(&linkly, w, &id, &path)
        }));
    }
    let attempts: Vec<(String, Attempt)> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    assert_eq!(attempts.len(), (THREAD_WRITERS + PROCESS_WRITERS) * CYCLES);

    let mut won: Vec<&str> = attempts
        .iter()
        .filter(|(_, a)| matches!(a, Attempt::Won))
        .map(|(l, _)| l.as_str())
        .collect();
    let conflicts = attempts.len() - won.len();
    let (_, body) = snapshot(&path);
    let mut lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines.remove(0), "Shared log");
    lines.sort_unstable();
    won.sort_unstable();
    // Every successful write is in the final note exactly once, and nothing else is: no lost
    // update, no write from a loser.
    let lost: Vec<&&str> = won.iter().filter(|l| !lines.contains(l)).collect();
    let extra: Vec<&&str> = lines.iter().filter(|l| !won.contains(l)).collect();
    assert!(
        lost.is_empty() && extra.is_empty(),
        "{} successful writes lost: {lost:?}; {} lines from losers: {extra:?}",
        lost.len(),
        extra.len()
    );
    assert_eq!(lines, won, "each line exactly once");
    assert!(
        won.iter().any(|l| l.starts_with('p')),
        "a process writer won at least once"
    );
    assert!(
        won.iter().any(|l| l.starts_with('t')),
        "a thread writer won at least once"
    );
    // Speed is for benchmarks, not tests (each save also indexes the note now): say it only.
    eprintln!(
        "{} writes won, {conflicts} conflicts, in {:.1}s",
        won.len(),
        started.elapsed().as_secs_f64()
    );
}
