//! `grep`: a regular expression over one document's extracted lines, with context.

use linkly_core::DocType;
use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::error::check_range;
use crate::render::{one_line, thousands};
use crate::tools::kit::{
    Reach, Rendered, ToolSpec, find_doc, parse_args, parse_doc_id, readable_content, render,
    schema_of,
};
use crate::{Linkly, OutputFormat, Result, ToolError};

/// Shown characters of one line; longer lines are cut with `…`.
const LINE_CHARS: usize = 1000;

pub(crate) const SPEC: ToolSpec = ToolSpec {
    name: "grep",
    title: "Grep a document",
    description: "Find the lines of one document matching a regular expression (Rust regex: no \
        look-around or back-references), with context. Use it after search to locate exact names, \
        dates, terms, ids or patterns (emails, numbers), and in documents with has_outline=false; \
        then read with offset for the whole passage. Several documents: one call each. Matching \
        lines are marked with `>` after the line number, the numbers read uses. output_mode=count \
        previews how many match; paginate with offset. Nothing found: the answer's retry_with \
        says whether case_insensitive=true or fuzzy_whitespace=true (default on for PDF: stray \
        spaces and line breaks inside the matched text) would match; else try a shorter \
        pattern.",
    read_only: true,
    input_schema: schema_of::<GrepParams>,
    output_schema: Some(schema_of::<GrepResponse>),
    reach: Reach::Documents("doc_id"),
    idempotent: true,
    run,
};

crate::choice::choice! {
    /// What `grep` answers (`output_mode`).
    pub enum GrepMode {
        /// The matching lines with their context.
        Content = "content",
        /// The count only.
        Count = "count",
    }
}

crate::tools::kit::tool_params! {
    /// Parameters of `grep`.
    pub struct GrepParams {
        /// A Rust `regex` pattern (no look-around, no back-references).
        pub pattern: String,
        /// The document to search (`local://12`).
        #[cfg_attr(feature = "clap", arg(skip))]
        pub doc_id: String,
        /// Lines of context before and after each match.
        #[schemars(range(min = 0, max = 50), extend("default" = 3))]
        #[cfg_attr(feature = "clap", arg(short = 'C'))]
        pub context: Option<i64>,
        /// Lines before each match (overrides `context` on that side).
        #[schemars(range(min = 0, max = 50))]
        #[cfg_attr(feature = "clap", arg(short = 'B'))]
        pub before: Option<i64>,
        /// Lines after each match (overrides `context` on that side).
        #[schemars(range(min = 0, max = 50))]
        #[cfg_attr(feature = "clap", arg(short = 'A'))]
        pub after: Option<i64>,
        /// Match case-insensitively.
        #[schemars(extend("default" = false))]
        #[cfg_attr(feature = "clap", arg(short = 'i', visible_alias = "ignore-case"))]
        pub case_insensitive: Option<bool>,
        /// `content` (matching lines with context) or `count` (the count only).
        #[schemars(extend("default" = "content"))]
        #[cfg_attr(feature = "clap", arg(visible_alias = "mode"))]
        pub output_mode: Option<GrepMode>,
        /// Matching lines returned.
        #[schemars(range(min = 1, max = 100), extend("default" = 20))]
        pub limit: Option<i64>,
        /// Matching lines skipped (pagination).
        #[schemars(range(min = 0), extend("default" = 0))]
        pub offset: Option<i64>,
        /// Tolerate spurious spaces and line breaks inside the matched text. Default: on for PDF,
        /// off otherwise.
        #[cfg_attr(feature = "clap", arg(require_equals = false))]
        pub fuzzy_whitespace: Option<bool>,
        /// The answer's format.
        #[schemars(extend("default" = "markdown"))]
        pub output_format: Option<OutputFormat>,
    }
}

/// One matching line with its context.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct GrepMatch {
    /// The 1-based line number.
    pub line_number: u32,
    /// The line.
    pub content: String,
    /// `[line_number, text]` pairs before the match.
    pub context_before: Vec<(u32, String)>,
    /// `[line_number, text]` pairs after the match.
    pub context_after: Vec<(u32, String)>,
}

