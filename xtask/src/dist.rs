//! `cargo xtask dist`: what a release ships, in `target/dist/`. The release workflow
//! (`.github/workflows/release.yml`) runs this command on one machine per target, so that what
//! it does can be run, and checked, here.
//!
//! Builds the `linkly` binary (`--locked`, the `dist` profile unless `--profile` or `--debug`
//! names another; `--target` for another triple), then writes beside it the man pages
//! (`man/linkly.1` and one per subcommand, `man/linkly-search.1`, ..., from the binary's hidden
//! `__man` command, so they are the real command line), the shell completions
//! (`completions/`, from `linkly completions <shell>`) and `server.json`, the MCP registry entry
//! kept at the repository root, after checking that its versions are the binary's. Then:
//!
//! - the archive `linkly-<version>-<target>.tar.gz` (`.zip` for Windows) of the binary, its
//!   man pages, completions, README and licences, in a folder of the same name (the layout
//!   `[package.metadata.binstall]` of `linkly-cli` names); `--no-archive` leaves it out;
//! - with `--wheel`, the PyPI wheel of the binary (`pyproject.toml`: maturin, `bindings =
//!   "bin"`), built by maturin instead of `cargo build` (one build serves both); `--zig` and
//!   `--compatibility TAG` go to maturin (an older glibc's manylinux tag);
//! - `SHA256SUMS` of the archive and the wheel, in `sha256sum -c`'s format.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail, ensure};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::{root, target_dir};

/// The shells `linkly completions` knows, with the file name each one's completions go by.
const COMPLETIONS: [(&str, &str); 5] = [
    ("bash", "linkly.bash"),
    ("zsh", "_linkly"),
    ("fish", "linkly.fish"),
    ("powershell", "_linkly.ps1"),
    ("elvish", "linkly.elv"),
];

/// The targets a release ships, each built on a machine of its own kind by the release
/// workflow, and what it ships: an archive (`cargo binstall`, a download) and a wheel.
pub(crate) const TARGETS: [(&str, Ships); 7] = [
    ("x86_64-unknown-linux-musl", Ships::ArchiveAndWheel),
    ("aarch64-unknown-linux-musl", Ships::ArchiveAndWheel),
    ("x86_64-unknown-linux-gnu", Ships::Wheel),
    ("aarch64-unknown-linux-gnu", Ships::Wheel),
    ("x86_64-apple-darwin", Ships::ArchiveAndWheel),
    ("aarch64-apple-darwin", Ships::ArchiveAndWheel),
    ("x86_64-pc-windows-msvc", Ships::ArchiveAndWheel),
];

/// What one target ships.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ships {
    /// A static binary's archive and a wheel (musllinux on Linux).
    ArchiveAndWheel,
    /// A wheel only (manylinux: the archive is the musl one's).
    Wheel,
}

/// The pinned packaging tools, installed from PyPI into `target/dist-tools` on first use.
const MATURIN: &str = "maturin==1.16.0";
const MATURIN_ZIG: &str = "maturin[zig]==1.16.0";

/// What `cargo xtask dist` was asked.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Options {
    /// The cargo profile (`dist` by default; `--debug` is `dev`).
    pub(crate) profile: String,
    /// Another target triple than this machine's.
    pub(crate) target: Option<String>,
    /// Build the wheel too (through maturin).
    pub(crate) wheel: bool,
    /// maturin's `--zig`: link against an older glibc.
    pub(crate) zig: bool,
    /// maturin's `--compatibility` (a platform tag policy: `manylinux2014`, `musllinux_1_2`).
    pub(crate) compatibility: Option<String>,
    /// Leave the archive out.
    pub(crate) no_archive: bool,
}

