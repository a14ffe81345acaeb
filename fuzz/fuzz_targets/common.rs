//! Shared by every fuzz target: feed the input to the registry exactly as the indexer does
//! (`extract_isolated` with an in-process sandbox, i.e. `extract_loaded` behind the registry's
//! `catch_unwind`) and check the result's invariants.

use std::path::Path;
use std::sync::Once;

use linkly_extract::{Sandbox, SkipReason, extract_isolated};

static INIT: Once = Once::new();

/// The indexer's in-process sandbox, OCR off: scanned PDF pages would otherwise run Tesseract
/// (seconds per input), which is not what these targets fuzz.
fn sandbox() -> Sandbox {
    let mut sandbox = Sandbox::in_process();
    sandbox.options.ocr.enabled = false;
    sandbox
}

/// Extracts `data` as a file named `path` and checks what comes back.
///
/// `panics_allowed`: whether a panic that reaches the registry's `catch_unwind` is acceptable
/// (PDF: the third-party parsers panic by design and the registry turns that into a skip
/// reason). For the other formats such a panic (`extractor_failed`) is a crash; a panic that an
/// extractor contains itself on purpose (calamine's, per sheet) is not.
#[allow(dead_code)]
pub fn fuzz(path: &Path, data: &[u8], panics_allowed: bool) {
    // libfuzzer-sys's hook aborts on every panic, even a caught one: put back one that only
    // prints (nothing at all for PDF), and judge by the result instead.
    INIT.call_once(|| {
        if panics_allowed {
            std::panic::set_hook(Box::new(|_| {}));
        } else {
            let _ = std::panic::take_hook(); // std's default hook: message and location
        }
    });
    let result = extract_isolated(&sandbox(), path, data);
    if !panics_allowed {
        fail_on_caught_panic(&result);
    }
    check(result);
}

/// Extracts `data` from a real file named `name` in a fresh temporary folder (formats that look
/// at the file's neighbours, e.g. CSV).
#[allow(dead_code)]
pub fn fuzz_file(name: &str, data: &[u8]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(name);
    std::fs::write(&path, data).expect("write input");
    INIT.call_once(|| {
        let _ = std::panic::take_hook();
    });
    let result = extract_isolated(&sandbox(), &path, data);
    fail_on_caught_panic(&result);
    check(result);
}

/// Aborts (a crash for libFuzzer) when the registry caught a panic.
fn fail_on_caught_panic(result: &Result<linkly_extract::Extracted, SkipReason>) {
    if let Err(skip) = result
        && skip.code == SkipReason::EXTRACTOR_FAILED
    {
        eprintln!("panic caught by the registry: {}", skip.detail);
        std::process::abort();
    }
}

fn check(result: Result<linkly_extract::Extracted, SkipReason>) {
    let Ok(e) = result else { return };
    assert!(!e.text.contains('\r'), "text holds a carriage return");
    let total = e.total_lines().max(1);
    let mut stack: Vec<_> = e.outline.iter().collect();
    while let Some(n) = stack.pop() {
        assert!(
            1 <= n.start_line && n.start_line <= n.end_line && n.end_line <= total,
            "outline range {}..{} outside 1..{total}",
            n.start_line,
            n.end_line
        );
        stack.extend(n.children.iter());
    }
}
