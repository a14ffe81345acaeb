//! One tool call from the command line: the tool's own params type in, the answer printed, the
//! outcome (found, nothing matched, failed) out.
//!
//! The params go to the tool as they are (embedded or over MCP): the tool validates them and
//! its errors, which name the parameter, are what the user sees. Whether something matched is
//! the count the answer carries (`ToolOutput::matched`: `total`, `total_matches`, the
//! folders), never read from its Markdown.

use std::io::BufRead;
use std::process::ExitCode;

use anyhow::bail;
use linkly_core::{DataDir, DocType};
use linkly_tools::{
    ExploreParams, FindPathsParams, GrepParams, ListLibrariesParams, ListParams, NoteSaveParams,
    OutlineParams, OutputFormat, ReadParams, SearchParams, ToolOutput,
};
use serde::Serialize;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::Value;

use crate::backend::{self, Backend};
use crate::output::{Outcome, Printer};

/// A tool's params type as the command line calls it.
pub(crate) trait ToolCall: Serialize {
    /// The tool's name.
    const NAME: &'static str;
    /// Asks for JSON (`true`) or Markdown; a tool without `output_format` ignores it.
    fn set_json(&mut self, _json: bool) {}
    /// True for the tools that find things (search, grep, find_paths, list): their JSON answer
    /// counts what matched.
    const FINDS: bool = false;
    /// What a successful JSON answer says matched, for tools that find things.
    fn matched(_answer: &str) -> Option<u64> {
        None
    }
}

/// The count of a JSON answer, typed.
fn count<T: DeserializeOwned>(answer: &str, get: impl FnOnce(T) -> u64) -> Option<u64> {
    serde_json::from_str::<T>(answer).ok().map(get)
}

#[derive(serde::Deserialize)]
struct Total {
    total: u64,
}

#[derive(serde::Deserialize)]
struct TotalMatches {
    total_matches: u64,
}

#[derive(serde::Deserialize)]
struct Directories {
    directories: Vec<IgnoredAny>,
}

/// `Some(Json)` when JSON is wanted, else the tool's default (Markdown).
fn format(json: bool) -> Option<OutputFormat> {
    json.then_some(OutputFormat::Json)
}

impl ToolCall for SearchParams {
    const NAME: &'static str = "search";
    const FINDS: bool = true;
    fn set_json(&mut self, json: bool) {
        self.output_format = format(json);
    }
    fn matched(answer: &str) -> Option<u64> {
        count(answer, |t: Total| t.total)
    }
}

impl ToolCall for OutlineParams {
    const NAME: &'static str = "outline";
    fn set_json(&mut self, json: bool) {
        self.output_format = format(json);
    }
}

impl ToolCall for GrepParams {
    const NAME: &'static str = "grep";
    const FINDS: bool = true;
    fn set_json(&mut self, json: bool) {
        self.output_format = format(json);
    }
    fn matched(answer: &str) -> Option<u64> {
        count(answer, |t: TotalMatches| t.total_matches)
    }
}

impl ToolCall for ReadParams {
    const NAME: &'static str = "read";
    fn set_json(&mut self, json: bool) {
        self.output_format = format(json);
    }
}

/// `list_libraries` takes no `output_format`: `--json` wraps its Markdown as `content`.
impl ToolCall for ListLibrariesParams {
    const NAME: &'static str = "list_libraries";
}

impl ToolCall for ExploreParams {
    const NAME: &'static str = "explore";
    fn set_json(&mut self, json: bool) {
        self.output_format = format(json);
    }
}

impl ToolCall for FindPathsParams {
    const NAME: &'static str = "find_paths";
    const FINDS: bool = true;
    fn set_json(&mut self, json: bool) {
        self.output_format = format(json);
    }
    fn matched(answer: &str) -> Option<u64> {
        count(answer, |d: Directories| d.directories.len() as u64)
    }
}

impl ToolCall for ListParams {
    const NAME: &'static str = "list";
    const FINDS: bool = true;
    /// `list` always says which format it wants (its default differs by scope).
    fn set_json(&mut self, json: bool) {
        self.output_format = Some(if json {
            OutputFormat::Json
        } else {
            OutputFormat::Markdown
        });
    }
    /// The total, not the page: an empty page past the end still found something.
    fn matched(answer: &str) -> Option<u64> {
        count(answer, |t: Total| t.total)
    }
}

/// `note_save` takes no `output_format`: its answer is always JSON.
impl ToolCall for NoteSaveParams {
    const NAME: &'static str = "note_save";
}

/// Why a call gave no answer to print.
#[derive(Debug)]
pub(crate) enum CallError {
    /// The tool refused: `[CODE] message`.
    Tool(String),
    /// The call did not reach the tool (unknown tool, connection).
    Call(String),
}

