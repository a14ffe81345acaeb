//! Note tags in the index (`Index::catch_up_tags`, `Index::tagged_paths`): a tag filter is
//! answered from the store, the caller is asked to read only the documents indexed since
//! their tags were stored, a deleted document loses its tags, and an index made before the
//! tag tables existed opens and answers once its notes are read one time.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use linkly_index::{Index, SyncOptions};

/// The tags of a test note: the words after `tags:` on its first line.
fn tags_of(path: &str) -> Option<Vec<String>> {
    let text = fs_err::read_to_string(path).ok()?;
    let first = text.lines().next().unwrap_or("");
    Some(
        first
            .strip_prefix("tags:")
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_string)
            .collect(),
    )
}

fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let p = dir.join(rel);
    fs_err::create_dir_all(p.parent().unwrap()).unwrap();
    fs_err::write(&p, text).unwrap();
    p
}

struct Notes {
    tmp: tempfile::TempDir,
    notes: PathBuf,
    index: Index,
    opts: SyncOptions,
}

fn notes() -> Notes {
    let tmp = tempfile::tempdir().unwrap();
    let notes = tmp.path().join("notes");
    write(&notes, "a.md", "tags: work ideas\n\nalpha\n");
    write(&notes, "sub/b.md", "tags: work\n\nbravo\n");
    write(&notes, "c.md", "no tags here\n");
    write(&notes, "d.txt", "tags: work\n\nnot Markdown\n");
    let index = Index::open(&tmp.path().join("index")).unwrap();
    let opts = SyncOptions {
        roots: vec![notes.clone()],
        ..SyncOptions::default()
    };
    index.sync(&opts, &mut |_| {}).unwrap();
    Notes {
        tmp,
        notes,
        index,
        opts,
    }
}

impl Notes {
    fn dir(&self) -> String {
        self.notes.to_string_lossy().into_owned()
    }

    /// Catches up, returning the paths read (file names, sorted).
    fn catch_up(&self) -> Vec<String> {
        let read = RefCell::new(Vec::new());
        let n = self
            .index
            .catch_up_tags(&self.dir(), |p| {
                read.borrow_mut().push(name(p));
                tags_of(p)
            })
            .unwrap();
        let mut read = read.into_inner();
        assert_eq!(n, read.len());
        read.sort();
        read
    }

    fn tagged(&self, tags: &[&str]) -> Vec<String> {
        let tags: Vec<String> = tags.iter().map(|t| t.to_string()).collect();
        self.index
            .tagged_paths(&self.dir(), &tags)
            .unwrap()
            .iter()
            .map(|p| name(p))
            .collect()
    }
}

fn name(p: &str) -> String {
    Path::new(p)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn a_tag_filter_reads_only_what_was_indexed_since() {
    let n = notes();
    // The first catch-up reads every Markdown note once; the text file is no note.
    assert_eq!(n.catch_up(), ["a.md", "b.md", "c.md"]);
    // Every tag asked must be there (all of them, not any).
    assert_eq!(n.tagged(&["work"]), ["a.md", "b.md"]);
    assert_eq!(n.tagged(&["work", "ideas"]), ["a.md"]);
    assert_eq!(n.tagged(&["ideas", "ideas"]), ["a.md"]);
    assert!(n.tagged(&["work", "missing"]).is_empty());
    // No tags: every note, by path.
    assert_eq!(n.tagged(&[]), ["a.md", "c.md", "b.md"]);
    // Nothing indexed since: nothing is read.
    assert!(n.catch_up().is_empty());

    // Changed on disk behind the index's back: the stored tags hold (nothing is read) until
    // a sync indexes the note again; then that note alone is read.
    write(&n.notes, "sub/b.md", "tags: ideas\n\nbravo, rewritten\n");
    assert!(n.catch_up().is_empty());
    assert_eq!(n.tagged(&["work"]), ["a.md", "b.md"]);
    n.index.sync(&n.opts, &mut |_| {}).unwrap();
    assert_eq!(n.catch_up(), ["b.md"]);
    assert_eq!(n.tagged(&["work"]), ["a.md"]);
    assert_eq!(n.tagged(&["ideas"]), ["a.md", "b.md"]);

    // A deleted note takes its tags with it.
    fs_err::remove_file(n.notes.join("a.md")).unwrap();
    n.index.sync(&n.opts, &mut |_| {}).unwrap();
    assert!(n.catch_up().is_empty());
    assert_eq!(n.tagged(&["ideas"]), ["b.md"]);
    let db = rusqlite::Connection::open(n.tmp.path().join("index/meta.sqlite")).unwrap();
    let orphans: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM doc_tags WHERE doc_id NOT IN (SELECT id FROM docs)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(orphans, 0);
}

#[test]
fn an_index_made_before_tags_answers_after_one_read() {
    let n = notes();
    let index_dir = n.tmp.path().join("index");
    drop(n.index);
    // The schema of an index made before the tag tables: no `doc_tags`, no stamps.
    {
        let db = rusqlite::Connection::open(index_dir.join("meta.sqlite")).unwrap();
        db.execute_batch("DROP TABLE doc_tags; DROP TABLE doc_tag_stamps;")
            .unwrap();
    }
    let n = Notes {
        index: Index::open(&index_dir).unwrap(),
        ..n
    };
    // Opened as is (no rebuild: every document is still there) ...
    assert_eq!(n.index.doc_count().unwrap(), 4);
    assert!(n.tagged(&["work"]).is_empty(), "nothing read yet");
    // ... its notes are read once, then it answers from the store.
    assert_eq!(n.catch_up(), ["a.md", "b.md", "c.md"]);
    assert_eq!(n.tagged(&["work"]), ["a.md", "b.md"]);
    assert!(n.catch_up().is_empty());
}
