//! A small reader and writer for the YAML front matter of notes.
//!
//! The server owns four keys (`note_id`, `created_at`, `updated_at`, `source`) and reads one
//! legacy key (`tags`). Everything else a person or another app put in the block is kept
//! verbatim, line for line: the writer replaces only the entries it owns. Values are read in
//! the YAML forms that front matter uses in practice: plain, single- or double-quoted
//! scalars, flow lists (`[a, b]`) and block lists (`- a`).

/// One top-level entry: its key and its raw lines (the key line and any continuation lines).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    key: String,
    lines: Vec<String>,
}

/// A front-matter block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FrontMatter {
    entries: Vec<Entry>,
}

/// A value read from the front matter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Scalar(String),
    List(Vec<String>),
}

/// Splits a note file into its front matter (when it starts with one) and its body. The rule
/// is the Markdown extractor's ([`linkly_extract::formats::split_front_matter`]), so the body
/// `note_save` works on is exactly the text the index holds and `read` shows.
pub(crate) fn split(text: &str) -> (Option<FrontMatter>, &str) {
    match linkly_extract::formats::split_front_matter(text) {
        Some(block) => {
            let lines: Vec<String> = block.block.lines().map(str::to_string).collect();
            (Some(parse(&lines)), &text[block.body_offset..])
        }
        None => (None, text),
    }
}

fn parse(lines: &[String]) -> FrontMatter {
    let mut entries: Vec<Entry> = Vec::new();
    for line in lines {
        let starts_entry = !line.starts_with([' ', '\t', '#', '-']) && line.contains(':');
        if starts_entry {
            let key = line.split(':').next().unwrap_or("").trim();
            let key = key.trim_matches(['"', '\'']).to_string();
            entries.push(Entry {
                key,
                lines: vec![line.clone()],
            });
        } else if let Some(last) = entries.last_mut() {
            last.lines.push(line.clone());
        } else {
            entries.push(Entry {
                key: String::new(),
                lines: vec![line.clone()],
            });
        }
    }
    FrontMatter { entries }
}

/// A scalar without its quotes and escapes, and without a trailing comment when plain.
fn unquote(raw: &str) -> String {
    let t = raw.trim();
    if let Some(inner) = t.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('u') => {
                        let hex: String = chars.by_ref().take(4).collect();
                        if let Some(ch) =
                            u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32)
                        {
                            out.push(ch);
                        }
                    }
                    Some(other) => out.push(other),
                    None => {}
                },
                c => out.push(c),
            }
        }
        return out;
    }
    if let Some(inner) = t.strip_prefix('\'') {
        let mut out = String::new();
        let mut chars = inner.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\'' {
                if chars.peek() == Some(&'\'') {
                    chars.next();
                    out.push('\'');
                } else {
                    break;
                }
            } else {
                out.push(c);
            }
        }
        return out;
    }
    let plain = match t.find(" #") {
        Some(i) => &t[..i],
        None => t,
    };
    plain.trim().to_string()
}

/// Splits a flow list's inside on commas outside quotes.
fn flow_items(inner: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in inner.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                current.push(c);
            }
            (None, '"' | '\'') => {
                quote = Some(c);
                current.push(c);
            }
            (None, ',') => items.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    items.push(current);
    items
        .iter()
        .map(|i| unquote(i))
        .filter(|i| !i.is_empty())
        .collect()
}

