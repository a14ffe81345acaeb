//! `cargo xtask tidy`: checks mechanically what `docs/ARCHITECTURE.md` promises.
//!
//! - **Layers:** the dependency direction `core ← models ← extract ← index ← tools ← http ←
//!   {window, mcp} ← gateway ← cli`, read from `cargo metadata` (normal, dev and build
//!   dependencies alike): a Linkly crate depends only on crates of the floors below its own in
//!   [`LAYERS`], and nothing depends on `xtask`.
//! - **No printing in libraries:** no `println!`, `print!`, `eprintln!`, `eprint!` or `dbg!` in
//!   the `src` of a library crate (binaries, `#[cfg(test)]` modules and `tests/` are exempt).
//! - **Storage and model crates stay private:** no type of the crates [`HIDDEN_CRATES`] lists
//!   for a Linkly crate (`linkly-index`: SQLite, tantivy, the ANN graph; `linkly-models`:
//!   candle, tokenizers, the SIMD and matrix crates, the memory map, ureq) in a `pub` item of
//!   that crate (a `pub fn` signature, a `pub` field of a `pub struct`, a variant of a
//!   `pub enum`, a `pub type`/`const`/`static`/`use`, a `pub trait`), named by path
//!   (`rusqlite::Error`) or through a `use` of the file.
//! - **`unsafe` in one module:** only [`UNSAFE_MODULE`] may allow `unsafe_code` (the workspace
//!   denies it; `linkly-index` forbids it).
//! - **Each `lib.rs` says its job:** its first line is a `//!` line with words.
//! - **`docs/ARCHITECTURE.md` stays a short, true map:** at most [`MAX_DOC_LINES`] lines, no
//!   line over [`MAX_DOC_LINE`] characters outside code blocks (one sentence a line), its first
//!   diagram names the crates in the order of [`LAYERS`], top layer first (siblings of one floor
//!   in any order), and every repository path it names (in backticks, or a link to a page
//!   beside it) exists.
//! - **The gateway's client never uses its server:** no file under [`GATEWAY_CLIENT`] names
//!   `crate::server` (by path or in a `use crate::{…}` group).
//! - **One test binary per crate runs every test file:** a package whose integration tests are
//!   one binary, `tests/it.rs` (it sets `autotests = false`), declares every other
//!   `tests/*.rs` there as a module, so a file added beside it cannot be left out of the run.
//!
//! The checks read source text; comments and string literals are blanked first, so a
//! doc comment may mention `println!` or `rusqlite::`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde_json::Value;

/// Linkly's crates from the bottom floor up: each may depend only on crates of the floors
/// below its own, so crates on one floor (siblings) never depend on each other. The HTTP host
/// (`linkly-http`) sits under the two front ends it serves, the window (the person's web app)
/// and the MCP server; the gateway serves over the host and the MCP server's protocol, and
/// `linkly-cli` wires them all.
pub(crate) const LAYERS: &[&[&str]] = &[
    &["linkly-core"],
    &["linkly-models"],
    &["linkly-extract"],
    &["linkly-index"],
    &["linkly-tools"],
    &["linkly-http"],
    &["linkly-window", "linkly-mcp"],
    &["linkly-gateway"],
    &["linkly-cli"],
];

/// The floor of a crate in [`LAYERS`] (0 for the bottom one).
fn floor_of(name: &str) -> Option<usize> {
    LAYERS.iter().position(|floor| floor.contains(&name))
}

/// The layers as the docs write them: `linkly-core ← … ← {linkly-window, linkly-mcp} ← …`.
fn layers_text() -> String {
    LAYERS
        .iter()
        .map(|floor| match floor {
            [one] => one.to_string(),
            many => format!("{{{}}}", many.join(", ")),
        })
        .collect::<Vec<_>>()
        .join(" ← ")
}

/// Per Linkly crate, the crates whose types never appear in its public API: the index's
/// storage and ANN graph, the model runtime's inference, tokenizer, SIMD, memory-map and HTTP
/// crates (and the model ones in the index too, which reaches them only through
/// `linkly-models`).
pub(crate) const HIDDEN_CRATES: &[(&str, &[&str])] = &[
    ("linkly-models", MODEL_CRATES),
    ("linkly-index", INDEX_CRATES),
];

/// The crates `linkly-models` keeps out of its public API.
const MODEL_CRATES: &[&str] = &[
    "candle_core",
    "candle_nn",
    "candle_transformers",
    "tokenizers",
    "gemm",
    "pulp",
    "memmap2",
    "ownedbytes",
    "ureq",
];

/// The crates `linkly-index` keeps out of its public API.
const INDEX_CRATES: &[&str] = &[
    "rusqlite",
    "tantivy",
    "hnsw_rs",
    "candle_core",
    "candle_nn",
    "candle_transformers",
    "tokenizers",
    "ureq",
];

