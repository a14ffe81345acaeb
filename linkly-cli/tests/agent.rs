//! An agent's session as the issue tracker describes it, through `linkly mcp` over stdio
//! driven by the official MCP Python SDK (`agent_scenario.py`): search → read exactly the
//! snippet's lines → grep a word with a ligature in a real PDF → find a CP932 table by kanji
//! and half-width kana, and a Japanese page by keywords that are words → save a note, read it,
//! edit it from what `read` returned → find it by its tag. Every step once, without retries.

use crate::common;

use common::{Env, corpus_dir};

#[test]
fn search_read_grep_edit_a_note_and_find_it_by_tag() {
    let env = Env::new(&[("about.md", "# About\n\nA folder of readings.\n")]);
    let pdf = "pdfjs-freeculture-p185-186.pdf";
    for (dir, name) in [
        ("pdf", pdf),
        ("csv", "linkly-ken-all-cp932.csv"),
        ("md", "vuedocs-ja-component-basics.md"),
    ] {
        fs_err::copy(corpus_dir().join(dir).join(name), env.docs.join(name)).unwrap();
    }
    env.index();
    let (last, stdout) = env.stdio_scenario("agent_scenario.py", &[]);
    assert_eq!(last, "15 passed, 0 failed", "{stdout}");
}
