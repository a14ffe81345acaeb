//! XLSX (Excel 2007+) with `calamine`: each sheet as a `## Sheet: <name>` line and a
//! GitHub-style table, one outline node per sheet with its size, header row and preview rows.
//!
//! `.xls`, `.xlsm`, `.xlsb` and `.ods` are recorded with `unsupported_variant` by
//! [`SpreadsheetVariant`], so that they stay findable by name.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};

use calamine::{DataRef, Reader, SheetType, SheetVisible, Xlsx as Workbook};
use linkly_core::{DocType, OutlineNode, SkipReason};

use crate::formats::ooxml::{self, Package, table_cell, table_lines};
use crate::{Extracted, Extractor, Input};

/// Excel workbooks (`.xlsx`, `.xltx`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Xlsx;

/// The most cells read from one workbook.
const MAX_CELLS: usize = 4_000_000;
/// The most text written for one workbook.
const MAX_TEXT: usize = 48 * 1024 * 1024;
/// Preview rows under each sheet's outline node (after the header row).
const PREVIEW_ROWS: usize = 3;

impl Extractor for Xlsx {
    fn doc_type(&self) -> DocType {
        DocType::Xlsx
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["xlsx", "xltx"]
    }

    fn max_bytes(&self) -> u64 {
        16 * 1024 * 1024
    }

    fn extract(&self, input: &Input<'_>) -> Result<Extracted, SkipReason> {
        // Encryption, zip damage and zip bombs first, with the shared checks.
        let mut pkg = Package::open(input.bytes, "XLSX")?;
        let core_title = ooxml::core_title(&mut pkg);
        drop(pkg);

        let mut workbook: Workbook<_> = Workbook::new(Cursor::new(input.bytes)).map_err(|e| {
            SkipReason::new(
                SkipReason::CORRUPT,
                format!("not a readable XLSX workbook: {e}"),
            )
        })?;
        let sheets = workbook.sheets_metadata().to_vec();
        let mut lines: Vec<String> = Vec::new();
        let mut outline = Vec::new();
        let mut cells_left = MAX_CELLS;
        let mut text_len = 0usize;
        for sheet in sheets {
            if !lines.is_empty() {
                lines.push(String::new());
            }
            lines.push(format!("## Sheet: {}", sheet.name));
            let start = lines.len() as u32;
            let grid = if sheet.typ == SheetType::WorkSheet {
                read_sheet(&mut workbook, &sheet.name, &mut cells_left)
            } else {
                Grid::default()
            };
            let rows = grid.rows();
            let cols = rows.first().map_or(0, Vec::len);
            let mut node = OutlineNode::new(
                format!(
                    "{} ({} × {})",
                    sheet.name,
                    plural(rows.len(), "row"),
                    plural(cols, "column")
                ),
                start,
                start,
            );
            if sheet.visible != SheetVisible::Visible {
                node.detail.push("Hidden sheet".to_string());
            }
            if sheet.typ != SheetType::WorkSheet {
                node.detail
                    .push("Chart or macro sheet: no cells".to_string());
            }
            if let Some(header) = rows.first() {
                node.detail.push(format!("Columns: {}", preview(header)));
                for (i, row) in rows.iter().skip(1).take(PREVIEW_ROWS).enumerate() {
                    node.detail.push(format!("Row {}: {}", i + 2, preview(row)));
                }
            }
            if rows.is_empty() {
                lines.push("(empty sheet)".to_string());
            } else {
                lines.push(String::new());
                let rendered = table_lines(&rows);
                let total = rendered.len();
                for (i, line) in rendered.into_iter().enumerate() {
                    if text_len + line.len() > MAX_TEXT {
                        lines.push(format!(
                            "(… {} more rows not shown: the workbook's text is over {} MiB)",
                            total - i,
                            MAX_TEXT / (1024 * 1024)
                        ));
                        break;
                    }
                    text_len += line.len() + 1;
                    lines.push(line);
                }
            }
            if grid.truncated {
                lines.push(format!(
                    "(… more cells not read: over {MAX_CELLS} cells in the workbook)"
                ));
            }
            if grid.unreadable {
                lines.push("(… the rest of this sheet could not be read)".to_string());
            }
            node.end_line = lines.len() as u32;
            outline.push(node);
        }
        if lines.is_empty() {
            return Err(SkipReason::new(
                SkipReason::EMPTY,
                "the workbook has no sheets",
            ));
        }
        Ok(Extracted {
            doc_type: DocType::Xlsx,
            text: lines.join("\n"),
            title: core_title,
            outline,
            encoding: None,
        })
    }
}

