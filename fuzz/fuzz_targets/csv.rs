//! Fuzzes the csv extractor through the registry, as the indexer calls it.

#![no_main]

use libfuzzer_sys::fuzz_target;

mod common;

// CSV may look at sibling files: extract from a real file in a fresh temporary folder.
fuzz_target!(|data: &[u8]| common::fuzz_file("x.csv", data));
