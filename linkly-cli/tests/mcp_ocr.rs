//! OCR through the official MCP Python SDK client over stdio: `search` finds words that exist
//! only inside images, `grep` and `read` show them.

use crate::common;

use common::Env;
use serde_json::json;

const PAGE: &str = "# Field notes\n\n![EAS](textract-raw_text.jpg)\n";

#[test]
fn image_words_through_the_python_sdk_client() {
    let env = Env::new(&[("page.md", PAGE)]);
    for name in ["textract-raw_text.jpg", "poi-bug55902-mixedChars-ja.png"] {
        fs_err::copy(
            common::corpus_dir().join("images").join(name),
            env.docs.join(name),
        )
        .unwrap();
    }
    env.index();
    let jpg = env.doc_id("EMERGENCY");
    let page = env.doc_id("Field notes");
    let scenario = json!({
        "require_tools": ["search", "grep", "read"],
        "steps": [
            {"name": "search finds an image word", "tool": "search", "arguments": {"query": "EMERGENCY"},
             "expect": {"is_error": false, "contains": ["textract-raw_text.jpg"]}},
            {"name": "a CJK query finds the Japanese image", "tool": "search",
             "arguments": {"query": "複数の文字", "output_format": "json"},
             "expect": {"is_error": false, "contains": ["poi-bug55902-mixedChars-ja.png"]}},
            {"name": "grep inside the image text", "tool": "grep", "arguments": {"pattern": "ALERT", "doc_id": jpg},
             "expect": {"is_error": false, "contains": ["EMERGENCY ALERT SYSTEM"]}},
            {"name": "read shows the referenced image's text", "tool": "read",
             "arguments": {"doc_id": page, "image_text": "full"},
             "expect": {"is_error": false, "contains": ["Referenced images", jpg, "THERE IS NO ACTUAL EMERGENCY"]}}
        ]
    });
    let stdout = env.probe("ocr", &env.stdio_target(), &scenario);
    common::assert_passed(&stdout, &["search finds an image word"]);
}
