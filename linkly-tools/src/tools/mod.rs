//! The tool registry: one module per tool, one line per tool in [`TOOLS`].

pub(crate) mod explore;
pub(crate) mod find_paths;
pub(crate) mod grep;
pub(crate) mod kit;
#[cfg(feature = "example-tool")]
pub(crate) mod line_count;
pub(crate) mod list;
pub(crate) mod list_libraries;
pub(crate) mod note_save;
pub(crate) mod outline;
pub(crate) mod read;
pub(crate) mod search;

pub use kit::ToolSpec;

/// Every tool, in workflow order. Adding a tool = a module here + one line.
pub static TOOLS: &[ToolSpec] = &[
    search::SPEC,
    outline::SPEC,
    grep::SPEC,
    read::SPEC,
    list_libraries::SPEC,
    explore::SPEC,
    find_paths::SPEC,
    list::SPEC,
    note_save::SPEC,
    #[cfg(feature = "example-tool")]
    line_count::SPEC,
];
