//! Running a helper program (the extraction worker, Tesseract, `pdftoppm`): input on its stdin,
//! its outputs read on their own threads up to a cap, killed at a deadline, optionally under a
//! memory limit. One mechanism for the isolated extractors and for OCR.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The most stderr kept: enough for the last message.
const MAX_STDERR: u64 = 64 * 1024;

/// A command for `program args`, under a virtual-memory limit when one is given
/// (`ulimit -v` through `/bin/sh` on Unix; elsewhere the limit is not applied).
pub(crate) fn command(program: &Path, args: &[&str], memory_limit: Option<u64>) -> Command {
    match memory_limit {
        Some(limit) if cfg!(unix) && Path::new("/bin/sh").exists() => {
            let mut c = Command::new("/bin/sh");
            c.arg("-c")
                .arg(format!(
                    "ulimit -v {} 2>/dev/null; exec \"$0\" \"$@\"",
                    (limit / 1024).max(1)
                ))
                .arg(program)
                .args(args);
            c
        }
        _ => {
            let mut c = Command::new(program);
            c.args(args);
            c
        }
    }
}

/// What a finished process left.
pub(crate) struct Finished {
    pub(crate) status: ExitStatus,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
}

/// Why a process gave no [`Finished`].
pub(crate) enum RunError {
    /// It could not be started.
    Start(std::io::Error),
    /// It ran past its deadline and was killed.
    Timeout(Duration),
    /// Waiting for it failed.
    Wait(std::io::Error),
}

/// Runs `cmd` with `input` on its stdin (written on its own thread, so a child that talks
/// before it has read everything cannot dead-lock), keeping at most `max_stdout` bytes of its
/// output, and kills it after `timeout`. The reader threads are not joined after a kill, so a
/// grandchild holding a pipe cannot block the caller.
pub(crate) fn run(
    mut cmd: Command,
    input: Option<&[u8]>,
    timeout: Duration,
    max_stdout: u64,
) -> Result<Finished, RunError> {
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(RunError::Start)?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stdout {
            let _ = s.take(max_stdout).read_to_end(&mut buf);
        }
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stderr {
            let _ = s.take(MAX_STDERR).read_to_end(&mut buf);
        }
        buf
    });
    let deadline = Instant::now() + timeout;
    std::thread::scope(|scope| {
        if let (Some(mut stdin), Some(bytes)) = (child.stdin.take(), input) {
            // A child that exits early closes the pipe; its status tells the story.
            scope.spawn(move || {
                let _ = stdin.write_all(bytes);
            });
        }
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() >= deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(RunError::Timeout(timeout));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(RunError::Wait(e));
                }
            }
        };
        Ok(Finished {
            status,
            stdout: out_reader.join().unwrap_or_default(),
            stderr: err_reader.join().unwrap_or_default(),
        })
    })
}