/// The longest line `docs/ARCHITECTURE.md` may hold outside code blocks, in characters.
pub(crate) const MAX_DOC_LINE: usize = 400;
/// The most lines `docs/ARCHITECTURE.md` may hold: a map read first, not the internals
/// (those are `docs/internals.md`).
pub(crate) const MAX_DOC_LINES: usize = 150;
/// The first folders of the repository paths `docs/ARCHITECTURE.md` may name and tidy checks.
const REPOSITORY_ROOTS: &[&str] = &[
    "linkly-",
    "xtask/",
    "docs/",
    "interop/",
    "testdata/",
    "fuzz/",
    ".ci/",
    ".github/",
];
/// The gateway's client half (`linkly publish`, `mcp --remote`): it shares `model` and the
/// error with the server half, `src/server/`, and never uses it.
pub(crate) const GATEWAY_CLIENT: &str = "linkly-gateway/src/client/";

const PRINT_MACROS: &[&str] = &["println", "print", "eprintln", "eprint", "dbg"];

/// Runs every check on the workspace; fails with the list of violations.
pub(crate) fn run(_args: &[String]) -> anyhow::Result<()> {
    let root = crate::root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .current_dir(&root)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .output()
        .context("running cargo metadata")?;
    if !out.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let meta: Value = serde_json::from_slice(&out.stdout).context("cargo metadata's JSON")?;
    let packages = meta["packages"].as_array().cloned().unwrap_or_default();

    let mut problems = Vec::new();
    let graph: Vec<(String, Vec<String>)> = packages
        .iter()
        .map(|p| {
            let name = p["name"].as_str().unwrap_or_default();
            let deps = p["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                // A dev-dependency of a package on itself only turns on its test helpers
                // (feature `testing`) for its own integration tests: no edge.
                .filter(|d| !(d["kind"] == "dev" && d["name"] == name))
                .filter_map(|d| d["name"].as_str().map(str::to_string))
                .collect();
            (name.to_string(), deps)
        })
        .collect();
    problems.extend(check_layers(&graph));

    let mut libs: Vec<(String, PathBuf)> = Vec::new();
    for p in &packages {
        let name = p["name"].as_str().unwrap_or_default();
        for t in p["targets"].as_array().into_iter().flatten() {
            let lib = t["kind"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|k| k == "lib" || k == "rlib");
            if lib && let Some(src) = t["src_path"].as_str() {
                libs.push((name.to_string(), PathBuf::from(src)));
            }
        }
    }
    let mut files = 0;
    for (name, lib_rs) in &libs {
        let text = fs_err::read_to_string(lib_rs)?;
        problems.extend(check_opening(&rel(&root, lib_rs), &text));
        let src = lib_rs.parent().context("lib.rs has a folder")?;
        for file in rust_files(src)? {
            if is_binary_source(src, &file) {
                continue;
            }
            files += 1;
            let text = fs_err::read_to_string(&file)?;
            let shown = rel(&root, &file);
            problems.extend(check_no_printing(&shown, &text));
            if shown.starts_with(GATEWAY_CLIENT) {
                problems.extend(check_client_one_way(&shown, &text));
            }
            if let Some((_, hidden)) = HIDDEN_CRATES.iter().find(|(c, _)| c == name) {
                problems.extend(check_public_types(&shown, &text, hidden));
            }
        }
    }
    // `unsafe` stays in its one module: the workspace denies it, and only that module may
    // allow it (every Rust source of every package, binaries and tests included).
    for p in &packages {
        let Some(dir) = p["manifest_path"]
            .as_str()
            .and_then(|m| Path::new(m).parent())
        else {
            continue;
        };
        for sub in ["src", "tests", "benches", "examples"] {
            let d = dir.join(sub);
            if !d.is_dir() {
                continue;
            }
            for file in rust_files(&d)? {
                let text = fs_err::read_to_string(&file)?;
                problems.extend(check_unsafe_allowed(&rel(&root, &file), &text));
            }
        }
        let it = dir.join("tests").join("it.rs");
        if it.is_file() {
            let mut siblings = Vec::new();
            for entry in fs_err::read_dir(dir.join("tests"))? {
                let path = entry?.path();
                if path.extension().is_some_and(|e| e == "rs")
                    && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
                    && stem != "it"
                {
                    siblings.push(stem.to_string());
                }
            }
            siblings.sort();
            let text = fs_err::read_to_string(&it)?;
            problems.extend(check_test_binary(&rel(&root, &it), &text, &siblings));
        }
    }
    let architecture = root.join("docs/ARCHITECTURE.md");
    let page = fs_err::read_to_string(&architecture)?;
    problems.extend(check_architecture_page("docs/ARCHITECTURE.md", &page));
    problems.extend(check_named_paths("docs/ARCHITECTURE.md", &page, |path| {
        root.join(path).exists()
    }));
    if problems.is_empty() {
        println!(
            "tidy: ok ({} crates, {} library sources; layers, no printing, no storage or model \
             types in linkly-index's and linkly-models' public items, lib.rs openings, unsafe \
             only in {UNSAFE_MODULE}, docs/ARCHITECTURE.md's length, lines, diagram and paths, the gateway's client apart from its server, \
             every test file in its crate's test binary)",
            graph.len(),
            files
        );
        return Ok(());
    }
    for p in &problems {
        eprintln!("tidy: {p}");
    }
    bail!(
        "{} violation(s) of docs/ARCHITECTURE.md's invariants",
        problems.len()
    )
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}

/// The `.rs` files under a folder, sorted.
pub(crate) fn rust_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs_err::read_dir(&d)? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The one module allowed `unsafe` (the workspace lint denies it everywhere else).
pub(crate) const UNSAFE_MODULE: &str = "linkly-models/src/x86/mod.rs";

/// An `allow`/`expect` of `unsafe_code` outside [`UNSAFE_MODULE`].
pub(crate) fn check_unsafe_allowed(file: &str, text: &str) -> Vec<String> {
    if file == UNSAFE_MODULE {
        return Vec::new();
    }
    let code = blank_comments_and_strings(text);
    let mut out = Vec::new();
    for (i, line) in code.lines().enumerate() {
        let squeezed: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        if ["allow(", "expect(", "warn("]
            .iter()
            .any(|a| squeezed.contains(&format!("{a}unsafe_code")))
        {
            out.push(format!(
                "{file}:{}: `unsafe_code` allowed outside {UNSAFE_MODULE}, the one module that may",
                i + 1
            ));
        }
    }
    out
}

/// A use of the gateway's server half in a file of its client half: `crate::server` or
/// `super::super::server` by path, or `server` in a `use crate::{…}` group.
pub(crate) fn check_client_one_way(file: &str, text: &str) -> Vec<String> {
    let code = blank_comments_and_strings(text);
    let line_of = |pos: usize| code[..pos].matches('\n').count() + 1;
    let mut lines = BTreeSet::new();
    for (i, line) in code.lines().enumerate() {
        let squeezed: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        if ["crate::server", "super::super::server"]
            .iter()
            .any(|p| squeezed.contains(p))
        {
            lines.insert(i + 1);
        }
    }
    for stmt in statements_starting(&code, "use") {
        let ws = words(stmt);
        if ws.iter().any(|(_, w)| *w == "crate") && ws.iter().any(|(_, w)| *w == "server") {
            let pos = stmt.as_ptr() as usize - code.as_ptr() as usize;
            lines.insert(line_of(pos));
        }
    }
    lines
        .into_iter()
        .map(|l| {
            format!(
                "{file}:{l}: the gateway's client uses its server; the arrow points one way \
                 (share through `crate::model`)"
            )
        })
        .collect()
}

/// A binary's source inside a library's `src`: `main.rs` or anything under `src/bin/`.
fn is_binary_source(src: &Path, file: &Path) -> bool {
    let rel = file.strip_prefix(src).unwrap_or(file);
    rel == Path::new("main.rs") || rel.starts_with("bin")
}

/// The files of `tests/` (their stems, `siblings`) that the crate's one test binary, `it`
/// (the text of `tests/it.rs`), does not declare as modules: with `autotests = false`, cargo
/// would never build them.
pub(crate) fn check_test_binary(file: &str, it: &str, siblings: &[String]) -> Vec<String> {
    let code = blank_comments_and_strings(it);
    let declared: BTreeSet<&str> = code
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("pub ").unwrap_or(l);
            l.strip_prefix("mod ")?.strip_suffix(';').map(str::trim)
        })
        .collect();
    siblings
        .iter()
        .filter(|s| !declared.contains(s.as_str()))
        .map(|s| {
            format!(
                "{file}: tests/{s}.rs is not a module of the test binary (add `mod {s};`): \
                 cargo would never build or run it"
            )
        })
        .collect()
}

