//! A tool's answer as MCP carries it, in one place for every server and client of the
//! workspace: a [`ToolOutput`] becomes a `tools/call` result (its text, `isError`, and what a
//! finding tool counted in `_meta`), and such a result becomes a [`ToolOutput`] again.

use linkly_tools::ToolOutput;
use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde_json::Value;

/// The `_meta` key of a result that carries [`ToolOutput::matched`].
pub const MATCHED_META: &str = "linkly/matched";

/// The `tools/call` result of a tool's answer.
pub fn call_result(output: ToolOutput) -> CallToolResult {
    let content = vec![ContentBlock::text(output.text)];
    let mut result = if output.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    if let Some(n) = output.matched {
        let mut meta = serde_json::Map::new();
        meta.insert(MATCHED_META.into(), Value::from(n));
        result.meta = Some(MetaObject(meta));
    }
    result
}

/// A tool's answer from its `tools/call` result: the text blocks joined by line breaks.
pub fn tool_output(result: &CallToolResult) -> ToolOutput {
    let text = result
        .content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let matched = result
        .meta
        .as_ref()
        .and_then(|m| m.0.get(MATCHED_META))
        .and_then(Value::as_u64);
    let output = if result.is_error.unwrap_or(false) {
        ToolOutput::failure(text)
    } else {
        ToolOutput::success(text)
    };
    output.with_matched(matched)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_survives_the_round_trip() {
        for output in [
            ToolOutput::success("# Search Results").with_matched(Some(3)),
            ToolOutput::success("# Outline"),
            ToolOutput::failure("[INVALID_ARGUMENT] limit must be between 1 and 50 (got 80)"),
        ] {
            let result = call_result(output.clone());
            let wire: CallToolResult =
                serde_json::from_value(serde_json::to_value(&result).unwrap()).unwrap();
            assert_eq!(tool_output(&wire), output);
        }
    }
}
