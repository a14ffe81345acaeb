//! The `linkly` command: index folders, search and read them, serve them over MCP.
//!
//! Wiring only: argument parsing (`args`), the commands (`commands`), output and exit codes
//! (`output`). Tool behaviour lives in `linkly-tools`; the MCP server in `linkly-mcp`.
//!
//! The modules depend one way, each on those below it only:
//!
//! ```text
//! main
//!  └ commands                        dispatch; `folders`, `index`
//!     └ documents, discovery, notes  tool commands: flags → the tool's params → `call`
//!       model, shared, status, gateway, publish, open (→ daemon)
//!        └ daemon                    `serve`, `stop`; find, start or take over the server
//!        └ call                      one typed tool call, printed; its outcome
//!           └ backend                embedded tools or a server over MCP; the runtime
//!              └ args, output, progress, health   (leaves: clap types, printing, …)
//! welcome                            `linkly` alone on a terminal: what to do next
//! ```

// A command-line program prints to stdout and stderr by design.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod allocator;
mod args;
mod backend;
mod call;
mod commands;
mod daemon;
mod discovery;
mod documents;
#[cfg(feature = "gateway-server")]
mod gateway;
mod health;
mod lan;
mod model;
mod notes;
mod open;
mod output;
mod progress;
mod publish;
mod shared;
mod speech;
mod status;
mod welcome;

use std::process::ExitCode;

fn main() -> ExitCode {
    // `linkly __extract-worker`: extract one risky file for the parent and exit.
    linkly_tools::extraction_worker_hook();
    if welcome::wanted() {
        print!("{}", welcome::text(&linkly_core::DataDir::from_env()));
        return ExitCode::SUCCESS;
    }
    let cli = args::parse();
    if allocator::long_run(&cli.command) {
        allocator::settle_for_a_long_run();
    }
    init_tracing();
    match commands::run(cli) {
        Ok(code) => code,
        Err(err) => {
            // A closed pipe (`linkly search x | head`) is not a failure.
            if err
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            eprintln!("Error: {err:#}");
            ExitCode::from(output::EXIT_FAILURE_PLAIN)
        }
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env(linkly_core::env::LINKLY_LOG)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}