/// Layer violations: an edge from a Linkly crate to one at its layer or above, a Linkly crate
/// missing from [`LAYERS`], a dependency on `xtask`.
pub(crate) fn check_layers(graph: &[(String, Vec<String>)]) -> Vec<String> {
    let mut out = Vec::new();
    for (name, deps) in graph {
        let own = floor_of(name);
        if own.is_none() && name.starts_with("linkly-") {
            out.push(format!(
                "crate {name} has no place in the layers (add it to xtask's tidy::LAYERS and to \
                 docs/ARCHITECTURE.md)"
            ));
        }
        let deps: BTreeSet<&String> = deps.iter().collect();
        for dep in deps {
            if dep == "xtask" {
                out.push(format!("{name} depends on xtask (nothing may)"));
                continue;
            }
            match (own, floor_of(dep)) {
                (Some(a), Some(b)) if b >= a => out.push(format!(
                    "{name} depends on {dep}: the direction is {} (an edge never points right, \
                     nor between crates of one floor)",
                    layers_text()
                )),
                _ => {}
            }
        }
    }
    out
}

/// `docs/ARCHITECTURE.md` over [`MAX_DOC_LINES`] lines, its lines over [`MAX_DOC_LINE`]
/// characters outside code blocks, and its first diagram (the first fenced block) when the Linkly crates it names, in the order
/// they first appear, are not [`LAYERS`] top layer first.
pub(crate) fn check_architecture_page(file: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lines = text.lines().count();
    if lines > MAX_DOC_LINES {
        out.push(format!(
            "{file}: {lines} lines (at most {MAX_DOC_LINES}: the map; details go to docs/internals.md)"
        ));
    }
    let (mut in_code, mut diagram, mut diagram_done) = (false, Vec::<String>::new(), false);
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            diagram_done |= in_code;
            in_code = !in_code;
            continue;
        }
        if in_code {
            if !diagram_done {
                for word in line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
                    if floor_of(word).is_some() && !diagram.iter().any(|d| d == word) {
                        diagram.push(word.to_string());
                    }
                }
            }
        } else if line.chars().count() > MAX_DOC_LINE {
            out.push(format!(
                "{file}:{}: a line of {} characters (at most {MAX_DOC_LINE}: one sentence a line)",
                i + 1,
                line.chars().count()
            ));
        }
    }
    // Every crate once, top floor first; siblings in any order.
    let floors: Vec<usize> = diagram.iter().filter_map(|d| floor_of(d)).collect();
    let complete = diagram.len() == LAYERS.iter().map(|f| f.len()).sum::<usize>();
    if !complete || floors.windows(2).any(|w| w[0] < w[1]) {
        out.push(format!(
            "{file}: the diagram names the crates as {} but the layers are {} (top layer first)",
            diagram.join(", "),
            layers_text()
        ));
    }
    out
}

