//! Chunking for embeddings: a document's lines are cut at outline sections, then grouped by
//! paragraphs into chunks of about [`MAX_WORDS`] words, the next chunk repeating the last
//! [`OVERLAP_WORDS`] words of the previous one. A line longer than a chunk (a PDF page, an
//! abstract on one line) is cut into word windows. Every chunk keeps the inclusive 1-based line
//! span it came from, so a vector hit maps back to lines for the snippet and for `read`.

use linkly_core::{OutlineNode, word_count};

/// The most words in a chunk (a CJK character counts as a word): about 250 model tokens.
pub(crate) const MAX_WORDS: usize = 180;
/// Words repeated at the start of the next chunk.
pub(crate) const OVERLAP_WORDS: usize = 30;

/// One chunk of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// First line, 1-based.
    pub(crate) start_line: u32,
    /// Last line, inclusive.
    pub(crate) end_line: u32,
    /// The text to embed.
    pub(crate) text: String,
}

/// The first lines of the outline's nodes, at every level, sorted.
fn section_starts(outline: &[OutlineNode], out: &mut Vec<u32>) {
    for node in outline {
        out.push(node.start_line);
        section_starts(&node.children, out);
    }
}

/// A piece of text that never spans a section boundary: one line, or a window of a long line.
struct Piece<'a> {
    line: u32,
    text: std::borrow::Cow<'a, str>,
    words: usize,
    /// A blank line precedes it (a paragraph starts here).
    paragraph: bool,
}

/// Splits a long line into word windows of at most `MAX_WORDS` words, overlapping.
fn split_long(line: &str) -> Vec<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.len() <= 1 {
        // A long run without spaces (CJK): cut by characters.
        let chars: Vec<char> = line.chars().collect();
        let mut out = Vec::new();
        let mut start = 0;
        while start < chars.len() {
            let end = (start + MAX_WORDS).min(chars.len());
            out.push(chars[start..end].iter().collect());
            if end == chars.len() {
                break;
            }
            start = end - OVERLAP_WORDS;
        }
        return out;
    }
    let mut out = Vec::new();
    let mut start = 0;
    while start < words.len() {
        // Count CJK-aware words by accumulating whitespace words until the budget is used.
        let mut end = start;
        let mut used = 0;
        while end < words.len() {
            let w = word_count(words[end]) as usize;
            if used > 0 && used + w > MAX_WORDS {
                break;
            }
            used += w;
            end += 1;
        }
        out.push(words[start..end].join(" "));
        if end >= words.len() {
            break;
        }
        let back = (end - start).min(OVERLAP_WORDS).min(end - start - 1);
        start = end - back;
    }
    out
}

/// Cuts a document into chunks. `title` is prepended to chunks that do not start the document,
/// so each chunk carries its document's subject.
pub(crate) fn chunk(text: &str, outline: &[OutlineNode], title: Option<&str>) -> Vec<Chunk> {
    let mut starts = Vec::new();
    section_starts(outline, &mut starts);
    starts.sort_unstable();
    starts.dedup();

    let mut chunks = Vec::new();
    let mut section: Vec<Piece<'_>> = Vec::new();
    let mut next_start = starts.iter().peekable();
    let mut blank_before = true;
    for (i, line) in text.lines().enumerate() {
        let n = i as u32 + 1;
        let mut boundary = false;
        while next_start.next_if(|s| **s <= n).is_some() {
            boundary = true;
        }
        if boundary && !section.is_empty() {
            pack(&mut section, &mut chunks);
        }
        let trimmed = line.trim();
        if trimmed.is_empty() {
            blank_before = true;
            continue;
        }
        let words = word_count(trimmed) as usize;
        if words > MAX_WORDS {
            for (k, part) in split_long(trimmed).into_iter().enumerate() {
                let words = word_count(&part) as usize;
                section.push(Piece {
                    line: n,
                    text: part.into(),
                    words,
                    paragraph: blank_before || k == 0,
                });
            }
        } else {
            section.push(Piece {
                line: n,
                text: trimmed.into(),
                words,
                paragraph: blank_before,
            });
        }
        blank_before = false;
    }
    pack(&mut section, &mut chunks);

    if let Some(title) = title.map(str::trim).filter(|t| !t.is_empty()) {
        for c in chunks.iter_mut().skip(1) {
            if !c.text.contains(title) {
                c.text = format!("{title}\n{}", c.text);
            }
        }
    }
    chunks
}

