//! What the tool tests share: calling a tool and reading its answer.
// Each test binary uses part of it.
#![allow(dead_code)]

use linkly_tools::Linkly;
use serde_json::{Value, json};

/// Calls `tool`: its text and whether it is an error.
pub(crate) fn call(l: &Linkly, tool: &str, args: Value) -> (String, bool) {
    let out = l.call(tool, args).unwrap();
    (out.text, out.is_error)
}

/// Calls `tool` with `output_format: json`; the parsed answer, which must not be an error.
pub(crate) fn json_call(l: &Linkly, tool: &str, mut args: Value) -> Value {
    args["output_format"] = json!("json");
    let (text, err) = call(l, tool, args);
    assert!(!err, "{tool} failed: {text}");
    serde_json::from_str(&text).unwrap()
}

/// Calls `tool`, which must answer with an error; its message.
pub(crate) fn err_call(l: &Linkly, tool: &str, args: Value) -> String {
    let (text, err) = call(l, tool, args);
    assert!(err, "{tool} should fail: {text}");
    text
}
