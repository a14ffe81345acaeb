//! What the corpus tests share: where the test corpus is, and checks on extracted outlines.
// Each test binary uses part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use linkly_core::{OutlineNode, SkipReason};
use linkly_extract::Extracted;

/// Corpus files by name: their path and what extracting them gave.
pub(crate) type Results = BTreeMap<String, (PathBuf, Result<Extracted, SkipReason>)>;

/// The real test documents the repository carries: `testdata/corpus/<format>/` (sources and
/// licences in `testdata/MANIFEST.md`).
pub(crate) fn corpus_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/corpus"))
}

/// Every file of the corpus `folders`, extracted once by `extract` (given the folder and the
/// path): file name → result.
pub(crate) fn extract_folders(
    folders: &[&str],
    extract: impl Fn(&str, &Path) -> Result<Extracted, SkipReason>,
) -> Results {
    let mut all = BTreeMap::new();
    for folder in folders {
        let dir = corpus_dir().join(folder);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        for path in files {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let result = extract(folder, &path);
            all.insert(name, (path, result));
        }
    }
    all
}

/// The extraction of a corpus file, if the file is in this corpus (it must then extract).
pub(crate) fn ok<'a>(all: &'a Results, name: &str) -> Option<&'a Extracted> {
    let (_, result) = all
        .get(name)
        .unwrap_or_else(|| panic!("{name} is not in testdata/corpus"));
    match result {
        Ok(e) => Some(e),
        Err(skip) => panic!("{name} was skipped: {skip}"),
    }
}

/// Every node lies within `lo..=hi` and within its parent, start before end.
pub(crate) fn check_ranges(name: &str, nodes: &[OutlineNode], lo: u32, hi: u32) {
    for n in nodes {
        assert!(
            lo <= n.start_line && n.start_line <= n.end_line && n.end_line <= hi,
            "{name}: node {:?} {}..{} outside {lo}..{hi}",
            n.title,
            n.start_line,
            n.end_line
        );
        check_ranges(name, &n.children, n.start_line, n.end_line);
    }
}

/// The extracted text's lines (line N is `lines[N - 1]`).
pub(crate) fn lines(e: &Extracted) -> Vec<&str> {
    e.text.split('\n').collect()
}
