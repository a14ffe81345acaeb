//! `cargo xtask wheel-check [WHEEL] [--no-avx2]`: the `linkly` wheel as a person gets it, with
//! nothing of Rust around. Installs the wheel (default: the one `cargo xtask dist --wheel` left
//! in `target/dist/`) into a new virtual environment, then, with only that environment's
//! `bin` and the system's folders on the `PATH` (no `cargo`, no `rustc`: checked), a new home
//! and data directory and no other variable:
//!
//! 1. `linkly --version` is the entry point's, and is this version;
//! 2. `linkly index testdata/corpus`, then `linkly search` finds the document it should (the
//!    seconds from the install's start to that first answer are printed);
//! 3. an MCP session over stdio with the official MCP Python SDK (`interop/client.py`),
//!    started as an agent's configuration starts it (`linkly mcp`, found on the `PATH`);
//! 4. the desktop build has no gateway server and says how to get one;
//! 5. pip refuses the wheel for another platform (by its tag, before anything runs), and takes
//!    it for its own;
//! 6. with `--no-avx2`, the same binary on an emulated CPU without AVX2 (`qemu-x86_64 -cpu
//!    Nehalem`, Debian's `qemu-user`) indexes, embeds with the test model and searches: the
//!    encoder's calibration finds no AVX2 and keeps the portable f32 path.
//!
//! Each check prints a `PASS`/`FAIL` line; the last line is `N passed, M failed`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use anyhow::{Context as _, bail};
use serde_json::Value;

use crate::{root, target_dir};

/// The query, and the file it must find, in `testdata/corpus`.
const QUERY: &str = "carrito de compras";
const EXPECTED: &str = "reactdocs-es-state-a-components-memory.md";

struct Report {
    passed: usize,
    failed: usize,
}

impl Report {
    fn check(&mut self, label: &str, outcome: anyhow::Result<String>) {
        match outcome {
            Ok(detail) => {
                self.passed += 1;
                println!("PASS  {label}  {detail}");
            }
            Err(e) => {
                self.failed += 1;
                println!("FAIL  {label}: {e:#}");
            }
        }
    }
}

/// The checked environment: the virtual environment's `bin`, then the system's folders that
/// hold neither `cargo` nor `rustc`.
struct Sandbox {
    venv: PathBuf,
    path: OsString,
    home: PathBuf,
    data: PathBuf,
}

impl Sandbox {
    fn bin_dir(&self) -> PathBuf {
        self.venv
            .join(if cfg!(windows) { "Scripts" } else { "bin" })
    }

    /// `program` as this sandbox runs it: its `PATH`, home and data directory, nothing else.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.env_clear()
            .env("PATH", &self.path)
            .env("HOME", &self.home)
            .env("LINKLY_HOME", &self.data)
            .env("LINKLY_LOG", "warn");
        for keep in ["SYSTEMROOT", "TEMP", "TMP", "LANG"] {
            if let Some(v) = std::env::var_os(keep) {
                c.env(keep, v);
            }
        }
        c
    }

    /// Where `name` resolves on this sandbox's `PATH`.
    fn which(&self, name: &str) -> Option<PathBuf> {
        let exe = format!("{name}{}", std::env::consts::EXE_SUFFIX);
        std::env::split_paths(&self.path)
            .map(|d| d.join(&exe))
            .find(|p| p.is_file())
    }

    fn linkly(&self, args: &[&str]) -> anyhow::Result<Output> {
        let out = self
            .command("linkly")
            .args(args)
            .output()
            .context("running linkly from the PATH")?;
        Ok(out)
    }
}

