//! `outline`: the structure of documents with line ranges that match `read`.

use linkly_core::{DocType, OutlineNode};
use linkly_index::DocRecord;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::error::check_count;
use crate::render::{one_line, thousands};
use crate::tools::kit::{Reach, Rendered, ToolSpec, parse_args, parse_doc_id, render, schema_of};
use crate::{Linkly, OutputFormat, Result, ToolError};

/// Node lines shown per document when `expand` is omitted; deeper levels are collapsed until
/// the outline fits.
const NODE_BUDGET: usize = 300;

pub(crate) const SPEC: ToolSpec = ToolSpec {
    name: "outline",
    title: "Document outlines",
    description: "Show the structure of 1-20 documents (ids from search or list): headings, \
        slides, sheets or chapters, one node per line as `[1.2] Title [L5-15, 11 lines]`, \
        inclusive line ranges that match read. A document over ~50 lines with has_outline=true: \
        outline it, then read only the range you need. Under ~50 lines: read it whole. \
        has_outline=false: grep for the words or read page by page. `expand` lists node ids to \
        show fully while the others collapse to their first level (ids no outline has are \
        refused); omitted, all levels within a size budget.",
    read_only: true,
    input_schema: schema_of::<OutlineParams>,
    output_schema: Some(schema_of::<OutlineResponse>),
    reach: Reach::Documents("doc_ids"),
    idempotent: true,
    run,
};

crate::tools::kit::tool_params! {
    /// Parameters of `outline`.
    pub struct OutlineParams {
        /// Document ids (`local://12`, or a bare `12`).
        #[schemars(length(min = 1, max = 20))]
        #[cfg_attr(feature = "clap", arg(required = true))]
        pub doc_ids: Vec<String>,
        /// Node ids like "2" or "3.1" to show fully expanded; the others collapse to their first
        /// level. Omitted: all levels, within a size budget.
        pub expand: Option<Vec<String>>,
        /// The answer's format.
        #[schemars(extend("default" = "markdown"))]
        pub output_format: Option<OutputFormat>,
    }
}

/// The outline of one document.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct OutlineDoc {
    /// The id as given.
    pub doc_id: String,
    /// The title (file name when none is declared).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The absolute path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The doc-type token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doc_type: Option<String>,
    /// Words of the document.
    pub word_count: u64,
    /// Lines of the document.
    pub total_lines: u32,
    /// Whether there is an outline.
    pub has_outline: bool,
    /// The outline, one node per line.
    pub outline_text: String,
    /// Why there is no outline, and what to do instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_outline_reason: Option<String>,
    /// Set when this id could not be resolved (the other ids still answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The response of `outline`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct OutlineResponse {
    /// One entry per requested id, in order.
    pub documents: Vec<OutlineDoc>,
}

fn run(linkly: &Linkly, args: Value) -> Result<Rendered> {
    let params: OutlineParams = parse_args(args)?;
    let format = params.output_format.unwrap_or_default();
    let response = linkly.outline(params)?;
    render(format, &response, OutlineResponse::to_markdown)
}

/// How a node is shown.
enum Show {
    /// The node and every node below it.
    All,
    /// Down to this depth (1 = the top level).
    Depth(usize),
}

fn node_lines(
    nodes: &[OutlineNode],
    prefix: &str,
    depth: usize,
    show: &dyn Fn(&str, usize) -> Show,
    out: &mut Vec<String>,
) {
    for (i, n) in nodes.iter().enumerate() {
        let id = if prefix.is_empty() {
            format!("{}", i + 1)
        } else {
            format!("{prefix}.{}", i + 1)
        };
        let indent = "  ".repeat(depth - 1);
        let mode = show(&id, depth);
        let descend = match mode {
            Show::All => true,
            Show::Depth(max) => depth < max,
        };
        let hidden = if !descend && !n.children.is_empty() {
            let below = n.count() - 1;
            format!(" (+{below} collapsed; expand \"{id}\")")
        } else {
            String::new()
        };
        out.push(format!(
            "{indent}[{id}] {} [L{}-{}, {} lines]{hidden}",
            one_line(&n.title),
            n.start_line,
            n.end_line,
            n.line_count()
        ));
        for d in &n.detail {
            out.push(format!("{indent}    {}", one_line(d)));
        }
        if descend {
            match mode {
                Show::All => node_lines(&n.children, &id, depth + 1, &|_, _| Show::All, out),
                Show::Depth(_) => node_lines(&n.children, &id, depth + 1, show, out),
            }
        }
    }
}

