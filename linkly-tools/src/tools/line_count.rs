//! `line_count`: how many lines a document has. It exists to show that a tool is declared once
//! and served everywhere: behind the `example-tool` feature (for tests), it is listed and
//! called through MCP, the CLI's `linkly call` and the gateway, none of which names it.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::tools::kit::{
    Reach, Rendered, ToolSpec, find_doc, parse_args, parse_doc_id, readable_content, render,
    schema_of,
};
use crate::{Linkly, Result};

pub(crate) const SPEC: ToolSpec = ToolSpec {
    name: "line_count",
    title: "Count a document's lines",
    description: "How many lines a document has, numbered as read numbers them: the last line \
        to pass to read. Takes a doc_id from search.",
    read_only: true,
    reach: Reach::Documents("doc_id"),
    idempotent: true,
    input_schema: schema_of::<LineCountParams>,
    output_schema: Some(schema_of::<LineCountResponse>),
    run,
};

crate::tools::kit::tool_params! {
    /// Parameters of `line_count`.
    pub struct LineCountParams {
        /// The document (`local://12`).
        pub doc_id: String,
        /// The answer's format.
        #[schemars(extend("default" = "markdown"))]
        pub output_format: Option<crate::OutputFormat>,
    }
}

/// The JSON answer of `line_count`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LineCountResponse {
    /// The document, as given.
    pub doc_id: String,
    /// Its lines.
    pub lines: u64,
}

fn run(linkly: &Linkly, args: Value) -> Result<Rendered> {
    let p: LineCountParams = parse_args(args)?;
    let id = parse_doc_id(linkly, "doc_id", &p.doc_id)?;
    let doc = find_doc(linkly, &p.doc_id, id)?;
    let lines = readable_content(linkly, &doc)?.lines().count() as u64;
    let response = LineCountResponse {
        doc_id: p.doc_id,
        lines,
    };
    render(p.output_format.unwrap_or_default(), &response, |r| {
        format!("{} has {} lines.", r.doc_id, r.lines)
    })
}