/// The response of `grep`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct GrepResponse {
    /// The pattern as given.
    pub pattern: String,
    /// The document.
    pub doc_id: String,
    /// The document's title.
    pub title: String,
    /// Matching lines in the whole document.
    pub total_matches: usize,
    /// Matching lines in this page.
    pub returned: usize,
    /// Whether more matches follow (continue with `next_offset`).
    pub has_more: bool,
    /// The offset of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
    /// The page of matches (empty in count mode).
    pub matches: Vec<GrepMatch>,
    /// With no match: what was searched (type, lines, the options in force).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub searched: Option<Value>,
    /// With no match: arguments to add to the same call that do find matches, with how many
    /// (`{"case_insensitive": true, "total_matches": 4}`), when some do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_with: Option<Value>,
    /// With no match: why, and what to try next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    #[serde(skip)]
    count_only: bool,
    #[serde(skip)]
    offset: usize,
}

fn run(linkly: &Linkly, args: Value) -> Result<Rendered> {
    let params: GrepParams = parse_args(args)?;
    let format = params.output_format.unwrap_or_default();
    let response = linkly.grep(params)?;
    Ok(render(format, &response, GrepResponse::to_markdown)?
        .counting(response.total_matches as u64))
}

/// The 0-based indexes of the lines that match, in order.
fn matching_lines(lines: &[&str], re: &Regex, fuzzy: Option<&Regex>) -> Vec<usize> {
    match fuzzy {
        None => (0..lines.len())
            .filter(|&i| re.is_match(lines[i]))
            .collect(),
        Some(squeezed) => {
            // A line the pattern matches as written matches (so `\b` and spaces in the
            // pattern keep their meaning); so does the line where a match starts in the text
            // with all whitespace removed, which catches words split by stray spaces and
            // line breaks.
            let mut text = String::new();
            let mut line_of = Vec::new();
            for (i, line) in lines.iter().enumerate() {
                for c in line.chars().filter(|c| !c.is_whitespace()) {
                    text.push(c);
                    line_of.extend(std::iter::repeat_n(i, c.len_utf8()));
                }
            }
            let mut out: Vec<usize> = squeezed
                .find_iter(&text)
                .filter(|m| !m.as_str().is_empty())
                .map(|m| line_of[m.start()])
                .chain((0..lines.len()).filter(|&i| re.is_match(lines[i])))
                .collect();
            out.sort_unstable();
            out.dedup();
            out
        }
    }
}

