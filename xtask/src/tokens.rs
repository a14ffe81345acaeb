//! `cargo xtask tokens`: what Linkly costs an agent, in tokens (tiktoken's `cl100k_base`).
//!
//! (a) The `tools/list` answer as an MCP client receives it (each tool's JSON: name, title,
//! description, input schema, annotations) and the server instructions; (b) a typical answer
//! of each tool, in Markdown and JSON, over an index of the repository's own `testdata/corpus`
//! built in a temporary data directory (keyword-only: no embedding model, no OCR).
//!
//! The table goes to stdout; `docs/benchmarks.md` ("Tokens per answer") keeps it.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use linkly_core::{Config, DataDir, Library, OcrConfig};
use linkly_index::Index;
use linkly_tools::Linkly;
use serde_json::{Value, json};
use tiktoken_rs::CoreBPE;

/// The most tokens the `tools/list` answer (all nine tools) may take: 4,512 with the seeds'
/// decision guidance (3,818 before it), plus about 10% for what comes next. A client sends it
/// with every conversation, so a description that grows must earn its place or replace words
/// (`docs/tool-descriptions.md`, `docs/benchmarks.md` "Tokens per answer").
pub(crate) const TOOLS_LIST_BUDGET: usize = 5_000;

/// The most tokens the server instructions may take (306 now, 138 before the discovery tools
/// and notes were named).
pub(crate) const INSTRUCTIONS_BUDGET: usize = 350;

/// The tokenizer: cl100k_base, its ranks embedded in `tiktoken-rs` (no download).
fn bpe() -> anyhow::Result<CoreBPE> {
    tiktoken_rs::cl100k_base().context("loading cl100k_base")
}

/// Tokens of a text.
fn count(bpe: &CoreBPE, text: &str) -> usize {
    bpe.encode_ordinary(text).len()
}

/// Tokens of each tool's `tools/list` entry (compact JSON, as it goes over the wire), in
/// registry order.
pub(crate) fn tools_list_tokens(bpe: &CoreBPE) -> anyhow::Result<Vec<(String, usize)>> {
    linkly_mcp::LinklyServer::tools()
        .iter()
        .map(|tool| {
            let text = serde_json::to_string(tool)?;
            Ok((tool.name.to_string(), count(bpe, &text)))
        })
        .collect()
}

/// Tokens of the whole `tools/list` result (`{"tools":[...]}`).
pub(crate) fn tools_list_total(bpe: &CoreBPE) -> anyhow::Result<usize> {
    let text = serde_json::to_string(&json!({ "tools": linkly_mcp::LinklyServer::tools() }))?;
    Ok(count(bpe, &text))
}

/// `cargo xtask tokens`.
pub(crate) fn run(_args: &[String]) -> anyhow::Result<()> {
    let bpe = bpe()?;
    println!("## tools/list and instructions (cl100k_base tokens)\n");
    println!("| tool | tokens (description + schema) |");
    println!("|---|---:|");
    for (name, n) in tools_list_tokens(&bpe)? {
        println!("| {name} | {n} |");
    }
    println!(
        "| **tools/list, whole answer** (budget {TOOLS_LIST_BUDGET}) | **{}** |",
        tools_list_total(&bpe)?
    );
    println!(
        "| server instructions (budget {INSTRUCTIONS_BUDGET}) | {} |",
        count(&bpe, linkly_mcp::INSTRUCTIONS)
    );

    let tmp = tempfile::tempdir()?;
    let linkly = corpus_index(&crate::root().join("testdata/corpus"), tmp.path())?;
    println!("\n## A typical answer per tool (cl100k_base tokens)\n");
    println!("| tool | call | markdown | json |");
    println!("|---|---|---:|---:|");
    for (tool, label, args) in typical_calls(&linkly)? {
        let (md, js) = if takes_format(tool) {
            let md = answer(&linkly, tool, &args, Some("markdown"))?;
            let js = answer(&linkly, tool, &args, Some("json"))?;
            (count(&bpe, &md).to_string(), count(&bpe, &js).to_string())
        } else {
            // One format only (list_libraries: Markdown, note_save: JSON).
            let text = answer(&linkly, tool, &args, None)?;
            let n = count(&bpe, &text).to_string();
            if serde_json::from_str::<Value>(&text).is_ok() {
                ("—".to_string(), n)
            } else {
                (n, "—".to_string())
            }
        };
        println!("| {tool} | {label} | {md} | {js} |");
    }
    Ok(())
}

