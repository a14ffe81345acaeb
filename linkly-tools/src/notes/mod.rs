//! Notes: Markdown files in the notes folder, the one thing Linkly writes.

use crate::tools::Rendered;
use crate::tools::list::ListParams;
use crate::{Linkly, Result, ToolError};

/// `list` with `scope="notes"`.
pub(crate) fn list_tool(_linkly: &Linkly, _params: &ListParams) -> Result<Rendered> {
    Err(ToolError::invalid(
        "scope \"notes\" is not available in this build yet: notes arrive with note_save",
    ))
}