/// The pattern with unescaped whitespace removed, for fuzzy matching.
fn squeeze_pattern(pattern: &str) -> String {
    let mut out = String::new();
    let mut escaped = false;
    for c in pattern.chars() {
        if escaped {
            out.push(c);
            escaped = false;
        } else if c == '\\' {
            out.push(c);
            escaped = true;
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

fn cut(line: &str) -> String {
    match line.char_indices().nth(LINE_CHARS) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}

fn build_regex(pattern: &str, case_insensitive: bool) -> Result<Regex> {
    RegexBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .size_limit(10 * 1024 * 1024)
        .build()
        .map_err(|e| ToolError::invalid(format!("pattern is not a valid regular expression: {e}")))
}

impl Linkly {
    /// Runs `grep`.
    pub fn grep(&self, p: GrepParams) -> Result<GrepResponse> {
        if p.pattern.is_empty() {
            return Err(ToolError::invalid("pattern must not be empty"));
        }
        let id = parse_doc_id(self, "doc_id", &p.doc_id)?;
        let context = check_range("context", p.context.unwrap_or(3), 0, 50)?;
        let before = check_range("before", p.before.unwrap_or(context), 0, 50)? as usize;
        let after = check_range("after", p.after.unwrap_or(context), 0, 50)? as usize;
        let mode = p.output_mode.unwrap_or(GrepMode::Content);
        let limit = check_range("limit", p.limit.unwrap_or(20), 1, 100)? as usize;
        let offset = check_range("offset", p.offset.unwrap_or(0), 0, i64::MAX)? as usize;
        let case_insensitive = p.case_insensitive.unwrap_or(false);
        let re = build_regex(&p.pattern, case_insensitive)?;

        let doc = find_doc(self, &p.doc_id, id)?;
        let fuzzy = p.fuzzy_whitespace.unwrap_or(doc.doc_type == DocType::Pdf);
        let squeezed = if fuzzy {
            Some(build_regex(&squeeze_pattern(&p.pattern), case_insensitive)?)
        } else {
            None
        };
        let text = readable_content(self, &doc)?;
        let lines: Vec<&str> = if text.is_empty() {
            Vec::new()
        } else {
            text.split('\n').collect()
        };
        let hits = matching_lines(&lines, &re, squeezed.as_ref());
        let total = hits.len();
        let page: Vec<usize> = if mode == GrepMode::Count {
            Vec::new()
        } else {
            hits.iter().copied().skip(offset).take(limit).collect()
        };
        let matches = page
            .iter()
            .map(|&i| {
                let from = i.saturating_sub(before);
                let to = (i + after).min(lines.len().saturating_sub(1));
                GrepMatch {
                    line_number: i as u32 + 1,
                    content: cut(lines[i]),
                    context_before: (from..i).map(|j| (j as u32 + 1, cut(lines[j]))).collect(),
                    context_after: (i + 1..=to)
                        .filter(|&j| j > i)
                        .map(|j| (j as u32 + 1, cut(lines[j])))
                        .collect(),
                }
            })
            .collect::<Vec<_>>();
        let has_more = mode == GrepMode::Content && offset + matches.len() < total;
        let (searched, retry_with, hint) = if total == 0 {
            let (retry, hint) = no_match_hint(&p.pattern, &lines, case_insensitive, fuzzy)?;
            let searched = serde_json::json!({
                "doc_type": doc.doc_type.as_str(),
                "total_lines": lines.len(),
                "case_insensitive": case_insensitive,
                "fuzzy_whitespace": fuzzy,
            });
            (Some(searched), retry, Some(hint))
        } else {
            (None, None, None)
        };
        Ok(GrepResponse {
            pattern: p.pattern,
            doc_id: self.doc_address(doc.id),
            title: doc.display_title(),
            total_matches: total,
            returned: matches.len(),
            has_more,
            next_offset: has_more.then_some(offset + matches.len()),
            matches,
            searched,
            retry_with,
            hint,
            count_only: mode == GrepMode::Count,
            offset,
        })
    }
}

/// Why a pattern matched nothing in a document, and the options that would find it: each of
/// `case_insensitive` and `fuzzy_whitespace` that was off is tried (alone, then together).
fn no_match_hint(
    pattern: &str,
    lines: &[&str],
    case_insensitive: bool,
    fuzzy: bool,
) -> Result<(Option<Value>, String)> {
    let count = |ci: bool, fz: bool| -> Result<usize> {
        let re = build_regex(pattern, ci)?;
        let squeezed = if fz {
            Some(build_regex(&squeeze_pattern(pattern), ci)?)
        } else {
            None
        };
        Ok(matching_lines(lines, &re, squeezed.as_ref()).len())
    };
    let mut tries: Vec<(bool, bool)> = Vec::new();
    if !case_insensitive {
        tries.push((true, fuzzy));
    }
    if !fuzzy {
        tries.push((case_insensitive, true));
    }
    if !case_insensitive && !fuzzy {
        tries.push((true, true));
    }
    for (ci, fz) in tries {
        let n = count(ci, fz)?;
        if n > 0 {
            let mut args = serde_json::Map::new();
            let mut words = Vec::new();
            if ci != case_insensitive {
                args.insert("case_insensitive".into(), Value::Bool(true));
                words.push("case_insensitive=true");
            }
            if fz != fuzzy {
                args.insert("fuzzy_whitespace".into(), Value::Bool(true));
                words.push("fuzzy_whitespace=true");
            }
            args.insert("total_matches".into(), Value::from(n));
            return Ok((
                Some(Value::Object(args)),
                format!(
                    "With {} the same pattern matches {n} line{}: call grep again with it.",
                    words.join(" and "),
                    if n == 1 { "" } else { "s" }
                ),
            ));
        }
    }
    let mut hint = String::from("No line of this document matches");
    let off: Vec<&str> = [
        (!case_insensitive).then_some("case_insensitive"),
        (!fuzzy).then_some("fuzzy_whitespace"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if off.is_empty() {
        hint.push_str(", even case-insensitively with fuzzy whitespace.");
    } else {
        hint.push_str(&format!(", not even with {} on.", off.join(" or ")));
    }
    if pattern.chars().any(|c| "\\.+*?()|[]{}^$".contains(c)) {
        hint.push_str(" The pattern is a regular expression: escape `. ( ) [ ] ? * + |` to match them literally.");
    }
    hint.push_str(
        " grep looks in this one document: search finds the documents that hold the words, and \
         read shows the text as indexed.",
    );
    Ok((None, hint))
}

impl GrepResponse {
    /// The Markdown form: match lines marked `>`, overlapping context merged, groups separated
    /// by `--`.
    pub fn to_markdown(&self) -> String {
        let mut out = format!(
            "# Grep Results\n\nFound {} matches in {} ({}) for `{}`\n",
            thousands(self.total_matches as u64),
            one_line(&self.title),
            self.doc_id,
            self.pattern
        );
        if let Some(h) = &self.hint {
            if let Some(s) = &self.searched {
                out.push_str(&format!(
                    "Searched {} lines ({}) with case_insensitive={}, fuzzy_whitespace={}.\n",
                    thousands(s["total_lines"].as_u64().unwrap_or(0)),
                    s["doc_type"].as_str().unwrap_or(""),
                    s["case_insensitive"],
                    s["fuzzy_whitespace"]
                ));
            }
            out.push_str(&format!("Hint: {h}\n"));
        }
        if self.count_only || self.matches.is_empty() {
            if !self.count_only && self.total_matches > 0 {
                out.push_str(&format!(
                    "\nNo matches at offset {} (there are {}).\n",
                    self.offset, self.total_matches
                ));
            }
            return out;
        }
        let last = self
            .matches
            .iter()
            .flat_map(|m| {
                m.context_after
                    .last()
                    .map(|c| c.0)
                    .into_iter()
                    .chain([m.line_number])
            })
            .max()
            .unwrap_or(1);
        let width = last.to_string().len().max(4);
        out.push('\n');
        let mut printed_to = 0u32;
        for m in &self.matches {
            let rows = m
                .context_before
                .iter()
                .map(|(n, t)| (*n, t.as_str(), false))
                .chain([(m.line_number, m.content.as_str(), true)])
                .chain(m.context_after.iter().map(|(n, t)| (*n, t.as_str(), false)));
            let mut first = true;
            for (n, t, is_match) in rows {
                if n <= printed_to {
                    // Already printed as context of the previous match; a later match line
                    // inside that context was marked there too.
                    continue;
                }
                if first && printed_to > 0 && n > printed_to + 1 {
                    out.push_str("--\n");
                }
                first = false;
                let mark = if is_match || self.is_match_line(n) {
                    ">"
                } else {
                    ""
                };
                out.push_str(&format!("{n:>width$}{mark}\t{t}\n"));
                printed_to = n;
            }
        }
        if self.has_more {
            let shown_to = self.offset + self.returned;
            out.push_str(&format!(
                "\n(matches {}-{} of {}; continue with offset={})\n",
                self.offset + 1,
                shown_to,
                self.total_matches,
                shown_to
            ));
        }
        out
    }

    fn is_match_line(&self, n: u32) -> bool {
        self.matches.iter().any(|m| m.line_number == n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzzy_whitespace_keeps_word_boundaries() {
        let lines = [
            "if not yet quantified, threat",
            "a quanti fied word",
            "unquantifiedness",
        ];
        let re = build_regex(r"\bquantified\b", false).unwrap();
        let squeezed = build_regex(&squeeze_pattern(r"\bquantified\b"), false).unwrap();
        assert_eq!(matching_lines(&lines, &re, Some(&squeezed)), [0]);
        let re = build_regex("quantified", false).unwrap();
        assert_eq!(matching_lines(&lines, &re, Some(&re)), [0, 1, 2]);
    }

    #[test]
    fn fuzzy_whitespace_spans_lines() {
        let lines = ["the inter", "national  body", "other"];
        let re = build_regex("international body", false).unwrap();
        let squeezed = build_regex(&squeeze_pattern("international body"), false).unwrap();
        assert_eq!(matching_lines(&lines, &re, None), Vec::<usize>::new());
        assert_eq!(matching_lines(&lines, &re, Some(&squeezed)), vec![0]);
        assert_eq!(squeeze_pattern(r"a\ b c"), r"a\ bc");
    }
}
