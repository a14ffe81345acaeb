//! RTF: an own small reader (groups, control words, destinations) that decodes `\'hh` bytes in
//! the declared code page (`\ansicpg`, or the font's `\fcharset`), `\uN` escapes with surrogate
//! pairs and `\ucN` fallback skipping, and finds headings from `\outlinelevelN` or styles named
//! "heading N". The title comes from `{\info{\title ...}}`.

use std::collections::HashMap;

use encoding_rs::{Encoding, WINDOWS_1252};
use linkly_core::{DocType, Heading, OutlineNode, SkipReason};

use crate::{Extracted, Extractor, Input};

/// RTF files (`.rtf`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Rtf;

impl Extractor for Rtf {
    fn doc_type(&self) -> DocType {
        DocType::Rtf
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["rtf"]
    }

    fn extract(&self, input: &Input<'_>) -> Result<Extracted, SkipReason> {
        extract_rtf(input.bytes, DocType::Rtf)
    }
}

/// True when the bytes start like an RTF file (`{\rtf`, after optional whitespace or a BOM).
pub(crate) fn looks_like_rtf(bytes: &[u8]) -> bool {
    let b = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    b[start..].starts_with(b"{\\rtf")
}

/// Extracts an RTF document (also used for RTF files named `.doc`).
pub(crate) fn extract_rtf(bytes: &[u8], doc_type: DocType) -> Result<Extracted, SkipReason> {
    if !looks_like_rtf(bytes) {
        return Err(SkipReason::new(
            SkipReason::CORRUPT,
            "not an RTF file (no {\\rtf header)",
        ));
    }
    let parsed = Parser::new(bytes).run();
    let mut out = Extracted::text(doc_type, parsed.text);
    let total = out.total_lines();
    out.outline = OutlineNode::from_headings(&parsed.headings, total);
    out.title = parsed.title;
    out.encoding = Some(parsed.encoding.name());
    Ok(out)
}

/// What a group's text goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dest {
    Body,
    Skip,
    FontTable,
    StyleSheet,
    Info,
    Title,
}

#[derive(Debug, Clone)]
struct GroupState {
    dest: Dest,
    /// Fallback characters after `\uN`.
    uc: usize,
    /// The encoding of `\'hh` bytes (from the font).
    encoding: Option<&'static Encoding>,
    /// In the font table: the font being defined.
    font: Option<i32>,
    /// In the style sheet: the style being defined.
    style: Option<i32>,
}

#[derive(Debug, Default, Clone)]
struct Style {
    name: String,
    outline_level: Option<u8>,
}

struct Parsed {
    text: String,
    title: Option<String>,
    headings: Vec<Heading>,
    encoding: &'static Encoding,
}

/// The largest text produced (bytes); the rest is dropped.
const MAX_TEXT: usize = 64 * 1024 * 1024;
/// The deepest group nesting followed; deeper groups are skipped.
const MAX_DEPTH: usize = 4096;

struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
    stack: Vec<GroupState>,
    state: GroupState,
    ansi: &'static Encoding,
    fonts: HashMap<i32, &'static Encoding>,
    styles: HashMap<i32, Style>,
    /// Raw bytes waiting to be decoded, with their encoding.
    pending: Vec<u8>,
    pending_enc: &'static Encoding,
    /// A high surrogate waiting for its low half.
    high_surrogate: Option<u16>,
    /// Fallback characters still to skip after `\uN`.
    skip_chars: usize,
    /// The current paragraph's text.
    para: String,
    para_style: i32,
    para_level: Option<u8>,
    lines: Vec<String>,
    headings: Vec<Heading>,
    title: String,
    font_name: String,
    style_name: String,
    style_level: Option<u8>,
    /// The group depth at which a destination that must be skipped began (`\*` etc.).
    total_len: usize,
}

