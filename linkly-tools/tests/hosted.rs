//! Tools over documents extracted elsewhere (a gateway's published library): ids under the
//! library's prefix, nothing read from or checked against the disk.

use std::path::PathBuf;
use std::sync::Arc;

use linkly_core::{Config, DataDir, DocId, DocType, OutlineNode};
use linkly_extract::Extracted;
use linkly_index::{Index, IngestDoc};
use linkly_tools::Linkly;
use serde_json::{Value, json};

use crate::common;

fn hosted() -> (tempfile::TempDir, Linkly) {
    let tmp = tempfile::tempdir().unwrap();
    let data = DataDir::new(tmp.path().join("cache"));
    let index = Index::open(&data.index_dir()).unwrap();
    let mut guide = Extracted::text(
        DocType::Md,
        "# Ownership\nEvery value has an owner.\n# Borrowing\nReferences borrow values.".into(),
    );
    guide.title = Some("The Guide".into());
    guide.outline = vec![
        OutlineNode {
            title: "Ownership".into(),
            start_line: 1,
            end_line: 2,
            detail: vec![],
            children: vec![],
        },
        OutlineNode {
            title: "Borrowing".into(),
            start_line: 3,
            end_line: 4,
            detail: vec![],
            children: vec![],
        },
    ];
    let doc = |id: u64, path: &str, extracted: Extracted| IngestDoc {
        id: Some(DocId(id)),
        path: path.to_string(),
        doc_type: extracted.doc_type,
        hash: format!("h{id}"),
        size: extracted.text.len() as u64,
        modified_at: 1_700_000_000_000,
        extracted,
    };
    index
        .ingest(
            vec![
                doc(41, "/book/guide.md", guide),
                doc(
                    42,
                    "/book/notes/tips.txt",
                    Extracted::text(DocType::Txt, "borrow checker tips\n../../etc/passwd".into()),
                ),
            ],
            &[],
        )
        .unwrap();
    let config = Config {
        folders: vec![PathBuf::from("/book")],
        ..Config::default()
    };
    let linkly = Linkly::new(Arc::new(index), data, config).with_doc_prefix("cloud://alice/rust/");
    (tmp, linkly)
}

fn call(linkly: &Linkly, tool: &str, args: Value) -> Value {
    let out = linkly.call(tool, args).unwrap();
    assert!(!out.is_error, "{tool}: {}", out.text);
    serde_json::from_str(&out.text).unwrap()
}

#[test]
fn a_hosted_library_answers_under_its_own_ids_without_touching_the_disk() {
    let (_tmp, linkly) = hosted();
    assert!(!linkly.documents_are_files());
    let found = call(
        &linkly,
        "search",
        json!({"query": "borrow", "output_format": "json"}),
    );
    let ids: Vec<&str> = common::column(&found, "results", "doc_id");
    assert!(ids.contains(&"cloud://alice/rust/41"), "{found}");
    assert!(ids.contains(&"cloud://alice/rust/42"), "{found}");

    // The files do not exist here: the index is the only copy, and it is served.
    let read = call(
        &linkly,
        "read",
        json!({"doc_id": "cloud://alice/rust/41", "offset": 3, "limit": 2, "output_format": "json"}),
    );
    assert_eq!(read["doc_id"], "cloud://alice/rust/41");
    assert!(
        read.to_string().contains("References borrow values."),
        "{read}"
    );
    let outline = call(
        &linkly,
        "outline",
        json!({"doc_ids": ["cloud://alice/rust/41"], "output_format": "json"}),
    );
    assert!(outline.to_string().contains("Borrowing"), "{outline}");
    let grep = call(
        &linkly,
        "grep",
        json!({"doc_id": "cloud://alice/rust/42", "pattern": "checker", "output_format": "json"}),
    );
    assert!(grep.to_string().contains("borrow checker tips"), "{grep}");

    // A directory of the library lists without existing on disk; `..` cannot leave it.
    let listed = call(
        &linkly,
        "list",
        json!({"scope": "folder", "path": "/book/notes", "output_format": "json"}),
    );
    assert_eq!(listed["total"], 1, "{listed}");
    let out = linkly
        .call("list", json!({"scope": "folder", "path": "/book/../etc"}))
        .unwrap();
    assert!(
        out.is_error && out.text.contains("PATH_NOT_ALLOWED"),
        "{}",
        out.text
    );

    // Only this library's form of id is accepted.
    for bad in [
        "local://41",
        "41",
        "cloud://bob/rust/41",
        "cloud://alice/rust/x",
    ] {
        let out = linkly.call("read", json!({"doc_id": bad})).unwrap();
        assert!(
            out.is_error && out.text.contains("cloud://alice/rust/12"),
            "{bad}: {}",
            out.text
        );
    }
}
