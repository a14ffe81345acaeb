//! The process's allocator, and its settings for a server that runs for months.

/// mimalloc, not glibc's malloc: glibc kept in its per-thread arenas what a sync's threads and
/// the server's blocking threads had freed (a server at 212 MB after the first full index of
/// 100,000 files, 335 MB under 16 clients); mimalloc hands freed pages back to the system (64 MB
/// and about 210 MB). Measured by `cargo xtask bench soak`: docs/benchmarks-history.md, "Memory after a
/// sync". It serves Rust allocations only; SQLite's own still go through the C library's malloc.
/// Without the `mimalloc` feature, Rust's go there too, for heap profilers that see only malloc.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The allocators' settings for a command that runs long or indexes, as `(variable, value)`: mimalloc hands freed
/// pages back at once instead of after a second (its `purge_delay`), and glibc's malloc, which
/// SQLite's allocations go through, keeps two arenas instead of eight per core. Under the
/// soak's 16 clients they bring the server's resident memory from 155-178 MB to the figures
/// in docs/benchmarks-history.md ("Memory after a sync"). A variable already set is left as it is.
#[cfg(unix)]
const SERVER_SETTINGS: [(&str, &str); 2] =
    [("MIMALLOC_PURGE_DELAY", "0"), ("MALLOC_ARENA_MAX", "2")];

/// Whether a command runs long: a server, the stdio MCP server or its bridge, the gateway,
/// the window. Those start again with [`SERVER_SETTINGS`]. A short call (a search, a read)
/// does not pay for a second start, and `linkly index` keeps mimalloc's purge delay: purging
/// at once cost the encoder four times the system time (docs/benchmarks.md).
pub(crate) fn long_run(command: &crate::args::Command) -> bool {
    use crate::args::Command;
    matches!(
        command,
        Command::Serve(_) | Command::Mcp(_) | Command::Gateway(_) | Command::Open(_)
    )
}

/// Both allocators read their settings from the environment before `main` runs, so a
/// process started without them starts again at once (the same program, arguments and process id),
/// with them set. Elsewhere than on Unix, or when that fails, it goes on as it is.
pub(crate) fn settle_for_a_long_run() {
    #[cfg(unix)]
    {
        let missing: Vec<_> = SERVER_SETTINGS
            .iter()
            .filter(|(name, _)| std::env::var_os(name).is_none())
            .collect();
        if missing.is_empty() {
            return;
        }
        let Ok(exe) = std::env::current_exe() else {
            return;
        };
        let mut cmd = std::process::Command::new(exe);
        cmd.args(std::env::args_os().skip(1));
        for (name, value) in missing {
            cmd.env(name, value);
        }
        // `exec` returns only when it failed.
        let err = std::os::unix::process::CommandExt::exec(&mut cmd);
        tracing::debug!(error = %err, "could not restart with the allocator's settings");
    }
}