impl<'a> Parser<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        let state = GroupState {
            dest: Dest::Body,
            uc: 1,
            encoding: None,
            font: None,
            style: None,
        };
        Parser {
            bytes,
            pos: 0,
            stack: Vec::new(),
            state,
            ansi: WINDOWS_1252,
            fonts: HashMap::new(),
            styles: HashMap::new(),
            pending: Vec::new(),
            pending_enc: WINDOWS_1252,
            high_surrogate: None,
            skip_chars: 0,
            para: String::new(),
            para_style: 0,
            para_level: None,
            lines: Vec::new(),
            headings: Vec::new(),
            title: String::new(),
            font_name: String::new(),
            style_name: String::new(),
            style_level: None,
            total_len: 0,
        }
    }

    fn run(mut self) -> Parsed {
        while self.pos < self.bytes.len() {
            let b = self.bytes[self.pos];
            match b {
                b'{' => {
                    self.pos += 1;
                    self.flush();
                    self.skip_chars = 0;
                    self.stack.push(self.state.clone());
                    if self.stack.len() > MAX_DEPTH {
                        self.state.dest = Dest::Skip;
                    }
                }
                b'}' => {
                    self.pos += 1;
                    self.flush();
                    self.skip_chars = 0;
                    self.end_group();
                    if let Some(prev) = self.stack.pop() {
                        self.state = prev;
                    } else {
                        break; // the closing brace of the document
                    }
                }
                b'\\' => {
                    self.pos += 1;
                    self.control();
                }
                b'\r' | b'\n' => self.pos += 1,
                _ => {
                    self.pos += 1;
                    if self.skip_chars > 0 {
                        self.skip_chars -= 1;
                    } else {
                        self.byte(b);
                    }
                }
            }
        }
        self.flush();
        self.end_paragraph();
        self.finish()
    }

    fn finish(self) -> Parsed {
        // Drop runs of blank lines to one and blank lines at both ends.
        let mut text = String::new();
        let mut headings = Vec::new();
        let mut heading_at = self.headings.into_iter().peekable();
        let mut out_line: u32 = 0;
        let mut blank = false;
        for (i, line) in self.lines.iter().enumerate() {
            let is_blank = line.trim().is_empty();
            if is_blank {
                blank = out_line > 0;
            } else {
                if blank {
                    text.push('\n');
                    out_line += 1;
                }
                if out_line > 0 {
                    text.push('\n');
                }
                text.push_str(line.trim_end());
                out_line += 1;
                blank = false;
            }
            while let Some(h) = heading_at.peek() {
                if h.line as usize != i + 1 {
                    break;
                }
                let mut h = heading_at.next().expect("peeked");
                h.line = out_line.max(1);
                headings.push(h);
            }
        }
        let title = one_line(&self.title);
        Parsed {
            text,
            title: (!title.is_empty()).then_some(title),
            headings,
            encoding: self.ansi,
        }
    }

    fn end_group(&mut self) {
        match self.state.dest {
            Dest::FontTable => {
                if let Some(f) = self.state.font {
                    let parent_font = self.stack.last().and_then(|s| s.font);
                    if parent_font != Some(f) {
                        self.font_name.clear();
                    }
                }
            }
            Dest::StyleSheet => {
                if let Some(s) = self.state.style {
                    let parent_style = self.stack.last().and_then(|p| p.style);
                    if parent_style != Some(s) {
                        self.finish_style(s);
                    }
                }
            }
            _ => {}
        }
    }

    fn finish_style(&mut self, s: i32) {
        let name = one_line(self.style_name.trim_end_matches(';'));
        let entry = self.styles.entry(s).or_default();
        if !name.is_empty() {
            entry.name = name;
        }
        if self.style_level.is_some() {
            entry.outline_level = self.style_level;
        }
        self.style_name.clear();
        self.style_level = None;
    }

    /// Reads a control word or symbol after the backslash.
    fn control(&mut self) {
        let Some(&c) = self.bytes.get(self.pos) else {
            return;
        };
        if c.is_ascii_alphabetic() {
            let start = self.pos;
            while self.pos < self.bytes.len()
                && self.bytes[self.pos].is_ascii_alphabetic()
                && self.pos - start < 32
            {
                self.pos += 1;
            }
            let word = &self.bytes[start..self.pos];
            let mut param: Option<i32> = None;
            let neg = self.bytes.get(self.pos) == Some(&b'-');
            let num_start = if neg { self.pos + 1 } else { self.pos };
            let mut end = num_start;
            while end < self.bytes.len() && self.bytes[end].is_ascii_digit() && end - num_start < 10
            {
                end += 1;
            }
            if end > num_start {
                let digits = std::str::from_utf8(&self.bytes[num_start..end]).unwrap_or("0");
                let v: i64 = digits.parse().unwrap_or(0);
                let v = if neg { -v } else { v };
                param = Some(v.clamp(i32::MIN as i64, i32::MAX as i64) as i32);
                self.pos = end;
            }
            if self.bytes.get(self.pos) == Some(&b' ') {
                self.pos += 1;
            }
            let word = std::str::from_utf8(word).unwrap_or("");
            self.word(word, param);
        } else {
            self.pos += 1;
            match c {
                b'\'' => {
                    let hex = self.bytes.get(self.pos..self.pos + 2);
                    let value = hex
                        .and_then(|h| std::str::from_utf8(h).ok())
                        .and_then(|h| u8::from_str_radix(h, 16).ok());
                    if let Some(v) = value {
                        self.pos += 2;
                        if self.skip_chars > 0 {
                            self.skip_chars -= 1;
                        } else {
                            self.byte(v);
                        }
                    }
                }
                b'*' => {
                    // An ignorable destination we do not know: skip the group.
                    self.state.dest = Dest::Skip;
                }
                b'\\' | b'{' | b'}' => {
                    if self.skip_chars > 0 {
                        self.skip_chars -= 1;
                    } else {
                        self.byte(c);
                    }
                }
                b'~' => self.chars("\u{A0}"),
                b'_' => self.chars("\u{2011}"),
                b'-' => {}
                b'\r' | b'\n' => self.paragraph_break(),
                b'\t' => self.chars("\t"),
                _ => {
                    if self.skip_chars > 0 {
                        self.skip_chars -= 1;
                    }
                }
            }
        }
    }

    fn word(&mut self, word: &str, param: Option<i32>) {
        // A control word counts as one fallback character after \uN.
        if self.skip_chars > 0 && word != "u" {
            self.skip_chars -= 1;
            if !matches!(word, "par" | "line" | "tab" | "cell" | "row") {
                return;
            }
        }
        match word {
            "ansicpg" => {
                if let Some(enc) = param.and_then(codepage_encoding) {
                    self.ansi = enc;
                }
            }
            "mac" => self.ansi = encoding_rs::MACINTOSH,
            "pc" | "pca" => {} // DOS code pages: not in encoding_rs; keep cp1252
            "uc" => self.state.uc = param.unwrap_or(1).clamp(0, 16) as usize,
            "u" => {
                let v = param.unwrap_or(0);
                let unit = if v < 0 { (v + 65536) as u32 } else { v as u32 } as u16;
                self.unicode(unit);
                self.skip_chars = self.state.uc;
            }
            "bin" => {
                self.flush();
                let n = param.unwrap_or(0).max(0) as usize;
                self.pos = self.pos.saturating_add(n).min(self.bytes.len());
            }
            // Destinations.
            "fonttbl" => self.state.dest = Dest::FontTable,
            "stylesheet" => self.state.dest = Dest::StyleSheet,
            "info" => self.state.dest = Dest::Info,
            "title" if self.state.dest == Dest::Info => {
                self.state.dest = Dest::Title;
                self.title.clear();
            }
            "colortbl" | "pict" | "header" | "headerl" | "headerr" | "headerf" | "footer"
            | "footerl" | "footerr" | "footerf" | "fldinst" | "xmlnstbl" | "listtable"
            | "listoverridetable" | "revtbl" | "rsidtbl" | "generator" | "themedata"
            | "colorschememapping" | "latentstyles" | "datastore" | "filetbl" | "pgdsctbl"
            | "objdata" | "objclass" | "objname" | "template" | "docvar" | "ftnsep" | "ftnsepc"
            | "aftnsep" | "aftnsepc" | "xe" | "tc" | "txe" | "author" | "operator" | "keywords"
            | "subject" | "comment" | "doccomm" | "company" | "manager" | "category"
            | "hlinkbase" | "nonshppict" | "shpinst" | "sp" | "falt" | "panose" | "bkmkstart"
            | "bkmkend" | "private"
                if self.state.dest != Dest::Title =>
            {
                self.state.dest = Dest::Skip;
            }
            // Fonts.
            "f" => {
                let f = param.unwrap_or(0);
                match self.state.dest {
                    Dest::FontTable => {
                        self.state.font = Some(f);
                        self.font_name.clear();
                    }
                    _ => {
                        self.state.encoding = self.fonts.get(&f).copied();
                    }
                }
            }
            "fcharset" if self.state.dest == Dest::FontTable => {
                if let (Some(f), Some(enc)) = (self.state.font, param.and_then(charset_encoding)) {
                    self.fonts.insert(f, enc);
                }
            }
            "cpg" if self.state.dest == Dest::FontTable => {
                if let (Some(f), Some(enc)) = (self.state.font, param.and_then(codepage_encoding)) {
                    self.fonts.insert(f, enc);
                }
            }
            // Styles and paragraphs.
            "s" => {
                let s = param.unwrap_or(0);
                if self.state.dest == Dest::StyleSheet {
                    self.state.style = Some(s);
                    self.style_name.clear();
                    self.style_level = None;
                } else {
                    self.para_style = s;
                }
            }
            "outlinelevel" => {
                let level = param.unwrap_or(9);
                let level = (0..9).contains(&level).then_some(level as u8 + 1);
                if self.state.dest == Dest::StyleSheet {
                    self.style_level = level;
                } else {
                    self.para_level = level;
                }
            }
            "pard" => {
                self.para_style = 0;
                self.para_level = None;
            }
            "plain" => {}
            "par" | "sect" | "page" => self.paragraph_break(),
            "line" => self.line_break(),
            "row" => self.line_break(),
            "tab" => self.chars("\t"),
            "cell" => self.chars(" | "),
            "emdash" => self.chars("\u{2014}"),
            "endash" => self.chars("\u{2013}"),
            "emspace" | "enspace" | "qmspace" => self.chars(" "),
            "bullet" => self.chars("\u{2022}"),
            "lquote" => self.chars("\u{2018}"),
            "rquote" => self.chars("\u{2019}"),
            "ldblquote" => self.chars("\u{201C}"),
            "rdblquote" => self.chars("\u{201D}"),
            _ => {}
        }
    }

    /// One text byte, to be decoded with the group's encoding.
    fn byte(&mut self, b: u8) {
        if matches!(self.state.dest, Dest::Skip | Dest::Info) {
            return;
        }
        self.high_surrogate_flush();
        let enc = self.state.encoding.unwrap_or(self.ansi);
        if !self.pending.is_empty() && enc != self.pending_enc {
            self.flush();
        }
        self.pending_enc = enc;
        self.pending.push(b);
    }

    fn unicode(&mut self, unit: u16) {
        if matches!(self.state.dest, Dest::Skip | Dest::Info) {
            return;
        }
        self.flush();
        match unit {
            0xD800..=0xDBFF => {
                self.high_surrogate_flush();
                self.high_surrogate = Some(unit);
            }
            0xDC00..=0xDFFF => match self.high_surrogate.take() {
                Some(high) => {
                    let c = 0x10000 + (((high as u32) - 0xD800) << 10) + (unit as u32 - 0xDC00);
                    let s = char::from_u32(c).unwrap_or('\u{FFFD}').to_string();
                    self.push_str(&s);
                }
                None => self.push_str("\u{FFFD}"),
            },
            _ => {
                self.high_surrogate_flush();
                let s = char::from_u32(unit as u32)
                    .unwrap_or('\u{FFFD}')
                    .to_string();
                self.push_str(&s);
            }
        }
    }

    fn high_surrogate_flush(&mut self) {
        if self.high_surrogate.take().is_some() {
            self.push_str("\u{FFFD}");
        }
    }

    /// Decodes the pending bytes.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let bytes = std::mem::take(&mut self.pending);
        let (text, _) = self.pending_enc.decode_without_bom_handling(&bytes);
        let text: String = text
            .chars()
            .filter(|c| !c.is_control() || *c == '\t')
            .collect();
        self.push_str(&text);
    }

    fn chars(&mut self, s: &str) {
        if matches!(self.state.dest, Dest::Skip | Dest::Info) {
            return;
        }
        self.flush();
        self.high_surrogate_flush();
        self.push_str(s);
    }

    fn push_str(&mut self, s: &str) {
        if self.total_len > MAX_TEXT {
            return;
        }
        self.total_len += s.len();
        match self.state.dest {
            Dest::Body => self.para.push_str(s),
            Dest::Title => self.title.push_str(s),
            Dest::FontTable => self.font_name.push_str(s),
            Dest::StyleSheet => self.style_name.push_str(s),
            Dest::Skip | Dest::Info => {}
        }
    }

    fn line_break(&mut self) {
        if self.state.dest != Dest::Body {
            return;
        }
        self.flush();
        self.high_surrogate_flush();
        let line = std::mem::take(&mut self.para);
        // A line break inside a heading keeps it one heading; only the first line counts.
        self.lines.push(line);
    }

    fn paragraph_break(&mut self) {
        if self.state.dest != Dest::Body {
            return;
        }
        self.flush();
        self.high_surrogate_flush();
        self.end_paragraph();
    }

    fn end_paragraph(&mut self) {
        let line = std::mem::take(&mut self.para);
        let level = self
            .para_level
            .or_else(|| self.style_level_of(self.para_style));
        if let Some(level) = level {
            let title = one_line(&line);
            if !title.is_empty() && self.headings.len() < 10_000 {
                self.headings.push(Heading {
                    level,
                    title: title.chars().take(300).collect(),
                    line: self.lines.len() as u32 + 1,
                });
            }
        }
        self.lines.push(line);
    }

    fn style_level_of(&self, s: i32) -> Option<u8> {
        let style = self.styles.get(&s)?;
        if style.outline_level.is_some() {
            return style.outline_level;
        }
        heading_style_level(&style.name)
    }
}

