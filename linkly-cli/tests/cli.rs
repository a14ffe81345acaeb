//! The `linkly` binary as a user drives it: JSON fields, line numbers, grep paging, exit codes.

use crate::common;

use common::{Env, GUIDE};

#[test]
fn search_json_carries_every_field() {
    let env = Env::sample();
    env.index();
    let v = env.json(&["search", "budget"]);
    assert_eq!(v["status"], "success");
    assert_eq!(v["total"], 2);
    for r in v["results"].as_array().unwrap() {
        for field in [
            "doc_id",
            "title",
            "path",
            "doc_type",
            "relevance",
            "word_count",
            "char_count",
            "total_lines",
            "has_outline",
            "modified_at",
            "keywords",
            "snippet",
        ] {
            assert!(r.get(field).is_some(), "missing {field}: {r}");
        }
    }
    assert!(v["_meta"]["now"].is_string());
    let v = env.json(&["search", "budget", "--type", "txt"]);
    assert_eq!(v["total"], 1);
}

#[test]
fn read_line_numbers_match_the_file() {
    let env = Env::sample();
    env.index();
    let id = env.doc_id("guide");
    let out = env.run(&["read", &id, "--offset", "5", "--limit", "3"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let file: Vec<&str> = GUIDE.lines().collect();
    for n in 5..=7 {
        let expected = format!("{n:>6}\t{}\n", file[n - 1]);
        assert!(text.contains(&expected), "line {n}: {text}");
    }
    assert!(
        text.contains("(lines 5-7 of 13; continue with offset=8)"),
        "{text}"
    );
    assert!(
        text.trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("[meta] now=")
    );
    // Two ids in JSON mode: JSON Lines, one object per document.
    let txt = env.doc_id("epsilon");
    let out = env.run(&["--json", "read", &id, &txt]);
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(lines.len(), 2);
    for l in lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["status"], "success");
    }
}

#[test]
fn ids_from_stdin() {
    use std::io::Write;
    let env = Env::sample();
    env.index();
    let id = env.doc_id("guide");
    let mut child = env
        .cmd()
        .args(["outline", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "{id}").unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("[1.1] Planning [L5-9, 5 lines]"), "{text}");
}

