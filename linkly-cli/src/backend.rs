//! Where tool calls go: to the server running for the data directory (or the one `--endpoint`
//! names) over MCP, else to the tools embedded in this process.

use std::sync::OnceLock;
use std::time::Duration;

use anyhow::Context as _;
use linkly_core::DataDir;
use linkly_mcp::RemoteClient;
use linkly_tools::{Linkly, ToolOutput};
use serde::Serialize;

use crate::health::{Target, read_port_file_full};

/// The connection flags, set once from the command line.
#[derive(Debug, Clone, Default)]
pub(crate) struct Connection {
    pub(crate) endpoint: Option<String>,
    pub(crate) token: Option<String>,
}

static CONNECTION: OnceLock<Connection> = OnceLock::new();

/// Records the connection flags (once, at start-up).
pub(crate) fn set_connection(c: Connection) {
    let _ = CONNECTION.set(c);
}

/// The connection flags.
pub(crate) fn connection() -> Connection {
    CONNECTION.get().cloned().unwrap_or_default()
}

/// The tools, embedded or remote.
pub(crate) enum Backend {
    Embedded(Box<Linkly>),
    Remote {
        rt: tokio::runtime::Runtime,
        client: RemoteClient,
    },
}

impl Backend {
    /// Calls a tool by name with its params; `Err` is a protocol-level failure (unknown tool,
    /// connection).
    pub(crate) fn call(&self, name: &str, params: &impl Serialize) -> Result<ToolOutput, String> {
        let args = serde_json::to_value(params).map_err(|e| e.to_string())?;
        match self {
            Backend::Embedded(linkly) => linkly.call(name, args).map_err(|e| e.to_string()),
            Backend::Remote { rt, client } => rt
                .block_on(client.call(name, args))
                .map_err(|e| e.to_string()),
        }
    }
}

impl Backend {
    /// Ends a read-only command: its process exits next, and the system takes back the memory
    /// and the files faster than the destructors would give them back (freeing the model and
    /// the vectors, checkpointing SQLite's log: a fifth of a cold `linkly search`). Nothing is
    /// lost: these commands write nothing, and SQLite's log is there for the next opener.
    pub(crate) fn leave(self) {
        std::mem::forget(self);
    }
}

/// The server to talk to, if any: `--endpoint`, else a live local server for this data
/// directory (its port file answers `/health`).
pub(crate) fn server_target(data: &DataDir) -> anyhow::Result<Option<Target>> {
    let conn = connection();
    if let Some(endpoint) = conn.endpoint {
        return Ok(Some(Target::parse(&endpoint, conn.token)?));
    }
    let Ok(Some(file)) = read_port_file_full(&data.port_file()) else {
        return Ok(None);
    };
    let target = Target::of_port_file(&file);
    Ok(target
        .health_json(Duration::from_millis(1500))
        .is_ok()
        .then_some(target))
}

/// Opens the backend for tool commands.
pub(crate) fn open(data: &DataDir) -> anyhow::Result<Backend> {
    match server_target(data)? {
        Some(target) => {
            // Pre-flight, with the anchor's messages. A local server found through the port
            // file has just answered `/health` in `server_target`: asking again would only
            // add a round trip (and the server's counts) to every CLI call.
            if connection().endpoint.is_some() {
                target
                    .health_json(Duration::from_secs(5))
                    .with_context(|| {
                        format!(
                            "Cannot connect to Linkly at {}. Run 'linkly doctor{}' to diagnose",
                            target.base,
                            connection()
                                .endpoint
                                .map(|_| format!(
                                    " --endpoint {} --token <your-token>",
                                    target.base
                                ))
                                .unwrap_or_default()
                        )
                    })?;
            }
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let client = rt.block_on(RemoteClient::connect(
                &target.mcp_url(),
                target.token.as_deref(),
            ))?;
            Ok(Backend::Remote { rt, client })
        }
        None => {
            let linkly =
                Linkly::open(data.clone()).map_err(|e| anyhow::anyhow!("{}", e.message))?;
            Ok(Backend::Embedded(Box::new(linkly)))
        }
    }
}

/// The async runtime the MCP servers and clients of this process run on.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .max_blocking_threads(blocking_threads())
        .enable_all()
        .build()?)
}

/// The most threads that run tool calls at once (tokio's blocking pool; 512 by default).
/// Each thread that ran a call keeps pages in its own allocator heap: under 16 clients the
/// server grew to 47 such threads and its anonymous memory with them (`cargo xtask bench
/// soak`, docs/benchmarks.md). Calls beyond the bound wait for a thread; four per core keeps
/// the cores busy while some calls wait on the disk.
fn blocking_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(2, std::num::NonZeroUsize::get)
        .saturating_mul(4)
        .max(8)
}