fn count_to_depth(nodes: &[OutlineNode], depth: usize) -> usize {
    if depth == 0 {
        return 0;
    }
    nodes
        .iter()
        .map(|n| 1 + count_to_depth(&n.children, depth - 1))
        .sum()
}

fn max_depth(nodes: &[OutlineNode]) -> usize {
    nodes
        .iter()
        .map(|n| 1 + max_depth(&n.children))
        .max()
        .unwrap_or(0)
}

/// Renders an outline as text, honouring `expand` or the size budget.
fn outline_text(nodes: &[OutlineNode], expand: Option<&[String]>) -> String {
    let mut out = Vec::new();
    match expand {
        Some(ids) if !ids.is_empty() => {
            let ids: Vec<String> = ids.iter().map(|s| s.trim().to_string()).collect();
            let show = move |id: &str, _depth: usize| {
                if ids.iter().any(|e| e == id) {
                    Show::All
                } else if ids.iter().any(|e| e.starts_with(&format!("{id}."))) {
                    // An ancestor of an expanded node: show its children so the path is visible.
                    Show::Depth(usize::MAX)
                } else {
                    Show::Depth(1)
                }
            };
            node_lines(nodes, "", 1, &show, &mut out);
        }
        _ => {
            let mut depth = max_depth(nodes).max(1);
            while depth > 1 && count_to_depth(nodes, depth) > NODE_BUDGET {
                depth -= 1;
            }
            node_lines(nodes, "", 1, &|_, _| Show::Depth(depth), &mut out);
            if out.len() > NODE_BUDGET {
                let left = out.len() - NODE_BUDGET;
                out.truncate(NODE_BUDGET);
                out.push(format!(
                    "… {left} more nodes not shown; read by line ranges or expand a node"
                ));
            }
        }
    }
    out.join("\n")
}

fn no_outline_reason(rec: &DocRecord) -> Option<String> {
    if let Some(skip) = &rec.skip_reason {
        return Some(format!(
            "content unreadable ({skip}); the document is indexed by name only"
        ));
    }
    if !rec.outline.is_empty() {
        return None;
    }
    Some(match rec.doc_type {
        DocType::Txt => "plain text has no headings; use grep or read".into(),
        _ => "the document has no headings or sections; use grep or read".into(),
    })
}

impl Linkly {
    /// Runs `outline`.
    pub fn outline(&self, p: OutlineParams) -> Result<OutlineResponse> {
        check_count("doc_ids", p.doc_ids.len(), 1, 20, "ids")?;
        let mut documents = Vec::new();
        let mut outlines: Vec<(String, Vec<OutlineNode>)> = Vec::new();
        let mut found = 0;
        for raw in &p.doc_ids {
            let id = parse_doc_id(self, "doc_ids", raw)?;
            let Some(rec) = self.fresh_doc(id)? else {
                documents.push(OutlineDoc {
                    doc_id: raw.clone(),
                    title: None,
                    path: None,
                    doc_type: None,
                    word_count: 0,
                    total_lines: 0,
                    has_outline: false,
                    outline_text: String::new(),
                    no_outline_reason: None,
                    error: Some(ToolError::doc_not_found(raw).message),
                });
                continue;
            };
            found += 1;
            let reason = no_outline_reason(&rec);
            if reason.is_none() {
                outlines.push((self.doc_address(rec.id), rec.outline.clone()));
            }
            documents.push(OutlineDoc {
                doc_id: self.doc_address(rec.id),
                title: Some(rec.display_title()),
                path: Some(rec.path.clone()),
                doc_type: Some(rec.doc_type.as_str().into()),
                word_count: rec.word_count,
                total_lines: rec.total_lines,
                has_outline: reason.is_none(),
                outline_text: if reason.is_none() {
                    outline_text(&rec.outline, p.expand.as_deref())
                } else {
                    String::new()
                },
                no_outline_reason: reason,
                error: None,
            });
        }
        if found == 0 {
            let ids = p.doc_ids.join(", ");
            return Err(ToolError::doc_not_found(&ids));
        }
        if let Some(expand) = p.expand.as_deref().filter(|e| !e.is_empty()) {
            check_expand(expand, &outlines)?;
        }
        Ok(OutlineResponse { documents })
    }
}

