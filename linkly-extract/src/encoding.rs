//! Text encoding detection and decoding, shared by the text formats.
//!
//! The order of evidence: a byte-order mark, then UTF-16 without a BOM (NUL bytes in alternate
//! positions), then ISO-2022-JP (7-bit bytes with its escape sequences), then valid UTF-8, then
//! `chardetng`'s guess decoded with `encoding_rs`. Its `Shift_JIS` is the WHATWG one, which is
//! Microsoft's CP932 (windows-31j): NEC row 13 (`①`, `㈱`) and the IBM extensions (`髙`) decode. A guess is
//! graded by how plausible its decoded text looks, so that callers that must not produce mojibake
//! (CSV) can refuse a weak one.

use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};
use encoding_rs::{Encoding, ISO_2022_JP, UTF_8, UTF_16BE, UTF_16LE};

/// How sure the decoder is of the encoding it used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Confidence {
    /// A guess that gave decoding errors or implausible text: likely mojibake.
    Weak,
    /// A detector guess that decodes cleanly to plausible text.
    Likely,
    /// A BOM, UTF-16 NUL pattern, ISO-2022-JP escapes, valid UTF-8 or pure ASCII: no doubt.
    Certain,
}

/// Bytes decoded to text.
#[derive(Debug, Clone)]
pub(crate) struct Decoded {
    /// The text, without a BOM.
    pub(crate) text: String,
    /// The encoding used.
    pub(crate) encoding: &'static Encoding,
    /// How sure we are of it.
    pub(crate) confidence: Confidence,
}

impl Decoded {
    /// The encoding's name (`UTF-8`, `Shift_JIS`, `GBK`, ...).
    pub(crate) fn name(&self) -> &'static str {
        self.encoding.name()
    }
}

/// The encoding a byte-order mark at the start of `bytes` names, and the BOM's length.
pub(crate) fn sniff_bom(bytes: &[u8]) -> Option<(&'static Encoding, usize)> {
    Encoding::for_bom(bytes)
}

/// UTF-16 without a BOM, judged by NUL bytes: text that is mostly ASCII has a NUL in every other
/// byte. Only the first 8 KiB are looked at.
pub(crate) fn sniff_utf16_nobom(bytes: &[u8]) -> Option<&'static Encoding> {
    let sample = &bytes[..bytes.len().min(8192)];
    if sample.len() < 4 {
        return None;
    }
    let pairs = sample.len() / 2;
    let (mut even_nul, mut odd_nul) = (0usize, 0usize);
    for pair in sample.chunks_exact(2) {
        if pair[0] == 0 {
            even_nul += 1;
        }
        if pair[1] == 0 {
            odd_nul += 1;
        }
    }
    let many = (pairs * 3 / 10).max(4); // at least 30% of the code units
    let few = pairs / 20 + 1; // at most ~5% on the other side
    let le = odd_nul >= many && even_nul <= few;
    let be = even_nul >= many && odd_nul <= few;
    let candidate = match (le, be) {
        (true, false) => UTF_16LE,
        (false, true) => UTF_16BE,
        _ => return None,
    };
    // The whole file must decode without errors.
    let even_len = bytes.len() - bytes.len() % 2;
    let (_, had_errors) = candidate.decode_without_bom_handling(&bytes[..even_len]);
    (!had_errors).then_some(candidate)
}

/// ISO-2022-JP (JIS), the 7-bit encoding of Japanese mail: ASCII bytes that switch to JIS X 0208
/// with `ESC $ B` (or `ESC $ @`). Such bytes are valid UTF-8 too, which would show the escape
/// sequences and shifted bytes as text, so they are recognised before UTF-8: pure 7-bit bytes
/// that hold a switch to a Japanese character set and decode without an error.
fn decode_iso_2022_jp(bytes: &[u8]) -> Option<String> {
    if !bytes.is_ascii() || memchr::memchr(0x1B, bytes).is_none() {
        return None;
    }
    let switches = bytes
        .windows(3)
        .any(|w| matches!(w, [0x1B, b'$', b'B' | b'@'] | [0x1B, b'(', b'I']));
    if !switches {
        return None;
    }
    let (text, had_errors) = decode_with(bytes, ISO_2022_JP);
    (!had_errors).then_some(text)
}

