//! Word 97–2003 (`.doc`): the OLE container (`cfb`), the FIB and the piece table (CLX) in
//! `WordDocument` and `0Table`/`1Table`, Unicode and 8-bit (cp1252) pieces; paragraphs split on
//! `\r`, field codes dropped (their results kept; an `EQ` field, which has none, gives the base
//! text of its equation: Japanese ruby), table cells joined with ` | `. Headings come
//! from the paragraph style (PAPX in the FKPs → `istd` → the style's built-in `sti` 1–9,
//! "heading 1"–"heading 9", which does not depend on the UI language).
//!
//! Word 6/95 files (nFib 101–104) are read as 8-bit text without headings.
//!
//! A `.doc` that is really RTF, HTML/XML or plain text is read by content with the right module;
//! WordPerfect is skipped as `unsupported_variant`.

use std::io::{Cursor, Read};

use encoding_rs::WINDOWS_1252;
use linkly_core::{DocType, Heading, OutlineNode, SkipReason};

use crate::encoding::{self, Confidence};
use crate::formats::rtf;
use crate::{Extracted, Extractor, Input};

/// Word 97–2003 files (`.doc`, `.dot`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Doc;

impl Extractor for Doc {
    fn doc_type(&self) -> DocType {
        DocType::Doc
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["doc", "dot"]
    }

