//! The one document filter: which documents a search or a catalog query covers (a library's
//! folders and tagged notes, a set of notes, a path glob, document types, a modification
//! window), compiled to one SQL `WHERE` clause over the metadata store.
//!
//! The catalog counts and pages with the clause. A search runs it once, as
//! `SELECT id FROM docs WHERE …`, into an [`IdSet`] that its BM25 and vector arms consult
//! before their cut; no row is read into Rust to be tested.
//!
//! Directory restrictions are path ranges (`dir/` ≤ path < `dir0`, since `0` follows `/`),
//! which SQLite answers from the unique index on `path`. A path glob is a regular expression
//! evaluated by the SQL function [`GLOB_FUNCTION`], registered on every connection of the
//! store ([`register_functions`]); it is compiled once per statement.

use linkly_core::DocType;
use regex::Regex;
use rusqlite::Connection;
use rusqlite::functions::FunctionFlags;
use rusqlite::types::Value as SqlValue;

use crate::{Error, Result};

/// The SQL function that matches a path glob: `linkly_path_glob(regex, path)`, true when the
/// glob's regular expression matches somewhere in `path`.
pub(crate) const GLOB_FUNCTION: &str = "linkly_path_glob";

/// Which documents a search or a catalog query covers. Every criterion given must hold (AND);
/// the default covers every document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocFilter {
    /// Absolute directories whose subtrees are covered, OR-ed (a library's folders). `None`
    /// covers every document; an empty list covers none.
    pub dirs: Option<Vec<String>>,
    /// Exact paths covered besides the subtrees of `dirs` (OR-ed with them), when `dirs` is
    /// given: the notes a library's tag filter takes in. Default: none.
    pub paths: Vec<String>,
    /// Only these exact paths: the notes of `scope="notes"` or of a note-tag filter. `None`
    /// restricts nothing; an empty list covers none.
    pub only_paths: Option<Vec<String>>,
    /// Only paths the glob matches (somewhere in the absolute path).
    pub path_glob: Option<PathGlob>,
    /// Only these types.
    pub doc_types: Option<Vec<DocType>>,
    /// Modified at or after (Unix ms).
    pub modified_after: Option<i64>,
    /// Modified at or before (Unix ms).
    pub modified_before: Option<i64>,
}

impl DocFilter {
    /// True when nothing is restricted.
    pub fn is_empty(&self) -> bool {
        self.dirs.is_none()
            && self.only_paths.is_none()
            && self.path_glob.is_none()
            && self.doc_types.is_none()
            && self.modified_after.is_none()
            && self.modified_before.is_none()
    }

    /// Whether a document passes the filter, tested in memory: the same rule as its SQL clause,
    /// for a store that filters the rows it read (a gateway's library).
    pub fn matches(&self, path: &str, doc_type: DocType, modified_at: i64) -> bool {
        let under = |dir: &String| {
            let (lo, hi) = dir_range(dir);
            path >= lo.as_str() && path < hi.as_str()
        };
        if let Some(dirs) = &self.dirs
            && !dirs.iter().any(under)
            && !self.paths.iter().any(|p| p == path)
        {
            return false;
        }
        if let Some(only) = &self.only_paths
            && !only.iter().any(|p| p == path)
        {
            return false;
        }
        if let Some(types) = &self.doc_types
            && !types.contains(&doc_type)
        {
            return false;
        }
        if self.modified_after.is_some_and(|a| modified_at < a)
            || self.modified_before.is_some_and(|b| modified_at > b)
        {
            return false;
        }
        self.path_glob.as_ref().is_none_or(|g| g.matches(path))
    }

    /// The `WHERE` clause of the filter over the `docs` table and its parameters, numbered
    /// from `?1`.
    pub(crate) fn where_clause(&self) -> (String, Vec<SqlValue>) {
        self.clause(false)
    }

    /// The `WHERE` clause of a search's allowed ids: when the filter names paths (a library,
    /// notes), SQLite is kept off the time index (`+modified_at`), so that it seeks the path
    /// ranges and tests the rest on those rows only. Without statistics it would otherwise
    /// walk a broad time window's index entries and test the paths of each.
    pub(crate) fn ids_clause(&self) -> (String, Vec<SqlValue>) {
        self.clause(self.dirs.is_some() || self.only_paths.is_some())
    }

