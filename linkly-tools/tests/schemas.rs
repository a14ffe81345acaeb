//! The input schemas agents read say what the tools do: every bound, choice and default a
//! schema states is checked against the tool itself, so the two cannot drift apart (issue 14,
//! point 2). Also: integers sent as numeric strings are accepted.

use crate::common;

use std::sync::Arc;

use common::{call, err_call};
use linkly_tools::{Linkly, TOOLS};
use serde_json::{Map, Value, json};

/// An index where every default limit cuts: 60 short notes in 12 folders and one document of
/// 250 lines, whose id comes back.
fn env() -> (tempfile::TempDir, Arc<Linkly>, String) {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    for i in 0..12 {
        let dir = docs.join(format!("sub{i}"));
        fs_err::create_dir_all(&dir).unwrap();
        for j in 0..5 {
            let body = format!("# Note {i}.{j}\n\nThe quokka {i} met quokka {j}.\n");
            fs_err::write(dir.join(format!("note{j}.md")), body).unwrap();
        }
    }
    let text: String = (1..=250)
        .map(|i| format!("line {i} the quokka smiles\n"))
        .collect();
    fs_err::write(docs.join("long.md"), format!("# Quokkas\n\n{text}")).unwrap();
    let linkly = common::indexed(tmp.path(), &docs);
    let found = common::json_call(
        &linkly,
        "search",
        json!({"query": "quokka", "path_glob": "long.md"}),
    );
    let id = found["results"][0]["doc_id"].as_str().unwrap().to_string();
    (tmp, linkly, id)
}

/// Arguments with which each tool succeeds.
fn base(tool: &str, id: &str) -> Value {
    match tool {
        "search" => json!({"query": "quokka"}),
        "outline" => json!({"doc_ids": [id]}),
        "grep" => json!({"pattern": "quokka", "doc_id": id}),
        "read" => json!({"doc_id": id}),
        "find_paths" => json!({"patterns": ["sub"]}),
        "list" => json!({"scope": "folder"}),
        "note_save" => json!({"mode": "create", "content": "a note about quokkas"}),
        _ => json!({}),
    }
}

/// `base` with one argument set.
fn with(tool: &str, id: &str, name: &str, value: Value) -> Value {
    let mut args = base(tool, id);
    args[name] = value;
    args
}

/// The properties of a tool's schema.
fn properties(schema: &Value) -> Map<String, Value> {
    schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default()
}

/// Whether a property's type is `ty` (alone or with `null`).
fn is_type(p: &Value, ty: &str) -> bool {
    p["type"] == ty || p["type"].as_array().is_some_and(|t| t.contains(&json!(ty)))
}

