//! A file mapped read-only into memory, for [`crate::prepared`]: `memmap2`'s map is `unsafe`
//! because the bytes change under the mapping if another process changes the file.

use std::io;
use std::path::Path;

use ownedbytes::OwnedBytes;

/// The file's bytes, mapped read-only; an empty file gives no bytes.
pub(crate) fn map(path: &Path) -> io::Result<OwnedBytes> {
    let file = std::fs::File::open(path)?;
    if file.metadata()?.len() == 0 {
        return Ok(OwnedBytes::empty());
    }
    // SAFETY: the mapping is read-only, and the files mapped are never changed in place: they
    // are written under a temporary name and renamed over the old one (`Cache::save`), so a
    // mapping keeps the whole file it was made from. (A file cut short by another program
    // would fault the reader, as tantivy's mapped index files would.)
    let mapped = unsafe { memmap2::Mmap::map(&file)? };
    Ok(OwnedBytes::new(mapped))
}
