//! What the corpus tests share: where the shared corpus is, and checks on extracted outlines.
// Each test binary uses part of it.
#![allow(dead_code)]

use std::path::PathBuf;

use linkly_core::OutlineNode;
use linkly_extract::Extracted;

/// The shared test corpus: `$LINKLY_SHARED_DIR/corpus` (or `$LINKLY_SHARED_DIR` itself when it
/// is the corpus folder), else `shared/corpus` next to the repository. Panics (never skips)
/// when it is not there.
pub(crate) fn corpus_dir() -> PathBuf {
    let mut candidates = Vec::new();
    if let Some(dir) = std::env::var_os("LINKLY_SHARED_DIR").filter(|v| !v.is_empty()) {
        let dir = PathBuf::from(dir);
        candidates.push(dir.join("corpus"));
        candidates.push(dir);
    }
    candidates.push(PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/corpus"
    )));
    candidates.push(PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/corpus"
    )));
    candidates
        .iter()
        .find(|d| d.join("MANIFEST.md").is_file())
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "the shared test corpus was not found (set LINKLY_SHARED_DIR); tried {candidates:?}"
            )
        })
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