impl CallError {
    /// The message shown on its own (`Tool error: [CODE] …`).
    fn shown(&self) -> String {
        match self {
            CallError::Tool(m) => format!("Tool error: {m}"),
            CallError::Call(m) => m.clone(),
        }
    }

    /// The message inside a list of per-document failures.
    fn bare(&self) -> &str {
        match self {
            CallError::Tool(m) | CallError::Call(m) => m,
        }
    }
}

/// Calls a tool, prints its answer, and says whether it found something: a finding tool's
/// answer carries its count in every format (`ToolOutput::matched`), so the tool is called
/// once. A JSON answer without it (a server of an older version) is counted from its fields.
pub(crate) fn call<P: ToolCall + Clone>(
    backend: &Backend,
    printer: Printer,
    params: &P,
) -> Result<Outcome, CallError> {
    let answer = send(backend, params, printer.json)?;
    match printer.success(&answer.text) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(Outcome::Found),
        Err(e) => return Err(CallError::Call(e.to_string())),
    }
    if !printer.exit_code || !P::FINDS {
        return Ok(Outcome::Found);
    }
    let matched = answer
        .matched
        .or_else(|| printer.json.then(|| P::matched(&answer.text)).flatten());
    Ok(match matched {
        Some(0) => Outcome::NothingMatched,
        _ => Outcome::Found,
    })
}

/// Sends one call in the format asked for; the tool's answer on success.
fn send<P: ToolCall + Clone>(
    backend: &Backend,
    params: &P,
    json: bool,
) -> Result<ToolOutput, CallError> {
    let mut params = params.clone();
    params.set_json(json);
    let out = backend.call(P::NAME, &params).map_err(CallError::Call)?;
    if out.is_error {
        return Err(CallError::Tool(tool_error_message(&out.text)));
    }
    Ok(out)
}

/// `linkly call TOOL [ARGUMENTS]`: any tool of the registry by name, its arguments as given
/// (the tool checks them, and its refusal names the parameter); the answer as the tool gives
/// it. Nothing here names a tool: a tool added to the registry is callable at once.
pub(crate) fn by_name(
    data: &DataDir,
    a: crate::args::CallArgs,
    printer: Printer,
) -> anyhow::Result<ExitCode> {
    let raw = match a.arguments.as_deref() {
        None => "{}".to_string(),
        Some("-") => std::io::read_to_string(std::io::stdin())?,
        Some(s) => s.to_string(),
    };
    let args: Value = serde_json::from_str(&raw).map_err(|e| {
        anyhow::anyhow!(
            "the arguments of {} are not JSON ({e}): pass one object, such as '{{\"query\": \"budget\"}}'",
            a.tool
        )
    })?;
    if !args.is_object() {
        bail!(
            "the arguments of {} must be one JSON object of named parameters (got {raw})",
            a.tool
        );
    }
    // A call may write (note_save): the backend is dropped, not left.
    let backend = backend::open(data)?;
    let outcome = match backend.call(&a.tool, &args) {
        Ok(out) if !out.is_error => match printer.success(&out.text) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                printer.error(&e.to_string());
                Outcome::Failed
            }
            _ => match out.matched {
                Some(0) if printer.exit_code => Outcome::NothingMatched,
                _ => Outcome::Found,
            },
        },
        Ok(out) => {
            printer.error(&CallError::Tool(tool_error_message(&out.text)).shown());
            Outcome::Failed
        }
        Err(e) => {
            printer.error(&e);
            Outcome::Failed
        }
    };
    Ok(printer.exit(outcome))
}

/// Calls a tool once and prints its answer or its error.
pub(crate) fn call_once<P: ToolCall + Clone>(
    backend: &Backend,
    printer: Printer,
    params: &P,
) -> Outcome {
    call(backend, printer, params).unwrap_or_else(|e| {
        printer.error(&e.shown());
        Outcome::Failed
    })
}

/// A read-only command that is one tool call: opens the backend for `data`, calls the tool
/// once, prints its answer or its error and leaves the backend ([`Backend::leave`]); its exit
/// code.
pub(crate) fn read_once<P: ToolCall + Clone>(
    data: &DataDir,
    printer: Printer,
    params: &P,
) -> anyhow::Result<ExitCode> {
    let backend = backend::open(data)?;
    let outcome = call_once(&backend, printer, params);
    backend.leave();
    Ok(printer.exit(outcome))
}

