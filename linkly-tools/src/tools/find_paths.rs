//! `find_paths`: where does a folder the user names live? OR-ed substring patterns on the
//! directory part of indexed paths, aggregated at the shallowest matching segment, with a
//! ready-made `path_glob` for `search`.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::error::{check_count, check_range};
use crate::render::thousands;
use crate::tools::kit::{Reach, Rendered, ToolSpec, parse_args, render, schema_of};
use crate::{Linkly, OutputFormat, PathGlob, Result, ToolError};

pub(crate) const SPEC: ToolSpec = ToolSpec {
    name: "find_paths",
    title: "Find folders by name",
    description: "Find where a folder the user names lives (\"my Notion export\", \"the 2023 \
        taxes folder\") when you do not know its path: the real name often differs \
        (Notion-Export-c58e430f), so do not guess a path_glob. Patterns are OR-ed, \
        case-insensitive (ASCII) substrings matched against the directory part of indexed paths \
        only: pass variants in one call (translations, casings, app names). Each match is \
        aggregated at the shallowest matching folder; folders come sorted by file count, each \
        with a path_glob to pass to search (restricts it to that folder) and a path for list. Not \
        for topics (\"my CVs\": search already matches titles, file names, content and paths), \
        file types (search doc_types) or file names (a file matching by name only is left out): \
        call search.",
    read_only: true,
    input_schema: schema_of::<FindPathsParams>,
    output_schema: Some(schema_of::<FindPathsResponse>),
    reach: Reach::Library,
    idempotent: true,
    run,
};

/// The most patterns per call.
const MAX_PATTERNS: usize = 10;
/// The longest pattern, in bytes.
const MAX_PATTERN_BYTES: usize = 64;

crate::tools::kit::tool_params! {
    /// Parameters of `find_paths`.
    pub struct FindPathsParams {
        /// Keywords (each at most 64 bytes), OR-ed; matched as substrings of folder paths, ASCII
        /// case-insensitive, CJK literal.
        #[schemars(length(min = 1, max = MAX_PATTERNS))]
        #[cfg_attr(
            feature = "clap",
            arg(long, required = true, value_delimiter = ',', value_parser = crate::tools::kit::trimmed)
        )]
        pub patterns: Vec<String>,
        /// Only folders of this library (name or `local://<id>`).
        pub library: Option<String>,
        /// Folders returned.
        #[schemars(range(min = 1, max = 50), extend("default" = 10))]
        pub limit: Option<i64>,
        /// The answer's format.
        #[schemars(extend("default" = "markdown"))]
        pub output_format: Option<OutputFormat>,
    }
}

/// One candidate folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct FoundDirectory {
    /// The folder, cut at the end of the shallowest matching segment.
    pub path: String,
    /// `path` with `* ? [ \` escaped and a trailing `/`: passed to `search.path_glob` it
    /// matches exactly this folder's files.
    pub path_glob: String,
    /// Indexed files under the folder whose directory matched.
    pub file_count: u64,
}

/// The response of `find_paths`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct FindPathsResponse {
    /// Files whose directory matched, over every candidate folder (not only those returned).
    pub total_files: u64,
    /// True when more folders matched than `limit`.
    pub truncated: bool,
    /// The candidate folders, most files first.
    pub directories: Vec<FoundDirectory>,
    /// Every candidate folder, returned or not.
    #[serde(skip)]
    pub total_directories: usize,
    /// With no folder: why, and what to call instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

fn run(linkly: &Linkly, args: Value) -> Result<Rendered> {
    let params: FindPathsParams = parse_args(args)?;
    let format = params.output_format.unwrap_or_default();
    let response = linkly.find_paths(params)?;
    Ok(render(format, &response, FindPathsResponse::to_markdown)?
        .counting(response.directories.len() as u64))
}

/// Where a directory is aggregated: the end of the segment holding the shallowest match of
/// any pattern (patterns already ASCII-lower-cased), or `None` when none occurs.
pub(crate) fn aggregate<'a>(dir: &'a str, patterns: &[String]) -> Option<&'a str> {
    let lower = dir.to_ascii_lowercase();
    patterns
        .iter()
        .filter_map(|p| {
            let start = lower.find(p.as_str())?;
            let end = start + p.len();
            Some(lower[end..].find('/').map_or(dir.len(), |i| end + i))
        })
        .min()
        .map(|cut| &dir[..cut])
}

