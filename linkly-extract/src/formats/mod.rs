//! The format registry: one module per format, one line per format in [`FORMATS`].

use crate::Extractor;

/// Every format this build extracts. Adding a format = a module here + one line.
pub static FORMATS: &[&dyn Extractor] = &[];
