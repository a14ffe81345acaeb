//! CSV: a Markdown table (header row, `| --- |` rule, one line per record) and one outline node.
//!
//! The encoding must be known with confidence: a file that is not conclusive on its own borrows
//! the encoding its sibling files share, and a file that stays in doubt is skipped as
//! `encoding_unknown` rather than indexed as mojibake.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use encoding_rs::Encoding;
use linkly_core::{DocType, OutlineNode, SkipReason};

use crate::encoding::{self, Confidence, Decoded};
use crate::{Extracted, Extractor, Input};

/// Comma-separated values (`.csv`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Csv;

impl Extractor for Csv {
    fn doc_type(&self) -> DocType {
        DocType::Csv
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["csv"]
    }

    fn max_bytes(&self) -> u64 {
        16 * 1024 * 1024
    }

    fn extract(&self, input: &Input<'_>) -> Result<Extracted, SkipReason> {
        let decoded = decode_csv(input.path, input.bytes)?;
        let encoding = decoded.name();
        let text = decoded.text.replace('\0', "");
        let delimiter = sniff_delimiter(&text);
        let rows = read_rows(&text, delimiter);
        let Some(header) = rows.first() else {
            return Err(SkipReason::new(
                SkipReason::EMPTY,
                "the CSV file has no rows",
            ));
        };
        let columns = rows.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let data_rows = rows.len() - 1;

        let mut lines = Vec::with_capacity(rows.len() + 1);
        lines.push(table_row(header, columns));
        lines.push(table_row(&vec!["---".to_string(); columns], columns));
        for row in &rows[1..] {
            lines.push(table_row(row, columns));
        }
        let total_lines = lines.len() as u32;

        let mut node = OutlineNode::new(
            format!(
                "Table: {} × {}",
                plural(columns, "column"),
                plural(data_rows, "row")
            ),
            1,
            total_lines,
        );
        node.detail.push(format!(
            "Columns: {}",
            preview(header.iter().map(String::as_str))
        ));
        if let Some(first) = rows.get(1) {
            node.detail.push(format!(
                "First row: {}",
                preview(first.iter().map(String::as_str))
            ));
        }
        Ok(Extracted {
            doc_type: DocType::Csv,
            text: lines.join("\n"),
            title: None,
            outline: vec![node],
            encoding: Some(encoding),
        })
    }
}

/// Decodes a CSV file, or says its encoding is unknown.
fn decode_csv(path: &Path, bytes: &[u8]) -> Result<Decoded, SkipReason> {
    if let Some(certain) = encoding::decode_certain(bytes) {
        return Ok(certain);
    }
    let own = encoding::decode_graded(bytes, encoding::guess(bytes));
    let evidence = bytes.iter().filter(|b| !b.is_ascii()).count();
    if own.confidence >= Confidence::Likely && evidence >= 64 {
        return Ok(own);
    }
    // Not conclusive on its own: the encoding the neighbours share, if it reads this file well.
    if let Some(shared) = sibling_encoding(path)
        && shared != own.encoding
    {
        let theirs = encoding::decode_graded(bytes, shared);
        if theirs.confidence >= Confidence::Likely
            && (own.confidence == Confidence::Weak
                || encoding::plausibility(&theirs.text) >= encoding::plausibility(&own.text))
        {
            return Ok(theirs);
        }
    }
    if own.confidence >= Confidence::Likely {
        return Ok(own);
    }
    Err(SkipReason::new(
        SkipReason::UNKNOWN_ENCODING,
        format!(
            "the bytes are not UTF-8 and no encoding reads them cleanly (best guess {})",
            own.name()
        ),
    ))
}

/// The legacy encoding most `.csv`/`.txt` files next to `path` are confidently detected in.
fn sibling_encoding(path: &Path) -> Option<&'static Encoding> {
    const MAX_FILES: usize = 32;
    const SAMPLE: u64 = 256 * 1024;
    let dir = path.parent()?;
    let own_name = path.file_name()?;
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name() != Some(own_name)
                && p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| e.eq_ignore_ascii_case("csv") || e.eq_ignore_ascii_case("txt"))
                && p.is_file()
        })
        .collect();
    names.sort();
    let mut votes: BTreeMap<&'static str, (usize, &'static Encoding)> = BTreeMap::new();
    for sibling in names.into_iter().take(MAX_FILES) {
        let mut sample = Vec::new();
        let Ok(file) = std::fs::File::open(&sibling) else {
            continue;
        };
        if file.take(SAMPLE).read_to_end(&mut sample).is_err() {
            continue;
        }
        if sample.is_ascii()
            || encoding::sniff_bom(&sample).is_some()
            || encoding::sniff_utf16_nobom(&sample).is_some()
            || is_utf8_prefix(&sample)
        {
            continue;
        }
        let graded = encoding::decode_graded(&sample, encoding::guess(&sample));
        if graded.confidence >= Confidence::Likely {
            votes.entry(graded.name()).or_insert((0, graded.encoding)).0 += 1;
        }
    }
    votes
        .into_values()
        .max_by_key(|(n, _)| *n)
        .map(|(_, encoding)| encoding)
}