/// Whether an outline holds a node of this id (`2`, `3.1`).
fn has_node(nodes: &[OutlineNode], id: &str) -> bool {
    let mut level = nodes;
    for part in id.split('.') {
        let Some(node) = part
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| level.get(i))
        else {
            return false;
        };
        level = &node.children;
    }
    true
}

/// Refuses `expand` ids that name no node of any requested outline (silently collapsing
/// everything would hide the mistake), listing the valid top-level ids.
fn check_expand(expand: &[String], outlines: &[(String, Vec<OutlineNode>)]) -> Result<()> {
    if outlines.is_empty() {
        return Ok(());
    }
    let unknown: Vec<&str> = expand
        .iter()
        .map(|e| e.trim())
        .filter(|e| !outlines.iter().any(|(_, nodes)| has_node(nodes, e)))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let valid: Vec<String> = outlines
        .iter()
        .map(|(id, nodes)| {
            let top = match nodes.len() {
                0 => "none".to_string(),
                1 => "\"1\"".to_string(),
                n => format!("\"1\"…\"{n}\""),
            };
            format!("{id}: {top}")
        })
        .collect();
    Err(ToolError::invalid(format!(
        "expand names node id(s) that no requested outline has: {}. Top-level ids are {} (deeper ids add .N, like \"2.1\"); call outline without expand to see them all",
        unknown
            .iter()
            .map(|u| format!("{u:?}"))
            .collect::<Vec<_>>()
            .join(", "),
        valid.join("; ")
    )))
}

impl OutlineResponse {
    /// The Markdown form.
    pub fn to_markdown(&self) -> String {
        let mut out = String::from("# Outline\n");
        for d in &self.documents {
            if let Some(err) = &d.error {
                out.push_str(&format!("\n## {}\n\nError: {err}\n", d.doc_id));
                continue;
            }
            out.push_str(&format!(
                "\n## {} ({})\n- path: {}\n- type: {} · words: {} · lines: {}\n\n",
                one_line(d.title.as_deref().unwrap_or("")),
                d.doc_id,
                crate::render::shown(d.path.as_deref().unwrap_or("")),
                d.doc_type.as_deref().unwrap_or(""),
                thousands(d.word_count),
                thousands(d.total_lines as u64)
            ));
            match &d.no_outline_reason {
                Some(reason) => out.push_str(&format!("No outline: {reason}.\n")),
                None => {
                    out.push_str(&d.outline_text);
                    out.push('\n');
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> Vec<OutlineNode> {
        let mut a = OutlineNode::new("A", 1, 10);
        let mut a1 = OutlineNode::new("A1", 2, 5);
        a1.children.push(OutlineNode::new("A1x", 3, 5));
        a.children.push(a1);
        a.children.push(OutlineNode::new("A2", 6, 10));
        vec![a, OutlineNode::new("B", 11, 12)]
    }

    #[test]
    fn full_outline() {
        assert_eq!(
            outline_text(&tree(), None),
            "[1] A [L1-10, 10 lines]\n  [1.1] A1 [L2-5, 4 lines]\n    [1.1.1] A1x [L3-5, 3 lines]\n  [1.2] A2 [L6-10, 5 lines]\n[2] B [L11-12, 2 lines]"
        );
    }

    #[test]
    fn expand_collapses_others() {
        let text = outline_text(&tree(), Some(&["2".into()]));
        assert_eq!(
            text,
            "[1] A [L1-10, 10 lines] (+3 collapsed; expand \"1\")\n[2] B [L11-12, 2 lines]"
        );
        let text = outline_text(&tree(), Some(&["1.1".into()]));
        assert!(text.contains("[1.1.1] A1x"), "{text}");
    }

    #[test]
    fn unknown_expand_ids_are_refused() {
        let outlines = vec![("local://1".to_string(), tree())];
        for ok in ["1", "2", "1.1", "1.1.1", "1.2"] {
            assert!(check_expand(&[ok.into()], &outlines).is_ok(), "{ok}");
        }
        let err = check_expand(
            &["1".into(), "3".into(), "1.3".into(), "x".into()],
            &outlines,
        )
        .unwrap_err();
        assert_eq!(err.code, linkly_core::ErrorCode::InvalidArgument);
        assert!(
            err.message.starts_with("expand names node id(s) that no requested outline has: \"3\", \"1.3\", \"x\". Top-level ids are local://1: \"1\"…\"2\""),
            "{}",
            err.message
        );
    }
}