impl Options {
    pub(crate) fn parse(args: &[String]) -> anyhow::Result<Options> {
        let mut o = Options {
            profile: "dist".into(),
            ..Options::default()
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .cloned()
                    .with_context(|| format!("cargo xtask dist: {name} needs a value"))
            };
            match a.as_str() {
                "--debug" => o.profile = "dev".into(),
                "--profile" => o.profile = value("--profile")?,
                "--target" => o.target = Some(value("--target")?),
                "--compatibility" => o.compatibility = Some(value("--compatibility")?),
                "--wheel" => o.wheel = true,
                "--zig" => o.zig = true,
                "--no-archive" => o.no_archive = true,
                other => bail!(
                    "cargo xtask dist: unknown argument {other} (--debug, --profile P, --target \
                     TRIPLE, --wheel, --zig, --compatibility TAG, --no-archive)"
                ),
            }
        }
        ensure!(
            !(o.zig || o.compatibility.is_some()) || o.wheel,
            "cargo xtask dist: --zig and --compatibility go with --wheel"
        );
        Ok(o)
    }

    /// The folder cargo writes this profile's outputs to.
    fn profile_dir(&self) -> &str {
        match self.profile.as_str() {
            "dev" | "test" => "debug",
            "bench" => "release",
            p => p,
        }
    }

    /// The target triple named in file names: `--target`, else this machine's.
    fn triple(&self) -> String {
        self.target.clone().unwrap_or_else(host_triple)
    }
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let o = Options::parse(args)?;
    if let Some(t) = &o.target
        && !TARGETS.iter().any(|(shipped, _)| shipped == t)
    {
        eprintln!("xtask: {t} is not one of the targets a release ships (xtask/src/dist.rs)");
    }
    let dist = target_dir().join("dist");
    if dist.exists() {
        fs_err::remove_dir_all(&dist)?;
    }
    fs_err::create_dir_all(&dist)?;
    let wheel = if o.wheel {
        Some(build_wheel(&o, &dist)?)
    } else {
        build(&o)?;
        None
    };
    let exe = format!(
        "linkly{}",
        if o.triple().contains("windows") {
            ".exe"
        } else {
            ""
        }
    );
    let mut bin = target_dir();
    if let Some(t) = &o.target {
        bin.push(t);
    }
    let bin = bin.join(o.profile_dir()).join(&exe);
    ensure!(bin.exists(), "the build left no {}", bin.display());
    let version = output(&bin, &["--version"]).with_context(|| {
        format!(
            "the man pages and completions come from the binary, which must run here: build {} on a machine of that kind",
            o.triple()
        )
    })?;
    let version = version
        .split_whitespace()
        .nth(1)
        .context("`linkly --version` printed no version")?
        .to_string();

    let name = format!("linkly-{version}-{}", o.triple());
    let stage = dist.join(&name);
    fs_err::create_dir_all(stage.join("completions"))?;
    fs_err::copy(&bin, stage.join(&exe))?;
    let man = stage.join("man");
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
        fs_err::write(stage.join("completions").join(file), script)?;
    }
    for file in ["README.md", "LICENSE-MIT", "LICENSE-APACHE"] {
        let from = if file == "README.md" {
            root().join(file)
        } else {
            root().join("linkly-cli").join(file)
        };
        fs_err::copy(from, stage.join(file))?;
    }

    let server = root().join("server.json");
    let text = fs_err::read_to_string(&server)?;
    check_server_json(&text, &version).with_context(|| format!("{}", server.display()))?;
    fs_err::write(dist.join("server.json"), text)?;

    let mut shipped = Vec::new();
    if !o.no_archive {
        shipped.push(if o.triple().contains("windows") {
            zip_folder(&dist, &name)?
        } else {
            tar_folder(&dist, &name)?
        });
    }
    shipped.extend(wheel);
    let sums = checksums(&shipped)?;
    fs_err::write(dist.join("SHA256SUMS"), &sums)?;

    println!("{}:", dist.display());
    for entry in walk(&dist)? {
        let len = fs_err::metadata(&entry)?.len();
        println!(
            "  {:<60} {:>11} bytes",
            entry.strip_prefix(&dist)?.display(),
            len
        );
    }
    print!("SHA256SUMS:\n{sums}");
    Ok(())
}

/// `cargo build` of the binary alone.
fn build(o: &Options) -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build.current_dir(root()).args([
        "build",
        "--locked",
        "-p",
        "linkly-cli",
        "--bin",
        "linkly",
        "--profile",
        &o.profile,
    ]);
    if let Some(t) = &o.target {
        build.args(["--target", t]);
    }
    let status = build.status().context("running cargo build")?;
    ensure!(status.success(), "cargo build failed");
    Ok(())
}