impl Linkly {
    /// Runs `find_paths`.
    pub fn find_paths(&self, p: FindPathsParams) -> Result<FindPathsResponse> {
        check_count("patterns", p.patterns.len(), 1, MAX_PATTERNS, "keywords")?;
        let mut patterns = Vec::new();
        for raw in &p.patterns {
            let t = raw.trim();
            if t.is_empty() {
                return Err(ToolError::invalid(
                    "patterns must not contain blank keywords",
                ));
            }
            if t.len() > MAX_PATTERN_BYTES {
                return Err(ToolError::invalid(format!(
                    "patterns: each keyword is at most {MAX_PATTERN_BYTES} bytes (got {} for {t:?})",
                    t.len()
                )));
            }
            patterns.push(t.to_ascii_lowercase());
        }
        let limit = check_range("limit", p.limit.unwrap_or(10), 1, 50)? as usize;
        let filter = crate::library::scope_filter(self, p.library.as_deref())?;
        let paths = self.corpus().catalog_paths(&filter)?;

        // Paths come sorted, so files of one directory are adjacent: decide once per directory.
        let mut counts: HashMap<String, u64> = HashMap::new();
        let mut last: Option<(&str, Option<String>)> = None;
        for path in &paths {
            let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
            let target = match &last {
                Some((d, t)) if *d == dir => t.clone(),
                _ => {
                    let t = aggregate(dir, &patterns).map(str::to_string);
                    last = Some((dir, t.clone()));
                    t
                }
            };
            if let Some(t) = target {
                *counts.entry(t).or_default() += 1;
            }
        }
        let hint = counts
            .is_empty()
            .then(|| no_folder_hint(&paths, &patterns, p.library.as_deref()));
        let mut dirs: Vec<(String, u64)> = counts.into_iter().collect();
        dirs.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let total_files = dirs.iter().map(|d| d.1).sum();
        let total_directories = dirs.len();
        Ok(FindPathsResponse {
            total_files,
            truncated: total_directories > limit,
            directories: dirs
                .into_iter()
                .take(limit)
                .map(|(path, file_count)| FoundDirectory {
                    path_glob: format!("{}/", PathGlob::escape(&path)),
                    path,
                    file_count,
                })
                .collect(),
            total_directories,
            hint,
        })
    }
}

/// Why no folder matched: the patterns occur only in file names (search matches those), or
/// nowhere in the paths indexed.
fn no_folder_hint(paths: &[String], patterns: &[String], library: Option<&str>) -> String {
    let named = paths
        .iter()
        .filter(|p| {
            let name = p.rsplit('/').next().unwrap_or(p).to_ascii_lowercase();
            patterns.iter().any(|k| name.contains(k.as_str()))
        })
        .count();
    let within = match library {
        Some(l) => format!("the {} indexed paths of library {l:?}", paths.len()),
        None => format!("the {} indexed paths", paths.len()),
    };
    if named > 0 {
        format!(
            "No folder name in {within} holds these keywords, but {named} file name{} do{}: \
             this tool finds folders; call search with the keywords (it matches file names).",
            if named == 1 { "" } else { "s" },
            if named == 1 { "es" } else { "" }
        )
    } else {
        format!(
            "No folder or file name in {within} holds these keywords: try variants (other \
             spellings, languages, the application's real folder name) in one call, or call \
             search for the content."
        )
    }
}

impl FindPathsResponse {
    /// The Markdown form.
    pub fn to_markdown(&self) -> String {
        let mut out = String::from("# Find Paths\n\n");
        if self.directories.is_empty() {
            out.push_str("No folder candidates matched.\n");
            if let Some(h) = &self.hint {
                out.push_str(&format!("Hint: {h}\n"));
            }
            return out;
        }
        out.push_str(&format!(
            "Found {} folder(s), {} files total.\n",
            thousands(self.total_directories as u64),
            thousands(self.total_files)
        ));
        for (i, d) in self.directories.iter().enumerate() {
            out.push_str(&format!(
                "\n{}. {} — {} file{}\n   path_glob: `{}`\n",
                i + 1,
                crate::render::shown(&d.path),
                thousands(d.file_count),
                if d.file_count == 1 { "" } else { "s" },
                d.path_glob
            ));
        }
        if self.truncated {
            out.push_str(&format!(
                "\nShowing the {} largest of {} folders; raise limit (max 50) or use more specific patterns.\n",
                self.directories.len(),
                thousands(self.total_directories as u64)
            ));
        }
        out.push_str(
            "\nNext: pass a path_glob to `search` to search inside that folder, or its path to \
             `list` (scope \"folder\") to enumerate it.\n",
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agg(dir: &str, patterns: &[&str]) -> Option<String> {
        let p: Vec<String> = patterns.iter().map(|s| s.to_ascii_lowercase()).collect();
        aggregate(dir, &p).map(str::to_string)
    }

    #[test]
    fn aggregates_at_the_shallowest_matching_segment() {
        assert_eq!(
            agg("/Users/me/Documents/Notion-Export-abc/ws", &["Notion"]).as_deref(),
            Some("/Users/me/Documents/Notion-Export-abc")
        );
        // The shallowest of several patterns wins.
        assert_eq!(
            agg("/a/Projects/taxes/2023", &["2023", "TAX"]).as_deref(),
            Some("/a/Projects/taxes")
        );
        assert_eq!(
            agg("/a/資料/東京", &["東京"]).as_deref(),
            Some("/a/資料/東京")
        );
        assert_eq!(agg("/a/b", &["zzz"]), None);
    }
}
