//! What the corpus tests share: where the test corpus is, and checks on extracted outlines.
// Each test binary uses part of it.
#![allow(dead_code)]

use std::path::PathBuf;

use linkly_core::OutlineNode;
use linkly_extract::Extracted;

/// The real test documents the repository carries: `testdata/corpus/<format>/` (sources and
/// licences in `testdata/MANIFEST.md`).
pub(crate) fn corpus_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/corpus"))
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
