//! `explore`: an overview of all indexed content or of one library — summary, directory tree,
//! top keywords (global and local) and recent activity — within a fixed size budget whatever
//! the collection's size: trees and lists are cut with counts of what was left out.

use std::collections::{HashMap, VecDeque};

use linkly_core::{format_rfc3339, now_millis};
use linkly_index::{DocFilter, DocSummary};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::library::{path_key, resolve, top_level_dirs};
use crate::render::thousands;
use crate::tools::kit::{Reach, Rendered, ToolSpec, parse_args, render, schema_of};
use crate::{Linkly, OutputFormat, Result};

pub(crate) const SPEC: ToolSpec = ToolSpec {
    name: "explore",
    title: "Explore a collection",
    description: "Get the map before searching: an overview of all indexed content (or of one \
        library) with a summary (documents, outlines, types), the directory tree with file \
        counts, median word counts and last modification, top keywords (global ones, and local \
        ones concentrated in one directory) and the directories changed in the last 7 days. Use \
        it when the user asks what their documents hold or has no precise topic. Then use its \
        keywords and directory names in search (query, path_glob or library), list or find_paths.",
    read_only: true,
    input_schema: schema_of::<ExploreParams>,
    output_schema: Some(schema_of::<ExploreResponse>),
    reach: Reach::Library,
    idempotent: true,
    run,
};

/// Directories shown in the tree at most.
const TREE_BUDGET: usize = 40;
/// Subdirectories shown per directory at most.
const TREE_CHILDREN: usize = 8;
/// Levels shown below a root.
const TREE_DEPTH: usize = 4;
/// Global keywords shown.
const GLOBAL_KEYWORDS: usize = 15;
/// Directories with local keywords shown, and keywords per directory.
const LOCAL_DIRS: usize = 8;
const LOCAL_KEYWORDS: usize = 6;
/// Share of a keyword's occurrences in one directory that makes it local.
const LOCAL_SHARE: f64 = 0.9;
/// Recent-activity window and directories shown.
const RECENT_MS: i64 = 7 * 24 * 3600 * 1000;
const RECENT_DIRS: usize = 10;

crate::tools::kit::tool_params! {
    /// Parameters of `explore`.
    pub struct ExploreParams {
        /// Only this library (name or `local://<id>`). Default: all indexed local content.
        pub library: Option<String>,
        /// The answer's format.
        #[schemars(extend("default" = "markdown"))]
        pub output_format: Option<OutputFormat>,
    }
}

/// Documents of one type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct TypeCount {
    /// The doc-type token.
    pub doc_type: String,
    /// Documents.
    pub count: u64,
}

/// The summary section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ExploreSummary {
    /// Documents covered.
    pub documents: u64,
    /// Documents with an outline.
    pub with_outline: u64,
    /// Documents indexed by name only (with a skip reason).
    pub name_only: u64,
    /// The type distribution, largest first.
    pub types: Vec<TypeCount>,
}

/// One directory of the tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DirectoryEntry {
    /// The absolute path.
    pub path: String,
    /// 0 for a root (watched or library folder), 1 for its subdirectories, …
    pub depth: usize,
    /// Files in the whole subtree.
    pub file_count: u64,
    /// The median word count of the subtree's readable files.
    pub median_word_count: u64,
    /// The newest modification in the subtree, Unix ms.
    pub last_modified: i64,
    /// Subdirectories left out of the tree.
    #[serde(skip_serializing_if = "is_zero")]
    pub more_subdirectories: u64,
    /// Files in the subdirectories left out.
    #[serde(skip_serializing_if = "is_zero")]
    pub more_files: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A keyword and how many documents carry it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct KeywordCount {
    /// The keyword.
    pub keyword: String,
    /// Documents whose keywords include it.
    pub count: u64,
}

/// Keywords concentrated in one directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LocalKeywords {
    /// The directory holding at least 90% of their occurrences.
    pub directory: String,
    /// The keywords, most frequent first.
    pub keywords: Vec<KeywordCount>,
}

/// The keywords section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ExploreKeywords {
    /// Keywords spread across directories.
    pub global: Vec<KeywordCount>,
    /// Keywords concentrated (≥ 90%) in one directory, grouped by it.
    pub local: Vec<LocalKeywords>,
    /// Directories with local keywords left out.
    pub more_local_directories: u64,
}

/// A directory with recent changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RecentDirectory {
    /// The directory (files directly in it).
    pub path: String,
    /// Files modified in the window.
    pub changed_files: u64,
    /// The newest modification, Unix ms.
    pub last_modified: i64,
}

