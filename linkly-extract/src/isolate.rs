//! Extraction in a worker process, for parsers that may abort, hang or eat memory (PDF).
//!
//! The indexer holds a [`Sandbox`]: the command that starts a worker (the `linkly` binary's
//! hidden `__extract-worker` subcommand, which calls [`run_worker`]), a timeout and a memory
//! limit. [`extract_isolated`] runs risky formats ([`crate::Extractor::isolate`]) in a fresh
//! worker per file and everything else in-process behind `catch_unwind`.
//!
//! Protocol: the parent writes one JSON object `{"path": "..."}` to the worker's stdin and closes
//! it; the worker reads and extracts the file itself and writes one JSON object (a
//! [`WireResult`]) to its stdout, then exits 0. A killed, crashed or aborted worker, a non-zero
//! exit or unreadable output cost that one file (`extractor_failed`); running past the timeout
//! kills the worker (`timeout`).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use linkly_core::{DocType, OutlineNode, SkipReason};
use serde::{Deserialize, Serialize};

use crate::child::{self, RunError};
use crate::registry::{checked_extractor, extract_bytes};
use crate::{Detected, Extracted, Extractor};

/// How risky extractions are run: a worker command, a time budget and a memory limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// The worker: a program and its arguments (e.g. the `linkly` binary and
    /// `["__extract-worker"]`). `None` extracts everything in-process.
    pub worker: Option<(PathBuf, Vec<String>)>,
    /// How long one file may take in a worker before it is killed.
    pub timeout: Duration,
    /// The worker's address-space limit in bytes (Linux and other Unix: `ulimit -v` through
    /// `/bin/sh`). `None` sets none.
    pub memory_limit: Option<u64>,
    /// What the extractors are told (OCR languages, ...), in-process and in the worker alike.
    pub options: crate::ExtractOptions,
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox {
            worker: None,
            timeout: Duration::from_secs(60),
            memory_limit: Some(4 * 1024 * 1024 * 1024),
            options: crate::ExtractOptions::default(),
        }
    }
}

impl Sandbox {
    /// No worker: everything in-process behind `catch_unwind`.
    pub fn in_process() -> Sandbox {
        Sandbox::default()
    }

    /// A sandbox that runs risky formats with `program args...`.
    pub fn with_worker(program: impl Into<PathBuf>, args: Vec<String>) -> Sandbox {
        Sandbox {
            worker: Some((program.into(), args)),
            ..Sandbox::default()
        }
    }
}

/// The request the parent sends to a worker.
#[derive(Debug, Serialize, Deserialize)]
struct WireRequest {
    path: PathBuf,
    /// The OCR options; absent means the defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ocr: Option<WireOcr>,
    /// The speech model's folder; absent means none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    speech_model: Option<PathBuf>,
    /// The transcription switches (audio, video); absent means both on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    transcribe: Option<(bool, bool)>,
    /// The extractor the parent chose, by its first extension: the worker reads the file with
    /// it instead of deciding again. Absent: the worker decides ([`crate::extract_path_with`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    format: Option<String>,
}

/// [`crate::ocr::OcrOptions`] on the wire.
#[derive(Debug, Serialize, Deserialize)]
struct WireOcr {
    enabled: bool,
    languages: Vec<String>,
    timeout_ms: u64,
    /// The OCR time a scanned PDF may use in all (a share of the worker's timeout).
    #[serde(default)]
    pdf_budget_ms: Option<u64>,
}

/// A skip reason on the wire.
#[derive(Debug, Serialize, Deserialize)]
struct WireSkip {
    code: String,
    detail: String,
}

/// An extraction on the wire.
#[derive(Debug, Serialize, Deserialize)]
struct WireExtracted {
    doc_type: String,
    text: String,
    title: Option<String>,
    outline: Vec<OutlineNode>,
    encoding: Option<String>,
}

/// What a worker writes to stdout: exactly one of `ok` and `skip`.
#[derive(Debug, Serialize, Deserialize)]
struct WireResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ok: Option<WireExtracted>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    skip: Option<WireSkip>,
}