/// maturin's build of the wheel (which builds the binary): returns the wheel.
fn build_wheel(o: &Options, out: &Path) -> anyhow::Result<PathBuf> {
    let maturin = maturin(o.zig)?;
    let mut cmd = Command::new(&maturin);
    cmd.current_dir(root())
        .args(["build", "--locked", "--profile", &o.profile, "--out"])
        .arg(out)
        .arg("--target-dir")
        .arg(target_dir());
    if let Some(t) = &o.target {
        cmd.args(["--target", t]);
    }
    if o.zig {
        cmd.arg("--zig");
    }
    if let Some(c) = &o.compatibility {
        cmd.args(["--compatibility", c]);
    }
    let status = cmd
        .status()
        .with_context(|| format!("running {}", maturin.display()))?;
    ensure!(status.success(), "maturin build failed");
    crate::wheel::find(out, "linkly-")?.context("maturin wrote no wheel")
}

/// maturin: `$MATURIN`, else the pinned one in `target/dist-tools` (installed on first use).
fn maturin(zig: bool) -> anyhow::Result<PathBuf> {
    if let Some(m) = std::env::var_os("MATURIN") {
        return Ok(PathBuf::from(m));
    }
    let dir = target_dir().join("dist-tools");
    let spec = if zig { MATURIN_ZIG } else { MATURIN };
    let stamp = dir.join("installed.stamp");
    let bin = dir.join(if cfg!(windows) {
        "Scripts/maturin.exe"
    } else {
        "bin/maturin"
    });
    let installed = fs_err::read_to_string(&stamp).unwrap_or_default();
    if !bin.exists() || !installed.lines().any(|l| l == spec) {
        eprintln!("xtask: installing {spec} into {}", dir.display());
        if !dir.join("pyvenv.cfg").exists() {
            crate::venv::install(&dir, "maturin", [spec])?;
        } else {
            let python = dir.join(if cfg!(windows) {
                "Scripts/python.exe"
            } else {
                "bin/python"
            });
            let ok = Command::new(python)
                .args(["-m", "pip", "install", "--quiet", spec])
                .status()?
                .success();
            ensure!(ok, "installing {spec} failed");
        }
        fs_err::write(&stamp, format!("{installed}{spec}\n"))?;
    }
    Ok(bin)
}

/// This machine's target triple (`rustc -vV`'s host).
pub(crate) fn host_triple() -> String {
    let out = Command::new("rustc").arg("-vV").output();
    out.ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        })
        .unwrap_or_else(|| format!("{}-unknown", std::env::consts::ARCH))
}

/// `<dir>/<name>.tar.gz` of the folder `<dir>/<name>` (the system's `tar`, GNU or BSD).
fn tar_folder(dir: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let archive = dir.join(format!("{name}.tar.gz"));
    let status = Command::new("tar")
        .current_dir(dir)
        .args(["-czf", &format!("{name}.tar.gz"), name])
        .status()
        .context("running tar")?;
    ensure!(status.success(), "tar failed");
    Ok(archive)
}

/// `<dir>/<name>.zip` of the folder `<dir>/<name>`, with the folder as its top entry.
pub(crate) fn zip_folder(dir: &Path, name: &str) -> anyhow::Result<PathBuf> {
    use std::io::Write as _;
    let archive = dir.join(format!("{name}.zip"));
    let mut zip = zip::ZipWriter::new(fs_err::File::create(&archive)?);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o755);
    for file in walk(&dir.join(name))? {
        let rel = file.strip_prefix(dir)?;
        let entry = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        zip.start_file(entry, options)?;
        zip.write_all(&fs_err::read(&file)?)?;
    }
    zip.finish()?;
    Ok(archive)
}