/// The recent-activity section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ExploreRecent {
    /// The window's start, Unix ms (7 days ago).
    pub since: i64,
    /// Directories with changes, newest first.
    pub directories: Vec<RecentDirectory>,
    /// Directories with changes left out.
    pub more_directories: u64,
    /// Changed files in the directories left out.
    pub more_files: u64,
}

/// The response of `explore`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ExploreResponse {
    /// What was explored: `all indexed content` or `library <name> (local://<id>)`.
    pub scope: String,
    /// The library's description, when a library was explored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Counts and types.
    pub summary: ExploreSummary,
    /// The directory tree, in display order (parents before children).
    pub directories: Vec<DirectoryEntry>,
    /// Directories holding documents, shown or not.
    pub directories_total: u64,
    /// Top keywords.
    pub keywords: ExploreKeywords,
    /// Directories changed in the last 7 days.
    pub recent: ExploreRecent,
    /// How fresh the whole index is: coverage, embeddings waiting, last reconcile, watcher.
    pub freshness: crate::Coverage,
    /// With no document: why, and what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

fn run(linkly: &Linkly, args: Value) -> Result<Rendered> {
    let params: ExploreParams = parse_args(args)?;
    let format = params.output_format.unwrap_or_default();
    let response = linkly.explore(params)?;
    render(format, &response, ExploreResponse::to_markdown)
}

fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) => "/",
        Some(i) => &path[..i],
        None => "",
    }
}

fn under(path: &str, dir: &str) -> bool {
    path.len() > dir.len()
        && path.starts_with(dir)
        && (dir.ends_with('/') || path.as_bytes()[dir.len()] == b'/')
}

/// The longest directory containing every path.
fn common_dir(paths: &[&str]) -> String {
    let Some(first) = paths.first() else {
        return "/".into();
    };
    let mut dir = parent(first).to_string();
    for p in paths {
        while !(under(p, &dir) || dir == "/" || dir.is_empty()) {
            dir = parent(&dir).to_string();
        }
    }
    if dir.is_empty() { "/".into() } else { dir }
}

struct Node {
    path: String,
    parent: Option<usize>,
    depth: usize,
    children: Vec<usize>,
    files: u64,
    words: Vec<u64>,
    last: i64,
}

struct Tree {
    nodes: Vec<Node>,
    by_path: HashMap<String, usize>,
    roots: Vec<usize>,
}

impl Tree {
    /// The node of `dir` (under `root`), created with its missing ancestors.
    fn node(&mut self, dir: &str, root: &str) -> usize {
        if let Some(&i) = self.by_path.get(dir) {
            return i;
        }
        let (parent, depth) = if dir == root || !under(dir, root) {
            (None, 0)
        } else {
            let p = self.node(parent(dir), root);
            (Some(p), self.nodes[p].depth + 1)
        };
        let i = self.nodes.len();
        self.nodes.push(Node {
            path: dir.to_string(),
            parent,
            depth,
            children: Vec::new(),
            files: 0,
            words: Vec::new(),
            last: i64::MIN,
        });
        self.by_path.insert(dir.to_string(), i);
        match parent {
            Some(p) => self.nodes[p].children.push(i),
            None => self.roots.push(i),
        }
        i
    }

    fn add(&mut self, dir: usize, doc: &DocSummary) {
        let mut at = Some(dir);
        while let Some(i) = at {
            let n = &mut self.nodes[i];
            n.files += 1;
            if !doc.skipped {
                n.words.push(doc.word_count);
            }
            n.last = n.last.max(doc.modified_at);
            at = n.parent;
        }
    }

    fn by_size(&self, ids: &mut [usize]) {
        ids.sort_by(|&a, &b| {
            let (a, b) = (&self.nodes[a], &self.nodes[b]);
            b.files.cmp(&a.files).then_with(|| a.path.cmp(&b.path))
        });
    }
}

fn median(words: &mut [u64]) -> u64 {
    if words.is_empty() {
        return 0;
    }
    let mid = words.len() / 2;
    *words.select_nth_unstable(mid).1
}