impl WireResult {
    fn from_result(result: Result<Extracted, SkipReason>) -> WireResult {
        match result {
            Ok(e) => WireResult {
                ok: Some(WireExtracted {
                    doc_type: e.doc_type.as_str().to_string(),
                    text: e.text,
                    title: e.title,
                    outline: e.outline,
                    encoding: e.encoding.map(str::to_string),
                }),
                skip: None,
            },
            Err(s) => WireResult {
                ok: None,
                skip: Some(WireSkip {
                    code: s.code.to_string(),
                    detail: s.detail,
                }),
            },
        }
    }

    fn into_result(self) -> Result<Extracted, SkipReason> {
        if let Some(s) = self.skip {
            return Err(SkipReason::new(skip_code(&s.code), s.detail));
        }
        let Some(e) = self.ok else {
            return Err(failed("the worker sent neither text nor a skip reason"));
        };
        let doc_type = DocType::from_token(&e.doc_type).map_err(|_| {
            failed(format!(
                "the worker sent an unknown doc type {}",
                e.doc_type
            ))
        })?;
        Ok(Extracted {
            doc_type,
            text: e.text,
            title: e.title,
            outline: e.outline,
            encoding: e
                .encoding
                .as_deref()
                .and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes()))
                .map(|enc| enc.name()),
        })
    }
}

/// The `&'static` code of a skip reason token.
fn skip_code(code: &str) -> &'static str {
    SkipReason::CODES
        .iter()
        .copied()
        .find(|c| *c == code)
        .unwrap_or(SkipReason::EXTRACTOR_FAILED)
}

fn failed(detail: impl Into<String>) -> SkipReason {
    SkipReason::new(SkipReason::EXTRACTOR_FAILED, detail)
}

/// Extracts a file whose bytes the caller has read: in a worker process when `sandbox` names a
/// worker and the format is risky ([`crate::Extractor::isolate`]) or the file is over
/// [`ISOLATE_ABOVE`], else in-process (as [`crate::extract_loaded`]). The extractor is chosen
/// by [`crate::detect`]: the extension, checked against the content.
///
/// The worker reads the file from `path` itself; `bytes` serve the checks made here first
/// (unsupported extension, empty, over the cap).
pub fn extract_isolated(
    sandbox: &Sandbox,
    path: &Path,
    bytes: &[u8],
) -> Result<Extracted, SkipReason> {
    extract_with_extractor(sandbox, checked_extractor(path, bytes)?, path, bytes)
}

/// [`extract_isolated`] for a file whose kind a walk decided ([`Detected`]): `bytes` (read by
/// [`Detected::read`], after [`Detected::admit`]) are read by the extractor decided there, the
/// content only completing that decision (see [`Detected`]), never making it again.
pub fn extract_detected(
    sandbox: &Sandbox,
    detected: &Detected,
    path: &Path,
    bytes: &[u8],
) -> Result<Extracted, SkipReason> {
    extract_with_extractor(sandbox, detected.settle(path, bytes)?, path, bytes)
}

/// Extracts with an extractor chosen and checked: in a worker or in-process (see
/// [`extract_isolated`]).
fn extract_with_extractor(
    sandbox: &Sandbox,
    extractor: &'static dyn Extractor,
    path: &Path,
    bytes: &[u8],
) -> Result<Extracted, SkipReason> {
    let risky = extractor.isolate() || (bytes.len() as u64 > ISOLATE_ABOVE && !extractor.slow());
    match &sandbox.worker {
        Some((program, args)) if risky => {
            let timeout = extractor
                .worker_timeout(&crate::Input { path, bytes })
                .unwrap_or(sandbox.timeout);
            run_in_worker(program, args, sandbox, timeout, path, extractor)
        }
        _ => extract_bytes(extractor, path, bytes, &sandbox.options),
    }
}

