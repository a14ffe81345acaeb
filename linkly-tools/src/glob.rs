//! `path_glob`: a glob matched as a substring of the absolute path.
//!
//! `*` matches any run of characters including `/`, `?` one character, `[...]` a class
//! (`[!...]` or `[^...]` negated), a backslash escapes the next character; everything else is
//! literal and case-sensitive. No leading or trailing `*` is needed.

use regex::Regex;

use crate::{Result, ToolError};

/// A compiled `path_glob`.
#[derive(Debug, Clone)]
pub struct PathGlob {
    regex: Regex,
}

impl PathGlob {
    /// Compiles a glob, or says what is wrong with it.
    pub fn new(glob: &str) -> Result<PathGlob> {
        if glob.is_empty() {
            return Err(ToolError::invalid("path_glob must not be empty"));
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
                        return Err(ToolError::invalid(format!(
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
            ToolError::invalid(format!("path_glob {glob:?} is not a valid glob: {e}"))
        })?;
        Ok(PathGlob { regex })
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
}