impl Linkly {
    /// Runs `explore`.
    pub fn explore(&self, p: ExploreParams) -> Result<ExploreResponse> {
        // A visitor explores a shared library, never the watched folders as such.
        let library = crate::library::walked_library(p.library.as_deref())?;
        let (scope, description, mut roots, filter) = match library.as_deref() {
            Some(l) => {
                let lib = resolve(self, l)?;
                let scope = crate::library::LibraryScope::of(self, &lib)?;
                let mut roots = scope.dirs.clone();
                if !scope.notes.is_empty() {
                    roots.push(path_key(&self.notes_dir()));
                }
                (
                    format!("library {} ({})", lib.name, lib.address()),
                    Some(lib.description.clone()),
                    roots,
                    scope.filter(),
                )
            }
            None => {
                let folders = &self.config().folders;
                let mut roots = top_level_dirs(folders);
                let notes = self.config().notes_dir(self.data_dir());
                if !folders.iter().any(|f| notes.starts_with(f)) {
                    roots.push(path_key(&notes));
                }
                (
                    "all indexed content".to_string(),
                    None,
                    roots,
                    DocFilter::default(),
                )
            }
        };
        let docs = self.corpus().catalog_summaries(&filter)?;
        // Documents outside every configured root get a root of their own: the directory
        // common to them.
        let root_of = |path: &str, roots: &[String]| -> Option<usize> {
            roots
                .iter()
                .enumerate()
                .filter(|(_, r)| under(path, r))
                .max_by_key(|(_, r)| r.len())
                .map(|(i, _)| i)
        };
        let orphans: Vec<&str> = docs
            .iter()
            .map(|d| d.path.as_str())
            .filter(|p| root_of(p, &roots).is_none())
            .collect();
        if !orphans.is_empty() {
            roots.push(common_dir(&orphans));
        }

        let mut tree = Tree {
            nodes: Vec::new(),
            by_path: HashMap::new(),
            roots: Vec::new(),
        };
        let mut types: HashMap<&'static str, u64> = HashMap::new();
        let (mut with_outline, mut name_only) = (0u64, 0u64);
        let mut keyword_dirs: HashMap<&str, HashMap<usize, u64>> = HashMap::new();
        let now = now_millis();
        let since = now - RECENT_MS;
        let mut recent: HashMap<usize, (u64, i64)> = HashMap::new();
        for d in &docs {
            *types.entry(d.doc_type.as_str()).or_default() += 1;
            with_outline += u64::from(d.has_outline);
            name_only += u64::from(d.skipped);
            let root = root_of(&d.path, &roots).map_or("/", |i| roots[i].as_str());
            let dir = tree.node(parent(&d.path), root);
            tree.add(dir, d);
            for k in &d.keywords {
                *keyword_dirs.entry(k).or_default().entry(dir).or_default() += 1;
            }
            if d.modified_at >= since {
                let e = recent.entry(dir).or_insert((0, i64::MIN));
                e.0 += 1;
                e.1 = e.1.max(d.modified_at);
            }
        }

        let mut types: Vec<TypeCount> = types
            .into_iter()
            .map(|(t, c)| TypeCount {
                doc_type: t.to_string(),
                count: c,
            })
            .collect();
        types.sort_by(|a, b| b.count.cmp(&a.count).then(a.doc_type.cmp(&b.doc_type)));

        let directories = select_tree(&mut tree);
        let keywords = keywords(&tree, keyword_dirs);

        let mut recent: Vec<RecentDirectory> = recent
            .into_iter()
            .map(|(dir, (n, last))| RecentDirectory {
                path: tree.nodes[dir].path.clone(),
                changed_files: n,
                last_modified: last,
            })
            .collect();
        recent.sort_by(|a, b| {
            b.last_modified
                .cmp(&a.last_modified)
                .then(a.path.cmp(&b.path))
        });
        let left: Vec<RecentDirectory> = recent.split_off(recent.len().min(RECENT_DIRS));
        let freshness = self.coverage()?;
        let hint = docs
            .is_empty()
            .then(|| self.empty_explore_hint(library.is_some(), &freshness));

        Ok(ExploreResponse {
            scope,
            description,
            summary: ExploreSummary {
                documents: docs.len() as u64,
                with_outline,
                name_only,
                types,
            },
            directories,
            directories_total: tree.nodes.iter().filter(|n| n.files > 0).count() as u64,
            keywords,
            recent: ExploreRecent {
                since,
                directories: recent,
                more_directories: left.len() as u64,
                more_files: left.iter().map(|r| r.changed_files).sum(),
            },
            freshness,
            hint,
        })
    }

    /// Why an overview holds no document, and what to do.
    fn empty_explore_hint(&self, library: bool, freshness: &crate::Coverage) -> String {
        let mut out = if library {
            "No indexed document lies in this library's folders: they may be empty, excluded or \
             not indexed yet; list_libraries shows its folders, explore without library shows \
             everything indexed."
                .to_string()
        } else if self.config().folders.is_empty() && freshness.documents == 0 {
            "No folder is watched and nothing is indexed: `linkly index <folder>` adds a folder \
             and indexes it."
                .to_string()
        } else {
            "Nothing is indexed yet in the watched folders: `linkly index` indexes them (or \
             `linkly serve` keeps them indexed)."
                .to_string()
        };
        if matches!(
            freshness.state,
            crate::IndexState::Scanning | crate::IndexState::Indexing
        ) {
            out.push_str(&format!(
                " Indexing is under way ({}): explore again shortly.",
                freshness.state.as_str()
            ));
        }
        out
    }
}

