//! Extracts every file under a folder and counts the outcomes: text, a skip reason, or neither
//! (text with nothing but whitespace and page markers: "silence").
//!
//! Files are read as the indexer reads them (`extract_loaded`: the extractor by `detect`).
//!
//! `cargo run -p linkly-extract --example extract_dir -- <folder>` prints one line per silent
//! file, the skip reasons by code, and the three counts.

// A command-line tool: its output is the point.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else if path.is_file() {
            out.push(path);
        }
    }
}

fn main() {
    let Some(root) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: extract_dir <folder>");
        std::process::exit(2);
    };
    let mut all = Vec::new();
    files(&root, &mut all);
    all.sort();
    let (mut text, mut silent) = (0usize, 0usize);
    let mut skipped: BTreeMap<&'static str, usize> = BTreeMap::new();
    for path in &all {
        let bytes = std::fs::read(path).unwrap_or_default();
        let result = linkly_extract::extract_loaded(path, &bytes);
        match result {
            Ok(e) => {
                let content = e
                    .text
                    .lines()
                    .filter(|l| !(l.starts_with("--- page ") && l.ends_with(" ---")))
                    .any(|l| !l.trim().is_empty());
                if content {
                    text += 1;
                } else {
                    silent += 1;
                    println!("silent: {}", path.display());
                }
            }
            Err(skip) => *skipped.entry(skip.code).or_default() += 1,
        }
    }
    for (code, n) in &skipped {
        println!("skip {code}: {n}");
    }
    println!(
        "{} files: {text} with text, {} skipped with a reason, {silent} with neither",
        all.len(),
        skipped.values().sum::<usize>()
    );
}