/// A sheet's non-empty cells, sparse.
#[derive(Debug, Default)]
struct Grid {
    cells: BTreeMap<u32, BTreeMap<u32, String>>,
    truncated: bool,
    /// calamine failed part way through the sheet.
    unreadable: bool,
}

impl Grid {
    /// The non-empty rows, over the columns that hold anything, as text.
    fn rows(&self) -> Vec<Vec<String>> {
        let columns: BTreeSet<u32> = self
            .cells
            .values()
            .flat_map(|r| r.keys().copied())
            .collect();
        let index: BTreeMap<u32, usize> =
            columns.iter().enumerate().map(|(i, c)| (*c, i)).collect();
        self.cells
            .values()
            .map(|row| {
                let mut out = vec![String::new(); columns.len()];
                for (col, value) in row {
                    if let Some(&i) = index.get(col) {
                        out[i] = table_cell(value);
                    }
                }
                out
            })
            .collect()
    }
}

fn read_sheet<RS: std::io::Read + std::io::Seek>(
    workbook: &mut Workbook<RS>,
    name: &str,
    cells_left: &mut usize,
) -> Grid {
    let mut grid = Grid::default();
    // calamine panics on some malformed cell references (an over-long `r="AAAA…1"` overflows
    // its u32 arithmetic where overflow checks are on; found by `fuzz/`): that costs the rest of
    // this sheet, not the workbook.
    let read = catch_unwind(AssertUnwindSafe(|| {
        let Ok(mut reader) = workbook.worksheet_cells_reader(name) else {
            return;
        };
        while let Ok(Some(cell)) = reader.next_cell() {
            let text = cell_text(cell.get_value());
            if text.trim().is_empty() {
                continue;
            }
            if *cells_left == 0 {
                grid.truncated = true;
                break;
            }
            *cells_left -= 1;
            let (row, col) = cell.get_position();
            grid.cells.entry(row).or_default().insert(col, text);
        }
    }));
    grid.unreadable = read.is_err();
    grid
}

/// A cell's value as text: numbers without float noise, dates as ISO dates.
fn cell_text(value: &DataRef<'_>) -> String {
    match value {
        DataRef::Int(i) => i.to_string(),
        DataRef::Float(f) => number(*f),
        DataRef::String(s) => s.clone(),
        DataRef::SharedString(s) => s.to_string(),
        DataRef::Bool(b) => if *b { "TRUE" } else { "FALSE" }.to_string(),
        DataRef::DateTime(dt) => {
            if dt.is_datetime() {
                let (y, mo, d, h, mi, s, _) = dt.to_ymd_hms_milli();
                if (h, mi, s) == (0, 0, 0) {
                    format!("{y:04}-{mo:02}-{d:02}")
                } else if dt.as_f64() < 1.0 {
                    format!("{h:02}:{mi:02}:{s:02}")
                } else {
                    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")
                }
            } else {
                number(dt.as_f64())
            }
        }
        DataRef::DateTimeIso(s) | DataRef::DurationIso(s) => s.clone(),
        DataRef::Error(e) => format!("#{e:?}"),
        DataRef::Empty => String::new(),
    }
}

/// A float with at most 15 significant digits (`0.1 + 0.2` → `0.3`), integers without `.0`.
fn number(f: f64) -> String {
    if !f.is_finite() {
        return f.to_string();
    }
    if f.fract() == 0.0 && f.abs() < 1e15 {
        return format!("{}", f as i64);
    }
    format!("{f:.14e}")
        .parse::<f64>()
        .map(|g| g.to_string())
        .unwrap_or_else(|_| f.to_string())
}

fn plural(n: usize, noun: &str) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{n} {noun}{s}")
}

/// Cells joined by `, `, cut at about 300 characters.
fn preview(cells: &[String]) -> String {
    let joined = cells.join(", ");
    let cut = linkly_core::stdx::truncate_chars(&joined, 300);
    if cut.len() < joined.len() {
        format!("{cut}…")
    } else {
        joined
    }
}

/// Spreadsheet formats this build does not read (`.xls`, `.xlsm`, `.xlsb`, `.ods`): recorded
/// with `unsupported_variant`, findable by name.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpreadsheetVariant;