/// Valid UTF-8, allowing a sequence cut off at the end of a sample.
fn is_utf8_prefix(bytes: &[u8]) -> bool {
    match std::str::from_utf8(bytes) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    }
}

/// The delimiter (`,` `;` tab `|`) that splits the first lines into the most consistent number
/// of fields; `,` when none does.
fn sniff_delimiter(text: &str) -> u8 {
    let lines: Vec<&str> = text
        .split('\n')
        .filter(|l| !l.trim().is_empty())
        .take(20)
        .collect();
    let mut best = (b',', 0usize, 0usize);
    for delimiter in [b',', b';', b'\t', b'|'] {
        let counts: Vec<usize> = lines.iter().map(|l| count_unquoted(l, delimiter)).collect();
        let mut freq: BTreeMap<usize, usize> = BTreeMap::new();
        for &c in counts.iter().filter(|&&c| c > 0) {
            *freq.entry(c).or_default() += 1;
        }
        let Some((&mode, &agree)) = freq.iter().max_by_key(|(c, n)| (**n, **c)) else {
            continue;
        };
        if (agree, mode) > (best.1, best.2) {
            best = (delimiter, agree, mode);
        }
    }
    best.0
}

fn count_unquoted(line: &str, delimiter: u8) -> usize {
    let mut quoted = false;
    let mut n = 0;
    for b in line.bytes() {
        if b == b'"' {
            quoted = !quoted;
        } else if b == delimiter && !quoted {
            n += 1;
        }
    }
    n
}

/// The records, each a list of cells; records whose cells are all empty are left out.
fn read_rows(text: &str, delimiter: u8) -> Vec<Vec<String>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter)
        .from_reader(text.as_bytes());
    let mut rows = Vec::new();
    for record in reader.records() {
        let Ok(record) = record else {
            continue;
        };
        if record.iter().all(|c| c.trim().is_empty()) {
            continue;
        }
        rows.push(record.iter().map(clean_cell).collect());
    }
    rows
}

/// A cell on one line: newlines become spaces, `|` is escaped.
fn clean_cell(cell: &str) -> String {
    let mut out = String::with_capacity(cell.len());
    for c in cell.chars() {
        match c {
            '\r' | '\n' => out.push(' '),
            '|' => out.push_str("\\|"),
            '\0' => {}
            c => out.push(c),
        }
    }
    out
}

fn table_row(cells: &[String], columns: usize) -> String {
    let mut line = String::from("|");
    for i in 0..columns {
        line.push(' ');
        line.push_str(cells.get(i).map(String::as_str).unwrap_or(""));
        line.push_str(" |");
    }
    line
}

/// `1 column`, `1,575 rows`.
fn plural(n: usize, noun: &str) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{} {noun}{s}", linkly_core::stdx::thousands(n as u64))
}