/// The repository paths a page of `docs/` names that do not exist (`exists` is asked with a
/// path from the repository root): spans in backticks outside code blocks that start with one
/// of [`REPOSITORY_ROOTS`] and hold no space, and links to a page beside it (`[x](page.md)`).
pub(crate) fn check_named_paths(
    file: &str,
    text: &str,
    exists: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut named = Vec::new();
        for (k, span) in line.split('`').enumerate() {
            if k % 2 == 1
                && !span.contains(char::is_whitespace)
                && span.contains('/')
                && REPOSITORY_ROOTS.iter().any(|r| span.starts_with(r))
            {
                named.push(span.trim_end_matches('/').to_string());
            }
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let target = rest.split([')', '#']).next().unwrap_or_default();
            if target.ends_with(".md") && !target.contains(':') && !target.contains('/') {
                named.push(format!("docs/{target}"));
            }
        }
        for path in named {
            if !exists(&path) {
                out.push(format!(
                    "{file}:{}: names `{path}`, which does not exist",
                    i + 1
                ));
            }
        }
    }
    out
}

/// A `lib.rs` whose first line is not a `//!` line saying something.
pub(crate) fn check_opening(file: &str, text: &str) -> Vec<String> {
    let first = text.lines().next().unwrap_or_default();
    match first.strip_prefix("//!") {
        Some(rest) if rest.trim().chars().any(char::is_alphabetic) => Vec::new(),
        _ => vec![format!(
            "{file}: the first line must be a `//!` line saying the crate's job"
        )],
    }
}

/// Print macros in library code (outside `#[cfg(test)]` items).
pub(crate) fn check_no_printing(file: &str, text: &str) -> Vec<String> {
    let code = without_test_modules(&blank_comments_and_strings(text));
    let mut out = Vec::new();
    for (i, line) in code.lines().enumerate() {
        for (pos, word) in words(line) {
            if PRINT_MACROS.contains(&word)
                && line[pos + word.len()..].trim_start().starts_with('!')
            {
                out.push(format!(
                    "{file}:{}: `{word}!` in a library (log with `tracing`, or return the text)",
                    i + 1
                ));
            }
        }
    }
    out
}

/// Types of `hidden` crates in the file's `pub` items.
pub(crate) fn check_public_types(file: &str, text: &str, hidden: &[&str]) -> Vec<String> {
    let code = blank_comments_and_strings(text);
    // Names a `use` of the file brings in from a hidden crate: `use rusqlite::{Connection, Error
    // as SqlError};` makes `Connection` and `SqlError` hidden here.
    let mut imported: BTreeMap<String, String> = BTreeMap::new();
    for stmt in statements_starting(&code, "use") {
        // Only a module's own `use`s (at the start of a line) name things its items can use;
        // one inside a function body (indented) is local to it.
        let at = stmt.as_ptr() as usize - code.as_ptr() as usize;
        if at > 0 && code.as_bytes()[at - 1] != b'\n' {
            continue;
        }
        let body = stmt.trim_start_matches("use").trim();
        let body = body.strip_prefix("::").unwrap_or(body);
        let Some(krate) = hidden.iter().find(|h| body.starts_with(&format!("{h}::"))) else {
            continue;
        };
        let ws: Vec<&str> = words(body).into_iter().map(|(_, w)| w).collect();
        for (j, w) in ws.iter().enumerate() {
            // Types and traits (capitalised); `X as Y` brings in `Y`, not `X`.
            let renamed = ws.get(j + 1) == Some(&"as");
            if w.starts_with(|c: char| c.is_ascii_uppercase()) && !renamed {
                imported.insert((*w).to_string(), (*krate).to_string());
            }
        }
    }
    let mut out = Vec::new();
    for (offset, item) in public_items(&code) {
        let line = code[..offset].matches('\n').count() + 1;
        let mut named: BTreeSet<String> = BTreeSet::new();
        for (pos, w) in words(&item) {
            if hidden.contains(&w) && item[pos + w.len()..].starts_with("::") {
                named.insert(format!("{w}::"));
            } else if let Some(k) = imported.get(w)
                && !item[..pos].ends_with("::")
            {
                named.insert(format!("{w} (from {k})"));
            }
        }
        for n in named {
            out.push(format!(
                "{file}:{line}: a public item names {n}; keep storage and model types \
                 private (pub(crate)) or wrap them"
            ));
        }
    }
    out
}

