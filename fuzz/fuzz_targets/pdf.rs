//! Fuzzes the pdf extractor through the registry, as the indexer calls it.

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

mod common;

// pdf-extract and lopdf may panic by design; the registry's catch_unwind turns that into a
// skip reason. Only panics escaping it, aborts, hangs and OOMs count as crashes.
fuzz_target!(|data: &[u8]| common::fuzz(Path::new("/nonexistent/x.pdf"), data, true));
