//! Indexing progress: a bar with count, rate and ETA on a terminal, plain lines when piped.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use linkly_index::{Phase, Progress};

/// Reports sync progress on stderr.
pub(crate) struct Reporter {
    bar: Option<ProgressBar>,
    started: Instant,
    last_line: Instant,
}

impl Reporter {
    pub(crate) fn new() -> Reporter {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} {msg} [{bar:30}] {pos}/{len} files · {per_sec} · ETA {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Reporter {
            bar,
            started: Instant::now(),
            last_line: Instant::now() - Duration::from_secs(10),
        }
    }

    pub(crate) fn update(&mut self, p: &Progress) {
        if let Some(bar) = &self.bar {
            match p.phase {
                Phase::Scanning => bar.set_message(format!("scanning ({} files)", p.done)),
                Phase::Indexing => {
                    bar.set_message("indexing");
                    bar.set_length(p.total);
                    bar.set_position(p.done);
                }
                Phase::Removing => bar.set_message(format!("removing {} deleted files", p.total)),
                Phase::Rebuilding => {
                    bar.set_message("rebuilding the full-text index from the store");
                    bar.set_length(p.total);
                    bar.set_position(p.done);
                }
                Phase::Done => bar.finish_and_clear(),
            }
            return;
        }
        // Plain lines: at most one a second, plus phase changes.
        let now = Instant::now();
        let due = now.duration_since(self.last_line) >= Duration::from_secs(1);
        let line = match p.phase {
            Phase::Scanning if due => Some(format!("scanning: {} files found", p.done)),
            Phase::Indexing if due || p.done == p.total => {
                let secs = self.started.elapsed().as_secs_f64().max(0.001);
                let rate = p.done as f64 / secs;
                let eta = if rate > 0.0 {
                    (p.total.saturating_sub(p.done)) as f64 / rate
                } else {
                    0.0
                };
                Some(format!(
                    "indexing: {}/{} files ({rate:.0} files/s, ETA {eta:.0}s)",
                    p.done, p.total
                ))
            }
            Phase::Removing => Some(format!("removing: {} deleted files", p.total)),
            Phase::Rebuilding if due || p.done == p.total => Some(format!(
                "rebuilding the full-text index from the store: {}/{} documents",
                p.done, p.total
            )),
            _ => None,
        };
        if let Some(line) = line {
            eprintln!("{line}");
            self.last_line = now;
        }
    }
}
