//! The tools' semantics over real indexes.
//!
//! Every integration test of `linkly-tools`, in one test binary.
//!
//! One binary per crate links the crate's dependencies once instead of once per file (each
//! link was 20 to 133 MB of unoptimised code; the workspace's 55 came to 2.6 GB).
//! Each file below is a module; `cargo xtask tidy` checks that every `tests/*.rs` is listed
//! here (the package sets `autotests = false`). Run one file's tests with
//! `cargo test -p linkly-tools --test it <file>::`.

mod common;

mod answers;
mod audience;
mod discovery;
mod errors;
mod fresh;
mod hosted;
mod hostile;
mod notes;
mod schemas;
mod semantic;
mod tools;
