//! What an MCP client is told at `initialize` and in `tools/list`: the seeds' decision guidance
//! (issue 15, point 7), read from a real stdio session as a client receives it.

use crate::common;

use common::Session;
use serde_json::Value;

/// The `initialize` result and the `tools/list` result of one stdio session.
async fn session() -> (Value, Value) {
    let (_tmp, mut session) = Session::empty().await;
    let list = session.tools_list().await;
    (session.init.clone(), list)
}

/// The description of a tool, and its schema as text.
fn tool<'a>(list: &'a Value, name: &str) -> (&'a str, String) {
    let t = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name}"));
    (
        t["description"].as_str().unwrap(),
        t["inputSchema"].to_string(),
    )
}

fn says(text: &str, what: &[&str]) {
    for w in what {
        assert!(text.contains(w), "{w:?} is missing from: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_name_the_discovery_tools_notes_and_the_clock() {
    let (init, _) = session().await;
    let instructions = init["instructions"].as_str().unwrap();
    says(
        instructions,
        &[
            "search → grep or outline → read",
            "`list_libraries`",
            "`explore`",
            "`find_paths`",
            "`list`",
            "`note_save`",
            "scope=\"notes\"",
            "NOTE_VERSION_CONFLICT",
            "[meta] now=",
            "untrusted",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descriptions_carry_the_seeds_decision_guidance() {
    let (_, list) = session().await;
    let (search, search_schema) = tool(&list, "search");
    // Date windows vs time_sort vs the clock; scope and tags; find_paths first; snippet lines.
    says(
        search,
        &[
            "modified_after/modified_before",
            "time_sort=newest/oldest",
            "[meta] now=",
            "find_paths",
            "scope=\"notes\"",
            "tags",
            "(L120-124)",
            "snippet_from/snippet_to",
        ],
    );
    says(&search_schema, &["for OR, call once per tag", "[meta] now"]);
    let (find_paths, _) = tool(&list, "find_paths");
    says(
        find_paths,
        &["do not guess a path_glob", "Not for topics", "call search"],
    );
    let (list_tool, list_schema) = tool(&list, "list");
    says(
        list_tool,
        &["README", "`readme`", "`available_tags`", "skip_reason"],
    );
    says(&list_schema, &["copy `path`, not `path_glob`"]);
    let (read, _) = tool(&list, "read");
    says(
        read,
        &[
            "`none`",
            "`abstract`",
            "`full`",
            "2,000",
            "20,000",
            "stays an excerpt",
        ],
    );
    let (note_save, _) = tool(&list, "note_save");
    says(
        note_save,
        &[
            "list scope=\"notes\"",
            "base_version",
            "NOTE_VERSION_CONFLICT",
            "re-read, merge",
        ],
    );
    let (outline, _) = tool(&list, "outline");
    says(outline, &["has_outline=false", "~50 lines"]);
    let (grep, _) = tool(&list, "grep");
    says(
        grep,
        &["case_insensitive", "fuzzy_whitespace", "output_mode=count"],
    );
    let (explore, _) = tool(&list, "explore");
    says(explore, &["no precise topic"]);
    let (libraries, _) = tool(&list, "list_libraries");
    says(libraries, &["before passing `library`"]);
}