/// Cells joined by `, `, cut at about 300 characters.
fn preview<'a>(cells: impl Iterator<Item = &'a str>) -> String {
    let joined = cells.collect::<Vec<_>>().join(", ");
    let cut = linkly_core::stdx::truncate_chars(&joined, 300);
    if cut.len() < joined.len() {
        format!("{cut}…")
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(bytes: &[u8]) -> Result<Extracted, SkipReason> {
        Csv.extract(&Input {
            path: Path::new("/nonexistent-dir/a.csv"),
            bytes,
        })
    }

    #[test]
    fn renders_markdown_table() {
        let out = run(b"a,b,c\n1,\"x|y\",\"multi\nline\"\n4,5\n").unwrap();
        assert_eq!(
            out.text,
            "| a | b | c |\n| --- | --- | --- |\n| 1 | x\\|y | multi line |\n| 4 | 5 |  |"
        );
        assert_eq!(out.title, None);
        assert_eq!(out.outline.len(), 1);
        let node = &out.outline[0];
        assert_eq!(node.title, "Table: 3 columns × 2 rows");
        assert_eq!((node.start_line, node.end_line), (1, 4));
        assert_eq!(node.detail[0], "Columns: a, b, c");
        assert_eq!(node.detail[1], "First row: 1, x\\|y, multi line");
    }

    #[test]
    fn delimiters() {
        assert_eq!(sniff_delimiter("a;b;c\n1;2;3\n"), b';');
        assert_eq!(sniff_delimiter("a\tb\n1\t2\n"), b'\t');
        assert_eq!(sniff_delimiter("a|b\n1|2\n"), b'|');
        assert_eq!(sniff_delimiter("\"x,y\";b\n\"1,2\";3\n"), b';');
        assert_eq!(sniff_delimiter("single\n"), b',');
        let out = run(b"a;b\n1;2\n").unwrap();
        assert_eq!(out.text.lines().next(), Some("| a | b |"));
    }

    #[test]
    fn bom_nul_and_empty() {
        let out = run(b"\xEF\xBB\xBFfoo,bar\n1,2\n").unwrap();
        assert!(out.text.starts_with("| foo | bar |"));
        let out = run(b"a,b\n\0x,2\n").unwrap();
        assert!(out.text.ends_with("| x | 2 |"));
        assert_eq!(run(b"\n").unwrap_err().code, SkipReason::EMPTY);
        assert_eq!(run(b",,\n,,\n").unwrap_err().code, SkipReason::EMPTY);
    }

    #[test]
    fn legacy_encodings() {
        let text = "名前,住所\n消火栓,福井県鯖江市小黒町1丁目\n防火水槽,福井県鯖江市本町2丁目\n";
        let text = text.repeat(4);
        let (sjis, _, _) = encoding_rs::SHIFT_JIS.encode(&text);
        let out = run(&sjis).unwrap();
        assert!(out.text.contains("鯖江市"), "{}", out.text);
        assert_eq!(out.encoding, Some("Shift_JIS"));
        let out = run(b"a,b\n1,\xa9\n").unwrap();
        assert!(out.text.contains('©'), "{}", out.text);
    }

    #[test]
    fn mixed_encodings_are_unknown() {
        // One file mixing UTF-8, Shift_JIS and GBK: no single encoding reads it.
        let mut bytes = "名前,値\n東京都,1\n".as_bytes().to_vec();
        bytes.extend_from_slice(&encoding_rs::SHIFT_JIS.encode("鯖江市,2\n消火栓,3\n").0);
        bytes.extend_from_slice(&encoding_rs::GBK.encode("中华人民共和国,4\n").0);
        let err = run(&bytes).unwrap_err();
        assert_eq!(err.code, SkipReason::UNKNOWN_ENCODING, "{err}");
    }

    #[test]
    fn siblings_settle_an_inconclusive_file() {
        let dir = tempfile::tempdir().unwrap();
        let sibling = "名前,住所,備考\n消火栓,福井県鯖江市小黒町1丁目,地下式\n防火水槽,福井県鯖江市本町2丁目,四十トン\n";
        let sibling = sibling.repeat(3);
        let (sibling_bytes, _, _) = encoding_rs::SHIFT_JIS.encode(&sibling);
        for name in ["a.csv", "b.csv"] {
            std::fs::write(dir.path().join(name), &sibling_bytes).unwrap();
        }
        std::fs::write(dir.path().join("ascii.csv"), "x,y\n1,2\n").unwrap();
        // Two kanji alone read as plausible windows-1252 punctuation ("“Œ‹ž").
        let (bytes, _, _) = encoding_rs::SHIFT_JIS.encode("id,name\n1,東京\n");
        let path = dir.path().join("small.csv");
        std::fs::write(&path, &bytes).unwrap();
        let out = Csv
            .extract(&Input {
                path: &path,
                bytes: &bytes,
            })
            .unwrap();
        assert_eq!(out.encoding, Some("Shift_JIS"));
        assert!(out.text.ends_with("| 1 | 東京 |"), "{}", out.text);
        assert_eq!(sibling_encoding(&path), Some(encoding_rs::SHIFT_JIS));
    }

    #[test]
    fn counts() {
        use linkly_core::stdx::thousands;
        assert_eq!(thousands(1575), "1,575");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(plural(1, "row"), "1 row");
    }
}