/// An index of `corpus` in a fresh data directory under `home`, with one library (the
/// Markdown folder) so that `list_libraries` and `explore` have something to show.
fn corpus_index(corpus: &Path, home: &Path) -> anyhow::Result<Linkly> {
    if !corpus.is_dir() {
        bail!("{} is missing", corpus.display());
    }
    let data = DataDir::new(home.join("home"));
    let corpus = fs_err::canonicalize(corpus)?;
    let library = Library {
        id: 1,
        name: "Web docs".into(),
        description: "Vue and React documentation pages".into(),
        folders: vec![corpus.join("md")],
        tags: Vec::new(),
    };
    let config = Config {
        folders: vec![corpus.clone()],
        libraries: vec![library],
        ocr: OcrConfig {
            enabled: false,
            ..OcrConfig::default()
        },
        ..Config::default()
    };
    let index = Index::open(&data.index_dir())?;
    let linkly = Linkly::new(Arc::new(index), data, config);
    linkly.index_now(&mut |_| {})?;
    Ok(linkly)
}

/// The calls measured: (tool, what the call is, arguments without `output_format`).
fn typical_calls(linkly: &Linkly) -> anyhow::Result<Vec<(&'static str, &'static str, Value)>> {
    let doc = "vuedocs-fr-component-basics.md";
    let found = call(
        linkly,
        "search",
        json!({"query": "composants props", "output_format": "json"}),
    )?;
    let found: Value = serde_json::from_str(&found)?;
    let doc_id = found["results"]
        .as_array()
        .and_then(|r| {
            r.iter()
                .find(|d| d["path"].as_str().is_some_and(|p| p.ends_with(doc)))
        })
        .and_then(|d| d["doc_id"].as_str())
        .with_context(|| format!("search did not find {doc}"))?
        .to_string();
    let md_dir = crate::root().join("testdata/corpus/md");
    Ok(vec![
        (
            "search",
            "`composants props`, default limit 20",
            json!({"query": "composants props"}),
        ),
        ("outline", "one Markdown page", json!({"doc_ids": [doc_id]})),
        (
            "grep",
            "`props`, 3 lines of context",
            json!({"pattern": "props", "doc_id": doc_id}),
        ),
        (
            "read",
            "40 lines",
            json!({"doc_id": doc_id, "offset": 1, "limit": 40}),
        ),
        ("list_libraries", "one library", json!({})),
        ("explore", "whole index", json!({})),
        ("find_paths", "`md`", json!({"patterns": ["md"]})),
        (
            "list",
            "a folder of 7 files",
            json!({"scope": "folder", "path": md_dir.display().to_string()}),
        ),
        (
            "note_save",
            "create a 3-line note",
            json!({"mode": "create", "content": "**Vue props**\n\nProps pass data from parent to child; see the component basics page.\n", "tags": ["vue"]}),
        ),
    ])
}

/// One call's answer text in a format; a failure is an error of the whole run.
fn answer(
    linkly: &Linkly,
    tool: &str,
    args: &Value,
    format: Option<&str>,
) -> anyhow::Result<String> {
    let mut args = args.clone();
    if let Some(format) = format {
        args["output_format"] = json!(format);
    }
    call(linkly, tool, args)
}

/// Whether a tool takes `output_format` (two of the nine answer in one format only).
fn takes_format(tool: &str) -> bool {
    linkly_tools::TOOLS
        .iter()
        .find(|t| t.name == tool)
        .is_some_and(|t| {
            (t.input_schema)()["properties"]
                .get("output_format")
                .is_some()
        })
}

fn call(linkly: &Linkly, tool: &str, args: Value) -> anyhow::Result<String> {
    let out = linkly.call(tool, args)?;
    if out.is_error {
        bail!("{tool} failed: {}", out.text);
    }
    Ok(out.text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tools' descriptions and schemas stay within the stated budget: a description that
    /// grows past it must be shortened, or the budget raised on purpose (in docs/benchmarks.md).
    #[test]
    fn tools_list_within_budget() {
        let bpe = bpe().unwrap();
        let total = tools_list_total(&bpe).unwrap();
        assert!(
            total <= TOOLS_LIST_BUDGET,
            "tools/list is {total} tokens, over the budget of {TOOLS_LIST_BUDGET}"
        );
        let per_tool = tools_list_tokens(&bpe).unwrap();
        assert_eq!(per_tool.len(), 9);
        assert!(per_tool.iter().all(|(_, n)| *n > 50), "{per_tool:?}");
        let instructions = count(&bpe, linkly_mcp::INSTRUCTIONS);
        assert!(
            instructions <= INSTRUCTIONS_BUDGET,
            "the server instructions are {instructions} tokens, over {INSTRUCTIONS_BUDGET}"
        );
    }

    /// The tokenizer is the real cl100k_base, not an estimate.
    #[test]
    fn counts_with_cl100k() {
        let bpe = bpe().unwrap();
        assert_eq!(count(&bpe, "hello world"), 2);
        assert_eq!(
            bpe.encode_ordinary("tiktoken is great!"),
            vec![83, 1609, 5963, 374, 2294, 0]
        );
    }
}
