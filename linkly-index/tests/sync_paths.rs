//! `Index::sync_paths`: a watcher burst or a tool syncs only the paths it names, with the same
//! rules as a full sync (hidden, excluded and ignored paths left out; a gone folder takes its
//! files out; paths outside the watched folders ignored), and a full sync afterwards finds
//! nothing left to do.

use std::path::{Path, PathBuf};

use linkly_index::{Index, SyncOptions};

struct Fixture {
    _tmp: tempfile::TempDir,
    docs: PathBuf,
    index: Index,
    opts: SyncOptions,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    for (rel, text) in [
        ("a.md", "# A\n\nalpha words\n"),
        ("sub/b.md", "# B\n\nbravo words\n"),
        ("sub/deep/c.txt", "charlie words\n"),
        ("skip/d.md", "delta words\n"),
    ] {
        let p = docs.join(rel);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(p, text).unwrap();
    }
    let index = Index::open(&tmp.path().join("index")).unwrap();
    let opts = SyncOptions {
        roots: vec![docs.clone()],
        exclude: vec!["skip".into()],
        ..SyncOptions::default()
    };
    let r = index.sync(&opts, &mut |_| {}).unwrap();
    assert_eq!(r.added, 3, "skip/ is excluded: {r:?}");
    Fixture {
        _tmp: tmp,
        docs,
        index,
        opts,
    }
}

impl Fixture {
    /// A full sync now finds nothing left to do: `sync_paths` did what it would have done.
    fn assert_full_sync_agrees(&self) {
        let r = self.index.sync(&self.opts, &mut |_| {}).unwrap();
        assert_eq!((r.added, r.updated, r.removed), (0, 0, 0), "{r:?}");
    }
}

fn indexed(index: &Index) -> Vec<String> {
    let mut v: Vec<String> = index
        .all_docs()
        .unwrap()
        .into_iter()
        .map(|d| d.path)
        .collect();
    v.sort();
    v
}