/// What `chardetng` guesses for bytes that are neither BOM-marked, UTF-16 nor valid UTF-8.
pub(crate) fn guess(bytes: &[u8]) -> &'static Encoding {
    let mut detector = EncodingDetector::new(Iso2022JpDetection::Deny);
    detector.feed(bytes, true);
    detector.guess(None, Utf8Detection::Allow)
}

/// Decodes with a given encoding, without BOM handling; true when there were malformed bytes.
pub(crate) fn decode_with(bytes: &[u8], encoding: &'static Encoding) -> (String, bool) {
    let (text, had_errors) = encoding.decode_without_bom_handling(bytes);
    (text.into_owned(), had_errors)
}

/// Decodes bytes by the evidence they carry (BOM, UTF-16 NULs, ISO-2022-JP escapes, UTF-8,
/// detector).
pub(crate) fn decode(bytes: &[u8]) -> Decoded {
    if let Some(d) = decode_certain(bytes) {
        return d;
    }
    let encoding = guess(bytes);
    decode_graded(bytes, encoding)
}

/// Decodes when the bytes leave no doubt: a BOM, UTF-16 without a BOM, ISO-2022-JP or valid
/// UTF-8.
pub(crate) fn decode_certain(bytes: &[u8]) -> Option<Decoded> {
    if let Some((encoding, bom_len)) = sniff_bom(bytes) {
        let (text, _) = decode_with(&bytes[bom_len..], encoding);
        return Some(Decoded {
            text,
            encoding,
            confidence: Confidence::Certain,
        });
    }
    if let Some(encoding) = sniff_utf16_nobom(bytes) {
        let (text, _) = decode_with(bytes, encoding);
        return Some(Decoded {
            text,
            encoding,
            confidence: Confidence::Certain,
        });
    }
    if let Some(text) = decode_iso_2022_jp(bytes) {
        return Some(Decoded {
            text,
            encoding: ISO_2022_JP,
            confidence: Confidence::Certain,
        });
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        return Some(Decoded {
            text: text.to_string(),
            encoding: UTF_8,
            confidence: Confidence::Certain,
        });
    }
    None
}

/// Decodes with `encoding` and grades the result by its plausibility.
pub(crate) fn decode_graded(bytes: &[u8], encoding: &'static Encoding) -> Decoded {
    let (text, had_errors) = decode_with(bytes, encoding);
    let confidence = if had_errors || plausibility(&text) < 0.9 {
        Confidence::Weak
    } else {
        Confidence::Likely
    };
    Decoded {
        text,
        encoding,
        confidence,
    }
}

/// The share (0.0–1.0) of non-ASCII characters in `text` that look like real text rather than
/// mojibake: letters of living scripts, CJK, common punctuation score 1; C1 controls, U+FFFD and
/// private-use characters score 0; box drawing and other symbols score in between. Text without
/// non-ASCII characters scores 1.
///
/// Half-width katakana are judged by their neighbours ([`half_width_kana_score`]): in runs, as
/// in Japan Post's postal-code tables and bank transfer files (`ﾎｯｶｲﾄﾞｳ`), they are text; a
/// voicing mark after a kana that cannot take one, or a lone half-width kana among Latin
/// letters (what Latin-1 bytes read as Shift_JIS give: `Straße` → `Straﾟe`), is not.
pub(crate) fn plausibility(text: &str) -> f64 {
    let mut total = 0.0f64;
    let mut good = 0.0f64;
    let mut prev: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if !c.is_ascii() {
            total += 1.0;
            good += if is_half_width_kana(c) {
                half_width_kana_score(prev, c, chars.peek().copied())
            } else {
                char_score(c)
            };
        }
        prev = Some(c);
    }
    if total == 0.0 { 1.0 } else { good / total }
}

/// Half-width katakana and their punctuation (U+FF61–U+FF9F).
fn is_half_width_kana(c: char) -> bool {
    matches!(c, '\u{FF61}'..='\u{FF9F}')
}

