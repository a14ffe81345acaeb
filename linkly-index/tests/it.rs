//! The index over real files and models.
//!
//! Every integration test of `linkly-index`, in one test binary.
//!
//! One binary per crate links the crate's dependencies once instead of once per file (each
//! link was 20 to 133 MB of unoptimised code; the workspace's 55 came to 2.6 GB).
//! Each file below is a module; `cargo xtask tidy` checks that every `tests/*.rs` is listed
//! here (the package sets `autotests = false`). Run one file's tests with
//! `cargo test -p linkly-index --test it <file>::`.

mod multilingual;
mod open;
mod repair;
mod semantic;
mod sync_paths;
mod tags;
