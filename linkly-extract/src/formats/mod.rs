//! The format registry: one module per format, one line per format in [`FORMATS`].

use crate::Extractor;

mod csv;
mod doc;
mod docx;
mod epub;
mod html;
mod image;
mod md;
mod media;
mod ooxml;
mod pdf;
mod pptx;
mod rtf;
mod txt;
mod xlsx;

pub use self::csv::Csv;
pub use self::doc::Doc;
pub use self::docx::Docx;
pub use self::epub::Epub;
pub use self::html::Html;
pub use self::image::Image;
pub use self::md::{FrontMatterBlock, Markdown, split_front_matter};
pub use self::media::{
    Audio, MAX_SECONDS, Video, speech_ready, stamp, time_budget, worker_timeout,
};
pub use self::pdf::{Pdf, page_marker};
pub use self::pptx::Pptx;
pub use self::rtf::Rtf;
pub use self::txt::Txt;
pub use self::xlsx::{SpreadsheetVariant, Xlsx};

/// Every format this build extracts. Adding a format = a module here + one line.
pub static FORMATS: &[&dyn Extractor] = &[
    &Markdown,
    &Txt,
    &Html,
    &Csv,
    &Docx,
    &Pptx,
    &Xlsx,
    &SpreadsheetVariant,
    &Epub,
    &Pdf,
    &Rtf,
    &Doc,
    &Image,
    &Audio,
    &Video,
];

/// Turns `\r\n` and lone `\r` into `\n`, so that line numbers computed by an extractor match the
/// text after the registry's own normalisation.
pub(crate) fn normalize_newlines(text: String) -> String {
    if text.contains('\r') {
        text.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        text
    }
}