#[test]
fn grep_context_and_paging() {
    let env = Env::sample();
    env.index();
    let id = env.doc_id("hit");
    let out = env.run(&["grep", "hit", &id, "-C", "1", "--limit", "2"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Found 8 matches in g.txt"), "{text}");
    assert!(text.contains("   4\tline 4\n   5>\thit 5\n   6\tline 6\n--\n   9\tline 9\n  10>\thit 10\n  11\tline 11\n"), "{text}");
    assert!(text.contains("continue with offset=2"), "{text}");
    let v = env.json(&["grep", "hit", &id, "--limit", "2", "--offset", "6"]);
    assert_eq!(v["returned"], 2);
    assert_eq!(v["has_more"], false);
    assert_eq!(v["matches"][0]["line_number"], 35);
    let v = env.json(&["grep", "HIT", &id, "-i", "--mode", "count"]);
    assert_eq!(v["total_matches"], 8);
}

#[test]
fn exit_codes() {
    let env = Env::sample();
    env.index();
    let code = |args: &[&str]| env.run(args).status.code().unwrap();
    assert_eq!(code(&["--exit-code", "search", "budget"]), 0);
    assert_eq!(code(&["--exit-code", "search", "zzzqqq"]), 1);
    assert_eq!(
        code(&["search", "zzzqqq"]),
        0,
        "without --exit-code nothing matched is success"
    );
    assert_eq!(code(&["--exit-code", "search", "x", "--limit", "80"]), 2);
    assert_eq!(code(&["search", "x", "--limit", "80"]), 1);
    assert_eq!(code(&["--exit-code", "search", "  "]), 2);
    let id = env.doc_id("hit");
    assert_eq!(code(&["--exit-code", "grep", "zzz", &id]), 1);
    assert_eq!(code(&["--exit-code", "grep", "hit", &id]), 0);
    assert_eq!(code(&["--exit-code", "read", "local://99999"]), 2);
    // Errors: stderr in Markdown mode, JSON on stdout in JSON mode.
    let out = env.run(&["search", "x", "--limit", "80"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "Error: Tool error: [INVALID_ARGUMENT] limit must be between 1 and 50 (got 80)"
        )
    );
    let out = env.run(&["--json", "search", "x", "--type", "exe"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "error");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("Tool error: [INVALID_ARGUMENT] doc_types has unknown type(s) \"exe\"")
    );
}

#[test]
fn incremental_index_sees_new_changed_and_deleted_files() {
    let env = Env::sample();
    env.index();
    fs_err::write(env.docs.join("new.md"), "# Fresh\n\nwombat sighting\n").unwrap();
    fs_err::remove_file(env.docs.join("notes/plain.txt")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    fs_err::write(
        env.docs.join("guide.md"),
        "# Budget guide\n\nnow with platypus\n",
    )
    .unwrap();
    let v = env.json(&["index"]);
    assert_eq!(v["added"], 1, "{v}");
    assert_eq!(v["updated"], 1, "{v}");
    assert_eq!(v["removed"], 1, "{v}");
    assert_eq!(env.json(&["search", "wombat"])["total"], 1);
    assert_eq!(env.json(&["search", "platypus"])["total"], 1);
    assert_eq!(env.json(&["search", "epsilon"])["total"], 0);
    // Hidden files, .gitignored paths and exclusions are skipped.
    fs_err::write(env.docs.join(".hidden.md"), "zebra\n").unwrap();
    fs_err::write(env.docs.join(".gitignore"), "ignored/\n").unwrap();
    fs_err::create_dir_all(env.docs.join("ignored")).unwrap();
    fs_err::write(env.docs.join("ignored/a.md"), "zebra\n").unwrap();
    fs_err::create_dir_all(env.docs.join("drafts")).unwrap();
    fs_err::write(env.docs.join("drafts/b.md"), "zebra\n").unwrap();
    fs_err::write(env.docs.join("kept.md"), "zebra\n").unwrap();
    env.json(&["index", "--exclude", "drafts"]);
    let v = env.json(&["search", "zebra"]);
    assert_eq!(v["total"], 1, "{v}");
    assert!(
        v["results"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("kept.md")
    );
    // The id of an unchanged path is stable.
    let before = env.doc_id("wombat");
    env.json(&["index"]);
    assert_eq!(env.doc_id("wombat"), before);
}

#[test]
fn folders_commands() {
    let env = Env::sample();
    let out = env.run(&["folders", "add", env.docs.to_str().unwrap()]);
    assert!(out.status.success());
    let v = env.json(&["folders", "list"]);
    assert_eq!(v["folders"].as_array().unwrap().len(), 1);
    let out = env.run(&["folders", "remove", env.docs.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(env.run_failing(&["index"]).contains("no watched folders"));
}

#[test]
fn completions_print_a_script() {
    let out = common::Env::new(&[]).run(&["completions", "bash"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("linkly"));
}

/// `linkly` alone under a terminal (util-linux's `script` gives it one), with this data
/// directory: its standard output and exit status.
fn alone_on_a_terminal(home: &std::path::Path) -> (String, std::process::ExitStatus) {
    let out = std::process::Command::new("script")
        .args(["--quiet", "--return", "--command"])
        .arg(common::bin())
        .arg("/dev/null")
        .env("LINKLY_HOME", home)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("util-linux's script runs");
    (
        String::from_utf8_lossy(&out.stdout).replace('\r', ""),
        out.status,
    )
}

#[test]
fn linkly_alone_on_a_terminal_says_what_to_do_next() {
    let env = Env::sample();
    let (text, status) = alone_on_a_terminal(&env.home);
    assert!(status.success(), "{status}: {text}");
    assert!(text.contains("no folder watched yet"), "{text}");
    // Each step is a command that parses.
    for step in [
        "linkly index ~/Documents",
        "linkly search \"quarterly budget\"",
        "linkly open",
        "claude mcp add linkly -- linkly mcp",
        "{\"command\": \"uvx\", \"args\": [\"linkly\", \"mcp\"]}",
    ] {
        assert!(text.contains(step), "{step} missing: {text}");
    }
    for args in [
        &["index", "--help"][..],
        &["open", "--help"],
        &["mcp", "--help"],
    ] {
        assert!(env.run(args).status.success());
    }
    // Once a folder is watched, it says so and offers to bring the index up to date.
    assert!(
        env.run(&["folders", "add", env.docs.to_str().unwrap()])
            .status
            .success()
    );
    let (text, _) = alone_on_a_terminal(&env.home);
    assert!(text.contains("watching 1 folder ("), "{text}");
    assert!(
        text.contains(&env.docs.canonicalize().unwrap().display().to_string()),
        "{text}"
    );
    assert!(text.contains("linkly index "), "{text}");
}

#[test]
fn linkly_alone_in_a_script_stays_a_usage_error() {
    let out = common::Env::new(&[]).run(&[]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage: linkly"));
}

#[test]
fn open_without_a_browser_prints_the_address() {
    let env = Env::new(&[]);
    // No opener (xdg-open, open) on the PATH: a server machine, a container.
    let empty = tempfile::tempdir().unwrap();
    let out = env
        .cmd()
        .arg("open")
        .env("PATH", empty.path())
        .output()
        .unwrap();
    let _ = env.run(&["stop"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    let url = stdout
        .lines()
        .find(|l| l.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no address printed: {stdout}"));
    assert!(stderr.contains(&format!("open {url} yourself")), "{stderr}");
}

/// Every command opens the data directory the one way: `linkly status` on a fresh home makes
/// it 0700, and tightens one that other accounts could read.
#[cfg(unix)]
#[test]
fn status_on_a_fresh_home_leaves_the_data_directory_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let env = Env::new(&[]);
    assert!(!env.home.exists());
    let mode = |env: &Env| fs_err::metadata(&env.home).unwrap().permissions().mode() & 0o777;
    let _ = env.run(&["status"]);
    assert_eq!(mode(&env), 0o700, "a new data directory");
    fs_err::set_permissions(&env.home, std::fs::Permissions::from_mode(0o755)).unwrap();
    let _ = env.run(&["--json", "search", "anything"]);
    assert_eq!(mode(&env), 0o700, "an existing data directory, tightened");
    // Its databases (and their WAL files) are the owner's alone too.
    fn databases(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in fs_err::read_dir(dir).unwrap().map(Result::unwrap) {
            let path = entry.path();
            if path.is_dir() {
                databases(&path, found);
            } else if entry.file_name().to_string_lossy().contains(".sqlite") {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    databases(&env.home, &mut found);
    assert!(!found.is_empty(), "the search opened no database");
    for db in found {
        let m = fs_err::metadata(&db).unwrap().permissions().mode() & 0o777;
        assert_eq!(m, 0o600, "{}", db.display());
    }
}
