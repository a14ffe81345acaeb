//! Self-repair: the store is the source of truth. A lost full-text index is rebuilt from it
//! (no file extracted again); a lost store never hands old ids to other files and leaves no
//! orphans in the full-text index.

use std::path::PathBuf;

use linkly_index::{Index, Phase, SyncOptions};

struct Fixture {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    docs: PathBuf,
    opts: SyncOptions,
}

fn fixture(n: usize) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    fs_err::create_dir_all(&docs).unwrap();
    for i in 0..n {
        fs_err::write(
            docs.join(format!("d{i:03}.md")),
            format!("# Doc {i}\n\nzebra number {i}\n"),
        )
        .unwrap();
    }
    let opts = SyncOptions::of_roots(vec![docs.clone()]);
    Fixture {
        dir: tmp.path().join("index"),
        _tmp: tmp,
        docs,
        opts,
    }
}

fn hits(index: &Index, query: &str) -> usize {
    index
        .hybrid_search(query, 100, &Default::default(), &Default::default())
        .unwrap()
        .total
}

#[test]
fn a_lost_full_text_index_is_rebuilt_from_the_store() {
    let f = fixture(25);
    {
        let index = Index::open(&f.dir).unwrap();
        index.sync(&f.opts, &mut |_| {}).unwrap();
        assert_eq!(hits(&index, "zebra"), 25);
    }
    fs_err::remove_dir_all(f.dir.join("lexical-2")).unwrap();

    let index = Index::open(&f.dir).unwrap();
    assert!(!index.lexical_consistent().unwrap(), "detected at open");
    assert_eq!(hits(&index, "zebra"), 0);
    // Repaired on request, with progress, without extracting any file again.
    let mut phases = Vec::new();
    let n = index
        .rebuild_lexical(&mut |p| phases.push(p.phase))
        .unwrap();
    assert_eq!(n, 25);
    assert!(phases.contains(&Phase::Rebuilding));
    assert!(index.lexical_consistent().unwrap());
    assert_eq!(hits(&index, "zebra"), 25);
    assert_eq!(hits(&index, "d007"), 1, "file names are indexed again too");
}

#[test]
fn a_full_sync_repairs_a_lost_full_text_index_by_itself() {
    let f = fixture(12);
    {
        let index = Index::open(&f.dir).unwrap();
        index.sync(&f.opts, &mut |_| {}).unwrap();
    }
    fs_err::remove_dir_all(f.dir.join("lexical-2")).unwrap();
    let index = Index::open(&f.dir).unwrap();
    let mut rebuilt = false;
    let r = index
        .sync(&f.opts, &mut |p| rebuilt |= p.phase == Phase::Rebuilding)
        .unwrap();
    assert!(rebuilt);
    assert_eq!((r.added, r.updated, r.unchanged), (0, 0, 12), "{r:?}");
    assert_eq!(hits(&index, "zebra"), 12);
}

#[test]
fn a_lost_store_never_recycles_ids_and_sweeps_orphans() {
    let f = fixture(10);
    let old_max = {
        let index = Index::open(&f.dir).unwrap();
        index.sync(&f.opts, &mut |_| {}).unwrap();
        index
            .all_docs()
            .unwrap()
            .iter()
            .map(|d| d.id.0)
            .max()
            .unwrap()
    };
    for name in ["meta.sqlite", "meta.sqlite-wal", "meta.sqlite-shm"] {
        let _ = fs_err::remove_file(f.dir.join(name));
    }
    fs_err::write(f.docs.join("new.md"), "# New\n\nzebra newcomer\n").unwrap();
    let index = Index::open(&f.dir).unwrap();
    index.sync(&f.opts, &mut |_| {}).unwrap();
    let docs = index.all_docs().unwrap();
    assert_eq!(docs.len(), 11);
    assert!(
        docs.iter().all(|d| d.id.0 > old_max),
        "no old id comes back: {:?}",
        docs.iter().map(|d| d.id.0).collect::<Vec<_>>()
    );
    assert_eq!(hits(&index, "zebra"), 11, "no orphan inflates the total");
    assert!(index.lexical_consistent().unwrap());
}

#[test]
fn a_deleted_file_s_id_is_never_given_to_another_file() {
    let f = fixture(3);
    let index = Index::open(&f.dir).unwrap();
    index.sync(&f.opts, &mut |_| {}).unwrap();
    let max = index
        .all_docs()
        .unwrap()
        .iter()
        .map(|d| d.id.0)
        .max()
        .unwrap();
    let last = index
        .all_docs()
        .unwrap()
        .into_iter()
        .find(|d| d.id.0 == max)
        .unwrap();
    fs_err::remove_file(&last.path).unwrap();
    index.sync(&f.opts, &mut |_| {}).unwrap();
    fs_err::write(f.docs.join("other.md"), "something else\n").unwrap();
    index.sync(&f.opts, &mut |_| {}).unwrap();
    let other = index
        .doc_by_path(f.docs.join("other.md").to_str().unwrap())
        .unwrap()
        .unwrap();
    assert!(other.id.0 > max, "{} reused {max}", other.id.0);
}

#[test]
fn forgotten_extractions_are_read_again_by_the_next_sync() {
    let f = fixture(5);
    let index = Index::open(&f.dir).unwrap();
    index.sync(&f.opts, &mut |_| {}).unwrap();
    let again = index.sync(&f.opts, &mut |_| {}).unwrap();
    assert_eq!(again.unchanged, 5, "{again:?}");
    // The person's "read every file again": every file is extracted by the next sync, and
    // the documents stay searchable meanwhile.
    assert_eq!(index.forget_extractions().unwrap(), 5);
    assert_eq!(hits(&index, "zebra"), 5, "still searchable");
    let r = index.sync(&f.opts, &mut |_| {}).unwrap();
    assert_eq!((r.added, r.updated, r.unchanged), (0, 5, 0), "{r:?}");
    assert_eq!(hits(&index, "zebra"), 5);
    let r = index.sync(&f.opts, &mut |_| {}).unwrap();
    assert_eq!(r.unchanged, 5, "then unchanged again: {r:?}");
}
