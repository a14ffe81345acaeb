//! The environment variables Linkly reads, each declared once.

/// The data directory (index, config, notes, port file); default `~/.linkly`.
pub const LINKLY_HOME: &str = "LINKLY_HOME";
/// Log filter for the front ends, in `tracing-subscriber` `EnvFilter` syntax (default `warn`).
pub const LINKLY_LOG: &str = "LINKLY_LOG";
