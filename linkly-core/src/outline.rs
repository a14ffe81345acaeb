use serde::{Deserialize, Serialize};

/// A heading found by an extractor, before line ranges are known: level 1 is the top.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// Nesting level, 1 = top level.
    pub level: u8,
    /// The heading's text, on one line.
    pub title: String,
    /// The 1-based line of the extracted text where the heading stands.
    pub line: u32,
}

/// One node of a document's outline, with an inclusive 1-based line range that matches `read`.
///
/// Serialised as the on-disk outline record of the metadata store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutlineNode {
    /// The node's title, on one line.
    pub title: String,
    /// First line of the section (inclusive).
    pub start_line: u32,
    /// Last line of the section (inclusive).
    pub end_line: u32,
    /// Extra lines shown under the node (a table's header and preview rows, say).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub detail: Vec<String>,
    /// Nested nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<OutlineNode>,
}

impl OutlineNode {
    /// A leaf node.
    pub fn new(title: impl Into<String>, start_line: u32, end_line: u32) -> OutlineNode {
        OutlineNode {
            title: title.into(),
            start_line,
            end_line,
            detail: Vec::new(),
            children: Vec::new(),
        }
    }

    /// The number of lines the node spans.
    pub fn line_count(&self) -> u32 {
        self.end_line.saturating_sub(self.start_line) + 1
    }

    /// Nests flat headings by level and gives each the range up to the line before the next
    /// heading of the same or a higher level (or the end of the text).
    ///
    /// Levels may skip (an h3 straight under an h1 becomes its child).
    pub fn from_headings(headings: &[Heading], total_lines: u32) -> Vec<OutlineNode> {
        fn build(headings: &[Heading], end: u32) -> Vec<OutlineNode> {
            let mut nodes = Vec::new();
            let mut i = 0;
            while i < headings.len() {
                let h = &headings[i];
                // Children: the following headings deeper than this one.
                let mut j = i + 1;
                while j < headings.len() && headings[j].level > h.level {
                    j += 1;
                }
                let node_end = if j < headings.len() {
                    headings[j].line.saturating_sub(1).max(h.line)
                } else {
                    end.max(h.line)
                };
                let mut node = OutlineNode::new(h.title.clone(), h.line, node_end);
                node.children = build(&headings[i + 1..j], node_end);
                nodes.push(node);
                i = j;
            }
            nodes
        }
        build(headings, total_lines.max(1))
    }

    /// Counts this node and all nodes below it.
    pub fn count(&self) -> usize {
        1 + self.children.iter().map(OutlineNode::count).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(level: u8, title: &str, line: u32) -> Heading {
        Heading {
            level,
            title: title.into(),
            line,
        }
    }

    #[test]
    fn nests_and_ranges() {
        let out = OutlineNode::from_headings(
            &[
                h(1, "A", 1),
                h(2, "A.1", 3),
                h(3, "A.1.a", 5),
                h(2, "A.2", 8),
                h(1, "B", 10),
            ],
            12,
        );
        assert_eq!(out.len(), 2);
        assert_eq!((out[0].start_line, out[0].end_line), (1, 9));
        assert_eq!(
            (out[0].children[0].start_line, out[0].children[0].end_line),
            (3, 7)
        );
        assert_eq!(out[0].children[0].children[0].end_line, 7);
        assert_eq!(
            (out[0].children[1].start_line, out[0].children[1].end_line),
            (8, 9)
        );
        assert_eq!((out[1].start_line, out[1].end_line), (10, 12));
    }

    #[test]
    fn skipped_levels_and_leading_deeper_heading() {
        let out = OutlineNode::from_headings(&[h(2, "intro", 2), h(1, "A", 4), h(3, "deep", 5)], 6);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].end_line, 3);
        assert_eq!(out[1].children[0].title, "deep");
        assert_eq!(out[1].children[0].end_line, 6);
    }
}