/// `sha256sum`'s lines for `files` (`<hex>  <file name>`).
fn checksums(files: &[PathBuf]) -> anyhow::Result<String> {
    let mut out = String::new();
    for f in files {
        let digest = Sha256::digest(fs_err::read(f)?);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        let name = f.file_name().context("a file name")?.to_string_lossy();
        out.push_str(&format!("{hex}  {name}\n"));
    }
    Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn options_parse_and_refuse() {
        let o = Options::parse(&[]).unwrap();
        assert_eq!((o.profile.as_str(), o.profile_dir()), ("dist", "dist"));
        let o = Options::parse(&args("--debug --no-archive")).unwrap();
        assert_eq!(o.profile_dir(), "debug");
        assert!(o.no_archive);
        let o = Options::parse(&args(
            "--target aarch64-unknown-linux-gnu --wheel --zig --compatibility manylinux2014",
        ))
        .unwrap();
        assert_eq!(o.triple(), "aarch64-unknown-linux-gnu");
        assert_eq!(o.compatibility.as_deref(), Some("manylinux2014"));
        assert!(Options::parse(&args("--zig")).is_err());
        assert!(Options::parse(&args("--target")).is_err());
        assert!(Options::parse(&args("--bogus")).is_err());
    }

    /// The release workflow builds every target of [`TARGETS`] with this command's flags, and
    /// asks each for what it ships.
    #[test]
    fn the_release_workflow_builds_every_target() {
        let text = fs_err::read_to_string(root().join(".github/workflows/release.yml")).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let listed: Vec<&str> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("- target: "))
            .collect();
        let expected: Vec<&str> = TARGETS.iter().map(|(t, _)| *t).collect();
        assert_eq!(listed, expected, "the workflow's matrix");
        // Each matrix entry's `dist:` flags, put into the workflow's command line, parse.
        let command = lines
            .iter()
            .find_map(|l| l.strip_prefix("run: cargo xtask dist "))
            .expect("the workflow runs cargo xtask dist");
        let flags: Vec<&str> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("dist: "))
            .collect();
        assert_eq!(flags.len(), TARGETS.len(), "one `dist:` per target");
        for ((target, ships), flags) in TARGETS.iter().zip(flags) {
            let line = command
                .replace("${{ matrix.target }}", target)
                .replace("${{ matrix.dist }}", flags.trim_matches('"'));
            let o = Options::parse(&args(&line)).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert_eq!(o.target.as_deref(), Some(*target), "{line}");
            assert!(o.wheel, "{line}: every target ships a wheel");
            assert_eq!(o.no_archive, *ships == Ships::Wheel, "{line}");
            assert_eq!(o.profile, "dist", "{line}");
            if target.contains("linux-gnu") {
                assert!(
                    o.zig,
                    "{line}: a manylinux wheel links an old glibc through zig"
                );
            }
        }
        // Checksums over everything, and the wheels checked on the machine that built them.
        assert!(text.contains("sha256sum"), "the release's SHA256SUMS");
        assert!(text.contains("cargo xtask wheel-check"), "{text}");
    }

    #[test]
    fn a_zip_holds_the_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let folder = tmp.path().join("linkly-0-x");
        fs_err::create_dir_all(folder.join("man")).unwrap();
        fs_err::write(folder.join("linkly.exe"), b"MZ").unwrap();
        fs_err::write(folder.join("man/linkly.1"), b".TH linkly 1").unwrap();
        let zip = zip_folder(tmp.path(), "linkly-0-x").unwrap();
        let mut archive = zip::ZipArchive::new(fs_err::File::open(&zip).unwrap()).unwrap();
        let mut names: Vec<String> = archive
            .file_names()
            .map(|n| n.unwrap().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["linkly-0-x/linkly.exe", "linkly-0-x/man/linkly.1"]);
        let mut page = String::new();
        std::io::Read::read_to_string(
            &mut archive.by_name("linkly-0-x/man/linkly.1").unwrap(),
            &mut page,
        )
        .unwrap();
        assert_eq!(page, ".TH linkly 1");
        let sums = checksums(&[zip]).unwrap();
        assert!(
            sums.ends_with("  linkly-0-x.zip\n")
                && sums.len() == 64 + 2 + "linkly-0-x.zip".len() + 1,
            "{sums}"
        );
    }
}