/// Chooses the directories to show — breadth first, largest first, within the budget — and
/// lists them parents first, each with what was left out below it.
fn select_tree(tree: &mut Tree) -> Vec<DirectoryEntry> {
    let mut shown = vec![false; tree.nodes.len()];
    let mut roots = tree.roots.clone();
    tree.by_size(&mut roots);
    let mut count = 0;
    let mut queue = VecDeque::new();
    for &r in &roots {
        if count < TREE_BUDGET {
            shown[r] = true;
            count += 1;
            queue.push_back(r);
        }
    }
    while let Some(n) = queue.pop_front() {
        if tree.nodes[n].depth >= TREE_DEPTH {
            continue;
        }
        let mut children = tree.nodes[n].children.clone();
        tree.by_size(&mut children);
        for c in children.into_iter().take(TREE_CHILDREN) {
            if count >= TREE_BUDGET {
                break;
            }
            shown[c] = true;
            count += 1;
            queue.push_back(c);
        }
    }
    let mut out = Vec::new();
    let mut stack: Vec<usize> = roots.into_iter().rev().filter(|&r| shown[r]).collect();
    while let Some(n) = stack.pop() {
        let mut children = tree.nodes[n].children.clone();
        tree.by_size(&mut children);
        let (more_subdirectories, more_files) = children
            .iter()
            .filter(|&&c| !shown[c])
            .fold((0, 0), |(d, f), &c| (d + 1, f + tree.nodes[c].files));
        let node = &mut tree.nodes[n];
        out.push(DirectoryEntry {
            path: node.path.clone(),
            depth: node.depth,
            file_count: node.files,
            median_word_count: median(&mut node.words),
            last_modified: node.last,
            more_subdirectories,
            more_files,
        });
        stack.extend(children.into_iter().rev().filter(|&c| shown[c]));
    }
    out
}

/// Splits keywords into global ones (spread over directories) and local ones (≥ 90% of their
/// occurrences in one directory). A keyword of a single document is neither.
fn keywords(tree: &Tree, by_dir: HashMap<&str, HashMap<usize, u64>>) -> ExploreKeywords {
    let mut global = Vec::new();
    let mut local: HashMap<usize, Vec<KeywordCount>> = HashMap::new();
    for (k, dirs) in by_dir {
        let total: u64 = dirs.values().sum();
        if total < 2 {
            continue;
        }
        let (&top_dir, &top) = dirs
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .unwrap_or((&0, &0));
        let kc = KeywordCount {
            keyword: k.to_string(),
            count: total,
        };
        if top as f64 >= LOCAL_SHARE * total as f64 {
            local.entry(top_dir).or_default().push(kc);
        } else {
            global.push(kc);
        }
    }
    let rank =
        |a: &KeywordCount, b: &KeywordCount| b.count.cmp(&a.count).then(a.keyword.cmp(&b.keyword));
    global.sort_by(rank);
    global.truncate(GLOBAL_KEYWORDS);
    let mut local: Vec<(usize, Vec<KeywordCount>, u64)> = local
        .into_iter()
        .map(|(d, mut ks)| {
            ks.sort_by(rank);
            let weight = ks.iter().map(|k| k.count).sum();
            ks.truncate(LOCAL_KEYWORDS);
            (d, ks, weight)
        })
        .collect();
    local.sort_by(|a, b| {
        b.2.cmp(&a.2)
            .then_with(|| tree.nodes[a.0].path.cmp(&tree.nodes[b.0].path))
    });
    let more = local.len().saturating_sub(LOCAL_DIRS) as u64;
    ExploreKeywords {
        global,
        local: local
            .into_iter()
            .take(LOCAL_DIRS)
            .map(|(d, keywords, _)| LocalKeywords {
                directory: tree.nodes[d].path.clone(),
                keywords,
            })
            .collect(),
        more_local_directories: more,
    }
}

fn keyword_list(ks: &[KeywordCount]) -> String {
    ks.iter()
        .map(|k| format!("{} ({})", k.keyword, k.count))
        .collect::<Vec<_>>()
        .join(", ")
}

