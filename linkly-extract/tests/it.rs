//! Extraction over the test corpus and hostile files.
//!
//! Every integration test of `linkly-extract`, in one test binary.
//!
//! One binary per crate links the crate's dependencies once instead of once per file (each
//! link was 20 to 133 MB of unoptimised code; the workspace's 55 came to 2.6 GB).
//! Each file below is a module; `cargo xtask tidy` checks that every `tests/*.rs` is listed
//! here (the package sets `autotests = false`). Run one file's tests with
//! `cargo test -p linkly-extract --test it <file>::`.

mod common;

mod corpus;
mod hostile;
mod ocr_corpus;
mod office_corpus;
mod pdf_rtf_doc_corpus;
mod transcribe;