/// The score of a half-width katakana `c` between `prev` and `next`: a voicing mark (ﾞ, ﾟ)
/// scores 1 after a kana that takes it, else 0; another half-width kana scores 1 next to
/// another half-width kana (a run), else 0.5.
fn half_width_kana_score(prev: Option<char>, c: char, next: Option<char>) -> f64 {
    let after = |range: &[std::ops::RangeInclusive<char>]| {
        prev.is_some_and(|p| range.iter().any(|r| r.contains(&p)))
    };
    match c {
        // ﾞ after ｳ, ｶ–ｺ, ｻ–ｿ, ﾀ–ﾄ, ﾊ–ﾎ.
        '\u{FF9E}' => {
            if after(&[
                '\u{FF73}'..='\u{FF73}',
                '\u{FF76}'..='\u{FF84}',
                '\u{FF8A}'..='\u{FF8E}',
            ]) {
                1.0
            } else {
                0.0
            }
        }
        // ﾟ after ﾊ–ﾎ.
        '\u{FF9F}' => {
            if after(&['\u{FF8A}'..='\u{FF8E}']) {
                1.0
            } else {
                0.0
            }
        }
        _ if prev.is_some_and(is_half_width_kana) || next.is_some_and(is_half_width_kana) => 1.0,
        _ => 0.5,
    }
}

