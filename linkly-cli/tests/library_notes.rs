//! Libraries with a note-tag filter through the `linkly` binary: a library holds its folders'
//! documents plus exactly the notes carrying its tags — in `library list`'s counts, `search`,
//! `list` (the notes folder is one of its paths) and `explore`; and `read` of a note shows its
//! body with the front matter as metadata.

use crate::common;

use common::Env;

#[test]
fn a_library_holds_its_folders_and_its_tagged_notes() {
    let env = Env::new(&[("other/tax.md", "# Tax\n\nThe tax office wants receipts.\n")]);
    // A real document of the corpus in the library's folder.
    let nature = env.docs.join("nature");
    fs_err::create_dir_all(&nature).unwrap();
    fs_err::copy(
        common::corpus_dir().join("md/vuedocs-fr-component-basics.md"),
        nature.join("composants.md"),
    )
    .unwrap();
    env.index();
    env.run_ok(&[
        "library",
        "add",
        "nature",
        nature.to_str().unwrap(),
        "--tags",
        "#Wildlife",
    ]);
    let owl = env.json(&[
        "note-save",
        "--mode",
        "create",
        "--content",
        "Les composants des hiboux #wildlife",
    ]);
    env.json(&[
        "note-save",
        "--mode",
        "create",
        "--content",
        "Les composants du budget #work",
    ]);
    env.index();
    let owl_path = owl["path"].as_str().unwrap();

    let libs = env.run(&["list-libraries"]);
    let libs = String::from_utf8_lossy(&libs.stdout);
    assert!(
        libs.contains("(2 docs, 1 folder) + notes tagged #wildlife"),
        "{libs}"
    );

    let hits = env.json(&["search", "composants", "--library", "nature"]);
    let paths = common::result_paths(&hits);
    assert_eq!(paths.len(), 2, "{hits}");
    assert!(paths.contains(&owl_path), "{paths:?}");
    assert!(
        paths.iter().any(|p| p.ends_with("/composants.md")),
        "{paths:?}"
    );

    let all = env.json(&["list", "--scope", "library", "--library", "nature"]);
    assert_eq!(all["total"], 2, "{all}");
    let notes_dir = env.home.join("notes");
    let notes = env.json(&[
        "list",
        "--scope",
        "library",
        "--library",
        "nature",
        "--path",
        notes_dir.to_str().unwrap(),
    ]);
    assert_eq!(notes["total"], 1, "{notes}");
    assert_eq!(notes["items"][0]["path"], owl_path);
    assert_eq!(notes["items"][0]["title"], "Les composants des hiboux");

    let explored = env.json(&["explore", "--library", "nature"]);
    assert_eq!(explored["summary"]["documents"], 2, "{explored}");

    // read: the note's body from line 1, its front matter as metadata.
    let id = env.json(&["search", "hiboux", "--scope", "notes"])["results"][0]["doc_id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = env.run(&["read", &id]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.starts_with("# Les composants des hiboux ("), "{md}");
    assert!(md.contains("\nnote: note_id "), "{md}");
    assert!(
        md.contains("front matter (metadata, not text; line 1 is file line 7)"),
        "{md}"
    );
    assert!(
        md.contains("     1\tLes composants des hiboux #wildlife\n"),
        "{md}"
    );
    assert!(md.contains("(lines 1-1 of 1; end of document)"), "{md}");
}