/// An answer without its `[meta] now=` footer, which changes from call to call.
fn stable(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("[meta]"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_bound_a_schema_states_is_the_tools_bound() {
    let (_tmp, l, id) = env();
    let mut checked = 0;
    for spec in TOOLS {
        let schema = (spec.input_schema)();
        let (text, err) = call(&l, spec.name, base(spec.name, &id));
        assert!(!err, "{}: the base call failed: {text}", spec.name);
        for (name, p) in properties(&schema) {
            if !is_type(&p, "integer") {
                continue;
            }
            let min = p["minimum"]
                .as_i64()
                .unwrap_or_else(|| panic!("{}.{name} has no minimum", spec.name));
            let mut edges = vec![min];
            let mut outside = vec![min - 1];
            if let Some(max) = p["maximum"].as_i64() {
                edges.push(max);
                outside.push(max + 1);
            }
            for v in edges {
                let (text, err) = call(&l, spec.name, with(spec.name, &id, &name, json!(v)));
                assert!(
                    !err,
                    "{}.{name}={v} is in the schema's range: {text}",
                    spec.name
                );
                // The same number as a string (a common model output) is the same call.
                let (as_string, err) = call(
                    &l,
                    spec.name,
                    with(spec.name, &id, &name, json!(v.to_string())),
                );
                assert!(!err, "{}.{name}=\"{v}\": {as_string}", spec.name);
                assert_eq!(stable(&as_string), stable(&text), "{}.{name}", spec.name);
            }
            for v in outside {
                let text = err_call(&l, spec.name, with(spec.name, &id, &name, json!(v)));
                assert!(
                    text.starts_with("[INVALID_ARGUMENT]")
                        && text.contains(&format!("{name} must be between")),
                    "{}.{name}={v}: {text}",
                    spec.name
                );
            }
            checked += 1;
        }
        for (name, p) in properties(&schema) {
            let (Some(lo), Some(hi)) = (p["minItems"].as_u64(), p["maxItems"].as_u64()) else {
                continue;
            };
            for n in [lo.saturating_sub(1), hi + 1] {
                let items = vec![json!("x"); n as usize];
                let text = err_call(&l, spec.name, with(spec.name, &id, &name, json!(items)));
                assert!(
                    text.contains(&format!("{name} must hold between {lo} and {hi}")),
                    "{}.{name} with {n} items: {text}",
                    spec.name
                );
            }
            checked += 1;
        }
    }
    // limit ×5, offset ×3, context, before, after; doc_ids, patterns.
    assert_eq!(checked, 13);
}

#[test]
fn every_choice_a_schema_lists_is_the_tools_choice() {
    let (_tmp, l, id) = env();
    let mut checked = 0;
    for spec in TOOLS {
        for (name, p) in properties(&(spec.input_schema)()) {
            let (allowed, array) = match (p.get("enum"), p["items"].get("enum")) {
                (Some(e), _) => (e.as_array().unwrap().clone(), false),
                (None, Some(e)) => (e.as_array().unwrap().clone(), true),
                (None, None) => continue,
            };
            let wrap = |v: Value| if array { json!([v]) } else { v };
            let allowed: Vec<Value> = allowed.into_iter().filter(|v| !v.is_null()).collect();
            for v in &allowed {
                let (text, _) = call(&l, spec.name, with(spec.name, &id, &name, wrap(v.clone())));
                assert!(
                    !text.contains(&format!("{name} must be one of"))
                        && !text.contains(&format!("{name} has unknown type")),
                    "{}.{name}={v} is in the schema's enum: {text}",
                    spec.name
                );
            }
            let text = err_call(
                &l,
                spec.name,
                with(spec.name, &id, &name, wrap(json!("bogus"))),
            );
            assert!(
                text.contains(&format!("{name} must be one of"))
                    || text.contains(&format!("{name} has unknown type")),
                "{}.{name}=bogus: {text}",
                spec.name
            );
            for v in &allowed {
                let v = v.as_str().unwrap();
                assert!(
                    text.contains(v),
                    "{}.{name}: {v:?} missing from {text}",
                    spec.name
                );
            }
            checked += 1;
        }
    }
    // output_format ×7, search scope/time_sort/doc_types, grep output_mode, read image_text,
    // list scope/sort/doc_types, note_save mode.
    assert_eq!(checked, 16);
}

#[test]
fn every_default_a_schema_states_is_the_tools_default() {
    let (_tmp, l, id) = env();
    let mut checked = 0;
    for spec in TOOLS.iter().filter(|s| s.read_only) {
        for (name, p) in properties(&(spec.input_schema)()) {
            let Some(default) = p.get("default") else {
                continue;
            };
            let (omitted, err) = call(&l, spec.name, base(spec.name, &id));
            assert!(!err, "{omitted}");
            let (given, err) = call(&l, spec.name, with(spec.name, &id, &name, default.clone()));
            assert!(!err, "{}.{name}={default}: {given}", spec.name);
            assert!(
                stable(&given) == stable(&omitted),
                "{}.{name}: passing the schema's default {default} changes the answer",
                spec.name
            );
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked}");
}

#[test]
fn schemas_are_plain_json_schema() {
    for spec in TOOLS {
        let schema = (spec.input_schema)();
        for (name, p) in properties(&schema) {
            let at = format!("{}.{name}", spec.name);
            // One type, nullable when the parameter is optional; a nullable choice lists null.
            let required = schema["required"]
                .as_array()
                .is_some_and(|r| r.contains(&json!(name)));
            let expected_null = !required && p.get("type").is_some();
            let types = p["type"].as_array().cloned().unwrap_or_default();
            assert_eq!(types.contains(&json!("null")), expected_null, "{at}: {p}");
            if let Some(values) = p.get("enum") {
                assert_eq!(
                    values.as_array().unwrap().contains(&Value::Null),
                    expected_null
                );
            }
            assert!(p.get("format").is_none(), "{at}: no Rust-width format: {p}");
            assert_ne!(p.get("default"), Some(&Value::Null), "{at}: {p}");
            assert!(p["description"].is_string(), "{at}: undocumented");
        }
    }
}

#[test]
fn integers_may_come_as_numeric_strings() {
    let (_tmp, l, id) = env();
    let read = |args: Value| call(&l, "read", args);
    let (five, err) = read(json!({"doc_id": id, "limit": 5}));
    assert!(!err, "{five}");
    assert!(five.contains("(lines 1-5 of"), "{five}");
    for limit in [json!("5"), json!(" 5 ")] {
        let (text, err) = read(json!({"doc_id": id, "limit": limit}));
        assert!(!err, "{text}");
        assert_eq!(stable(&text), stable(&five));
    }
    // null is "not given".
    let (null, err) = read(json!({"doc_id": id, "offset": null, "limit": null}));
    let (omitted, _) = read(json!({"doc_id": id}));
    assert!(!err, "{null}");
    assert_eq!(stable(&null), stable(&omitted));
    // A string still meets the range check.
    let text = err_call(&l, "read", json!({"doc_id": id, "limit": "501"}));
    assert!(
        text.contains("limit must be between 1 and 500 (got 501)"),
        "{text}"
    );
    // Anything else is an INVALID_ARGUMENT naming the parameter.
    for bad in [
        json!("five"),
        json!("5.5"),
        json!(5.5),
        json!(true),
        json!([5]),
    ] {
        let text = err_call(
            &l,
            "grep",
            json!({"pattern": "q", "doc_id": id, "context": bad}),
        );
        assert!(
            text.starts_with("[INVALID_ARGUMENT] context: ") && text.contains("an integer"),
            "{bad}: {text}"
        );
    }
    let v: Value = serde_json::from_str(&err_call(
        &l,
        "search",
        json!({"query": "quokka", "limit": "lots", "output_format": "json"}),
    ))
    .unwrap();
    assert_eq!(v["error"]["code"], "INVALID_ARGUMENT", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("limit: "),
        "{v}"
    );
    // The parameter is in `details` too, as for every INVALID_ARGUMENT.
    assert_eq!(v["error"]["details"]["parameter"], "limit", "{v}");
}
