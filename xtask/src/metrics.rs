//! `cargo xtask metrics [--repo DIR] [--through-reexports]`: the measures of `docs/architecture-metrics.md` — lines
//! of `src` per crate, the largest files, and the import circles inside each crate (modules
//! that reach each other through `use` and paths, found as the strongly connected components
//! of the module graph).
//!
//! The module graph: a file is a module (`lib.rs`/`main.rs` the root, `a/mod.rs` and `a.rs`
//! the module `a`); an edge goes from a module to every module it names (the root aside) through `crate::`,
//! `super::`, `self::` or a child module's name, including inside `use` trees, with each path
//! cut at its longest known module. A name the root re-exports (`crate::Linkly`) counts as the
//! root's, which is in no circle (as the architecture reviews count); with
//! `--through-reexports` it is followed to the module it comes from. Comments, strings and
//! `#[cfg(test)]` items do not count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Runs the command: prints the measures of the workspace at `--repo DIR` (default: this one).
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let root = crate::arg(args, "--repo").map_or_else(crate::root, PathBuf::from);
    let follow = args.iter().any(|a| a == "--through-reexports");
    let mut crates: Vec<PathBuf> = fs_err::read_dir(&root)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("Cargo.toml").is_file() && p.join("src").is_dir())
        .collect();
    crates.sort();
    let mut all_files: Vec<(String, usize)> = Vec::new();
    let mut total = 0;
    println!("| Crate | src lines | files | import circles (modules in them) |");
    println!("|---|---|---|---|");
    for dir in &crates {
        let name = dir.file_name().unwrap_or_default().to_string_lossy();
        let src = dir.join("src");
        let files = crate::tidy::rust_files(&src)?;
        let mut lines = 0;
        let mut texts = BTreeMap::new();
        for f in &files {
            let text = fs_err::read_to_string(f)?;
            let n = text.lines().count();
            lines += n;
            all_files.push((f.strip_prefix(&root)?.display().to_string(), n));
            texts.insert(module_of(&src, f), text);
        }
        total += lines;
        let circles = circles(&texts, follow);
        let shown: Vec<String> = circles
            .iter()
            .map(|c| format!("{{{}}}", c.join(", ")))
            .collect();
        println!(
            "| {name} | {lines} | {} | {}{} |",
            files.len(),
            circles.len(),
            if shown.is_empty() {
                String::new()
            } else {
                format!(": {}", shown.join(" "))
            }
        );
    }
    println!("| all | {total} | {} | |", all_files.len());
    all_files.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    println!("\nLargest files:");
    for (f, n) in all_files.iter().take(10) {
        println!("- `{f}` {n}");
    }
    Ok(())
}

/// A file's module path: `""` for the root, `a::b` for `a/b.rs` or `a/b/mod.rs`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap_or(file);
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

/// The circles of a crate: each a sorted list of the modules that reach one another.
pub(crate) fn circles(
    texts: &BTreeMap<String, String>,
    follow_reexports: bool,
) -> Vec<Vec<String>> {
    let modules: BTreeSet<&str> = texts.keys().map(String::as_str).collect();
    let reexports = texts
        .get("")
        .map(|root| reexports(&code_of(root), &modules))
        .unwrap_or_default();
    let mut edges: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (module, text) in texts {
        let targets = references(
            module,
            &code_of(text),
            &modules,
            &reexports,
            follow_reexports,
        );
        edges.insert(
            module,
            targets
                .into_iter()
                .filter(|t| t != module && !t.is_empty())
                .collect(),
        );
    }
    let mut out: Vec<Vec<String>> = strongly_connected(&edges)
        .into_iter()
        .filter(|c| c.len() > 1)
        .collect();
    out.sort();
    out
}