impl Extractor for SpreadsheetVariant {
    fn doc_type(&self) -> DocType {
        DocType::Xlsx
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["xls", "xlsm", "xlsb", "ods", "xlt", "xltm", "ots"]
    }

    fn max_bytes(&self) -> u64 {
        u64::MAX
    }

    fn extract(&self, input: &Input<'_>) -> Result<Extracted, SkipReason> {
        let ext = input
            .path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        let what = match ext.as_str() {
            "xls" | "xlt" => "Excel 97–2003 (.xls) workbooks are not read",
            "xlsm" | "xltm" => "macro-enabled (.xlsm) workbooks are not read",
            "xlsb" => "binary (.xlsb) workbooks are not read",
            _ => "OpenDocument (.ods) spreadsheets are not read",
        };
        let looks_like_text =
            !input.bytes.starts_with(b"PK") && !input.bytes.starts_with(&[0xD0, 0xCF, 0x11, 0xE0]);
        let detail = if looks_like_text {
            format!("{what}; this file is not a spreadsheet container either")
        } else {
            what.to_string()
        };
        Err(SkipReason::new(SkipReason::UNSUPPORTED_VARIANT, detail))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.1 + 0.2), "0.3");
        assert_eq!(number(1234567.891), "1234567.891");
        assert_eq!(number(-2.5), "-2.5");
    }

    #[test]
    fn sparse_grid_drops_empty_columns() {
        let mut g = Grid::default();
        g.cells.entry(0).or_default().insert(0, "a".into());
        g.cells.entry(0).or_default().insert(5, "b|c".into());
        g.cells.entry(9).or_default().insert(5, "x".into());
        assert_eq!(
            g.rows(),
            [
                vec!["a".to_string(), "b\\|c".to_string()],
                vec![String::new(), "x".to_string()]
            ]
        );
    }

    /// A workbook whose first sheet has an over-long cell reference (`r="AAAA…1"`), which
    /// overflows calamine's u32 arithmetic (a panic where overflow checks are on; found by
    /// `fuzz/` xlsx), and a second sheet that reads.
    fn workbook_with_overlong_reference() -> Vec<u8> {
        use std::io::Write as _;
        let main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";
        let rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
        let sheet = |cells: &str| {
            format!(
                r#"<worksheet xmlns="{main}"><sheetData><row r="1">{cells}</row></sheetData></worksheet>"#
            )
        };
        let cell =
            |r: &str, t: &str| format!(r#"<c r="{r}" t="inlineStr"><is><t>{t}</t></is></c>"#);
        let files = [
            (
                "_rels/.rels",
                format!(
                    r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="{rel}/officeDocument" Target="xl/workbook.xml"/></Relationships>"#
                ),
            ),
            (
                "xl/workbook.xml",
                format!(
                    r#"<workbook xmlns="{main}" xmlns:r="{rel}"><sheets><sheet name="Bad" sheetId="1" r:id="rId1"/><sheet name="Good" sheetId="2" r:id="rId2"/></sheets></workbook>"#
                ),
            ),
            (
                "xl/_rels/workbook.xml.rels",
                format!(
                    r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="{rel}/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="{rel}/worksheet" Target="worksheets/sheet2.xml"/></Relationships>"#
                ),
            ),
            (
                "xl/worksheets/sheet1.xml",
                sheet(&(cell("A1", "first") + &cell(&format!("{}1", "A".repeat(40)), "bad"))),
            ),
            (
                "xl/worksheets/sheet2.xml",
                sheet(&cell("A1", "second sheet")),
            ),
        ];
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, body) in files {
            zip.start_file(name, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(body.as_bytes()).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    #[test]
    fn overlong_cell_reference_costs_at_most_its_sheet() {
        let bytes = workbook_with_overlong_reference();
        let out = Xlsx
            .extract(&Input {
                path: std::path::Path::new("a.xlsx"),
                bytes: &bytes,
            })
            .unwrap();
        assert!(out.text.contains("## Sheet: Bad"), "{}", out.text);
        assert!(out.text.contains("second sheet"), "{}", out.text);
        if cfg!(debug_assertions) {
            assert!(out.text.contains("could not be read"), "{}", out.text);
        }
    }

    #[test]
    fn variants_are_unsupported() {
        let err = SpreadsheetVariant
            .extract(&Input {
                path: std::path::Path::new("a.xls"),
                bytes: b"Attachment not found",
            })
            .unwrap_err();
        assert_eq!(err.code, SkipReason::UNSUPPORTED_VARIANT);
    }
}
