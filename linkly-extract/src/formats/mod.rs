//! The format registry: one module per format, one line per format in [`FORMATS`].

use crate::Extractor;

mod csv;
mod html;
mod md;
mod txt;

pub use self::csv::Csv;
pub use self::html::Html;
pub use self::md::Markdown;
pub use self::txt::Txt;

/// Every format this build extracts. Adding a format = a module here + one line.
pub static FORMATS: &[&dyn Extractor] = &[&Markdown, &Txt, &Html, &Csv];

/// Turns `\r\n` and lone `\r` into `\n`, so that line numbers computed by an extractor match the
/// text after the registry's own normalisation.
pub(crate) fn normalize_newlines(text: String) -> String {
    if text.contains('\r') {
        text.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        text
    }
}