impl ExploreResponse {
    /// The Markdown form: `# Explore` and its four sections.
    pub fn to_markdown(&self) -> String {
        let s = &self.summary;
        let mut out = format!("# Explore\n\nScope: {}", self.scope);
        match self.description.as_deref().filter(|d| !d.is_empty()) {
            Some(d) => out.push_str(&format!(" — {d}\n")),
            None => out.push('\n'),
        }
        out.push_str("\n## Summary\n\n");
        out.push_str(&format!(
            "- Documents: {} ({} with an outline, {} indexed by name only)\n",
            thousands(s.documents),
            thousands(s.with_outline),
            thousands(s.name_only)
        ));
        if !s.types.is_empty() {
            let types: Vec<String> = s
                .types
                .iter()
                .map(|t| format!("{} {}", t.doc_type, thousands(t.count)))
                .collect();
            out.push_str(&format!("- Types: {}\n", types.join(" · ")));
        }
        out.push_str(&format!("- Index: {}\n", self.freshness.one_line()));

        out.push_str("\n## Directories\n\n");
        if self.directories.is_empty() {
            out.push_str("No indexed documents.\n");
            if let Some(h) = &self.hint {
                out.push_str(&format!("Hint: {h}\n"));
            }
        }
        for d in &self.directories {
            let indent = "  ".repeat(d.depth);
            let name = crate::render::shown(if d.depth == 0 {
                &d.path
            } else {
                d.path.rsplit('/').next().unwrap_or(&d.path)
            });
            out.push_str(&format!(
                "{indent}- {name}/ — {} file{} · median {} words · last modified {}\n",
                thousands(d.file_count),
                if d.file_count == 1 { "" } else { "s" },
                thousands(d.median_word_count),
                format_rfc3339(d.last_modified)
            ));
            if d.more_subdirectories > 0 {
                out.push_str(&format!(
                    "{indent}  - … {} more subdirector{} ({} files)\n",
                    thousands(d.more_subdirectories),
                    if d.more_subdirectories == 1 {
                        "y"
                    } else {
                        "ies"
                    },
                    thousands(d.more_files)
                ));
            }
        }
        if self.directories_total > self.directories.len() as u64 {
            out.push_str(&format!(
                "\n({} of {} directories shown; list or explore a library for detail)\n",
                self.directories.len(),
                thousands(self.directories_total)
            ));
        }

        out.push_str("\n## Top keywords\n\n");
        let k = &self.keywords;
        if k.global.is_empty() && k.local.is_empty() {
            out.push_str("No keyword occurs in more than one document.\n");
        }
        if !k.global.is_empty() {
            out.push_str(&format!("Global: {}\n", keyword_list(&k.global)));
        }
        if !k.local.is_empty() {
            if !k.global.is_empty() {
                out.push('\n');
            }
            out.push_str("Local (≥90% in one directory):\n");
            for l in &k.local {
                out.push_str(&format!(
                    "- {}: {}\n",
                    l.directory,
                    keyword_list(&l.keywords)
                ));
            }
            if k.more_local_directories > 0 {
                out.push_str(&format!(
                    "- … {} more directories with local keywords\n",
                    thousands(k.more_local_directories)
                ));
            }
        }

        out.push_str("\n## Recent activity (last 7 days)\n\n");
        let r = &self.recent;
        if r.directories.is_empty() {
            out.push_str("No changes in the last 7 days.\n");
        }
        for d in &r.directories {
            out.push_str(&format!(
                "- {} — {} file{} changed, last {}\n",
                crate::render::shown(&d.path),
                thousands(d.changed_files),
                if d.changed_files == 1 { "" } else { "s" },
                format_rfc3339(d.last_modified)
            ));
        }
        if r.more_directories > 0 {
            out.push_str(&format!(
                "- … {} more directories ({} files changed)\n",
                thousands(r.more_directories),
                thousands(r.more_files)
            ));
        }
        out.push_str(
            "\nNext: `search` (with `library` or a `path_glob`), `list` (scope \"folder\" with a \
             path) to enumerate a directory, or `find_paths` to locate a folder by name.\n",
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_helpers() {
        assert_eq!(parent("/a/b/c.md"), "/a/b");
        assert_eq!(parent("/c.md"), "/");
        assert!(under("/a/b/c", "/a/b"));
        assert!(!under("/a/bc", "/a/b"));
        assert!(under("/a", "/"));
        assert_eq!(common_dir(&["/x/a/1.md", "/x/a/b/2.md", "/x/c/3.md"]), "/x");
        assert_eq!(median(&mut [5, 1, 3]), 3);
        assert_eq!(median(&mut []), 0);
    }
}
