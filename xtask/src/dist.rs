//! `cargo xtask dist [--debug]`: what a release ships, in `target/dist/`.
//!
//! Builds the `linkly` binary (release, `--locked`; `--debug` takes the dev build instead, for a
//! quick check), then writes beside it the man pages (`man/linkly.1` and one per subcommand,
//! `man/linkly-search.1`, ..., from the binary's hidden `__man` command, so they are the real
//! command line), the shell completions
//! (`completions/`, from `linkly completions <shell>`) and `server.json`, the MCP registry entry
//! kept at the repository root, after checking that its versions are the binary's.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail, ensure};
use serde_json::Value;

use crate::{root, target_dir};

/// The shells `linkly completions` knows, with the file name each one's completions go by.
const COMPLETIONS: [(&str, &str); 5] = [
    ("bash", "linkly.bash"),
    ("zsh", "_linkly"),
    ("fish", "linkly.fish"),
    ("powershell", "_linkly.ps1"),
    ("elvish", "linkly.elv"),
];

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let debug = args.iter().any(|a| a == "--debug");
    if let Some(other) = args.iter().find(|a| *a != "--debug") {
        bail!("cargo xtask dist: unknown argument {other} (only --debug)");
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(root())
        .args(["build", "--locked", "-p", "linkly-cli", "--bin", "linkly"]);
    if !debug {
        build.arg("--release");
    }
    let status = build.status().context("running cargo build")?;
    ensure!(status.success(), "cargo build failed");
    let exe = format!("linkly{}", std::env::consts::EXE_SUFFIX);
    let bin = target_dir()
        .join(if debug { "debug" } else { "release" })
        .join(&exe);

    let dist = target_dir().join("dist");
    if dist.exists() {
        fs_err::remove_dir_all(&dist)?;
    }
    fs_err::create_dir_all(dist.join("completions"))?;
    fs_err::copy(&bin, dist.join(&exe))?;

    let man = dist.join("man");
    fs_err::create_dir_all(&man)?;
    output(&bin, &["__man", "--dir", &man.to_string_lossy()])?;
    let page = fs_err::read_to_string(man.join("linkly.1"))?;
    ensure!(
        page.contains(".TH linkly 1"),
        "`linkly __man` did not write a roff page"
    );
    for (shell, file) in COMPLETIONS {
        let script = output(&bin, &["completions", shell])?;
        ensure!(!script.is_empty(), "no {shell} completions");
        fs_err::write(dist.join("completions").join(file), script)?;
    }

    let version = output(&bin, &["--version"])?;
    let version = version
        .split_whitespace()
        .nth(1)
        .context("`linkly --version` printed no version")?;
    let server = root().join("server.json");
    let text = fs_err::read_to_string(&server)?;
    check_server_json(&text, version).with_context(|| format!("{}", server.display()))?;
    fs_err::write(dist.join("server.json"), text)?;

    println!("{}:", dist.display());
    for entry in walk(&dist)? {
        let len = fs_err::metadata(&entry)?.len();
        println!(
            "  {:<28} {:>10} bytes",
            entry.strip_prefix(&dist)?.display(),
            len
        );
    }
    Ok(())
}

/// Checks the MCP registry entry: the fields a registry requires, and every version equal to
/// the binary's.
fn check_server_json(text: &str, version: &str) -> anyhow::Result<()> {
    let v: Value = serde_json::from_str(text)?;
    for key in ["$schema", "name", "description", "version", "packages"] {
        ensure!(!v[key].is_null(), "{key} is missing");
    }
    ensure!(
        v["version"] == version,
        "version is {} but linkly is {version}: update server.json",
        v["version"]
    );
    let packages = v["packages"].as_array().context("packages is not a list")?;
    ensure!(!packages.is_empty(), "packages is empty");
    for p in packages {
        ensure!(
            p["version"] == version,
            "package version is {} but linkly is {version}: update server.json",
            p["version"]
        );
    }
    Ok(())
}

/// `linkly <args>`'s standard output.
fn output(bin: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new(bin)
        .args(args)
        .output()
        .with_context(|| format!("running {}", bin.display()))?;
    ensure!(
        out.status.success(),
        "linkly {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?)
}

/// The files under `dir`, sorted.
fn walk(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in fs_err::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            files.extend(walk(&path)?);
        } else {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}