/// Code without comments, strings or test items.
fn code_of(text: &str) -> String {
    let code = crate::tidy::blank_comments_and_strings(text);
    let mut out = code.clone();
    let mut from = 0;
    while let Some(at) = out[from..].find("#[cfg(test)]").map(|a| a + from) {
        let after = at + "#[cfg(test)]".len();
        let end = match (out[after..].find('{'), out[after..].find(';')) {
            (Some(b), Some(s)) if s < b => after + s + 1,
            (Some(b), _) => block_end(&out, after + b),
            (None, Some(s)) => after + s + 1,
            (None, None) => out.len(),
        };
        out.replace_range(at..end, &" ".repeat(end - at));
        from = end;
    }
    out
}

/// The index after the brace block opening at `open`.
fn block_end(code: &str, open: usize) -> usize {
    let mut depth = 0usize;
    for (i, c) in code[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return open + i + 1;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// The names the root re-exports (`pub use crate::a::b::{X, Y}`), to the module they come from.
fn reexports(root: &str, modules: &BTreeSet<&str>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for path in paths(root) {
        let Some(rest) = path.strip_prefix("crate::") else {
            continue;
        };
        let segments: Vec<&str> = rest.split("::").collect();
        if let Some(module) = longest_module(&segments, modules)
            && !module.is_empty()
            && let Some(last) = segments.last()
        {
            out.insert((*last).to_string(), module);
        }
    }
    out
}

/// Every path written in the code, `use` trees expanded (`crate::{a, b::c}` → `crate::a`,
/// `crate::b::c`).
fn paths(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let starts = (c.is_alphabetic() || c == '_')
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'))
            && !(i >= 2 && chars[i - 1] == ':' && chars[i - 2] == ':');
        if !starts {
            i += 1;
            continue;
        }
        let (found, next) = path_at(&chars, i, "");
        out.extend(found);
        i = next.max(i + 1);
    }
    out
}

/// The path(s) starting at `i`: one, or several through a `{…}` group; and where it ends.
fn path_at(chars: &[char], mut i: usize, prefix: &str) -> (Vec<String>, usize) {
    let mut path = prefix.to_string();
    loop {
        let start = i;
        while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
            i += 1;
        }
        if i == start {
            break;
        }
        path.extend(&chars[start..i]);
        let mut j = i;
        while j < chars.len() && chars[j].is_whitespace() {
            j += 1;
        }
        if chars.get(j) == Some(&':') && chars.get(j + 1) == Some(&':') {
            j += 2;
            while j < chars.len() && chars[j].is_whitespace() {
                j += 1;
            }
            path.push_str("::");
            if chars.get(j) == Some(&'{') {
                return group(chars, j, &path);
            }
            i = j;
        } else {
            break;
        }
    }
    let path = path.trim_end_matches("::").to_string();
    (if path.is_empty() { vec![] } else { vec![path] }, i)
}

/// The paths of a `{a, b::{c, d}}` group after `prefix::`.
fn group(chars: &[char], open: usize, prefix: &str) -> (Vec<String>, usize) {
    let mut out = Vec::new();
    let mut i = open + 1;
    while i < chars.len() {
        match chars[i] {
            '}' => return (out, i + 1),
            c if c.is_alphabetic() || c == '_' => {
                let (found, next) = path_at(chars, i, prefix);
                out.extend(found);
                i = next.max(i + 1);
            }
            _ => i += 1,
        }
    }
    (out, i)
}