fn ok(out: &Output, what: &str) -> anyhow::Result<String> {
    if !out.status.success() {
        bail!(
            "{what} exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let no_avx2 = args.iter().any(|a| a == "--no-avx2");
    let wheel = match args.iter().find(|a| !a.starts_with("--")) {
        Some(w) => PathBuf::from(w),
        None => crate::wheel::find(&target_dir().join("dist"), "linkly-")?
            .context("no linkly wheel in target/dist (cargo xtask dist --wheel)")?,
    };
    let wheel = fs_err::canonicalize(&wheel)?;
    let tmp = tempfile::Builder::new().prefix("linkly-wheel-").tempdir()?;
    let system: Vec<PathBuf> = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .filter(|d| {
            ["cargo", "rustc", "rustup"].iter().all(|t| {
                !d.join(format!("{t}{}", std::env::consts::EXE_SUFFIX))
                    .exists()
            })
        })
        .collect();
    let venv = tmp.path().join("venv");
    let mut sandbox = Sandbox {
        venv: venv.clone(),
        path: OsString::new(),
        home: tmp.path().join("home"),
        data: tmp.path().join("home/.linkly"),
    };
    sandbox.path = std::env::join_paths(std::iter::once(sandbox.bin_dir()).chain(system))?;
    fs_err::create_dir_all(&sandbox.home)?;
    let mut report = Report {
        passed: 0,
        failed: 0,
    };
    println!(
        "wheel: {} ({} bytes)",
        wheel.display(),
        fs_err::metadata(&wheel)?.len()
    );

    // The install, timed from here to the first search's answer.
    let start = Instant::now();
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let installed = (|| {
        let out = Command::new(&python)
            .args(["-m", "venv"])
            .arg(&venv)
            .output()?;
        ok(&out, "python3 -m venv")?;
        let pip = sandbox
            .bin_dir()
            .join(format!("pip{}", std::env::consts::EXE_SUFFIX));
        let out = sandbox
            .command(&pip)
            .args([
                "install",
                "--quiet",
                "--no-index",
                "--disable-pip-version-check",
            ])
            .arg(&wheel)
            .output()?;
        ok(&out, "pip install")?;
        Ok(format!("{:.1} s", start.elapsed().as_secs_f64()))
    })();
    let installed_ok = installed.is_ok();
    report.check("pip install of the wheel into a new venv", installed);
    if !installed_ok {
        return finish(report);
    }

    report.check(
        "no cargo or rustc on the PATH; linkly is the venv's entry point",
        (|| {
            for tool in ["cargo", "rustc"] {
                if let Some(p) = sandbox.which(tool) {
                    bail!("{tool} is on the PATH at {}", p.display());
                }
            }
            let found = sandbox
                .which("linkly")
                .context("linkly is not on the PATH")?;
            if !found.starts_with(sandbox.bin_dir()) {
                bail!("linkly resolves to {}", found.display());
            }
            Ok(found.display().to_string())
        })(),
    );
    report.check(
        "linkly --version",
        (|| {
            let v = ok(&sandbox.linkly(&["--version"])?, "linkly --version")?;
            let want = format!("linkly {}", env!("CARGO_PKG_VERSION"));
            if v.trim() != want {
                bail!("printed {v:?}, not {want:?}");
            }
            Ok(v.trim().to_string())
        })(),
    );

    let corpus = root().join("testdata/corpus");
    let index_start = Instant::now();
    report.check(
        "linkly index testdata/corpus",
        (|| {
            let out = sandbox.linkly(&["index", &corpus.to_string_lossy()])?;
            ok(&out, "linkly index")?;
            Ok(format!("{:.1} s", index_start.elapsed().as_secs_f64()))
        })(),
    );
    report.check(
        "linkly search, the first answer",
        (|| {
            let out = ok(
                &sandbox.linkly(&["--json", "search", QUERY])?,
                "linkly search",
            )?;
            let v: Value = serde_json::from_str(&out)?;
            let first = v["results"][0].to_string();
            if !first.contains(EXPECTED) {
                bail!("the first result is not {EXPECTED}: {}", clip(&out));
            }
            Ok(format!(
                "install to first search: {:.1} s",
                start.elapsed().as_secs_f64()
            ))
        })(),
    );

    if cfg!(windows) {
        // `cargo xtask probe-setup`'s environment is laid out for Unix (`venv/bin`).
        println!("SKIP  an MCP stdio session: the interop client's environment is Unix-only");
    } else {
        report.check(
            "an MCP stdio session through the entry point (official MCP Python SDK)",
            mcp_session(&sandbox, tmp.path()),
        );
    }
    report.check(
        "the desktop build has no gateway server and says where it is",
        (|| {
            let out = sandbox.linkly(&["gateway", "user", "list"])?;
            let err = String::from_utf8_lossy(&out.stderr);
            if out.status.success() || !err.contains("--features gateway-server") {
                bail!("{}: {err}", out.status);
            }
            Ok("linkly gateway: refused, naming the gateway-server feature".into())
        })(),
    );
    report.check(
        "pip refuses the wheel on another platform",
        refused_elsewhere(&sandbox, &wheel, tmp.path()),
    );
    if no_avx2 {
        report.check(
            "without AVX2 (qemu -cpu Nehalem): index, embed, search on the portable path",
            without_avx2(&sandbox, tmp.path()),
        );
    }
    // The background server `linkly mcp` started.
    let _ = sandbox.linkly(&["stop"]);
    finish(report)
}

fn finish(report: Report) -> anyhow::Result<()> {
    println!("{} passed, {} failed", report.passed, report.failed);
    if report.failed > 0 {
        bail!("the wheel failed {} check(s)", report.failed);
    }
    Ok(())
}

/// `interop/client.py` (in the MCP interop environment) drives `linkly mcp` found on the
/// sandbox's `PATH`: tools/list, then a search and a read of what it finds.
fn mcp_session(sandbox: &Sandbox, tmp: &Path) -> anyhow::Result<String> {
    let harness = crate::harness::probe_setup()?;
    let scenario = serde_json::json!({
        "require_tools": ["search", "read", "outline", "grep", "list_libraries"],
        "steps": [
            {"name": "search", "tool": "search", "arguments": {"query": QUERY},
             "expect": {"contains": [EXPECTED]}},
            {"name": "list_libraries", "tool": "list_libraries", "arguments": {}},
        ]
    });
    let file = tmp.join("scenario.json");
    fs_err::write(&file, scenario.to_string())?;
    let out = sandbox
        .command(harness.join("venv/bin/python"))
        .arg(root().join("interop/client.py"))
        .args([
            "--stdio",
            "linkly mcp",
            "--strict",
            "--no-schemas",
            "--scenario",
        ])
        .arg(&file)
        .args(["--env", &format!("LINKLY_HOME={}", sandbox.data.display())])
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap_or_default().to_string();
    if !out.status.success() {
        bail!("{text}{}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(last)
}

/// pip's own dry run, with another platform's tag: it must find no wheel that fits; with this
/// wheel's tag it must find this one.
fn refused_elsewhere(sandbox: &Sandbox, wheel: &Path, tmp: &Path) -> anyhow::Result<String> {
    let name = wheel
        .file_name()
        .context("a wheel file name")?
        .to_string_lossy();
    // linkly-0.1.0-py3-none-<platforms>.whl
    let own = name
        .trim_end_matches(".whl")
        .rsplit('-')
        .next()
        .and_then(|p| p.split('.').next())
        .context("no platform tag in the wheel's name")?
        .to_string();
    let dir = wheel.parent().context("the wheel's folder")?;
    let pip = |platform: &str| -> anyhow::Result<Output> {
        Ok(sandbox
            .command(
                sandbox
                    .bin_dir()
                    .join(format!("pip{}", std::env::consts::EXE_SUFFIX)),
            )
            .args([
                "install",
                "--dry-run",
                "--no-index",
                "--only-binary=:all:",
                "--disable-pip-version-check",
                "--platform",
                platform,
                "--target",
            ])
            .arg(tmp.join("pip-target"))
            .arg("--find-links")
            .arg(dir)
            .arg("linkly")
            .output()?)
    };
    let mut refused = Vec::new();
    for other in ["macosx_11_0_arm64", "win_amd64", "manylinux_2_17_riscv64"] {
        if own.ends_with(other) {
            continue;
        }
        let out = pip(other)?;
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.success() || !err.contains("No matching distribution found for linkly") {
            bail!("pip --platform {other}: {}: {err}", out.status);
        }
        refused.push(other);
    }
    let out = pip(&own)?;
    ok(&out, &format!("pip --platform {own}"))?;
    Ok(format!(
        "refused for {}; taken for {own}",
        refused.join(", ")
    ))
}

/// The installed binary under qemu's emulated Nehalem (SSE4.2, no AVX): index two short
/// Markdown files with the test embedding model, search; the calibration it writes names no
/// AVX2 and keeps f32.
fn without_avx2(sandbox: &Sandbox, tmp: &Path) -> anyhow::Result<String> {
    let qemu = "qemu-x86_64";
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        bail!("--no-avx2 runs on x86_64 Linux only");
    }
    let model_src = crate::test_model::ensure()?;
    let model = tmp.join("model");
    fs_err::create_dir_all(&model)?;
    for e in fs_err::read_dir(&model_src)? {
        let e = e?;
        if e.path().is_file() {
            fs_err::copy(e.path(), model.join(e.file_name()))?;
        }
    }
    // Emulation is slow (a calibration batch takes seconds): two short files.
    let folder = tmp.join("docs-no-avx2");
    fs_err::create_dir_all(&folder)?;
    fs_err::write(
        folder.join("compras.md"),
        "# La compra\n\nAl hacer clic en un botón para comprar un producto se actualiza el \
         carrito de compras.\n",
    )?;
    fs_err::write(
        folder.join("jardin.md"),
        "# Le jardin\n\nLes tomates mûrissent en août.\n",
    )?;
    let data = tmp.join("data-no-avx2");
    let bin = sandbox.which("linkly").context("linkly on the PATH")?;
    let emulated = |args: &[&str]| -> anyhow::Result<Output> {
        sandbox
            .command(qemu)
            .args(["-cpu", "Nehalem"])
            .arg(&bin)
            .args(args)
            .env("LINKLY_HOME", &data)
            .env("LINKLY_MODEL_DIR", &model)
            .output()
            .with_context(|| format!("running {qemu} (Debian: apt-get install qemu-user)"))
    };
    let start = Instant::now();
    ok(
        &emulated(&["index", &folder.to_string_lossy()])?,
        "linkly index under qemu",
    )?;
    let out = ok(
        &emulated(&["--json", "search", QUERY])?,
        "linkly search under qemu",
    )?;
    let v: Value = serde_json::from_str(&out)?;
    if !v["results"][0].to_string().contains("compras.md") {
        bail!("the first result is not compras.md: {}", clip(&out));
    }
    let calibration: Value = serde_json::from_str(
        &fs_err::read_to_string(model.join(".linkly/calibration.json"))
            .context("the encoder wrote no calibration: did it embed?")?,
    )?;
    let features = calibration["fingerprint"]["features"].to_string();
    let chosen = calibration["chosen"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if features.contains("avx") || chosen != "f32" {
        bail!("under an emulated Nehalem the calibration saw {features} and chose {chosen}");
    }
    Ok(format!(
        "calibration: features {features}, chose {chosen}; {:.0} s",
        start.elapsed().as_secs_f64()
    ))
}

/// The first 400 characters of `text`.
fn clip(text: &str) -> String {
    text.chars().take(400).collect()
}
