//! `cargo xtask bench recoll [--docs N] [--rounds R]`: keyword indexing, Linkly against Recoll,
//! in one run (issue 18).
//!
//! Both index the same folders from nothing: SciFact written out as 5,183 text files, and `N`
//! (default 100,000) generated Markdown and text files. Each round runs Linkly
//! (`linkly --json --home H index DIR`, the release binary) and then Recoll (`recollindex -c
//! CONF`, with `topdirs` set to the folder and the spelling dictionary off, since Linkly builds
//! none), each from an empty data directory, under `/usr/bin/time` for the wall time, the CPU
//! seconds and the peak RSS, after every file was read once (both run from the page cache).
//! The report gives the medians of `R` rounds (default 3; `--generated-rounds G` for the large
//! corpus, where one Recoll run takes about 10 minutes; `--generated-recoll 0` times Linkly
//! alone there) and the ratio Recoll ÷ Linkly.
//!
//! Recoll comes from Debian (`apt-get install recollcmd`); the bench says so when it is missing.
//! What each indexes differs a little: Recoll keeps positions (phrase search) and an unstemmed
//! term list; Linkly stores the text (for `read` and snippets), counts, keywords, an outline and
//! a stemmed index of four fields without positions.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

use crate::corpus;

#[derive(Clone, Copy, Debug)]
struct Run {
    wall: f64,
    cpu: f64,
    rss_mb: f64,
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let docs = crate::arg(args, "--docs")
        .map(|s| s.parse::<usize>())
        .transpose()?
        .unwrap_or(100_000);
    let rounds = crate::arg(args, "--rounds")
        .map(|s| s.parse::<usize>())
        .transpose()?
        .unwrap_or(3)
        .max(1);
    // Recoll takes about 6 ms per small file (10 minutes for 100,000), so the large corpus
    // may run fewer rounds.
    let generated_rounds = crate::arg(args, "--generated-rounds")
        .map(|s| s.parse::<usize>())
        .transpose()?
        .unwrap_or(rounds)
        .max(1);
    // Recoll's rounds on the generated corpus (0: Linkly alone there).
    let generated_recoll = crate::arg(args, "--generated-recoll")
        .map(|s| s.parse::<usize>())
        .transpose()?
        .unwrap_or(generated_rounds);
    for tool in ["recollindex", "/usr/bin/time"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            bail!(
                "`{tool}` is not installed: `apt-get install recollcmd time` (Debian) provides it"
            );
        }
    }
    let linkly = crate::bench::build_cli()?;
    let work = crate::target_dir().join("bench");
    fs_err::create_dir_all(&work)?;
    eprintln!("bench: preparing corpora in {}", work.display());
    let corpora = [
        (
            "SciFact, 5,183 text files".to_string(),
            corpus::scifact(&work)?,
            rounds,
            rounds,
        ),
        (
            format!("generated, {docs} Markdown/text files"),
            corpus::generated(&work, docs)?,
            generated_rounds,
            generated_recoll,
        ),
    ];
    let scratch = work.join("recoll-vs");
    let mut report = String::from(
        "| corpus | tool | wall (median) | docs/s | CPU (user + sys) | peak RSS |\n|---|---|---|---|---|---|\n",
    );
    let mut ratios = Vec::new();
    for (name, dir, rounds, recoll_rounds) in &corpora {
        // Every file read once first, so that neither tool's first run pays for the disk.
        let files = read_all(dir)?;
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for round in 0..*rounds {
            let _ = fs_err::remove_dir_all(&scratch);
            fs_err::create_dir_all(&scratch)?;
            let home = scratch.join("linkly");
            let mut cmd = Command::new(&linkly);
            // Keyword indexing: no test model to embed with.
            cmd.env_remove("LINKLY_MODEL_DIR");
            cmd.args(["--json", "--home"])
                .arg(&home)
                .arg("index")
                .arg(dir);
            let r = timed(cmd)?;
            eprintln!("bench: {name}: round {round}: Linkly {r:?}");
            ours.push(r);
            if round >= *recoll_rounds {
                continue;
            }

            let conf = scratch.join("recoll");
            fs_err::create_dir_all(&conf)?;
            fs_err::write(
                conf.join("recoll.conf"),
                format!(
                    "topdirs = {}\nnoaspell = 1\nloglevel = 1\nskippedNames+ = .complete\n",
                    dir.display()
                ),
            )?;
            let mut cmd = Command::new("recollindex");
            cmd.arg("-c").arg(&conf);
            let r = timed(cmd)?;
            eprintln!("bench: {name}: round {round}: Recoll {r:?}");
            theirs.push(r);
        }
        let a = median(&ours);
        if theirs.is_empty() {
            report.push_str(&format!(
                "| {name} ({rounds} rounds) | Linkly | {:.2} s | {:.0} | {:.2} s | {:.0} MB |\n",
                a.wall,
                files as f64 / a.wall.max(1e-9),
                a.cpu,
                a.rss_mb
            ));
            ratios.push(format!("{name}: Recoll not run (`--generated-recoll 0`)"));
            continue;
        }
        let b = median(&theirs);
        for (tool, r) in [("Linkly", a), ("Recoll", b)] {
            report.push_str(&format!(
                "| {name} ({} rounds) | {tool} | {:.2} s | {:.0} | {:.2} s | {:.0} MB |\n",
                if tool == "Linkly" {
                    rounds
                } else {
                    recoll_rounds
                },
                r.wall,
                files as f64 / r.wall.max(1e-9),
                r.cpu,
                r.rss_mb
            ));
        }
        ratios.push(format!(
            "{name}: Linkly {:.1}× Recoll's speed (wall), {:.1}× on CPU time",
            b.wall / a.wall.max(1e-9),
            b.cpu / a.cpu.max(1e-9)
        ));
    }
    let _ = fs_err::remove_dir_all(&scratch);
    report.push('\n');
    for r in ratios {
        report.push_str(&format!("- {r}\n"));
    }
    crate::bench::write_report("report-recoll.md", &report)
}