/// Files larger than this go to the worker whatever their format (but images, whose OCR runs
/// in child processes of its own): a parser that is slow on some input costs the most on a
/// large one, and against the parse of a few MiB the start of a worker (milliseconds) is
/// nothing. Smaller files of the formats that are not [`crate::Extractor::isolate`] stay
/// in-process, where their parsers are linear in the input (nesting depth capped) and their
/// text is capped at [`crate::MAX_TEXT_BYTES`].
pub const ISOLATE_ABOVE: u64 = 4 * 1024 * 1024;

/// Longest worker output read (text of a huge PDF included).
const MAX_OUTPUT: u64 = 512 * 1024 * 1024;

fn run_in_worker(
    program: &Path,
    args: &[String],
    sandbox: &Sandbox,
    timeout: Duration,
    path: &Path,
    extractor: &dyn Extractor,
) -> Result<Extracted, SkipReason> {
    let doc_type = extractor.doc_type();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let cmd = child::command(program, &args, sandbox.memory_limit);
    let ocr = &sandbox.options.ocr;
    let request = serde_json::to_vec(&WireRequest {
        path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
        ocr: Some(WireOcr {
            enabled: ocr.enabled,
            languages: ocr.languages.clone(),
            timeout_ms: ocr.timeout.as_millis() as u64,
            pdf_budget_ms: Some((sandbox.timeout.as_millis() as u64) * 3 / 4),
        }),
        speech_model: sandbox.options.speech.model.clone(),
        transcribe: Some((sandbox.options.speech.audio, sandbox.options.speech.video)),
        format: Some(extractor.extensions()[0].to_string()),
    })
    .unwrap_or_default();
    let finished = match child::run(cmd, Some(&request), timeout, MAX_OUTPUT) {
        Ok(f) => f,
        Err(RunError::Start(e)) => {
            return Err(failed(format!("cannot start the extraction worker: {e}")));
        }
        Err(RunError::Timeout(t)) => {
            tracing::warn!(path = %path.display(), "extraction worker timed out");
            return Err(SkipReason::new(
                SkipReason::TIMEOUT,
                format!(
                    "the {doc_type} extractor took longer than {} s",
                    t.as_secs_f64()
                ),
            ));
        }
        Err(RunError::Wait(e)) => {
            return Err(failed(format!("cannot wait for the worker: {e}")));
        }
    };
    let (status, out, err) = (finished.status, finished.stdout, finished.stderr);
    let last_err = String::from_utf8_lossy(&err)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.chars().take(200).collect::<String>())
        .unwrap_or_default();
    if !status.success() {
        let how = match status.code() {
            Some(code) => format!("exited with status {code}"),
            None => signal_text(&status),
        };
        tracing::warn!(path = %path.display(), %how, "extraction worker failed");
        let detail = if last_err.is_empty() {
            format!("the {doc_type} extractor {how}")
        } else {
            format!("the {doc_type} extractor {how}: {last_err}")
        };
        return Err(failed(detail));
    }
    parse_output(&out)
        .map_err(|e| {
            failed(format!(
                "the {doc_type} extractor sent unreadable output: {e}"
            ))
        })?
        .into_result()
}

#[cfg(unix)]
fn signal_text(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        Some(9) => "was killed (signal 9; out of memory?)".into(),
        Some(6) => "aborted (signal 6)".into(),
        Some(11) => "crashed (signal 11)".into(),
        Some(s) => format!("was killed by signal {s}"),
        None => "failed".into(),
    }
}

#[cfg(not(unix))]
fn signal_text(_status: &std::process::ExitStatus) -> String {
    "failed".into()
}

/// The worker's JSON: the whole output, or else its last line that is a JSON object (so that a
/// worker whose harness prints a line of its own still works).
fn parse_output(out: &[u8]) -> Result<WireResult, String> {
    let text = String::from_utf8_lossy(out);
    match serde_json::from_str::<WireResult>(text.trim()) {
        Ok(r) => Ok(r),
        Err(e) => text
            .lines()
            .rev()
            .filter(|l| l.trim_start().starts_with('{'))
            .find_map(|l| serde_json::from_str::<WireResult>(l.trim()).ok())
            .ok_or_else(|| e.to_string()),
    }
}