fn key(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

#[test]
fn a_new_changed_or_deleted_file_is_synced_alone() {
    let f = fixture();
    let new = f.docs.join("sub/new.md");
    fs_err::write(&new, "# New\n\nnovel words\n").unwrap();
    let r = f
        .index
        .sync_paths(&f.opts, std::slice::from_ref(&new))
        .unwrap();
    assert_eq!((r.seen, r.added, r.removed), (1, 1, 0), "{r:?}");
    assert!(f.index.doc_by_path(&key(&new)).unwrap().is_some());

    // Changed: same id, new text.
    let id = f.index.doc_by_path(&key(&new)).unwrap().unwrap().id;
    fs_err::write(&new, "# New\n\nrewritten entirely, longer than before\n").unwrap();
    let r = f
        .index
        .sync_paths(&f.opts, std::slice::from_ref(&new))
        .unwrap();
    assert_eq!(r.updated, 1, "{r:?}");
    let rec = f.index.doc_by_path(&key(&new)).unwrap().unwrap();
    assert_eq!(rec.id, id);
    assert!(f.index.content(id).unwrap().unwrap().contains("rewritten"));

    // Deleted.
    fs_err::remove_file(&new).unwrap();
    let r = f
        .index
        .sync_paths(&f.opts, std::slice::from_ref(&new))
        .unwrap();
    assert_eq!(r.removed, 1, "{r:?}");
    assert!(f.index.doc_by_path(&key(&new)).unwrap().is_none());

    // Nothing else was touched, and a full sync agrees.
    f.assert_full_sync_agrees();
}

#[test]
fn folders_renamed_away_and_in_move_their_files() {
    let f = fixture();
    let from = f.docs.join("sub");
    let to = f.docs.join("moved");
    fs_err::rename(&from, &to).unwrap();
    // A rename names both paths.
    let r = f.index.sync_paths(&f.opts, &[from, to.clone()]).unwrap();
    assert_eq!((r.added, r.removed), (2, 2), "{r:?}");
    let all = indexed(&f.index);
    assert!(
        all.iter().any(|p| p.ends_with("/moved/deep/c.txt")),
        "{all:?}"
    );
    assert!(!all.iter().any(|p| p.contains("/sub/")), "{all:?}");
    f.assert_full_sync_agrees();
}

#[test]
fn hidden_excluded_ignored_and_outside_paths_are_left_out() {
    let f = fixture();
    let hidden = f.docs.join(".secret.md");
    let excluded = f.docs.join("skip/e.md");
    let ignored = f.docs.join("sub/ignored.md");
    let outside = f.docs.parent().unwrap().join("outside.md");
    fs_err::write(f.docs.join(".gitignore"), "ignored.md\n").unwrap();
    for p in [&hidden, &excluded, &ignored, &outside] {
        fs_err::write(p, "words\n").unwrap();
    }
    let r = f
        .index
        .sync_paths(&f.opts, &[hidden, excluded, ignored, outside])
        .unwrap();
    assert_eq!((r.seen, r.added), (0, 0), "{r:?}");
    assert_eq!(indexed(&f.index).len(), 3);
}

#[test]
fn a_file_that_becomes_hidden_leaves_the_index() {
    let f = fixture();
    let from = f.docs.join("a.md");
    let to = f.docs.join(".a.md");
    fs_err::rename(&from, &to).unwrap();
    let r = f.index.sync_paths(&f.opts, &[from, to]).unwrap();
    assert_eq!((r.added, r.removed), (0, 1), "{r:?}");
}

#[test]
fn syncs_record_when_they_ran() {
    let f = fixture();
    let reconciled = f.index.last_reconcile().unwrap().expect("a full sync ran");
    assert!(f.index.last_sync().unwrap().unwrap() >= reconciled);
    f.index.sync_paths(&f.opts, &[f.docs.join("a.md")]).unwrap();
    // A scoped sync is not a reconcile.
    assert_eq!(f.index.last_reconcile().unwrap(), Some(reconciled));
}

#[test]
fn files_without_an_extension_are_indexed_by_their_content() {
    let f = fixture();
    let notes = f.docs.join("NOTES");
    let binary = f.docs.join("blob");
    fs_err::write(&notes, "Plain words about the harbour.\n").unwrap();
    fs_err::write(&binary, [0u8, 159, 146, 150, 0, 1, 2, 3, 255, 254, 0, 0]).unwrap();
    let r = f.index.sync(&f.opts, &mut |_| {}).unwrap();
    assert_eq!(r.added, 1, "the text file, not the binary: {r:?}");
    let rec = f.index.doc_by_path(&key(&notes)).unwrap().unwrap();
    assert_eq!(rec.doc_type.as_str(), "txt");
    assert!(
        f.index
            .content(rec.id)
            .unwrap()
            .unwrap()
            .contains("harbour")
    );
    assert!(f.index.doc_by_path(&key(&binary)).unwrap().is_none());
}

#[test]
fn a_huge_document_is_searchable_by_its_start_and_kept_whole() {
    let f = fixture();
    let mut text = String::from("openingword ");
    while text.len() < 9 * 1024 * 1024 {
        text.push_str("filler words go on ");
    }
    text.push_str("closingword\n");
    let big = f.docs.join("big.txt");
    fs_err::write(&big, &text).unwrap();
    f.index.sync(&f.opts, &mut |_| {}).unwrap();
    let hits = |q: &str| {
        f.index
            .hybrid_search(q, 10, &Default::default(), &Default::default())
            .unwrap()
            .total
    };
    assert_eq!(hits("openingword"), 1);
    assert_eq!(
        hits("closingword"),
        0,
        "past the first 8 MiB: not in the full-text index"
    );
    let rec = f.index.doc_by_path(&key(&big)).unwrap().unwrap();
    assert!(
        f.index
            .content(rec.id)
            .unwrap()
            .unwrap()
            .trim_end()
            .ends_with("closingword"),
        "read and grep see it all"
    );
}

#[cfg(unix)]
#[test]
fn a_symlinked_folder_out_of_the_watched_ones_is_not_followed() {
    let f = fixture();
    // `docs/keys -> <outside>`, as a link committed into a watched repository to `~/.ssh`.
    let outside = f._tmp.path().join("outside");
    fs_err::create_dir_all(&outside).unwrap();
    fs_err::write(outside.join("known_hosts"), "secret host keys\n").unwrap();
    std::os::unix::fs::symlink(&outside, f.docs.join("keys")).unwrap();
    // What a watcher that went through the link would name.
    let through = f.docs.join("keys/known_hosts");
    let r = f
        .index
        .sync_paths(&f.opts, &[through.clone(), f.docs.join("keys")])
        .unwrap();
    assert_eq!(r.added, 0, "{r:?}");
    assert!(f.index.doc_by_path(&key(&through)).unwrap().is_none());
    assert!(!indexed(&f.index).iter().any(|p| p.contains("known_hosts")));
    f.assert_full_sync_agrees();
    // With the setting on, it is followed.
    let follow = SyncOptions {
        follow_symlinks: true,
        ..f.opts.clone()
    };
    let r = f
        .index
        .sync_paths(&follow, std::slice::from_ref(&through))
        .unwrap();
    assert_eq!(r.added, 1, "{r:?}");
}