/// A YAML double-quoted scalar.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl FrontMatter {
    /// The value of a top-level key.
    pub(crate) fn get(&self, key: &str) -> Option<Value> {
        let entry = self.entries.iter().find(|e| e.key == key)?;
        let first = entry.lines.first()?;
        let rest = first.split_once(':').map_or("", |(_, v)| v).trim();
        if let Some(inner) = rest.strip_prefix('[') {
            let inner = inner.rsplit_once(']').map_or(inner, |(i, _)| i);
            return Some(Value::List(flow_items(inner)));
        }
        if rest.is_empty() || rest.starts_with('#') {
            let items: Vec<String> = entry.lines[1..]
                .iter()
                .filter_map(|l| l.trim_start().strip_prefix('-'))
                .map(unquote)
                .filter(|i| !i.is_empty())
                .collect();
            return Some(if items.is_empty() {
                Value::Scalar(String::new())
            } else {
                Value::List(items)
            });
        }
        Some(Value::Scalar(unquote(rest)))
    }

    /// Every top-level key with its value, in the block's order (comment lines left out).
    pub(crate) fn fields(&self) -> Vec<(String, Value)> {
        self.entries
            .iter()
            .filter(|e| !e.key.is_empty() && !e.key.starts_with('#'))
            .filter_map(|e| Some((e.key.clone(), self.get(&e.key)?)))
            .collect()
    }

    /// The value of a key as one string (`None` when absent, empty or a list).
    pub(crate) fn scalar(&self, key: &str) -> Option<String> {
        match self.get(key)? {
            Value::Scalar(s) if !s.is_empty() && s != "null" && s != "~" => Some(s),
            _ => None,
        }
    }

    /// The value of a key as a list (a scalar is a list of one).
    pub(crate) fn list(&self, key: &str) -> Vec<String> {
        match self.get(key) {
            Some(Value::List(items)) => items,
            Some(Value::Scalar(s)) if !s.is_empty() => vec![s],
            _ => Vec::new(),
        }
    }

    /// Sets a key to an already-formatted YAML value, in place when the key exists, else at
    /// the end.
    pub(crate) fn set(&mut self, key: &str, yaml_value: &str) {
        let line = format!("{key}: {yaml_value}");
        match self.entries.iter_mut().find(|e| e.key == key) {
            Some(e) => e.lines = vec![line],
            None => self.entries.push(Entry {
                key: key.to_string(),
                lines: vec![line],
            }),
        }
    }

    /// Removes a key.
    pub(crate) fn remove(&mut self, key: &str) {
        self.entries.retain(|e| e.key != key);
    }

    /// The block as it is written at the top of a note: `---`, the lines, `---`.
    pub(crate) fn render(&self) -> String {
        let mut out = String::from("---\n");
        for e in &self.entries {
            for l in &e.lines {
                out.push_str(l);
                out.push('\n');
            }
        }
        out.push_str("---\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_values_and_keeps_unknown_lines() {
        let text = "---\nnote_id: 1b4e28ba-2fa1-11d2-883f-0016d3cca427\nsource: \"Cur\\\"sor\"\ntitle: 'It''s'\ntags: [Work, \"b, c\"]\naliases:\n  - x\n  - y\n# a comment\nplain: value # comment\n---\nBody\n";
        let (fm, body) = split(text);
        let mut fm = fm.unwrap();
        assert_eq!(body, "Body\n");
        assert_eq!(
            fm.scalar("note_id").unwrap(),
            "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
        );
        assert_eq!(fm.scalar("source").unwrap(), "Cur\"sor");
        assert_eq!(fm.scalar("title").unwrap(), "It's");
        assert_eq!(fm.list("tags"), ["Work", "b, c"]);
        assert_eq!(fm.list("aliases"), ["x", "y"]);
        assert_eq!(fm.scalar("plain").unwrap(), "value");
        fm.set("source", &quote("A \"b\" \\"));
        fm.remove("tags");
        fm.set("updated_at", "2026-01-01T00:00:00.000Z");
        let again = fm.render();
        let (fm2, _) = split(&again);
        let fm2 = fm2.unwrap();
        assert_eq!(fm2.scalar("source").unwrap(), "A \"b\" \\");
        assert!(fm2.get("tags").is_none());
        assert!(again.contains("aliases:\n  - x\n  - y\n# a comment\n"));
    }

    #[test]
    fn text_without_a_closed_block_is_all_body() {
        assert!(split("no front matter").0.is_none());
        assert!(split("---\nnever closed\n").0.is_none());
        let (fm, body) = split("---\r\nnote_id: x\r\n---\r\nBody");
        assert_eq!(fm.unwrap().scalar("note_id").unwrap(), "x");
        assert_eq!(body, "Body");
    }
}