    fn extract(&self, input: &Input<'_>) -> Result<Extracted, SkipReason> {
        let bytes = input.bytes;
        if bytes.starts_with(CFB_MAGIC) {
            return extract_word(bytes);
        }
        if rtf::looks_like_rtf(bytes) {
            return rtf::extract_rtf(bytes, DocType::Doc);
        }
        if bytes.starts_with(b"\xFFWPC") || bytes.starts_with(b"\xCB\x0A\x01") {
            return Err(SkipReason::new(
                SkipReason::UNSUPPORTED_VARIANT,
                "a WordPerfect document named .doc; WordPerfect is not supported",
            ));
        }
        let decoded = encoding::decode(bytes);
        let controls = decoded
            .text
            .chars()
            .filter(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t' | '\u{C}'))
            .count();
        if decoded.confidence >= Confidence::Likely && controls * 100 <= decoded.text.len().max(1) {
            let head = decoded.text.trim_start().to_ascii_lowercase();
            let markup = head.starts_with('<')
                && (head.contains("<html") || head.contains("<?xml") || head.contains("<body"));
            let mut out = if markup {
                crate::formats::Html.extract(input)?
            } else {
                crate::formats::Txt.extract(input)?
            };
            out.doc_type = DocType::Doc;
            return Ok(out);
        }
        Err(SkipReason::new(
            SkipReason::CORRUPT,
            "not a Word 97–2003 document (no OLE container)",
        ))
    }
}

const CFB_MAGIC: &[u8] = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1";
/// Streams larger than this are refused.
const MAX_STREAM: u64 = 128 * 1024 * 1024;
/// At most this many characters are read.
const MAX_CHARS: u32 = 32 * 1024 * 1024;

fn corrupt(what: impl Into<String>) -> SkipReason {
    SkipReason::new(SkipReason::CORRUPT, what)
}

fn read_stream(
    cfb: &mut cfb::CompoundFile<Cursor<&[u8]>>,
    name: &str,
) -> Result<Vec<u8>, SkipReason> {
    let mut stream = cfb
        .open_stream(name)
        .map_err(|e| corrupt(format!("no {name} stream: {e}")))?;
    if stream.len() > MAX_STREAM {
        return Err(SkipReason::new(
            SkipReason::TOO_LARGE,
            format!("the {name} stream is {} bytes", stream.len()),
        ));
    }
    let mut buf = Vec::with_capacity(stream.len() as usize);
    stream
        .read_to_end(&mut buf)
        .map_err(|e| corrupt(format!("cannot read {name}: {e}")))?;
    Ok(buf)
}

fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(off..off + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

/// One piece of the piece table: characters `[cp, cp_end)` stored at byte `fc`.
#[derive(Debug, Clone, Copy)]
struct Piece {
    cp: u32,
    cp_end: u32,
    fc: u32,
    compressed: bool,
}

impl Piece {
    /// The byte offset in `WordDocument` of character `cp` of this piece.
    fn fc_of(&self, cp: u32) -> u32 {
        let n = cp - self.cp;
        if self.compressed {
            self.fc + n
        } else {
            self.fc + 2 * n
        }
    }
}

fn extract_word(bytes: &[u8]) -> Result<Extracted, SkipReason> {
    let mut cfb = cfb::CompoundFile::open(Cursor::new(bytes))
        .map_err(|e| corrupt(format!("not a valid OLE compound file: {e}")))?;
    if !cfb.is_stream("WordDocument") {
        if cfb.is_stream("EncryptedPackage") {
            return Err(SkipReason::new(
                SkipReason::ENCRYPTED,
                "the document is password-protected",
            ));
        }
        // Other Office 97–2003 files (found by content, or misnamed): by name, with a reason.
        let variant = if cfb.is_stream("Workbook") || cfb.is_stream("Book") {
            Some("an Excel 97–2003 workbook")
        } else if cfb.is_stream("PowerPoint Document") {
            Some("a PowerPoint 97–2003 presentation")
        } else if cfb.is_stream("__properties_version1.0") {
            Some("an Outlook message")
        } else {
            None
        };
        if let Some(what) = variant {
            return Err(SkipReason::new(
                SkipReason::UNSUPPORTED_VARIANT,
                format!("{what}, not a Word document; its text is not read"),
            ));
        }
        return Err(corrupt(
            "the OLE file has no WordDocument stream (not a Word document)",
        ));
    }
    let word = read_stream(&mut cfb, "WordDocument")?;
    let ident = u16_at(&word, 0).ok_or_else(|| corrupt("the FIB is truncated"))?;
    let nfib = u16_at(&word, 2).ok_or_else(|| corrupt("the FIB is truncated"))?;
    let flags = u16_at(&word, 0x0A).ok_or_else(|| corrupt("the FIB is truncated"))?;
    if ident != 0xA5EC && ident != 0xA5DC {
        return Err(corrupt(format!(
            "unknown Word identifier {ident:#06x} in the FIB"
        )));
    }
    if flags & 0x0100 != 0 || flags & 0x8000 != 0 {
        return Err(SkipReason::new(
            SkipReason::ENCRYPTED,
            "the Word document is encrypted or obfuscated",
        ));
    }
    let complex = flags & 0x0004 != 0;

    if nfib < 0x69 || ident == 0xA5DC {
        return extract_word6(&word, complex);
    }

    // FibBase (32 bytes), csw + fibRgW, cslw + fibRgLw, cbRgFcLcb + fibRgFcLcbBlob.
    let csw = u16_at(&word, 32).ok_or_else(|| corrupt("the FIB is truncated"))? as usize;
    let lw_at = 34 + csw * 2;
    let cslw = u16_at(&word, lw_at).ok_or_else(|| corrupt("the FIB is truncated"))? as usize;
    let rglw = lw_at + 2;
    let lw = |i: usize| -> u32 {
        if i < cslw {
            u32_at(&word, rglw + i * 4).unwrap_or(0)
        } else {
            0
        }
    };
    let ccp_text = lw(3);
    // ccpFtn, ccpHdd, (reserved), ccpAtn, ccpEdn, ccpTxbx, ccpHdrTxbx.
    let other: u32 = [4, 5, 7, 8, 9, 10]
        .iter()
        .map(|&i| lw(i))
        .fold(0u32, u32::saturating_add);
    let fc_at = rglw + cslw * 4;
    let cb_fclcb = u16_at(&word, fc_at).ok_or_else(|| corrupt("the FIB is truncated"))? as usize;
    let blob = fc_at + 2;
    let fclcb = |i: usize| -> (u32, u32) {
        if i < cb_fclcb {
            (
                u32_at(&word, blob + i * 8).unwrap_or(0),
                u32_at(&word, blob + i * 8 + 4).unwrap_or(0),
            )
        } else {
            (0, 0)
        }
    };
    let table_name = if flags & 0x0200 != 0 {
        "1Table"
    } else {
        "0Table"
    };
    let table = read_stream(&mut cfb, table_name)?;
    let (fc_clx, lcb_clx) = fclcb(33);
    let clx = slice(&table, fc_clx, lcb_clx).ok_or_else(|| corrupt("the CLX is out of range"))?;
    let pieces = parse_clx(clx, false)?;

    let total = ccp_text.saturating_add(other).min(MAX_CHARS);
    let paragraphs = read_text(&word, &pieces, total);

    // Headings: paragraph style → sti 1..9.
    let (fc_stsh, lcb_stsh) = fclcb(1);
    let sti_of = slice(&table, fc_stsh, lcb_stsh)
        .map(parse_stsh)
        .unwrap_or_default();
    let (fc_bte, lcb_bte) = fclcb(13);
    let papx = slice(&table, fc_bte, lcb_bte)
        .map(|plc| parse_papx_runs(&word, plc))
        .unwrap_or_default();

    let heading_level = |para: &Para| -> Option<u8> {
        if para.cp_end > ccp_text {
            return None;
        }
        let fc = para.mark_fc?;
        let run = papx.partition_point(|r| r.0 <= fc);
        let (start, end, istd) = *papx.get(run.checked_sub(1)?)?;
        if fc < start || fc >= end {
            return None;
        }
        let sti = *sti_of.get(istd as usize)?;
        (1..=9).contains(&sti).then_some(sti as u8)
    };
    Ok(assemble(paragraphs, heading_level))
}

fn slice(b: &[u8], fc: u32, lcb: u32) -> Option<&[u8]> {
    if lcb == 0 {
        return None;
    }
    b.get(fc as usize..(fc as usize).checked_add(lcb as usize)?)
}

/// Parses the CLX: skips Prc entries, reads the PlcPcd.
fn parse_clx(clx: &[u8], word6: bool) -> Result<Vec<Piece>, SkipReason> {
    let mut i = 0;
    while i < clx.len() {
        match clx[i] {
            0x01 => {
                let cb = u16_at(clx, i + 1).ok_or_else(|| corrupt("the CLX is truncated"))?;
                i += 3 + cb as usize;
            }
            0x02 => {
                let lcb =
                    u32_at(clx, i + 1).ok_or_else(|| corrupt("the CLX is truncated"))? as usize;
                let plc = clx
                    .get(i + 5..(i + 5).saturating_add(lcb))
                    .ok_or_else(|| corrupt("the piece table is truncated"))?;
                if plc.len() < 4 {
                    return Err(corrupt("the piece table is empty"));
                }
                let n = (plc.len() - 4) / 12;
                let mut pieces = Vec::with_capacity(n);
                for k in 0..n {
                    let cp = u32_at(plc, k * 4).unwrap_or(0);
                    let cp_end = u32_at(plc, (k + 1) * 4).unwrap_or(0);
                    let pcd = (n + 1) * 4 + k * 8;
                    let raw_fc = u32_at(plc, pcd + 2).unwrap_or(0);
                    let (fc, compressed) = if word6 {
                        (raw_fc, true)
                    } else if raw_fc & 0x4000_0000 != 0 {
                        ((raw_fc & 0x3FFF_FFFF) / 2, true)
                    } else {
                        (raw_fc & 0x3FFF_FFFF, false)
                    };
                    if cp_end > cp {
                        pieces.push(Piece {
                            cp,
                            cp_end,
                            fc,
                            compressed,
                        });
                    }
                }
                return Ok(pieces);
            }
            _ => return Err(corrupt("the CLX has an unknown entry")),
        }
    }
    Err(corrupt("the CLX has no piece table"))
}

/// A paragraph of raw characters, with the file offset of its paragraph mark.
struct Para {
    text: String,
    cp_end: u32,
    mark_fc: Option<u32>,
}

/// Reads characters `[0, total)` through the pieces and splits them into paragraphs.
fn read_text(word: &[u8], pieces: &[Piece], total: u32) -> Vec<Para> {
    let mut paras = Vec::new();
    let mut cur = String::new();
    for piece in pieces {
        if piece.cp >= total {
            break;
        }
        let end = piece.cp_end.min(total);
        for cp in piece.cp..end {
            let fc = piece.fc_of(cp) as usize;
            let c = if piece.compressed {
                match word.get(fc) {
                    Some(&b) => decode_compressed(b),
                    None => break,
                }
            } else {
                match u16_at(word, fc) {
                    Some(u) => char::from_u32(u as u32).unwrap_or('\u{FFFD}'),
                    None => break,
                }
            };
            cur.push(c);
            if c == '\r' {
                paras.push(Para {
                    text: std::mem::take(&mut cur),
                    cp_end: cp + 1,
                    mark_fc: Some(fc as u32),
                });
            }
        }
    }
    if !cur.is_empty() {
        paras.push(Para {
            text: cur,
            cp_end: total,
            mark_fc: None,
        });
    }
    paras
}

fn decode_compressed(b: u8) -> char {
    if b < 0x80 {
        return b as char;
    }
    let (s, _, _) = WINDOWS_1252.decode(std::slice::from_ref(&b));
    s.chars().next().unwrap_or('\u{FFFD}')
}

/// Word 6/95: contiguous 8-bit text from fcMin, or a piece table in `WordDocument`.
fn extract_word6(word: &[u8], complex: bool) -> Result<Extracted, SkipReason> {
    let fc_min = u32_at(word, 0x18).ok_or_else(|| corrupt("the FIB is truncated"))?;
    let fc_mac = u32_at(word, 0x1C).ok_or_else(|| corrupt("the FIB is truncated"))?;
    let ccp_text = u32_at(word, 0x34).ok_or_else(|| corrupt("the FIB is truncated"))?;
    // ccpFtn, ccpHdd, ccpAtn, ccpEdn, ccpTxbx, ccpHdrTxbx.
    let extra: u32 = [0x38usize, 0x3C, 0x44, 0x48, 0x4C, 0x50]
        .iter()
        .map(|&o| u32_at(word, o).unwrap_or(0))
        .fold(0u32, u32::saturating_add);
    let mut total = ccp_text.saturating_add(extra).min(MAX_CHARS);
    let pieces = if complex {
        // The CLX's place differs between the FIB variants of Word 6 and Word 95.
        [0x1A2usize, 0x160]
            .iter()
            .find_map(|&at| {
                let clx = slice(word, u32_at(word, at)?, u32_at(word, at + 4)?)?;
                parse_clx(clx, true).ok().filter(|p| !p.is_empty())
            })
            .ok_or_else(|| corrupt("no readable piece table in the Word 6 file"))?
    } else {
        total = total.min(fc_mac.saturating_sub(fc_min));
        vec![Piece {
            cp: 0,
            cp_end: total,
            fc: fc_min,
            compressed: true,
        }]
    };
    let paragraphs = read_text(word, &pieces, total);
    Ok(assemble(paragraphs, |_| None))
}

/// STSH → the built-in style id (`sti`) of each style index (`istd`); 0x0FFE for user styles.
fn parse_stsh(stsh: &[u8]) -> Vec<u16> {
    let Some(cb_stshi) = u16_at(stsh, 0) else {
        return Vec::new();
    };
    let Some(cstd) = u16_at(stsh, 2) else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(cstd as usize);
    let mut off = 2 + cb_stshi as usize;
    for _ in 0..cstd.min(4096) {
        let Some(cb) = u16_at(stsh, off) else { break };
        if cb == 0 {
            out.push(0x0FFF); // empty slot
        } else {
            let sti = u16_at(stsh, off + 2).map(|v| v & 0x0FFF).unwrap_or(0x0FFF);
            out.push(sti);
        }
        off += 2 + cb as usize;
    }
    out
}

/// PlcBtePapx → FKPs → runs `(fc_start, fc_end, istd)`, sorted by start.
fn parse_papx_runs(word: &[u8], plc: &[u8]) -> Vec<(u32, u32, u16)> {
    let mut runs = Vec::new();
    if plc.len() < 4 {
        return runs;
    }
    let n = (plc.len() - 4) / 8;
    for k in 0..n.min(65_536) {
        let Some(pn) = u32_at(plc, (n + 1) * 4 + k * 4) else {
            break;
        };
        let page_at = (pn & 0x3F_FFFF) as usize * 512;
        let Some(page) = word.get(page_at..page_at + 512) else {
            continue;
        };
        let crun = page[511] as usize;
        for i in 0..crun.min(101) {
            let (Some(start), Some(end)) = (u32_at(page, i * 4), u32_at(page, (i + 1) * 4)) else {
                break;
            };
            let bx = (crun + 1) * 4 + i * 13;
            let Some(&b_offset) = page.get(bx) else { break };
            if b_offset == 0 {
                continue;
            }
            let at = b_offset as usize * 2;
            let Some(&cb) = page.get(at) else { continue };
            let istd_at = if cb == 0 { at + 2 } else { at + 1 };
            if let Some(istd) = u16_at(page, istd_at) {
                runs.push((start, end, istd));
            }
        }
    }
    runs.sort_by_key(|r| r.0);
    runs
}

/// One open field: its instruction text, and whether it is still in the instruction part
/// (before the 0x14 separator).
struct Field {
    code: String,
    instruction: bool,
}

/// Field instructions longer than this are not kept (citation managers store whole records).
const MAX_FIELD_CODE: usize = 4096;
/// Fields nested deeper than this are not tracked.
const MAX_FIELD_DEPTH: usize = 64;

/// Cleans the paragraphs (fields, cells, special characters) into text lines and headings.
///
/// A field shows its result (after 0x14) and hides its instruction; an `EQ` field, which has
/// no result, shows the base text of its equation (Japanese ruby: `\o\ad(\s\up 9(かん),漢)`
/// gives `漢`). When fields never close (a damaged document), their instructions would hide the
/// rest of the text: the paragraphs are read again with field marks ignored.
fn assemble(paras: Vec<Para>, heading_level: impl Fn(&Para) -> Option<u8>) -> Extracted {
    let (lines, headings, balanced) = lines_of(&paras, &heading_level, true);
    let (lines, headings) = if balanced {
        (lines, headings)
    } else {
        tracing::debug!("unbalanced field marks in a Word document: fields ignored");
        let (lines, headings, _) = lines_of(&paras, &heading_level, false);
        (lines, headings)
    };
    finish(lines, headings)
}

/// Text lines and `(line index, level, title)` headings of the paragraphs; false when fields
/// were left open with text hidden in their instructions.
#[allow(clippy::type_complexity)]
fn lines_of(
    paras: &[Para],
    heading_level: &impl Fn(&Para) -> Option<u8>,
    honour_fields: bool,
) -> (Vec<String>, Vec<(usize, u8, String)>, bool) {
    let mut lines: Vec<String> = Vec::new();
    let mut headings = Vec::new();
    let mut fields: Vec<Field> = Vec::new();
    // Fields opened past MAX_FIELD_DEPTH, whose ends are ignored.
    let mut untracked = 0usize;
    for para in paras {
        let mut line = String::new();
        let mut chars = para.text.chars().peekable();
        let first_line = lines.len();
        while let Some(c) = chars.next() {
            match c {
                '\u{13}' | '\u{14}' | '\u{15}' if !honour_fields => continue,
                '\u{13}' => {
                    if fields.len() < MAX_FIELD_DEPTH {
                        fields.push(Field {
                            code: String::new(),
                            instruction: true,
                        });
                    } else {
                        untracked += 1;
                    }
                    continue;
                }
                '\u{14}' => {
                    if untracked == 0
                        && let Some(last) = fields.last_mut()
                    {
                        last.instruction = false;
                    }
                    continue;
                }
                '\u{15}' => {
                    if untracked > 0 {
                        untracked -= 1;
                        continue;
                    }
                    let Some(field) = fields.pop() else {
                        continue;
                    };
                    if field.instruction
                        && let Some(text) = eq_base_text(&field.code)
                    {
                        match fields.iter_mut().rev().find(|f| f.instruction) {
                            Some(outer) => push_code(&mut outer.code, &text),
                            None => line.push_str(&text),
                        }
                    }
                    continue;
                }
                _ => {}
            }
            if let Some(field) = fields.iter_mut().rev().find(|f| f.instruction) {
                push_code(&mut field.code, &c.to_string());
                continue;
            }
            match c {
                '\r' => {}
                '\u{7}' => {
                    if chars.peek() == Some(&'\u{7}') {
                        chars.next();
                        lines.push(std::mem::take(&mut line));
                    } else {
                        line.push_str(" | ");
                    }
                }
                '\u{B}' | '\u{C}' | '\u{E}' => lines.push(std::mem::take(&mut line)),
                '\t' => line.push('\t'),
                '\u{1E}' => line.push('-'),
                '\u{A0}' => line.push(' '),
                // Object anchors (0x01), drawn objects (0x08) and other marks: no text.
                c if c.is_control() => {}
                '\u{FFFD}' => {}
                c => line.push(c),
            }
        }
        let line = line.trim_end().to_string();
        if let Some(level) = heading_level(para) {
            let title: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
            if !title.is_empty() {
                headings.push((first_line, level, title));
            }
        }
        lines.push(line);
    }
    let hidden = fields
        .iter()
        .any(|f| f.instruction && f.code.trim().chars().count() > 0);
    (lines, headings, !hidden)
}

fn push_code(code: &mut String, s: &str) {
    if code.len() < MAX_FIELD_CODE {
        code.push_str(s);
    }
}

/// The base text of an `EQ` field's equation, or `None` for other fields. Sub- and
/// superscripts (`\s\up n(…)`, `\s\do n(…)`: ruby readings, exponents) and format switches
/// (`\* jc2`, `\* "Font:…"`, `\* hps10`) are dropped; other switches (`\o`, `\ad`, `\f`, …)
/// and the brackets and commas of their arguments leave the text of the arguments.
fn eq_base_text(code: &str) -> Option<String> {
    let code = code.trim_start();
    let rest = code
        .get(..2)
        .filter(|k| k.eq_ignore_ascii_case("eq"))
        .map(|_| &code[2..])?;
    if !rest.starts_with(|c: char| c.is_whitespace() || c == '\\') {
        return None;
    }
    let chars: Vec<char> = rest.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                let Some(&next) = chars.get(i + 1) else {
                    break;
                };
                if !next.is_ascii_alphabetic() && next != '*' {
                    // An escaped character: `\(`, `\,`, `\\`.
                    out.push(next);
                    i += 2;
                    continue;
                }
                if next == '*' {
                    // `\* word` or `\* "quoted words"`: formatting.
                    i += 2;
                    while chars.get(i).is_some_and(|c| c.is_whitespace()) {
                        i += 1;
                    }
                    if chars.get(i) == Some(&'"') {
                        i += 1;
                        while chars.get(i).is_some_and(|c| *c != '"') {
                            i += 1;
                        }
                        i += 1;
                    } else {
                        while chars
                            .get(i)
                            .is_some_and(|c| !c.is_whitespace() && *c != '\\')
                        {
                            i += 1;
                        }
                    }
                    continue;
                }
                let start = i + 1;
                i = start;
                while chars.get(i).is_some_and(char::is_ascii_alphabetic) {
                    i += 1;
                }
                let name: String = chars[start..i]
                    .iter()
                    .collect::<String>()
                    .to_ascii_lowercase();
                // A switch's number (`\up 9`, `\fo4`).
                let mut j = i;
                while chars.get(j).is_some_and(|c| *c == ' ') {
                    j += 1;
                }
                if chars.get(j).is_some_and(char::is_ascii_digit) {
                    i = j;
                    while chars.get(i).is_some_and(char::is_ascii_digit) {
                        i += 1;
                    }
                }
                if matches!(name.as_str(), "up" | "do") {
                    // The argument of `\s\up n(…)`: skip it, brackets balanced.
                    while chars.get(i).is_some_and(|c| *c == ' ') {
                        i += 1;
                    }
                    if chars.get(i) == Some(&'(') {
                        let mut depth = 0usize;
                        while let Some(&c) = chars.get(i) {
                            i += 1;
                            match c {
                                '\\' => i += 1,
                                '(' => depth += 1,
                                ')' => {
                                    depth -= 1;
                                    if depth == 0 {
                                        break;
                                    }
                                }
                                _ => {}
                            }
                        }
                    }
                }
            }
            '(' | ')' | ',' | ';' => i += 1,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    let out = out.trim().to_string();
    Some(out)
}

/// Collapses blank runs, maps the heading lines, and builds the extraction.
fn finish(lines: Vec<String>, headings: Vec<(usize, u8, String)>) -> Extracted {
    // Collapse blank runs; map heading lines.
    let mut text = String::new();
    let mut map = vec![0u32; lines.len() + 1];
    let mut out_line = 0u32;
    let mut blank = false;
    for (i, line) in lines.iter().enumerate() {
        let line = line.trim_end_matches([' ', '|', '\t']);
        if line.trim().is_empty() {
            blank = out_line > 0;
            map[i] = out_line + 1;
            continue;
        }
        if blank {
            text.push('\n');
            out_line += 1;
        }
        if out_line > 0 {
            text.push('\n');
        }
        text.push_str(line);
        out_line += 1;
        map[i] = out_line;
        blank = false;
    }
    let headings: Vec<Heading> = headings
        .into_iter()
        .map(|(i, level, title)| Heading {
            level,
            title: title.chars().take(300).collect(),
            line: map[i].clamp(1, out_line.max(1)),
        })
        .collect();
    let mut out = Extracted::text(DocType::Doc, text);
    out.outline = OutlineNode::from_headings(&headings, out_line);
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn run(bytes: &[u8]) -> Result<Extracted, SkipReason> {
        Doc.extract(&Input {
            path: Path::new("x.doc"),
            bytes,
        })
    }

    #[test]
    fn sniffs_content() {
        let err = run(b"\xFFWPC\x10\x00\x00\x00\x01\x0A").unwrap_err();
        assert_eq!(err.code, SkipReason::UNSUPPORTED_VARIANT);
        let out = run(br"{\rtf1 Hello\par}").unwrap();
        assert_eq!((out.text.as_str(), out.doc_type), ("Hello", DocType::Doc));
        let out = run(b"just some text\nsecond line").unwrap();
        assert_eq!(out.text, "just some text\nsecond line");
        assert_eq!(
            run(b"\x00\x01\x02\x03\xF0\x9F").unwrap_err().code,
            SkipReason::CORRUPT
        );
        let err = run(b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1garbage").unwrap_err();
        assert_eq!(err.code, SkipReason::CORRUPT);
    }

    /// A paragraph of text alone, for the field and cell tests.
    fn para(s: &str) -> Para {
        Para {
            text: s.into(),
            cp_end: 0,
            mark_fc: None,
        }
    }

    #[test]
    fn fields_and_cells() {
        let out = assemble(
            vec![
                para("See \u{13} HYPERLINK \"x\" \u{14}the link\u{15} here\r"),
                para("a\u{7}b\u{7}\u{7}c\u{7}d\u{7}\u{7}\r"),
            ],
            |_| None,
        );
        assert_eq!(out.text, "See the link here\na | b\nc | d");
    }

    #[test]
    fn eq_ruby_fields_give_their_base_text() {
        // Word's phonetic guide: an EQ field without a result, ruby in `\s\up n(...)`.
        let ruby = |reading: &str, base: &str| {
            format!(
                "\u{13} EQ \\* jc2 \\* \"Font:ＭＳ 明朝\" \\* hps10 \\o\\ad(\\s\\up 9({reading}),{base})\u{15}"
            )
        };
        let text = format!(
            "{}{}は{}です\r",
            ruby("にほん", "日本"),
            ruby("ご", "語"),
            ruby("かんじ", "漢字")
        );
        let out = assemble(vec![para(&text)], |_| None);
        assert_eq!(out.text, "日本語は漢字です");
        assert_eq!(eq_base_text(r"EQ \f(1,2)").as_deref(), Some("12"));
        assert_eq!(eq_base_text(r"EQ \s\up 11(x) \( y"), Some("( y".into()));
        assert_eq!(eq_base_text(" PAGE "), None);
        assert_eq!(eq_base_text("EQUATION"), None);
    }

    #[test]
    fn unclosed_fields_do_not_hide_the_text() {
        // Text around an embedded object (0x01 in an EMBED field's result, 0x08 drawn object)
        // is kept.
        let out = assemble(
            vec![
                para("Before \u{13} EMBED Word.Picture.8 \u{14}\u{1}\u{15} after\u{8}.\r"),
                para("Next paragraph.\r"),
            ],
            |_| None,
        );
        assert_eq!(out.text, "Before  after.\nNext paragraph.");
        // A field that never ends would hide everything after it.
        let out = assemble(
            vec![
                para("Intro \u{13} broken field\r"),
                para("The body text.\r"),
            ],
            |_| None,
        );
        assert!(out.text.contains("The body text."), "{}", out.text);
        assert!(out.text.starts_with("Intro"), "{}", out.text);
    }
}