/// Each public item's start offset and the text that is public: a `fn`'s signature, a
/// struct's `pub` fields, an enum's body, a `type`/`const`/`static`/`use` statement, a trait.
fn public_items(code: &str) -> Vec<(usize, String)> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for (pos, w) in words(code) {
        if w != "pub" {
            continue;
        }
        let rest = &code[pos + 3..];
        let after = rest.trim_start();
        if after.starts_with('(') {
            continue; // pub(crate), pub(super), pub(in …)
        }
        let kw_at = pos + 3 + (rest.len() - after.len());
        let mut kws = words(after).into_iter().map(|(_, w)| w);
        let mut kw = kws.next().unwrap_or_default();
        while matches!(kw, "async" | "unsafe" | "const" | "extern")
            && !(kw == "const" && is_const_item(after))
        {
            kw = kws.next().unwrap_or_default();
        }
        let end_of = |stops: &[u8]| {
            let mut depth = 0i32;
            let mut i = kw_at;
            while i < bytes.len() {
                match bytes[i] {
                    b'(' | b'[' | b'<' => depth += 1,
                    b')' | b']' => depth -= 1,
                    b'>' if i > 0 && bytes[i - 1] != b'-' && bytes[i - 1] != b'=' => depth -= 1,
                    c if depth <= 0 && stops.contains(&c) => return i,
                    _ => {}
                }
                i += 1;
            }
            bytes.len()
        };
        match kw {
            "fn" => out.push((pos, code[kw_at..end_of(b"{;")].to_string())),
            "type" | "static" | "const" | "use" => {
                out.push((pos, code[kw_at..end_of(b";")].to_string()))
            }
            "enum" | "trait" => {
                let open = end_of(b"{;");
                out.push((pos, code[kw_at..block_end(code, open)].to_string()));
            }
            "struct" => {
                let open = end_of(b"{(;");
                let close = block_end(code, open);
                let body = code.get(open + 1..close.saturating_sub(1)).unwrap_or("");
                let fields: Vec<&str> = split_top_level(body)
                    .into_iter()
                    .filter(|f| {
                        let f = f.trim_start();
                        let f = skip_attributes(f);
                        f.starts_with("pub") && !f[3..].trim_start().starts_with('(')
                    })
                    .collect();
                if !fields.is_empty() {
                    out.push((pos, fields.join(",")));
                }
            }
            _ => {}
        }
    }
    out
}

fn is_const_item(after: &str) -> bool {
    // `pub const NAME: T` is an item; `pub const fn` is a function.
    let mut ws = words(after).into_iter().map(|(_, w)| w);
    ws.next() == Some("const") && ws.next() != Some("fn")
}

fn skip_attributes(mut f: &str) -> &str {
    while f.starts_with("#[") {
        let mut depth = 0;
        let mut cut = f.len();
        for (i, c) in f.char_indices() {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        cut = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        f = f[cut..].trim_start();
    }
    f
}

/// The offset just past the block that opens at `open` (`{` or `(`), or `open + 1` when no
/// block opens there (`;`).
fn block_end(code: &str, open: usize) -> usize {
    let bytes = code.as_bytes();
    let (o, c) = match bytes.get(open) {
        Some(b'{') => (b'{', b'}'),
        Some(b'(') => (b'(', b')'),
        _ => return (open + 1).min(bytes.len()),
    };
    let mut depth = 0;
    for (i, b) in bytes.iter().enumerate().skip(open) {
        if *b == o {
            depth += 1;
        } else if *b == c {
            depth -= 1;
            if depth == 0 {
                return i + 1;
            }
        }
    }
    bytes.len()
}

/// Splits at commas outside brackets.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let bytes = s.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        match b {
            b'(' | b'[' | b'{' | b'<' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'>' if i > 0 && bytes[i - 1] != b'-' && bytes[i - 1] != b'=' => depth -= 1,
            b',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// The statements (up to their `;`) that begin with a keyword, at any depth.
fn statements_starting<'a>(code: &'a str, keyword: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    for (pos, w) in words(code) {
        if w == keyword {
            let end = code[pos..].find(';').map_or(code.len(), |e| pos + e);
            out.push(&code[pos..end]);
        }
    }
    out
}