/// The level of a style named "heading N" (or a few localised names).
fn heading_style_level(name: &str) -> Option<u8> {
    let lower = name.trim().to_lowercase();
    for prefix in [
        "heading",
        "überschrift",
        "titre",
        "título",
        "titolo",
        "kop",
        "nadpis",
        "nagłówek",
        "見出し",
        "标题",
    ] {
        if let Some(rest) = lower.strip_prefix(prefix) {
            let n: u8 = rest.trim().parse().ok()?;
            return (1..=9).contains(&n).then_some(n);
        }
    }
    None
}

fn one_line(s: &str) -> String {
    s.split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The encoding of a Windows code page number.
pub(crate) fn codepage_encoding(cp: i32) -> Option<&'static Encoding> {
    use encoding_rs::*;
    Some(match cp {
        874 => WINDOWS_874,
        932 => SHIFT_JIS,
        936 => GBK,
        949 => EUC_KR,
        950 => BIG5,
        866 => IBM866,
        1250 => WINDOWS_1250,
        1251 => WINDOWS_1251,
        1252 => WINDOWS_1252,
        1253 => WINDOWS_1253,
        1254 => WINDOWS_1254,
        1255 => WINDOWS_1255,
        1256 => WINDOWS_1256,
        1257 => WINDOWS_1257,
        1258 => WINDOWS_1258,
        10000 => MACINTOSH,
        20866 => KOI8_R,
        21866 => KOI8_U,
        28591 => WINDOWS_1252,
        28592 => ISO_8859_2,
        54936 => GB18030,
        65001 => UTF_8,
        _ => return None,
    })
}