/// The modules a module's code names (`mod x;` declarations aside: declaring is no import).
fn references(
    module: &str,
    code: &str,
    modules: &BTreeSet<&str>,
    reexports: &BTreeMap<String, String>,
    follow_reexports: bool,
) -> BTreeSet<String> {
    let parent = |m: &str| m.rsplit_once("::").map_or(String::new(), |(p, _)| p.into());
    let code: String = code
        .lines()
        .map(|l| {
            let t = l.trim_start();
            let t = t
                .strip_prefix("pub(crate) ")
                .or_else(|| t.strip_prefix("pub "))
                .unwrap_or(t);
            if t.starts_with("mod ") { "" } else { l }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = BTreeSet::new();
    for path in paths(&code) {
        let segments: Vec<&str> = path.split("::").collect();
        if segments.len() < 2 {
            continue;
        }
        let (base, rest) = match segments[0] {
            "crate" => (String::new(), &segments[1..]),
            "super" => {
                let mut base = parent(module);
                let mut rest = &segments[1..];
                while rest.first() == Some(&"super") {
                    base = parent(&base);
                    rest = &rest[1..];
                }
                (base, rest)
            }
            "self" => (module.to_string(), &segments[1..]),
            _ => (module.to_string(), &segments[..]),
        };
        let full: Vec<&str> = base
            .split("::")
            .filter(|s| !s.is_empty())
            .chain(rest.iter().copied())
            .collect();
        match longest_module(&full, modules) {
            Some(m) if m.is_empty() && follow_reexports => {
                if let Some(target) = rest.first().and_then(|n| reexports.get(*n)) {
                    out.insert(target.clone());
                }
            }
            Some(m) if !m.is_empty() && m != module => {
                out.insert(m);
            }
            _ => {}
        }
    }
    out
}

/// The longest prefix of `segments` that is a module (`""`, the root, when none is).
fn longest_module(segments: &[&str], modules: &BTreeSet<&str>) -> Option<String> {
    (0..=segments.len())
        .rev()
        .map(|n| segments[..n].join("::"))
        .find(|m| modules.contains(m.as_str()))
}

/// Tarjan's strongly connected components.
fn strongly_connected(edges: &BTreeMap<&str, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<&'a str, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on_stack: BTreeSet<String>,
        out: Vec<Vec<String>>,
    }
    fn visit(s: &mut State<'_>, v: &str) {
        let n = s.index.len();
        s.index.insert(v.into(), n);
        s.low.insert(v.into(), n);
        s.stack.push(v.into());
        s.on_stack.insert(v.into());
        let targets: Vec<String> = s
            .edges
            .get(v)
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default();
        for w in targets {
            if !s.edges.contains_key(w.as_str()) {
                continue;
            }
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let low = s.low[v].min(s.low[&w]);
                s.low.insert(v.into(), low);
            } else if s.on_stack.contains(&w) {
                let low = s.low[v].min(s.index[&w]);
                s.low.insert(v.into(), low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(&w);
                let done = w == v;
                component.push(w);
                if done {
                    break;
                }
            }
            component.sort();
            s.out.push(component);
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(*v) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crate_of(files: &[(&str, &str)]) -> BTreeMap<String, String> {
        files
            .iter()
            .map(|(m, t)| (m.to_string(), t.to_string()))
            .collect()
    }

    #[test]
    fn a_registry_that_its_modules_import_back_is_a_circle() {
        let texts = crate_of(&[
            ("", "mod tools; pub use crate::tools::search::Params;"),
            (
                "tools",
                "mod search;\nstatic TOOLS: &[S] = &[search::SPEC];",
            ),
            ("tools::search", "use crate::tools::{parse_args, S};"),
        ]);
        assert_eq!(circles(&texts, false), vec![vec!["tools", "tools::search"]]);
    }

    #[test]
    fn one_way_imports_and_comments_are_no_circle() {
        let texts = crate_of(&[
            ("", "mod a; mod b; pub use crate::b::Thing;"),
            ("a", "use crate::Thing; // crate::a::x in a comment"),
            ("b", "fn f() { let s = \"crate::a::x\"; super::b::g() }"),
        ]);
        assert!(circles(&texts, false).is_empty());
    }

    #[test]
    fn use_trees_and_super_paths_are_followed() {
        let texts = crate_of(&[
            ("", "mod x; mod y;"),
            ("x", "use crate::{y::{inner, other}, z};"),
            ("y", "fn f() { super::x::go() }"),
        ]);
        assert_eq!(circles(&texts, false), vec![vec!["x", "y"]]);
    }
}