/// The identifiers of a text with their byte offsets.
fn words(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        let ident = c.is_alphanumeric() || c == '_';
        match (ident, start) {
            (true, None) => start = Some(i),
            (false, Some(b)) => {
                out.push((b, &s[b..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(b) = start {
        out.push((b, &s[b..]));
    }
    out
}

/// The text with every comment and the contents of every string and character literal
/// replaced by spaces (line breaks kept, so line numbers stay).
pub(crate) fn blank_comments_and_strings(src: &str) -> String {
    let chars: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if (c == 'r' || (c == 'b' && next == Some('r')))
            && !prev_is_ident(&chars, i)
            && raw_string_start(&chars, i + usize::from(c == 'b')).is_some()
        {
            let start = i + usize::from(c == 'b');
            let hashes = raw_string_start(&chars, start).unwrap_or(0);
            // r, #…, "
            let open = start + 1 + hashes + 1;
            for ch in &chars[i..open] {
                out.push(*ch);
            }
            i = open;
            loop {
                if i >= chars.len() {
                    break;
                }
                if chars[i] == '"' && (0..hashes).all(|h| chars.get(i + 1 + h) == Some(&'#')) {
                    out.push('"');
                    out.extend(std::iter::repeat_n('#', hashes));
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            if i < chars.len() {
                out.push('"');
                i += 1;
            }
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{1F600}', '\''), else a lifetime ('a).
            let close = if next == Some('\\') {
                (i + 3..chars.len().min(i + 12)).find(|&j| chars[j] == '\'')
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match close {
                Some(end) => {
                    out.push('\'');
                    out.extend(std::iter::repeat_n(' ', end - i - 1));
                    out.push('\'');
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev_is_ident(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// At `r`: the number of `#`s when a raw string opens here (`r"`, `r#"`).
fn raw_string_start(chars: &[char], i: usize) -> Option<usize> {
    if chars.get(i) != Some(&'r') {
        return None;
    }
    let mut j = i + 1;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    (chars.get(j) == Some(&'"')).then_some(j - i - 1)
}

/// The code with every item under `#[cfg(test)]` blanked (line breaks kept).
fn without_test_modules(code: &str) -> String {
    let mut out = code.to_string();
    let mut from = 0;
    while let Some(at) = out[from..].find("#[cfg(test)]").map(|a| a + from) {
        let after = at + "#[cfg(test)]".len();
        // The item ends at its block's close, or at `;` for a one-line item.
        let brace = out[after..].find('{').map(|b| b + after);
        let semi = out[after..].find(';').map(|s| s + after);
        let end = match (brace, semi) {
            (Some(b), Some(s)) if s < b => s + 1,
            (Some(b), _) => block_end(&out, b),
            (None, Some(s)) => s + 1,
            (None, None) => out.len(),
        };
        let blanked: String = out[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(at..end, &blanked);
        from = at + blanked.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(edges: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
        edges
            .iter()
            .map(|(n, d)| (n.to_string(), d.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    #[test]
    fn every_test_file_is_a_module_of_the_test_binary() {
        let it = "//! mod omitted;\nmod common;\nmod a;\n// mod b;\nmod c ;\n";
        let siblings = ["a", "b", "c", "omitted"].map(String::from);
        let problems = check_test_binary("x/tests/it.rs", it, &siblings);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("tests/b.rs"), "{problems:?}");
        assert!(problems[1].contains("tests/omitted.rs"), "{problems:?}");
        assert!(check_test_binary("it.rs", "mod a;\nmod b;\n", &siblings[..2]).is_empty());
    }

    #[test]
    fn the_architecture_page_names_only_paths_that_exist() {
        let page = "See `linkly-core/src/lib.rs` and `docs/gone.md`, [the long form](internals.md), \
                    [ext](https://x.org/a.md), `x86/mod.rs`, `a b/c`.\n```\n`linkly-x/y.rs`\n```\n";
        let present = ["linkly-core/src/lib.rs", "docs/internals.md"];
        let problems = check_named_paths("A.md", page, |p| present.contains(&p));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("docs/gone.md"), "{problems:?}");
        let gone = check_named_paths("A.md", "[x](missing.md)\n", |_| false);
        assert!(gone[0].contains("docs/missing.md"), "{gone:?}");
    }

    #[test]
    fn the_architecture_page_is_held_to_its_length() {
        let diagram: String = LAYERS
            .iter()
            .rev()
            .flat_map(|floor| floor.iter())
            .map(|l| format!("{l}\n"))
            .collect();
        let page = |extra: usize| format!("```\n{diagram}```\n{}", "A line.\n".repeat(extra));
        let fits = MAX_DOC_LINES - diagram.lines().count() - 2;
        assert!(check_architecture_page("A.md", &page(fits)).is_empty());
        let problems = check_architecture_page("A.md", &page(fits + 1));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("lines (at most 150"), "{problems:?}");
    }

    #[test]
    fn the_architecture_page_is_held_to_its_lines_and_layers() {
        let diagram: String = LAYERS
            .iter()
            .rev()
            .flat_map(|floor| floor.iter())
            .map(|l| format!("{l}   what it does\n    ▲\n"))
            .collect();
        let good = format!("# Architecture\n\n```text\n{diagram}```\nOne sentence.\n");
        assert!(
            check_architecture_page("A.md", &good).is_empty(),
            "{:?}",
            check_architecture_page("A.md", &good)
        );
        let long = format!("{good}{}\n```\n{}\n```\n", "x".repeat(401), "y".repeat(500));
        let problems = check_architecture_page("A.md", &long);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("A.md:26: a line of 401"),
            "{problems:?}"
        );
        // Siblings come in any order.
        let siblings = good
            .replace("linkly-mcp ", "linkly-tmp ")
            .replace("linkly-window ", "linkly-mcp ")
            .replace("linkly-tmp ", "linkly-window ");
        assert!(check_architecture_page("A.md", &siblings).is_empty());
        let swapped = good
            .replace("linkly-http ", "linkly-tmp ")
            .replace("linkly-window ", "linkly-http ")
            .replace("linkly-tmp ", "linkly-window ");
        let problems = check_architecture_page("A.md", &swapped);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("the diagram names"), "{problems:?}");
        let missing = good.replace("linkly-http ", "linkly-tmp ");
        assert_eq!(check_architecture_page("A.md", &missing).len(), 1);
    }

    #[test]
    fn layers_point_left_only() {
        let ok = g(&[
            ("linkly-core", &["serde"]),
            ("linkly-models", &["linkly-core", "candle-core"]),
            ("linkly-extract", &["linkly-core", "linkly-models"]),
            (
                "linkly-index",
                &["linkly-core", "linkly-models", "linkly-extract"],
            ),
            ("linkly-tools", &["linkly-index", "linkly-core"]),
            ("linkly-http", &["linkly-tools"]),
            ("linkly-window", &["linkly-http", "linkly-tools"]),
            ("linkly-mcp", &["linkly-tools"]),
            (
                "linkly-cli",
                &["linkly-mcp", "linkly-window", "linkly-tools"],
            ),
            ("xtask", &["linkly-cli", "anyhow"]),
        ]);
        assert!(check_layers(&ok).is_empty(), "{:?}", check_layers(&ok));

        let bad = g(&[
            ("linkly-core", &["linkly-extract"]),
            ("linkly-index", &["linkly-index"]),
            ("linkly-mcp", &["linkly-cli", "xtask"]),
            ("linkly-web", &["linkly-core"]),
            ("linkly-models", &["linkly-index"]),
            ("linkly-window", &["linkly-mcp"]),
        ]);
        let p = check_layers(&bad);
        assert_eq!(p.len(), 7, "{p:#?}");
        assert!(p[0].contains("linkly-core depends on linkly-extract"));
        assert!(p[1].contains("linkly-index depends on linkly-index"));
        assert!(p[2].contains("linkly-mcp depends on linkly-cli"));
        assert!(p[3].contains("depends on xtask"));
        assert!(p[4].contains("linkly-web has no place"));
        assert!(p[5].contains("linkly-models depends on linkly-index"));
        assert!(p[6].contains("linkly-window depends on linkly-mcp"));
        assert!(p[6].contains("{linkly-window, linkly-mcp}"), "{}", p[6]);
    }

    #[test]
    fn unsafe_is_allowed_in_one_module_only() {
        let src =
            "//! allow(unsafe_code) in a comment is fine\n#![allow(unsafe_code)]\nfn f() {}\n";
        assert!(check_unsafe_allowed(UNSAFE_MODULE, src).is_empty());
        let p = check_unsafe_allowed("linkly-tools/src/lib.rs", src);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].contains("linkly-tools/src/lib.rs:2"), "{p:?}");
        let spaced = "#[expect( unsafe_code )]\nmod m {}\n";
        assert_eq!(check_unsafe_allowed("a.rs", spaced).len(), 1);
        assert!(check_unsafe_allowed("a.rs", "let s = \"allow(unsafe_code)\";\n").is_empty());
    }

    #[test]
    fn the_gateway_client_never_uses_the_server() {
        let f = "linkly-gateway/src/client/remote.rs";
        let fine = "//! Not crate::server.\nuse crate::model::LibraryKey;\nuse rmcp::ServerHandler;\n\
                    use linkly_mcp::server::X;\nfn f() { let _ = \"crate::server\"; }\n";
        assert!(check_client_one_way(f, fine).is_empty(), "{fine}");
        let by_path = "fn f() { crate::server::db::Db::open(); }\n";
        assert_eq!(check_client_one_way(f, by_path).len(), 1);
        let grouped = "use crate::{\n    model::User,\n    server::http,\n};\n";
        let p = check_client_one_way(f, grouped);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].contains("remote.rs:1"), "{p:?}");
        let spaced = "use crate :: server :: mcp;\n";
        assert_eq!(check_client_one_way(f, spaced).len(), 1);
    }

    #[test]
    fn lib_rs_opens_with_its_job() {
        assert!(check_opening("a/lib.rs", "//! Does things.\n\nmod a;\n").is_empty());
        assert_eq!(check_opening("a/lib.rs", "mod a;\n//! late\n").len(), 1);
        assert_eq!(check_opening("a/lib.rs", "//!\n//! text\n").len(), 1);
        assert_eq!(check_opening("a/lib.rs", "// plain comment\n").len(), 1);
        assert_eq!(check_opening("a/lib.rs", "").len(), 1);
    }

    #[test]
    fn printing_is_found_in_code_only() {
        let src = r####"
//! Mentions println! in a doc comment.
/// And `dbg!(x)` here.
fn f(x: u32) -> String {
    let s = "println!(\"in a string\")";
    let r = r#"eprintln!("raw")"#;
    let c = '"';
    /* print!("block") */
    tracing::info!(x, "fine");
    let _ = format!("{s}{r}{c}");
    println!("{x}");
    std :: dbg !(x);
    my_println!("not ours");
    String::new()
}

#[cfg(test)]
mod tests {
    fn t() { println!("tests may print"); { eprintln!("nested"); } }
}

fn after() { eprint!("caught after the tests"); }
"####;
        let p = check_no_printing("x.rs", src);
        assert_eq!(p.len(), 3, "{p:#?}");
        assert!(p[0].starts_with("x.rs:11: `println!`"), "{}", p[0]);
        assert!(p[1].starts_with("x.rs:12: `dbg!`"), "{}", p[1]);
        assert!(p[2].starts_with("x.rs:22: `eprint!`"), "{}", p[2]);
    }

    #[test]
    fn storage_types_in_public_items_are_found() {
        let src = r#"
use rusqlite::{Connection, Error as SqlError};
use tantivy::schema::Field;
use std::path::Path;

/// Mentions rusqlite::Error in a doc comment: fine.
pub struct Store {
    conn: Connection,
    pub path: std::path::PathBuf,
    pub(crate) field: Field,
}

pub struct Leak {
    pub conn: Connection,
}

pub(crate) fn private(c: &rusqlite::Connection) {}

pub fn open(path: &Path) -> Result<Store, SqlError> { let _ = "tantivy::x"; todo!() }

pub fn fine(path: &Path) -> usize {
    let c: rusqlite::Connection = todo!();
    0
}

#[derive(Debug)]
pub enum Error {
    #[error("sqlite")]
    Sql(#[from] rusqlite::Error),
    Io(std::io::Error),
}

pub(crate) enum Inner {
    Sql(rusqlite::Error),
}

pub type Tx<'a> = tantivy::IndexWriter<'a>;

pub use tantivy::TantivyError;
"#;
        let p = check_public_types("store.rs", src, INDEX_CRATES);
        let lines: Vec<&str> = p
            .iter()
            .map(|l| l.split(": a public").next().unwrap())
            .collect();
        assert_eq!(
            lines,
            [
                "store.rs:13",
                "store.rs:19",
                "store.rs:27",
                "store.rs:37",
                "store.rs:39"
            ],
            "{p:#?}"
        );
        assert!(p[0].contains("Connection (from rusqlite)"));
        assert!(p[1].contains("SqlError (from rusqlite)"));
        assert!(p[2].contains("rusqlite::"));
        assert!(p[3].contains("tantivy::"));
    }

    #[test]
    fn the_model_runtime_keeps_its_crates_private_too() {
        let hidden = |c: &str| {
            HIDDEN_CRATES
                .iter()
                .find(|(n, _)| *n == c)
                .map(|(_, h)| *h)
                .unwrap()
        };
        let src = "use candle_core::Tensor;\n\npub fn f(t: Tensor) {}\n\
                   pub(crate) fn g(t: &tokenizers::Tokenizer) {}\n\
                   pub fn h() -> ownedbytes::OwnedBytes { todo!() }\n";
        let p = check_public_types("linkly-models/src/lib.rs", src, hidden("linkly-models"));
        assert_eq!(p.len(), 2, "{p:#?}");
        assert!(p[0].contains("Tensor (from candle_core)"), "{p:#?}");
        assert!(p[1].contains("ownedbytes::"), "{p:#?}");
        // Each crate is held to its own list.
        let p = check_public_types("x.rs", src, hidden("linkly-index"));
        assert_eq!(p.len(), 1, "{p:#?}");
        assert!(p[0].contains("Tensor (from candle_core)"), "{p:#?}");
    }

    #[test]
    fn a_use_inside_a_function_is_local_to_it() {
        let src = "fn convert(e: u8) -> u8 {\n    use tantivy::TantivyError as T;\n    e\n}\n\n\
                   pub type Result<T, E = Error> = std::result::Result<T, E>;\n";
        assert_eq!(
            check_public_types("error.rs", src, INDEX_CRATES),
            Vec::<String>::new()
        );
        let src = "use tantivy::TantivyError as T;\n\npub fn f() -> T { todo!() }\n";
        assert_eq!(check_public_types("error.rs", src, INDEX_CRATES).len(), 1);
    }

    #[test]
    fn blanking_keeps_lines_and_lifetimes() {
        let src = "fn f<'a>(s: &'a str) -> char { let _ = \"a\nb\"; 'x' } // c\n";
        let b = blank_comments_and_strings(src);
        assert_eq!(b.len(), src.len());
        assert_eq!(b.matches('\n').count(), 2);
        assert!(b.contains("<'a>(s: &'a str)"));
        assert!(!b.contains("// c"));
        assert!(!b.contains('x'));
    }
}