/// The worker's extraction of a file with the extractor its parent chose (and whose size the
/// parent checked): read whole, empty or unreadable said as such.
fn extract_file_as(
    extractor: &'static dyn Extractor,
    path: &Path,
    options: &crate::ExtractOptions,
) -> Result<Extracted, SkipReason> {
    let bytes = fs_err::read(path)
        .map_err(|e| SkipReason::new(SkipReason::CORRUPT, format!("cannot read file: {e}")))?;
    if bytes.is_empty() {
        return Err(SkipReason::new(SkipReason::EMPTY, "the file has no bytes"));
    }
    extract_bytes(extractor, path, &bytes, options)
}

/// Writes a line to stderr (the parent shows the last one in its skip reason).
macro_rules! worker_note {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// The worker's side: reads `{"path": ...}` from stdin, extracts the file in-process and writes
/// the result as one JSON line to stdout. Returns the process exit code (0 when a result — text
/// or skip reason — was written, 2 for a bad request).
///
/// The `linkly` binary's hidden `__extract-worker` subcommand calls
/// `std::process::exit(linkly_extract::run_worker())`.
pub fn run_worker() -> i32 {
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        worker_note!("extract worker: cannot read the request: {e}");
        return 2;
    }
    let request: WireRequest = match serde_json::from_str(input.trim()) {
        Ok(r) => r,
        Err(e) => {
            worker_note!("extract worker: bad request: {e}");
            return 2;
        }
    };
    // Panic messages would only clutter the parent's log: the result says what failed.
    std::panic::set_hook(Box::new(|_| {}));
    let mut options = crate::ExtractOptions::default();
    if let Some(ocr) = request.ocr {
        options.ocr.enabled = ocr.enabled;
        options.ocr.languages = ocr.languages;
        options.ocr.timeout = Duration::from_millis(ocr.timeout_ms);
        options.ocr.pdf_budget = ocr.pdf_budget_ms.map(Duration::from_millis);
    }
    options.speech.model = request.speech_model;
    if let Some((audio, video)) = request.transcribe {
        options.speech.audio = audio;
        options.speech.video = video;
    }
    let chosen = request
        .format
        .as_deref()
        .and_then(|f| crate::extractor_for(Path::new(&format!("x.{f}"))));
    let result = match chosen {
        Some(extractor) => extract_file_as(extractor, &request.path, &options),
        None => crate::extract_path_with(&request.path, &options),
    };
    let wire = WireResult::from_result(result);
    let mut json = match serde_json::to_vec(&wire) {
        Ok(j) => j,
        Err(e) => {
            worker_note!("extract worker: cannot encode the result: {e}");
            return 2;
        }
    };
    json.push(b'\n');
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(&json)
        .and_then(|_| stdout.flush())
        .is_err()
    {
        return 2;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_round_trip() {
        let mut e = Extracted::text(DocType::Pdf, "--- page 1 ---\nhi".into());
        e.outline = vec![OutlineNode::new("A", 1, 2)];
        e.encoding = Some("Shift_JIS");
        let json = serde_json::to_string(&WireResult::from_result(Ok(e.clone()))).unwrap();
        let back = parse_output(json.as_bytes())
            .unwrap()
            .into_result()
            .unwrap();
        assert_eq!(back, e);
        let skip = SkipReason::new(SkipReason::ENCRYPTED, "needs a password");
        let json = serde_json::to_string(&WireResult::from_result(Err(skip.clone()))).unwrap();
        let noisy = format!("\nrunning 1 test\n{json}\n");
        assert_eq!(
            parse_output(noisy.as_bytes()).unwrap().into_result(),
            Err(skip)
        );
        assert_eq!(skip_code("nonsense"), SkipReason::EXTRACTOR_FAILED);
    }
}