/// The encoding of an RTF `\fcharset` value (0 = ANSI → None, use `\ansicpg`).
fn charset_encoding(charset: i32) -> Option<&'static Encoding> {
    use encoding_rs::*;
    Some(match charset {
        77 => MACINTOSH,
        128 => SHIFT_JIS,
        129 | 130 => EUC_KR,
        134 => GBK,
        136 => BIG5,
        161 => WINDOWS_1253,
        162 => WINDOWS_1254,
        163 => WINDOWS_1258,
        177 => WINDOWS_1255,
        178 => WINDOWS_1256,
        186 => WINDOWS_1257,
        204 => WINDOWS_1251,
        222 => WINDOWS_874,
        238 => WINDOWS_1250,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(s: &[u8]) -> Extracted {
        extract_rtf(s, DocType::Rtf).unwrap()
    }

    #[test]
    fn plain_paragraphs_and_destinations() {
        let out = run(
            br"{\rtf1\ansi{\fonttbl{\f0 Arial;}}{\colortbl;\red0;}{\info{\title My Title}{\author X}}{\*\generator W;}\pard Hello {\b world}\par Second\tab line\line third\par}",
        );
        assert_eq!(out.text, "Hello world\nSecond\tline\nthird");
        assert_eq!(out.title.as_deref(), Some("My Title"));
    }

    #[test]
    fn unicode_and_code_pages() {
        let out = run(br"{\rtf1\ansi\ansicpg1250\uc1 P\'f8\'edli\u353?\par \u-10240?\u-8398?\par}");
        assert_eq!(out.text, "P\u{159}\u{ed}li\u{161}\n\u{10332}");
        let out = run(br"{\rtf1\ansi\ansicpg932 \'82\'b1\'82\'f1\par}");
        assert_eq!(out.text, "\u{3053}\u{3093}");
        // \uc2 skips two fallback bytes, \bin skips raw data.
        let out = run(br"{\rtf1\uc2\u26085\'93\'fa!{\pict\bin3 {{{}x}");
        assert_eq!(out.text, "\u{65E5}!x");
    }

    #[test]
    fn headings_from_styles_and_outline_levels() {
        let out = run(
            br"{\rtf1{\stylesheet{\s0 Normal;}{\s1\outlinelevel0 heading 1;}{\s2 heading 2;}}\pard\s1 Intro\par\pard\s0 text\par\pard\s2 Sub\par\pard body\par\pard\outlinelevel0 Next\par}",
        );
        assert_eq!(out.text, "Intro\ntext\nSub\nbody\nNext");
        assert_eq!(out.outline.len(), 2);
        assert_eq!(out.outline[0].title, "Intro");
        assert_eq!(out.outline[0].children[0].title, "Sub");
        assert_eq!(
            (
                out.outline[0].children[0].start_line,
                out.outline[0].children[0].end_line
            ),
            (3, 4)
        );
        assert_eq!(out.outline[1].start_line, 5);
    }

    #[test]
    fn garbage_does_not_panic() {
        for s in [
            &b"{\\rtf"[..],
            b"{\\rtf1\\u",
            b"{\\rtf1\\'",
            b"{\\rtf1\\bin99999999 x",
            b"{\\rtf}}}}{",
        ] {
            let _ = extract_rtf(s, DocType::Rtf);
        }
        assert!(extract_rtf(b"hello", DocType::Rtf).is_err());
    }
}
