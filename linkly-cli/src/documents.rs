//! The document tools as commands: `search`, `outline`, `grep` and `read`. Each turns its
//! flags into the tool's params and calls it (see `call`).

use std::process::ExitCode;

use linkly_core::DataDir;
use linkly_tools::{GrepParams, OutlineParams, ReadParams, SearchParams};

use crate::args::{GrepArgs, OutlineArgs, ReadArgs, SearchArgs};
use crate::call::{self, comma_list, expand_ids, read_once, read_per_id};
use crate::output::Printer;

/// `linkly search`.
pub(crate) fn search(data: &DataDir, a: SearchArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let doc_types = match call::doc_types(a.doc_types.as_deref(), printer) {
        Ok(types) => types,
        Err(code) => return Ok(code),
    };
    let params = SearchParams {
        query: a.query,
        limit: a.limit,
        doc_types,
        library: a.library,
        path_glob: a.path_glob,
        scope: a.scope,
        tags: a.tags.as_deref().map(comma_list),
        modified_after: a.modified_after,
        modified_before: a.modified_before,
        time_sort: a.time_sort,
        ..Default::default()
    };
    read_once(data, printer, &params)
}

/// `linkly outline`.
pub(crate) fn outline(
    data: &DataDir,
    a: OutlineArgs,
    printer: Printer,
) -> anyhow::Result<ExitCode> {
    let params = OutlineParams {
        doc_ids: expand_ids(a.ids)?,
        expand: a.expand.as_deref().map(comma_list),
        ..Default::default()
    };
    read_once(data, printer, &params)
}

/// `linkly grep`: one call per document.
pub(crate) fn grep(data: &DataDir, a: GrepArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let ids = expand_ids(a.ids.clone())?;
    read_per_id(data, printer, "grep", &ids, |id| GrepParams {
        pattern: a.pattern.clone(),
        doc_id: id.to_string(),
        context: a.context,
        before: a.before,
        after: a.after,
        case_insensitive: a.ignore_case.then_some(true),
        output_mode: a.mode,
        limit: a.limit,
        offset: a.offset,
        fuzzy_whitespace: a.fuzzy_whitespace,
        ..Default::default()
    })
}

/// `linkly read`: one call per document.
pub(crate) fn read(data: &DataDir, a: ReadArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let ids = expand_ids(a.ids.clone())?;
    read_per_id(data, printer, "read", &ids, |id| ReadParams {
        doc_id: id.to_string(),
        offset: a.offset,
        limit: a.limit,
        image_text: a.image_text,
        ..Default::default()
    })
}
