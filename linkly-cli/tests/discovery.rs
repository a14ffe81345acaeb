//! The discovery commands over the real binary: `library add|list|edit|remove`,
//! `list-libraries`, `explore`, `find-paths` and `list`, with their flags and exit codes.

use crate::common;

use common::Env;

fn sample() -> Env {
    let env = Env::new(&[
        ("README.md", "# Read me\n\nThe test tree.\n"),
        ("projects/alpha/plan.md", "# Plan\n\ntantivy tantivy plan\n"),
        ("projects/alpha/notes.txt", "tantivy notes tantivy\n"),
        ("projects/beta/spec.md", "# Spec\n\nbudget budget review\n"),
        ("資料/東京/報告.md", "# 東京の報告\n\n東京の研究所。\n"),
    ]);
    env.index();
    env
}

fn text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn library_commands_edit_the_config() {
    let env = sample();
    let projects = env.docs.join("projects");
    let elsewhere = env.tmp.path().join("elsewhere");
    fs_err::create_dir_all(&elsewhere).unwrap();
    fs_err::write(elsewhere.join("e.md"), "# Else\n\nelsewhere text\n").unwrap();

    let out = env.run_ok(&[
        "library",
        "add",
        "proj",
        projects.to_str().unwrap(),
        "--description",
        "Plans",
        "--tags",
        "#Work",
    ]);
    assert!(text(&out).contains("Added library proj (local://1)"));
    // A folder outside the watched ones becomes watched.
    let out = env.run(&["library", "add", "else", elsewhere.to_str().unwrap()]);
    assert!(text(&out).contains("Watching "), "{}", text(&out));
    let folders = env.json(&["folders", "list"]);
    assert_eq!(folders["folders"].as_array().unwrap().len(), 2);
    // Duplicate names fail.
    let out = env.run(&["library", "add", "PROJ", projects.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("exists already"));

    let v = env.json(&["library", "list"]);
    assert_eq!(v["libraries"][0]["name"], "proj");
    assert_eq!(v["libraries"][0]["id"], "local://1");
    assert_eq!(v["libraries"][0]["tags"], serde_json::json!(["work"]));
    assert_eq!(v["libraries"][1]["id"], "local://2");

    env.run_ok(&[
        "library",
        "edit",
        "local://1",
        "--name",
        "projects",
        "--description",
        "All plans",
    ]);
    let out = env.run(&["list-libraries"]);
    let md = text(&out);
    assert!(
        md.contains("- **projects** (local://1): All plans (3 docs, 1 folder)"),
        "{md}"
    );
    // Not indexed yet: the new folder counts no documents.
    assert!(
        md.contains("- **else** (local://2): no description (0 docs, 1 folder)"),
        "{md}"
    );
    env.index();
    let v = env.json(&["list-libraries"]);
    assert_eq!(v["status"], "success");
    let md = v["content"].as_str().unwrap();
    assert!(md.contains("(1 docs, 1 folder)"), "{md}");

    let out = env.run(&["library", "remove", "else"]);
    assert!(out.status.success());
    let out = env.run(&["library", "remove", "else"]);
    assert_eq!(out.status.code(), Some(1));
    let v = env.json(&["library", "list"]);
    assert_eq!(v["libraries"].as_array().unwrap().len(), 1);
}

#[test]
fn explore_find_paths_and_list_commands() {
    let env = sample();
    let projects = env.docs.join("projects");
    env.run(&["library", "add", "proj", projects.to_str().unwrap()]);
    let docs = env.docs.canonicalize().unwrap();
    let docs = docs.to_str().unwrap();

    let out = env.run(&["explore", "--library", "proj"]);
    let md = text(&out);
    assert!(
        md.starts_with("# Explore\n\nScope: library proj (local://1)"),
        "{md}"
    );
    let v = env.json(&["explore"]);
    assert_eq!(v["summary"]["documents"], 5);
    assert_eq!(v["status"], "success");

    let v = env.json(&["find-paths", "--patterns", "alpha,東京", "--limit", "1"]);
    assert_eq!(v["total_files"], 3);
    assert_eq!(v["truncated"], true);
    assert_eq!(
        v["directories"][0]["path"],
        format!("{docs}/projects/alpha")
    );
    let out = env.run(&["find-paths", "--patterns", "alpha"]);
    assert!(
        text(&out).contains("Found 1 folder(s), 2 files total."),
        "{}",
        text(&out)
    );

    let v = env.json(&[
        "list",
        "--scope",
        "folder",
        "--path",
        docs,
        "--type",
        "md",
        "--sort",
        "name",
        "--limit",
        "2",
        "--offset",
        "1",
        "--snippet",
    ]);
    assert_eq!(v["total"], 4);
    assert_eq!(v["offset"], 1);
    assert_eq!(v["items"].as_array().unwrap().len(), 2);
    assert!(v["items"][0]["snippet"].is_string());
    assert!(
        v["readme"]["doc_id"]
            .as_str()
            .unwrap()
            .starts_with("local://")
    );
    let v = env.json(&[
        "list",
        "--scope",
        "library",
        "--library",
        "proj",
        "--modified-after",
        "2000-01-01",
        "--no-snippet",
    ]);
    assert_eq!(v["total"], 3);
    assert_eq!(v["items"][0]["snippet"], serde_json::Value::Null);
    let out = env.run(&["list", "--scope", "folder", "--path", docs]);
    assert!(
        text(&out).starts_with(&format!(
            "# Files\n\nShowing 5 of 5 files (sort: recent, offset: 0) — target: {docs}"
        )),
        "{}",
        text(&out)
    );
}

#[test]
fn discovery_errors_and_exit_codes() {
    let env = sample();
    let docs = env.docs.to_str().unwrap();
    // Nothing matched: 0 by default, 1 with --exit-code.
    let out = env.run(&["list", "--scope", "folder", "--path", docs, "--type", "pdf"]);
    assert_eq!(out.status.code(), Some(0));
    let out = env.run(&[
        "--exit-code",
        "list",
        "--scope",
        "folder",
        "--path",
        docs,
        "--type",
        "pdf",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // An empty page past the end is still "found".
    let out = env.run(&[
        "--exit-code",
        "list",
        "--scope",
        "folder",
        "--offset",
        "100",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = env.run(&["--exit-code", "find-paths", "--patterns", "zzzqqq"]);
    assert_eq!(out.status.code(), Some(1));
    let out = env.run(&[
        "--exit-code",
        "--json",
        "find-paths",
        "--patterns",
        "zzzqqq",
    ]);
    assert_eq!(out.status.code(), Some(1));

    // Failures: 1 by default, 2 with --exit-code, the tool's code in the message.
    let outside = env.tmp.path().to_str().unwrap().to_string();
    let message = env.json_refusal(&["list", "--scope", "folder", "--path", &outside]);
    assert!(message.contains("[PATH_NOT_ALLOWED]"), "{message}");
    for (code, args, expected) in [
        (
            1,
            &["list", "--scope", "folder", "--tags", "work"][..],
            "Error: Tool error: [INVALID_ARGUMENT] tags",
        ),
        (
            2,
            &["--exit-code", "list", "--scope", "library"],
            "library is required",
        ),
        (1, &["explore", "--library", "nope"], "[LIBRARY_NOT_FOUND]"),
        (
            1,
            &["find-paths", "--patterns", "a", "--limit", "0"],
            "[INVALID_ARGUMENT] limit must be between 1 and 50 (got 0)",
        ),
        (
            1,
            &["list", "--scope", "folder", "--type", "exe"],
            "[INVALID_ARGUMENT] doc_types has unknown type(s) \"exe\"",
        ),
    ] {
        let stderr = env.stderr_of_exit(code, args);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    // Mutually exclusive flags are a usage error.
    let out = env.run(&["list", "--scope", "folder", "--snippet", "--no-snippet"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Keywords of Japanese and Chinese documents are words (`コンポーネント`, `组件`), not the
/// bigram fragments the full-text index is made of (`ント`, `コン`), in `search` and `explore`;
/// the bigram index still finds a part of a word.
#[test]
fn cjk_keywords_are_words_in_search_and_explore() {
    let md = common::corpus_dir().join("md");
    let read = |name: &str| fs_err::read_to_string(md.join(name)).unwrap();
    let (ja1, ja2, zh) = (
        read("vuedocs-ja-component-basics.md"),
        read("vuedocs-ja-reactivity-fundamentals.md"),
        read("vuedocs-zh-component-basics.md"),
    );
    let env = Env::new(&[
        ("ja/component-basics.md", &ja1),
        ("ja/reactivity-fundamentals.md", &ja2),
        ("zh/component-basics.md", &zh),
    ]);
    env.index();
    let v = env.json(&["search", "コンポーネント", "--limit", "5"]);
    let keywords = |path: &str| -> Vec<String> {
        let r = common::result_ending(&v, path).unwrap_or_else(|| panic!("{path} not found: {v}"));
        serde_json::from_value(r["keywords"].clone()).unwrap()
    };
    let ja = keywords("ja/component-basics.md");
    assert!(ja.contains(&"コンポーネント".to_string()), "{ja:?}");
    for fragment in ["ント", "コン", "ポー", "ーネ", "ネン"] {
        assert!(!ja.contains(&fragment.to_string()), "{fragment} in {ja:?}");
    }
    // A part of a word is still found: the bigram index is unchanged.
    let v = env.json(&["search", "ポーネ"]);
    assert!(v["total"].as_u64().unwrap() >= 1, "{v}");
    let v = env.json(&["search", "组件"]);
    let zh: Vec<String> = serde_json::from_value(v["results"][0]["keywords"].clone()).unwrap();
    assert!(zh.contains(&"组件".to_string()), "{zh:?}");

    // explore ranks the documents' keywords: no fragment reaches it either.
    let v = env.json(&["explore"]);
    let all = v["keywords"].to_string();
    assert!(all.contains("\"vue\""), "{all}");
    for fragment in ["ント", "コン", "ポー", "ーネ", "ネン", "オブ", "ブジ"] {
        assert!(
            !all.contains(&format!("\"{fragment}\"")),
            "{fragment} in {all}"
        );
    }
}