/// Groups one section's pieces into chunks: paragraphs are kept whole while they fit; a chunk
/// that overflows ends, and the next one starts with the pieces covering the last
/// `OVERLAP_WORDS` words.
fn pack(pieces: &mut Vec<Piece<'_>>, out: &mut Vec<Chunk>) {
    if pieces.is_empty() {
        return;
    }
    let mut start = 0;
    while start < pieces.len() {
        let mut end = start;
        let mut used = 0;
        let mut last_paragraph_end = None;
        while end < pieces.len() {
            if used > 0 && used + pieces[end].words > MAX_WORDS {
                break;
            }
            if end > start && pieces[end].paragraph {
                last_paragraph_end = Some(end);
            }
            used += pieces[end].words;
            end += 1;
        }
        // Prefer ending at a paragraph boundary when the chunk would otherwise cut one and the
        // boundary keeps at least half the chunk.
        if end < pieces.len()
            && !pieces[end].paragraph
            && let Some(p) = last_paragraph_end
        {
            let kept: usize = pieces[start..p].iter().map(|x| x.words).sum();
            if kept * 2 >= MAX_WORDS {
                end = p;
            }
        }
        let slice = &pieces[start..end];
        out.push(Chunk {
            start_line: slice[0].line,
            end_line: slice[slice.len() - 1].line,
            text: slice
                .iter()
                .map(|p| p.text.as_ref())
                .collect::<Vec<_>>()
                .join("\n"),
        });
        if end >= pieces.len() {
            break;
        }
        // Overlap: step back over whole pieces worth at most OVERLAP_WORDS, never to `start`.
        let mut back = end;
        let mut words = 0;
        while back > start + 1 && words + pieces[back - 1].words <= OVERLAP_WORDS {
            back -= 1;
            words += pieces[back].words;
        }
        start = back;
    }
    pieces.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(title: &str, start: u32, end: u32) -> OutlineNode {
        OutlineNode {
            title: title.into(),
            start_line: start,
            end_line: end,
            detail: Vec::new(),
            children: Vec::new(),
        }
    }

    #[test]
    fn sections_cut_chunks() {
        let text = "# A\n\nalpha text here\n\n# B\n\nbeta text here\n";
        let outline = [node("A", 1, 4), node("B", 5, 7)];
        let c = chunk(text, &outline, None);
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].start_line, c[0].end_line), (1, 3));
        assert_eq!((c[1].start_line, c[1].end_line), (5, 7));
        assert!(c[1].text.contains("beta"));
    }

    #[test]
    fn long_lines_are_windowed_with_overlap() {
        let words: Vec<String> = (0..400).map(|i| format!("w{i}")).collect();
        let text = format!("Title\n\n{}\n", words.join(" "));
        let c = chunk(&text, &[], Some("Title"));
        assert!(c.len() >= 3, "{c:?}");
        assert_eq!(c[0].start_line, 1);
        assert!(
            c.iter()
                .skip(1)
                .all(|x| x.start_line == 3 && x.end_line == 3)
        );
        assert!(
            c.iter()
                .all(|x| word_count(&x.text) as usize <= MAX_WORDS + 2)
        );
        // Overlap: the second window starts before the first one ends.
        assert!(c[2].text.contains("w179") || c[1].text.contains("w179"));
        assert!(c[2].text.starts_with("Title\n"));
    }

    #[test]
    fn spans_cover_every_nonblank_line() {
        let text: String = (1..=120)
            .map(|i| {
                if i % 7 == 0 {
                    String::new()
                } else {
                    format!("line {i} has a few words in it")
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let c = chunk(&text, &[], None);
        for (i, line) in text.lines().enumerate() {
            let n = i as u32 + 1;
            if !line.is_empty() {
                assert!(
                    c.iter().any(|x| x.start_line <= n && n <= x.end_line),
                    "{n}"
                );
            }
        }
        for w in c.windows(2) {
            assert!(w[1].start_line <= w[0].end_line + 2, "{w:?}");
            assert!(w[1].start_line > w[0].start_line);
        }
    }
}
