//! The tools' semantics over real indexes: every integration test of `linkly-tools`, in one test binary.
//!
//! One binary per crate links the crate's dependencies once instead of once per file (each
//! link is 50 to 130 MB of unoptimised code): CI builds faster and needs a few gigabytes less
//! disk. Each file below is a module; `cargo xtask tidy` checks that every `tests/*.rs` is
//! listed here (the package sets `autotests = false`). Run one file's tests with
//! `cargo test -p linkly-tools --test it <file>::`.

mod common;

mod answers;
mod discovery;
mod errors;
mod fresh;
mod hosted;
mod hostile;
mod notes;
mod schemas;
mod semantic;
mod tools;