/// Runs `cmd` under `/usr/bin/time`: wall seconds, user + system seconds, peak RSS.
fn timed(cmd: Command) -> anyhow::Result<Run> {
    let report = tempfile::NamedTempFile::new()?;
    crate::child::output(
        Command::new("/usr/bin/time")
            .args(["-f", "%e %U %S %M", "-o"])
            .arg(report.path())
            .arg(cmd.get_program())
            .args(cmd.get_args()),
        &PathBuf::from(cmd.get_program()).display().to_string(),
    )?;
    let text = fs_err::read_to_string(report.path())?;
    let fields: Vec<f64> = text
        .lines()
        .last()
        .context("/usr/bin/time wrote nothing")?
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .with_context(|| format!("/usr/bin/time wrote {text:?}"))?;
    let [wall, user, sys, rss_kb] = fields[..] else {
        bail!("/usr/bin/time wrote {text:?}");
    };
    Ok(Run {
        wall,
        cpu: user + sys,
        rss_mb: rss_kb / 1024.0,
    })
}

fn median(runs: &[Run]) -> Run {
    let pick = |f: fn(&Run) -> f64| {
        let mut v: Vec<f64> = runs.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Run {
        wall: pick(|r| r.wall),
        cpu: pick(|r| r.cpu),
        rss_mb: pick(|r| r.rss_mb),
    }
}

/// Reads every file under `dir` (into the page cache); the number of files.
fn read_all(dir: &Path) -> anyhow::Result<usize> {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs_err::read_dir(&d)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                stack.push(entry.path());
            } else if entry.file_name() != ".complete" {
                fs_err::read(entry.path())?;
                n += 1;
            }
        }
    }
    Ok(n)
}