/// A read-only command that calls a one-document tool for each id ([`per_id`]), like
/// [`read_once`].
pub(crate) fn read_per_id<P: ToolCall + Clone>(
    data: &DataDir,
    printer: Printer,
    verb: &str,
    ids: &[String],
    build: impl Fn(&str) -> P,
) -> anyhow::Result<ExitCode> {
    let backend = backend::open(data)?;
    let outcome = per_id(&backend, printer, verb, ids, build);
    backend.leave();
    Ok(printer.exit(outcome))
}

/// Calls a one-document tool for each id: successes printed, failures collected. `verb` names
/// the action in the messages (`grep`, `read`).
pub(crate) fn per_id<P: ToolCall + Clone>(
    backend: &Backend,
    printer: Printer,
    verb: &str,
    ids: &[String],
    build: impl Fn(&str) -> P,
) -> Outcome {
    let mut outcome: Option<Outcome> = None;
    let mut failures: Vec<(String, CallError)> = Vec::new();
    for id in ids {
        match call(backend, printer, &build(id)) {
            Ok(o) => outcome = Some(outcome.map_or(o, |prev| prev.merge(o))),
            Err(e) => failures.push((id.clone(), e)),
        }
    }
    let listed = || {
        failures
            .iter()
            .map(|(id, e)| format!("{id}: {}", e.bare()))
            .collect::<Vec<_>>()
            .join("; ")
    };
    match (&outcome, failures.first()) {
        (_, None) => outcome.unwrap_or(Outcome::Found),
        (_, Some((_, only))) if ids.len() == 1 => {
            printer.error(&only.shown());
            Outcome::Failed
        }
        (None, Some(_)) => {
            printer.error(&format!(
                "Could not {verb} any of the {} documents: {}",
                ids.len(),
                listed()
            ));
            Outcome::Failed
        }
        (Some(found), Some(_)) => {
            printer.warn(&format!(
                "{} of {} documents could not be {}: {}",
                failures.len(),
                ids.len(),
                if verb == "grep" { "searched" } else { "read" },
                listed()
            ));
            *found
        }
    }
}

/// `[CODE] message` from a tool's error text (JSON or Markdown).
pub(crate) fn tool_error_message(text: &str) -> String {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| {
            let e = v.get("error")?;
            Some(format!(
                "[{}] {}",
                e.get("code")?.as_str()?,
                e.get("message")?.as_str()?
            ))
        })
        .unwrap_or_else(|| text.to_string())
}

/// Reads ids, replacing a lone `-` with the ids on stdin (one per line).
pub(crate) fn expand_ids(ids: Vec<String>) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for id in ids {
        if id == "-" {
            for line in std::io::stdin().lock().lines() {
                let line = line?;
                let t = line.trim();
                if !t.is_empty() {
                    out.push(t.to_string());
                }
            }
        } else {
            out.push(id);
        }
    }
    if out.is_empty() {
        bail!("no document ids given");
    }
    Ok(out)
}

/// A comma-separated flag as a list (`pdf, md` → `["pdf", "md"]`, blanks dropped); the tool
/// checks the items.
pub(crate) fn comma_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

/// A `--type` list as the tools' document types. An unknown type is the tools' own refusal
/// (`[INVALID_ARGUMENT] doc_types has unknown type(s) …`, every unknown one named), printed as
/// a tool's error is; `Err` is the exit code to end with then.
pub(crate) fn doc_types(
    list: Option<&str>,
    printer: Printer,
) -> Result<Option<Vec<DocType>>, ExitCode> {
    let Some(list) = list else {
        return Ok(None);
    };
    linkly_tools::parse_doc_types("doc_types", &comma_list(list))
        .map(Some)
        .map_err(|e| {
            printer.error(&CallError::Tool(e.to_string()).shown());
            printer.exit(Outcome::Failed)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_come_from_the_typed_json_answer() {
        assert_eq!(
            SearchParams::matched(r#"{"total":0,"results":[]}"#),
            Some(0)
        );
        assert_eq!(
            SearchParams::matched(r#"{"total":5,"results":[]}"#),
            Some(5)
        );
        assert_eq!(GrepParams::matched(r#"{"total_matches":3}"#), Some(3));
        assert_eq!(
            FindPathsParams::matched(r#"{"directories":[{"path":"/a"}]}"#),
            Some(1)
        );
        assert_eq!(ListParams::matched(r#"{"total":12,"items":[]}"#), Some(12));
        // Markdown, or an answer without the count, is never read as "nothing matched".
        assert_eq!(SearchParams::matched("No results found for \"x\""), None);
        assert_eq!(ReadParams::matched(r#"{"total":0}"#), None);
    }

    #[test]
    fn params_travel_without_absent_options() {
        let p = SearchParams {
            query: "budget".into(),
            limit: Some(5),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            serde_json::json!({"query": "budget", "limit": 5})
        );
    }
}
