//! Errors keep their meaning through the library: `INVALID_ARGUMENT` carries its details, a
//! held index writer reaches the caller as `INDEX_BUSY` with advice, not `INTERNAL`.

use crate::common;

use std::sync::Arc;

use common::call;
use linkly_core::{CodedError, DataDir, ErrorCode};
use linkly_tools::{FreshEvent, Linkly};
use serde_json::{Value, json};

fn data_dir(tmp: &tempfile::TempDir) -> DataDir {
    let docs = tmp.path().join("docs");
    fs_err::create_dir_all(&docs).unwrap();
    for i in 0..20 {
        fs_err::write(
            docs.join(format!("plan-{i}.md")),
            format!("# Plan {i}\n\nThe budget for 2024 is set.\n"),
        )
        .unwrap();
    }
    common::watching(tmp.path(), &docs)
}

fn json_error(l: &Linkly, tool: &str, args: Value) -> Value {
    let (text, is_error) = call(l, tool, args);
    assert!(is_error, "{tool} should fail: {text}");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn invalid_arguments_name_the_parameter_and_what_it_allows() {
    let tmp = tempfile::tempdir().unwrap();
    let linkly = Linkly::open(data_dir(&tmp)).unwrap();

    // Out of bounds: the parameter, its bounds and what was received; for a list, its message.
    let ids: Vec<String> = (1..=21).map(|i| format!("local://{i}")).collect();
    for (tool, args, details, message) in [
        (
            "search",
            json!({"query": "budget", "limit": 500, "output_format": "json"}),
            json!({"parameter": "limit", "minimum": 1, "maximum": 50, "received": 500}),
            None,
        ),
        (
            "read",
            json!({"doc_id": "local://1", "limit": 0, "output_format": "json"}),
            json!({"parameter": "limit", "minimum": 1, "maximum": 500, "received": 0}),
            None,
        ),
        (
            "outline",
            json!({"doc_ids": ids, "output_format": "json"}),
            json!({"parameter": "doc_ids", "min_items": 1, "max_items": 20, "received_items": 21}),
            Some("doc_ids must hold between 1 and 20 ids (got 21)"),
        ),
    ] {
        let e = json_error(&linkly, tool, args);
        assert_eq!(e["error"]["code"], "INVALID_ARGUMENT", "{e}");
        assert_eq!(e["error"]["details"], details, "{e}");
        if let Some(message) = message {
            assert_eq!(e["error"]["message"], message);
        }
    }

    let e = json_error(
        &linkly,
        "list",
        json!({"scope": "everything", "output_format": "json"}),
    );
    let details = &e["error"]["details"];
    assert_eq!(details["parameter"], "scope", "{e}");
    assert_eq!(details["received"], "everything", "{e}");
    let allowed: Vec<&str> = details["allowed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        allowed.contains(&"folder") && allowed.contains(&"notes"),
        "{e}"
    );
}

/// Two handles on one data directory, as two processes would have: while the first syncs
/// (its progress callback runs with the index writer held), the second cannot write, and says
/// so with `INDEX_BUSY` and what to do.
#[test]
fn a_held_index_writer_is_index_busy_with_advice() {
    let tmp = tempfile::tempdir().unwrap();
    let data = data_dir(&tmp);
    let first = Linkly::open(data.clone()).unwrap();
    let second = Arc::new(Linkly::open(data).unwrap());

    let mut busy = None;
    first
        .index_now(&mut |event| {
            if busy.is_none()
                && let FreshEvent::Sync(p) = event
                && p.done > 0
            {
                busy = Some(second.index_now(&mut |_| {}).unwrap_err());
            }
        })
        .unwrap();
    let err = busy.expect("the first sync reported progress while writing");
    assert_eq!(err.code, ErrorCode::IndexBusy, "{err}");
    assert!(!err.is_internal());
    assert!(err.message.contains("try again in a moment"), "{err}");
    assert!(err.message.contains("another Linkly process"), "{err}");
    assert_eq!(err.to_json()["error"]["code"], "INDEX_BUSY");

    // Once the first is closed (else its writer lingers a moment for a following sync), the
    // second writes.
    drop(first);
    second.index_now(&mut |_| {}).unwrap();
}