fn char_score(c: char) -> f64 {
    match c as u32 {
        0x80..=0x9F => 0.0,                       // C1 controls
        0xFFFD => 0.0,                            // replacement character
        0xE000..=0xF8FF => 0.0,                   // private use
        0xA0..=0xFF => 1.0,                       // Latin-1 letters and signs
        0x100..=0x24F | 0x1E00..=0x1EFF => 1.0,   // Latin extended
        0x2B0..=0x2FF => 0.5,                     // modifier letters
        0x300..=0x36F => 0.7,                     // combining marks
        0x370..=0x52F => 1.0,                     // Greek, Cyrillic
        0x530..=0x8FF => 1.0,                     // Armenian, Hebrew, Arabic, Syriac, ...
        0x900..=0xDFF => 1.0,                     // Indic scripts
        0xE00..=0xEFF => 1.0,                     // Thai, Lao
        0x10A0..=0x10FF => 1.0,                   // Georgian
        0x1100..=0x11FF => 1.0,                   // Hangul Jamo
        0x2000..=0x206F => 1.0,                   // general punctuation
        0x20A0..=0x20CF => 1.0,                   // currency
        0x2100..=0x214F => 0.8,                   // letterlike (™, №)
        0x2150..=0x218F => 0.8,                   // number forms (Ⅰ)
        0x2190..=0x22FF => 0.6,                   // arrows, math
        0x2460..=0x24FF => 0.8,                   // enclosed (①)
        0x2500..=0x257F => 0.4,                   // box drawing
        0x25A0..=0x26FF => 0.6,                   // shapes (■ ○ ★), misc symbols
        0x3000..=0x303F => 1.0,                   // CJK punctuation
        0x3040..=0x30FF | 0x31F0..=0x31FF => 1.0, // kana
        0x3130..=0x318F => 1.0,                   // Hangul compatibility Jamo
        0x3200..=0x33FF => 0.8,                   // enclosed CJK, CJK compatibility (㈱ ㎡)
        0x3400..=0x4DBF => 0.7,                   // CJK extension A (rare)
        0x4E00..=0x9FFF => 1.0,                   // CJK unified
        0xAC00..=0xD7AF => 1.0,                   // Hangul syllables
        0xF900..=0xFAFF => 0.6,                   // CJK compatibility ideographs
        0xFB00..=0xFDFF | 0xFE70..=0xFEFF => 0.8, // presentation forms
        0xFE30..=0xFE4F => 0.8,                   // CJK compatibility forms
        0xFF01..=0xFF60 | 0xFFE0..=0xFFEF => 1.0, // full-width forms
        0xFF61..=0xFF9F => 0.5,                   // half-width katakana (alone)
        0x1F300..=0x1FAFF => 0.8,                 // emoji
        0x20000..=0x3134F => 0.5,                 // CJK extensions B+
        _ => 0.3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bom_wins() {
        let d = decode(b"\xEF\xBB\xBFhello");
        assert_eq!((d.text.as_str(), d.name()), ("hello", "UTF-8"));
        assert_eq!(d.confidence, Confidence::Certain);
        let d = decode(b"\xFF\xFEh\0i\0");
        assert_eq!((d.text.as_str(), d.name()), ("hi", "UTF-16LE"));
        let d = decode(b"\xFE\xFF\0h\0i");
        assert_eq!((d.text.as_str(), d.name()), ("hi", "UTF-16BE"));
    }

    #[test]
    fn utf16_without_bom() {
        let le: Vec<u8> = "hello, world\n1,2\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let d = decode(&le);
        assert_eq!(
            (d.text.as_str(), d.name()),
            ("hello, world\n1,2\n", "UTF-16LE")
        );
        let be: Vec<u8> = "hello, world"
            .encode_utf16()
            .flat_map(u16::to_be_bytes)
            .collect();
        assert_eq!(decode(&be).name(), "UTF-16BE");
        // One NUL in ASCII text is not UTF-16.
        assert_eq!(decode(b"a,b,c\n\0,2,3\n").name(), "UTF-8");
    }

    #[test]
    fn utf8_and_ascii_are_certain() {
        let d = decode("東京, café".as_bytes());
        assert_eq!(d.name(), "UTF-8");
        assert_eq!(d.confidence, Confidence::Certain);
        assert_eq!(decode(b"plain").confidence, Confidence::Certain);
    }

    #[test]
    fn legacy_encodings() {
        let (sjis, _, _) = encoding_rs::SHIFT_JIS
            .encode("日本語のテキストです。これは検出のためのサンプル文章になります。");
        let d = decode(&sjis);
        assert_eq!(d.name(), "Shift_JIS");
        assert!(d.text.contains("日本語"));
        assert_eq!(d.confidence, Confidence::Likely);

        let (gbk, _, _) = encoding_rs::GBK
            .encode("中华人民共和国是一个位于东亚的国家，首都是北京。这是一个测试句子。");
        let d = decode(&gbk);
        assert!(d.text.contains("中华人民共和国"), "{} {}", d.name(), d.text);

        let (latin, _, _) =
            encoding_rs::WINDOWS_1252.encode("Le café est très agréable à Noël, déjà vu.");
        let d = decode(&latin);
        assert!(d.text.contains("café"), "{}", d.text);
    }

    /// Rows in the layout of Japan Post's KEN_ALL.CSV: readings in half-width katakana.
    const KEN_ALL: &str = "01101,\"060  \",\"0600000\",\"ﾎｯｶｲﾄﾞｳ\",\"ｻｯﾎﾟﾛｼﾁｭｳｵｳｸ\",\"ｲｶﾆｹｲｻｲｶﾞﾅｲﾊﾞｱｲ\",\"北海道\",\"札幌市中央区\",\"以下に掲載がない場合\",0,0,0,0,0,0\r\n\
        01101,\"064  \",\"0640941\",\"ﾎｯｶｲﾄﾞｳ\",\"ｻｯﾎﾟﾛｼﾁｭｳｵｳｸ\",\"ｱｻﾋｶﾞｵｶ\",\"北海道\",\"札幌市中央区\",\"旭ケ丘\",0,0,1,0,0,0\r\n\
        01101,\"060  \",\"0600041\",\"ﾎｯｶｲﾄﾞｳ\",\"ｻｯﾎﾟﾛｼﾁｭｳｵｳｸ\",\"ｵｵﾄﾞｵﾘﾋｶﾞｼ\",\"北海道\",\"札幌市中央区\",\"大通東\",0,0,1,0,0,0\r\n";

    #[test]
    fn cp932_dominated_by_half_width_katakana() {
        let (bytes, _, unmappable) = encoding_rs::SHIFT_JIS.encode(KEN_ALL);
        assert!(!unmappable);
        let d = decode(&bytes);
        assert_eq!(d.name(), "Shift_JIS");
        assert_eq!(d.text, KEN_ALL);
        assert_eq!(d.confidence, Confidence::Likely);
        // Only the readings: half-width katakana and ASCII, no kanji at all.
        let readings: String = KEN_ALL
            .lines()
            .map(|l| l.split(',').take(6).collect::<Vec<_>>().join(",") + "\n")
            .collect();
        let (bytes, _, _) = encoding_rs::SHIFT_JIS.encode(&readings);
        let d = decode(&bytes);
        assert_eq!((d.name(), d.confidence), ("Shift_JIS", Confidence::Likely));
        assert_eq!(d.text, readings);
    }

    #[test]
    fn cp932_extension_characters() {
        // NEC row 13 (① ㈱ ㍻ Ⅳ) and an IBM extension kanji (髙) as Windows writes them (髙 in
        // the NEC-selected row, 0xEEE0; Python's `cp932` codec wrote these bytes).
        let bytes = b"\x87\x40\x81\x40\x87\x8A\xEE\xE0\x93\x87\x89\xAE\x82\xCC\x96\x7B\x8E\xD0\x82\xCD\x91\xE5\x8D\xE3\x8E\x73\x82\xC9\x82\xA0\x82\xE8\x82\xDC\x82\xB7\x81\x42\x87\x7E\x8E\x4F\x8F\x5C\x94\x4E\x81\x41\x91\xE6\x87\x57\x8A\xFA\x82\xCC\x95\xF1\x8D\x90\x8F\x91\x82\xC5\x82\xB7\x81\x42";
        let d = decode(bytes);
        assert_eq!(d.name(), "Shift_JIS");
        assert_eq!(d.confidence, Confidence::Likely);
        assert_eq!(
            d.text,
            "①\u{3000}㈱髙島屋の本社は大阪市にあります。㍻三十年、第Ⅳ期の報告書です。"
        );
        // The same kanji in the IBM row (0xFBFC).
        assert_eq!(decode_with(b"\xFB\xFC", encoding_rs::SHIFT_JIS).0, "髙");
    }

    #[test]
    fn euc_jp_with_half_width_katakana() {
        let text =
            "コンポーネントによって UI を独立した再利用可能なピースに分割します。\nｶﾀｶﾅ ﾓ ﾖﾒﾏｽ\n";
        let (bytes, _, _) = encoding_rs::EUC_JP.encode(text);
        let d = decode(&bytes);
        assert_eq!((d.name(), d.confidence), ("EUC-JP", Confidence::Likely));
        assert_eq!(d.text, text);
    }

    #[test]
    fn iso_2022_jp_is_not_read_as_ascii() {
        let text = "コンポーネントによって UI を独立した再利用可能なピースに分割します。\n";
        let (bytes, _, _) = encoding_rs::ISO_2022_JP.encode(text);
        assert!(bytes.is_ascii());
        let d = decode(&bytes);
        assert_eq!(
            (d.name(), d.confidence),
            ("ISO-2022-JP", Confidence::Certain)
        );
        assert_eq!(d.text, text);
        // Half-width katakana switch in with `ESC ( I`.
        let d = decode(b"\x1b(I=]N_0H\x1b(B\n");
        assert_eq!((d.name(), d.text.as_str()), ("ISO-2022-JP", "ｽﾝﾎﾟｰﾈ\n"));
        // An escape character alone in ASCII text stays UTF-8.
        let d = decode(b"colour: \x1b[31mred\x1b[0m\n");
        assert_eq!(d.name(), "UTF-8");
    }

    #[test]
    fn latin_1_capitals_stay_latin_1() {
        // Bytes 0xC0-0xDF are capitals in Latin-1 and half-width katakana in Shift_JIS: a run of
        // them must not turn a Western file into katakana.
        let text = "RÉSUMÉ DE L'ÉTÉ À ORLÉANS: ÇA VA ÊTRE ÉNORME. GRÜßE AUS DÜSSELDORF, ÖSTERREICH UND ÅLAND.\n";
        let (bytes, _, _) = encoding_rs::WINDOWS_1252.encode(text);
        let d = decode(&bytes);
        assert_eq!(d.text, text, "{}", d.name());
    }

    #[test]
    fn half_width_katakana_are_judged_by_their_neighbours() {
        assert_eq!(plausibility("ﾎｯｶｲﾄﾞｳ ｻｯﾎﾟﾛｼ"), 1.0);
        // A voicing mark after a letter that cannot take it, a lone kana among Latin letters:
        // what Latin-1 text read as Shift_JIS looks like.
        assert_eq!(plausibility("Straﾟe"), 0.0);
        assert_eq!(plausibility("ｱﾞ"), 0.5);
        assert_eq!(plausibility("caf ﾃ au lait"), 0.5);
    }

    #[test]
    fn plausibility_scores() {
        assert_eq!(plausibility("ascii"), 1.0);
        assert!(plausibility("日本語") > 0.99);
        assert!(plausibility("\u{FFFD}\u{FFFD}a") < 0.01);
        assert!(plausibility("\u{85}\u{90}") < 0.01);
    }
}
