//! Fuzzes the html extractor through the registry, as the indexer calls it.

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

mod common;

fuzz_target!(|data: &[u8]| common::fuzz(Path::new("/nonexistent/x.html"), data, false));