    fn clause(&self, by_path: bool) -> (String, Vec<SqlValue>) {
        let mut parts = Vec::new();
        let mut params = Vec::new();
        if let Some(dirs) = &self.dirs {
            let mut ors = Vec::new();
            for d in dirs {
                let (lo, hi) = dir_range(d);
                params.push(SqlValue::Text(lo));
                params.push(SqlValue::Text(hi));
                ors.push(format!(
                    "(path >= ?{} AND path < ?{})",
                    params.len() - 1,
                    params.len()
                ));
            }
            if !self.paths.is_empty() {
                ors.push(paths_in(&mut params, &self.paths));
            }
            if ors.is_empty() {
                parts.push("0".to_string());
            } else {
                parts.push(format!("({})", ors.join(" OR ")));
            }
        }
        if let Some(only) = &self.only_paths {
            if only.is_empty() {
                parts.push("0".to_string());
            } else {
                parts.push(paths_in(&mut params, only));
            }
        }
        if let Some(types) = &self.doc_types {
            let mut ins = Vec::new();
            for t in types {
                params.push(SqlValue::Text(t.as_str().to_string()));
                ins.push(format!("?{}", params.len()));
            }
            if ins.is_empty() {
                parts.push("0".to_string());
            } else {
                parts.push(format!("doc_type IN ({})", ins.join(", ")));
            }
        }
        let time = if by_path {
            "+modified_at"
        } else {
            "modified_at"
        };
        if let Some(a) = self.modified_after {
            params.push(SqlValue::Integer(a));
            parts.push(format!("{time} >= ?{}", params.len()));
        }
        if let Some(b) = self.modified_before {
            params.push(SqlValue::Integer(b));
            parts.push(format!("{time} <= ?{}", params.len()));
        }
        // Last: SQLite tests the terms in order, and the cheap ones leave fewer paths to match.
        if let Some(glob) = &self.path_glob {
            params.push(SqlValue::Text(glob.regex.as_str().to_string()));
            parts.push(format!("{GLOB_FUNCTION}(?{}, path)", params.len()));
        }
        if parts.is_empty() {
            ("1".to_string(), params)
        } else {
            (parts.join(" AND "), params)
        }
    }
}

/// `path IN (…)` over a list of exact paths, with one parameter however many paths (SQLite
/// limits the parameters of a statement).
fn paths_in(params: &mut Vec<SqlValue>, paths: &[String]) -> String {
    params.push(SqlValue::Text(
        serde_json::to_string(paths).unwrap_or_else(|_| "[]".to_string()),
    ));
    format!("path IN (SELECT value FROM json_each(?{}))", params.len())
}

/// `dir/` and the first string after every path under it.
pub(crate) fn dir_range(dir: &str) -> (String, String) {
    let mut lo = dir.to_string();
    if !lo.ends_with('/') {
        lo.push('/');
    }
    let mut hi = lo[..lo.len() - 1].to_string();
    hi.push('0');
    (lo, hi)
}

/// Registers the filter's SQL functions on a connection (each connection of the store).
pub(crate) fn register_functions(conn: &Connection) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        GLOB_FUNCTION,
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;
            // Compiled once per statement: SQLite keeps the auxiliary data of a constant
            // argument (a bound parameter) from row to row.
            let regex: std::sync::Arc<Regex> = ctx
                .get_or_create_aux(0, |v| -> std::result::Result<_, BoxError> {
                    Ok(Regex::new(v.as_str()?)?)
                })?;
            let path = ctx
                .get_raw(1)
                .as_str()
                .map_err(|e| rusqlite::Error::UserFunctionError(e.into()))?;
            Ok(regex.is_match(path))
        },
    )
}

/// A set of document ids: a bitmap over the ids, which the store hands out densely from 1.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct IdSet {
    words: Vec<u64>,
    len: usize,
}

impl IdSet {
    /// Whether `id` is in the set.
    #[inline]
    pub(crate) fn contains(&self, id: u64) -> bool {
        usize::try_from(id >> 6)
            .ok()
            .and_then(|w| self.words.get(w))
            .is_some_and(|word| word & (1 << (id & 63)) != 0)
    }

    /// Adds `id`.
    pub(crate) fn insert(&mut self, id: u64) {
        let w = (id >> 6) as usize;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        let bit = 1 << (id & 63);
        if self.words[w] & bit == 0 {
            self.words[w] |= bit;
            self.len += 1;
        }
    }

    /// True when the set holds no id.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl FromIterator<u64> for IdSet {
    fn from_iter<I: IntoIterator<Item = u64>>(iter: I) -> IdSet {
        let mut set = IdSet::default();
        for id in iter {
            set.insert(id);
        }
        set
    }
}

/// A compiled `path_glob`: matched as a substring of the absolute path.
///
/// `*` matches any run of characters including `/`, `?` one character, `[...]` a class
/// (`[!...]` or `[^...]` negated), a backslash escapes the next character; everything else is
/// literal and case-sensitive. No leading or trailing `*` is needed.
#[derive(Debug, Clone)]
pub struct PathGlob {
    glob: String,
    regex: Regex,
}

