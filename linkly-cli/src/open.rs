//! `linkly open`: the window of this data directory in the default browser. It finds the
//! data directory's server (or starts one in the background, as `linkly mcp` does) and opens
//! a one-time sign-in address (`/signin/link/{code}`, made from the server's per-start secret
//! in the 0600 port file: valid once, for two minutes) with the system's opener (`xdg-open`,
//! `open`, `start`); the address is printed either way, for a machine without a browser.

use std::process::{ExitCode, Stdio};

use linkly_core::DataDir;

use crate::args::OpenArgs;
use crate::daemon::ensure_server;

pub(crate) fn open(data: &DataDir, args: OpenArgs) -> anyhow::Result<ExitCode> {
    let target = ensure_server(data)?;
    let url = match &target.token {
        Some(secret) => format!(
            "{}/signin/link/{}",
            target.base,
            linkly_http::sign_in_link_code(secret)
        ),
        None => format!("{}/", target.base),
    };
    println!("{url}");
    if args.no_browser {
        return Ok(ExitCode::SUCCESS);
    }
    let (program, pre): (&str, &[&str]) = if cfg!(target_os = "macos") {
        ("open", &[])
    } else if cfg!(windows) {
        ("cmd", &["/C", "start", ""])
    } else {
        ("xdg-open", &[])
    };
    let opened = std::process::Command::new(program)
        .args(pre)
        .arg(&url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match opened {
        Ok(s) if s.success() => {}
        _ => eprintln!("No browser could be opened here: open {url} yourself."),
    }
    Ok(ExitCode::SUCCESS)
}