impl PartialEq for PathGlob {
    fn eq(&self, other: &PathGlob) -> bool {
        self.glob == other.glob
    }
}

impl Eq for PathGlob {}

impl PathGlob {
    /// Compiles a glob, or says what is wrong with it ([`Error::InvalidGlob`]).
    pub fn new(glob: &str) -> Result<PathGlob> {
        if glob.is_empty() {
            return Err(Error::InvalidGlob("path_glob must not be empty".into()));
        }
        let mut re = String::new();
        let mut chars = glob.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '*' => re.push_str(".*"),
                '?' => re.push('.'),
                '\\' => match chars.next() {
                    Some(n) => re.push_str(&regex::escape(&n.to_string())),
                    None => re.push_str(&regex::escape("\\")),
                },
                '[' => {
                    let mut class = String::from("[");
                    if matches!(chars.peek(), Some('!') | Some('^')) {
                        chars.next();
                        class.push('^');
                    }
                    let mut closed = false;
                    let mut first = true;
                    while let Some(n) = chars.next() {
                        if n == ']' && !first {
                            closed = true;
                            break;
                        }
                        first = false;
                        match n {
                            '\\' => {
                                if let Some(e) = chars.next() {
                                    class.push_str(&regex::escape(&e.to_string()));
                                }
                            }
                            '[' | ']' | '&' | '~' | '^' => {
                                class.push('\\');
                                class.push(n);
                            }
                            _ => class.push(n),
                        }
                    }
                    if !closed {
                        return Err(Error::InvalidGlob(format!(
                            "path_glob {glob:?} has an unclosed '[' (escape it as \\[ to match it literally)"
                        )));
                    }
                    class.push(']');
                    re.push_str(&class);
                }
                _ => re.push_str(&regex::escape(&c.to_string())),
            }
        }
        let regex = Regex::new(&format!("(?s){re}")).map_err(|e| {
            Error::InvalidGlob(format!("path_glob {glob:?} is not a valid glob: {e}"))
        })?;
        Ok(PathGlob {
            glob: glob.to_string(),
            regex,
        })
    }

    /// The glob as given.
    pub fn as_str(&self) -> &str {
        &self.glob
    }

    /// True when the glob matches somewhere in `path`.
    pub fn matches(&self, path: &str) -> bool {
        self.regex.is_match(path)
    }

    /// Escapes `* ? [ \` so that the result matches `literal` exactly.
    pub fn escape(literal: &str) -> String {
        let mut out = String::with_capacity(literal.len());
        for c in literal.chars() {
            if matches!(c, '*' | '?' | '[' | '\\') {
                out.push('\\');
            }
            out.push(c);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(glob: &str, path: &str) -> bool {
        PathGlob::new(glob).unwrap().matches(path)
    }

    #[test]
    fn substring_semantics() {
        assert!(m("projects/", "/home/me/projects/a.md"));
        assert!(m("*.md", "/x/y.md"));
        assert!(m("2024*report", "/a/2024/q1/report.pdf"));
        assert!(m("a?c", "/abc"));
        assert!(m("[0-9][0-9]", "/x/42/y"));
        assert!(!m("[!a-z]x", "/ax"));
        assert!(!m("Projects", "/home/me/projects"));
    }

    #[test]
    fn escapes_round_trip() {
        let dir = "/tmp/we[ir]d*dir?/";
        let g = PathGlob::escape(dir);
        assert!(m(&g, "/tmp/we[ir]d*dir?/file.md"));
        assert!(!m(&g, "/tmp/weid*dir?/file.md"));
        assert!(PathGlob::new("[abc").is_err());
        assert!(PathGlob::new("").is_err());
    }

    #[test]
    fn ranges_cover_exactly_a_subtree() {
        let (lo, hi) = dir_range("/a/b");
        for (p, inside) in [
            ("/a/b/x.md", true),
            ("/a/b/c/d.md", true),
            ("/a/b.md", false),
            ("/a/b-c/x.md", false),
            ("/a/bz/x.md", false),
            ("/a/b0/x.md", false),
        ] {
            assert_eq!(p >= lo.as_str() && p < hi.as_str(), inside, "{p}");
        }
        assert_eq!(dir_range("/"), ("/".to_string(), "0".to_string()));
    }

    #[test]
    fn id_sets_hold_exactly_their_ids() {
        let set: IdSet = [1u64, 4, 64, 65, 4, 1000].into_iter().collect();
        assert!(!set.is_empty());
        for id in [1, 4, 64, 65, 1000] {
            assert!(set.contains(id), "{id}");
        }
        for id in [0, 2, 63, 66, 999, 1001, u64::MAX] {
            assert!(!set.contains(id), "{id}");
        }
        assert!(IdSet::default().is_empty());
    }

    /// The clause selects in SQL exactly the paths the glob matches in Rust, including
    /// classes, escapes and non-ASCII paths.
    #[test]
    fn the_clause_agrees_with_the_glob() {
        let conn = Connection::open_in_memory().unwrap();
        register_functions(&conn).unwrap();
        conn.execute_batch(
            "CREATE TABLE docs (id INTEGER PRIMARY KEY, path TEXT, doc_type TEXT, modified_at INTEGER)",
        )
        .unwrap();
        let paths = [
            "/home/me/projects/a.md",
            "/home/me/Projects/b.md",
            "/x/42/y.txt",
            "/tmp/we[ir]d*dir?/file.md",
            "/tmp/weid*dir?/file.md",
            "/données/été/ß.md",
            "/a/2024/q1/report.pdf",
        ];
        for (i, p) in paths.iter().enumerate() {
            conn.execute(
                "INSERT INTO docs VALUES (?1, ?2, 'md', ?1)",
                rusqlite::params![i as i64 + 1, p],
            )
            .unwrap();
        }
        for glob in [
            "projects/",
            "*.md",
            "[0-9][0-9]",
            "[!a-z]x",
            "/tmp/we\\[ir]d\\*dir\\?/",
            "é?/",
            "2024*report",
            "nothing",
        ] {
            let filter = DocFilter {
                path_glob: Some(PathGlob::new(glob).unwrap()),
                ..DocFilter::default()
            };
            let (clause, params) = filter.where_clause();
            let mut stmt = conn
                .prepare(&format!("SELECT path FROM docs WHERE {clause} ORDER BY id"))
                .unwrap();
            let got: Vec<String> = stmt
                .query_map(rusqlite::params_from_iter(params), |r| r.get(0))
                .unwrap()
                .map(|r| r.unwrap())
                .collect();
            let want: Vec<String> = paths
                .iter()
                .filter(|p| filter.path_glob.as_ref().unwrap().matches(p))
                .map(|p| p.to_string())
                .collect();
            assert_eq!(got, want, "{glob}");
        }
    }

    #[test]
    fn in_memory_matching_agrees_with_the_sql_clause() {
        let conn = Connection::open_in_memory().unwrap();
        register_functions(&conn).unwrap();
        conn.execute_batch("CREATE TABLE docs (path TEXT, doc_type TEXT, modified_at INTEGER)")
            .unwrap();
        let rows = [
            ("/a/b/one.md", DocType::Md, 10),
            ("/a/b0/two.txt", DocType::Txt, 20),
            ("/a/bc.md", DocType::Md, 30),
            ("/notes/n.md", DocType::Md, 40),
            ("/x/2024/report.pdf", DocType::Pdf, 50),
        ];
        for (p, t, m) in rows {
            conn.execute(
                "INSERT INTO docs VALUES (?1, ?2, ?3)",
                rusqlite::params![p, t.as_str(), m],
            )
            .unwrap();
        }
        let filters = [
            DocFilter::default(),
            DocFilter {
                dirs: Some(vec!["/a/b".into()]),
                paths: vec!["/notes/n.md".into()],
                ..DocFilter::default()
            },
            DocFilter {
                dirs: Some(Vec::new()),
                ..DocFilter::default()
            },
            DocFilter {
                only_paths: Some(vec!["/a/bc.md".into(), "/x/2024/report.pdf".into()]),
                doc_types: Some(vec![DocType::Pdf]),
                ..DocFilter::default()
            },
            DocFilter {
                path_glob: Some(PathGlob::new("2024*report").unwrap()),
                modified_after: Some(20),
                modified_before: Some(50),
                ..DocFilter::default()
            },
            DocFilter {
                dirs: Some(vec!["/".into()]),
                modified_after: Some(30),
                ..DocFilter::default()
            },
        ];
        for f in filters {
            let (clause, params) = f.where_clause();
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT path FROM docs WHERE {clause} ORDER BY path"
                ))
                .unwrap();
            let by_sql: Vec<String> = stmt
                .query_map(rusqlite::params_from_iter(params), |r| r.get(0))
                .unwrap()
                .map(|r| r.unwrap())
                .collect();
            let in_memory: Vec<String> = rows
                .iter()
                .filter(|(p, t, m)| f.matches(p, *t, *m))
                .map(|(p, _, _)| p.to_string())
                .collect();
            assert_eq!(in_memory, by_sql, "{f:?}");
        }
    }
}
